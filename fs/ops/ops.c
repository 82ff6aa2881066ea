/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.c: the filesystem's operations, by route (lowlevel.c turns node ids into
 * paths, and paths into routes, route.h, and calls these).
 *
 * Each request comes with its route: a managed file ("doc") goes to the
 * store, a path of the workspaces view to the view, anything else to the
 * backing tree through plain.c. This file only
 * translates: paths to store calls or *at() calls, results to 0 / -errno, with
 * a log line for every failure that is not the caller's ordinary business
 * (ENOENT on lookup is not logged).
 *
 * The operations are in four files: this one (attributes, folders, truncate
 * by path, and keeping the backing tree whole), open.c (open and create),
 * names.c (unlink, rename, links) and file.c (what an open file does, one
 * table of operations per kind). Writes to a doc never touch the store until
 * the writer is done: the staged bytes are committed as one transaction when
 * the file is closed, and a rename of a plain temp file over a doc commits
 * the temp file's bytes: Cline's three write patterns (in place, temp +
 * rename, Roo's safeWriteJson) all become single atomic commits, merged with
 * what other writers committed since (docs/MERGE.md). A refused commit (not
 * valid JSON) fails the close or the rename with EINVAL.
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

#include "fs/ops/ops_internal.h"
#include "fs/fs.h"
#include "fs/kernel/kcache.h"
#include "fs/ops/ops.h"
#include "fs/view/shadow.h"
#include "fs/view/view.h"
#include "store/store_view.h"
#include "store/util.h"

/* The calling process: for the revision log and for its merge bases. */
void fs_caller(struct fs_proc *proc, struct store_who *who)
{
	pid_t tid = fs_caller_pid;

	if (fs_proc_get(tid, proc) < 0)
		*proc = (struct fs_proc){ .tgid = tid };
	who->pid = proc->tgid;
	who->comm = proc->comm[0] ? proc->comm : NULL;
}

/* store_doc_create() of path, made by the calling process. */
int doc_create_by_caller(struct fs *fs, const char *path)
{
	struct store_who who;
	struct fs_proc proc;

	fs_caller(&proc, &who);
	return store_doc_create(fs->store, path, &who);
}

/* store_doc_remove() of path, a removal of kind ("unlink", ...) by the calling process. */
int doc_remove_by_caller(struct fs *fs, const char *path, const char *kind)
{
	struct store_who who;
	struct fs_proc proc;

	fs_caller(&proc, &who);
	return store_doc_remove(fs->store, path, &who, kind);
}

/*
 * After a commit of doc r, or when the folder r was made, moved away or
 * back behind the kernel's back (a task's, through the view): a new epoch
 * (the kernel looks each name up again before it uses a kept entry: a doc's
 * name gets its new version's node), and the kernel drops what it cached of
 * r (attributes; a folder's listing), the listing of r's folder, and what it
 * cached of the view's folders whose times follow the conversation r
 * belongs to. What is in a folder r needs nothing more:
 * every path walk through r needs r's attributes first (the mount checks
 * permissions in the kernel, default_permissions), so it asks the daemon,
 * which says what is there now.
 */
void fs_invalidate(struct fs *fs, const char *r)
{
	const char *slash = strrchr(r, '/');
	char task[72];

	kcache_new_epoch(fs);
	kcache_invalidate(fs, r);
	if (slash) {
		/* A commit may have made the doc (>> to a new conversation's view file): its folder lists it now. */
		_cleanup_free_ char *dir = strndup(r, (size_t)(slash - r));

		if (dir)
			kcache_invalidate(fs, dir);
		else
			log_warn("out of memory while telling the kernel that the folder of '%s' changed", r);
	}
	if (store_path_conversation(r, task, sizeof(task)) == 0)
		view_invalidate_conversation(fs, task);
	kcache_placement_check(fs);
}

void doc_fill_stat(const struct fs *fs, const struct store_stat *s, struct stat *st)
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
int plain_fail(const char *what, const char *r, int err)
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
int backing_mkdirs(struct fs *fs, const char *dir, size_t len)
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
void backing_check(struct fs *fs)
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
 * Creating rt (what: "file", "folder", ...) in a folder of the workspaces
 * view, which holds only its own files: -EPERM, or -EINVAL for a folder in a
 * workspace's tasks/ whose name is not a task id; 0 if rt is outside the view
 * (the client's own workspaces/<hash>/ included). workspaces/ itself takes
 * any name the view is not showing (the kernel has answered EEXIST for those
 * already): the client's own entry, made in the backing tree.
 */
int view_refuses_create(struct fs *fs, const struct route *rt, const char *what)
{
	struct route parent;
	char buf[4096];

	if (strncmp(rt->rel, "workspaces/", 11) != 0)
		return 0;
	route_parent(fs, rt, &parent, buf, sizeof(buf));
	if (parent.view_err < 0 || parent.vp.kind == VIEW_NONE)
		return 0;
	if (parent.vp.kind == VIEW_ROOT)
		return backing_mkdirs(fs, "workspaces", 10);
	if (parent.vp.kind == VIEW_TASKS && strcmp(what, "folder") == 0) {
		log_warn("refusing to make the task '%s': '%s' is not a task id (digits)", rt->rel,
			 strrchr(rt->rel, '/') + 1);
		return -EINVAL;
	}
	log_warn("refusing to create the %s '%s': the workspaces view holds only its own files", what, rt->rel);
	return -EPERM;
}

/* True if rt is in a read-only part of the view (a checkpoint), or would be created in one. */
bool in_readonly_view(struct fs *fs, const struct route *rt)
{
	struct route parent;
	char buf[4096];

	if (strncmp(rt->rel, "workspaces/", 11) != 0 || (!strstr(rt->rel, "/checkpoints") && !strstr(rt->rel, "/versions")))
		return false;
	if (rt->view_err == 0 && view_readonly(&rt->vp))
		return true;
	route_parent(fs, rt, &parent, buf, sizeof(buf));
	return parent.view_err == 0 && view_readonly(&parent.vp);
}

/*
 * Makes rt in the backing tree for mkdir, symlink and mknod: a folder, a
 * symlink to target, or a node of mode's type, with mode's permissions (as
 * private_mode() leaves them); refused where the view holds only its own
 * files. The new entry is given to the caller, or removed again if it
 * cannot be.
 */
int plain_make(struct fs *fs, const struct route *rt, mode_t mode, const char *target)
{
	const char *r = rt->rel, *leaf;
	mode_t perm = private_mode(fs, mode & 07777);
	int dfd, res;

	res = view_refuses_create(fs, rt, S_ISDIR(mode) ? "folder" : S_ISLNK(mode) ? "symlink" : "special file");
	if (res == 0)
		res = shares_space(fs->shares, fs_caller_uid, S_ISLNK(mode) ? strlen(target) : 0);
	if (res < 0)
		return res;
	dfd = plain_open_parent(fs, r, &leaf);
	if (dfd < 0)
		return dfd;
	if (S_ISDIR(mode))
		res = mkdirat(dfd, leaf, perm) < 0 ? plain_fail("create directory", r, errno) : 0;
	else if (S_ISLNK(mode))
		res = symlinkat(target, dfd, leaf) < 0 ? plain_fail("create symlink", r, errno) : 0;
	else
		res = mknodat(dfd, leaf, (mode & S_IFMT) | perm, 0) < 0 ? plain_fail("create", r, errno) : 0;
	if (res == 0 && (res = give_to_caller(fs, r, dfd, leaf, -1, 0)) < 0)
		unlinkat(dfd, leaf, S_ISDIR(mode) ? AT_REMOVEDIR : 0);
	close(dfd);
	return res;
}

/* ---- attributes ----------------------------------------------------------- */

int op_getattr_doc(const struct route *rt, struct stat *st, int64_t *ret_rev)
{
	struct fs *fs = fs_get();
	struct store_stat ss;
	int r = store_doc_stat(fs->store, rt->rel, &ss);

	if (r < 0)
		return r;
	doc_fill_stat(fs, &ss, st);
	*ret_rev = ss.rev;
	return 0;
}

int op_getattr(const struct route *rt, struct stat *st, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *path = rt->rel, *leaf;
	int dfd, r;

	/*
	 * A fixed version (a checkpoint's, a saved version's) has the attributes
	 * stat() gives its path, not those of the doc it was cut from.
	 */
	if (f && f->fixed && rt->kind == ROUTE_VIEW && rt->view_err == 0 && view_getattr(fs, path, &rt->vp, st) == 0)
		return 0;
	if (f)
		return file_getattr(fs, f, st);
	if (rt->kind == ROUTE_DOC)
		return op_getattr_doc(rt, st, &(int64_t){ 0 });
	if (!*path)
		return plain_root_stat(fs, st);
	if (rt->view_err < 0)
		return rt->view_err;
	if (rt->vp.kind == VIEW_ROOT) {
		/* The client's own workspaces/ folder, if it has one, lends its attributes. */
		dfd = plain_open_parent(fs, path, &leaf);
		if (dfd >= 0 && fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) == 0) {
			close(dfd);
			return 0;
		}
		if (dfd >= 0)
			close(dfd);
	}
	if (rt->kind == ROUTE_VIEW)
		return view_getattr(fs, path, &rt->vp, st);
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
mode_t private_mode(const struct fs *fs, mode_t mode)
{
	return fs->shared ? mode : (mode & ~(mode_t)077);
}

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
int give_to_caller(const struct fs *fs, const char *r, int dfd, const char *leaf, int fd, mode_t mode)
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

/*
 * Whose attributes chmod, chown and utimens change. Docs and the view take
 * none (0: a doc is always 0600, and its mtime is the time its content last
 * changed); checkpoint snapshots refuse them (-EROFS); 1: a plain
 * file, which the caller changes.
 */
static int attr_target(const struct route *rt, const struct fs_file *f)
{
	if (f)
		return file_attr_target(f);
	if (rt->view_err == 0 && rt->kind == ROUTE_VIEW && rt->vp.kind != VIEW_ROOT)
		return view_readonly(&rt->vp) ? -EROFS : 0;
	return rt->kind == ROUTE_DOC ? 0 : 1;
}

/* One of chmod, chown and utimens, with what it sets. */
struct attr_change {
	enum { ATTR_MODE, ATTR_OWNER, ATTR_TIMES } what;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	const struct timespec *tv;
};

/* The change on an open plain file. */
static int change_fd(int fd, const struct attr_change *c)
{
	switch (c->what) {
	case ATTR_MODE:
		return fchmod(fd, c->mode) < 0 ? -errno : 0;
	case ATTR_OWNER:
		return fchown(fd, c->uid, c->gid) < 0 ? -errno : 0;
	default:
		return futimens(fd, c->tv) < 0 ? -errno : 0;
	}
}

/* chmod of leaf in dfd: fchmodat cannot refuse to follow a link; open the leaf itself. */
static int chmod_leaf(int dfd, const char *leaf, mode_t mode)
{
	int fd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC), r;
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
	return r;
}

/*
 * The change on the plain file at path, by name in its parent folder and
 * never through a link; path "" is the backing folder itself.
 */
static int change_named(struct fs *fs, const char *path, const struct attr_change *c)
{
	const char *leaf;
	int dfd, r;

	if (!*path && c->what == ATTR_MODE)
		return plain_root_chmod(fs, c->mode); /* never the backing root's: it stays 0700 */
	if (!*path && c->what == ATTR_TIMES)
		return utimensat(AT_FDCWD, fs->backing_path, c->tv, 0) < 0 ? -errno : 0;
	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	switch (c->what) {
	case ATTR_MODE:
		r = chmod_leaf(dfd, leaf, c->mode);
		break;
	case ATTR_OWNER:
		r = fchownat(dfd, *path ? leaf : "", c->uid, c->gid,
			     AT_SYMLINK_NOFOLLOW | (*path ? 0 : AT_EMPTY_PATH)) < 0 ? -errno : 0;
		break;
	default:
		r = utimensat(dfd, leaf, c->tv, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	}
	close(dfd);
	return r;
}

/* chmod, chown or utimens of rt, or of the open file fi: what attr_target() allows. */
static int change_attr(const struct route *rt, struct fuse_file_info *fi, const struct attr_change *c)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	int r = attr_target(rt, f);

	if (r <= 0)
		return r;
	return f ? change_fd(f->fd, c) : change_named(fs_get(), rt->rel, c);
}

int op_chmod(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	return change_attr(rt, fi, &(struct attr_change){ .what = ATTR_MODE, .mode = private_mode(fs_get(), mode) });
}

int op_chown(const struct route *rt, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	return change_attr(rt, fi, &(struct attr_change){ .what = ATTR_OWNER, .uid = uid, .gid = gid });
}

int op_utimens(const struct route *rt, const struct timespec tv[2], struct fuse_file_info *fi)
{
	return change_attr(rt, fi, &(struct attr_change){ .what = ATTR_TIMES, .tv = tv });
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

/* The root's entries this mount keeps in its own folder (plain_per_mount()), listed with the root's. */
static int list_per_mount(struct fs *fs, op_list_fn fn, void *ctx)
{
	struct dirent *de;
	int fd, res = 0;
	DIR *d;

	if (!fs->per_mount)
		return 0;
	fd = plain_open(fs, fs->per_mount, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	d = fdopendir(fd);
	if (!d) {
		res = -errno;
		close(fd);
		return res;
	}
	while (res == 0 && (errno = 0, de = readdir(d)))
		if (store_path_per_mount(de->d_name))
			res = fn(ctx, de->d_name, (mode_t)DTTOIF(de->d_type), de->d_ino);
	if (res == 0 && errno)
		res = -errno;
	closedir(d);
	return res;
}

int op_list_dir(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct fs *fs = fs_get();
	const char *r = rt->rel;
	struct dirent *de;
	DIR *d;
	int fd, res = 0;

	if (rt->view_err < 0)
		return rt->view_err;
	if (rt->kind == ROUTE_VIEW && rt->vp.kind != VIEW_ROOT)
		return view_list(fs, &rt->vp, fn, ctx);
	fd = plain_open(fs, r, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOENT && rt->kind == ROUTE_PLAIN && backing_heal(fs, r) == 0) {
		/* The kernel holds the folder's entry: listing it heals it, as a lookup does (op_getattr()). */
		fd = plain_open(fs, r, O_RDONLY | O_DIRECTORY, 0);
		if (fd >= 0)
			log_warn("the folder '%s' was missing from the backing tree: made it again for its conversations", r);
	}
	if (fd == -ENOENT && rt->vp.kind == VIEW_ROOT) {
		/* No workspaces/ of the client's: only the view's entries. */
		if ((res = fn(ctx, ".", S_IFDIR, 0)) < 0 || (res = fn(ctx, "..", S_IFDIR, 0)) < 0)
			return res;
		return view_list(fs, &rt->vp, fn, ctx);
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
			continue; /* convfs's own (the trash's folders, each mount's own) */
		if (!*r && fs->per_mount && store_path_per_mount(de->d_name))
			continue; /* this mount has its own (list_per_mount()) */
		res = fn(ctx, de->d_name, (mode_t)DTTOIF(de->d_type), de->d_ino);
	}
	if (res == 0 && errno)
		res = -errno;
	closedir(d);
	if (res == 0 && !*r)
		res = list_per_mount(fs, fn, ctx);
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
	if (res == 0 && rt->vp.kind == VIEW_ROOT)
		res = view_list(fs, &rt->vp, fn, ctx);
	if (res == 0 && rt->store == STORE_PATH_DOC_DIR) {
		struct doc_list_ctx c = { fn, ctx };

		res = store_doc_list(fs->store, r, list_doc, &c);
	}
	return res;
}

/* The backing folder of a trashed task lives here, out of the tree. */
#define TRASH_DIR ".convfs-trash"

int op_mkdir(const struct route *rt, mode_t mode)
{
	struct fs *fs = fs_get();
	const struct view_path *vp = &rt->vp;
	int res;

	backing_check(fs);
	if (in_readonly_view(fs, rt))
		return -EROFS;
	if (rt->kind == ROUTE_DOC)
		return -EEXIST;
	res = rt->view_err;
	if (res == 0 && vp->kind != VIEW_NONE)
		return -EEXIST;
	if (vp->kind == VIEW_TASK && !vp->trash && res == -ENOENT) {
		/* mkdir workspaces/<ws>/tasks/<id>: a new task, with empty conversations. */
		struct store_who who;
		struct fs_proc proc;

		fs_caller(&proc, &who);
		res = store_task_create(fs->store, vp->task, vp->unknown ? NULL : vp->key, &who);
		if (res == 0) {
			char tdir[64];

			snprintf(tdir, sizeof(tdir), "tasks/%s", vp->task);
			res = plain_mkdirs(fs, tdir);
			fs_invalidate(fs, tdir); /* tasks/ lists it now */
		}
		return res;
	}
	if (res < 0 && vp->kind != VIEW_NONE)
		return vp->kind == VIEW_TASK ? -EEXIST : -EPERM; /* only tasks are made in the view */
	return plain_make(fs, rt, S_IFDIR | (mode & 07777), NULL);
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

	fs_caller(&proc, &who);
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
	/* The kernel may hold the folder, gone behind its back when the trash was asked through the view. */
	fs_invalidate(fs, from);
	return 0;
}

int task_restore(struct fs *fs, const char *id)
{
	struct store_who who;
	struct fs_proc proc;
	char from[96], to[96];
	int r;

	fs_caller(&proc, &who);
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
	fs_invalidate(fs, to); /* back behind the kernel's back, when asked through the view */
	return 0;
}

/* True if r is the folder of one conversation: tasks/<id>, sessions/<id>. */
static bool is_conversation_dir(const char *r)
{
	const char *slash = strchr(r, '/');
	char dir[96];

	return slash && store_conversation_dir(slash + 1, dir, sizeof(dir)) == 0 && strcmp(dir, r) == 0;
}

int op_rmdir(const struct route *rt)
{
	struct fs *fs = fs_get();
	const char *r = rt->rel, *leaf;
	int dfd, res;

	if (in_readonly_view(fs, rt))
		return -EROFS;
	if (rt->view_err < 0)
		return rt->view_err;
	if (rt->vp.kind == VIEW_TASK && !rt->vp.trash)
		return task_trash(fs, rt->vp.task); /* rm -r of a task in the view */
	if (rt->kind == ROUTE_VIEW)
		return -EPERM;
	if (rt->store == STORE_PATH_DOC_DIR) {
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
	if (res == 0 && rt->store == STORE_PATH_DOC_DIR && is_conversation_dir(r)) {
		int t = task_trash(fs, strchr(r, '/') + 1);

		if (t < 0 && t != -ENOENT)
			log_warn("removed '%s' but cannot put the task in the trash: %s", r, strerror(-t));
	}
	return res;
}

/* ---- files ---------------------------------------------------------------------- */

int op_truncate(const struct route *rt, off_t size, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	const char *r = rt->rel;
	int res, fd;

	if (f)
		return file_truncate(fs, f, size);
	if (rt->view_err < 0)
		return rt->view_err;
	if (rt->vp.kind == VIEW_METADATA)
		r = rt->vp.doc; /* a doc of the compat tree */
	else if (view_readonly(&rt->vp))
		return -EROFS;
	else if (rt->kind == ROUTE_VIEW)
		return -EPERM; /* JSON Lines are rewritten by opening them with O_TRUNC */
	if (rt->kind == ROUTE_DOC || rt->vp.kind == VIEW_METADATA) {
		/* truncate(2) by path: one commit of the truncated content. */
		struct fs_file *t;

		if ((size_t)size > COMMIT_MAX)
			return -EFBIG;
		t = file_new(FILE_DOC, -1, r);
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
			fs_invalidate(fs, r);
		return res;
	}
	fd = plain_open_regular(fs, r, O_WRONLY, 0, NULL);
	if (fd < 0)
		return plain_fail("truncate", r, -fd);
	res = ftruncate(fd, size) < 0 ? plain_fail("truncate", r, errno) : 0;
	close(fd);
	return res;
}

int op_statfs(struct statvfs *sv)
{
	return fstatvfs(fs_get()->root_fd, sv) < 0 ? -errno : 0;
}

