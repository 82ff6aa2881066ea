/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plain.c: the backing tree that holds every path the store does not manage.
 *
 * The daemon must never be led out of its own tree: a symlink that a user (or
 * an attacker sharing the mount) plants in the plain area is data, to be
 * returned by readlink, never followed by the daemon. Every path is resolved
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and leaves are touched
 * with the *at() calls and AT_SYMLINK_NOFOLLOW / O_NOFOLLOW.
 *
 * Where openat2 answers ENOSYS (kernels before 5.6, and Debian 12's valgrind
 * 3.19, which does not know the call), the same walk is done by hand: one
 * openat() per component, each relative to the last and with O_NOFOLLOW,
 * refusing "..", "." and empty components, so the guarantee is the same. The
 * choice is made once per process; CONVFS_NO_OPENAT2=1 in the environment at
 * startup forces the walk, for the tests.
 *
 * The backing root is the mount root's folder but does not share its mode:
 * it stays 0700, so that only the daemon's user (or root) reaches inside,
 * and another user of a shared mount (-o allow_other) gets only as far as
 * the mount lets it, where default_permissions judges every entry. Were it
 * chmod'ed with the mount root, a user let in by `chmod 755` of the mount
 * could rename the owner's files in the backing tree directly, past every
 * check of the mount, while the kernel kept the daemon's attributes. The
 * mount root's own mode is kept in the store (meta 'root_mode', octal; 0700
 * without it) and shown by plain_root_stat().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fs/fs.h"
#include "store/store.h"
#include "store/util.h"

/*
 * no_openat2 is set once openat2 is known to be missing, or at the first open
 * after CONVFS_NO_OPENAT2=1 asked for the walk; never cleared. Why is said
 * once, in one info line, and not before plain_log_ready(): a daemon says
 * nothing on the terminal that started it, and its first opens in the
 * backing tree come before it detaches.
 */
static bool no_openat2;
static bool walk_asked;
static const char *walk_why;
static bool log_ready;
static bool walk_said;

static void say_walk(void)
{
	if (!__atomic_exchange_n(&walk_said, true, __ATOMIC_ACQ_REL))
		log_info("%s: resolving paths in the backing tree one component at a time", walk_why);
}

static void use_walk(const char *why)
{
	const char *none = NULL;

	__atomic_compare_exchange_n(&walk_why, &none, why, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	__atomic_store_n(&no_openat2, true, __ATOMIC_RELEASE);
	if (__atomic_load_n(&log_ready, __ATOMIC_ACQUIRE))
		say_walk();
}

void plain_log_ready(void)
{
	__atomic_store_n(&log_ready, true, __ATOMIC_RELEASE);
	if (__atomic_load_n(&walk_why, __ATOMIC_ACQUIRE))
		say_walk();
}

static bool creates(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/*
 * The errno of a failed openat() of name in dirfd: a symlink met where a
 * folder was wanted (O_DIRECTORY | O_NOFOLLOW gives ENOTDIR) is ELOOP, as
 * openat2 with RESOLVE_NO_SYMLINKS says.
 */
static int walk_errno(int err, int dirfd, const char *name)
{
	struct stat st;

	if (err == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return -ELOOP;
	return -err;
}

/* Opens the last component, name, in dirfd: never a symlink. Returns an fd or -errno. */
static int walk_last(int dirfd, const char *name, int flags, mode_t mode)
{
	struct stat st;
	int fd, r;

	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, creates(flags) ? (mode & 07777) : 0);
	if (fd < 0)
		return walk_errno(errno, dirfd, name);
	/* O_PATH | O_NOFOLLOW opens a symlink itself; openat2 gives it only if asked. */
	if ((flags & O_PATH) && !(flags & O_NOFOLLOW)) {
		if (fstat(fd, &st) < 0) {
			r = -errno;
			log_err("cannot stat '%s' in the backing tree: %s", name, strerror(errno));
			close(fd);
			return r;
		}
		if (S_ISLNK(st.st_mode)) {
			close(fd);
			return -ELOOP;
		}
	}
	return fd;
}

/*
 * openat2_beneath() by hand: rel is walked one component at a time, each
 * opened O_PATH | O_DIRECTORY | O_NOFOLLOW relative to the one before, so no
 * symlink is followed and the walk cannot climb out. "." alone is dirfd
 * itself; otherwise "..", "." and empty components are refused (the FUSE
 * layer never makes them), an absolute path too.
 */
static int walk_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	_cleanup_close_ int cur = -1;
	char name[NAME_MAX + 1];
	const char *p = rel;

	if (strcmp(rel, ".") == 0)
		return walk_last(dirfd, ".", flags, mode);
	if (*rel == '/')
		return -EXDEV;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		int at = cur >= 0 ? cur : dirfd, fd;

		if (n == 0 || (n == 1 && p[0] == '.'))
			return -EINVAL;
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EXDEV;
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		if (!slash)
			return walk_last(at, name, flags, mode);
		fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return walk_errno(errno, at, name);
		if (cur >= 0)
			close(cur);
		cur = fd;
		p = slash + 1;
	}
}

