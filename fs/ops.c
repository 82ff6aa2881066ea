/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.c: the filesystem's operations, by path (lowlevel.c turns node ids into
 * paths and calls these).
 *
 * Every path is first classified: a managed file ("doc", store_path_kind())
 * goes to the store, a path of the workspaces view (view_parse()) to the view,
 * anything else to the backing tree through plain.c. This file only
 * translates: paths to store calls or *at() calls, results to 0 / -errno, with
 * a log line for every failure that is not the caller's ordinary business
 * (ENOENT on lookup is not logged).
 *
 * Writes to a doc never touch the store until the writer is done. An open
 * for writing gets a private staging file (O_TMPFILE in the backing tree, so
 * a crash leaves nothing behind); reads by everyone else keep coming from the
 * committed version. The staged bytes are committed as one transaction when
 * the file is closed (flush), and a rename of a plain temp file over a doc
 * commits the temp file's bytes: Cline's three write patterns (in place,
 * temp + rename, Roo's safeWriteJson) all become single atomic commits,
 * merged with what other writers committed since (docs/MERGE.md). A refused
 * commit (not valid JSON) fails the close or the rename with EINVAL.
 *
 * Each doc handle reads its own snapshot with direct I/O (no shared page
 * cache), so a reader sees one whole version; after an in-place commit the
 * doc's inode is also invalidated, outside every lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

#include "fs/fs.h"
#include "fs/ops.h"
#include "fs/snap.h"
#include "fs/view.h"
#include "store/util.h"

enum file_kind {
	FILE_PLAIN, /* a file of the backing tree */
	FILE_DOC,   /* a doc, in its compat rendering */
	FILE_JSONL, /* a doc as JSON Lines (workspaces view) */
	FILE_TEXT,  /* a generated file of the view (workspaces/<ws>/taskHistory.json: writable) */
	FILE_SNAP,  /* a file of a checkpoint's commit, read with libgit2 */
};

struct fs_file {
	enum file_kind kind;
	int fd;                 /* plain: the file; doc, jsonl: the staging file or -1 */
	char *path;             /* doc, jsonl: the doc's compat path */
	struct store_snap *snap; /* doc, jsonl: what reads see until this handle stages */
	pid_t tgid;             /* the process that opened it */
	bool append;
	bool dirty;             /* staged bytes not yet committed */
	bool written;           /* written or truncated since open (not only O_TRUNC) */
	bool commit_failed;
	int write_err;          /* doc: a staged write failed (-errno); nothing is committed */
	const char *require;    /* jsonl: member each line must have */
	struct sb pending;      /* jsonl: an appended line still without its newline */
	struct sb text;         /* text: the content */
	struct stat text_st;    /* text: its attributes */
	char *ws_key;           /* text of a workspace's taskHistory.json: its workspace ("" unknown) */
	bool fixed;             /* a checkpoint or trash file: never refreshed */
	struct view_path *vp;   /* snap: the checkpoint file */
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

/*
 * After a commit of doc r: the kernel drops what it cached of r, and of the
 * view's folders whose times follow the conversation r belongs to.
 */
static void invalidate(struct fs *fs, const char *r)
{
	char task[72];

	ll_invalidate(fs, r);
	if (store_path_conversation(r, task, sizeof(task)) == 0)
		view_invalidate_conversation(fs, task);
	ll_placement_check(fs);
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
	    err != ELOOP && err != EACCES && err != EPERM && err != ENODATA && err != EAGAIN && err != EFBIG)
		log_warn("cannot %s '%s': %s", what, r, strerror(err));
	return -err;
}

/*
 * mkdir -p of dir (relative, from the store: no "..") in the backing tree,
 * one component at a time and never through a symlink.
 */
static int backing_mkdirs(struct fs *fs, const char *dir, size_t len)
{
	char comp[NAME_MAX + 1];
	int dfd, fd;

	dfd = dup(fs->root_fd);
	if (dfd < 0)
		return -errno;
	for (size_t i = 0; i < len;) {
		size_t n = strcspn(dir + i, "/");

		if (n > len - i)
			n = len - i;
		if (n == 0 || n > NAME_MAX) {
			close(dfd);
			return -EINVAL;
		}
		memcpy(comp, dir + i, n);
		comp[n] = '\0';
		if (mkdirat(dfd, comp, 0700) < 0 && errno != EEXIST) {
			int r = -errno;

			close(dfd);
			return r;
		}
		fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
		if (fd < 0)
			return errno == ENOTDIR ? -ELOOP : -errno;
		dfd = fd;
		i += n + 1;
	}
	close(dfd);
	return 0;
}

/* store_doc_list: counts docs. */
static int count_doc(void *ctx, const char *name, const struct store_stat *s)
{
	(*(int *)ctx)++;
	return 0;
}

/* store_doc_foreach: makes the folders of one doc again. */
static int heal_doc(void *ctx, const char *path, const struct store_stat *stat)
{
	struct fs *fs = ctx;
	const char *slash = strrchr(path, '/');
	int r;

	(void)stat;
	if (!slash)
		return 0;
	r = backing_mkdirs(fs, path, (size_t)(slash - path));
	if (r < 0)
		log_err("cannot make the folder of '%s' again in the backing tree: %s", path, strerror(-r));
	return 0;
}

/*
 * A folder of the compat tree (tasks/, tasks/<id>/, state/) lives in the
 * backing tree; its conversations live in the store. If the folder was
 * removed behind the daemon's back, its conversations would be out of reach:
 * make the folders of every doc again. Returns 0 if it tried.
 */
static void backing_check(struct fs *fs);

static int backing_heal(struct fs *fs, const char *r)
{
	enum store_path_kind kind = store_path_kind(r);
	int n = 0, res;

	backing_check(fs); /* the backing folder itself first */

	if (kind == STORE_PATH_DOC_DIR) {
		res = store_doc_list(fs->store, r, count_doc, &n);
		if (res < 0 || n == 0)
			return -ENOENT;
	} else if (kind != STORE_PATH_TASKS_DIR) {
		return -ENOENT;
	}
	return store_doc_foreach(fs->store, heal_doc, fs);
}

/*
 * The backing folder itself removed under the daemon (rm -rf <store>.files):
 * every create in it, and every staged write, would fail with ENOENT. Before
 * each of those, a look at root_fd (one fstat); if its folder is gone, it is
 * made again and root_fd pointed at the new one with dup2(), atomically for
 * the threads using it. The plain files that were in it are gone; the
 * conversations, in the store, are not.
 */
static void backing_check(struct fs *fs)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct stat st;
	int fd;

	if (fstat(fs->root_fd, &st) == 0 && st.st_nlink > 0)
		return;
	pthread_mutex_lock(&lock);
	if (fstat(fs->root_fd, &st) < 0) {
		log_err("cannot stat the backing folder '%s': %s", fs->backing_path, strerror(errno));
		goto out;
	}
	if (st.st_nlink > 0)
		goto out; /* another thread made it again */
	if (mkdir(fs->backing_path, 0700) < 0 && errno != EEXIST) {
		log_err("the backing folder '%s' was removed, and cannot be made again: %s", fs->backing_path,
			strerror(errno));
		goto out;
	}
	fd = open(fs->backing_path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		log_err("the backing folder '%s' was removed, and cannot be opened again: %s", fs->backing_path,
			strerror(errno));
		goto out;
	}
	if (dup2(fd, fs->root_fd) < 0)
		log_err("the backing folder '%s' was removed, and cannot be used again: %s", fs->backing_path,
			strerror(errno));
	else
		log_warn("the backing folder '%s' was removed under the daemon: made it again; the plain files that were in it are gone",
			 fs->backing_path);
	close(fd);
	if (store_doc_foreach(fs->store, heal_doc, fs) < 0)
		log_err("cannot make the folders of the conversations again in '%s'", fs->backing_path);
out:
	pthread_mutex_unlock(&lock);
}

