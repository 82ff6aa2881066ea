/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_DIRS_H
#define CONVFS_DIRS_H

/*
 * Folder listings for readdir (dirs.c). The kernel opens folders itself and
 * keeps their listings (ll_opendir()); it asks for one only when it has
 * none, in pieces by offset.
 */

#include <fuse_lowlevel.h>
#include <stdbool.h>

struct dir_listing;
struct dirs;
struct nodes;
struct route;

/* A mount's listings, whose readdirplus lookups are counted in nodes; -ENOMEM. */
int dirs_new(struct nodes *nodes, struct dirs **ret);
/* At the session's end (no request runs any more): frees the listings still kept, and d. */
void dirs_free(struct dirs *d);

/*
 * The listing of folder ino that a readdir from offset off continues, with a
 * reference (dir_reply() drops it); NULL if none is kept for it (off 0, or
 * a listing dropped meanwhile).
 */
struct dir_listing *dir_listing_find(struct dirs *d, fuse_ino_t ino, off_t off);
/* Lists the folder rt names, node ino (as op_list_dir() does), into a new kept listing, with a reference. */
int dir_listing_new(struct dirs *d, fuse_ino_t ino, const struct route *rt, struct dir_listing **ret);
/* Replies to a readdir of the listing from offset off, and drops the reference. */
void dir_reply(struct dirs *d, fuse_req_t req, struct dir_listing *l, size_t size, off_t off);
/*
 * Fills *e with the node and attributes of the entry name of folder parent,
 * counted as one lookup of it, and returns true; or false, for an entry
 * without them (e is then left to dir_reply_plus()).
 */
typedef bool (*dir_entry_fn)(void *arg, fuse_ino_t parent, const char *name, struct fuse_entry_param *e);
/*
 * Replies to a readdirplus as dir_reply() to a readdir, each entry's node
 * and attributes from entry(), and drops the reference. The lookups entry()
 * counted are forgotten again if the reply does not reach the kernel.
 */
void dir_reply_plus(struct dirs *d, fuse_req_t req, struct dir_listing *l, size_t size, off_t off,
		    dir_entry_fn entry, void *arg);

#endif
