/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.c: the FUSE operations (high-level API).
 *
 * Every path is first classified (store_path_kind): a managed file ("doc")
 * goes to the store, anything else to the backing tree through plain.c. This
 * file only translates: paths to store calls or *at() calls, results to
 * 0 / -errno, with a log line for every failure that is not the caller's
 * ordinary business (ENOENT on lookup is not logged).
 *
 * Writes to a doc never touch the store until the writer is done. An open
 * for writing gets a private staging file (O_TMPFILE in the backing tree, so
 * a crash leaves nothing behind); reads by everyone else keep coming from the
 * committed version. The staged bytes are committed as one transaction when
 * the file is closed (flush), and a rename of a plain temp file over a doc
 * commits the temp file's bytes: Cline's three write patterns (in place,
 * temp + rename, Roo's safeWriteJson) all become single atomic commits. A
 * refused commit (not valid JSON) fails the close or the rename with EINVAL.
 *
 * Doc handles use direct I/O for writers, so that uncommitted bytes never
 * reach the shared page cache; after each commit the kernel's cached pages
 * and attributes of the doc are invalidated, outside every lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fs.h"
#include "fs/ops.h"
#include "store/util.h"

enum file_kind { FILE_PLAIN, FILE_DOC };

struct fs_file {
	enum file_kind kind;
	int fd;                 /* plain: the file; doc: the staging file or -1 */
	char *path;             /* doc: its path */
	struct store_snap *snap; /* doc: what reads see until this handle stages */
	pid_t tgid;             /* the process that opened it */
	bool append;
	bool dirty;             /* staged bytes not yet committed */
	bool commit_failed;
	pthread_mutex_t lock;
};

static struct fs *fs_get(void)
{
	return fs_current;
}

/* "/a/b" -> "a/b"; "/" -> "". */
static const char *rel(const char *path)
{
	return path[0] == '/' ? path + 1 : path;
}

static bool is_doc(const char *r)
{
	enum store_path_kind k = store_path_kind(r);

	return k == STORE_PATH_ARRAY || k == STORE_PATH_WHOLE;
}

/* The calling process: for the revision log and for its merge bases. */
static void caller(struct fs_proc *proc, struct store_who *who)
{
	pid_t tid = fs_caller_pid;

	if (fs_proc_get(tid, proc) < 0)
		*proc = (struct fs_proc){ .tgid = tid };
	who->pid = proc->tgid;
	who->comm = proc->comm[0] ? proc->comm : NULL;
}

static void invalidate(struct fs *fs, const char *r)
{
	ll_invalidate(fs, r);
}

static void doc_fill_stat(const struct fs *fs, const struct store_stat *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = s->ino;
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = s->size;
	st->st_blksize = 4096;
	st->st_blocks = (s->size + 511) / 512;
	st->st_mtim.tv_sec = s->mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = s->mtime_ns % 1000000000;
	st->st_ctim.tv_sec = s->ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = s->ctime_ns % 1000000000;
	st->st_atim = st->st_mtim;
}

/* Logs a failed backing-tree call, unless the error is the caller's business. */
static int plain_fail(const char *what, const char *r, int err)
{
	if (err != ENOENT && err != EEXIST && err != ENOTEMPTY && err != ENOTDIR && err != EISDIR &&
	    err != ELOOP && err != EACCES && err != EPERM && err != ENODATA && err != EAGAIN)
		log_warn("cannot %s '%s': %s", what, r, strerror(err));
	return -err;
}

/* ---- attributes ----------------------------------------------------------- */

int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	struct store_stat ss;
	const char *leaf;
	int dfd, r;

	if (f && f->kind == FILE_PLAIN)
		return fstat(f->fd, st) < 0 ? -errno : 0;
	if (f && f->kind == FILE_DOC) {
		/* An open doc shows the version it reads: its snapshot, or what it staged. */
		pthread_mutex_lock(&f->lock);
		store_snap_stat(f->snap, &ss);
		if (f->fd >= 0) {
			struct stat sst;

			if (fstat(f->fd, &sst) == 0)
				ss.size = sst.st_size;
		}
		pthread_mutex_unlock(&f->lock);
		doc_fill_stat(fs, &ss, st);
		return 0;
	}
	path = rel(path);
	if (is_doc(path)) {
		r = store_doc_stat(fs->store, path, &ss);
		if (r < 0)
			return r;
		doc_fill_stat(fs, &ss, st);
		return 0;
	}
	if (!*path)
		return fstat(fs->root_fd, st) < 0 ? -errno : 0;

	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	r = fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

/* Group and other bits go unless the mount is shared (-o allow_other). */
static mode_t private_mode(const struct fs *fs, mode_t mode)
{
	return fs->shared ? mode : (mode & ~(mode_t)077);
}

int op_getattr_if_owner(uint64_t fh, pid_t tgid, struct stat *st)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fh;
	struct fuse_file_info fi = { .fh = fh };

	if (f->kind != FILE_DOC || f->tgid != tgid)
		return -ENOENT;
	return op_getattr(NULL, st, &fi);
}

