/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_OPS_H
#define CONVFS_STORE_OPS_H

/*
 * What the tools that look inside a store need (`convfs check`, `convfs
 * forget`), apart from docs and snapshots (store.h). Same conventions as
 * store.h. Meant for a store no daemon serves.
 */

#include "store/store.h"

/* Called once a problem found: one line, no newline; a negative return stops. */
typedef int (*store_problem_fn)(void *ctx, const char *line);
/* Called now and then while a long call works: done of total steps. */
typedef void (*store_progress_fn)(void *ctx, int64_t done, int64_t total);

/*
 * Checks the store: SQLite's integrity check, the schema version, and the
 * store's own invariants (each array doc's current rows against its row:
 * count, positions, byte offsets, sizes; each whole doc's last blob; rows
 * and revisions that name what does not exist). Returns the number of
 * problems reported through fn, or -errno.
 */
int store_check(struct store *st, store_problem_fn fn, store_progress_fn progress, void *ctx);

#endif
