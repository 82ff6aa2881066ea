/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lowlevel.c: the FUSE low-level interface: lookups, routes and replies.
 *
 * The kernel names files by node ids it got from lookups. This file turns
 * each request's node id into a path (through the node table, nodes.c), the
 * path into a route (route.c), calls the operation in ops.c, open.c or
 * names.c with the route, then replies exactly once, with what kcache.c
 * says the kernel may keep of the reply, and for how long.
 *
 * Why not libfuse's high-level API, which does the same: when a file is
 * replaced by a rename, the high-level API forgets the replaced node at once,
 * and an open() that looked the file up just before gets ESTALE. Cline
 * renames over its conversation files all the time while other windows read
 * them, so that race is common here. A node of nodes.c lives until the
 * kernel forgets it: a replaced doc's node keeps its last path, and opening it
 * opens the doc now at that path (whole, old or new, never torn); a removed
 * plain file's node keeps working through its open handles.
 *
 * The inode number the kernel shows (st_ino) is the backing file's, or the doc's
 * stable number from the store, so it survives remounts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/kernel/dirs.h"
#include "fs/kernel/kcache.h"
#include "fs/kernel/loop.h"
#include "fs/kernel/nodes.h"
#include "fs/kernel/watch.h"
#include "fs/ops/ops.h"
#include "fs/view/view.h"
#include "store/store_changes.h"
#include "store/util.h"

struct fs *fs_current;
__thread pid_t fs_caller_pid;
__thread uid_t fs_caller_uid;
__thread gid_t fs_caller_gid;

/* Whether the take-in goes on (fs_take_in_begin()). */
static bool taking_in(void)
{
	struct take_in *t = fs_current->take_in;

	return t && !fs_take_in_done(t);
}

/*
 * While the take-in goes on (fs_take_in_begin()), a request waits here
 * until what it touches at path was looked at underneath (listing: path's
 * listing). 0, or -EIO: the take-in failed.
 */
static int wait_taken_in(const char *path, bool listing)
{
	struct route rt;

	if (!taking_in())
		return 0;
	route_resolve(fs_current, path, &rt);
	return fs_take_in_wait(fs_current->take_in, rt.rel, rt.kind == ROUTE_VIEW, listing);
}

/*
 * The path of ino (plus "/name"), as nodes_path(); names the kernel must not
 * reach refused. Waits for the take-in where it must (wait_taken_in()).
 */
static int path_of(fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed)
{
	int r;

	if (name && (strlen(name) > NAME_MAX))
		return -ENAMETOOLONG;
	/* The root's .convfs-* entries are convfs's own (the trash's folders). */
	if (name && ino == FUSE_ROOT_ID && strncmp(name, ".convfs-", 8) == 0)
		return -ENOENT;
	r = nodes_path(ino, name, out, ret_removed);
	return r < 0 ? r : wait_taken_in(out->buf, false);
}

/* The route of a path path_of() made: resolved into *rt, which it returns. */
static const struct route *route_of(const struct sb *path, struct route *rt)
{
	route_resolve(fs_current, path->buf, rt);
	return rt;
}

/* The path of node ino and its route, resolved into *rt. */
static int node_route(fuse_ino_t ino, struct sb *path, struct route *rt, bool *ret_removed)
{
	int r = path_of(ino, NULL, path, ret_removed);

	if (r == 0)
		route_resolve(fs_current, path->buf, rt);
	return r;
}

/*
 * A plain path this request changed (made, removed, renamed, its attributes
 * set): while other daemons serve the store, they are told, so that their
 * kernels drop what they keep of it (fs/kernel/watch.c).
 */
static void tell_others(const struct route *rt)
{
	int r;

	if (rt->kind != ROUTE_PLAIN || !watch_peers(fs_current))
		return;
	r = store_plain_changed(fs_current->store, rt->rel);
	if (r < 0)
		log_warn("cannot tell the other mounts of the store that '%s' changed: %s; they may show it as it was "
			 "for a while", rt->rel, strerror(-r));
}