/*
 * Creating r (what: "file", "folder", ...) in a folder of the workspaces view,
 * which holds only its own files: -EPERM, or -EINVAL for a folder in a
 * workspace's tasks/ whose name is not a task id; 0 if r is outside the view
 * (the client's own workspaces/<hash>/ included). workspaces/ itself takes
 * any name the view is not showing (the kernel has answered EEXIST for those
 * already): the client's own entry, made in the backing tree.
 */
static int view_refuses_create(struct fs *fs, const char *r, const char *what)
{
	struct view_path vp;
	char parent[4096];
	const char *slash = strrchr(r, '/');

	if (strncmp(r, "workspaces/", 11) != 0 || !slash || (size_t)(slash - r) >= sizeof(parent))
		return 0;
	memcpy(parent, r, (size_t)(slash - r));
	parent[slash - r] = '\0';
	if (view_parse(fs, parent, &vp) < 0 || vp.kind == VIEW_NONE)
		return 0;
	if (vp.kind == VIEW_ROOT)
		return backing_mkdirs(fs, "workspaces", 10);
	if (vp.kind == VIEW_TASKS && strcmp(what, "folder") == 0) {
		log_warn("refusing to make the task '%s': '%s' is not a task id (digits)", r, slash + 1);
		return -EINVAL;
	}
	log_warn("refusing to create the %s '%s': the workspaces view holds only its own files", what, r);
	return -EPERM;
}

/* True if rel is in a read-only part of the view (a checkpoint), or would be created in one. */
static bool in_readonly_view(struct fs *fs, const char *r)
{
	struct view_path vp;
	char parent[4096];
	const char *slash;

	if (strncmp(r, "workspaces/", 11) != 0 || !strstr(r, "/checkpoints"))
		return false;
	if (view_parse(fs, r, &vp) == 0 && view_readonly(&vp))
		return true;
	slash = strrchr(r, '/');
	if (!slash || (size_t)(slash - r) >= sizeof(parent))
		return false;
	memcpy(parent, r, (size_t)(slash - r));
	parent[slash - r] = '\0';
	return view_parse(fs, parent, &vp) == 0 && view_readonly(&vp);
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
	if (f && f->kind == FILE_SNAP)
		return view_getattr(fs, "", f->vp, st);
	if (f && f->kind == FILE_TEXT) {
		*st = f->text_st;
		pthread_mutex_lock(&f->lock);
		if (f->fd >= 0) {
			struct stat sst;

			if (fstat(f->fd, &sst) == 0)
				st->st_size = sst.st_size;
		}
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	if (f && f->kind == FILE_JSONL) {
		/* JSON Lines only grow for their readers (tail -f): the size now. */
		r = store_doc_stat(fs->store, f->path, &ss);
		if (r < 0) {
			pthread_mutex_lock(&f->lock);
			store_snap_stat(f->snap, &ss);
			pthread_mutex_unlock(&f->lock);
		}
		doc_fill_stat(fs, &ss, st);
		st->st_size = ss.lsize;
		st->st_ino = ss.ino | (UINT64_C(1) << 61);
		return 0;
	}
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
	{
		struct view_path vp;

		r = view_parse(fs, path, &vp);
		if (r < 0)
			return r;
		if (vp.kind == VIEW_ROOT) {
			/* The client's own workspaces/ folder, if it has one, lends its attributes. */
			dfd = plain_open_parent(fs, path, &leaf);
			if (dfd >= 0 && fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) == 0) {
				close(dfd);
				return 0;
			}
			if (dfd >= 0)
				close(dfd);
		}
		if (vp.kind != VIEW_NONE)
			return view_getattr(fs, path, &vp, st);
	}
	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	r = fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	close(dfd);
	if (r == -ENOENT && backing_heal(fs, path) == 0) {
		dfd = plain_open_parent(fs, path, &leaf);
		if (dfd < 0)
			return dfd;
		r = fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
		close(dfd);
		if (r == 0)
			log_warn("the folder '%s' was missing from the backing tree: made it again for its conversations",
				 path);
	}
	return r;
}

/* Group and other bits go unless the mount is shared (-o allow_other). */
static mode_t private_mode(const struct fs *fs, mode_t mode)
{
	return fs->shared ? mode : (mode & ~(mode_t)077);
}

/*
 * The flags of a client's open that the backing file gets. The kernel passes
 * bits of its own too (__FMODE_EXEC for execve, which openat2 refuses with
 * EINVAL). O_DIRECT stays with the client's file: the kernel already keeps
 * its pages out of the cache, and the daemon's buffers are not aligned as
 * the backing filesystem would require. O_APPEND is applied write by write
 * (op_write), since fcntl(F_SETFL) can turn it on and off after the open.
 */
#define PLAIN_OPEN_FLAGS (O_ACCMODE | O_TRUNC | O_NONBLOCK | O_SYNC | O_DSYNC | O_NOATIME | O_NOFOLLOW | O_DIRECTORY)

