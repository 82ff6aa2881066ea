/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_QUICK_H
#define CONVFS_QUICK_H

/*
 * The take-in's quick check (quick.c): whether the folder underneath is
 * still what the store last saw of it (table `underneath`, import.c).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "store/store_seen.h"

static inline int64_t mtime_of(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* True if e was last seen exactly as st: type, size, mtime and inode. */
static inline bool seen_same(const struct store_seen *e, const struct stat *st)
{
	return !e->gone && e->type == (st->st_mode & S_IFMT) && e->size == st->st_size &&
	       e->mtime_ns == mtime_of(st) && e->ino == st->st_ino;
}

/*
 * Sets *ret_same to whether the top level of src_fd is as top (the rows of
 * the top level, store_seen_load_top()) says: every entry as seen, and none
 * missing. Nothing is walked into. 0 or -errno.
 */
int quick_top_same(const struct store_seen_set *top, int src_fd, bool *ret_same);

/*
 * Sets *ret_same to whether the entry name of the top-level folder top
 * underneath src_fd, and all below it, is as rows (its rows,
 * store_seen_load_below()) says; true as well if nothing underneath has
 * that name. 0 or -errno.
 */
int quick_point(const struct store_seen_set *rows, int src_fd, const char *top, const char *name, bool *ret_same);

struct quick; /* a quick check under way */

/*
 * Begins a quick check of src_fd against seen: looks at the top level and
 * lists its folders, on this thread. *ret is the check (NULL only when out
 * of memory), to end with quick_end() and free with quick_free() whatever
 * this returns. Returns 0 or -errno (the check then differs).
 */
int quick_begin(const struct store_seen_set *seen, bool *visited, int src_fd, struct quick **ret);

/* True once the check found a difference (or failed): the take-in proper must run. */
bool quick_differs_yet(const struct quick *q);

/*
 * Walks every entry one level down, on this thread and more (which inherit
 * its priority); returns when all are looked at or a difference stops it.
 */
void quick_walk(struct quick *q);

/*
 * Looks at the entries one level down that no thread has taken yet, on this
 * thread, until none is left or a difference stops it: a request that must
 * wait for the whole walk helps it at its own priority, where the walk's
 * threads (at the lowest) may get no CPU on a busy machine.
 */
void quick_help(struct quick *q);

/*
 * Waits until every entry one level down was looked at: true if none
 * differs (nothing the take-in could change is left), false at the first
 * difference. Call after quick_help(), which leaves no entry untaken.
 */
bool quick_all_same(struct quick *q);

/*
 * Whether rel (a path from the top, "" for it) may be served as it is while
 * the walk goes on: true if what is underneath at rel was looked at and is
 * as seen, or nothing underneath can change it (no such entry one level
 * down); false once the check differs, and for the listing (listing) of a
 * top-level folder, which waits for all of its entries. Looks at rel's
 * entry one level down at once if no thread has taken it yet; waits for the
 * thread that has. Any thread, at any time before quick_free().
 */
bool quick_serves(struct quick *q, const char *rel, bool listing);

/*
 * Ends the check: true if nothing changed underneath src_fd since the last
 * take-in, every entry being as seen says and nothing in it missing. Waits
 * for the looks quick_serves() is making. Marks visited (one bool per row
 * of seen) and adds the entries looked at to *files; on false, clears
 * visited and sets *files to 0. After it, quick_serves() answers false or
 * from what was looked at.
 */
bool quick_end(struct quick *q, unsigned long *files);

void quick_free(struct quick *q);

#endif
