/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lowlevel.c: the FUSE low-level interface: node ids, lookups and replies.
 *
 * The kernel names files by node ids it got from lookups. This file keeps
 * the table from node id to (parent, name), turns each request into a path
 * and calls the path-level operation in ops.c, then replies exactly once.
 *
 * Why not libfuse's high-level API, which does the same: when a file is
 * replaced by a rename, the high-level API forgets the replaced node at once,
 * and an open() that looked the file up just before gets ESTALE. Cline
 * renames over its conversation files all the time while other windows read
 * them, so that race is common here. A node in this table lives until the
 * kernel forgets it: a replaced doc's node keeps its last path, and opening it
 * opens the doc now at that path (whole, old or new, never torn); a removed
 * plain file's node keeps working through its open handles.
 *
 * The node id is the node's address (as in libfuse's passthrough_ll); the
 * inode number the kernel shows (st_ino) is the backing file's, or the doc's
 * stable number from the store, so it survives remounts.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fs/dirs.h"
#include "fs/ops.h"
#include "fs/view.h"
#include "store/util.h"

#define HASH_BUCKETS (1u << 16)
#define TIMEOUT 1.0 /* seconds the kernel may cache entries and attributes */

struct open_ref {
	uint64_t fh;
	struct open_ref *next;
};

struct node {
	struct node *parent;
	char *name;
	uint64_t nlookup;
	unsigned children; /* nodes whose parent this is */
	bool hashed;       /* still reachable by (parent, name) */
	struct node *hnext;
	struct open_ref *opens;
};

struct fs *fs_current;
__thread pid_t fs_caller_pid;
__thread uid_t fs_caller_uid;
__thread gid_t fs_caller_gid;