static void begin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	fs_caller_pid = ctx->pid;
	fs_caller_uid = ctx->uid;
	fs_caller_gid = ctx->gid;
}

/* ---- entries ------------------------------------------------------------------ */

/*
 * A doc looked up: its node stands for the revision it has now (nodes.h), so
 * the kernel keeps its attributes and pages for good and reads it through its
 * page cache (op_open_version()). The entry is kept only until the next
 * change of any doc (a new epoch), or not at all on a kernel without epochs:
 * a path walk after a commit asks again and gets the new version's node. That
 * is what makes "right after a commit returns, stat and read show the new
 * version" hold without telling the kernel about any node.
 */
static void reply_version_entry(fuse_req_t req, fuse_ino_t parent, const char *name, const struct route *rt)
{
	struct fuse_entry_param e = { 0 };
	int64_t rev;
	bool version;
	int r = op_getattr_doc(rt, &e.attr, &rev);

	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/* (A doc has a revision from its first commit on: rev 0 would be no version.) */
	version = rev > 0;
	e.ino = version ? nodes_lookup_version(parent, name, rev, &e.attr, &version)
			: nodes_lookup(parent, name, e.attr.st_mode, NULL);
	if (!e.ino) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	kcache_doc_entry(&e, version);
	if (fuse_reply_entry(req, &e) == -ENOENT) /* interrupted: the kernel never knew the node */
		nodes_lookup_undo(e.ino, NULL);
}

/*
 * The attributes and timeouts of the entry at path, rt (not a doc's, whose
 * nodes stand for versions: reply_version_entry()); through handle fi if
 * not NULL. 0 or a negative errno.
 */
static int entry_param(const struct route *rt, const char *path, struct fuse_file_info *fi,
		       struct fuse_entry_param *e)
{
	int r = op_getattr(rt, &e->attr, fi);

	if (r < 0)
		return r;
	kcache_entry(fs_current, rt, path, e);
	if (fi)
		e->attr_timeout = kcache_handle_timeout(rt, e->attr_timeout);
	return 0;
}

/*
 * Replies with the entry parent/name, whose path is path, counting a lookup.
 * After a request that made it (mkdir, create, ...), what stands at path now
 * is looked up afresh.
 */
static void reply_entry_at(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path,
			   struct fuse_file_info *fi)
{
	struct fuse_entry_param e = { 0 };
	struct route rt;
	int r;

