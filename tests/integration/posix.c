/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * posix.c: a POSIX battery for one directory, in the spirit of libfuse's
 * test/test_syscalls.c.
 *
 *   posix [--convfs] [--private] [--other UID] DIR   every check, in DIR (made here)
 *   posix --verify [--private] DIR                   what a run left in DIR/keep
 *
 * Each check runs in a forked child with its own folder DIR/<check> as its
 * working directory (so a failure cannot leak descriptors, locks, mappings or
 * a working directory into the next one; a crash or a hang, cut by alarm(),
 * is a failure too) and prints `ok NAME`, `FAIL NAME: what (errno)` or
 * `skip NAME: why`. The exit status is 1 if any check failed.
 *
 * The same binary runs on a plain folder (where every check must pass, so
 * that the battery itself is known to be right) and in convfs's plain area.
 * Where convfs deliberately differs, the check expects the documented
 * behaviour (docs/ARCHITECTURE.md, "Plain files: what POSIX they get"):
 *   --convfs   O_TMPFILE and extended attributes fail with EOPNOTSUPP; device
 *              nodes with EPERM;
 *   --private  (implies --convfs) a mount without -o allow_other: group and
 *              other bits are dropped on create, mkdir and chmod, and other
 *              users are refused everything (EACCES);
 *   --other UID  the permission checks also run as UID in a child (setresuid),
 *              which needs root and a way in for UID (allow_other, and DIR's
 *              parents searchable).
 *
 * The check `keep` leaves files in DIR/keep (a hard link pair, a symlink, a
 * fifo, explicit times, a sparse tail, bytes written through a mapping, an
 * O_APPEND log of two writers, modes, an owner) that --verify checks again
 * after the filesystem was remounted.
 *
 * This file has the helpers and the runner; the checks are in posix_files.c
 * (open flags, O_APPEND, offsets and holes, truncate, fallocate,
 * copy_file_range), posix_names.c (rename, links, symlinks, unlink, mkdir),
 * posix_attrs.c (times, modes and owners, permissions, xattrs), posix_io.c
 * (mmap, sync, locks), posix_dirs.c (folders, special files) and
 * posix_keep.c (keep and --verify); posix.h is what they share.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "posix.h"

#define CHECK_TIMEOUT 60 /* seconds a check may take */

struct options opt;

char why[2048];

const char *en(int e)
{
	const char *name = strerrorname_np(e);
	static __thread char buf[32];

	if (name)
		return name;
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

/* Records why the check failed; returns -1 for `return bad(...)`. */
__attribute__((format(printf, 1, 2))) int bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

/* Records why the check is skipped; returns 1. */
__attribute__((format(printf, 1, 2))) int skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return 1;
}

/* ---- helpers ----------------------------------------------------------------- */

int write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = TRY(open(path, O_CREAT | O_WRONLY | O_TRUNC, mode));
	ssize_t n = write(fd, data, len);

	if (n < 0 || (size_t)n != len) {
		int e = errno;

		close(fd);
		return bad("write '%s': %s", path, n < 0 ? en(e) : "short write");
	}
	TRY(close(fd));
	return 0;
}

int write_str(const char *path, const char *s)
{
	return write_file(path, s, strlen(s), 0644);
}

/* Reads at most cap bytes of path into buf; *ret_len the count. */
int read_file(const char *path, char *buf, size_t cap, size_t *ret_len)
{
	int fd = TRY(open(path, O_RDONLY));
	size_t got = 0;

	while (got < cap) {
		ssize_t n = read(fd, buf + got, cap - got);

		if (n < 0) {
			int e = errno;

			close(fd);
			return bad("read '%s': %s", path, en(e));
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	TRY(close(fd));
	*ret_len = got;
	return 0;
}

int want_content(const char *path, const void *want, size_t len)
{
	static char buf[2 << 20];
	size_t got;

	if (len > sizeof(buf) - 1)
		return bad("want_content: %zu bytes is too much", len);
	CALL(read_file(path, buf, sizeof(buf), &got));
	if (got != len)
		return bad("'%s' has %zu bytes, expected %zu", path, got, len);
	if (memcmp(buf, want, len) != 0)
		return bad("'%s' does not hold the expected bytes", path);
	return 0;
}

int want_str(const char *path, const char *s)
{
	return want_content(path, s, strlen(s));
}

int want_mode(const char *path, mode_t mode)
{
	struct stat st;

	TRY(lstat(path, &st));
	if ((st.st_mode & 07777) != mode)
		return bad("'%s' has mode %04o, expected %04o", path, st.st_mode & 07777, mode);
	return 0;
}

int want_nlink(const char *path, nlink_t n)
{
	struct stat st;

	TRY(lstat(path, &st));
	if (st.st_nlink != n)
		return bad("'%s' has %lu links, expected %lu", path, (unsigned long)st.st_nlink, (unsigned long)n);
	return 0;
}

int want_gone(const char *path)
{
	struct stat st;

	WANT_ERR(lstat(path, &st), ENOENT);
	return 0;
}

void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 7 + seed) & 0xff);
}

