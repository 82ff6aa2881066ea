/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix_io.c: the POSIX battery's checks of mappings, sync and locks: mmap,
 * fsync and O_DIRECT, POSIX, OFD and flock locks. The harness is in posix.c.
 */
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>

#include "posix.h"

/* ---- mmap ---------------------------------------------------------------------- */

int check_mmap_shared(void)
{
	unsigned char want[8192], got[8192];
	unsigned char *p;
	int fd, fd2;

	fd = TRY(open("f", O_CREAT | O_RDWR, 0644));
	TRY(ftruncate(fd, sizeof(want)));
	p = mmap(NULL, sizeof(want), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	WANT(p != MAP_FAILED, "mmap(MAP_SHARED): %s", en(errno));
	fill_pattern(want, sizeof(want), 11);
	memcpy(p, want, sizeof(want));
	TRY(msync(p, sizeof(want), MS_SYNC));
	fd2 = TRY(open("f", O_RDONLY));
	WANT(TRY(pread(fd2, got, sizeof(got), 0)) == (ssize_t)sizeof(got) && memcmp(got, want, sizeof(want)) == 0,
	     "read() does not see what was written through a shared mapping");
	/* and the mapping sees what write() wrote */
	TRY(pwrite(fd, "XYZ", 3, 100));
	WANT(memcmp(p + 100, "XYZ", 3) == 0, "a shared mapping does not see a write()");
	memcpy(want + 100, "XYZ", 3);
	TRY(munmap(p, sizeof(want)));
	TRY(close(fd));
	TRY(close(fd2));
	CALL(want_content("f", want, sizeof(want)));
	/* a mapping outliving its descriptor and its name */
	fd = TRY(open("f", O_RDWR));
	p = mmap(NULL, sizeof(want), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	WANT(p != MAP_FAILED, "mmap: %s", en(errno));
	TRY(close(fd));
	p[0] = 'Q';
	TRY(msync(p, sizeof(want), MS_SYNC));
	TRY(munmap(p, sizeof(want)));
	want[0] = 'Q';
	CALL(want_content("f", want, sizeof(want)));
	return 0;
}

int check_mmap_private(void)
{
	unsigned char want[8192];
	unsigned char *p;
	int fd;

	fill_pattern(want, sizeof(want), 5);
	CALL(write_file("f", want, sizeof(want), 0644));
	fd = TRY(open("f", O_RDONLY));
	p = mmap(NULL, sizeof(want), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	WANT(p != MAP_FAILED, "mmap(MAP_PRIVATE): %s", en(errno));
	WANT(memcmp(p, want, sizeof(want)) == 0, "a private mapping shows the wrong bytes");
	memset(p, 'P', 100);
	TRY(munmap(p, sizeof(want)));
	TRY(close(fd));
	CALL(want_content("f", want, sizeof(want)));
	/* read-only mapping of a file grown by ftruncate: zeros */
	fd = TRY(open("f", O_RDWR));
	TRY(ftruncate(fd, 3 * 4096 + 10));
	p = mmap(NULL, 4 * 4096, PROT_READ, MAP_SHARED, fd, 0);
	WANT(p != MAP_FAILED, "mmap: %s", en(errno));
	for (size_t i = sizeof(want); i < 3 * 4096 + 10; i++)
		WANT(p[i] == 0, "the grown part maps as %d at %zu", p[i], i);
	TRY(munmap(p, 4 * 4096));
	TRY(close(fd));
	/* mapping a descriptor opened write-only is refused */
	fd = TRY(open("f", O_WRONLY));
	WANT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EACCES,
	     "mmap of a write-only descriptor did not fail with EACCES");
	TRY(close(fd));
	return 0;
}

/* ---- sync ------------------------------------------------------------------------ */

int check_fsync(void)
{
	int fd, dfd;

	fd = TRY(open("f", O_CREAT | O_RDWR, 0644));
	TRY(write(fd, "data", 4));
	TRY(fsync(fd));
	TRY(pwrite(fd, "more", 4, 4));
	TRY(fdatasync(fd));
	TRY(sync_file_range(fd, 0, 8, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
	TRY(syncfs(fd));
	TRY(close(fd));
	dfd = TRY(open(".", O_RDONLY | O_DIRECTORY));
	TRY(fsync(dfd));
	TRY(close(dfd));
	/* O_SYNC and O_DSYNC descriptors write */
	fd = TRY(open("s", O_CREAT | O_WRONLY | O_SYNC, 0644));
	TRY(write(fd, "sync", 4));
	TRY(close(fd));
	fd = TRY(open("s", O_WRONLY | O_DSYNC | O_APPEND));
	TRY(write(fd, "dsync", 5));
	TRY(close(fd));
	CALL(want_str("s", "syncdsync"));
	CALL(want_str("f", "datamore"));
	return 0;
}

/* O_DIRECT: aligned transfers work (the page cache is bypassed, not the data). */
int check_direct_io(void)
{
	unsigned char *buf, *got;
	int fd;

	buf = aligned_alloc(4096, 8192);
	got = aligned_alloc(4096, 8192);
	WANT(buf && got, "out of memory");
	fill_pattern(buf, 8192, 3);
	fd = TRY(open("f", O_CREAT | O_RDWR | O_DIRECT, 0644));
	WANT(TRY(pwrite(fd, buf, 8192, 0)) == 8192, "short O_DIRECT write");
	WANT(TRY(pread(fd, got, 8192, 0)) == 8192, "short O_DIRECT read");
	WANT(memcmp(buf, got, 8192) == 0, "O_DIRECT read back the wrong bytes");
	TRY(close(fd));
	CALL(want_content("f", buf, 8192));
	free(buf);
	free(got);
	return 0;
}

/* ---- locks ------------------------------------------------------------------------ */

static pid_t lock_holder;

static int locks_child_conflict(void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 10 };
	int fd = TRY(open("f", O_RDWR));

	WANT_ERR2(fcntl(fd, F_SETLK, &fl), EAGAIN, EACCES);
	fl.l_type = F_RDLCK;
	fl.l_start = 0;
	WANT_ERR2(fcntl(fd, F_SETLK, &fl), EAGAIN, EACCES);
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 50, .l_len = 10 };
	TRY(fcntl(fd, F_GETLK, &fl));
	WANT(fl.l_type == F_WRLCK && fl.l_pid == lock_holder && fl.l_start == 0 && fl.l_len == 100,
	     "F_GETLK reported type %d, pid %d, start %lld, len %lld; expected the parent's write lock on [0, 100)",
	     fl.l_type, (int)fl.l_pid, (long long)fl.l_start, (long long)fl.l_len);
	/* a range nobody holds */
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 100, .l_len = 100 };
	TRY(fcntl(fd, F_SETLK, &fl));
	(void)arg;
	return 0;
}

static int locks_child_read(void *arg)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd = TRY(open("f", O_RDWR));

	TRY(fcntl(fd, F_SETLK, &fl));
	fl.l_type = F_WRLCK;
	WANT_ERR2(fcntl(fd, F_SETLK, &fl), EAGAIN, EACCES);
	(void)arg;
	return 0;
}