int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *leaf;
	int dfd, r;

	if ((f && f->kind == FILE_DOC) || (!f && is_doc(rel(path))))
		return 0; /* docs are always 0600 */
	mode = private_mode(fs, mode);
	if (f)
		return fchmod(f->fd, mode) < 0 ? -errno : 0;
	path = rel(path);
	if (!*path)
		return fchmodat(AT_FDCWD, fs->backing_path, mode, 0) < 0 ? -errno : 0;
	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	/* fchmodat cannot refuse to follow a link; open the leaf itself. */
	{
		int fd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		char proc[64];
		struct stat st;

		r = fd < 0 ? -errno : 0;
		if (!r && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode))
			r = -EOPNOTSUPP;
		if (!r) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			r = chmod(proc, mode) < 0 ? -errno : 0;
		}
		if (fd >= 0)
			close(fd);
	}
	close(dfd);
	return r;
}

int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *leaf;
	int dfd, r;

	if ((f && f->kind == FILE_DOC) || (!f && is_doc(rel(path))))
		return 0;
	if (f)
		return fchown(f->fd, uid, gid) < 0 ? -errno : 0;
	path = rel(path);
	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	r = fchownat(dfd, *path ? leaf : "", uid, gid, AT_SYMLINK_NOFOLLOW | (*path ? 0 : AT_EMPTY_PATH)) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *leaf;
	int dfd, r;

	/* A doc's mtime is the time its content last changed (promise 5). */
	if ((f && f->kind == FILE_DOC) || (!f && is_doc(rel(path))))
		return 0;
	if (f)
		return futimens(f->fd, tv) < 0 ? -errno : 0;
	path = rel(path);
	if (!*path)
		return utimensat(AT_FDCWD, fs->backing_path, tv, 0) < 0 ? -errno : 0;
	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	r = utimensat(dfd, leaf, tv, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

/* ---- directories ------------------------------------------------------------ */

struct doc_list_ctx {
	op_list_fn fn;
	void *ctx;
};

static int list_doc(void *ctx, const char *name, const struct store_stat *s)
{
	struct doc_list_ctx *c = ctx;

	return c->fn(c->ctx, name, S_IFREG, s->ino);
}

int op_list_dir(const char *path, op_list_fn fn, void *ctx)
{
	struct fs *fs = fs_get();
	const char *r = rel(path);
	struct dirent *de;
	DIR *d;
	int fd, res = 0;

	fd = plain_open(fs, r, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		res = -errno;
		close(fd);
		return res;
	}
	while (res == 0 && (errno = 0, de = readdir(d)))
		res = fn(ctx, de->d_name, (mode_t)DTTOIF(de->d_type), de->d_ino);
	if (res == 0 && errno)
		res = -errno;
	closedir(d);
	if (res == 0 && store_path_kind(r) == STORE_PATH_DOC_DIR) {
		struct doc_list_ctx c = { fn, ctx };

		res = store_doc_list(fs->store, r, list_doc, &c);
	}
	return res;
}

int op_mkdir(const char *path, mode_t mode)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	int dfd, res;

	if (is_doc(r))
		return -EEXIST;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = mkdirat(dfd, leaf, private_mode(fs, mode)) < 0 ? plain_fail("create directory", r, errno) : 0;
	close(dfd);
	return res;
}

static int count_doc(void *ctx, const char *name, const struct store_stat *s)
{
	(*(int *)ctx)++;
	return 0;
}

int op_rmdir(const char *path)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	int dfd, res;

	if (store_path_kind(r) == STORE_PATH_DOC_DIR) {
		int n = 0;

		res = store_doc_list(fs->store, r, count_doc, &n);
		if (res < 0)
			return res;
		if (n > 0)
			return -ENOTEMPTY;
	}
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = unlinkat(dfd, leaf, AT_REMOVEDIR) < 0 ? plain_fail("remove directory", r, errno) : 0;
	close(dfd);
	return res;
}