/*
 * A daemon run by root makes every backing entry as root. On a shared mount
 * (-o allow_other) what another user makes must be that user's, as on any
 * filesystem: default_permissions judges by the owner, so a 0600 file would
 * otherwise be closed to the user who made it. The group is the caller's,
 * unless the folder is setgid (the backing filesystem gave the entry the
 * folder's group). chown clears setuid and setgid, so a new file's own are
 * set again. The new entry (made here, never one that existed) is leaf in
 * dfd, or with dfd -1 the file open as fd at r.
 */
static int give_to_caller(const struct fs *fs, const char *r, int dfd, const char *leaf, int fd, mode_t mode)
{
	gid_t gid = fs_caller_gid;
	int own_dfd = -1, res = 0;
	struct stat dst;

	if (fs->uid != 0 || (fs_caller_uid == fs->uid && fs_caller_gid == fs->gid))
		return 0;
	if (dfd < 0) {
		own_dfd = dfd = plain_open_parent(fs, r, &leaf);
		if (dfd < 0)
			return dfd;
	}
	if (fstat(dfd, &dst) < 0)
		res = -errno;
	else if (dst.st_mode & S_ISGID)
		gid = (gid_t)-1;
	if (res == 0 && fd >= 0) {
		mode_t special = mode & (S_ISUID | (gid == (gid_t)-1 ? 0 : S_ISGID));

		if (fchown(fd, fs_caller_uid, gid) < 0 ||
		    (special && fchmod(fd, (mode & 01777) | special) < 0))
			res = -errno;
	} else if (res == 0 && fchownat(dfd, leaf, fs_caller_uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
		res = -errno;
	}
	if (res < 0)
		log_warn("cannot give '%s' to uid %u: %s; it is not made", r, (unsigned)fs_caller_uid, strerror(-res));
	if (own_dfd >= 0)
		close(own_dfd);
	return res;
}

int op_getattr_if_owner(uint64_t fh, pid_t tgid, struct stat *st)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fh;
	struct fuse_file_info fi = { .fh = fh };

	if (f->kind != FILE_DOC || f->tgid != tgid)
		return -ENOENT;
	return op_getattr(NULL, st, &fi);
}

/*
 * Whose attributes chmod, chown and utimens change. Docs and the view take
 * none (0: a doc is always 0600, and its mtime is the time its content last
 * changed); checkpoint snapshots refuse them (-EROFS); 1: a plain
 * file, which the caller changes.
 */
static int attr_target(struct fs *fs, const char *path, const struct fs_file *f)
{
	struct view_path vp;

	if (f)
		return f->kind == FILE_SNAP || f->fixed ? -EROFS : f->kind == FILE_PLAIN ? 1 : 0;
	if (view_parse(fs, rel(path), &vp) == 0 && vp.kind != VIEW_NONE && vp.kind != VIEW_ROOT)
		return view_readonly(&vp) ? -EROFS : 0;
	return is_doc(rel(path)) ? 0 : 1;
}

int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *leaf;
	int dfd, r;

	r = attr_target(fs, path, f);
	if (r <= 0)
		return r;
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

	r = attr_target(fs, path, f);
	if (r <= 0)
		return r;
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

	r = attr_target(fs, path, f);
	if (r <= 0)
		return r;
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

	struct view_path vp;

	res = view_parse(fs, r, &vp);
	if (res < 0)
		return res;
	if (vp.kind != VIEW_NONE && vp.kind != VIEW_ROOT)
		return view_list(fs, &vp, fn, ctx);
	fd = plain_open(fs, r, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOENT && vp.kind == VIEW_ROOT) {
		/* No workspaces/ of the client's: only the view's entries. */
		if ((res = fn(ctx, ".", S_IFDIR, 0)) < 0 || (res = fn(ctx, "..", S_IFDIR, 0)) < 0)
			return res;
		return view_list(fs, &vp, fn, ctx);
	}
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		res = -errno;
		close(fd);
		return res;
	}
	while (res == 0 && (errno = 0, de = readdir(d))) {
		if (!*r && strncmp(de->d_name, ".convfs-", 8) == 0)
			continue; /* convfs's own (the trash's folders) */
		res = fn(ctx, de->d_name, (mode_t)DTTOIF(de->d_type), de->d_ino);
	}
	if (res == 0 && errno)
		res = -errno;
	closedir(d);
	if (res == 0 && !*r) {
		/* The view's workspaces/, when the client has none of its own. */
		const char *leaf;
		struct stat st;
		int dfd = plain_open_parent(fs, "workspaces", &leaf);

		if (dfd >= 0 && fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
			res = fn(ctx, "workspaces", S_IFDIR, 0);
		if (dfd >= 0)
			close(dfd);
	}
	if (res == 0 && vp.kind == VIEW_ROOT)
		res = view_list(fs, &vp, fn, ctx);
	if (res == 0 && store_path_kind(r) == STORE_PATH_DOC_DIR) {
		struct doc_list_ctx c = { fn, ctx };

		res = store_doc_list(fs->store, r, list_doc, &c);
	}
	return res;
}

/* The backing folder of a trashed task lives here, out of the tree. */
#define TRASH_DIR ".convfs-trash"

int op_mkdir(const char *path, mode_t mode)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	struct view_path vp;
	int dfd, res;

	backing_check(fs);
	if (in_readonly_view(fs, r))
		return -EROFS;
	if (is_doc(r))
		return -EEXIST;
	res = view_parse(fs, r, &vp);
	if (res == 0 && vp.kind != VIEW_NONE)
		return -EEXIST;
	if (vp.kind == VIEW_TASK && !vp.trash && res == -ENOENT) {
		/* mkdir workspaces/<ws>/tasks/<id>: a new task, with empty conversations. */
		struct store_who who;
		struct fs_proc proc;

		caller(&proc, &who);
		res = store_task_create(fs->store, vp.task, vp.unknown ? NULL : vp.key, &who);
		if (res == 0) {
			char tdir[64];

			snprintf(tdir, sizeof(tdir), "tasks/%s", vp.task);
			res = plain_mkdirs(fs, tdir);
		}
		return res;
	}
	if (res < 0 && vp.kind != VIEW_NONE)
		return vp.kind == VIEW_TASK ? -EEXIST : -EPERM; /* only tasks are made in the view */
	res = view_refuses_create(fs, r, "folder");
	if (res < 0)
		return res;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = mkdirat(dfd, leaf, private_mode(fs, mode)) < 0 ? plain_fail("create directory", r, errno) : 0;
	if (res == 0 && (res = give_to_caller(fs, r, dfd, leaf, -1, 0)) < 0)
		unlinkat(dfd, leaf, AT_REMOVEDIR);
	close(dfd);
	return res;
}

