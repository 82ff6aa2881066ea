/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.c: the filesystem's operations, by route (lowlevel.c turns node ids into
 * paths, and paths into routes, route.h, and calls these).
 *
 * Each request comes with its route, and the route with the row of its
 * path's kind (kinds.h): the op_*() functions here and in open.c, names.c
 * and control.c do what every kind shares (a handle's own calls, the
 * backing folder looked at before anything is made, -EROFS where a kind is
 * read-only) and call through the row, or give the member's written
 * default. What each kind does is in its row: compat.c for the compat
 * tree's, fs/view/ for the view's. This file also holds what the rows
 * share: translating store calls and *at() calls to 0 / -errno, with a
 * log line for every failure that is not the caller's ordinary business
 * (ENOENT on lookup is not logged), and keeping the backing tree whole.
 *
 * Writes to a doc never touch the store until the writer is done: the
 * staged bytes are committed as one transaction when the file is closed,
 * and a rename of a plain temp file over a doc commits the temp file's
 * bytes: Cline's three write patterns (in place, temp + rename, Roo's
 * safeWriteJson) all become single atomic commits, merged with what other
 * writers committed since (docs/MERGE.md). A refused commit (not valid
 * JSON) fails the close or the rename with EINVAL. What an open file does
 * is file.c's: one table of operations per kind of handle.
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

int backing_mkdirs(struct fs *fs, const char *dir, size_t len)
{
	return backing_mkdirs_made(fs, dir, len, NULL);
}

int backing_mkdirs_made(struct fs *fs, const char *dir, size_t len, unsigned *made)
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
		if (mkdirat(dfd, comp, 0700) == 0) {
			if (made)
				(*made)++;
		} else if (errno != EEXIST) {
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
	if (heal_all_docs(fs, NULL) < 0)
		log_err("cannot make the folders of the conversations again in '%s'", fs->backing_path);
out:
	pthread_mutex_unlock(&lock);
}

int path_made_in_refused(const struct route *rt, const char *what)
{
	log_warn("refusing to create the %s '%s': the workspaces view holds only its own files", what, rt->rel);
	return -EPERM;
}

int path_made_in(const struct route *rt, const char *what)
{
	if (!rt->in)
		return 0; /* not in a folder of the view: the backing tree's */
	return rt->in->made_in ? rt->in->made_in(rt, what) : path_made_in_refused(rt, what);
}

int path_client_folder(const struct route *rt)
{
	const char *slash = strrchr(rt->rel, '/');

	if (!rt->in || !rt->in->client_names || !slash)
		return 0;
	return backing_mkdirs(rt->fs, rt->rel, (size_t)(slash - rt->rel));
}

bool path_readonly(const struct route *rt)
{
	return rt->ops->readonly || (rt->in && rt->in->readonly);
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

	res = path_made_in(rt, S_ISDIR(mode) ? "folder" : S_ISLNK(mode) ? "symlink" : "special file");
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
	struct fs *fs = rt->fs;
	struct store_stat ss;
	int r = store_doc_stat(fs->store, rt->rel, &ss);

	if (r < 0)
		return r;
	doc_fill_stat(fs, &ss, st);
	*ret_rev = ss.rev;
	return 0;
}

/* What a NULL member answers for a kind that names nothing (rt->err), or dflt (kinds.h). */
int path_default(const struct route *rt, int dflt)
{
	return rt->err ? rt->err : dflt;
}

int op_getattr(const struct route *rt, struct stat *st, struct fuse_file_info *fi)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;

	/*
	 * A fixed version (a checkpoint's, a saved version's, the trash's)
	 * has the attributes stat() gives its path, not those of the doc it
	 * was cut from, while its path is still of the kind it was opened as.
	 */
	if (f && f->fixed && f->row == rt->ops && rt->ops->getattr && rt->ops->getattr(rt, st) == 0)
		return 0;
	if (f)
		return file_getattr(rt->fs, f, st);
	return rt->ops->getattr ? rt->ops->getattr(rt, st) : path_default(rt, -ENOENT);
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

/*
 * chmod, chown or utimens of rt, or of the open file fi. Through a handle,
 * the handle says whose attributes change (file_attr_target()); by path,
 * the row (NULL: nothing changes, kinds.h).
 */
static int change_attr(const struct route *rt, struct fuse_file_info *fi, const struct attr_change *c)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;
	int r;

	if (f) {
		r = file_attr_target(f);
		return r <= 0 ? r : change_fd(f->fd, c);
	}
	if (rt->ops->readonly)
		return -EROFS;
	return rt->ops->setattr ? rt->ops->setattr(rt, c) : 0;
}

