/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodes.c: the table from the kernel's node ids to (parent, name).
 *
 * The kernel names files by node ids it got from lookups; lowlevel.c turns
 * each id back into a path through this table. A node is a path, not a
 * file: each name of a hard-linked file is a node of its own. A node lives
 * until the kernel forgets it (nlookup back to 0), nothing below it is known
 * (children) and no handle is open on it (opens): a replaced doc's node keeps
 * its last path, and a removed plain file's node keeps working through its
 * open handles. A removed or replaced node is unhashed: its (parent, name)
 * finds it no more, and nodes_path() says it was removed. A doc's name gets
 * a new node for each version a lookup finds (version nodes, nodes.h), so it
 * may have several, one hashed.
 *
 * The node id is the node's address, as in libfuse's passthrough_ll; the
 * root is FUSE_ROOT_ID. One mutex guards the whole table; it is held only
 * for hash look-ups and pointer updates, never across a store or backing
 * tree call (but for an open file's attributes, or a copy of its snapshot,
 * in nodes_with_open()). The table grows with what the kernel holds (its
 * dentry and inode caches: a replaced version's node stays until the kernel
 * evicts its inode), not with the store.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/kernel/nodes.h"

#define HASH_BUCKETS (1u << 16)

struct open_ref {
	uint64_t fh;
	struct open_ref *next;
};

struct node {
	struct node *parent;
	char *name;
	uint64_t nlookup;
	unsigned children; /* nodes whose parent this is */
	unsigned opening;  /* opens between nodes_open_begin() and nodes_open_end() */
	unsigned stale;    /* of those, readers waiting in nodes_open_stale() for the others */
	bool hashed;       /* still reachable by (parent, name); else on the list of unhashed */
	struct node *hnext;
	struct node *unext, **uprev; /* the list of unhashed nodes */
	struct open_ref *opens;
	int64_t ver;       /* a version node: the doc's revision it stands for; else 0 */
	pid_t hold;        /* an ordinary doc node kept for this thread's retry of an open (node_leave()) */
	mode_t type;       /* S_IFMT bits of its last lookup; 0 unknown */
	struct stat vst;   /* a version node's attributes */
};

static struct node root = { .hashed = true, .nlookup = 1, .type = S_IFDIR };
static struct node *buckets[HASH_BUCKETS];
/*
 * Unhashed nodes the kernel still holds. A version node replaced by a
 * lookup stays in the kernel's inode cache until memory runs short or the
 * mount ends, when the kernel forgets nothing: listed, they are not lost.
 */
static struct node *unhashed;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
/* An open ended, or a node left: stale readers waiting in nodes_open_stale() look again. */
static pthread_cond_t open_ended = PTHREAD_COND_INITIALIZER;
/* Told of each version node that becomes ordinary, under the table lock (nodes_set_left_hook()). */
static void (*left_hook)(fuse_ino_t ino);

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

static void unhashed_remove(struct node *n)
{
	if (!n->uprev)
		return;
	*n->uprev = n->unext;
	if (n->unext)
		n->unext->uprev = n->uprev;
	n->unext = NULL;
	n->uprev = NULL;
}

static void node_hash(struct node *n)
{
	unsigned b = bucket_of(n->parent, n->name);

	unhashed_remove(n);
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
	n->unext = unhashed;
	if (unhashed)
		unhashed->uprev = &n->unext;
	unhashed = n;
	n->uprev = &unhashed;
}

/* Frees n and then its parents, as long as nothing refers to them. */
static void node_maybe_free(struct node *n)
{
	while (n != &root && n->nlookup == 0 && n->children == 0 && !n->opens && !n->opening) {
		struct node *p = n->parent;

		node_unhash(n);
		unhashed_remove(n);
		free(n->name);
		free(n);
		p->children--;
		n = p;
	}
}

/* Whether a handle is open on n, or being opened, other than mine of them. */
static bool node_busy(const struct node *n, unsigned mine)
{
	return n->opens || n->opening > mine;
}