static int openat2_one(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_CLOEXEC,
		.mode = creates(flags) ? (mode & 07777) : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (__atomic_load_n(&no_openat2, __ATOMIC_RELAXED))
		return walk_beneath(dirfd, rel, flags, mode);
	if (walk_asked) {
		use_walk("CONVFS_NO_OPENAT2=1");
		return walk_beneath(dirfd, rel, flags, mode);
	}
	do
		fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	if (fd < 0 && errno == ENOSYS) {
		use_walk("openat2 is not available");
		return walk_beneath(dirfd, rel, flags, mode);
	}
	return fd < 0 ? -errno : fd;
}

/*
 * A path of the mount is as long as the folders above it make it: a caller
 * deep in the tree names a file near PATH_MAX relative to its own folder,
 * and the path from the root is longer (as it would be on any filesystem).
 * The kernel takes at most PATH_MAX bytes per call, so a longer rel is
 * resolved a piece at a time: each piece a run of whole components under
 * PATH_MAX, opened O_PATH | O_DIRECTORY beneath the folder the last piece
 * gave, with the same guarantee (no symlink followed, nothing above).
 */
static int openat2_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	_cleanup_close_ int cur = -1;
	char piece[PATH_MAX];

	while (strlen(rel) >= PATH_MAX) {
		const char *cut = rel + PATH_MAX - 1;
		int fd;

		while (cut > rel && *cut != '/')
			cut--;
		if (cut == rel)
			return -ENAMETOOLONG; /* no component is that long */
		memcpy(piece, rel, (size_t)(cut - rel));
		piece[cut - rel] = '\0';
		fd = openat2_one(cur >= 0 ? cur : dirfd, piece, O_PATH | O_DIRECTORY, 0);
		if (fd < 0)
			return fd;
		if (cur >= 0)
			close(cur);
		cur = fd;
		rel = cut + 1;
	}
	return openat2_one(cur >= 0 ? cur : dirfd, rel, flags, mode);
}

/*
 * Where rel is in the backing tree: itself, or for a path kept per mount
 * (store_path_per_mount(): the client's SQLite databases) the same path in
 * this mount's own folder, fs->per_mount. *own holds what it made (free()).
 */
static const char *backing_rel(const struct fs *fs, const char *rel, char **own)
{
	*own = NULL;
	if (!fs->per_mount || !store_path_per_mount(rel))
		return rel;
	if (asprintf(own, "%s/%s", fs->per_mount, rel) < 0) {
		*own = NULL;
		return NULL;
	}
	return *own;
}

int plain_open(const struct fs *fs, const char *rel, int flags, mode_t mode)
{
	_cleanup_free_ char *own = NULL;

	rel = backing_rel(fs, rel, &own);
	if (!rel)
		return -ENOMEM;
	return openat2_beneath(fs->root_fd, *rel ? rel : ".", flags, mode);
}

int plain_open_regular(const struct fs *fs, const char *rel, int flags, mode_t mode, struct stat *ret_st)
{
	struct stat st;
	int fd = plain_open(fs, rel, flags | O_NONBLOCK, mode), r;

	/* A FIFO opened for writing with no reader, a device with no device behind it. */
	if (fd == -ENXIO)
		return -EINVAL;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (S_ISREG(st.st_mode))
		r = 0;
	else
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (r < 0) {
		close(fd);
		return r;
	}
	if (ret_st)
		*ret_st = st;
	return fd;
}

