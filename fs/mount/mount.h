/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_MOUNT_H
#define CONVFS_MOUNT_H

/*
 * Mounting, in the steps fs/main.c runs: prepare.c before the fork, serve.c
 * from the fork to the unmount.
 */

#include <stdbool.h>

#include "fs/fs.h"

struct fuse_args;

/*
 * The store -o store= names (opt), made absolute, or the default for
 * mountpoint under $XDG_DATA_HOME/convfs/, into *ret; said on stderr if it
 * fails. 0 or -errno.
 */
int store_path_of(const char *opt, const char *mountpoint, char **ret);

/* What prepare_store() takes of the command line. */
struct prepare_options {
	bool no_import;       /* -o no_import: the folder underneath is left alone */
	const char *sync;     /* -o sync=CONNINFO, or NULL */
	const char *sync_key; /* -o sync_key=FILE, or NULL */
};

/*
 * Step 1: the store opened (made), locked, checked and registered beside,
 * and the folder underneath opened into *ret_under_fd (taken in whole on
 * the first mount). 0 or -errno, said in the log.
 */
int prepare_store(struct fs *fs, const char *store_path, const char *mountpoint, const struct prepare_options *opts,
		  int *ret_under_fd);
/* Takes turns with the other daemons of the store at SQLite's write lock (store_turns()); not fatal. */
void turns_join(struct fs *fs, const char *store_path);

/*
 * Step 3: mounts at mountpoint and serves until unmounted or stopped by a
 * signal, then ends it all and closes the store. under_fd (or -1) is
 * closed here; notify_fd (or -1) is told once the mount serves. 0 or
 * -errno.
 */
int serve(struct fs *fs, struct fuse_args *args, const char *store_path, const char *mountpoint, int under_fd,
	  int notify_fd, unsigned workers);
/*
 * Steps 2 and 3: serve() in a daemon forked from here. Returns the exit
 * status of this process: 0 mounted, 1 not. *ret_forked: a daemon was made.
 */
int serve_forked(struct fs *fs, struct fuse_args *args, const char *store_path, const char *mountpoint,
		 int under_fd, unsigned workers, bool *ret_forked);
/* Before a daemon opens anything: every descriptor it inherited but 0-2 (and /dev/fd/N as mountpoint) closed. */
void close_inherited(const char *mountpoint);

#endif