static struct node *child_new(struct node *parent, const char *name)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	n->parent = parent;
	parent->children++;
	node_hash(n);
	return n;
}

/* The node at (parent, name), made if none; a version node there is replaced (see nodes.h). */
static struct node *child_get(struct node *parent, const char *name)
{
	struct node *n = child_find(parent, name);

	if (n && n->ver == 0)
		return n;
	if (n)
		node_unhash(n);
	return child_new(parent, name);
}

/* Moves n to (parent, name), taking name (allocated) over. */
static void node_move(struct node *n, struct node *parent, char *name)
{
	node_unhash(n);
	free(n->name);
	n->name = name;
	n->parent->children--;
	n->parent = parent;
	parent->children++;
	node_hash(n);
}

/*
 * Its length has no bound but memory: a folder deep in the tree names its
 * files with paths longer than PATH_MAX (plain.c resolves those a piece at a
 * time). Table lock held.
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

int nodes_path(fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed)
{
	int r;

	pthread_mutex_lock(&table_lock);
	r = node_path(ino_node(ino), name, out, ret_removed);
	pthread_mutex_unlock(&table_lock);
	return r;
}

static struct node_ref node_ref_of(const struct node *n)
{
	return (struct node_ref){ .ino = node_ino(n), .version = n->ver > 0, .dir = S_ISDIR(n->type) };
}

struct node_ref nodes_find(const char *rel)
{
	struct node_ref ref = { 0 };
	struct node *n = &root;
	const char *c = rel;

	pthread_mutex_lock(&table_lock);
	while (n && *c) {
		const char *end = strchrnul(c, '/');
		_cleanup_free_ char *name = strndup(c, (size_t)(end - c));

		if (!name) {
			n = NULL;
			break;
		}
		if (*name)
			n = child_find(n, name);
		c = *end ? end + 1 : end;
	}
	if (n && n != &root)
		ref = node_ref_of(n);
	pthread_mutex_unlock(&table_lock);
	return ref;
}

fuse_ino_t nodes_lookup(fuse_ino_t parent, const char *name, mode_t type, const uint64_t *fh)
{
	struct open_ref *o = NULL;
	struct node *n;

	if (fh) {
		o = malloc(sizeof(*o));
		if (!o)
			return 0;
		o->fh = *fh;
	}
	pthread_mutex_lock(&table_lock);
	n = child_get(ino_node(parent), name);
	if (n) {
		n->nlookup++;
		n->type = type & S_IFMT;
		if (o) {
			o->next = n->opens;
			n->opens = o;
			o = NULL;
		}
	}
	pthread_mutex_unlock(&table_lock);
	free(o);
	return n ? node_ino(n) : 0;
}

fuse_ino_t nodes_lookup_version(fuse_ino_t parent, const char *name, int64_t rev, const struct stat *st,
				 bool *ret_version)
{
	struct node *n;

	pthread_mutex_lock(&table_lock);
	n = child_find(ino_node(parent), name);
	if (n && n->hold) {
		n->nlookup++;
		pthread_mutex_unlock(&table_lock);
		*ret_version = false;
		return node_ino(n);
	}
	*ret_version = true;
	if (n && n->ver != rev) {
		node_unhash(n);
		n = NULL;
	}
	if (!n)
		n = child_new(ino_node(parent), name);
	if (n) {
		n->nlookup++;
		n->ver = rev;
		n->vst = *st;
		n->type = S_IFREG;
	}
	pthread_mutex_unlock(&table_lock);
	return n ? node_ino(n) : 0;
}

bool nodes_version_stat(fuse_ino_t ino, struct stat *st)
{
	struct node *n = ino_node(ino);
	bool version;

	pthread_mutex_lock(&table_lock);
	version = n->ver > 0;
	if (version)
		*st = n->vst;
	pthread_mutex_unlock(&table_lock);
	return version;
}

void nodes_set_left_hook(void (*fn)(fuse_ino_t ino))
{
	pthread_mutex_lock(&table_lock);
	left_hook = fn;
	pthread_mutex_unlock(&table_lock);
}

/*
 * n stops standing for its version and becomes an ordinary doc node. The
 * kernel keeps a version node's attributes for good, and an ordinary node's
 * reader reads the doc as it is now: the hook has the kernel drop them before
 * the table lock is let go, so that no open can find n ordinary while the
 * kernel still has the old version's size (node's readFile would read the
 * new version cut to it). Table lock held.
 */