static struct node root = { .hashed = true, .nlookup = 1 };
static struct node *buckets[HASH_BUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fuse_session *session;

static struct node *ino_node(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &root : (struct node *)(uintptr_t)ino;
}

static fuse_ino_t node_ino(const struct node *n)
{
	return n == &root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static unsigned bucket_of(const struct node *parent, const char *name)
{
	return (unsigned)((hash64(name, strlen(name)) ^ (uintptr_t)parent) & (HASH_BUCKETS - 1));
}

/* Table lock held for all of these. */
static struct node *child_find(struct node *parent, const char *name)
{
	for (struct node *n = buckets[bucket_of(parent, name)]; n; n = n->hnext)
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static void node_hash(struct node *n)
{
	unsigned b = bucket_of(n->parent, n->name);

	n->hnext = buckets[b];
	buckets[b] = n;
	n->hashed = true;
}

static void node_unhash(struct node *n)
{
	if (!n->hashed)
		return;
	for (struct node **pp = &buckets[bucket_of(n->parent, n->name)]; *pp; pp = &(*pp)->hnext)
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	n->hashed = false;
	n->hnext = NULL;
}

/* Frees n and then its parents, as long as nothing refers to them. */
static void node_maybe_free(struct node *n)
{
	while (n != &root && n->nlookup == 0 && n->children == 0 && !n->opens) {
		struct node *p = n->parent;

		node_unhash(n);
		free(n->name);
		free(n);
		p->children--;
		n = p;
	}
}

static struct node *child_get(struct node *parent, const char *name)
{
	struct node *n = child_find(parent, name);

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	n->parent = parent;
	parent->children++;
	node_hash(n);
	return n;
}

/*
 * Writes the path of n (plus "/name" if name) into out, starting with '/'.
 * *ret_removed tells whether n, or a folder above it, was removed or replaced:
 * the path is then the last one it had. Its length has no bound but memory:
 * a folder deep in the tree names its files with paths longer than PATH_MAX
 * (plain.c resolves those a piece at a time). Table lock held.
 */
static int node_path(const struct node *n, const char *name, struct sb *out, bool *ret_removed)
{
	size_t len = name ? 1 + strlen(name) : 0, pos;
	bool removed = false;
	int r;

	for (const struct node *c = n; c != &root; c = c->parent) {
		if (!c->hashed)
			removed = true;
		len += 1 + strlen(c->name);
	}
	if (len == 0)
		len = 1; /* the root: "/" */
	out->len = 0;
	r = sb_grow(out, len);
	if (r < 0)
		return r;
	/* Filled from its end: the name, then each folder up to the root. */
	pos = len;
	if (name) {
		pos -= strlen(name);
		memcpy(out->buf + pos, name, strlen(name));
		out->buf[--pos] = '/';
	}
	for (const struct node *c = n; c != &root; c = c->parent) {
		pos -= strlen(c->name);
		memcpy(out->buf + pos, c->name, strlen(c->name));
		out->buf[--pos] = '/';
	}
	if (pos == 1)
		out->buf[0] = '/';
	out->len = len;
	out->buf[len] = '\0';
	if (ret_removed)
		*ret_removed = removed;
	return 0;
}

static int path_of(fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed)
{
	int r;

	if (name && (strlen(name) > NAME_MAX))
		return -ENAMETOOLONG;
	/* The root's .convfs-* entries are convfs's own (the trash's folders). */
	if (name && ino == FUSE_ROOT_ID && strncmp(name, ".convfs-", 8) == 0)
		return -ENOENT;
	pthread_mutex_lock(&table_lock);
	r = node_path(ino_node(ino), name, out, ret_removed);
	pthread_mutex_unlock(&table_lock);
	return r;
}

/* The route of a path path_of() made: resolved into *rt, which it returns. */
static const struct route *route_of(const struct sb *path, struct route *rt)
{
	route_resolve(fs_current, path->buf, rt);
	return rt;
}

static void begin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	fs_caller_pid = ctx->pid;
	fs_caller_uid = ctx->uid;
	fs_caller_gid = ctx->gid;
}

void ll_invalidate(struct fs *fs, const char *rel)
{
	_cleanup_free_ char *copy = strdup(rel);
	struct node *n = &root;
	char *save = NULL;

	if (!copy || !session)
		return;
	pthread_mutex_lock(&table_lock);
	for (char *c = strtok_r(copy, "/", &save); c && n; c = strtok_r(NULL, "/", &save))
		n = child_find(n, c);
	pthread_mutex_unlock(&table_lock);
	/* The node may be freed meanwhile; the kernel ignores an unknown id. */
	if (n && n != &root)
		fuse_lowlevel_notify_inval_inode(session, node_ino(n), 0, 0);
}

/* ---- entries ------------------------------------------------------------------ */

/*
 * Docs and the view's files are never cached: they change under merges.
 * (A checkpoint's never change: those are. The view's folders are too:
 * their permissions are checked on every path walk through them, and what
 * they list is computed afresh anyway.)
 */
static bool never_cached(const struct route *rt)
{
	return rt->kind == ROUTE_DOC || (rt->kind == ROUTE_VIEW && rt->vp.kind <= VIEW_CKPTS);
}

/*
 * A view folder shown under another name while the client has its own
 * (workspaces/<name>.view): it goes when the client's does, so the kernel
 * asks again on every path walk through it. (Dropping the entry when it
 * goes would take the folder's lock in the kernel from the daemon, which can
 * hang a daemon killed meanwhile for good.)
 */
static bool is_view_volatile_dir(const char *path)
{
	const char *p;
	size_t n, sl = strlen(VIEW_CLASH_SUFFIX);

	if (strncmp(path, "/workspaces/", 12) != 0)
		return false;
	p = path + 12;
	n = strlen(p);
	return !strchr(p, '/') && n > sl && strcmp(p + n - sl, VIEW_CLASH_SUFFIX) == 0;
}

/* n is a task's folder in the view: workspaces/<ws>/tasks/<id> or workspaces/.trash/<id>. */
static bool is_view_task_node(const struct node *n)
{
	const struct node *p = n->parent, *ws;

	if (!p || !p->parent)
		return false;
	if (strcmp(p->name, ".trash") == 0)
		return p->parent->parent == &root && strcmp(p->parent->name, "workspaces") == 0;
	ws = p->parent;
	return strcmp(p->name, "tasks") == 0 && ws->parent && ws->parent->parent == &root &&
	       strcmp(ws->parent->name, "workspaces") == 0;
}

/*
 * A task's folder in the view comes and goes with changes made anywhere
 * (rm -r or mv in the compat tree, a history item that names its workspace,
 * the trash), yet a path walk through it must not ask the daemon each time:
 * `ls -l` of a checkpoint's 10,000 files walks through it twice a file. So
 * its entry is cached like any folder's, and whenever the store says a task
 * may have moved, the kernel drops the attributes of every task folder it
 * holds: the next stat or walk through one that moved asks, and gets ENOENT.
 * The entries themselves stay (see is_view_volatile_dir() for why they are
 * not dropped); a name the kernel still holds answers ENOENT until it goes.
 */
void ll_placement_check(struct fs *fs)
{
	static uint64_t seen;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	_cleanup_free_ fuse_ino_t *inos = NULL;
	size_t n = 0, cap = 0;
	uint64_t now = store_placement_generation(fs->store);

	if (!session || __atomic_load_n(&seen, __ATOMIC_ACQUIRE) == now)
		return;
	pthread_mutex_lock(&lock);
	__atomic_store_n(&seen, now, __ATOMIC_RELEASE);
	pthread_mutex_lock(&table_lock);
	for (unsigned b = 0; b < HASH_BUCKETS; b++)
		for (struct node *x = buckets[b]; x; x = x->hnext) {
			if (!is_view_task_node(x))
				continue;
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				fuse_ino_t *m = realloc(inos, ncap * sizeof(*m));

				if (!m) {
					/* The kernel keeps what it has for a second at most. */
					log_warn("out of memory while telling the kernel that tasks moved");
					goto out;
				}
				inos = m;
				cap = ncap;
			}
			inos[n++] = node_ino(x);
		}
out:
	pthread_mutex_unlock(&table_lock);
	/* A node freed meanwhile: the kernel ignores an unknown id. */
	for (size_t i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(session, inos[i], 0, 0);
	pthread_mutex_unlock(&lock);
}

/*
 * How long the kernel may keep attributes it got with st. Each name of a file
 * is a node of its own here (a node is a path), so each name of a hard-linked
 * file is an inode of its own in the kernel too, and what changes through one
 * name (its link count, mode, owner, times, size, bytes) would not show under
 * another. So a file with more than one name (of any type but a folder: a
 * fifo, a socket, a symlink have links too) is never cached: every stat asks,
 * and every read of a regular file first checks its attributes and drops its
 * pages if the file changed (libfuse turns on auto_inval_data).
 */
static double attr_timeout(const struct stat *st, double timeout)
{
	if (S_ISDIR(st->st_mode))
		return TIMEOUT;
	return st->st_nlink > 1 ? 0 : timeout;
}

/*
 * Replies with the entry parent/name, whose path is path, counting a lookup.
 * After a request that made it (mkdir, create, ...), what stands at path now
 * is looked up afresh.
 */
static void reply_entry_at(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path,
			   struct fuse_file_info *fi)
{
	struct fuse_entry_param e = { .attr_timeout = TIMEOUT, .entry_timeout = TIMEOUT };
	struct route rt;
	struct node *n;
	int r;

	route_resolve(fs_current, path, &rt);
	r = op_getattr(&rt, &e.attr, fi);
	if (never_cached(&rt) && !S_ISDIR(e.attr.st_mode))
		e.attr_timeout = 0;
	if (S_ISDIR(e.attr.st_mode) && is_view_volatile_dir(path))
		e.entry_timeout = e.attr_timeout = 0;
	e.attr_timeout = attr_timeout(&e.attr, e.attr_timeout);
	if (r < 0) {
		if (fi)
			op_release(fi);
		fuse_reply_err(req, -r);
		return;
	}
	pthread_mutex_lock(&table_lock);
	n = child_get(ino_node(parent), name);
	if (n) {
		n->nlookup++;
		if (fi) {
			struct open_ref *o = malloc(sizeof(*o));

			if (o) {
				o->fh = fi->fh;
				o->next = n->opens;
				n->opens = o;
			}
		}
	}
	pthread_mutex_unlock(&table_lock);
	if (!n) {
		if (fi)
			op_release(fi);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	e.ino = node_ino(n);
	if (fi) {
		if (fuse_reply_create(req, &e, fi) == -ENOENT)
			log_debug("create of '%s' was interrupted", path);
	} else {
		fuse_reply_entry(req, &e);
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

static void forget_one(fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = ino_node(ino);

	if (n == &root)
		return;
	pthread_mutex_lock(&table_lock);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	node_maybe_free(n);
	pthread_mutex_unlock(&table_lock);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(ino, nlookup);
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_one(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- attributes --------------------------------------------------------------- */

/*
 * A doc's attributes are never cached by the kernel (timeout 0), and a
 * process that has the doc open sees the size of the version it reads, so
 * that fstat() then read() gives it one whole version.
 */
static int getattr_route(fuse_ino_t ino, const struct route *rt, bool removed, struct fuse_file_info *fi,
			 struct stat *st, double *ret_timeout)
{
	struct fuse_file_info any = { 0 };
	bool doc = rt->kind == ROUTE_DOC;
	int r;

	*ret_timeout = never_cached(rt) ? 0 : TIMEOUT;
	if (doc && !fi && ino_node(ino)->opens) {
		struct node *n = ino_node(ino);
		struct fs_proc proc;
		bool found = false;

		/* Only a doc that is open needs to know who asks (two reads of /proc). */
		if (fs_proc_get(fs_caller_pid, &proc) == 0) {
			pthread_mutex_lock(&table_lock);
			for (struct open_ref *o = n->opens; o && !found; o = o->next)
				found = op_getattr_if_owner(o->fh, proc.tgid, st) == 0;
			pthread_mutex_unlock(&table_lock);
		}
		if (found)
			return 0;
	}
	if (!fi && removed) {
		/*
		 * A removed file: fstat() through one of its open handles, under
		 * the table lock so that the handle cannot be released meanwhile.
		 */
		struct node *n = ino_node(ino);

		pthread_mutex_lock(&table_lock);
		if (n->opens) {
			any.fh = n->opens->fh;
			r = op_getattr(rt, st, &any);
			pthread_mutex_unlock(&table_lock);
			return r;
		}
		pthread_mutex_unlock(&table_lock);
		if (!doc)
			return -ESTALE;
	}
	return op_getattr(rt, st, fi);
}

static int getattr_node(fuse_ino_t ino, struct fuse_file_info *fi, struct stat *st, double *ret_timeout)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	bool removed;
	int r;

	r = path_of(ino, NULL, &path, &removed);
	if (r < 0)
		return r;
	route_resolve(fs_current, path.buf, &rt);
	return getattr_route(ino, &rt, removed, fi, st, ret_timeout);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	double timeout;
	int r;

	begin(req);
	r = getattr_node(ino, fi, &st, &timeout);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, attr_timeout(&st, timeout));
}

/* Applies the attributes to_set names, from attr, to rt (or to the open file fi). */
static int setattr_route(const struct route *rt, struct stat *attr, int to_set, struct fuse_file_info *fi)
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
	r = path_of(ino, NULL, &path, &removed);
	if (r == 0)
		route_resolve(fs_current, path.buf, &rt);
	if (r == 0 && removed && !fi && rt.kind != ROUTE_DOC) {
		/*
		 * A removed plain file (fchmod of an unlinked open file): its path
		 * names another file now, or none. Through one of its open handles,
		 * under the table lock so that the handle cannot be released meanwhile.
		 */
		struct fuse_file_info any = { 0 };
		struct node *n = ino_node(ino);

		pthread_mutex_lock(&table_lock);
		if (n->opens) {
			any.fh = n->opens->fh;
			r = setattr_route(&rt, attr, to_set, &any);
		} else {
			r = -ESTALE;
		}
		pthread_mutex_unlock(&table_lock);
	} else if (r == 0) {
		r = setattr_route(&rt, attr, to_set, fi);
	}
	if (r == 0)
		r = getattr_route(ino, &rt, removed, fi, &st, &timeout);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, attr_timeout(&st, timeout));
}

/* ---- names -------------------------------------------------------------------- */

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	char buf[PATH_MAX + 1];
	int r;

	begin(req);
	r = path_of(ino, NULL, &path, NULL);
	if (r == 0)
		r = op_readlink(route_of(&path, &rt), buf, sizeof(buf));
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, buf);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = op_mknod(route_of(&path, &rt), mode, rdev);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry_at(req, parent, name, path.buf, NULL);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = op_mkdir(route_of(&path, &rt), mode);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry_at(req, parent, name, path.buf, NULL);
}

static void ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = op_symlink(target, route_of(&path, &rt));
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry_at(req, parent, name, path.buf, NULL);
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
	_cleanup_sb_ struct sb from = SB_INIT, to = SB_INIT;
	struct route rf, rt;
	int r;

	begin(req);
	r = path_of(ino, NULL, &from, NULL);
	if (r == 0)
		r = path_of(parent, name, &to, NULL);
	if (r == 0)
		r = op_link(route_of(&from, &rf), route_of(&to, &rt));
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/*
	 * The new name is a new node (attr_timeout()): the kernel's attributes
	 * of the old one (its link count, its ctime) are stale now. Dropped
	 * before the reply, so that a stat after link() returns asks afresh.
	 */
	if (session)
		fuse_lowlevel_notify_inval_inode(session, ino, -1, 0);
	reply_entry_at(req, parent, name, to.buf, NULL);
}

