/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_NODES_H
#define CONVFS_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "store/util.h"

/*
 * The node table: the kernel's node ids and what each names, (parent, name).
 * Every function takes the table's one lock itself and lets go before it
 * returns. Under it, only nodes_with_open()'s callback takes further locks
 * (an open file's, and those below it in the order of docs/ARCHITECTURE.md,
 * "Threads and locks"); nothing here calls the kernel. See nodes.c for the why.
 */

/*
 * Writes the path of ino (plus "/name" if name) into out, starting with '/'.
 * *ret_removed (if not NULL) tells whether ino, or a folder above it, was
 * removed or replaced: the path is then the last one it had.
 */
int nodes_path(fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed);

/* The node of the path rel (relative to the root, "a/b"), or 0 if the table has none. */
fuse_ino_t nodes_find(const char *rel);

/*
 * Counts one lookup of parent/name, making its node if it has none; with fh,
 * also records fh as a handle open on it (a create). 0 if out of memory.
 */
fuse_ino_t nodes_lookup(fuse_ino_t parent, const char *name, const uint64_t *fh);

/* The kernel forgets nlookup lookups of ino. */
void nodes_forget(fuse_ino_t ino, uint64_t nlookup);

/* The name parent/name is gone: its node keeps its last path until forgotten. */
void nodes_removed(fuse_ino_t parent, const char *name);

/* parent/name was renamed to newparent/newname (swapped with it if exchange). */
void nodes_renamed(fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
		   bool exchange);

/* Handles open on a node: a removed file stays reachable through them. */
void nodes_open_add(fuse_ino_t ino, uint64_t fh);
void nodes_open_remove(fuse_ino_t ino, uint64_t fh);

/*
 * Calls fn with each handle open on ino, under the table lock so that none
 * can be released meanwhile, until fn returns true; returns whether one did
 * (false at once if ino has none open). With no fn: whether ino has a
 * handle open.
 */
bool nodes_with_open(fuse_ino_t ino, bool (*fn)(uint64_t fh, void *arg), void *arg);

/*
 * The ids of every node that match() accepts, in *ret (free() it), their
 * number in *ret_n. match() gets the node's name and those of the folders
 * above it, nearest first, and their number (the root's excepted); a node
 * deeper than NODES_UP_MAX folders gets NODES_UP_MAX + 1 and no names past
 * those. -ENOMEM.
 */
#define NODES_UP_MAX 4
int nodes_collect(bool (*match)(const char *const *up, size_t n), fuse_ino_t **ret, size_t *ret_n);

#endif
