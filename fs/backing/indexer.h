/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_INDEXER_H
#define CONVFS_INDEXER_H

/*
 * The search index's build behind the mount (indexer.c): what a store's
 * first take-in, or the upgrade of a store from before the index, left for
 * the index to take in, and the text of large messages past what their
 * commits indexed (store_search_build()).
 */

#include "store/store.h"

struct indexer;

/*
 * Starts the build on a thread of its own, which goes on with one under
 * way, then takes in what commits leave it (*ret NULL for a read-only
 * store, or one without an index). 0 or -errno.
 */
int indexer_start(struct store *st, struct indexer **ret);
/* Stops it between two steps (what it did is kept; the next mount goes on) and frees it. NULL: nothing. */
void indexer_stop(struct indexer *ix);

#endif
