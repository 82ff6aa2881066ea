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
 * finds it no more, and nodes_path() says it was removed.
 *
 * The node id is the node's address, as in libfuse's passthrough_ll; the
 * root is FUSE_ROOT_ID. One mutex guards the whole table; it is held only
 * for hash look-ups and pointer updates, never across a store or backing
 * tree call (but for an open file's attributes in nodes_with_open()). The
 * table grows with what the kernel holds (its dentry cache), not with the
 * store.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/nodes.h"

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
	bool hashed;       /* still reachable by (parent, name) */
	struct node *hnext;
	struct open_ref *opens;
};

static struct node root = { .hashed = true, .nlookup = 1 };
static struct node *buckets[HASH_BUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

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

fuse_ino_t nodes_find(const char *rel)
{
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
	pthread_mutex_unlock(&table_lock);
	return n && n != &root ? node_ino(n) : 0;
}

fuse_ino_t nodes_lookup(fuse_ino_t parent, const char *name, const uint64_t *fh)
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

void nodes_removed(fuse_ino_t parent, const char *name)
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

void nodes_open_add(fuse_ino_t ino, uint64_t fh)
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

int nodes_collect(bool (*match)(const char *const *up, size_t n), fuse_ino_t **ret, size_t *ret_n)
{
	_cleanup_free_ fuse_ino_t *inos = NULL;
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
			inos[n++] = node_ino(x);
		}
	pthread_mutex_unlock(&table_lock);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(inos);
	*ret_n = n;
	return 0;
}