static void node_make_ordinary(struct node *n, bool *ret_left)
{
	n->ver = 0;
	if (left_hook)
		left_hook(node_ino(n));
	if (ret_left)
		*ret_left = true;
}

/*
 * n stops standing for its version: alone (nobody but mine has it open) it
 * becomes an ordinary doc node; shared, it is unhashed, its readers keep it,
 * and -ESTALE. Table lock held.
 */
static int node_leave(struct node *n, unsigned mine, pid_t pid, bool *ret_left)
{
	if (n->ver == 0)
		return 0;
	if (node_busy(n, mine)) {
		struct node *cur = child_find(n->parent, n->name);

		/*
		 * The kernel retries once, after looking the name up again: it
		 * finds an ordinary node there (unless out of memory), which no
		 * open can make stale, and which stays at the name until the
		 * thread that retries has opened it. n may be unhashed already,
		 * and the name hold the next version's node, as stale by then.
		 */
		if (!cur || cur->ver) {
			if (cur)
				node_unhash(cur);
			cur = child_new(n->parent, n->name);
		}
		if (cur)
			cur->hold = pid;
		return -ESTALE;
	}
	node_make_ordinary(n, ret_left);
	return 0;
}

int nodes_open_begin(fuse_ino_t ino, bool writes, pid_t pid, int64_t *ret_ver, bool *ret_left)
{
	struct node *n = ino_node(ino);
	int r = 0;

	*ret_ver = 0;
	if (ret_left)
		*ret_left = false;
	pthread_mutex_lock(&table_lock);
	if (n->hold == pid)
		n->hold = 0;
	if (writes)
		r = node_leave(n, 0, pid, ret_left);
	else
		*ret_ver = n->ver;
	if (r == 0)
		n->opening++;
	pthread_mutex_unlock(&table_lock);
	return r;
}

/*
 * A reader whose version node went stale waits until every other open under
 * way on the node has ended or is a stale reader waiting too: an open that
 * read the node's version before the change may be about to record its
 * handle, and the kernel may then read that version through the node's
 * pages, with the node's size. Only then does the reader act on what it
 * finds. Stale readers wait for each other only while some other open is
 * under way, so two of them never wait for each other for good, and the
 * first to act makes the node leave, which lets the others through.
 */
int nodes_open_stale(fuse_ino_t ino, pid_t pid, bool again, bool *ret_left)
{
	struct node *n = ino_node(ino);
	int r;

	if (ret_left)
		*ret_left = false;
	pthread_mutex_lock(&table_lock);
	n->stale++;
	while (n->ver && !n->opens && n->opening > n->stale)
		pthread_cond_wait(&open_ended, &table_lock);
	n->stale--;
	if (n->ver && n->opens && !again)
		r = -EAGAIN; /* a handle to share the version with, perhaps */
	else if (n->ver && !n->opens) {
		/* Alone among handles: the others under way are stale readers, who find the node ordinary. */
		node_make_ordinary(n, ret_left);
		r = 0;
	} else {
		r = node_leave(n, 1, pid, ret_left);
	}
	if (n->stale && !n->ver)
		pthread_cond_broadcast(&open_ended); /* the readers still waiting find it ordinary */
	pthread_mutex_unlock(&table_lock);
	return r;
}

