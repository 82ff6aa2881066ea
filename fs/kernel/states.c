/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * states.c: the states of a node, and the one place that moves a node from
 * one to another.
 *
 * A doc's node from a lookup stands for the revision the doc had then (a
 * version node), with the attributes it had: they and the pages the kernel
 * caches under the node never change, so the kernel may keep them for good,
 * and a lookup after the doc changed gets a new node (the old one is
 * unhashed: its open handles keep it). Every other node is ordinary: asked
 * afresh, and told of changes (kcache.c).
 *
 *        lookup of a version (a new node)
 *                    |
 *                    v            leave                    told
 *                 VERSION ------------------> LEAVING ------------> ORDINARY
 *                    |                                                |  ^
 *                    | gone (removed, renamed)                   hold |  | retry
 *                    +------------------------------------------>     v  |
 *                                                 ORDINARY           HELD
 *
 * leave: a handle opened for writing, a truncate or chmod, or a reader who
 *   found the doc changed, while nobody else has the node open. The kernel
 *   has kept the version's attributes for good, and an ordinary node's
 *   reader reads the doc as it is now (node's readFile would read the new
 *   version cut to the old size): so the kernel is told to drop them first,
 *   while the node is LEAVING, by the thread that made it leave, with no lock
 *   held; every open of a LEAVING node waits until it is told (told). Telling
 *   the kernel to drop attributes (never pages) waits for no request, so that
 *   wait ends.
 * hold: the same while others have the node open: it is unhashed (its readers
 *   keep it) and the open fails with -ESTALE. The kernel then looks the name
 *   up again and retries the open once: it finds an ordinary node there
 *   (HELD), kept at the name until the thread that retries opens it (retry),
 *   so that it cannot fail again; nothing written ever shows under a node
 *   whose readers cache their version.
 * gone: the node names another file (renamed) or none (removed).
 *
 * transitions[] is the machine: node_on() moves a node along one of its rows
 * only, and an event a state has no row for leaves it alone. The counts of
 * opens under way (opening, stale) are not states: they say who waits for
 * whom (nodes_open_stale()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/kernel/nodes_internal.h"

enum node_event {
	EV_LEAVE,  /* a writer, a setattr, a stale reader, with the node to itself */
	EV_TOLD,   /* the kernel dropped the attributes it kept for the version */
	EV_HOLD,   /* a shared version left: the name's ordinary node kept for the retry */
	EV_RETRY,  /* that thread's open begins */
	EV_GONE,   /* renamed or removed */
};

static const struct transition {
	enum node_state from;
	enum node_event on;
	enum node_state to;
} transitions[] = {
	{ NODE_VERSION, EV_LEAVE, NODE_LEAVING },
	{ NODE_LEAVING, EV_TOLD, NODE_ORDINARY },
	{ NODE_ORDINARY, EV_HOLD, NODE_HELD },
	{ NODE_HELD, EV_HOLD, NODE_HELD },
	{ NODE_HELD, EV_RETRY, NODE_ORDINARY },
	{ NODE_VERSION, EV_GONE, NODE_ORDINARY },
};

/* Moves n along the row of its state and ev, if there is one. Table lock held. */
static void node_on(struct node *n, enum node_event ev)
{
	for (size_t i = 0; i < ARRAY_SIZE(transitions); i++)
		if (transitions[i].from == n->state && transitions[i].on == ev) {
			n->state = transitions[i].to;
			return;
		}
}

void node_gone(struct node *n)
{
	node_on(n, EV_GONE);
}

void nodes_set_left_hook(struct nodes *t, void (*fn)(void *arg, fuse_ino_t ino), void *arg)
{
	pthread_mutex_lock(&t->lock);
	t->left_hook = fn;
	t->left_arg = arg;
	pthread_mutex_unlock(&t->lock);
}

/* Until n is told it left. Table lock held. */
static void wait_left(struct nodes *t, struct node *n)
{
	while (n->state == NODE_LEAVING)
		pthread_cond_wait(&t->changed, &t->lock);
}

/*
 * Lets go of the table lock; if this thread made n leave (left), tells the
 * kernel, with no lock held, and then n's waiters that it was told.
 * (A LEAVING node is never freed: n lives until then.)
 */
static void unlock_telling(struct nodes *t, struct node *n, bool left)
{
	void (*hook)(void *arg, fuse_ino_t ino) = t->left_hook;
	void *arg = t->left_arg;

	pthread_mutex_unlock(&t->lock);
	if (!left)
		return;
	if (hook)
		hook(arg, node_ino(t, n));
	pthread_mutex_lock(&t->lock);
	node_on(n, EV_TOLD);
	pthread_cond_broadcast(&t->changed);
	node_maybe_free(t, n);
	pthread_mutex_unlock(&t->lock);
}

/* st as a version's attributes: a doc's, which has no device numbers. */
static void attr_pack(struct version_attr *a, const struct stat *st)
{
	const struct timespec *ts[3] = { &st->st_atim, &st->st_mtim, &st->st_ctim };

	a->ino = st->st_ino;
	a->size = st->st_size;
	a->blocks = st->st_blocks;
	for (int i = 0; i < 3; i++) {
		a->sec[i] = ts[i]->tv_sec;
		a->nsec[i] = (uint32_t)ts[i]->tv_nsec;
	}
	a->mode = st->st_mode;
	a->nlink = st->st_nlink > UINT32_MAX ? UINT32_MAX : (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->blksize = (uint32_t)st->st_blksize;
}

static void attr_unpack(const struct version_attr *a, struct stat *st)
{
	struct timespec *ts[3] = { &st->st_atim, &st->st_mtim, &st->st_ctim };

	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_size = a->size;
	st->st_blocks = a->blocks;
	for (int i = 0; i < 3; i++) {
		ts[i]->tv_sec = a->sec[i];
		ts[i]->tv_nsec = a->nsec[i];
	}
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_blksize = a->blksize;
}

fuse_ino_t nodes_lookup_version(struct nodes *t, fuse_ino_t parent, const char *name, int64_t rev,
				 const struct stat *st, bool *ret_version)
{
	struct node *n;

	pthread_mutex_lock(&t->lock);
	n = child_find(t, ino_node(t, parent), name);
	if (n && n->state == NODE_HELD) {
		n->nlookup++;
		pthread_mutex_unlock(&t->lock);
		*ret_version = false;
		return node_ino(t, n);
	}
	*ret_version = true;
	if (n && !(n->state == NODE_VERSION && n->ver == rev)) {
		node_unhash(t, n);
		n = NULL;
	}
	if (!n && (n = child_new(t, ino_node(t, parent), name)))
		n->state = NODE_VERSION;
	if (n) {
		n->nlookup++;
		n->ver = rev;
		attr_pack(&n->vst, st);
		n->type = S_IFREG;
	}
	pthread_mutex_unlock(&t->lock);
	return n ? node_ino(t, n) : 0;
}

bool nodes_version_stat(struct nodes *t, fuse_ino_t ino, struct stat *st)
{
	struct node *n = ino_node(t, ino);
	bool version;

	pthread_mutex_lock(&t->lock);
	version = n->state == NODE_VERSION;
	if (version)
		attr_unpack(&n->vst, st);
	pthread_mutex_unlock(&t->lock);
	return version;
}

/* Whether a handle is open on n, or being opened, other than mine of them. */
static bool node_busy(const struct node *n, unsigned mine)
{
	return n->opens || n->opening > mine;
}

/*
 * n stops standing for its version: alone (nobody but mine has it open) it
 * leaves (*left: the caller tells the kernel, unlock_telling()); shared, the
 * name gets a node held for pid's retry, and -ESTALE. Table lock held.
 */
static int node_leave(struct nodes *t, struct node *n, unsigned mine, pid_t pid, bool *left)
{
	struct node *cur;

	if (n->state != NODE_VERSION)
		return 0;
	if (!node_busy(n, mine)) {
		node_on(n, EV_LEAVE);
		*left = true;
		return 0;
	}
	/* n may be unhashed already, and the name hold the next version's node, as stale by then. */
	cur = child_find(t, n->parent, n->name);
	if (!cur || cur->state == NODE_VERSION || cur->state == NODE_LEAVING) {
		if (cur)
			node_unhash(t, cur);
		cur = child_new(t, n->parent, n->name);
	}
	if (cur) { /* (else out of memory: the retry finds no node, and looks the name up afresh) */
		node_on(cur, EV_HOLD);
		cur->hold = pid;
	}
	return -ESTALE;
}

int nodes_open_begin(struct nodes *t, fuse_ino_t ino, bool writes, pid_t pid, int64_t *ret_ver, bool *ret_left)
{
	struct node *n = ino_node(t, ino);
	bool left = false;
	int r = 0;

	*ret_ver = 0;
	pthread_mutex_lock(&t->lock);
	wait_left(t, n);
	if (n->state == NODE_HELD && n->hold == pid) {
		node_on(n, EV_RETRY);
		n->hold = 0;
	}
	if (writes)
		r = node_leave(t, n, 0, pid, &left);
	else if (n->state == NODE_VERSION)
		*ret_ver = n->ver;
	if (r == 0)
		n->opening++;
	unlock_telling(t, n, left);
	if (ret_left)
		*ret_left = left;
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
int nodes_open_stale(struct nodes *t, fuse_ino_t ino, pid_t pid, bool again, bool *ret_left)
{
	struct node *n = ino_node(t, ino);
	bool left = false;
	int r;

	pthread_mutex_lock(&t->lock);
	n->stale++;
	while (n->state == NODE_VERSION && !n->opens && n->opening > n->stale)
		pthread_cond_wait(&t->changed, &t->lock);
	n->stale--;
	wait_left(t, n);
	if (n->state == NODE_VERSION && n->opens && !again) {
		r = -EAGAIN; /* a handle to share the version with, perhaps */
	} else if (n->state == NODE_VERSION && !n->opens) {
		/* Alone among handles: the others under way are stale readers, who wait for it to be told. */
		node_on(n, EV_LEAVE);
		left = true;
		r = 0;
	} else {
		r = node_leave(t, n, 1, pid, &left);
	}
	if (n->stale && n->state != NODE_VERSION)
		pthread_cond_broadcast(&t->changed); /* the readers still waiting look again */
	unlock_telling(t, n, left);
	if (ret_left)
		*ret_left = left;
	return r;
}

int nodes_open_end(struct nodes *t, fuse_ino_t ino, const uint64_t *fh)
{
	struct open_ref *o = fh ? malloc(sizeof(*o)) : NULL;
	struct node *n = ino_node(t, ino);

	pthread_mutex_lock(&t->lock);
	n->opening--;
	if (n->stale)
		pthread_cond_broadcast(&t->changed);
	if (o) {
		o->fh = *fh;
		o->next = n->opens;
		n->opens = o;
	}
	node_maybe_free(t, n);
	pthread_mutex_unlock(&t->lock);
	return fh && !o ? -ENOMEM : 0;
}

int nodes_version_leave(struct nodes *t, fuse_ino_t ino, bool truncates, pid_t pid)
{
	struct node *n = ino_node(t, ino);
	bool left = false;
	int r;

	pthread_mutex_lock(&t->lock);
	wait_left(t, n);
	r = node_leave(t, n, 0, pid, &left);
	if (r < 0 && !truncates) {
		/* Unhashed already: its readers see their own version's attributes (through their handles). */
		node_on(n, EV_LEAVE);
		left = true;
		r = 0;
	}
	unlock_telling(t, n, left);
	return r;
}