/* The name parent/name is gone: its node keeps its last path until forgotten. */
static void name_removed(fuse_ino_t parent, const char *name)
{
	struct node *n;

	pthread_mutex_lock(&table_lock);
	n = child_find(ino_node(parent), name);
	if (n) {
		node_unhash(n);
		node_maybe_free(n);
	}
	pthread_mutex_unlock(&table_lock);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = op_unlink(route_of(&path, &rt));
	if (r == 0)
		name_removed(parent, name);
	ll_placement_check(fs_current);
	fuse_reply_err(req, -r);
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = op_rmdir(route_of(&path, &rt));
	if (r == 0)
		name_removed(parent, name);
	ll_placement_check(fs_current);
	fuse_reply_err(req, -r);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	_cleanup_sb_ struct sb from = SB_INIT, to = SB_INIT;
	struct route rf, rt;
	int r;

	begin(req);
	r = path_of(parent, name, &from, NULL);
	if (r == 0)
		r = path_of(newparent, newname, &to, NULL);
	if (r == 0)
		r = op_rename(route_of(&from, &rf), route_of(&to, &rt), flags);
	if (r == 0) {
		struct node *src, *dst;

		pthread_mutex_lock(&table_lock);
		src = child_find(ino_node(parent), name);
		dst = child_find(ino_node(newparent), newname);
		if (dst && dst != src)
			node_unhash(dst);
		if (src) {
			char *nn = strdup(newname);

			node_unhash(src);
			if (nn) {
				free(src->name);
				src->name = nn;
				src->parent->children--;
				src->parent = ino_node(newparent);
				src->parent->children++;
				node_hash(src);
			}
		}
		if ((flags & RENAME_EXCHANGE) && dst && dst != src) {
			char *on = strdup(name);

			if (on) {
				free(dst->name);
				dst->name = on;
				dst->parent->children--;
				dst->parent = ino_node(parent);
				dst->parent->children++;
				node_hash(dst);
			}
		} else if (dst && dst != src) {
			node_maybe_free(dst);
		}
		pthread_mutex_unlock(&table_lock);
	}
	ll_placement_check(fs_current);
	fuse_reply_err(req, -r);
}

