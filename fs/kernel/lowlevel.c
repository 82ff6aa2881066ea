/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lowlevel.c: the FUSE low-level interface: lookups, routes and replies.
 *
 * The kernel names files by node ids it got from lookups. Each handler here
 * (and in attrs.c, for attributes) finds the mount the request asks and
 * turns its node id into a path (through the mount's node table, nodes.c;
 * request.c), the path into a route (route.c), asks the node's state where
 * it matters (states.c), calls the operation in ops.c, open.c or names.c
 * with the route, then replies exactly once, with what kcache.c says the
 * kernel may keep of the reply, and for how long.
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
#include "fs/kernel/request.h"
#include "fs/kernel/watch.h"
#include "fs/ops/ops.h"
#include "fs/view/view.h"
#include "store/store_changes.h"
#include "store/util.h"


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
	struct fs *fs = fuse_req_userdata(req);
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
	e.ino = version ? nodes_lookup_version(fs->nodes, parent, name, rev, &e.attr, &version)
			: nodes_lookup(fs->nodes, parent, name, e.attr.st_mode, NULL);
	if (!e.ino) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	kcache_doc_entry(fs, &e, version);
	if (fuse_reply_entry(req, &e) == -ENOENT) /* interrupted: the kernel never knew the node */
		nodes_lookup_undo(fs->nodes, e.ino, NULL);
}

/*
 * The attributes and timeouts of the entry at path, rt (not a doc's, whose
 * nodes stand for versions: reply_version_entry()); through handle fi if
 * not NULL. 0 or a negative errno.
 */
static int entry_param(struct fs *fs, const struct route *rt, const char *path, struct fuse_file_info *fi,
		       struct fuse_entry_param *e)
{
	int r = op_getattr(rt, &e->attr, fi);

	if (r < 0)
		return r;
	kcache_entry(rt, e);
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
	struct fs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e = { 0 };
	struct route rt;
	int r;

