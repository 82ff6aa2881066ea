/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * names.c: unlink, rename, link, symlink, readlink and mknod.
 *
 * A rename of a plain temp file over a doc commits the temp file's bytes as
 * one revision (Cline's temp + rename), merged like a write; a rename of a
 * doc or a task folder moves it in the store; everything else is a rename
 * in the backing tree, through parent fds.
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/kernel/loop.h"
#include "fs/ops/ops_internal.h"
#include "fs/view/shadow.h"
#include "store/util.h"

int op_unlink(const struct route *rt)
{
	struct fs *fs = fs_get();
	enum view_kind vk = rt->vp.kind;
	const char *r = rt->rel, *leaf;
	int dfd, res;

	if (in_readonly_view(fs, rt))
		return -EROFS;
	if (rt->kind == ROUTE_DOC)
		return doc_remove_by_caller(fs, r, "unlink");
	if (rt->view_err < 0)
		return rt->view_err;
	/* A task's files in the view go with their folder: rm -r moves it to the trash. */
	if (vk == VIEW_MESSAGES || vk == VIEW_UI || vk == VIEW_TASK_JSON || vk == VIEW_METADATA)
		return 0;
	if (rt->kind == ROUTE_VIEW)
		return -EPERM;
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
	const char *leaf;
	int fd, dfd, r;

	if (!ws_key && (flags & RENAME_NOREPLACE) && store_doc_stat(fs->store, to, &ss) == 0)
		return -EEXIST;
	fd = plain_open_regular(fs, from, O_RDONLY, 0, NULL);
	if (fd == -EINVAL)
		log_warn("refusing to commit '%s' as '%s': not a regular file; the previous version stays", from, to);
	if (fd < 0)
		return fd;
	fs_caller(&proc, &who);
	r = commit_fd(fs, &req, fd, false);
	if (r < 0) {
		close(fd);
		/* EINVAL was logged with its reason by the store, EFBIG by commit_size_check() */
		if (r != -EINVAL && r != -EFBIG)
			log_err("cannot commit '%s' as '%s': %s; the previous version stays", from, to, strerror(-r));
		return r;
	}
	dfd = plain_open_parent(fs, from, &leaf);
	if (dfd < 0 || unlinkat(dfd, leaf, 0) < 0)
		log_warn("committed '%s' as '%s' but cannot remove it: %s", from, to,
			 strerror(dfd < 0 ? -dfd : errno));
	if (dfd >= 0)
		close(dfd);
	/* Its last close frees its pages: the rename's caller does not wait for that. */
	loop_close_after_reply(fd);
	fs_invalidate(fs, ws_key ? "state/taskHistory.json" : to);
	return 0;
}

/* Writes doc `from` out as the plain file `to`, then removes the doc. */
static int rename_out(struct fs *fs, const char *from, const char *to, unsigned int flags)
{
	_cleanup_free_ char *buf = NULL;
	struct store_snap *snap = NULL;
	bool noreplace = flags & RENAME_NOREPLACE;
	char tmp[96];
	const char *leaf;
	struct stat st;
	off_t off = 0;
	int dfd, fd = -1, r;

	dfd = plain_open_parent(fs, to, &leaf);
	if (dfd < 0)
		return dfd;
	/* Said early when it is known; the renameat2() below is what decides. */
	if (noreplace && fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
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
		if (n < 0 || (r = pwrite_all(fd, buf, (size_t)n, (size_t)off)) < 0) {
			r = n < 0 ? (int)n : plain_fail("write", to, -r);
			goto out_unlink;
		}
		off += n;
	}
	if (noreplace) {
		/*
		 * The name is taken first, atomically, so that nothing can come
		 * at `to` between a check and the rename; the doc goes after,
		 * or the name goes back if it cannot.
		 */
		if (renameat2(dfd, tmp, dfd, leaf, RENAME_NOREPLACE) < 0) {
			r = errno == EEXIST ? -EEXIST : plain_fail("rename", to, errno);
			goto out_unlink;
		}
		r = doc_remove_by_caller(fs, from, "rename-out");
		if (r < 0)
			unlinkat(dfd, leaf, 0);
		goto out;
	}
	r = doc_remove_by_caller(fs, from, "rename-out");
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

int op_rename(const struct route *rf, const struct route *rt, unsigned int flags)
{
	struct fs *fs = fs_get();
	const struct view_path *vf = &rf->vp, *vt = &rt->vp;
	const char *from = rf->rel, *to = rt->rel;
	enum view_kind to_kind = vt->kind;
	int pf = rf->view_err, pt = rt->view_err, r;

	backing_check(fs);
	if (in_readonly_view(fs, rf) || in_readonly_view(fs, rt))
		return -EROFS;
	if (pf < 0 && pf != -ENOENT)
		return pf;
	if (vf->kind == VIEW_TASK && vf->trash && pf == 0) {
		/* mv workspaces/.trash/<id> back to a tasks/ folder: the task comes back. */
		bool to_view = vt->kind == VIEW_TASK && !vt->trash && pt == -ENOENT;
		char dir[96];
		bool to_compat = store_conversation_dir(vf->task, dir, sizeof(dir)) == 0 && strcmp(to, dir) == 0;

		if ((!to_view && !to_compat) || (to_view && strcmp(vt->task, vf->task) != 0))
			return -EINVAL; /* a task comes back under its own id */
		return task_restore(fs, vf->task);
	}
	if (vt->kind == VIEW_WS_HISTORY && pt == 0 && rf->kind == ROUTE_PLAIN)
		return rename_in(fs, from, to, flags, vt->unknown ? "" : vt->key);
	if (vf->kind == VIEW_NONE && pt == 0 && view_is_top(vt) && !strchr(to + 11, '/')) {
		/* A client's entry renamed onto a view folder's name wins: the view's moves aside. */
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		to_kind = VIEW_NONE;
	}
	if (vf->kind != VIEW_NONE || to_kind != VIEW_NONE)
		return vf->kind == VIEW_TASK || to_kind == VIEW_TASK ? -EXDEV : -EPERM;
	if (strncmp(to, "workspaces/", 11) == 0 && !strchr(to + 11, '/') &&
	    (r = backing_mkdirs(fs, "workspaces", 10)) < 0)
		return r; /* the client's first entry of its own in workspaces/ */
	/* Directories that hold docs move by copy: mv falls back on EXDEV. */
	if (rf->store == STORE_PATH_DOC_DIR || rf->store == STORE_PATH_TASKS_DIR ||
	    rt->store == STORE_PATH_DOC_DIR || rt->store == STORE_PATH_TASKS_DIR)
		return -EXDEV;
	if (rf->kind == ROUTE_DOC || rt->kind == ROUTE_DOC) {
		if (flags & RENAME_EXCHANGE)
			return -EINVAL;
		if (rf->kind == ROUTE_DOC && rt->kind == ROUTE_DOC)
			return strcmp(from, to) == 0 ? 0 : -EXDEV;
		return rt->kind == ROUTE_DOC ? rename_in(fs, from, to, flags, NULL) : rename_out(fs, from, to, flags);
	}
	r = plain_rename(fs, from, to, flags);
	return r < 0 ? plain_fail("rename", from, -r) : 0;
}

int op_link(const struct route *rf, const struct route *rt)
{
	struct fs *fs = fs_get();
	const char *from = rf->rel, *to = rt->rel;
	int r;

	backing_check(fs);
	if (in_readonly_view(fs, rf) || in_readonly_view(fs, rt))
		return -EROFS;
	if (rf->kind == ROUTE_DOC || rt->kind == ROUTE_DOC)
		return -EPERM; /* a doc has exactly one name */
	r = view_refuses_create(fs, rt, "link");
	if (r == 0)
		r = shares_space(fs->shares, fs_caller_uid, 0);
	if (r < 0)
		return r;
	r = plain_link(fs, from, to);
	return r < 0 ? plain_fail("link", from, -r) : 0;
}

int op_symlink(const char *target, const struct route *rt)
{
	struct fs *fs = fs_get();

	backing_check(fs);
	if (in_readonly_view(fs, rt))
		return -EROFS;
	if (rt->store != STORE_PATH_PLAIN) {
		/* tasks, sessions, state and their conversation folders are folders, never links */
		log_warn("refusing to create the symlink '%s': that name holds conversations", rt->rel);
		return -EPERM;
	}
	return plain_make(fs, rt, S_IFLNK, target);
}

int op_readlink(const struct route *rt, char *buf, size_t size)
{
	struct fs *fs = fs_get();
	const struct view_path *vp = &rt->vp;
	const char *r = rt->rel, *leaf;
	ssize_t n;
	int dfd;

	if (rt->kind == ROUTE_DOC)
		return -EINVAL;
	if (rt->view_err == 0 && rt->kind == ROUTE_VIEW)
		return vp->kind == VIEW_CKPT_FILES ? shadow_readlink(vp->git_dir, vp->hash, vp->sub, buf, size) : -EINVAL;
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

int op_mknod(const struct route *rt, mode_t mode, dev_t rdev)
{
	struct fs *fs = fs_get();

	backing_check(fs);
	if (in_readonly_view(fs, rt))
		return -EROFS;
	if (rt->kind == ROUTE_DOC)
		return -EPERM;
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EPERM; /* no device nodes in a history folder */
	return plain_make(fs, rt, mode, NULL);
}