/*
 * Moves task id to the trash: the store's part, and its backing folder (with
 * any plain files in it) to TRASH_DIR.
 */
static int task_trash(struct fs *fs, const char *id)
{
	struct store_who who;
	struct fs_proc proc;
	char from[96], to[96];
	int r;

	caller(&proc, &who);
	r = store_task_trash(fs->store, id, &who);
	if (r < 0)
		return r;
	if (store_conversation_dir(id, from, sizeof(from)) < 0)
		return 0;
	snprintf(to, sizeof(to), TRASH_DIR "/%s", id);
	if ((r = plain_mkdirs(fs, TRASH_DIR)) == 0)
		r = plain_rename(fs, from, to, 0);
	if (r < 0 && r != -ENOENT)
		log_warn("cannot move the folder '%s' to the trash: %s; it stays where it is", from, strerror(-r));
	return 0;
}

static int task_restore(struct fs *fs, const char *id)
{
	struct store_who who;
	struct fs_proc proc;
	char from[96], to[96];
	int r;

	caller(&proc, &who);
	r = store_task_restore(fs->store, id, &who);
	if (r < 0)
		return r;
	snprintf(from, sizeof(from), TRASH_DIR "/%s", id);
	if (store_conversation_dir(id, to, sizeof(to)) < 0)
		return r;
	*strchr(to, '/') = '\0';
	r = plain_mkdirs(fs, to); /* tasks/ or sessions/ */
	to[strlen(to)] = '/';
	if (r == 0 && plain_rename(fs, from, to, RENAME_NOREPLACE) < 0)
		r = plain_mkdirs(fs, to); /* its folder held no plain files: a new one */
	if (r < 0)
		log_warn("cannot make the folder '%s' of the restored task: %s; its conversation is back", to,
			 strerror(-r));
	return 0;
}

/* True if r is the folder of one conversation: tasks/<id>, sessions/<id>. */
static bool is_conversation_dir(const char *r)
{
	const char *slash = strchr(r, '/');
	char dir[96];

	return slash && store_conversation_dir(slash + 1, dir, sizeof(dir)) == 0 && strcmp(dir, r) == 0;
}

