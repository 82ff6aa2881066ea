/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_WARNINGS_H
#define CONVFS_WARNINGS_H

/*
 * The warnings and errors a daemon logged since its mount, kept in a small
 * file beside its store, <store>.warnings (owner-only), where `convfs
 * status` reads them: syslog is not readable by every user, and stderr is
 * gone once the daemon detaches (warnings.c says why not in the store).
 */

#include <stddef.h>
#include <stdint.h>

#define WARNINGS_SUFFIX ".warnings"

/*
 * Starts a new file for the store at store_path (the one of the last mount
 * is replaced) and sends every warning and error there from now on. Call it
 * once the store is this process's (its flock() held). 0 or -errno; without
 * the file the daemon runs on, and status says it cannot tell.
 */
int warnings_start(const char *store_path);
/*
 * The same for the file <prefix>.warnings in the folder dirfd (named
 * <path_prefix>.warnings in messages): a daemon's, in its registration's
 * folder opened as a folder (registry.h).
 */
int warnings_start_at(int dirfd, const char *prefix, const char *path_prefix);

/* What the file of the store at store_path says. */
struct warnings {
	int64_t since_ns;  /* when the daemon started it */
	uint64_t count;    /* warnings and errors since then */
	char **last;       /* the last lines kept, oldest first */
	size_t nlast;
};

/* Reads at most max_last of the last lines. -ENOENT if there is no file. */
int warnings_read(const char *store_path, size_t max_last, struct warnings *ret);
void warnings_release(struct warnings *w);

#endif
