/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_WATCH_H
#define CONVFS_WATCH_H

/*
 * The watcher (watch.c): the daemon's thread that learns of the commits it
 * did not make (another daemon serving the same store, the sync's own
 * connection) and tells the kernel what they made stale. It serves no
 * request, so it is also where a file's pages may be dropped.
 */

#include "fs/fs.h"

struct watch;

/*
 * Starts watching for fs, whose store path is store_path: from the end of
 * the log now (what was committed before is what the kernel is about to
 * see). 0 or -errno, logged: without it this mount would not see other
 * mounts' commits until the kernel asks again.
 */
int watch_start(struct fs *fs, const char *store_path, struct watch **ret);

/* Stops the thread and frees w (NULL: nothing). */
void watch_stop(struct watch *w);

/* The other daemons serving the store now, as the watcher last counted them. */
int watch_peers(const struct fs *fs);

#endif