int op_rmdir(const char *path)
{
	struct fs *fs = fs_get();
	const char *r = rel(path), *leaf;
	struct view_path vp;
	int dfd, res;

	if (in_readonly_view(fs, r))
		return -EROFS;
	res = view_parse(fs, r, &vp);
	if (res < 0)
		return res;
	if (vp.kind == VIEW_TASK && !vp.trash)
		return task_trash(fs, vp.task); /* rm -r of a task in the view */
	if (vp.kind != VIEW_NONE)
		return -EPERM;
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
	/* rm -r tasks/<id> (sessions/<id>): its docs are gone one by one; the task goes to the trash. */
	if (res == 0 && store_path_kind(r) == STORE_PATH_DOC_DIR && is_conversation_dir(r)) {
		int t = task_trash(fs, strchr(r, '/') + 1);

		if (t < 0 && t != -ENOENT)
			log_warn("removed '%s' but cannot put the task in the trash: %s", r, strerror(-t));
	}
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
	sb_release(&f->pending);
	sb_release(&f->text);
	free(f->ws_key);
	free(f->vp);
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
static int stage_open(struct fs *fs)
{
	int fd;

	backing_check(fs);
	fd = plain_open(fs, "", O_TMPFILE | O_RDWR, 0600);

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
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .doc = f->path, .base_path = f->path, .kind = kind, .proc = &proc, .who = &who };
	int r;

	caller(&proc, &who);
	r = commit_fd(fs, &req, f->fd);
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

/* ---- the workspaces view: JSON Lines and generated files ----------------------------

 * messages.jsonl and ui_messages.jsonl are a doc one element a line. Written at
 * their end (>>, O_APPEND), each complete line is appended to the doc at once,
 * one revision per write, without reading the doc: the cost does not grow with
 * the conversation. A line must be one JSON object (with "role" for the API
 * stream), or the write fails with EINVAL and none of it is stored. A last
 * line without its newline waits for it, and is refused at close. Written
 * anywhere else (or opened with O_TRUNC), the file is staged whole and
 * committed at close as a rewrite of the doc, merged like the compat files.
 */

static void record_read_base(struct fs *fs, struct fs_file *f, const char *doc, bool reads)
{
	struct store_base *base;
	struct store_who who;
	struct fs_proc proc;

	caller(&proc, &who);
	f->tgid = proc.tgid;
	if (reads && store_base_from_snap(f->snap, &base) == 0)
		bases_put(fs->bases, &proc, doc, base);
}

static int jsonl_open(struct fs *fs, const struct view_path *vp, struct fuse_file_info *fi)
{
	struct fs_file *f = file_new(FILE_JSONL, -1, vp->doc);
	int r;

	if (!f)
		return -ENOMEM;
	f->require = vp->kind == VIEW_MESSAGES ? "role" : NULL;
	r = store_snap_open_jsonl(fs->store, vp->doc, &f->snap);
	if (r < 0) {
		file_free(f);
		return r;
	}
	f->append = fi->flags & O_APPEND;
	record_read_base(fs, f, vp->doc, !(fi->flags & O_TRUNC));
	fi->direct_io = 1;
	if ((fi->flags & O_ACCMODE) != O_RDONLY && (fi->flags & O_TRUNC)) {
		r = stage_begin(fs, f, true);
		if (r < 0) {
			file_free(f);
			return r;
		}
		f->dirty = true;
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

static int text_open(struct fs *fs, const char *r, const struct view_path *vp, struct fuse_file_info *fi)
{
	bool writable = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct fs_file *f;
	char *buf = NULL;
	size_t len = 0;
	int64_t mtime, rev = 0;
	int res;

	if (writable && vp->kind != VIEW_WS_HISTORY) {
		log_warn("refusing to open '%s' for writing: the view makes it from the store", r);
		return -EACCES;
	}
	f = file_new(FILE_TEXT, -1, r);
	if (!f)
		return -ENOMEM;
	res = view_getattr(fs, r, vp, &f->text_st);
	if (res == 0)
		res = view_render(fs, vp, &buf, &len, &mtime, &rev);
	if (res == 0) {
		res = sb_add(&f->text, buf, len);
		f->text_st.st_size = (off_t)len;
	}
	free(buf);
	if (res == 0 && vp->kind == VIEW_WS_HISTORY) {
		/* What this process sees of the workspace's items: the base of its rewrite. */
		struct store_base *base;
		struct store_who who;
		struct fs_proc proc;

		if (!(f->ws_key = strdup(vp->unknown ? "" : vp->key)))
			res = -ENOMEM;
		caller(&proc, &who);
		if (res == 0 && rev && !(fi->flags & O_TRUNC) &&
		    store_base_at(fs->store, "state/taskHistory.json", rev, &base) == 0)
			bases_put(fs->bases, &proc, r, base);
		if (res == 0 && writable) {
			fi->direct_io = 1;
			res = stage_begin(fs, f, true);
			if (res == 0 && !(fi->flags & O_TRUNC) && pwrite(f->fd, f->text.buf, f->text.len, 0) < 0)
				res = -errno;
			f->dirty = res == 0 && (fi->flags & O_TRUNC);
		}
	}
	if (res < 0) {
		file_free(f);
		return res;
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

/*
 * A rewrite through the view that leaves nothing (`: > messages.jsonl`)
 * would empty a conversation: refused, with a word on how to remove it.
 */
static int refuse_emptying(const char *doc)
{
	log_warn("refusing to empty '%s' through the view; nothing changes. To remove a task, remove its folder "
		 "(rm -r workspaces/<ws>/tasks/<id>): it goes to workspaces/.trash", doc);
	return -EPERM;
}

/* The staged content of a text handle (a workspace's taskHistory.json), committed. f->lock held. */
static int text_commit(struct fs *fs, struct fs_file *f)
{
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .ws_key = f->ws_key, .base_path = f->path, .proc = &proc, .who = &who };
	struct stat st;
	int res;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (st.st_size == 0)
		return refuse_emptying(f->path);
	caller(&proc, &who);
	res = commit_fd(fs, &req, f->fd);
	if (res == 0)
		f->dirty = false;
	return res;
}

/* A file of a checkpoint: read-only, a fixed version. */
/* A handle that reads snap (taken, freed on failure) and nothing else: never refreshed, never written. */
static int fixed_open(enum file_kind kind, const char *doc, struct store_snap *snap, struct fuse_file_info *fi)
{
	struct fs_file *f = file_new(kind, -1, doc);

	if (!f) {
		store_snap_free(snap);
		return -ENOMEM;
	}
	f->fixed = true;
	f->snap = snap;
	fi->direct_io = 1;
	fi->fh = (uintptr_t)f;
	return 0;
}

static int ckpt_open(struct fs *fs, const char *r, const struct view_path *vp, struct fuse_file_info *fi)
{
	struct store_snap *snap = NULL;
	struct fs_file *f;
	struct stat st;
	int res;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	if (vp->kind == VIEW_CKPT_COMMIT || vp->kind == VIEW_CKPT_DIFF)
		return text_open(fs, r, vp, fi);
	if (vp->kind == VIEW_CKPT_FILES) {
		res = view_getattr(fs, r, vp, &st);
		if (res < 0)
			return res;
		if (!S_ISREG(st.st_mode))
			return -EISDIR;
		f = file_new(FILE_SNAP, -1, NULL);
		if (!f || !(f->vp = malloc(sizeof(*vp)))) {
			file_free(f);
			return -ENOMEM;
		}
		*f->vp = *vp;
		fi->keep_cache = 1; /* a commit never changes */
		fi->fh = (uintptr_t)f;
		return 0;
	}
	res = view_ckpt_snap(fs, vp, &snap);
	if (res < 0)
		return res;
	return fixed_open(FILE_JSONL, vp->doc, snap, fi);
}

/* A file of a trashed task: the last version of its doc, read-only. */
static int trash_open(struct fs *fs, const struct view_path *vp, struct fuse_file_info *fi)
{
	bool jsonl = vp->kind != VIEW_METADATA;
	struct store_snap *snap = NULL;
	int res;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EROFS;
	res = store_snap_open_removed(fs->store, vp->doc, jsonl, &snap);
	if (res < 0)
		return res;
	return fixed_open(jsonl ? FILE_JSONL : FILE_DOC, vp->doc, snap, fi);
}

static int view_open(struct fs *fs, const char *r, const struct view_path *vp, struct fuse_file_info *fi)
{
	if (vp->trash && vp->kind != VIEW_TASK && vp->kind != VIEW_TRASH)
		return trash_open(fs, vp, fi);
	switch (vp->kind) {
	case VIEW_MESSAGES:
	case VIEW_UI:
		return jsonl_open(fs, vp, fi);
	case VIEW_METADATA:
		return doc_open(fs, vp->doc, fi, false);
	case VIEW_WS_JSON:
	case VIEW_WS_HISTORY:
	case VIEW_TASK_JSON:
		return text_open(fs, r, vp, fi);
	case VIEW_CKPT_MESSAGES:
	case VIEW_CKPT_UI:
	case VIEW_CKPT_COMMIT:
	case VIEW_CKPT_DIFF:
	case VIEW_CKPT_FILES:
		return ckpt_open(fs, r, vp, fi);
	default:
		return -EISDIR;
	}
}

/* Splits the complete lines off f->pending (plus buf) and appends them. f->lock held. */
static int jsonl_append(struct fs *fs, struct fs_file *f, const char *buf, size_t size)
{
	_cleanup_free_ struct store_line *lines = NULL;
	struct store_snap *snap = NULL;
	size_t old = f->pending.len, n = 0, done = 0;
	struct store_who who;
	struct fs_proc proc;
	int r;

	r = sb_add(&f->pending, buf, size);
	if (r < 0)
		return r;
	if (!memchr(buf, '\n', size))
		return (int)size; /* a line still without its newline: it waits */
	for (size_t i = 0; i < f->pending.len; i++)
		n += f->pending.buf[i] == '\n';
	lines = calloc(n, sizeof(*lines));
	if (!lines) {
		f->pending.len = old;
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < f->pending.len; i++)
		if (f->pending.buf[i] == '\n') {
			size_t len = i - done;

			if (len && f->pending.buf[i - 1] == '\r')
				len--;
			lines[n++] = (struct store_line){ f->pending.buf + done, len };
			done = i + 1;
		}
	caller(&proc, &who);
	r = store_doc_append(fs->store, f->path, lines, n, f->require, &who);
	if (r == -EINVAL) {
		f->pending.len = old; /* none of this write is kept */
		f->pending.buf[old] = '\0';
		return r;
	}
	if (r < 0) {
		/* The store failed (ENOSPC, EBUSY, EROFS): the line's start goes too. */
		log_err("cannot append to '%s': %s; nothing of this open file's last line is stored", f->path,
			strerror(-r));
		f->pending.len = 0;
		f->pending.buf[0] = '\0';
		f->write_err = r;
		return r;
	}
	memmove(f->pending.buf, f->pending.buf + done, f->pending.len - done);
	f->pending.len -= done;
	f->pending.buf[f->pending.len] = '\0';
	if (store_snap_open_jsonl(fs->store, f->path, &snap) == 0) {
		store_snap_free(f->snap);
		f->snap = snap;
	}
	invalidate(fs, f->path);
	return (int)size;
}

/* Commits the staged JSON Lines as the doc's new content (a merged rewrite). f->lock held. */
static int jsonl_commit(struct fs *fs, struct fs_file *f)
{
	_cleanup_sb_ struct sb arr = SB_INIT, lines = SB_INIT;
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .doc = f->path, .base_path = f->path, .kind = "rewrite", .proc = &proc, .who = &who };
	const char *data;
	size_t start = 0, i = 0;
	int r;

	r = commit_read_fd(f->fd, &lines);
	if (r < 0)
		return r;
	if (lines.len == 0)
		return refuse_emptying(f->path);
	data = sb_str(&lines);
	r = sb_add(&arr, "[", 1);
	for (size_t pos = 0; r == 0 && pos < lines.len; pos++) {
		if (data[pos] != '\n')
			continue;
		{
			struct store_line l = { data + start, pos - start };

			if (l.len && l.data[l.len - 1] == '\r')
				l.len--;
			r = store_line_check(f->path, i, &l, f->require);
			if (r == 0 && i > 0)
				r = sb_add(&arr, ",", 1);
			if (r == 0)
				r = sb_add(&arr, l.data, l.len);
		}
		i++;
		start = pos + 1;
	}
	if (r == 0 && start < lines.len) {
		log_warn("refusing to commit '%s': its last line has no newline; nothing stored", f->path);
		r = -EINVAL;
	}
	sb_release(&lines);
	if (r == 0)
		r = sb_add(&arr, "]", 1);
	if (r < 0)
		return r;
	caller(&proc, &who);
	r = commit_bytes(fs, &req, arr.buf, arr.len);
	if (r == 0)
		f->dirty = false;
	return r;
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
	{
		struct view_path vp;
		int res = view_parse(fs, r, &vp);

		if (res < 0)
			return res;
		if (vp.kind != VIEW_NONE)
			return view_open(fs, r, &vp, fi);
	}
	fd = plain_open(fs, r, fi->flags & PLAIN_OPEN_FLAGS, 0);
	if (fd < 0)
		return plain_fail("open", r, -fd);
	f = file_new(FILE_PLAIN, fd, r);
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

	backing_check(fs);
	if (in_readonly_view(fs, r))
		return -EROFS;
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
	{
		struct view_path vp;
		struct store_who who;
		struct fs_proc proc;

		res = view_parse(fs, r, &vp);
		if (res == 0 && vp.kind != VIEW_NONE) {
			/* A file of the view that exists only once its doc does. */
			if ((vp.kind != VIEW_MESSAGES && vp.kind != VIEW_UI && vp.kind != VIEW_METADATA) || !*vp.doc)
				return -EACCES;
			caller(&proc, &who);
			res = store_doc_create(fs->store, vp.doc, &who);
			if (res < 0 && res != -EEXIST)
				return res;
			if (res == -EEXIST && (fi->flags & O_EXCL))
				return -EEXIST;
			return view_open(fs, r, &vp, fi);
		}
		if (res < 0 && vp.kind != VIEW_NONE)
			return vp.kind == VIEW_TASK ? -ENOENT : -EACCES;
	}
	res = view_refuses_create(fs, r, "file");
	if (res < 0)
		return res;
	/*
	 * O_EXCL even when the caller did not ask for it: a file that appeared
	 * since the kernel's lookup is opened as it is, and only a file made
	 * here is given to the user who made it.
	 */
	fd = plain_open(fs, r, (fi->flags & PLAIN_OPEN_FLAGS) | O_CREAT | O_EXCL, private_mode(fs, mode));
	if (fd == -EEXIST && !(fi->flags & O_EXCL)) {
		fd = plain_open(fs, r, fi->flags & PLAIN_OPEN_FLAGS, 0);
	} else if (fd >= 0 && (res = give_to_caller(fs, r, -1, NULL, fd, private_mode(fs, mode))) < 0) {
		const char *leaf;
		int dfd = plain_open_parent(fs, r, &leaf);

		close(fd);
		if (dfd >= 0) {
			unlinkat(dfd, leaf, 0);
			close(dfd);
		}
		return res;
	}
	if (fd < 0)
		return plain_fail("create", r, -fd);
	f = file_new(FILE_PLAIN, fd, r);
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
	if (f->kind == FILE_SNAP)
		return (int)snap_read(f->vp->git_dir, f->vp->hash, f->vp->sub, buf, size, off);
	if (f->kind == FILE_TEXT && f->fd < 0) {
		if (off >= (off_t)f->text.len)
			return 0;
		n = (ssize_t)(f->text.len - (size_t)off) < (ssize_t)size ? (ssize_t)(f->text.len - (size_t)off)
									    : (ssize_t)size;
		memcpy(buf, f->text.buf + off, (size_t)n);
		return (int)n;
	}
	pthread_mutex_lock(&f->lock);
	if (f->fd >= 0) {
		n = pread(f->fd, buf, size, off);
		if (n < 0)
			n = -errno;
	} else {
		struct store_snap *snap;

		/* JSON Lines grow at the end: a reader at its end sees what was added (tail -f). */
		if (f->kind == FILE_JSONL && !f->fixed && off >= store_snap_size(f->snap) &&
		    store_snap_open_jsonl(fs_get()->store, f->path, &snap) == 0) {
			store_snap_free(f->snap);
			f->snap = snap;
		}
		n = store_snap_read(fs_get()->store, f->snap, buf, size, off);
	}
	pthread_mutex_unlock(&f->lock);
	return (int)n;
}

int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	ssize_t n;
	int r;

	if (f->kind == FILE_PLAIN) {
		/* O_APPEND as the client's file has it now (fi->flags of a write are its current flags) */
		if (fi->flags & O_APPEND) {
			struct iovec iov = { .iov_base = (void *)buf, .iov_len = size };
			struct stat st;

			n = pwritev2(f->fd, &iov, 1, -1, RWF_APPEND);
			if (n < 0 && errno == EOPNOTSUPP && fstat(f->fd, &st) == 0) /* before Linux 4.16 */
				n = pwrite(f->fd, buf, size, st.st_size);
		} else {
			n = pwrite(f->fd, buf, size, off);
		}
		return n < 0 ? plain_fail("write", f->path, errno) : (int)n;
	}
	if ((f->kind == FILE_TEXT && f->fd < 0) || f->kind == FILE_SNAP || f->fixed)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	if (f->write_err) {
		/*
		 * A write failed: the kernel may have told the client only of a
		 * short count, and it writes the rest. That rest is not whole.
		 */
		r = f->write_err;
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	if (f->kind == FILE_JSONL && f->fd < 0 &&
	    (f->append || off == store_snap_size(f->snap) + (off_t)f->pending.len)) {
		r = jsonl_append(fs_get(), f, buf, size);
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	if (f->fd < 0 && (r = stage_begin(fs_get(), f, false)) < 0) {
		f->write_err = r; /* stage_begin logged it */
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	if (f->kind == FILE_JSONL && f->pending.len) {
		/* Bytes appended without their newline belong to the staged file now. */
		if (pwrite(f->fd, f->pending.buf, f->pending.len, store_snap_size(f->snap)) < 0) {
			r = -errno;
			pthread_mutex_unlock(&f->lock);
			return r;
		}
		f->pending.len = 0;
	}
	if (f->append) {
		struct stat st;

		if (fstat(f->fd, &st) == 0)
			off = st.st_size;
	}
	n = pwrite(f->fd, buf, size, off);
	if (n < 0)
		n = f->write_err = -errno;
	else
		f->dirty = f->written = true;
	pthread_mutex_unlock(&f->lock);
	if (n < 0)
		log_err("cannot stage a write to '%s': %s; this open file will commit nothing, the previous version stays",
			f->path, strerror((int)-n));
	return (int)n;
}

int op_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;
	struct fs *fs = fs_get();
	bool committed = false;
	int r = 0;

	if (f->kind == FILE_PLAIN || f->kind == FILE_SNAP || (f->kind == FILE_TEXT && f->fd < 0))
		return 0;
	pthread_mutex_lock(&f->lock);
	if (f->write_err) {
		/*
		 * A write the client was told failed (ENOSPC, most often): what is
		 * staged is not what it meant to write. Nothing is committed, and
		 * every close says why, not "invalid JSON".
		 */
		f->dirty = false;
		f->commit_failed = true;
		r = f->write_err;
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	if (f->dirty && !f->written) {
		/*
		 * Opened with O_TRUNC and not written: empty, which is not JSON. A
		 * shell's `>` closes its first descriptor before the command writes
		 * through the other, so this is not yet final: refuse quietly here,
		 * and let release commit (and log a refusal) if it stays empty. A
		 * view file left empty would empty a conversation: EPERM.
		 */
		pthread_mutex_unlock(&f->lock);
		return f->kind == FILE_JSONL || f->kind == FILE_TEXT ? -EPERM : -EINVAL;
	}
	if (f->kind == FILE_TEXT) {
		if (f->dirty) {
			r = text_commit(fs, f);
			f->commit_failed = r < 0;
		}
		pthread_mutex_unlock(&f->lock);
		return r;
	}
	if (f->kind == FILE_JSONL) {
		if (f->pending.len) {
			log_warn("refusing the last line written to '%s': it has no newline; nothing of it stored",
				 f->path);
			f->pending.len = 0;
			r = -EINVAL;
		} else if (f->dirty) {
			r = jsonl_commit(fs, f);
			f->commit_failed = r < 0;
			if (r == 0)
				invalidate(fs, f->path);
		}
		pthread_mutex_unlock(&f->lock);
		return r;
	}
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
	if ((f->kind == FILE_JSONL || f->kind == FILE_TEXT) && f->dirty && !f->written)
		refuse_emptying(f->path); /* opened with O_TRUNC and never written: said once, here */
	file_free(f);
	return 0;
}

int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fi->fh;

	/* A doc is durable once committed, at close; there is nothing to sync before. */
	if (f->kind != FILE_PLAIN)
		return 0;
	if ((datasync ? fdatasync(f->fd) : fsync(f->fd)) < 0)
		return plain_fail("sync", f->path, errno);
	return 0;
}

int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct view_path vp;
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *r;
	int res, fd;

	if (f && f->kind == FILE_PLAIN)
		return ftruncate(f->fd, size) < 0 ? -errno : 0;
	if (f && (f->kind == FILE_SNAP || f->fixed))
		return -EROFS;
	if (f && f->kind == FILE_TEXT && f->fd < 0)
		return -EBADF;
	if (f) {
		pthread_mutex_lock(&f->lock);
		res = f->fd < 0 ? stage_begin(fs, f, size == 0) : 0;
		if (res == 0)
			res = ftruncate(f->fd, size) < 0 ? -errno : 0;
		if (res == 0)
			f->dirty = f->written = true;
		pthread_mutex_unlock(&f->lock);
		return res;
	}
	r = rel(path);
	res = view_parse(fs, r, &vp);
	if (res < 0)
		return res;
	if (vp.kind == VIEW_METADATA)
		r = vp.doc;
	else if (view_readonly(&vp))
		return -EROFS;
	else if (vp.kind != VIEW_NONE)
		return -EPERM; /* JSON Lines are rewritten by opening them with O_TRUNC */
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

	if (in_readonly_view(fs, r))
		return -EROFS;
	if (is_doc(r)) {
		struct store_who who;
		struct fs_proc proc;

		caller(&proc, &who);
		return store_doc_remove(fs->store, r, &who, "unlink");
	}
	{
		struct view_path vp;

		res = view_parse(fs, r, &vp);
		if (res < 0)
			return res;
		/* A task's files in the view go with their folder: rm -r moves it to the trash. */
		if (vp.kind == VIEW_MESSAGES || vp.kind == VIEW_UI || vp.kind == VIEW_TASK_JSON || vp.kind == VIEW_METADATA)
			return 0;
		if (vp.kind != VIEW_NONE)
			return -EPERM;
	}
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = unlinkat(dfd, leaf, 0) < 0 ? plain_fail("remove", r, errno) : 0;
	close(dfd);
	return res;
}

/*
 * Commits the plain file `from` as the new content of doc `to` (ws_key NULL),
 * or of the workspace's taskHistory.json at view path `to` (ws_key "" for
 * unknown), then removes `from`: a temp file renamed over it.
 */
static int rename_in(struct fs *fs, const char *from, const char *to, unsigned int flags, const char *ws_key)
{
	struct store_who who;
	struct store_stat ss;
	struct fs_proc proc;
	struct commit_req req = { .doc = to, .ws_key = ws_key, .base_path = to, .kind = "rename",
				  .proc = &proc, .who = &who };
	struct stat st;
	const char *leaf;
	int fd, dfd, r;

	if (!ws_key && (flags & RENAME_NOREPLACE) && store_doc_stat(fs->store, to, &ss) == 0)
		return -EEXIST;
	fd = plain_open(fs, from, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		close(fd);
		return r;
	}
	caller(&proc, &who);
	r = commit_fd(fs, &req, fd);
	close(fd);
	if (r < 0) {
		if (r != -EINVAL) /* EINVAL was logged with its reason by the store */
			log_err("cannot commit '%s' as '%s': %s; the previous version stays", from, to, strerror(-r));
		return r;
	}
	dfd = plain_open_parent(fs, from, &leaf);
	if (dfd < 0 || unlinkat(dfd, leaf, 0) < 0)
		log_warn("committed '%s' as '%s' but cannot remove it: %s", from, to,
			 strerror(dfd < 0 ? -dfd : errno));
	if (dfd >= 0)
		close(dfd);
	invalidate(fs, ws_key ? "state/taskHistory.json" : to);
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
	int r;

	backing_check(fs);
	from = rel(from);
	to = rel(to);
	if (in_readonly_view(fs, from) || in_readonly_view(fs, to))
		return -EROFS;
	{
		struct view_path vf, vt;
		int pf = view_parse(fs, from, &vf), pt = view_parse(fs, to, &vt);

		if (pf < 0 && pf != -ENOENT)
			return pf;
		if (vf.kind == VIEW_TASK && vf.trash && pf == 0) {
			/* mv workspaces/.trash/<id> back to a tasks/ folder: the task comes back. */
			bool to_view = vt.kind == VIEW_TASK && !vt.trash && pt == -ENOENT;
			char dir[96];
			bool to_compat = store_conversation_dir(vf.task, dir, sizeof(dir)) == 0 && strcmp(to, dir) == 0;

			if ((!to_view && !to_compat) || (to_view && strcmp(vt.task, vf.task) != 0))
				return -EINVAL; /* a task comes back under its own id */
			return task_restore(fs, vf.task);
		}
		if (vt.kind == VIEW_WS_HISTORY && pt == 0 && vf.kind == VIEW_NONE && !is_doc(from))
			return rename_in(fs, from, to, flags, vt.unknown ? "" : vt.key);
		if (vf.kind == VIEW_NONE && pt == 0 && view_is_top(&vt) && !strchr(to + 11, '/')) {
			/* A client's entry renamed onto a view folder's name wins: the view's moves aside. */
			if (flags & RENAME_NOREPLACE)
				return -EEXIST;
			vt.kind = VIEW_NONE;
		}
		if (vf.kind != VIEW_NONE || vt.kind != VIEW_NONE)
			return vf.kind == VIEW_TASK || vt.kind == VIEW_TASK ? -EXDEV : -EPERM;
		if (strncmp(to, "workspaces/", 11) == 0 && !strchr(to + 11, '/') &&
		    (r = backing_mkdirs(fs, "workspaces", 10)) < 0)
			return r; /* the client's first entry of its own in workspaces/ */
	}
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
		return is_doc(to) ? rename_in(fs, from, to, flags, NULL) : rename_out(fs, from, to, flags);
	}
	r = plain_rename(fs, from, to, flags);
	return r < 0 ? plain_fail("rename", from, -r) : 0;
}

int op_link(const char *from, const char *to)
{
	struct fs *fs = fs_get();
	const char *lf, *lt;
	int df, dt, r;

	backing_check(fs);
	from = rel(from);
	to = rel(to);
	if (in_readonly_view(fs, from) || in_readonly_view(fs, to))
		return -EROFS;
	if (is_doc(from) || is_doc(to))
		return -EPERM; /* a doc has exactly one name */
	r = view_refuses_create(fs, to, "link");
	if (r < 0)
		return r;
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

	backing_check(fs);
	if (in_readonly_view(fs, r))
		return -EROFS;
	if (store_path_kind(r) != STORE_PATH_PLAIN) {
		/* tasks, sessions, state and their conversation folders are folders, never links */
		log_warn("refusing to create the symlink '%s': that name holds conversations", r);
		return -EPERM;
	}
	res = view_refuses_create(fs, r, "symlink");
	if (res < 0)
		return res;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = symlinkat(target, dfd, leaf) < 0 ? plain_fail("create symlink", r, errno) : 0;
	if (res == 0 && (res = give_to_caller(fs, r, dfd, leaf, -1, 0)) < 0)
		unlinkat(dfd, leaf, 0);
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
	{
		struct view_path vp;

		if (view_parse(fs, r, &vp) == 0 && vp.kind != VIEW_NONE)
			return vp.kind == VIEW_CKPT_FILES ? snap_readlink(vp.git_dir, vp.hash, vp.sub, buf, size) : -EINVAL;
	}
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

	backing_check(fs);
	if (in_readonly_view(fs, r))
		return -EROFS;
	if (is_doc(r))
		return -EPERM;
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EPERM; /* no device nodes in a history folder */
	res = view_refuses_create(fs, r, "special file");
	if (res < 0)
		return res;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	res = mknodat(dfd, leaf, (mode & S_IFMT) | private_mode(fs, mode & 07777), 0) < 0 ? plain_fail("create", r, errno) : 0;
	if (res == 0 && (res = give_to_caller(fs, r, dfd, leaf, -1, 0)) < 0)
		unlinkat(dfd, leaf, 0);
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

	if (f->kind != FILE_PLAIN)
		return -EOPNOTSUPP;
	return fallocate(f->fd, mode, off, len) < 0 ? -errno : 0;
}