static int locks_child_free(void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int fd = TRY(open("f", O_RDWR));

	TRY(fcntl(fd, F_GETLK, &fl));
	WANT(fl.l_type == F_UNLCK, "F_GETLK reports a lock (type %d, pid %d) where none should be", fl.l_type,
	     (int)fl.l_pid);
	TRY(fcntl(fd, F_SETLK, &fl));
	(void)arg;
	return 0;
}

/* Blocks in F_SETLKW until the parent lets go. */
static int locks_child_wait(void *arg)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	struct timespec t0, t1;
	int fd = TRY(open("f", O_RDWR));

	TRY(clock_gettime(CLOCK_MONOTONIC, &t0));
	child_signal();
	TRY(fcntl(fd, F_SETLKW, &fl));
	TRY(clock_gettime(CLOCK_MONOTONIC, &t1));
	WANT(ts_ns(t1) - ts_ns(t0) >= 50000000LL, "F_SETLKW returned after %lld ms, before the holder let go",
	     (ts_ns(t1) - ts_ns(t0)) / 1000000);
	(void)arg;
	return 0;
}

static void unlock_later(int sig, void *arg)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };

	if (wait_signal(sig)) {
		sleep_ms(200);
		if (fcntl(*(int *)arg, F_SETLK, &fl) < 0) /* the waiting child then times out */
			fprintf(stderr, "posix: cannot unlock for the waiting child: %s\n", en(errno));
	}
}

