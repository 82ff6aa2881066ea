/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * faults.c: one failure at a time, where the test says (faults.h).
 *
 * SQLite's I/O goes through a VFS of ours that wraps the default one and
 * passes every call on, but for the one the countdown reaches, which fails
 * as a disk or a lock would. SQLite's allocations go through an allocator
 * that does the same with SQLite's own. The system calls of the code under
 * test are wrapped at link time (ld's --wrap): __wrap_pread() is what the
 * code calls as pread(), and __real_pread() the C library's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>

#include <sqlite3.h>

#include "tests/unit/faults.h"

static atomic_int armed_kind = -1;
static atomic_long countdown, armed_at;
static atomic_bool fired;

static bool hit(enum fault_kind kind)
{
	if (atomic_load(&armed_kind) != (int)kind)
		return false;
	if (atomic_fetch_sub(&countdown, 1) != 1)
		return false;
	atomic_store(&armed_kind, -1);
	atomic_store(&fired, true);
	return true;
}

const char *fault_name(enum fault_kind kind)
{
	static const char *const names[FAULT_KINDS] = {
		[FAULT_SQLITE_IO] = "sqlite i/o",  [FAULT_SQLITE_MALLOC] = "sqlite malloc",
		[FAULT_PREAD] = "pread",           [FAULT_PWRITE] = "pwrite",
		[FAULT_COPY_RANGE] = "copy_file_range", [FAULT_FSYNC] = "fsync",
	};

	return kind < FAULT_KINDS ? names[kind] : "?";
}

void fault_arm(enum fault_kind kind, long nth)
{
	atomic_store(&armed_kind, -1);
	atomic_store(&fired, false);
	atomic_store(&countdown, nth);
	atomic_store(&armed_at, nth);
	atomic_store(&armed_kind, (int)kind);
}

bool fault_disarm(void)
{
	atomic_store(&armed_kind, -1);
	return atomic_load(&fired);
}

long fault_calls(void)
{
	return atomic_load(&armed_at) - atomic_load(&countdown);
}

/* ---- the system calls ------------------------------------------------------ */

ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __real_pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __real_copy_file_range(int in, loff_t *in_off, int out, loff_t *out_off, size_t n, unsigned int flags);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_copy_file_range(int in, loff_t *in_off, int out, loff_t *out_off, size_t n, unsigned int flags);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);

#define FAIL_WITH_EIO(kind)             \
	do {                            \
		if (hit(kind)) {        \
			errno = EIO;    \
			return -1;      \
		}                       \
	} while (0)

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
	FAIL_WITH_EIO(FAULT_PREAD);
	return __real_pread(fd, buf, n, off);
}

ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off)
{
	FAIL_WITH_EIO(FAULT_PREAD);
	return __real_pread64(fd, buf, n, off);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	FAIL_WITH_EIO(FAULT_PWRITE);
	return __real_pwrite(fd, buf, n, off);
}

ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	FAIL_WITH_EIO(FAULT_PWRITE);
	return __real_pwrite64(fd, buf, n, off);
}

ssize_t __wrap_copy_file_range(int in, loff_t *in_off, int out, loff_t *out_off, size_t n, unsigned int flags)
{
	FAIL_WITH_EIO(FAULT_COPY_RANGE);
	return __real_copy_file_range(in, in_off, out, out_off, n, flags);
}

int __wrap_fsync(int fd)
{
	FAIL_WITH_EIO(FAULT_FSYNC);
	return __real_fsync(fd);
}

int __wrap_fdatasync(int fd)
{
	FAIL_WITH_EIO(FAULT_FSYNC);
	return __real_fdatasync(fd);
}

/* ---- SQLite's allocator -------------------------------------------------------- */

static sqlite3_mem_methods real_mem;

static void *mem_malloc(int n)
{
	return hit(FAULT_SQLITE_MALLOC) ? NULL : real_mem.xMalloc(n);
}

static void *mem_realloc(void *p, int n)
{
	return hit(FAULT_SQLITE_MALLOC) ? NULL : real_mem.xRealloc(p, n);
}

/* ---- SQLite's VFS ---------------------------------------------------------------- */

struct faulty_file {
	sqlite3_file base;
	sqlite3_file *real; /* the default VFS's file, right after this struct */
};

static sqlite3_vfs *real_vfs;

#define REAL(f) (((struct faulty_file *)(f))->real)

static int f_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}

static int f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_IOERR_READ : REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

static int f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_IOERR_WRITE : REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_IOERR_TRUNCATE : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int f_sync(sqlite3_file *f, int flags)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_IOERR_FSYNC : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int f_size(sqlite3_file *f, sqlite3_int64 *ret)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_IOERR_FSTAT : REAL(f)->pMethods->xFileSize(REAL(f), ret);
}

static int f_lock(sqlite3_file *f, int level)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_BUSY : REAL(f)->pMethods->xLock(REAL(f), level);
}

static int f_unlock(sqlite3_file *f, int level)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), level);
}

static int f_reserved(sqlite3_file *f, int *ret)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), ret);
}

static int f_control(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int f_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int f_caps(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int f_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **ret)
{
	return hit(FAULT_SQLITE_IO) ? SQLITE_IOERR_SHMMAP
				    : REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, ret);
}

static int f_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	/* Only a lock taken can fail; letting go must always work. */
	if ((flags & SQLITE_SHM_LOCK) && hit(FAULT_SQLITE_IO))
		return SQLITE_BUSY;
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}

static void f_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int f_shm_unmap(sqlite3_file *f, int delete)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), delete);
}

static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **ret)
{
	return REAL(f)->pMethods->xFetch(REAL(f), off, n, ret);
}

static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods faulty_methods = {
	.iVersion = 3,
	.xClose = f_close, .xRead = f_read, .xWrite = f_write, .xTruncate = f_truncate, .xSync = f_sync,
	.xFileSize = f_size, .xLock = f_lock, .xUnlock = f_unlock, .xCheckReservedLock = f_reserved,
	.xFileControl = f_control, .xSectorSize = f_sector, .xDeviceCharacteristics = f_caps,
	.xShmMap = f_shm_map, .xShmLock = f_shm_lock, .xShmBarrier = f_shm_barrier, .xShmUnmap = f_shm_unmap,
	.xFetch = f_fetch, .xUnfetch = f_unfetch,
};

static int f_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *ret_flags)
{
	struct faulty_file *ff = (struct faulty_file *)f;
	int rc;

	(void)vfs;
	ff->real = (sqlite3_file *)(ff + 1);
	rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, ret_flags);
	/* SQLite calls xClose only on a file whose pMethods is set. */
	ff->base.pMethods = ff->real->pMethods ? &faulty_methods : NULL;
	return rc;
}

static sqlite3_vfs faulty_vfs;

int faults_init(void)
{
	static sqlite3_mem_methods mem;

	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real_mem) != SQLITE_OK)
		return -1;
	mem = real_mem;
	mem.xMalloc = mem_malloc;
	mem.xRealloc = mem_realloc;
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &mem) != SQLITE_OK)
		return -1;
	real_vfs = sqlite3_vfs_find(NULL);
	if (!real_vfs || real_vfs->iVersion < 1)
		return -1;
	faulty_vfs = *real_vfs;
	faulty_vfs.zName = "faulty";
	faulty_vfs.pNext = NULL;
	faulty_vfs.szOsFile = (int)sizeof(struct faulty_file) + real_vfs->szOsFile;
	faulty_vfs.xOpen = f_open;
	return sqlite3_vfs_register(&faulty_vfs, 1) == SQLITE_OK ? 0 : -1;
}