	route_resolve(fs_current, path, &rt);
	if (rt.kind == ROUTE_DOC && !fi) {
		reply_version_entry(req, parent, name, &rt);
		return;
	}
	r = entry_param(&rt, path, fi, &e);
	if (r < 0) {
		if (fi)
			op_release(fi);
		fuse_reply_err(req, -r);
		return;
	}
	e.ino = nodes_lookup(parent, name, e.attr.st_mode, fi ? &fi->fh : NULL);
	if (!e.ino) {
		if (fi)
			op_release(fi);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/*
	 * -ENOENT: the request was interrupted, and the kernel will never know
	 * the node or the handle: neither may outlive the reply (the handle
	 * holds an fd, and the node its lookup).
	 */
	if (fi) {
		if (fuse_reply_create(req, &e, fi) == -ENOENT) {
			log_debug("create of '%s' was interrupted", path);
			nodes_lookup_undo(e.ino, &fi->fh);
			op_release(fi);
		}
	} else if (fuse_reply_entry(req, &e) == -ENOENT) {
		nodes_lookup_undo(e.ino, NULL);
	}
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	reply_entry_at(req, parent, name, path.buf, NULL);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	nodes_forget(ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		nodes_forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- attributes --------------------------------------------------------------- */

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
	const struct route *rt;
	struct stat *st;         /* getattr's; NULL for setattr */
	const struct stat *attr; /* setattr's */
	int to_set;
	int r;
};

static int setattr_route(const struct route *rt, const struct stat *attr, int to_set, struct fuse_file_info *fi);

/* A removed file's attributes, read or set through one of its handles, fh. */
static bool through_handle(uint64_t fh, void *arg)
{
	struct handle_call *c = arg;
	struct fuse_file_info any = { .fh = fh };

	c->r = c->st ? op_getattr(c->rt, c->st, &any) : setattr_route(c->rt, c->attr, c->to_set, &any);
	return true;
}

/* The attributes of node ino at rt, asked afresh (not a version node's). */
static int getattr_fresh(fuse_ino_t ino, const struct route *rt, bool removed, struct fuse_file_info *fi,
			 struct stat *st)
{
	bool doc = rt->kind == ROUTE_DOC;

	if (doc && !fi) {
		struct owner_stat o = { .st = st };
		struct fs_proc proc;
		int64_t rev;

		/*
		 * Only a doc that is open needs to know who asks (two reads of
		 * /proc): nodes_with_open() answers at once for one that is not.
		 * Nor does one whose every handle shows the version stored now
		 * (grep's fstat of the file it reads): all get the same answer.
		 */
		if (!nodes_with_open(ino, NULL, NULL))
			return op_getattr(rt, st, NULL);
		if (!removed && !nodes_with_open(ino, op_handle_shows_other, NULL) && op_getattr_doc(rt, st, &rev) == 0 &&
		    !nodes_with_open(ino, op_handle_shows_other, &rev))
			return 0;
		if (fs_proc_get(fs_caller_pid, &proc) == 0) {
			o.tgid = proc.tgid;
			if (nodes_with_open(ino, getattr_if_owner, &o))
				return 0;
		}
	}
	if (!fi && removed) {
		/*
		 * A removed file: fstat() through one of its open handles, under
		 * the table lock so that the handle cannot be released meanwhile.
		 */
		struct handle_call c = { .rt = rt, .st = st };

		if (nodes_with_open(ino, through_handle, &c))
			return c.r;
		if (!doc)
			return -ESTALE;
	}
	return op_getattr(rt, st, fi);
}

static int getattr_route(fuse_ino_t ino, const struct route *rt, bool removed, struct fuse_file_info *fi,
			 struct stat *st, double *ret_timeout)
{
	int r;

	if (rt->kind == ROUTE_DOC && nodes_version_stat(ino, st)) {
		*ret_timeout = kcache_links_timeout(st, KCACHE_VERSION_TIMEOUT);
		return 0;
	}
	r = getattr_fresh(ino, rt, removed, fi, st);
	*ret_timeout = r == 0 ? kcache_attr_timeout(rt, st) : 0;
	if (fi)
		*ret_timeout = kcache_handle_timeout(rt, *ret_timeout);
	return r;
}

static int getattr_node(fuse_ino_t ino, struct fuse_file_info *fi, struct stat *st, double *ret_timeout)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	bool removed;
	int r;

	r = node_route(ino, &path, &rt, &removed);
	if (r < 0)
		return r;
	return getattr_route(ino, &rt, removed, fi, st, ret_timeout);
}

/* Replies to getattr and setattr: the error r, or the attributes st. */
static void reply_attr(fuse_req_t req, int r, const struct stat *st, double timeout)
{
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, st, timeout);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	double timeout;
	int r;

	begin(req);
	r = getattr_node(ino, fi, &st, &timeout);
	reply_attr(req, r, &st, timeout);
}

/* Applies the attributes to_set names, from attr, to rt (or to the open file fi). */
static int setattr_route(const struct route *rt, const struct stat *attr, int to_set, struct fuse_file_info *fi)
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

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	struct stat st;
	double timeout;
	bool removed;
	int r;

	begin(req);
	r = node_route(ino, &path, &rt, &removed);
	/* (The reply's attributes, never cached, replace those the kernel kept of a version node.) */
	if (r == 0 && rt.kind == ROUTE_DOC)
		r = nodes_version_leave(ino, to_set & FUSE_SET_ATTR_SIZE, fs_caller_pid);
	if (r == 0 && removed && !fi && rt.kind != ROUTE_DOC) {
		/*
		 * A removed plain file (fchmod of an unlinked open file): its path
		 * names another file now, or none. Through one of its open handles,
		 * under the table lock so that the handle cannot be released meanwhile.
		 */
		struct handle_call c = { .rt = &rt, .attr = attr, .to_set = to_set, .r = -ESTALE };

		nodes_with_open(ino, through_handle, &c);
		r = c.r;
	} else if (r == 0) {
		r = setattr_route(&rt, attr, to_set, fi);
	}
	if (r == 0) {
		tell_others(&rt);
		r = getattr_route(ino, &rt, removed, fi, &st, &timeout);
	}
	reply_attr(req, r, &st, timeout);
}