/* ---- doc handles ---------------------------------------------------------------- */

static void file_free(struct fs_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	store_snap_free(f->snap);
	free(f->path);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static struct fs_file *file_new(enum file_kind kind, int fd, const char *path)
{
	struct fs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->kind = kind;
	f->fd = fd;
	if (path && !(f->path = strdup(path))) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

/* An anonymous file in the backing tree's filesystem for staged writes. */
static int stage_open(const struct fs *fs)
{
	int fd = plain_open(fs, "", O_TMPFILE | O_RDWR, 0600);

	if (fd == -EOPNOTSUPP || fd == -EISDIR) {
		char name[64];
		const char *leaf;
		int dfd;

		snprintf(name, sizeof(name), ".convfs-stage.%d.%lld", (int)getpid(), (long long)now_ns());
		fd = plain_open(fs, name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0 && (dfd = plain_open_parent(fs, name, &leaf)) >= 0) {
			unlinkat(dfd, leaf, 0);
			close(dfd);
		}
	}
	if (fd < 0)
		log_err("cannot create a staging file in '%s': %s", fs->backing_path, strerror(-fd));
	return fd;
}

/*
 * Gives the handle a staging file holding the doc's content (or nothing, if
 * empty is true). Called with f->lock held.
 */
static int stage_begin(struct fs *fs, struct fs_file *f, bool empty)
{
	_cleanup_free_ char *buf = NULL;
	int fd = stage_open(fs);
	off_t off = 0;

	if (fd < 0)
		return fd;
	if (!empty && f->snap && store_snap_size(f->snap) > 0) {
		size_t bufsz = 1 << 20;

		buf = malloc(bufsz);
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		for (;;) {
			ssize_t n = store_snap_read(fs->store, f->snap, buf, bufsz, off);

			if (n == 0)
				break;
			if (n < 0 || pwrite(fd, buf, (size_t)n, off) != n) {
				int r = n < 0 ? (int)n : -errno;

				log_err("cannot stage '%s' for writing: %s", f->path, strerror(-r));
				close(fd);
				return r;
			}
			off += n;
		}
	}
	f->fd = fd;
	return 0;
}

/*
 * Commits the staged bytes of f as one revision. Called with f->lock held.
 * On success the handle's snapshot moves to the new version.
 */
static int stage_commit(struct fs *fs, struct fs_file *f, const char *kind)
{
	struct store_snap *snap = NULL;
	struct store_base *base, *nb = NULL;
	struct store_who who;
	struct fs_proc proc;
	struct stat st;
	void *data = NULL;
	int r;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (st.st_size > 0) {
		data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, f->fd, 0);
		if (data == MAP_FAILED) {
			r = -errno;
			log_err("cannot map the staged '%s': %s", f->path, strerror(errno));
			return r;
		}
	}
	caller(&proc, &who);
	base = bases_take(fs->bases, &proc, f->path);
	r = store_doc_commit_merged(fs->store, f->path, data ? data : "", (size_t)st.st_size, &who, kind, base, &nb,
				    NULL);
	store_base_free(base);
	bases_put(fs->bases, &proc, f->path, nb);
	if (data)
		munmap(data, (size_t)st.st_size);
	if (r < 0) {
		if (r != -EINVAL) /* EINVAL was logged with its reason by the store */
			log_err("cannot commit '%s': %s; the previous version stays", f->path, strerror(-r));
		return r;
	}
	f->dirty = false;
	if (store_snap_open(fs->store, f->path, &snap) == 0) {
		store_snap_free(f->snap);
		f->snap = snap;
	}
	return 0;
}

static int doc_open(struct fs *fs, const char *r, struct fuse_file_info *fi, bool created)
{
	int acc = fi->flags & O_ACCMODE;
	struct fs_file *f;
	int res;

	f = file_new(FILE_DOC, -1, r);
	if (!f)
		return -ENOMEM;
	res = store_snap_open(fs->store, r, &f->snap);
	if (res < 0) {
		file_free(f);
		return res;
	}
	f->append = fi->flags & O_APPEND;
	{
		struct store_base *base;
		struct store_who who;
		struct fs_proc proc;

		caller(&proc, &who);
		f->tgid = proc.tgid;
		/* This process may read the doc now: what it sees is its merge base. */
		if (!created && !(fi->flags & O_TRUNC) && store_base_from_snap(f->snap, &base) == 0)
			bases_put(fs->bases, &proc, r, base);
	}
	/*
	 * Each handle reads its own snapshot, so docs bypass the page cache that
	 * all handles of an inode share: no reader can see another version's
	 * pages, or be cut short by another version's size.
	 */
	fi->direct_io = 1;
	if (acc != O_RDONLY) {
		if (created || (fi->flags & O_TRUNC)) {
			res = stage_begin(fs, f, true);
			if (res < 0) {
				file_free(f);
				return res;
			}
			f->dirty = !created;
		}
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

/* ---- files ---------------------------------------------------------------------- */

int op_open(const char *path, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *r = rel(path);
	struct fs_file *f;
	int fd;

	if (is_doc(r))
		return doc_open(fs, r, fi, false);
	fd = plain_open(fs, r, fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY), 0);
	if (fd < 0)
		return plain_fail("open", r, -fd);
	f = file_new(FILE_PLAIN, fd, NULL);
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fi->keep_cache = 1;
	fi->fh = (uintptr_t)f;
	return 0;
}

int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *r = rel(path);
	struct fs_file *f;
	int fd, res;

	if (is_doc(r)) {
		struct store_who who;
		struct fs_proc proc;

		caller(&proc, &who);
		res = store_doc_create(fs->store, r, &who);
		if (res == -EEXIST && !(fi->flags & O_EXCL))
			return doc_open(fs, r, fi, false);
		if (res < 0)
			return res;
		return doc_open(fs, r, fi, true);
	}
	fd = plain_open(fs, r, (fi->flags & ~O_NOCTTY) | O_CREAT, private_mode(fs, mode));
	if (fd < 0)
		return plain_fail("create", r, -fd);
	f = file_new(FILE_PLAIN, fd, NULL);
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	ssize_t n;

	if (f->kind == FILE_PLAIN) {
		n = pread(f->fd, buf, size, off);
		return n < 0 ? -errno : (int)n;
	}
	pthread_mutex_lock(&f->lock);
	if (f->fd >= 0) {
		n = pread(f->fd, buf, size, off);
		if (n < 0)
			n = -errno;
	} else
		n = store_snap_read(fs_get()->store, f->snap, buf, size, off);
	pthread_mutex_unlock(&f->lock);
	return (int)n;
}

int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	ssize_t n;
	int r;

	if (f->kind == FILE_PLAIN) {
		n = pwrite(f->fd, buf, size, off);
		return n < 0 ? plain_fail("write", "(open file)", errno) : (int)n;
	}
	pthread_mutex_lock(&f->lock);
	if (f->fd < 0 && (r = stage_begin(fs_get(), f, false)) < 0) {
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	if (f->append) {
		struct stat st;

		if (fstat(f->fd, &st) == 0)
			off = st.st_size;
	}
	n = pwrite(f->fd, buf, size, off);
	if (n < 0)
		n = -errno;
	else
		f->dirty = true;
	pthread_mutex_unlock(&f->lock);
	if (n < 0)
		log_err("cannot stage a write to '%s': %s", f->path, strerror((int)-n));
	return (int)n;
}

int op_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	struct fs *fs = fs_get();
	bool committed = false;
	int r = 0;

	if (f->kind == FILE_PLAIN)
		return 0;
	pthread_mutex_lock(&f->lock);
	if (f->dirty) {
		r = stage_commit(fs, f, "write");
		f->commit_failed = r < 0;
		committed = r == 0;
	}
	pthread_mutex_unlock(&f->lock);
	if (committed)
		invalidate(fs, f->path);
	return r;
}

