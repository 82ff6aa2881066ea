/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_NODES_H
#define CONVFS_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "store/util.h"

/*
 * The node table of a mount: the kernel's node ids and what each names,
 * (parent, name) (nodes.c), and the states of each node (states.c). Every
 * function takes the table's one lock itself and lets go before it returns.
 * Under it, only nodes_with_open()'s callback takes further locks (an open
 * file's, and those below it in the order of docs/ARCHITECTURE.md, "Threads
 * and locks"); nothing calls the kernel under it.
 */

struct nodes;

/* A new table, holding the root alone; -ENOMEM. */
int nodes_new(struct nodes **ret);
/* At the session's end: frees the table and every node still in it. */
void nodes_free(struct nodes *t);
/*
 * At the session's end, before nodes_free(): hands fn every handle still
 * recorded as open, and forgets it. An unmount that tears the connection down
 * while the kernel still sends releases leaves such handles: nobody else
 * would free them.
 */
void nodes_release_left(struct nodes *t, void (*fn)(uint64_t fh, void *arg), void *arg);

/*
 * Writes the path of ino (plus "/name" if name) into out, starting with '/'.
 * *ret_removed (if not NULL) tells whether ino, or a folder above it, was
 * removed or replaced: the path is then the last one it had.
 */
int nodes_path(struct nodes *t, fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed);

/*
 * A node as the kernel caches it: its id, whether it is a version node, and
 * whether it is a folder, whose cached pages are its listing. (Its type is
 * the one its last lookup gave: the kernel's inode for the id has that type,
 * since the kernel makes a new inode when a lookup gives the id another.)
 */
struct node_ref {
	fuse_ino_t ino;
	bool version;
	bool dir;
};

/* The node of the path rel (relative to the root, "a/b"), or ino 0 if the table has none. */
struct node_ref nodes_find(struct nodes *t, const char *rel);

/*
 * Counts one lookup of parent/name, of type (S_IFMT bits), making its node
 * if it has none; with fh, also records fh as a handle open on it (a
 * create). 0 if out of memory.
 */
fuse_ino_t nodes_lookup(struct nodes *t, fuse_ino_t parent, const char *name, mode_t type,
			const uint64_t *fh);

/* Takes back a lookup counted by nodes_lookup() whose reply never reached the kernel, with its handle fh. */
void nodes_lookup_undo(struct nodes *t, fuse_ino_t ino, const uint64_t *fh);

/* ---- the states of a node (states.c, which draws them) ---------------------- */

/*
 * A lookup of a doc that has revision rev, attributes st: the name's
 * VERSION node for rev, made if it has none (a node for another revision,
 * or an ordinary one, is replaced). *ret_version false: the name's node is
 * HELD for a thread's retry of an open, and is what the lookup gets.
 */
fuse_ino_t nodes_lookup_version(struct nodes *t, fuse_ino_t parent, const char *name, int64_t rev,
				 const struct stat *st, bool *ret_version);

/*
 * fn(arg, ino) is called, with no lock held, by the thread that made node ino
 * leave its version, before any open can find it ordinary: it must have the
 * kernel drop the node's attributes (attributes only: that waits for no
 * request).
 */
void nodes_set_left_hook(struct nodes *t, void (*fn)(void *arg, fuse_ino_t ino), void *arg);

/* Whether ino is a version node; its attributes into *st if so. */
bool nodes_version_stat(struct nodes *t, fuse_ino_t ino, struct stat *st);

/*
 * A setattr of ino: a version node leaves; if others have it open, it is
 * unhashed, and a truncate fails with -ESTALE (their size would change).
 */
int nodes_version_leave(struct nodes *t, fuse_ino_t ino, bool truncates, pid_t pid);

/*
 * An open of ino begins: a writer makes a version node leave (-ESTALE if
 * others have it open); a reader gets the revision it stands for in *ret_ver
 * (0 if none). Until nodes_open_end(), the open counts as a handle on ino.
 * *ret_left (if not NULL): whether the node left.
 */
int nodes_open_begin(struct nodes *t, fuse_ino_t ino, bool writes, pid_t pid, int64_t *ret_ver, bool *ret_left);

/*
 * A reader of a version node found the doc at another revision, and no handle
 * open on the node to share its version with. It first waits for the other
 * opens under way on the node (but those of readers in the same case). Then:
 * -EAGAIN if a handle is open on the node now (its version may be shared;
 * the second call, again, does not wait for that); else the node leaves
 * (*ret_left) or has left, and the reader opens the doc as it is now; a
 * handle open on it that did not share makes it -ESTALE, as for a writer.
 */
int nodes_open_stale(struct nodes *t, fuse_ino_t ino, pid_t pid, bool again, bool *ret_left);

/* The open of ino ends; with fh, the handle it made (-ENOMEM: not recorded). */
int nodes_open_end(struct nodes *t, fuse_ino_t ino, const uint64_t *fh);

/* The kernel forgets nlookup lookups of ino. */
void nodes_forget(struct nodes *t, fuse_ino_t ino, uint64_t nlookup);

/* The name parent/name is gone: its node keeps its last path until forgotten. */
void nodes_removed(struct nodes *t, fuse_ino_t parent, const char *name);

/* parent/name was renamed to newparent/newname (swapped with it if exchange). */
void nodes_renamed(struct nodes *t, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		   const char *newname, bool exchange);

/* A handle open on a node is released (a removed file stays reachable through its handles). */
void nodes_open_remove(struct nodes *t, fuse_ino_t ino, uint64_t fh);

/*
 * Calls fn with each handle open on ino, under the table lock so that none
 * can be released meanwhile, until fn returns true; returns whether one did
 * (false at once if ino has none open). With no fn: whether ino has a
 * handle open.
 */
bool nodes_with_open(struct nodes *t, fuse_ino_t ino, bool (*fn)(uint64_t fh, void *arg), void *arg);

/*
 * Every node still under its name (not a removed or replaced one) that
 * match() accepts, in *ret (free() it), their number in
 * *ret_n. match() gets the node's name and those of the folders above it,
 * nearest first, and their number (the root's excepted); a node deeper than
 * NODES_UP_MAX folders gets NODES_UP_MAX + 1 and no names past those.
 * match NULL: every node, the removed and replaced ones the kernel still
 * knows (a reader holds them open) included. -ENOMEM.
 */
#define NODES_UP_MAX 4
int nodes_collect(struct nodes *t, bool (*match)(const char *const *up, size_t n), struct node_ref **ret,
		  size_t *ret_n);

#endif
