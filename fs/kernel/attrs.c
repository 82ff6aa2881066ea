/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * attrs.c: GETATTR and SETATTR.
 *
 * What the kernel is told of a node's attributes depends on its state
 * (states.c): a version node's never change and are kept for good; an
 * ordinary doc's are the store's, but for a process that has it open and
 * reads another version; a removed file's are its open handles'. How long
 * the kernel may keep them is kcache.c's to say.
 */
#include <errno.h>
#include <string.h>

#include "fs/kernel/kcache.h"
#include "fs/kernel/nodes.h"
#include "fs/kernel/request.h"
#include "fs/ops/ops.h"

/*
 * A doc's attributes are never cached by the kernel (timeout 0), and a
 * process that has the doc open sees the size of the version it reads, so
 * that fstat() then read() gives it one whole version.
 */
struct owner_stat {
	pid_t tgid;
	struct stat *st;
};

/* fh is the asking process's own handle: its version's attributes into *st. */
static bool getattr_if_owner(uint64_t fh, void *arg)
{
	struct owner_stat *o = arg;

	return op_getattr_if_owner(fh, o->tgid, o->st) == 0;
}

struct handle_call {
	struct fs *fs;
	const struct route *rt;
	struct stat *st;         /* getattr's; NULL for setattr */
	const struct stat *attr; /* setattr's */
	int to_set;
	int r;
};

static int setattr_route(struct fs *fs, const struct route *rt, const struct stat *attr, int to_set, struct fuse_file_info *fi);

/* A removed file's attributes, read or set through one of its handles, fh. */
static bool through_handle(uint64_t fh, void *arg)
{
	struct handle_call *c = arg;
	struct fuse_file_info any = { .fh = fh };

	c->r = c->st ? op_getattr(c->rt, c->st, &any) : setattr_route(c->fs, c->rt, c->attr, c->to_set, &any);
	return true;
}

/* What one look at a doc node's handles saw. */
struct handles_look {
	const int64_t *rev; /* the revision the store has at the path; NULL: none */
	bool any;           /* a handle is open */
	bool other;         /* one shows something else: its writer's staged bytes, another version */
};

static bool look_at_handle(uint64_t fh, void *arg)
{
	struct handles_look *l = arg;

	l->any = true;
	l->other = op_handle_shows_other(fh, l->rev);
	return l->other;
}

/*
 * The attributes of node ino at rt, asked afresh (not a version node's). A
 * doc's are the store's, but for a process that has it open and reads
 * another version (its own staged bytes, or the version it opened): that
 * one gets what its handle shows, so that fstat() then read() gives it one
 * whole version. Only when a handle shows another version is it worth
 * finding out who asks (two reads of /proc): grep's fstat of the file it
 * reads, like a stat of a doc nobody has open, costs one look at the
 * handles.
 */
static int getattr_fresh(struct fs *fs, fuse_ino_t ino, const struct route *rt, bool removed,
			 struct fuse_file_info *fi, struct stat *st)
{
	bool doc = rt->ops->versioned;

	if (doc && !fi) {
		struct owner_stat o = { .st = st };
		struct fs_proc proc;
		int64_t rev;
		int r = op_getattr_doc(rt, st, &rev);
		struct handles_look look = { .rev = r == 0 ? &rev : NULL };

		nodes_with_open(fs->nodes, ino, look_at_handle, &look);
		if (!look.any || (r == 0 && !removed && !look.other))
			return r;
		if (fs_proc_get(fs_caller_pid, &proc) == 0) {
			o.tgid = proc.tgid;
			if (nodes_with_open(fs->nodes, ino, getattr_if_owner, &o))
				return 0;
		}
	}
	if (!fi && removed) {
		/*
		 * A removed file: fstat() through one of its open handles, under
		 * the table lock so that the handle cannot be released meanwhile.
		 */
		struct handle_call c = { .fs = fs, .rt = rt, .st = st };

		if (nodes_with_open(fs->nodes, ino, through_handle, &c))
			return c.r;
		if (!doc)
			return -ESTALE;
	}
	return op_getattr(rt, st, fi);
}

static int getattr_route(struct fs *fs, fuse_ino_t ino, const struct route *rt, bool removed, struct fuse_file_info *fi,
			 struct stat *st, double *ret_timeout)
{
	int r;

	if (rt->ops->versioned && nodes_version_stat(fs->nodes, ino, st)) {
		*ret_timeout = kcache_links_timeout(st, KCACHE_VERSION_TIMEOUT);
		return 0;
	}
	r = getattr_fresh(fs, ino, rt, removed, fi, st);
	*ret_timeout = r == 0 ? kcache_attr_timeout(rt, st) : 0;
	if (fi)
		*ret_timeout = kcache_handle_timeout(rt, *ret_timeout);
	return r;
}

static int getattr_node(struct fs *fs, fuse_ino_t ino, struct fuse_file_info *fi, struct stat *st, double *ret_timeout)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	bool removed;
	int r;

	r = node_route(fs, ino, &path, &rt, &removed);
	if (r < 0)
		return r;
	return getattr_route(fs, ino, &rt, removed, fi, st, ret_timeout);
}

/* Replies to getattr and setattr: the error r, or the attributes st. */
static void reply_attr(fuse_req_t req, int r, const struct stat *st, double timeout)
{
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, st, timeout);
}

void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = begin(req);
	struct stat st;
	double timeout;
	int r;

	r = getattr_node(fs, ino, fi, &st, &timeout);
	reply_attr(req, r, &st, timeout);
}

/* Applies the attributes to_set names, from attr, to rt (or to the open file fi). */
static int setattr_route(struct fs *fs, const struct route *rt, const struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	int r = 0;

	if (to_set & FUSE_SET_ATTR_MODE)
		r = op_chmod(rt, attr->st_mode, fi);
	if (r == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = op_chown(rt, (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
			     (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1, fi);
	if (r == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		r = op_truncate(rt, attr->st_size, fi);
	if (r == 0 && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		r = op_utimens(rt, tv, fi);
	}
	return r;
}

void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	struct stat st;
	double timeout = 0; /* (used only on success, which sets it) */
	bool removed;
	int r;

	r = node_route(fs, ino, &path, &rt, &removed);
	/* (The reply's attributes, never cached, replace those the kernel kept of a version node.) */
	if (r == 0 && rt.ops->versioned)
		r = nodes_version_leave(fs->nodes, ino, to_set & FUSE_SET_ATTR_SIZE, fs_caller_pid);
	if (r == 0 && removed && !fi && !rt.ops->versioned) {
		/*
		 * A removed plain file (fchmod of an unlinked open file): its path
		 * names another file now, or none. Through one of its open handles,
		 * under the table lock so that the handle cannot be released meanwhile.
		 */
		struct handle_call c = { .fs = fs, .rt = &rt, .attr = attr, .to_set = to_set, .r = -ESTALE };

		nodes_with_open(fs->nodes, ino, through_handle, &c);
		r = c.r;
	} else if (r == 0) {
		r = setattr_route(fs, &rt, attr, to_set, fi);
	}
	if (r == 0) {
		tell_others(fs, &rt);
		r = getattr_route(fs, ino, &rt, removed, fi, &st, &timeout);
	}
	reply_attr(req, r, &st, timeout);
}