int op_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	struct fs *fs = fs_get();

	if (f->kind == FILE_DOC && f->dirty && !f->commit_failed) {
		/* Written through a mapping after the last close: commit now. */
		if (stage_commit(fs, f, "write") == 0)
			invalidate(fs, f->path);
	}
	file_free(f);
	return 0;
}

int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;

	/* A doc is durable once committed, at close; there is nothing to sync before. */
	if (f->kind == FILE_DOC)
		return 0;
	if ((datasync ? fdatasync(f->fd) : fsync(f->fd)) < 0)
		return plain_fail("sync", "(open file)", errno);
	return 0;
}

int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *r;
	int res, fd;

	if (f && f->kind == FILE_PLAIN)
		return ftruncate(f->fd, size) < 0 ? -errno : 0;
	if (f) {
		pthread_mutex_lock(&f->lock);
		res = f->fd < 0 ? stage_begin(fs, f, size == 0) : 0;
		if (res == 0)
			res = ftruncate(f->fd, size) < 0 ? -errno : 0;
		if (res == 0)
			f->dirty = true;
		pthread_mutex_unlock(&f->lock);
		return res;
	}
	r = rel(path);
	if (is_doc(r)) {
		/* truncate(2) by path: one commit of the truncated content. */
		struct fs_file *t = file_new(FILE_DOC, -1, r);

		if (!t)
			return -ENOMEM;
		res = store_snap_open(fs->store, r, &t->snap);
		if (res == 0)
			res = stage_begin(fs, t, size == 0);
		if (res == 0)
			res = ftruncate(t->fd, size) < 0 ? -errno : 0;
		if (res == 0)
			res = stage_commit(fs, t, "truncate");
		file_free(t);
		if (res == 0)
			invalidate(fs, r);
		return res;
	}
	fd = plain_open(fs, r, O_WRONLY, 0);
	if (fd < 0)
		return plain_fail("truncate", r, -fd);
	res = ftruncate(fd, size) < 0 ? plain_fail("truncate", r, errno) : 0;
	close(fd);
	return res;
}