/* ---- names -------------------------------------------------------------------- */

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	char buf[PATH_MAX + 1];
	int r;

	begin(req);
	r = node_route(ino, &path, &rt, NULL);
	if (r == 0)
		r = op_readlink(&rt, buf, sizeof(buf));
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, buf);
}

/* What a request that makes a name makes there: the arguments of its op. */
struct make {
	enum { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK, MAKE_FILE } what;
	mode_t mode;
	dev_t rdev;
	const char *target;
	struct fuse_file_info *fi; /* create's: the file is made open */
};

/* Makes parent/name as m says (mknod, mkdir, symlink, create), then replies with its entry. */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name, const struct make *m)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0) {
		route_of(&path, &rt);
		switch (m->what) {
		case MAKE_NODE:
			r = op_mknod(&rt, m->mode, m->rdev);
			break;
		case MAKE_DIR:
			r = op_mkdir(&rt, m->mode);
			break;
		case MAKE_SYMLINK:
			r = op_symlink(m->target, &rt);
			break;
		case MAKE_FILE:
			r = op_create(&rt, m->mode, m->fi);
			break;
		}
	}
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	tell_others(&rt);
	reply_entry_at(req, parent, name, path.buf, m->fi);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, &(struct make){ .what = MAKE_NODE, .mode = mode, .rdev = rdev });
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_entry(req, parent, name, &(struct make){ .what = MAKE_DIR, .mode = mode });
}

static void ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	make_entry(req, parent, name, &(struct make){ .what = MAKE_SYMLINK, .target = target });
}

/* The paths and routes of both sides of a link or rename: from (a node, or a node's name) and to. */
static int two_routes(fuse_ino_t ino, const char *name, fuse_ino_t newparent, const char *newname,
		      struct sb *from, struct sb *to, struct route *rf, struct route *rt)
{
	int r = path_of(ino, name, from, NULL);

	if (r == 0)
		r = path_of(newparent, newname, to, NULL);
	if (r == 0) {
		route_of(from, rf);
		route_of(to, rt);
	}
	return r;
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	_cleanup_sb_ struct sb from = SB_INIT, to = SB_INIT;
	struct route rf, rt;
	int r;

	begin(req);
	r = two_routes(ino, NULL, parent, name, &from, &to, &rf, &rt);
	if (r == 0)
		r = op_link(&rf, &rt);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	tell_others(&rf);
	tell_others(&rt);
	/*
	 * The new name is a new node (kcache_links_timeout()): the kernel's attributes
	 * of the old one (its link count, its ctime) are stale now. Dropped
	 * before the reply, so that a stat after link() returns asks afresh.
	 */
	kcache_drop_attrs(ino);
	reply_entry_at(req, parent, name, to.buf, NULL);
}

/* Removes parent/name, a folder's (rmdir) or another's (unlink); replies. */
static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, bool folder)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = folder ? op_rmdir(route_of(&path, &rt)) : op_unlink(route_of(&path, &rt));
	if (r == 0) {
		nodes_removed(parent, name);
		tell_others(&rt);
	}
	kcache_placement_check(fs_current);
	fuse_reply_err(req, -r);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, false);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, true);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	_cleanup_sb_ struct sb from = SB_INIT, to = SB_INIT;
	struct route rf, rt;
	int r;

	begin(req);
	r = two_routes(parent, name, newparent, newname, &from, &to, &rf, &rt);
	if (r == 0)
		r = op_rename(&rf, &rt, flags);
	if (r == 0) {
		nodes_renamed(parent, name, newparent, newname, flags & RENAME_EXCHANGE);
		tell_others(&rf);
		tell_others(&rt);
	}
	kcache_placement_check(fs_current);
	fuse_reply_err(req, -r);
}

