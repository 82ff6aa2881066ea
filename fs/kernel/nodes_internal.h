/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_NODES_INTERNAL_H
#define CONVFS_NODES_INTERNAL_H

/*
 * What nodes.c (the table: ids, names, lifetimes, handles) and states.c (the
 * states of a doc's node) share. Nothing else looks inside a node.
 */

#include <pthread.h>

#include "fs/kernel/nodes.h"

#define HASH_BUCKETS (1u << 16)

/*
 * The states of a node (states.c draws them with their events). Every node
 * begins ORDINARY but a doc's node made by a lookup of a version, which
 * begins VERSION.
 */
enum node_state {
	NODE_ORDINARY, /* asked afresh: any node but a doc's version node */
	NODE_VERSION,  /* a doc's node standing for revision ver: kept by the kernel for good */
	NODE_LEAVING,  /* was VERSION; the kernel is told to drop its attributes; opens wait */
	NODE_HELD,     /* ORDINARY, kept at its name for the retry of thread hold's open */
	NODE_STATES,
};

struct open_ref {
	uint64_t fh;
	struct open_ref *next;
};

/*
 * A version's attributes: the fields of a struct stat that a file's
 * attributes sent to the kernel carry, in 80 bytes where a struct stat takes
 * 144. Every node has one, and the kernel keeps a node for each name it has
 * looked up (90,000 after an ls -lR of 10,000 tasks), so this is most of the
 * table's memory.
 */
struct version_attr {
	uint64_t ino;
	int64_t size, blocks;
	int64_t sec[3];   /* atime, mtime, ctime */
	uint32_t nsec[3];
	uint32_t mode, nlink, uid, gid, blksize;
};

struct node {
	struct node *parent;
	char *name;
	uint64_t nlookup;
	struct node *hnext;
	struct node *lnext, **lprev; /* the table's list of hashed or of unhashed nodes, as hashed says */
	struct open_ref *opens;
	int64_t ver;       /* VERSION, LEAVING: the doc's revision it stands (stood) for */
	unsigned children; /* nodes whose parent this is */
	unsigned opening;  /* opens between nodes_open_begin() and nodes_open_end() */
	unsigned stale;    /* of those, readers waiting in nodes_open_stale() for the others */
	enum node_state state;
	pid_t hold;        /* HELD: the thread whose retry of an open it is kept for */
	mode_t type;       /* S_IFMT bits of its last lookup; 0 unknown */
	bool hashed;       /* still reachable by (parent, name); else on the list of unhashed */
	struct version_attr vst; /* VERSION: its attributes */
};

struct nodes {
	struct node root;
	struct node *buckets[HASH_BUCKETS];
	/*
	 * The same nodes listed: a walk of all of them (nodes_collect(), after
	 * each commit another daemon made) visits the nodes, not 65,536
	 * buckets mostly empty.
	 */
	struct node *hashed_list;
	/*
	 * Unhashed nodes the kernel still holds. A version node replaced by a
	 * lookup stays in the kernel's inode cache until memory runs short or
	 * the mount ends, when the kernel forgets nothing: listed, they are not
	 * lost.
	 */
	struct node *unhashed;
	pthread_mutex_t lock;
	/* An open ended, or a node left: opens waiting in states.c look again. */
	pthread_cond_t changed;
	/* Told of each node that leaves, with no lock held (nodes_set_left_hook()). */
	void (*left_hook)(void *arg, fuse_ino_t ino);
	void *left_arg;
};

static inline struct node *ino_node(struct nodes *t, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &t->root : (struct node *)(uintptr_t)ino;
}

static inline fuse_ino_t node_ino(const struct nodes *t, const struct node *n)
{
	return n == &t->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* The table's lock held for all of these (nodes.c). */
struct node *child_find(struct nodes *t, struct node *parent, const char *name);
/* A new ORDINARY node at (parent, name), hashed; NULL if out of memory. */
struct node *child_new(struct nodes *t, struct node *parent, const char *name);
void node_unhash(struct nodes *t, struct node *n);
/* Frees n and then its parents, as long as nothing refers to them. */
void node_maybe_free(struct nodes *t, struct node *n);

/*
 * The events of states.c that nodes.c raises, the table's lock held: n now
 * names another file (renamed) or none (removed).
 */
void node_gone(struct node *n);

#endif