int op_chmod(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	return change_attr(rt, fi, &(struct attr_change){ .what = ATTR_MODE, .mode = private_mode(rt->fs, mode) });
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

int op_list_dir(const struct route *rt, op_list_fn fn, void *ctx)
{
	return rt->ops->list ? rt->ops->list(rt, fn, ctx) : path_default(rt, -ENOTDIR);
}

int op_mkdir(const struct route *rt, mode_t mode)
{
	backing_check(rt->fs);
	if (path_readonly(rt))
		return -EROFS;
	return rt->ops->mkdir ? rt->ops->mkdir(rt, mode) : -EEXIST;
}

/* The backing folder of a trashed task lives here, out of the tree. */
#define TRASH_DIR ".convfs-trash"

int task_make(struct fs *fs, const char *id, const char *ws_key)
{
	struct store_who who;
	struct fs_proc proc;
	char tdir[96];
	int r;

	fs_caller(&proc, &who);
	r = store_task_create(fs->store, id, ws_key, &who);
	if (r == 0) {
		snprintf(tdir, sizeof(tdir), "tasks/%s", id);
		r = plain_mkdirs(fs, tdir);
		fs_invalidate(fs, tdir); /* tasks/ lists it now */
	}
	return r;
}

/*
 * The backing folder of task id (with any plain files in it) goes to
 * TRASH_DIR, once the store has it in the trash: by a request, or by a
 * commit pulled from another machine (fs/sync/sync_glue.c).
 */
void task_folder_trash(struct fs *fs, const char *id)
{
	char from[96], to[96];
	int r;

	if (store_conversation_dir(id, from, sizeof(from)) < 0)
		return;
	snprintf(to, sizeof(to), TRASH_DIR "/%s", id);
	if ((r = plain_mkdirs(fs, TRASH_DIR)) == 0)
		r = plain_rename(fs, from, to, 0);
	if (r < 0 && r != -ENOENT)
		log_warn("cannot move the folder '%s' to the trash: %s; it stays where it is", from, strerror(-r));
	/* The kernel may hold the folder, gone behind its back when the trash was asked through the view. */
	fs_invalidate(fs, from);
}

/* Moves task id to the trash: the store's part, and its backing folder. */
int task_trash(struct fs *fs, const char *id)
{
	struct store_who who;
	struct fs_proc proc;
	int r;

	fs_caller(&proc, &who);
	r = store_task_trash(fs->store, id, &who);
	if (r < 0)
		return r;
	task_folder_trash(fs, id);
	return 0;
}

/* The backing folder of task id, back from the trash once the store has the task back (or made anew). */
void task_folder_restore(struct fs *fs, const char *id)
{
	char from[96], to[96];
	int r;

	snprintf(from, sizeof(from), TRASH_DIR "/%s", id);
	if (store_conversation_dir(id, to, sizeof(to)) < 0)
		return;
	*strchr(to, '/') = '\0';
	r = plain_mkdirs(fs, to); /* tasks/ or sessions/ */
	to[strlen(to)] = '/';
	if (r == 0 && plain_rename(fs, from, to, RENAME_NOREPLACE) < 0)
		r = plain_mkdirs(fs, to); /* its folder held no plain files: a new one */
	if (r < 0)
		log_warn("cannot make the folder '%s' of the restored task: %s; its conversation is back", to,
			 strerror(-r));
	fs_invalidate(fs, to); /* back behind the kernel's back, when asked through the view */
}

int task_restore(struct fs *fs, const char *id)
{
	struct store_who who;
	struct fs_proc proc;
	int r;

	fs_caller(&proc, &who);
	r = store_task_restore(fs->store, id, &who);
	if (r < 0)
		return r;
	task_folder_restore(fs, id);
	return 0;
}

int op_rmdir(const struct route *rt)
{
	if (path_readonly(rt))
		return -EROFS;
	return rt->ops->rmdir ? rt->ops->rmdir(rt) : path_default(rt, -EPERM);
}

/* ---- files ---------------------------------------------------------------------- */

int op_truncate(const struct route *rt, off_t size, struct fuse_file_info *fi)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;

	if (f)
		return file_truncate(rt->fs, f, size);
	if (rt->ops->readonly)
		return -EROFS;
	return rt->ops->truncate ? rt->ops->truncate(rt, size) : path_default(rt, -EPERM);
}

int op_statfs(struct fs *fs, struct statvfs *sv)
{
	return fstatvfs(fs->root_fd, sv) < 0 ? -errno : 0;
}