/* ---- files -------------------------------------------------------------------- */

/*
 * A reader of ino, a version node of revision ver, found its doc changed since
 * the lookup. It reads that version too if a handle open on the node does
 * (their snapshot shared); else, once the other opens under way on the node
 * have ended (one of them may record such a handle), an ordinary doc handle
 * on the doc as it is now (the node leaves). -ESTALE only if a
 * handle open on the node has no copy of its version to share, which a
 * reader's always has.
 */
static int open_stale_version(fuse_ino_t ino, const struct route *rt, int64_t ver, struct fuse_file_info *fi)
{
	bool again = false;
	int r;

	do {
		struct op_version_snap v = { .ver = ver };

		if (nodes_with_open(ino, op_version_snap, &v))
			return v.r < 0 ? v.r : op_open_version_snap(rt, v.snap, fi);
		r = nodes_open_stale(ino, fs_caller_pid, again, NULL);
		again = true;
	} while (r == -EAGAIN);
	return r < 0 ? r : op_open(rt, fi);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	bool writes = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC), removed;
	int64_t ver = 0;
	int r;

	begin(req);
	r = node_route(ino, &path, &rt, &removed);
	/* A replaced doc opens as the doc now at its path; a replaced plain file is gone. */
	if (r == 0 && removed && rt.kind != ROUTE_DOC)
		r = -ESTALE;
	if (r == 0)
		r = nodes_open_begin(ino, writes, fs_caller_pid, &ver, NULL);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	r = ver ? op_open_version(&rt, ver, fi) : op_open(&rt, fi);
	if (r == -ESTALE && ver)
		r = open_stale_version(ino, &rt, ver, fi);
	if (r == 0 && nodes_open_end(ino, &fi->fh) < 0) {
		op_release(fi);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (r < 0) {
		nodes_open_end(ino, NULL);
		fuse_reply_err(req, -r);
		return;
	}
	/* A handle that cannot write commits nothing at close: no FLUSH round trip (FOPEN_NOFLUSH). */
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* The caller was interrupted: nobody will release this handle. */
		nodes_open_remove(ino, fi->fh);
		op_release(fi);
	}
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	make_entry(req, parent, name, &(struct make){ .what = MAKE_FILE, .mode = mode, .fi = fi });
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	_cleanup_free_ char *buf = malloc(size ? size : 1);
	int r;

	begin(req);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r = op_read(buf, size, off, fi);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
}

static void ll_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	int r;

	begin(req);
	r = op_write_buf(bufv, off, fi);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, (size_t)r);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	begin(req);
	fuse_reply_err(req, -op_flush(fi));
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	begin(req);
	nodes_open_remove(ino, fi->fh);
	op_release(fi);
	fuse_reply_err(req, 0);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	begin(req);
	fuse_reply_err(req, -op_fsync(datasync, fi));
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	begin(req);
	fuse_reply_err(req, -op_fallocate(mode, off, len, fi));
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int r;

	begin(req);
	r = op_statfs(&sv);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_statfs(req, &sv);
}

/* ---- directories -------------------------------------------------------------- */

/* The listing is read whole at opendir, so that readdir offsets stay stable (dirs.c). */
/*
 * Declined: the kernel then opens every folder itself, from now on, keeping
 * the listing it reads of each (FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR) and
 * sending no OPENDIR or RELEASEDIR: a walk of unchanged folders (find,
 * ls -lR, rsync) asks the daemon nothing. A listing goes when the kernel
 * sees the folder change through the mount, when the folder's mtime moves,
 * or when convfs tells it (kcache.c: a commit, a task that moved); dirs.c
 * makes one when the kernel asks for it.
 */
static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