int check_posix_locks(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
	int fd, fd2;

	lock_holder = getpid();
	fd = TRY(open("f", O_CREAT | O_RDWR, 0644));
	TRY(ftruncate(fd, 200));
	TRY(fcntl(fd, F_SETLK, &fl));
	CALL(in_child(locks_child_conflict, NULL, NULL));
	/* down to a read lock: others may read-lock too, not write-lock */
	fl.l_type = F_RDLCK;
	TRY(fcntl(fd, F_SETLK, &fl));
	CALL(in_child(locks_child_read, NULL, NULL));
	fl.l_type = F_UNLCK;
	TRY(fcntl(fd, F_SETLK, &fl));
	CALL(in_child(locks_child_free, NULL, NULL));
	/* F_SETLKW waits for the holder */
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	TRY(fcntl(fd, F_SETLK, &fl));
	CALL(in_child(locks_child_wait, &fd, unlock_later));
	/* closing any descriptor of the file drops the process's locks */
	TRY(fcntl(fd, F_SETLK, &fl));
	fd2 = TRY(open("f", O_RDONLY));
	TRY(close(fd2));
	CALL(in_child(locks_child_free, NULL, NULL));
	TRY(close(fd));
	return 0;
}

int check_ofd_locks(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	int fd1, fd2;

	fd1 = TRY(open("f", O_CREAT | O_RDWR, 0644));
	fd2 = TRY(open("f", O_RDWR));
	TRY(fcntl(fd1, F_OFD_SETLK, &fl));
	WANT_ERR2(fcntl(fd2, F_OFD_SETLK, &fl), EAGAIN, EACCES);
	TRY(fcntl(fd2, F_OFD_GETLK, &fl));
	WANT(fl.l_type == F_WRLCK && fl.l_pid == -1, "F_OFD_GETLK reported type %d, pid %d", fl.l_type, (int)fl.l_pid);
	TRY(close(fd1));
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	TRY(fcntl(fd2, F_OFD_SETLK, &fl));
	TRY(close(fd2));
	return 0;
}

static int flock_child(void *arg)
{
	int fd = TRY(open("f", O_RDONLY));

	WANT_ERR(flock(fd, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	WANT_ERR(flock(fd, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	(void)arg;
	return 0;
}

int check_flock(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int fd1, fd2, fd3;

	fd1 = TRY(open("f", O_CREAT | O_RDWR, 0644));
	fd2 = TRY(open("f", O_RDWR));
	TRY(flock(fd1, LOCK_EX | LOCK_NB));
	WANT_ERR(flock(fd2, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	WANT_ERR(flock(fd2, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	CALL(in_child(flock_child, NULL, NULL));
	/* a duplicate shares the open file description, and its lock */
	fd3 = TRY(dup(fd1));
	TRY(flock(fd3, LOCK_EX | LOCK_NB));
	/* flock and POSIX locks do not see each other on Linux */
	TRY(fcntl(fd2, F_SETLK, &fl));
	TRY(flock(fd1, LOCK_UN));
	TRY(flock(fd2, LOCK_SH | LOCK_NB));
	TRY(flock(fd1, LOCK_SH | LOCK_NB));
	WANT_ERR(flock(fd1, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	TRY(close(fd2));
	TRY(flock(fd1, LOCK_EX | LOCK_NB));
	TRY(close(fd1));
	TRY(close(fd3));
	return 0;
}
