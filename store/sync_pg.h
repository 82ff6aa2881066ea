/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SYNC_PG_H
#define CONVFS_SYNC_PG_H

/* The shared log in PostgreSQL (sync_pg.c): a struct sync_log_ops and its state. */

#include "store/sync_internal.h"

struct sync_pg;

/*
 * A log reached through conninfo, sealed with key (SYNC_KEY_SIZE bytes;
 * NULL: not sealed), for machine (its UUID) called name. Connects at the
 * first call of sync_pg_ops.connect. Free with sync_pg_free().
 */
int sync_pg_new(const char *conninfo, const unsigned char *key, const char *machine, const char *name,
		struct sync_pg **ret);
void sync_pg_free(struct sync_pg *pg);
/* Why the last call failed, one line ("" if it did not). */
const char *sync_pg_error(const struct sync_pg *pg);

/*
 * Writes every entry of the log that holds what f forgets again without it
 * (sync_forget_entry()). 0 or -errno.
 */
int sync_pg_forget(struct sync_pg *pg, const struct store_forget *f, store_progress_fn progress, void *ctx);

extern const struct sync_log_ops sync_pg_ops;

#endif