int plain_open_parent(const struct fs *fs, const char *rel, const char **ret_leaf)
{
	_cleanup_free_ char *own = NULL, *buf = NULL;
	const char *slash, *leaf = strrchr(rel, '/');
	int fd;

	/* The leaf is the caller's own (in rel), the same name wherever its folder is. */
	leaf = leaf ? leaf + 1 : rel;
	rel = backing_rel(fs, rel, &own);
	if (!rel)
		return -ENOMEM;
	slash = strrchr(rel, '/');
	if (!slash) {
		fd = openat2_beneath(fs->root_fd, ".", O_PATH | O_DIRECTORY, 0);
		if (fd >= 0)
			*ret_leaf = rel;
		return fd;
	}
	buf = strndup(rel, (size_t)(slash - rel));
	if (!buf)
		return -ENOMEM;
	fd = openat2_beneath(fs->root_fd, buf, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0)
		*ret_leaf = leaf;
	return fd;
}

int plain_per_mount(struct fs *fs, int64_t folder)
{
	static const char *const taken_over[] = { "db", "locks.db", "locks.db-journal", "locks.db-wal", "locks.db-shm",
						  "locks.db.lock" };
	char rel[64], to[128];
	int fd, r;

	snprintf(rel, sizeof(rel), PLAIN_PER_MOUNT_DIR "/%" PRId64, folder);
	free(TAKE_PTR(fs->per_mount)); /* the paths below are the top's while it is made */
	fd = plain_open(fs, rel, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0) {
		close(fd);
	} else if ((r = plain_mkdirs(fs, rel)) < 0) {
		log_err("cannot make this mount's own folder '%s' in the backing tree: %s; the client's databases "
			"are shared with the other mounts of the store", rel, strerror(-r));
		return r;
	} else {
		for (size_t i = 0; i < ARRAY_SIZE(taken_over); i++) {
			snprintf(to, sizeof(to), "%s/%s", rel, taken_over[i]);
			r = plain_rename(fs, taken_over[i], to, RENAME_NOREPLACE);
			if (r < 0 && r != -ENOENT)
				log_warn("cannot move '%s' into this mount's own folder '%s': %s; the client makes it anew",
					 taken_over[i], rel, strerror(-r));
		}
	}
	fs->per_mount = strdup(rel);
	return fs->per_mount ? 0 : -ENOMEM;
}

int plain_mkdirs(const struct fs *fs, const char *rel)
{
	_cleanup_free_ char *buf = strdup(rel);

	if (!buf)
		return -ENOMEM;
	for (char *p = buf; ; p++) {
		if (*p == '/' || *p == '\0') {
			char save = *p;
			const char *leaf;
			int dfd, r;

			*p = '\0';
			dfd = plain_open_parent(fs, buf, &leaf);
			if (dfd < 0)
				return dfd;
			r = mkdirat(dfd, leaf, 0700) < 0 && errno != EEXIST ? -errno : 0;
			if (r == 0) {
				/* What exists must be a folder: a symlink there is never taken for one. */
				struct stat st;

				if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
					r = -errno;
				else if (!S_ISDIR(st.st_mode))
					r = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
			}
			close(dfd);
			if (r < 0)
				return r;
			*p = save;
			if (!save)
				return 0;
		}
	}
}

/* renameat2(), or with link linkat(), of from to to: both resolved as plain_open_parent() does. */
static int two_names(const struct fs *fs, const char *from, const char *to, bool link, unsigned int flags)
{
	const char *lf, *lt;
	int df, dt, r;

	df = plain_open_parent(fs, from, &lf);
	if (df < 0)
		return df;
	dt = plain_open_parent(fs, to, &lt);
	if (dt < 0) {
		close(df);
		return dt;
	}
	if (link)
		r = linkat(df, lf, dt, lt, 0) < 0 ? -errno : 0;
	else
		r = renameat2(df, lf, dt, lt, flags) < 0 ? -errno : 0;
	close(df);
	close(dt);
	return r;
}

int plain_rename(const struct fs *fs, const char *from, const char *to, unsigned int flags)
{
	return two_names(fs, from, to, false, flags);
}

int plain_link(const struct fs *fs, const char *from, const char *to)
{
	return two_names(fs, from, to, true, 0);
}