/*
 * Runs fn in a forked child and waits for it. The child's failure (its why)
 * comes back through a pipe and becomes this check's. If ready is not NULL,
 * it gets the read end of a pipe the child may write to (its fd 3 is the write
 * end: child_signal()) before the parent waits.
 */
int in_child(int (*fn)(void *), void *arg, void (*meanwhile)(int fd, void *arg))
{
	int res[2], sig[2], status;
	char msg[sizeof(why)];
	ssize_t n;
	pid_t pid;

	TRY(pipe2(res, O_CLOEXEC));
	TRY(pipe2(sig, O_CLOEXEC));
	fflush(NULL);
	pid = TRY(fork());
	if (pid == 0) {
		int r;

		close(res[0]);
		close(sig[0]);
		if (dup2(sig[1], 3) < 0)
			_exit(2);
		alarm(CHECK_TIMEOUT / 2);
		r = fn(arg);
		if (r < 0)
			(void)!write(res[1], why, strlen(why));
		_exit(r < 0);
	}
	TRY(close(res[1]));
	TRY(close(sig[1]));
	if (meanwhile)
		meanwhile(sig[0], arg);
	TRY(close(sig[0]));
	n = read(res[0], msg, sizeof(msg) - 1);
	TRY(close(res[0]));
	TRY(waitpid(pid, &status, 0));
	if (WIFSIGNALED(status))
		return bad("the child was killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) != 0) {
		msg[n > 0 ? n : 0] = '\0';
		return bad("in the child: %s", n > 0 ? msg : "(no reason given)");
	}
	return 0;
}

/* In a child of in_child(): tells the parent's meanwhile() it may go on. */
void child_signal(void)
{
	(void)!write(3, "x", 1);
}

/* In meanwhile(): waits for child_signal(). */
bool wait_signal(int fd)
{
	char c;

	return read(fd, &c, 1) == 1;
}

/* ---- the runner ------------------------------------------------------------------ */

struct check {
	const char *name;
	int (*fn)(void);
};

static const struct check checks[] = {
	{ "open_creat", check_open_creat },
	{ "open_excl", check_open_excl },
	{ "open_trunc", check_open_trunc },
	{ "open_access_modes", check_open_access_modes },
	{ "open_directory", check_open_directory },
	{ "open_nofollow", check_open_nofollow },
	{ "open_tmpfile", check_open_tmpfile },
	{ "append", check_append },
	{ "append_concurrent", check_append_concurrent },
	{ "pread_pwrite", check_pread_pwrite },
	{ "sparse", check_sparse },
	{ "rename_file", check_rename_file },
	{ "rename_dir", check_rename_dir },
	{ "rename_errors", check_rename_errors },
	{ "rename_noreplace", check_rename_noreplace },
	{ "rename_exchange", check_rename_exchange },
	{ "rename_open", check_rename_open },
	{ "link", check_link },
	{ "link_errors", check_link_errors },
	{ "link_special", check_link_special },
	{ "long_paths", check_long_paths },
	{ "symlink", check_symlink },
	{ "unlink_open", check_unlink_open },
	{ "unlink_rmdir_errors", check_unlink_rmdir_errors },
	{ "mkdir_rmdir", check_mkdir_rmdir },
	{ "truncate", check_truncate },
	{ "times", check_times },
	{ "times_dir_symlink", check_times_dir_symlink },
	{ "chmod", check_chmod },
	{ "chown", check_chown },
	{ "root_override", check_root_override },
	{ "permissions", check_permissions },
	{ "mmap_shared", check_mmap_shared },
	{ "mmap_private", check_mmap_private },
	{ "fsync", check_fsync },
	{ "direct_io", check_direct_io },
	{ "posix_locks", check_posix_locks },
	{ "ofd_locks", check_ofd_locks },
	{ "flock", check_flock },
	{ "statfs", check_statfs },
	{ "readdir_many", check_readdir_many },
	{ "long_names", check_long_names },
	{ "dirfd_ops", check_dirfd_ops },
	{ "cwd", check_cwd },
	{ "special_files", check_special_files },
	{ "unix_socket", check_unix_socket },
	{ "exec", check_exec },
	{ "xattr", check_xattr },
	{ "fallocate", check_fallocate },
	{ "copy_file_range", check_copy_file_range },
	{ "keep", check_keep },
};

