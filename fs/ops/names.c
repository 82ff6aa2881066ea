/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * names.c: unlink, rename, link, symlink, readlink and mknod.
 *
 * A rename of a plain temp file over a doc commits the temp file's bytes as
 * one revision (Cline's temp + rename), merged like a write; a rename of a
 * doc out of the compat tree writes it out as a plain file; everything else
 * that moves is a rename in the backing tree, through parent fds. A rename
 * is between two kinds: the order in which the pair is settled (the
 * source's rename_from, the target's rename_to, then the two classes) is
 * written down in kinds.h, and op_rename() follows it.
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
#include "store/util.h"

int path_plain_unlink(const struct route *rt)
{
	struct fs *fs = rt->fs;
	const char *leaf;
	int dfd = plain_open_parent(fs, rt->rel, &leaf), res;

	if (dfd < 0)
		return dfd;
	res = unlinkat(dfd, leaf, 0) < 0 ? plain_fail("remove", rt->rel, errno) : 0;
	close(dfd);
	return res;
}

int path_doc_unlink(const struct route *rt)
{
	return doc_remove_by_caller(rt->fs, rt->rel, "unlink");
}

int op_unlink(const struct route *rt)
{
	if (path_readonly(rt))
		return -EROFS;
	return rt->ops->unlink ? rt->ops->unlink(rt) : path_default(rt, -EPERM);
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

/* True for the classes of the view's names. */
static bool view_class(enum path_class c)
{
	return c == PATH_CLASS_VIEW || c == PATH_CLASS_VIEW_TASK;
}

int path_rename_by_class(const struct route *rf, enum path_class from, const struct route *rt, enum path_class to,
			 unsigned int flags)
{
	struct fs *fs = rt->fs;
	int r;

	if (from == PATH_CLASS_VIEW_TASK || to == PATH_CLASS_VIEW_TASK)
		return -EXDEV; /* mv copies a task's files, which the view takes as a new task's */
	if (view_class(from) || view_class(to))
		return -EPERM;
	/* Folders that hold docs move by copy: mv falls back on EXDEV. */
	if (from == PATH_CLASS_DOC_FOLDER || to == PATH_CLASS_DOC_FOLDER)
		return -EXDEV;
	if (from == PATH_CLASS_DOC || to == PATH_CLASS_DOC) {
		if (flags & RENAME_EXCHANGE)
			return -EINVAL;
		if (from == PATH_CLASS_DOC && to == PATH_CLASS_DOC)
			return strcmp(rf->rel, rt->rel) == 0 ? 0 : -EXDEV;
		return to == PATH_CLASS_DOC ? rename_in(fs, rf->rel, rt->rel, flags, NULL)
					    : rename_out(fs, rf->rel, rt->rel, flags);
	}
	r = plain_rename(fs, rf->rel, rt->rel, flags);
	return r < 0 ? plain_fail("rename", rf->rel, -r) : 0;
}

/* The order in which a pair is settled is kinds.h's. */
int op_rename(const struct route *rf, const struct route *rt, unsigned int flags)
{
	int r;

	backing_check(rt->fs);
	if (path_readonly(rf) || path_readonly(rt))
		return -EROFS;
	if (rf->ops->rename_from && (r = rf->ops->rename_from(rf, rt, flags)) != PATH_PASS)
		return r;
	if (rt->ops->rename_to && (r = rt->ops->rename_to(rf, rt, flags)) != PATH_PASS)
		return r;
	return path_rename_by_class(rf, rf->ops->cls, rt, rt->ops->cls, flags);
}

int path_missing_rename_from(const struct route *rf, const struct route *rt, unsigned int flags)
{
	return rf->err == -ENOENT ? PATH_PASS : rf->err;
}

int path_missing_rename_to(const struct route *rf, const struct route *rt, unsigned int flags)
{
	int r;

	if (view_class(rf->ops->cls))
		return PATH_PASS;
	r = path_client_folder(rt); /* the client's first entry of its own in workspaces/ */
	return r < 0 ? r : PATH_PASS;
}

int path_top_rename_to(const struct route *rf, const struct route *rt, unsigned int flags)
{
	int r;

	if (view_class(rf->ops->cls))
		return PATH_PASS;
	/* A client's entry renamed onto a view folder's name wins: the view's moves aside. */
	if (flags & RENAME_NOREPLACE)
		return -EEXIST;
	r = path_client_folder(rt);
	return r < 0 ? r : path_rename_by_class(rf, rf->ops->cls, rt, PATH_CLASS_PLAIN, flags);
}

int path_history_rename_to(const struct route *rf, const struct route *rt, unsigned int flags)
{
	if (!rf->ops->backing)
		return PATH_PASS;
	return rename_in(rt->fs, rf->rel, rt->rel, flags, rt->vp.unknown ? "" : rt->vp.key);
}

int op_link(const struct route *rf, const struct route *rt)
{
	struct fs *fs = rt->fs;
	int r;

	backing_check(fs);
	if (path_readonly(rf) || path_readonly(rt))
		return -EROFS;
	if (rf->ops->cls == PATH_CLASS_DOC || rt->ops->cls == PATH_CLASS_DOC)
		return -EPERM; /* a doc has exactly one name */
	r = path_made_in(rt, "link");
	if (r == 0)
		r = shares_space(fs->shares, fs_caller_uid, 0);
	if (r < 0)
		return r;
	r = plain_link(fs, rf->rel, rt->rel);
	return r < 0 ? plain_fail("link", rf->rel, -r) : 0;
}

int op_symlink(const char *target, const struct route *rt)
{
	struct fs *fs = rt->fs;

	backing_check(fs);
	if (path_readonly(rt))
		return -EROFS;
	return rt->ops->symlink ? rt->ops->symlink(rt, target) : plain_make(fs, rt, S_IFLNK, target);
}

int path_plain_readlink(const struct route *rt, char *buf, size_t size)
{
	struct fs *fs = rt->fs;
	const char *leaf;
	ssize_t n;
	int dfd;

	dfd = plain_open_parent(fs, rt->rel, &leaf);
	if (dfd < 0)
		return dfd;
	n = readlinkat(dfd, leaf, buf, size - 1);
	close(dfd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int op_readlink(const struct route *rt, char *buf, size_t size)
{
	return rt->ops->readlink ? rt->ops->readlink(rt, buf, size) : -EINVAL;
}

int op_mknod(const struct route *rt, mode_t mode, dev_t rdev)
{
	struct fs *fs = rt->fs;

	backing_check(fs);
	if (path_readonly(rt))
		return -EROFS;
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EPERM; /* no device nodes in a history folder */
	return rt->ops->mknod ? rt->ops->mknod(rt, mode) : plain_make(fs, rt, mode, NULL);
}