int plain_open_root(const char *store_path, char **ret_backing_path, int *ret_fd)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	const char *no = getenv("CONVFS_NO_OPENAT2");
	int fd, r;

	if (no && strcmp(no, "1") == 0)
		walk_asked = true;
	r = sb_addf(&path, "%s.files", store_path);
	if (r < 0)
		return r;
	if (mkdir(path.buf, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		log_err("cannot create the backing tree '%s': %s", path.buf, strerror(errno));
		return r;
	}
	fd = open(path.buf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		log_err("cannot open the backing tree '%s': %s", path.buf, strerror(errno));
		return r;
	}
	*ret_fd = fd;
	*ret_backing_path = sb_detach(&path, NULL);
	return 0;
}

/* ---- the mount root's mode ------------------------------------------------ */

/* Orders the store's row and fs->root_mode among chmods of the root. A leaf: the store's lock is taken inside it. */
static pthread_mutex_t root_mode_lock = PTHREAD_MUTEX_INITIALIZER;

/* chmod of the backing root itself (an O_PATH fd, never a path that could be swapped). 0 or -errno. */
static int backing_root_chmod(const struct fs *fs, mode_t mode)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fs->root_fd);
	return chmod(proc, mode) < 0 ? -errno : 0;
}

int plain_root_mode_parse(const char *text, mode_t *ret)
{
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(text, &end, 8);
	if (errno || end == text || *end || m > 07777)
		return -EINVAL;
	*ret = (mode_t)m;
	return 0;
}

int plain_root_load(struct fs *fs)
{
	_cleanup_free_ char *text = NULL;
	char buf[8];
	struct stat st;
	int r = store_meta_get(fs->store, PLAIN_ROOT_MODE_KEY, &text);

	fs->root_mode = 0700;
	if (r == 0 && plain_root_mode_parse(text, &fs->root_mode) < 0)
		log_warn("the mount root's mode '%s' in the store is not a mode; it shows 0700 until it is chmod'ed", text);
	else if (r < 0 && r != -ENOENT)
		return r;
	if (fstat(fs->root_fd, &st) < 0) {
		r = -errno;
		log_err("cannot stat the backing tree '%s': %s", fs->backing_path, strerror(errno));
		return r;
	}
	if ((st.st_mode & 07777) == 0700)
		return 0;
	/* An older convfs chmod'ed the backing root with the mount root: that mode is the mount root's now. */
	if (r == -ENOENT) {
		fs->root_mode = st.st_mode & 07777;
		snprintf(buf, sizeof(buf), "%04o", (unsigned)fs->root_mode);
		if ((r = store_meta_set(fs->store, PLAIN_ROOT_MODE_KEY, buf)) < 0)
			log_warn("cannot keep the mount root's mode in the store: %s; it shows %04o until unmounted",
				 strerror(-r), (unsigned)fs->root_mode);
	}
	if ((r = backing_root_chmod(fs, 0700)) < 0) {
		log_err("cannot make the backing tree '%s' 0700: %s", fs->backing_path, strerror(-r));
		return r;
	}
	log_info("the backing tree '%s' was mode %04o, now 0700; the mount root shows %04o", fs->backing_path,
		 (unsigned)(st.st_mode & 07777), (unsigned)fs->root_mode);
	return 0;
}

int plain_root_stat(const struct fs *fs, struct stat *st)
{
	if (fstat(fs->root_fd, st) < 0)
		return -errno;
	st->st_mode = S_IFDIR | __atomic_load_n(&fs->root_mode, __ATOMIC_RELAXED);
	return 0;
}

int plain_root_chmod(struct fs *fs, mode_t mode)
{
	char buf[8];
	int r;

	snprintf(buf, sizeof(buf), "%04o", (unsigned)(mode & 07777));
	pthread_mutex_lock(&root_mode_lock);
	r = store_meta_set(fs->store, PLAIN_ROOT_MODE_KEY, buf);
	if (r == 0)
		__atomic_store_n(&fs->root_mode, mode & 07777, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&root_mode_lock);
	if (r < 0) {
		log_err("cannot keep the mount root's mode %s in the store: %s", buf, strerror(-r));
		return r;
	}
	/* The same 0700 again: what changes is the root's ctime, as a chmod's must. */
	r = backing_root_chmod(fs, 0700);
	if (r < 0)
		log_err("cannot chmod the backing tree '%s': %s", fs->backing_path, strerror(-r));
	return r;
}