/* The listing a readdir of ino from off reads, with a reference; NULL once the error is replied. */
static struct dir_listing *listing_of(fuse_req_t req, fuse_ino_t ino, off_t off)
{
	struct dir_listing *l = dir_listing_find(ino, off);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	if (l)
		return l;
	r = node_route(ino, &path, &rt, NULL);
	if (r == 0)
		r = wait_taken_in(path.buf, true);
	if (r == 0)
		r = dir_listing_new(ino, &rt, &l);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return NULL;
	}
	return l;
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dir_listing *l;

	(void)fi;
	begin(req);
	if ((l = listing_of(req, ino, off)))
		dir_reply(req, l, size, off);
}

/*
 * An entry of a READDIRPLUS reply (dir_entry_fn): the node and attributes a
 * LOOKUP of it would give, for an entry the kernel may keep (a folder, a
 * plain file), so that a walk (grep -r, find, ls -lR) does not look each one
 * up. Not for a doc: the kernel stamps an entry a READDIRPLUS reply brings
 * with the epoch of the moment it takes the reply in, not of when its
 * request began as for a LOOKUP, so a commit in between would leave the
 * entry of the doc's old version node standing (kcache_doc_entry()). A doc,
 * "." and "..", whatever the kernel would not keep, and every entry while
 * the take-in goes on (the mount is ready before it ends) go as bare names.
 */
static bool plus_entry(fuse_ino_t parent, const char *name, struct fuse_entry_param *e)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;

	/* While the take-in goes on, an entry's attributes would wait for it: bare, looked up when used. */
	if (taking_in())
		return false;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || path_of(parent, name, &path, NULL) < 0)
		return false;
	route_resolve(fs_current, path.buf, &rt);
	if (rt.kind == ROUTE_DOC || entry_param(&rt, path.buf, NULL, e) < 0 || e->entry_timeout <= 0)
		return false;
	e->ino = nodes_lookup(parent, name, e->attr.st_mode, NULL);
	return e->ino != 0;
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dir_listing *l;

	(void)fi;
	begin(req);
	if ((l = listing_of(req, ino, off)))
		dir_reply_plus(req, l, size, off, plus_entry);
}

/* ---- control ---------------------------------------------------------------- */

/* Only FS_XATTR_RESTORE means anything (control.c): the mount keeps no xattrs. */
static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	(void)flags;
	begin(req);
	r = node_route(ino, &path, &rt, NULL);
	if (r == 0)
		r = op_setxattr(&rt, name, value, size);
	fuse_reply_err(req, -r);
}

/* The session ends (no request runs any more): frees the listings still kept. */
static void ll_destroy(void *userdata)
{
	dir_release_all();
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	/* O_TRUNC arrives with open, not as a separate truncate. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/*
	 * Every piece of a listing as READDIRPLUS: grep -r, find and ls -lR read
	 * a whole listing before they look at an entry, and the kernel's own
	 * choice (the first piece only, unless lookups came meanwhile) would
	 * leave them a lookup a folder.
	 */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* A write's bytes are taken by splice() into a pipe, which must hold the largest (loop.c). */
	if (conn->max_write > loop_max_write())
		conn->max_write = (unsigned)loop_max_write();
	kcache_init(conn);
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
	.destroy = ll_destroy,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readlink = ll_readlink,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_rmdir,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.open = ll_open,
	.read = ll_read,
	.write_buf = ll_write_buf,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.readdirplus = ll_readdirplus,
	.statfs = ll_statfs,
	.create = ll_create,
	.fallocate = ll_fallocate,
	.setxattr = ll_setxattr,
};

struct fuse_session *ll_session_new(struct fuse_args *args, struct fs *fs)
{
	fs_current = fs;
	struct fuse_session *se = fuse_session_new(args, &ll_ops, sizeof(ll_ops), fs);

	kcache_session_set(se);
	/* A version node that becomes ordinary: the kernel's attributes of it, kept for good, go first. */
	nodes_set_left_hook(kcache_drop_attrs);
	return se;
}

void ll_session_forget(void)
{
	kcache_session_set(NULL);
}
