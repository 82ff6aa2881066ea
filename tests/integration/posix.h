/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TEST_POSIX_H
#define CONVFS_TEST_POSIX_H

/*
 * What the files of the POSIX battery share: the options, the ways a check
 * fails or is skipped, the helpers (posix.c), and the checks themselves,
 * which posix.c's runner lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct options {
	bool convfs;   /* convfs's documented differences apply */
	bool priv;     /* a private convfs mount: no group/other bits, no other users */
	bool verify;
	bool have_other;
	uid_t other;
	gid_t other_gid;
	const char *dir;
};

extern struct options opt;
extern char why[2048];

const char *en(int e);
__attribute__((format(printf, 1, 2))) int bad(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) int skip(const char *fmt, ...);

/* A call that must succeed: its value, or the check fails with the call and errno. */
#define TRY(call) TRY_(call, CONCAT(try_, __COUNTER__))
#define CONCAT(a, b) CONCAT_(a, b)
#define CONCAT_(a, b) a##b
#define TRY_(call, v)                                                             \
	({                                                                        \
		long v = (long)(call);                                            \
		if (v < 0)                                                        \
			return bad("%s: %s (line %d)", #call, en(errno), __LINE__); \
		v;                                                                \
	})

/* A call that must fail with errno e1 (or e2). */
#define WANT_ERR2(call, e1, e2)                                                                      \
	do {                                                                                         \
		long _r;                                                                             \
		errno = 0;                                                                           \
		_r = (long)(call);                                                                   \
		if (_r >= 0)                                                                         \
			return bad("%s succeeded; expected %s (line %d)", #call, en(e1), __LINE__);  \
		if (errno != (e1) && errno != (e2))                                                  \
			return bad("%s: %s; expected %s (line %d)", #call, en(errno), en(e1), __LINE__); \
	} while (0)
#define WANT_ERR(call, e1) WANT_ERR2(call, e1, e1)

/* A condition that must hold. */
#define WANT(cond, ...)                      \
	do {                                 \
		if (!(cond))                 \
			return bad(__VA_ARGS__); \
	} while (0)

/* A helper that has set why already. */
#define CALL(x)                \
	do {                   \
		if ((x) < 0)   \
			return -1; \
	} while (0)


/* The mode a new or chmodded entry gets: group and other bits go on a private mount. */
static inline mode_t M(mode_t mode)
{
	return opt.priv ? (mode & ~(mode_t)077) : mode;
}

static inline bool ts_eq(struct timespec a, long long sec, long nsec)
{
	return a.tv_sec == sec && a.tv_nsec == nsec;
}

static inline long long ts_ns(struct timespec t)
{
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* ---- helpers (posix.c) ------------------------------------------------------- */

int write_file(const char *path, const void *data, size_t len, mode_t mode);
int write_str(const char *path, const char *s);
int read_file(const char *path, char *buf, size_t cap, size_t *ret_len);
int want_content(const char *path, const void *want, size_t len);
int want_str(const char *path, const char *s);
int want_mode(const char *path, mode_t mode);
int want_nlink(const char *path, nlink_t n);
int want_gone(const char *path);
void sleep_ms(long ms);
void fill_pattern(unsigned char *p, size_t n, unsigned seed);
int in_child(int (*fn)(void *), void *arg, void (*meanwhile)(int fd, void *arg));
void child_signal(void);
bool wait_signal(int fd);

/* The O_APPEND log of two writers (posix_files.c), which `keep` leaves too. */
#define APPEND_RECORDS 500
#define APPEND_RECLEN 32

int append_two_writers(const char *path);

/* ---- the checks: 0 ok, 1 skipped (skip()), -1 failed (bad()) ---------------- */

/* posix_files.c: open flags, O_APPEND, offsets and holes, truncate, fallocate, copy_file_range */
int check_open_creat(void);
int check_open_excl(void);
int check_open_trunc(void);
int check_open_access_modes(void);
int check_open_directory(void);
int check_open_nofollow(void);
int check_open_tmpfile(void);
int check_append(void);
int check_append_concurrent(void);
int check_pread_pwrite(void);
int check_sparse(void);
int check_truncate(void);
int check_fallocate(void);
int check_copy_file_range(void);

/* posix_names.c: rename, hard links, long paths, symlinks, unlink, mkdir and rmdir */
int check_rename_file(void);
int check_rename_dir(void);
int check_rename_errors(void);
int check_rename_noreplace(void);
int check_rename_exchange(void);
int check_rename_open(void);
int check_link(void);
int check_link_errors(void);
int check_link_special(void);
int check_long_paths(void);
int check_symlink(void);
int check_unlink_open(void);
int check_unlink_rmdir_errors(void);
int check_mkdir_rmdir(void);

/* posix_attrs.c: timestamps, modes and owners, permissions, extended attributes */
int check_times(void);
int check_times_dir_symlink(void);
int check_chmod(void);
int check_chown(void);
int check_root_override(void);
int check_permissions(void);
int check_xattr(void);

/* posix_io.c: mmap, sync, locks */
int check_mmap_shared(void);
int check_mmap_private(void);
int check_fsync(void);
int check_direct_io(void);
int check_posix_locks(void);
int check_ofd_locks(void);
int check_flock(void);

/* posix_dirs.c: folders, special files */
int check_statfs(void);
int check_readdir_many(void);
int check_long_names(void);
int check_dirfd_ops(void);
int check_cwd(void);
int check_special_files(void);
int check_unix_socket(void);
int check_exec(void);

/* posix_keep.c: what stays for a remount, and its check after one */
int check_keep(void);
int verify_keep(void);

#endif