/* ---- names ---------------------------------------------------------------------- */

int op_unlink(const char *path)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	int dfd, res;

	if (is_doc(r)) {
		struct store_who who;
		struct fs_proc proc;

		caller(&proc, &who);
		return store_doc_remove(fs->store, r, &who, "unlink");
	}
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = unlinkat(dfd, leaf, 0) < 0 ? plain_fail("remove", r, errno) : 0;
	close(dfd);
	return res;
}

/* Commits the plain file `from` as the new content of doc `to`, then removes `from`. */
static int rename_in(struct fs *fs, const char *from, const char *to, unsigned int flags)
{
	struct store_base *base, *nb = NULL;
	struct store_who who;
	struct store_stat ss;
	struct fs_proc proc;
	struct stat st;
	void *data = NULL;
	const char *leaf;
	int fd, dfd, r;

	if ((flags & RENAME_NOREPLACE) && store_doc_stat(fs->store, to, &ss) == 0)
		return -EEXIST;
	fd = plain_open(fs, from, O_RDONLY, 0);
	if (fd < 0)
		return fd == -EISDIR ? -EISDIR : fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		close(fd);
		return r;
	}
	if (st.st_size > 0) {
		data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (data == MAP_FAILED) {
			r = -errno;
			close(fd);
			log_err("cannot map '%s' to commit it as '%s': %s", from, to, strerror(-r));
			return r;
		}
	}
	close(fd);
	caller(&proc, &who);
	base = bases_take(fs->bases, &proc, to);
	r = store_doc_commit_merged(fs->store, to, data ? data : "", (size_t)st.st_size, &who, "rename", base, &nb,
				    NULL);
	store_base_free(base);
	bases_put(fs->bases, &proc, to, nb);
	if (data)
		munmap(data, (size_t)st.st_size);
	if (r < 0) {
		if (r != -EINVAL)
			log_err("cannot commit '%s' as '%s': %s; the previous version stays", from, to, strerror(-r));
		return r;
	}
	dfd = plain_open_parent(fs, from, &leaf);
	if (dfd < 0 || unlinkat(dfd, leaf, 0) < 0)
		log_warn("committed '%s' as '%s' but cannot remove it: %s", from, to,
			 strerror(dfd < 0 ? -dfd : errno));
	if (dfd >= 0)
		close(dfd);
	return 0;
}

