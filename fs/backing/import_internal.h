/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_IMPORT_INTERNAL_H
#define CONVFS_IMPORT_INTERNAL_H

/*
 * What import.c (taking in each entry of the folder underneath) and
 * take_in.c (a take-in's course beside the mount: its check, its thread,
 * the requests that wait for it) share.
 */

#include <stdbool.h>
#include <stdint.h>

#include "fs/fs.h"
#include "fs/cmd/progress.h"
#include "store/store_seen.h"

struct import_ctx {
	struct fs *fs;
	const char *src_name;
	struct import_report rep;
	struct store_seen_set seen;    /* what the store last saw underneath, by path */
	bool *visited;                 /* per row of seen: found by this walk */
	struct store_seen_set imports; /* a store from before `underneath`: what its import took in */
	bool legacy;                   /* such a store: entries no older than legacy_ns were taken in then */
	int64_t legacy_ns;
	bool readonly;                 /* the store cannot be written: only count what changed */
	bool taken;                    /* this folder was taken in before: the quick check may prove nothing changed */
	bool loaded;                   /* seen, visited (and imports) are loaded */
	bool in_batch;
	unsigned long batch_docs, batch_rows;
	unsigned long total;
	int64_t start_ns;
	struct progress progress;
	/* new task folders, to find the ones taskHistory.json does not list */
	char **task_dirs;
	size_t ntask_dirs, task_dirs_alloc;
};

/*
 * Makes the folder open at src_fd (mounted over at src_name) the one whose
 * rows the store's take-in calls use; *ret_taken says whether it was taken
 * in before.
 */
int import_folder_use(struct fs *fs, int src_fd, const char *src_name, bool *ret_taken);
/* Loads what the store st last saw underneath into c (and, for a store from before that, what its import took in). */
int import_load(struct import_ctx *c, struct store *st);
/* Whether the quick check may prove the take-in has nothing to do: a folder taken in before, by a store that records what it saw. */
bool import_quick_may(struct import_ctx *c);
/* The take-in proper: a walk of all of src_fd, doing what each difference needs. */
int import_walk(struct import_ctx *c, int src_fd);
/* Frees what c holds; says what failed (r), or what was taken in. Returns r, or 0. */
int import_done(struct import_ctx *c, int r);

#endif