/* ---- files -------------------------------------------------------------------- */

static void opens_add(fuse_ino_t ino, uint64_t fh)
{
	struct open_ref *o = malloc(sizeof(*o));
	struct node *n = ino_node(ino);

	if (!o)
		return; /* only fstat() of this file after its removal suffers */
	o->fh = fh;
	pthread_mutex_lock(&table_lock);
	o->next = n->opens;
	n->opens = o;
	pthread_mutex_unlock(&table_lock);
}

static void opens_remove(fuse_ino_t ino, uint64_t fh)
{
	struct node *n = ino_node(ino);

	pthread_mutex_lock(&table_lock);
	for (struct open_ref **pp = &n->opens; *pp; pp = &(*pp)->next)
		if ((*pp)->fh == fh) {
			struct open_ref *o = *pp;

			*pp = o->next;
			free(o);
			break;
		}
	node_maybe_free(n);
	pthread_mutex_unlock(&table_lock);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	bool removed;
	int r;

	begin(req);
	r = path_of(ino, NULL, &path, &removed);
	if (r == 0)
		route_resolve(fs_current, path.buf, &rt);
	/* A replaced doc opens as the doc now at its path; a replaced plain file is gone. */
	if (r == 0 && removed && rt.kind != ROUTE_DOC)
		r = -ESTALE;
	if (r == 0)
		r = op_open(&rt, fi);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	opens_add(ino, fi->fh);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* The caller was interrupted: nobody will release this handle. */
		opens_remove(ino, fi->fh);
		op_release(fi);
	}
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	int r;

	begin(req);
	r = path_of(parent, name, &path, NULL);
	if (r == 0)
		r = op_create(route_of(&path, &rt), mode, fi);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry_at(req, parent, name, path.buf, fi);
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

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	int r;

	begin(req);
	r = op_write(buf, size, off, fi);
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
	opens_remove(ino, fi->fh);
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
static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct route rt;
	struct dir_handle *d = NULL;
	int r;

	begin(req);
	r = path_of(ino, NULL, &path, NULL);
	if (r == 0)
		r = dir_open(route_of(&path, &rt), &d);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi) == -ENOENT)
		dir_release(d);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	dir_reply(req, (struct dir_handle *)(uintptr_t)fi->fh, size, off);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dir_release((struct dir_handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
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
	r = path_of(ino, NULL, &path, NULL);
	if (r == 0)
		r = op_setxattr(route_of(&path, &rt), name, value, size);
	fuse_reply_err(req, -r);
}

/* The session ends (no request runs any more): frees the handles never released. */
static void ll_destroy(void *userdata)
{
	dir_release_all();
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	/* O_TRUNC arrives with open, not as a separate truncate. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
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
	.write = ll_write,
	.flush = ll_flush,
	.release = ll_release,
	.fsync = ll_fsync,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.releasedir = ll_releasedir,
	.statfs = ll_statfs,
	.create = ll_create,
	.fallocate = ll_fallocate,
	.setxattr = ll_setxattr,
};

struct fuse_session *ll_session_new(struct fuse_args *args, struct fs *fs)
{
	fs_current = fs;
	session = fuse_session_new(args, &ll_ops, sizeof(ll_ops), fs);
	return session;
}

void ll_session_forget(void)
{
	session = NULL;
}
