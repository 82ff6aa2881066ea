/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SYNC_GLUE_H
#define CONVFS_SYNC_GLUE_H

/*
 * The mount's side of one history across machines (store/sync.h): the
 * options -o sync=CONNINFO and -o sync_key=FILE, the sync's thread started
 * once the mount serves and stopped before the store is closed, and what a
 * commit pulled from another machine tells the kernel (sync_glue.c).
 */

#include <stdbool.h>

#include "fs/fs.h"

struct sync_glue;

/*
 * Before mounting, with fs->store open: checks the options (no password
 * in conninfo; a key file only its owner reads) and makes the store one
 * that syncs. 0, or -errno with the reason logged (nothing is mounted).
 * *ret is the caller's to free with sync_glue_free() (NULL: no -o sync).
 */
int sync_glue_prepare(struct fs *fs, const char *conninfo, const char *key_path, struct sync_glue **ret);
/*
 * Before mounting, the store closed: a store that never synced takes in
 * every commit of the log first, with a progress line (a machine set up
 * anew from the log). PostgreSQL out of reach is not fatal: the thread
 * takes them in once it is back.
 */
void sync_glue_catch_up(struct sync_glue *g, struct fs *fs, const char *store_path);
/* Once the mount serves: the sync's thread, for fs. 0 or -errno (logged; the mount goes on without). */
int sync_glue_start(struct sync_glue *g, struct fs *fs, const char *store_path);
/* Stops the thread (the last commits pushed if PostgreSQL answers), before the store is closed. */
void sync_glue_stop(struct sync_glue *g);
void sync_glue_free(struct sync_glue *g);

#endif