	route_resolve(fs, path, &rt);
	if (rt.ops->versioned && !fi) {
		reply_version_entry(req, parent, name, &rt);
		return;
	}
	r = entry_param(fs, &rt, path, fi, &e);
	if (r < 0) {
		if (fi)
			op_release(fi);
		fuse_reply_err(req, -r);
		return;
	}
	e.ino = nodes_lookup(fs->nodes, parent, name, e.attr.st_mode, fi ? &fi->fh : NULL);
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
			nodes_lookup_undo(fs->nodes, e.ino, &fi->fh);
			op_release(fi);
		}
	} else if (fuse_reply_entry(req, &e) == -ENOENT) {
		nodes_lookup_undo(fs->nodes, e.ino, NULL);
	}
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	int r;

	r = path_of(fs, parent, name, &path, NULL);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	reply_entry_at(req, parent, name, path.buf, NULL);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fuse_req_userdata(req);

	nodes_forget(fs->nodes, ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++)
		nodes_forget(fs->nodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- names -------------------------------------------------------------------- */

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	char buf[PATH_MAX + 1];
	int r;

	r = node_route(fs, ino, &path, &rt, NULL);
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
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	r = path_of(fs, parent, name, &path, NULL);
	if (r == 0) {
		route_of(fs, &path, &rt);
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
	tell_others(fs, &rt);
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
static int two_routes(struct fs *fs, fuse_ino_t ino, const char *name, fuse_ino_t newparent, const char *newname,
		      struct sb *from, struct sb *to, struct route *rf, struct route *rt)
{
	int r = path_of(fs, ino, name, from, NULL);

	if (r == 0)
		r = path_of(fs, newparent, newname, to, NULL);
	if (r == 0) {
		route_of(fs, from, rf);
		route_of(fs, to, rt);
	}
	return r;
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb from = SB_INIT, to = SB_INIT;
	struct route rf, rt;
	int r;

	r = two_routes(fs, ino, NULL, parent, name, &from, &to, &rf, &rt);
	if (r == 0)
		r = op_link(&rf, &rt);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	tell_others(fs, &rf);
	tell_others(fs, &rt);
	/*
	 * The new name is a new node (kcache_links_timeout()): the kernel's attributes
	 * of the old one (its link count, its ctime) are stale now. Dropped
	 * before the reply, so that a stat after link() returns asks afresh.
	 */
	kcache_drop_attrs(fs, ino);
	reply_entry_at(req, parent, name, to.buf, NULL);
}

/* Removes parent/name, a folder's (rmdir) or another's (unlink); replies. */
static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, bool folder)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	r = path_of(fs, parent, name, &path, NULL);
	if (r == 0)
		r = folder ? op_rmdir(route_of(fs, &path, &rt)) : op_unlink(route_of(fs, &path, &rt));
	if (r == 0) {
		nodes_removed(fs->nodes, parent, name);
		tell_others(fs, &rt);
	}
	kcache_placement_check(fs);
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
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb from = SB_INIT, to = SB_INIT;
	struct route rf, rt;
	int r;

	r = two_routes(fs, parent, name, newparent, newname, &from, &to, &rf, &rt);
	if (r == 0)
		r = op_rename(&rf, &rt, flags);
	if (r == 0) {
		nodes_renamed(fs->nodes, parent, name, newparent, newname, flags & RENAME_EXCHANGE);
		tell_others(fs, &rf);
		tell_others(fs, &rt);
	}
	kcache_placement_check(fs);
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
 *
 * Not so while other daemons serve the store (share false): a change made
 * through one of them reaches this kernel only when the watcher tells it, a
 * moment after that change returned, so the reader's lookup may have found
 * the old version in the kernel's cache though its open began after the
 * change. It must not read the old version then: it gets the doc as it is
 * now, through an ordinary node, and if others have the version node open
 * (their pages and size stay the old version's), through -ESTALE: the kernel
 * looks the name up again and retries once, finding an ordinary node kept
 * at the name for this thread (nodes_open_stale() with again).
 */
static int open_stale_version(struct fs *fs, fuse_ino_t ino, const struct route *rt, int64_t ver,
			      struct fuse_file_info *fi, bool share)
{
	bool again = !share;
	int r;

	do {
		struct op_version_snap v = { .ver = ver };

		if (share && nodes_with_open(fs->nodes, ino, op_version_snap, &v))
			return v.r < 0 ? v.r : op_open_version_snap(rt, v.snap, fi);
		r = nodes_open_stale(fs->nodes, ino, fs_caller_pid, again, NULL);
		again = true;
	} while (r == -EAGAIN);
	return r < 0 ? r : op_open(rt, fi);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	bool writes = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC), removed, peers;
	int64_t ver = 0;
	int r;

	r = node_route(fs, ino, &path, &rt, &removed);
	/* A replaced doc opens as the doc now at its path; a replaced plain file is gone. */
	if (r == 0 && removed && !rt.ops->versioned)
		r = -ESTALE;
	if (r == 0)
		r = nodes_open_begin(fs->nodes, ino, writes, fs_caller_pid, &ver, NULL);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/*
	 * While other daemons serve the store, a reader of a version node reads
	 * what the store holds now (a blob kept open for reads would show this
	 * daemon an older snapshot), and never an older version than the
	 * store's (open_stale_version()).
	 */
	peers = ver && watch_peers(fs) > 0;
	if (peers)
		store_read_anew(fs->store);
	r = ver ? op_open_version(&rt, ver, fi) : op_open(&rt, fi);
	if (r == -ESTALE && ver)
		r = open_stale_version(fs, ino, &rt, ver, fi, !peers);
	if (r == 0 && nodes_open_end(fs->nodes, ino, &fi->fh) < 0) {
		op_release(fi);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (r < 0) {
		nodes_open_end(fs->nodes, ino, NULL);
		fuse_reply_err(req, -r);
		return;
	}
	/* A handle that cannot write commits nothing at close: no FLUSH round trip (FOPEN_NOFLUSH). */
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* The caller was interrupted: nobody will release this handle. */
		nodes_open_remove(fs->nodes, ino, fi->fh);
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
	struct fs *fs = begin(req);

	nodes_open_remove(fs->nodes, ino, fi->fh);
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
	struct fs *fs = begin(req);
	struct statvfs sv;
	int r;

	r = op_statfs(fs, &sv);
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
	struct fs *fs = fuse_req_userdata(req);
	struct dir_listing *l = dir_listing_find(fs->dirs, ino, off);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	if (l)
		return l;
	r = node_route(fs, ino, &path, &rt, NULL);
	if (r == 0)
		r = wait_taken_in(fs, path.buf, true);
	if (r == 0)
		r = dir_listing_new(fs->dirs, ino, &rt, &l);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return NULL;
	}
	return l;
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = begin(req);
	struct dir_listing *l;

	(void)fi;
	if ((l = listing_of(req, ino, off)))
		dir_reply(fs->dirs, req, l, size, off);
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
static bool plus_entry(void *arg, fuse_ino_t parent, const char *name, struct fuse_entry_param *e)
{
	struct fs *fs = arg;
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;

	/* While the take-in goes on, an entry's attributes would wait for it: bare, looked up when used. */
	if (taking_in(fs))
		return false;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || path_of(fs, parent, name, &path, NULL) < 0)
		return false;
	route_resolve(fs, path.buf, &rt);
	if (rt.ops->versioned || entry_param(fs, &rt, path.buf, NULL, e) < 0 || e->entry_timeout <= 0)
		return false;
	e->ino = nodes_lookup(fs->nodes, parent, name, e->attr.st_mode, NULL);
	return e->ino != 0;
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = begin(req);
	struct dir_listing *l;

	(void)fi;
	if ((l = listing_of(req, ino, off)))
		dir_reply_plus(fs->dirs, req, l, size, off, plus_entry, fs);
}

/* ---- control ---------------------------------------------------------------- */

/* Only FS_XATTR_RESTORE means anything (control.c): the mount keeps no xattrs. */
static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	struct fs *fs = begin(req);
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	(void)flags;
	r = node_route(fs, ino, &path, &rt, NULL);
	if (r == 0)
		r = op_setxattr(&rt, name, value, size);
	fuse_reply_err(req, -r);
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

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
	kcache_init(fs, conn);
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
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

/* A version node that leaves: the kernel's attributes of it, kept for good, go first (states.c). */
static void node_left(void *arg, fuse_ino_t ino)
{
	kcache_drop_attrs(arg, ino);
}

struct fuse_session *ll_session_new(struct fuse_args *args, struct fs *fs)
{
	struct fuse_session *se;
	int r;

	r = nodes_new(&fs->nodes);
	if (r == 0)
		r = dirs_new(fs->nodes, &fs->dirs);
	if (r < 0) {
		log_err("cannot make the mount's node table: %s", strerror(-r));
		ll_session_free(fs);
		return NULL;
	}
	nodes_set_left_hook(fs->nodes, node_left, fs);
	se = fuse_session_new(args, &ll_ops, sizeof(ll_ops), fs);
	if (!se) {
		ll_session_free(fs);
		return NULL;
	}
	kcache_session_set(fs, se);
	return se;
}

/* A handle the kernel never released: released as a RELEASE would have. */
static void release_left(uint64_t fh, void *arg)
{
	struct fuse_file_info fi = { .fh = fh };

	(void)arg;
	op_release(&fi);
}

void ll_session_free(struct fs *fs)
{
	struct fuse_session *se = fs->session;

	/* Nothing is told to the kernel from now on: the session's device closes. */
	kcache_session_set(fs, NULL);
	if (se)
		fuse_session_destroy(se);
	if (fs->nodes)
		nodes_release_left(fs->nodes, release_left, NULL);
	dirs_free(TAKE_PTR(fs->dirs));
	nodes_free(TAKE_PTR(fs->nodes));
}