/* Writes doc `from` out as the plain file `to`, then removes the doc. */
static int rename_out(struct fs *fs, const char *from, const char *to, unsigned int flags)
{
	_cleanup_free_ char *buf = NULL;
	struct store_snap *snap = NULL;
	struct store_who who;
	struct fs_proc proc;
	char tmp[96];
	const char *leaf;
	struct stat st;
	off_t off = 0;
	int dfd, fd = -1, r;

	dfd = plain_open_parent(fs, to, &leaf);
	if (dfd < 0)
		return dfd;
	if ((flags & RENAME_NOREPLACE) && fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		r = -EEXIST;
		goto out;
	}
	r = store_snap_open(fs->store, from, &snap);
	if (r < 0)
		goto out;
	snprintf(tmp, sizeof(tmp), ".convfs-rename.%d.%lld", (int)getpid(), (long long)now_ns());
	fd = openat(dfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = plain_fail("create", to, errno);
		goto out;
	}
	buf = malloc(1 << 20);
	if (!buf) {
		r = -ENOMEM;
		goto out_unlink;
	}
	for (;;) {
		ssize_t n = store_snap_read(fs->store, snap, buf, 1 << 20, off);

		if (n == 0)
			break;
		if (n < 0 || pwrite(fd, buf, (size_t)n, off) != n) {
			r = n < 0 ? (int)n : plain_fail("write", to, errno);
			goto out_unlink;
		}
		off += n;
	}
	caller(&proc, &who);
	r = store_doc_remove(fs->store, from, &who, "rename-out");
	if (r < 0)
		goto out_unlink;
	if (renameat(dfd, tmp, dfd, leaf) < 0) {
		r = -errno;
		log_err("moved '%s' out of the store but cannot name it '%s': %s; its content stays in the store",
			from, to, strerror(errno));
		goto out_unlink;
	}
	goto out;
out_unlink:
	unlinkat(dfd, tmp, 0);
out:
	if (fd >= 0)
		close(fd);
	store_snap_free(snap);
	close(dfd);
	return r;
}

int op_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs *fs = fs_get();
	enum store_path_kind kf, kt;
	const char *lf, *lt;
	int df, dt, r;

	from = rel(from);
	to = rel(to);
	kf = store_path_kind(from);
	kt = store_path_kind(to);
	/* Directories that hold docs move by copy: mv falls back on EXDEV. */
	if (kf == STORE_PATH_DOC_DIR || kf == STORE_PATH_TASKS_DIR || kt == STORE_PATH_DOC_DIR ||
	    kt == STORE_PATH_TASKS_DIR)
		return -EXDEV;
	if (is_doc(from) || is_doc(to)) {
		if (flags & RENAME_EXCHANGE)
			return -EINVAL;
		if (is_doc(from) && is_doc(to))
			return strcmp(from, to) == 0 ? 0 : -EXDEV;
		return is_doc(to) ? rename_in(fs, from, to, flags) : rename_out(fs, from, to, flags);
	}
	df = plain_open_parent(fs, from, &lf);
	if (df < 0)
		return df;
	dt = plain_open_parent(fs, to, &lt);
	if (dt < 0) {
		close(df);
		return dt;
	}
	r = renameat2(df, lf, dt, lt, flags) < 0 ? plain_fail("rename", from, errno) : 0;
	close(df);
	close(dt);
	return r;
}

int op_link(const char *from, const char *to)
{
	struct fs *fs = fs_get();
	const char *lf, *lt;
	int df, dt, r;

	from = rel(from);
	to = rel(to);
	if (is_doc(from) || is_doc(to))
		return -EPERM; /* a doc has exactly one name */
	df = plain_open_parent(fs, from, &lf);
	if (df < 0)
		return df;
	dt = plain_open_parent(fs, to, &lt);
	if (dt < 0) {
		close(df);
		return dt;
	}
	r = linkat(df, lf, dt, lt, 0) < 0 ? plain_fail("link", from, errno) : 0;
	close(df);
	close(dt);
	return r;
}

int op_symlink(const char *target, const char *path)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	int dfd, res;

	if (is_doc(r))
		return -EPERM;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = symlinkat(target, dfd, leaf) < 0 ? plain_fail("create symlink", r, errno) : 0;
	close(dfd);
	return res;
}

int op_readlink(const char *path, char *buf, size_t size)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	ssize_t n;
	int dfd;

	if (is_doc(r))
		return -EINVAL;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	n = readlinkat(dfd, leaf, buf, size - 1);
	close(dfd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	int dfd, res;

	if (is_doc(r))
		return -EPERM;
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EPERM; /* no device nodes in a history folder */
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = mknodat(dfd, leaf, (mode & S_IFMT) | private_mode(fs, mode & 07777), 0) < 0 ? plain_fail("create", r, errno) : 0;
	close(dfd);
	return res;
}

int op_statfs(const char *path, struct statvfs *sv)
{
	return fstatvfs(fs_get()->root_fd, sv) < 0 ? -errno : 0;
}

int op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;

	if (f->kind == FILE_DOC)
		return -EOPNOTSUPP;
	return fallocate(f->fd, mode, off, len) < 0 ? -errno : 0;
}