static const struct check verify_checks[] = {
	{ "keep", verify_keep },
};

/* Runs one check in a child, in folder sub (made unless verifying). Returns 0 ok, 1 skipped, -1 failed. */
static int run(const struct check *c, const char *sub)
{
	int status, r;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		printf("FAIL %s: fork: %s\n", c->name, en(errno));
		return -1;
	}
	if (pid == 0) {
		alarm(CHECK_TIMEOUT);
		if (!opt.verify && mkdir(sub, 0755) < 0) {
			printf("FAIL %s: mkdir '%s/%s': %s\n", c->name, opt.dir, sub, en(errno));
			_exit(2);
		}
		if (chdir(sub) < 0) {
			printf("FAIL %s: chdir '%s/%s': %s\n", c->name, opt.dir, sub, en(errno));
			_exit(2);
		}
		why[0] = '\0';
		r = c->fn();
		if (r < 0)
			printf("FAIL %s: %s\n", c->name, why);
		else if (r > 0)
			printf("skip %s: %s\n", c->name, why);
		else
			printf("ok %s\n", c->name);
		fflush(NULL);
		_exit(r < 0 ? 2 : r);
	}
	if (waitpid(pid, &status, 0) < 0) {
		printf("FAIL %s: waitpid: %s\n", c->name, en(errno));
		return -1;
	}
	if (WIFSIGNALED(status)) {
		printf("FAIL %s: killed by signal %d%s\n", c->name, WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? " (it took too long)" : "");
		return -1;
	}
	return WEXITSTATUS(status) == 0 ? 0 : WEXITSTATUS(status) == 1 ? 1 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: posix [--convfs] [--private] [--other UID] DIR\n"
			"       posix --verify [--private] DIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const struct check *list = checks;
	size_t n = sizeof(checks) / sizeof(checks[0]);
	const char *only = getenv("POSIX_ONLY"); /* a comma-separated list of checks, for debugging */
	int failed = 0, passed = 0, skipped = 0, i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--convfs") == 0) {
			opt.convfs = true;
		} else if (strcmp(argv[i], "--private") == 0) {
			opt.convfs = opt.priv = true;
		} else if (strcmp(argv[i], "--verify") == 0) {
			opt.verify = true;
		} else if (strcmp(argv[i], "--other") == 0 && i + 1 < argc) {
			char *end;
			long u = strtol(argv[++i], &end, 10);

			if (*end || u <= 0)
				usage();
			opt.other = (uid_t)u;
			opt.other_gid = (gid_t)u;
			opt.have_other = true;
		} else {
			usage();
		}
	}
	if (i != argc - 1)
		usage();
	opt.dir = argv[i];
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(0);
	if (opt.verify) {
		list = verify_checks;
		n = sizeof(verify_checks) / sizeof(verify_checks[0]);
	} else if (mkdir(opt.dir, 0755) < 0) {
		fprintf(stderr, "posix: cannot create '%s': %s\n", opt.dir, strerror(errno));
		return 2;
	}
	if (chdir(opt.dir) < 0) {
		fprintf(stderr, "posix: cannot enter '%s': %s\n", opt.dir, strerror(errno));
		return 2;
	}
	for (size_t k = 0; k < n; k++) {
		if (only) {
			const char *p = strstr(only, list[k].name);
			size_t len = strlen(list[k].name);

			if (!p || (p != only && p[-1] != ',') || (p[len] != '\0' && p[len] != ','))
				continue;
		}
		switch (run(&list[k], list[k].name)) {
		case 0:
			passed++;
			break;
		case 1:
			skipped++;
			break;
		default:
			failed++;
		}
	}
	printf("# %s: %d ok, %d failed, %d skipped\n", opt.dir, passed, failed, skipped);
	return failed ? 1 : 0;
}
