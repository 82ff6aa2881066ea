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
 * True if nothing changed underneath src_fd since the last take-in: every
 * entry is as seen says, and nothing in it is missing. Marks visited (one
 * bool per row of seen) and adds the entries looked at to *files; on false,
 * clears visited and sets *files to 0.
 */
bool quick_unchanged(const struct store_seen_set *seen, bool *visited, int src_fd, unsigned long *files);

#endif
