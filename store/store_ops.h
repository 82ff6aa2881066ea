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
 * The schema version of the store's file (a store opened with
 * STORE_OPEN_AS_IS may be older than store_schema_version()); -ENOTSUP for a
 * file that is not a convfs store or is newer.
 */
int store_schema_of(struct store *st);

/*
 * Checks the store: SQLite's integrity check, the schema version, and the
 * store's own invariants (each array doc's current rows against its row:
 * count, positions, byte offsets, sizes; each whole doc's last blob; rows
 * and revisions that name what does not exist). Returns the number of
 * problems reported through fn, or -errno.
 */
int store_check(struct store *st, store_problem_fn fn, store_progress_fn progress, void *ctx);

/*
 * The check at every mount, in a time that does not grow with the store:
 * the schema (every table, index and column of the current schema version,
 * as a new store has them; an older store, not yet migrated, is not
 * compared) and the root page of every table
 * and index, read down to its first leaf (and a rowid table's last). What
 * it finds, a store cannot be served as it is: a dropped table, a damaged
 * schema, overwritten pages at the top of a table. Damage deeper down is
 * store_check()'s. Returns the problems reported through fn, or -errno.
 */
int store_check_mount(struct store *st, store_problem_fn fn, void *ctx);

/*
 * What `convfs forget` removes: with match, every message (array element, in
 * any version) and every version of a whole file whose bytes hold match; with
 * task, everything of that conversation (its files, their versions and
 * revisions, its history item); with both, what holds match in that task.
 */
struct store_forget {
	const char *match; /* NULL: all of task */
	const char *task;  /* NULL: every conversation */
};

/* One conversation file the forget touches, and how much of it. */
struct store_forget_doc {
	const char *path;
	int64_t messages; /* rows holding it, in any version */
	int64_t current;  /* of them, in the current version */
	int64_t versions; /* versions of a whole file holding it */
	bool whole;       /* a forgotten task's file (it goes), or a whole file whose current version holds it */
	bool head;        /* the file's own bytes around its messages hold it (masked) */
};
typedef int (*store_forget_fn)(void *ctx, const struct store_forget_doc *d);

/* Calls fn for each doc the forget would touch, changing nothing. Returns how many, or -errno. */
int store_forget_plan(struct store *st, const struct store_forget *f, store_forget_fn fn, void *ctx);

/*
 * Forgets for good (store_forget_plan() says what): current messages leave
 * their conversation in one new revision of kind "forget" (not merged);
 * whole files whose current version holds it (and an array file's own bytes
 * around its messages) get a new version with it masked ('*', same length),
 * or are removed where that is no valid JSON; the rows of older
 * versions holding it are blanked in place ({} and spaces, same length, so
 * every version still renders); versions of whole files holding it, and a
 * forgotten task's rows, revisions and history item, are deleted. Then the
 * file is rewritten without free pages (secure_delete, VACUUM) and the WAL
 * emptied, so that the bytes leave the database file. The store must not be
 * served meanwhile. progress (may be NULL) gets steps.
 */
int store_forget_run(struct store *st, const struct store_forget *f, const struct store_who *who,
		     store_progress_fn progress, void *ctx);
/*
 * The same forget on a store a daemon serves (a forget pulled from another
 * machine, on the sync's own connection): the last step, which empties the
 * write-ahead log, may find the daemon's readers in it, and then leaves
 * that to the next checkpoint (said once).
 */
int store_forget_synced(struct store *st, const struct store_forget *f, const struct store_who *who);

#endif
