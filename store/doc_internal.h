/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_DOC_INTERNAL_H
#define CONVFS_DOC_INTERNAL_H

/*
 * Shared by the files that keep docs (doc.c, array.c, task.c, read.c): the
 * row of a doc, a snapshot, a writer's base, and the steps every commit is
 * made of. Every function here is called with the store's lock held.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/layout.h"
#include "store/merge.h"
#include "store/store_internal.h"

#define SMALL_JSON 65536 /* elements up to this size are read in the row lookup */

struct doc_row {
	int64_t id;
	int format;
	bool present;
	int64_t size, mtime_ns, ctime_ns, rev, nelems, lsize;
	char *head, *tail;
};

static inline void doc_row_release(struct doc_row *d)
{
	free(d->head);
	free(d->tail);
	d->head = d->tail = NULL;
}

struct store_snap {
	int64_t doc_id, rev, size, lsize, mtime_ns, ctime_ns;
	bool jsonl; /* rendered as JSON Lines: size is the doc's lsize */
	int format;
	int64_t blob_rowid;
	char *head, *tail;
	size_t head_len, tail_len;
};

struct store_base {
	int64_t doc_id;
	int64_t rev;
	bool read;          /* taken when the writer opened the doc, not from its own commit */
	bool explicit_list; /* the writer's own version, which is not stored as such */
	struct merge_list list;
};

int tx_begin(struct store *st);
int tx_commit(struct store *st);
void tx_rollback(struct store *st);
char *dup_text(sqlite3_stmt *stmt, int col);
/* Looks up the doc at path; -ENOENT if there is no row (present or not). */
int doc_lookup(struct store *st, const char *path, struct doc_row *ret);
int task_ensure(struct store *st, const char *task_id, int64_t now);
int doc_lookup_or_insert(struct store *st, const char *path, int format, int64_t now, struct doc_row *ret);
/*
 * Begins the transaction of a change to the doc at path (tx_begin()) and
 * looks up its row, made if there is none (doc_lookup_or_insert()). On
 * failure no transaction is left open.
 */
int doc_begin(struct store *st, const char *path, int format, int64_t now, struct doc_row *ret);
int doc_update(struct store *st, int64_t doc_id, int format, int64_t size, int64_t now, int64_t rev,
	       const char *head, size_t head_len, const char *tail, size_t tail_len, int64_t nelems,
	       int64_t lsize);
/* Marks doc id present or not as of revision rev (its rows are the caller's business). */
int doc_set_present(struct store *st, int64_t id, bool present, int64_t rev, int64_t now);
/*
 * Closes every current element of a doc at revision rev, from seq on (not
 * those revision rev made). A large element's row (len > ELEM_INLINE) gets
 * a new id: its closed copy.
 */
int elems_close(struct store *st, int64_t doc_id, int64_t from_seq, int64_t rev);

/* What elem_copy_large() changes in the copy: -1 (NULL) keeps the row's own. */
struct elem_copy {
	int64_t seq, off, rev_from, rev_to, loff; /* rev_to -1: NULL, the copy is current */
	const char *pre;
	size_t pre_len;
};
/*
 * Copies row id of elems, its element's bytes a piece at a time (never held
 * whole: for elements larger than ELEM_INLINE); *ret_id (may be NULL) is the
 * copy's id.
 */
int elem_copy_large(struct store *st, int64_t id, const struct elem_copy *c, int64_t *ret_id);
/*
 * Binds an element's identity (doc_elem_identity(): id, and key_text, which
 * SQLite frees) to columns key_col (elems.key), key_col + 1 (ts) and
 * hash_col of stmt, and learns from the element's bytes json[0, len) if the
 * layout learns (a history item's task and workspace: json is then never
 * NULL).
 */
int elem_bind_identity(struct store *st, sqlite3_stmt *stmt, int key_col, int hash_col, const struct doc_layout *lay,
		       const struct merge_elem *id, char *key_text, const char *json, size_t len, int64_t now);
int revision_add(struct store *st, const char *path, const struct store_who *who, const char *kind,
		 int64_t now, int64_t *ret_rev);
int revision_detail(struct store *st, int64_t rev, int64_t doc_id, const char *detail);
/*
 * revision_add() for a change that replaces all of doc d's content: an array
 * doc's current elements are closed at the new revision.
 */
int revision_replace(struct store *st, const char *path, const struct store_who *who, const char *kind,
		     const struct doc_row *d, int64_t now, int64_t *ret_rev);
/*
 * Ends the transaction of revision rev of doc doc_id: its detail in the log,
 * then tx_commit(). On failure the caller rolls back.
 */
int revision_end(struct store *st, int64_t rev, int64_t doc_id, const char *detail);
/* Commits c to an array doc of layout lay (store_commit()). */
int commit_array(struct store *st, const struct store_commit *c, const struct doc_layout *lay,
		 struct store_base **ret_base, bool *ret_merged);
int base_at_rev(int64_t doc_id, int64_t rev, struct store_base **ret);
/*
 * Appends lines to doc d as revision rev, inside the caller's transaction,
 * and updates the doc's row.
 */
int append_rows(struct store *st, const struct doc_row *dr, const char *path, const struct store_line *lines,
		size_t n, int64_t rev, int64_t now);

#endif