int nodes_open_end(fuse_ino_t ino, const uint64_t *fh)
{
	struct open_ref *o = fh ? malloc(sizeof(*o)) : NULL;
	struct node *n = ino_node(ino);

	pthread_mutex_lock(&table_lock);
	n->opening--;
	if (n->stale)
		pthread_cond_broadcast(&open_ended);
	if (o) {
		o->fh = *fh;
		o->next = n->opens;
		n->opens = o;
	}
	node_maybe_free(n);
	pthread_mutex_unlock(&table_lock);
	return fh && !o ? -ENOMEM : 0;
}

int nodes_version_leave(fuse_ino_t ino, bool truncates, pid_t pid)
{
	struct node *n = ino_node(ino);
	int r;

	pthread_mutex_lock(&table_lock);
	r = node_leave(n, 0, pid, NULL);
	if (r < 0 && !truncates) {
		/* Unhashed already: its readers see their own version's attributes (through their handles). */
		node_make_ordinary(n, NULL);
		r = 0;
	}
	pthread_mutex_unlock(&table_lock);
	return r;
}

void nodes_forget(fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = ino_node(ino);

	if (n == &root)
		return;
	pthread_mutex_lock(&table_lock);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	node_maybe_free(n);
	pthread_mutex_unlock(&table_lock);
}

void nodes_lookup_undo(fuse_ino_t ino, const uint64_t *fh)
{
	if (fh)
		nodes_open_remove(ino, *fh);
	nodes_forget(ino, 1);
}

void nodes_removed(fuse_ino_t parent, const char *name)
{
	struct node *n;

	pthread_mutex_lock(&table_lock);
	n = child_find(ino_node(parent), name);
	if (n) {
		node_unhash(n);
		n->ver = 0; /* its link count is 0 now */
		node_maybe_free(n);
	}
	pthread_mutex_unlock(&table_lock);
}

/*
 * What stood at the new name is replaced (unhashed), unless exchanged; a
 * name that cannot be copied for want of memory leaves its node unhashed
 * under the old name: it is then looked up afresh.
 */
void nodes_renamed(fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
		   bool exchange)
{
	struct node *src, *dst;

	pthread_mutex_lock(&table_lock);
	src = child_find(ino_node(parent), name);
	dst = child_find(ino_node(newparent), newname);
	if (dst && dst != src)
		node_unhash(dst);
	if (src) {
		char *nn = strdup(newname);

		src->ver = 0; /* a file at another path now */
		if (nn)
			node_move(src, ino_node(newparent), nn);
		else
			node_unhash(src);
	}
	if (exchange && dst && dst != src) {
		char *on = strdup(name);

		if (on)
			node_move(dst, ino_node(parent), on);
	} else if (dst && dst != src) {
		node_maybe_free(dst);
	}
	pthread_mutex_unlock(&table_lock);
}

void nodes_open_remove(fuse_ino_t ino, uint64_t fh)
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

bool nodes_with_open(fuse_ino_t ino, bool (*fn)(uint64_t fh, void *arg), void *arg)
{
	struct node *n = ino_node(ino);
	bool done = false;

	pthread_mutex_lock(&table_lock);
	if (!fn)
		done = n->opens != NULL;
	for (struct open_ref *o = n->opens; fn && o && !done; o = o->next)
		done = fn(o->fh, arg);
	pthread_mutex_unlock(&table_lock);
	return done;
}

int nodes_collect(bool (*match)(const char *const *up, size_t n), struct node_ref **ret, size_t *ret_n)
{
	_cleanup_free_ struct node_ref *inos = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	pthread_mutex_lock(&table_lock);
	for (unsigned b = 0; b < HASH_BUCKETS && r == 0; b++)
		for (struct node *x = buckets[b]; x; x = x->hnext) {
			const char *up[NODES_UP_MAX + 1];
			size_t depth = 0;

			for (const struct node *c = x; c != &root && depth <= NODES_UP_MAX; c = c->parent)
				up[depth++] = c->name;
			if (!match(up, depth))
				continue;
			if ((r = ARRAY_GROW(inos, n, cap, 64)) < 0)
				break;
			inos[n++] = node_ref_of(x);
		}
	pthread_mutex_unlock(&table_lock);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(inos);
	*ret_n = n;
	return 0;
}
