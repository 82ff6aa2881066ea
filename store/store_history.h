/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_HISTORY_H
#define CONVFS_STORE_HISTORY_H

/*
 * What the tools that look inside a store need (`convfs status`, `log`,
 * `restore`), apart from docs (store.h): a summary of the store, the saved
 * versions of one doc, and making one of them the live one. Same
 * conventions as store.h.
 *
 * The versions of a doc are its revisions that saved content: every kind
 * but a removal ("unlink", "rename-out") and the empty file an open with
 * O_CREAT makes before the first save ("create"). The versions of a set of
 * docs that the caller names, paths[0..npaths) (at most
 * STORE_VERSION_DOCS_MAX; the files of one task, as versions/ shows them, or
 * a doc alone), share one numbering: from 1, the oldest, in the order of the
 * revision log, whichever of the docs each saved. So the numbers of one
 * doc's versions may skip (the task's messages saved at 1, 3 and 5, its ui
 * messages at 2 and 4). The number of a version never changes, since
 * revisions are only ever added. The store knows no task: which docs share a
 * numbering is the caller's to say, and the same set must be given to list
 * and to restore.
 */

#include "store/store.h"

struct store_summary {
	int64_t tasks;     /* Cline tasks (ids of digits), not in the trash */
	int64_t sessions;  /* CLI 3.x sessions (ids with another character), not in the trash */
	int64_t trashed;   /* tasks and sessions in the trash */
	int64_t docs;      /* conversation files present */
	int64_t revisions; /* versions kept: rows of the revision log */
	int schema;        /* the store's schema version */
	/* The last commit (last_rev 0: none yet). */
	int64_t last_rev, last_time_ns;
	pid_t last_pid;    /* 0: not recorded */
	char *last_path, *last_kind, *last_comm; /* last_comm NULL: not recorded */
};

/* Fills *ret; release it with store_summary_release(). */
int store_summary_get(struct store *st, struct store_summary *ret);
void store_summary_release(struct store_summary *s);

/* One saved version of a doc. Its strings live as long as the callback runs. */
struct store_version {
	int64_t number;    /* its number in the numbering the doc shares, from 1 */
	int64_t rev;       /* the revision that made it */
	int64_t time_ns;
	pid_t pid;         /* 0: not recorded (the take-in) */
	const char *comm;  /* NULL: not recorded */
	const char *kind;  /* "write", "rename", "merge", "append", "import", "restore", ... */
	int64_t size;      /* bytes of the file at that version; -1: not recorded */
	int64_t restored;  /* a restore: the number (in the same numbering) it brought back; else 0 */
	/* A merge: what it kept from whom (-1: not recorded). */
	int64_t from_writer; /* elements taken from what the writer wrote */
	int64_t kept_stored; /* elements kept as they were stored */
	int64_t others_kept; /* of those, ones the writer had never seen */
	int64_t removed;     /* elements the writer removed, having seen them */
	int64_t with_rev;    /* the revision it merged with (what was stored); 0: not recorded */
	pid_t with_pid;      /* who made that one */
	const char *with_comm;
	int64_t with_number; /* that revision's number in the same numbering; 0: not one of them */
};
typedef int (*store_version_fn)(void *ctx, const struct store_version *v);

/*
 * Calls fn for each saved version of the doc at path, the newest first, each
 * with its number in the numbering of the docs at paths[0..npaths), path
 * among them (-EINVAL if it is not). -ENOENT if the store never had that doc.
 */
int store_doc_versions(struct store *st, const char *path, const char *const *paths, size_t npaths,
		       store_version_fn fn, void *ctx);

/*
 * Makes the doc at path as it stood right after version number of the
 * numbering of paths[0..npaths) (path among them, as for
 * store_doc_versions()) the live one again: its last version numbered
 * number or less. One commit of kind "restore", not merged, whatever was
 * committed since, that records number as the version it brought back.
 * -ENOENT if the numbering has no such number or the doc had no version yet
 * by then; -EINVAL if that version is not valid JSON (a damaged file kept as
 * found); -EALREADY if it is what is stored now (nothing is committed).
 * *ret_rev (may be NULL) receives the new revision.
 *
 * An array doc's version is brought back element by element, between the
 * bytes the doc has around its array now (its head and tail, which the store
 * keeps only as they are now: "[" and "]" for Cline's files).
 */
int store_doc_restore(struct store *st, const char *path, const char *const *paths, size_t npaths, int64_t number,
		      const struct store_who *who, int64_t *ret_rev);

#endif
