/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodes.c: the table from the kernel's node ids to (parent, name).
 *
 * The kernel names files by node ids it got from lookups; lowlevel.c turns
 * each id back into a path through this table. A node is a path, not a
 * file: each name of a hard-linked file is a node of its own. A node lives
 * until the kernel forgets it (nlookup back to 0), nothing below it is known
 * (children), no handle is open on it (opens) and it is not leaving
 * (states.c): a replaced doc's node keeps its last path, and a removed
 * plain file's node keeps working through its open handles. A removed or
 * replaced node is unhashed: its (parent, name) finds it no more, and
 * nodes_path() says it was removed. A doc's name gets a new node for each
 * version a lookup finds (version nodes, states.c), so it may have several,
 * one hashed.
 *
 * Each mount has its own table (struct nodes, in struct fs). The node id is
 * the node's address, as in libfuse's passthrough_ll; the root is
 * FUSE_ROOT_ID. One mutex guards the whole table; it is held only for hash
 * look-ups and pointer updates, never across a store or backing tree call
 * (but for an open file's attributes, or a copy of its snapshot, in
 * nodes_with_open()), and nothing is sent to the kernel under it. The table
 * grows with what the kernel holds (its dentry and inode caches: a replaced
 * version's node stays until the kernel evicts its inode), not with the
 * store.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/kernel/nodes_internal.h"

int nodes_new(struct nodes **ret)
{
	struct nodes *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->root = (struct node){ .hashed = true, .nlookup = 1, .type = S_IFDIR };
	r = -pthread_mutex_init(&t->lock, NULL);
	if (r == 0) {
		r = -pthread_cond_init(&t->changed, NULL);
		if (r < 0)
			pthread_mutex_destroy(&t->lock);
	}
	if (r < 0) {
		free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static void node_free_one(struct node *n)
{
	for (struct open_ref *o = n->opens, *next; o; o = next) {
		next = o->next;
		free(o);
	}
	free(n->name);
	free(n);
}

/* Table lock held: moves n's open handles to the front of *list. */
static void take_opens(struct node *n, struct open_ref **list)
{
	while (n->opens) {
		struct open_ref *o = n->opens;

		n->opens = o->next;
		o->next = *list;
		*list = o;
	}
}

void nodes_release_left(struct nodes *t, void (*fn)(uint64_t fh, void *arg), void *arg)
{
	struct open_ref *list = NULL;

	/* Taken under the lock, released without it: a release may commit, and a commit looks nodes up. */
	pthread_mutex_lock(&t->lock);
	for (struct node *n = t->hashed_list; n; n = n->lnext)
		take_opens(n, &list);
	for (struct node *n = t->unhashed; n; n = n->lnext)
		take_opens(n, &list);
	pthread_mutex_unlock(&t->lock);
	for (struct open_ref *o = list, *next; o; o = next) {
		next = o->next;
		fn(o->fh, arg);
		free(o);
	}
}

void nodes_free(struct nodes *t)
{
	if (!t)
		return;
	/* At the session's end the kernel forgets nothing: every node left is freed here. */
	for (struct node *n = t->hashed_list, *next; n; n = next) {
		next = n->lnext;
		node_free_one(n);
	}
	for (struct node *n = t->unhashed, *next; n; n = next) {
		next = n->lnext;
		node_free_one(n);
	}
	pthread_cond_destroy(&t->changed);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static unsigned bucket_of(const struct node *parent, const char *name)
{
	return (unsigned)((hash64(name, strlen(name)) ^ (uintptr_t)parent) & (HASH_BUCKETS - 1));
}

/* Table lock held for all of these. */
struct node *child_find(struct nodes *t, struct node *parent, const char *name)
{
	for (struct node *n = t->buckets[bucket_of(parent, name)]; n; n = n->hnext)
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

/* Takes n off the list it is on (hashed or unhashed), if any. */
static void list_remove(struct node *n)
{
	if (!n->lprev)
		return;
	*n->lprev = n->lnext;
	if (n->lnext)
		n->lnext->lprev = n->lprev;
	n->lnext = NULL;
	n->lprev = NULL;
}

static void list_push(struct node **head, struct node *n)
{
	n->lnext = *head;
	if (*head)
		(*head)->lprev = &n->lnext;
	*head = n;
	n->lprev = head;
}

static void node_hash(struct nodes *t, struct node *n)
{
	unsigned b = bucket_of(n->parent, n->name);

	list_remove(n);
	n->hnext = t->buckets[b];
	t->buckets[b] = n;
	n->hashed = true;
	list_push(&t->hashed_list, n);
}

void node_unhash(struct nodes *t, struct node *n)
{
	if (!n->hashed)
		return;
	for (struct node **pp = &t->buckets[bucket_of(n->parent, n->name)]; *pp; pp = &(*pp)->hnext)
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	n->hashed = false;
	n->hnext = NULL;
	list_remove(n);
	list_push(&t->unhashed, n);
}

void node_maybe_free(struct nodes *t, struct node *n)
{
	while (n != &t->root && n->nlookup == 0 && n->children == 0 && !n->opens && !n->opening &&
	       n->state != NODE_LEAVING) {
		struct node *p = n->parent;

		node_unhash(t, n);
		list_remove(n);
		free(n->name);
		free(n);
		p->children--;
		n = p;
	}
}

struct node *child_new(struct nodes *t, struct node *parent, const char *name)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	n->parent = parent;
	parent->children++;
	node_hash(t, n);
	return n;
}

/* The ordinary node at (parent, name), made if none; a doc's node of any other state there is replaced. */
static struct node *child_get(struct nodes *t, struct node *parent, const char *name)
{
	struct node *n = child_find(t, parent, name);

	if (n && n->state == NODE_ORDINARY)
		return n;
	if (n)
		node_unhash(t, n);
	return child_new(t, parent, name);
}

/* Moves n to (parent, name), taking name (allocated) over. */
static void node_move(struct nodes *t, struct node *n, struct node *parent, char *name)
{
	node_unhash(t, n);
	free(n->name);
	n->name = name;
	n->parent->children--;
	n->parent = parent;
	parent->children++;
	node_hash(t, n);
}

/*
 * Its length has no bound but memory: a folder deep in the tree names its
 * files with paths longer than PATH_MAX (plain.c resolves those a piece at a
 * time). Table lock held.
 */
static int node_path(const struct nodes *t, const struct node *n, const char *name, struct sb *out,
		     bool *ret_removed)
{
	size_t len = name ? 1 + strlen(name) : 0, pos;
	bool removed = false;
	int r;

	for (const struct node *c = n; c != &t->root; c = c->parent) {
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
	for (const struct node *c = n; c != &t->root; c = c->parent) {
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

int nodes_path(struct nodes *t, fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed)
{
	int r;

	pthread_mutex_lock(&t->lock);
	r = node_path(t, ino_node(t, ino), name, out, ret_removed);
	pthread_mutex_unlock(&t->lock);
	return r;
}

static struct node_ref node_ref_of(const struct nodes *t, const struct node *n)
{
	return (struct node_ref){ .ino = node_ino(t, n), .version = n->state == NODE_VERSION, .dir = S_ISDIR(n->type) };
}

struct node_ref nodes_find(struct nodes *t, const char *rel)
{
	struct node_ref ref = { 0 };
	struct node *n = &t->root;
	const char *c = rel;

	pthread_mutex_lock(&t->lock);
	while (n && *c) {
		const char *end = strchrnul(c, '/');
		_cleanup_free_ char *name = strndup(c, (size_t)(end - c));

		if (!name) {
			n = NULL;
			break;
		}
		if (*name)
			n = child_find(t, n, name);
		c = *end ? end + 1 : end;
	}
	if (n && n != &t->root)
		ref = node_ref_of(t, n);
	pthread_mutex_unlock(&t->lock);
	return ref;
}

fuse_ino_t nodes_lookup(struct nodes *t, fuse_ino_t parent, const char *name, mode_t type, const uint64_t *fh)
{
	struct open_ref *o = NULL;
	struct node *n;

	if (fh) {
		o = malloc(sizeof(*o));
		if (!o)
			return 0;
		o->fh = *fh;
	}
	pthread_mutex_lock(&t->lock);
	n = child_get(t, ino_node(t, parent), name);
	if (n) {
		n->nlookup++;
		n->type = type & S_IFMT;
		if (o) {
			o->next = n->opens;
			n->opens = o;
			o = NULL;
		}
	}
	pthread_mutex_unlock(&t->lock);
	free(o);
	return n ? node_ino(t, n) : 0;
}

void nodes_forget(struct nodes *t, fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = ino_node(t, ino);

	if (n == &t->root)
		return;
	pthread_mutex_lock(&t->lock);
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	node_maybe_free(t, n);
	pthread_mutex_unlock(&t->lock);
}

void nodes_lookup_undo(struct nodes *t, fuse_ino_t ino, const uint64_t *fh)
{
	if (fh)
		nodes_open_remove(t, ino, *fh);
	nodes_forget(t, ino, 1);
}

void nodes_removed(struct nodes *t, fuse_ino_t parent, const char *name)
{
	struct node *n;

	pthread_mutex_lock(&t->lock);
	n = child_find(t, ino_node(t, parent), name);
	if (n) {
		node_unhash(t, n);
		node_gone(n); /* its link count is 0 now */
		node_maybe_free(t, n);
	}
	pthread_mutex_unlock(&t->lock);
}

/*
 * What stood at the new name is replaced (unhashed), unless exchanged; a
 * name that cannot be copied for want of memory leaves its node unhashed
 * under the old name: it is then looked up afresh.
 */
void nodes_renamed(struct nodes *t, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		   const char *newname, bool exchange)
{
	struct node *src, *dst;

	pthread_mutex_lock(&t->lock);
	src = child_find(t, ino_node(t, parent), name);
	dst = child_find(t, ino_node(t, newparent), newname);
	if (dst && dst != src)
		node_unhash(t, dst);
	if (src) {
		char *nn = strdup(newname);

		node_gone(src); /* a file at another path now */
		if (nn)
			node_move(t, src, ino_node(t, newparent), nn);
		else
			node_unhash(t, src);
	}
	if (exchange && dst && dst != src) {
		char *on = strdup(name);

		if (on)
			node_move(t, dst, ino_node(t, parent), on);
	} else if (dst && dst != src) {
		node_maybe_free(t, dst);
	}
	pthread_mutex_unlock(&t->lock);
}

void nodes_open_remove(struct nodes *t, fuse_ino_t ino, uint64_t fh)
{
	struct node *n = ino_node(t, ino);

	pthread_mutex_lock(&t->lock);
	for (struct open_ref **pp = &n->opens; *pp; pp = &(*pp)->next)
		if ((*pp)->fh == fh) {
			struct open_ref *o = *pp;

			*pp = o->next;
			free(o);
			break;
		}
	node_maybe_free(t, n);
	pthread_mutex_unlock(&t->lock);
}

bool nodes_with_open(struct nodes *t, fuse_ino_t ino, bool (*fn)(uint64_t fh, void *arg), void *arg)
{
	struct node *n = ino_node(t, ino);
	bool done = false;

	pthread_mutex_lock(&t->lock);
	if (!fn)
		done = n->opens != NULL;
	for (struct open_ref *o = n->opens; fn && o && !done; o = o->next)
		done = fn(o->fh, arg);
	pthread_mutex_unlock(&t->lock);
	return done;
}

int nodes_collect(struct nodes *t, bool (*match)(const char *const *up, size_t n), struct node_ref **ret,
		  size_t *ret_n)
{
	_cleanup_free_ struct node_ref *inos = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	pthread_mutex_lock(&t->lock);
	for (struct node *x = t->hashed_list; x; x = x->lnext) {
		const char *up[NODES_UP_MAX + 1];
		size_t depth = 0;

		for (const struct node *c = x; c != &t->root && depth <= NODES_UP_MAX; c = c->parent)
			up[depth++] = c->name;
		if (match && !match(up, depth))
			continue;
		if ((r = ARRAY_GROW(inos, n, cap, 64)) < 0)
			break;
		inos[n++] = node_ref_of(t, x);
	}
	/* Every node: the replaced ones their readers still hold too. */
	for (struct node *x = t->unhashed; r == 0 && !match && x; x = x->lnext) {
		if ((r = ARRAY_GROW(inos, n, cap, 64)) < 0)
			break;
		inos[n++] = node_ref_of(t, x);
	}
	pthread_mutex_unlock(&t->lock);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(inos);
	*ret_n = n;
	return 0;
}
