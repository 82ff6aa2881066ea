/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_SEEN_H
#define CONVFS_STORE_SEEN_H

/* What the store last saw of the folder underneath (seen.c). Same conventions as store.h. */

#include "store/store.h"

/*
 * The folder convfs is mounted over is taken in at every mount (fs/backing/import.c):
 * what was added or changed there while the store was not mounted goes into
 * the store. These rows remember what the store last saw of each entry, so
 * that the take-in reads only what changed since, and has the base of a
 * three-way merge for a doc that changed on both sides.
 */
struct store_seen {
	char *path;       /* relative to the folder, no leading slash */
	uint32_t type;    /* st_mode & S_IFMT */
	int64_t size;
	int64_t mtime_ns;
	uint64_t ino;
	/*
	 * A doc: the revision whose content is exactly this file's, the base
	 * of the next merge; 0 if no revision holds it (the take-in was a
	 * merge) or for anything else.
	 */
	int64_t rev;
	bool gone;        /* missing underneath at a take-in: reported once, kept in the store */
};

/* All rows, sorted by path (strcmp order). */
struct store_seen_set {
	struct store_seen *v;
	size_t n;
};

/*
 * The folder whose rows the calls below read and write (until the next
 * call): the one mounted over at path, device dev, inode ino, born at
 * born_ns (fd_born_ns(); 0 where its filesystem keeps no birth time). A
 * rebuilt container's folder of the same path is another folder, and so is
 * the host's; its device and inode may be the old one's again, its birth
 * time is not. *ret_taken: whether a take-in of it ever ended (else its
 * next one takes in all of it). A folder not taken in for 90 days is
 * forgotten here, with its rows. A read-only store makes no folder: a new
 * one has no rows, and nothing is recorded.
 */
int store_seen_folder(struct store *st, const char *path, uint64_t dev, uint64_t ino, int64_t born_ns,
		      bool *ret_taken);
/* A take-in of the folder ended. */
int store_seen_folder_taken(struct store *st);
/* The folder store_seen_folder() chose: its row's id (0: none, a read-only store's new folder). */
int64_t store_seen_folder_id(const struct store *st);
/* Calls fn with the path of each folder ever taken in (and not forgotten since), each once. */
int store_seen_folder_paths(struct store *st, int (*fn)(void *ctx, const char *path), void *ctx);

/* Loads every row (in pieces of a few thousand). Release with store_seen_set_release(). */
int store_seen_load(struct store *st, struct store_seen_set *ret);
/* Loads the rows of path and of everything below it. */
int store_seen_load_below(struct store *st, const char *path, struct store_seen_set *ret);
/* Loads the rows of the top level alone (one seek each, whatever is below them). */
int store_seen_load_top(struct store *st, struct store_seen_set *ret);
void store_seen_set_release(struct store_seen_set *set);
/* The row of path, or NULL (a binary search). */
struct store_seen *store_seen_find(const struct store_seen_set *set, const char *path);
/* Records what was seen of e->path (inserting or replacing its row). */
int store_seen_put(struct store *st, const struct store_seen *e);
/* Marks path gone underneath; nothing of it leaves the store. */
int store_seen_mark_gone(struct store *st, const char *path);

/*
 * A store that took the folder in before these rows existed (schema 4 and
 * older) did so once, at *ret_ns (0: not known); -ENOENT for any other store.
 * store_seen_legacy_done() forgets it, after the first take-in that used it.
 */
int store_seen_legacy(struct store *st, int64_t *ret_ns);
int store_seen_legacy_done(struct store *st);
/* The docs that import took in: path and the last revision it made of each (rev). */
int store_seen_load_imports(struct store *st, struct store_seen_set *ret);

#endif
