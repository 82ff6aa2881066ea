/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * task.c: a task's life cycle: to the trash, back, and made anew.
 *
 * Trashing a task removes its docs as one revision each, and its item from
 * the history; restoring brings back the versions the trash took, and the
 * item. Nothing is deleted: every version stays in the revision log.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/json.h"
#include "store/search.h"
#include "store/util.h"

/* ---- the trash ------------------------------------------------------------------ */

/*
 * Removes the current element at position seq of array doc d (revision rev):
 * the rows after it are closed and inserted again one place earlier.
 */
static int elem_remove(struct store *st, const struct doc_row *d, int64_t seq, int64_t rev, int64_t now)
{
	_cleanup_stmt_ sqlite3_stmt *q = NULL, *copy = NULL;
	int64_t off = 0, loff = 0, shift = 0, lshift = 0, n = 0;
	char *first_pre = NULL;
	int r, rc;

	r = store_prepare_ints(st, "SELECT seq, off, pre, len, loff FROM elems WHERE doc_id = ?1 AND rev_to IS NULL "
			           "AND seq = ?2", STORE_INTS(d->id, seq), &q);
	if (r < 0)
		return r;
	rc = sqlite3_step(q);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : store_fail(st, rc, "cannot find an element");
	off = sqlite3_column_int64(q, 1);
	loff = sqlite3_column_int64(q, 4);
	/* The first element's bytes before it (after '[') pass to the next one. */
	if (seq == 0 && !(first_pre = strdup((const char *)sqlite3_column_text(q, 2))))
		return -ENOMEM;
	store_stmt_release(TAKE_PTR(q));
	r = elems_close(st, d->id, seq, rev);
	if (r < 0)
		goto out;
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff, dg) "
			      "SELECT doc_id, seq - 1, ?3, coalesce(?4, pre), len, json, key, ts, h, ?5, ?6, dg FROM elems "
			      "WHERE doc_id = ?1 AND seq = ?2 AND rev_to = ?5", &copy);
	if (r < 0)
		goto out;
	for (int64_t i = seq + 1; i < d->nelems; i++, n++) {
		_cleanup_stmt_ sqlite3_stmt *len_q = NULL;
		int64_t plen, len;

		sqlite3_reset(copy);
		sqlite3_clear_bindings(copy);
		sqlite3_bind_int64(copy, 1, d->id);
		sqlite3_bind_int64(copy, 2, i);
		sqlite3_bind_int64(copy, 3, off);
		if (i == seq + 1 && first_pre)
			sqlite3_bind_text(copy, 4, first_pre, -1, SQLITE_STATIC);
		sqlite3_bind_int64(copy, 5, rev);
		sqlite3_bind_int64(copy, 6, loff);
		rc = sqlite3_step(copy);
		if (rc != SQLITE_DONE) {
			r = store_fail(st, rc, "cannot move an element");
			goto out;
		}
		r = store_prepare_ints(st, "SELECT length(CAST(pre AS BLOB)), len FROM elems "
				           "WHERE doc_id = ?1 AND seq = ?2 AND rev_from = ?3",
				       STORE_INTS(d->id, i - 1, rev), &len_q);
		if (r < 0)
			goto out;
		if ((rc = sqlite3_step(len_q)) != SQLITE_ROW) {
			r = store_fail(st, rc, "cannot read a moved element");
			goto out;
		}
		plen = sqlite3_column_int64(len_q, 0);
		len = sqlite3_column_int64(len_q, 1);
		off += plen + len;
		loff += len + 1;
	}
	/* The rows moved up are new rows: into the search index, if they are messages. */
	if ((r = search_doc_rows_added(st, d->id, rev)) < 0)
		goto out;
	shift = (int64_t)strlen(d->tail);
	lshift = loff;
	r = doc_update(st, d->id, DOC_ARRAY, off + shift, now, rev, d->head, strlen(d->head), d->tail,
		       strlen(d->tail), d->nelems - 1, lshift);
out:
	free(first_pre);
	return r;
}

/* The id of the latest revision of kind for path, or -ENOENT. */
static int last_revision(struct store *st, const char *path, const char *kind, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_args(st, "SELECT max(id) FROM revisions WHERE path = ?1 AND kind = ?2", STORE_TEXTS(path, kind),
			       NULL, 0, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read the revision log");
	if (sqlite3_column_type(stmt, 0) == SQLITE_NULL)
		return -ENOENT;
	*ret = sqlite3_column_int64(stmt, 0);
	return 0;
}

static int set_trashed(struct store *st, const char *task_id, int64_t when)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "UPDATE tasks SET trashed_ns = ?2 WHERE id = ?1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, task_id, -1, SQLITE_STATIC);
	if (when)
		sqlite3_bind_int64(stmt, 2, when);
	placement_moved(st);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot mark a task");
}

static int trash_locked(struct store *st, const char *task_id, const char *tpath, const char *unused,
			const struct store_who *who)
{
	_cleanup_stmt_ sqlite3_stmt *docs = NULL, *item = NULL;
	struct doc_row h = { 0 };
	int64_t now = now_ns(), rev;
	int r, rc;

	r = revision_add(st, tpath, who, "trash", now, &rev);
	if (r < 0)
		return r;
	r = store_prepare_args(st, "SELECT path FROM docs WHERE task_id = ?1 AND present", STORE_TEXTS(task_id), NULL, 0,
			       &docs);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(docs)) == SQLITE_ROW) {
		struct doc_row d = { 0 };

		r = doc_lookup(st, (const char *)sqlite3_column_text(docs, 0), &d);
		if (r == 0 && d.format == DOC_ARRAY)
			r = elems_close(st, d.id, 0, rev);
		if (r == 0)
			r = doc_set_present(st, d.id, false, rev, now);
		doc_row_release(&d);
		if (r < 0)
			return r;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot list a task's docs");
	/* Its history item goes with it. */
	if (doc_lookup(st, "state/taskHistory.json", &h) == 0 && h.present && h.format == DOC_ARRAY) {
		r = store_prepare(st, "SELECT seq FROM elems WHERE doc_id = ?1 AND key = ?2 AND rev_to IS NULL", &item);
		if (r == 0) {
			sqlite3_bind_int64(item, 1, h.id);
			sqlite3_bind_text(item, 2, task_id, -1, SQLITE_STATIC);
			rc = sqlite3_step(item);
			if (rc == SQLITE_ROW)
				r = elem_remove(st, &h, sqlite3_column_int64(item, 0), rev, now);
			else if (rc != SQLITE_DONE) {
				r = store_fail(st, rc, "cannot find a history item");
			}
		}
	}
	doc_row_release(&h);
	if (r < 0)
		return r;
	r = set_trashed(st, task_id, now);
	if (r == 0 && sqlite3_changes(st->db) == 0)
		return -ENOENT; /* no such task */
	return r < 0 ? r : revision_detail(st, rev, 0, NULL);
}

/*
 * Runs fn(task_id, arg) on a valid task id as one transaction. fn gets the
 * task's folder path for the revision log.
 */
typedef int (*task_fn)(struct store *st, const char *task_id, const char *tpath, const char *arg,
		       const struct store_who *who);

static int task_tx(struct store *st, const char *task_id, task_fn fn, const char *arg, const struct store_who *who)
{
	char tpath[96];
	int r;

	if (st->readonly)
		return -EROFS;
	if (store_conversation_dir(task_id, tpath, sizeof(tpath)) < 0)
		return -EINVAL;
	STORE_LOCK(st);
	if ((r = tx_begin(st)) < 0)
		return r;
	r = fn(st, task_id, tpath, arg, who);
	if (r == 0)
		r = tx_commit(st);
	if (r < 0)
		tx_rollback(st);
	return r;
}

int store_task_trash(struct store *st, const char *task_id, const struct store_who *who)
{
	return task_tx(st, task_id, trash_locked, NULL, who);
}

static int restore_locked(struct store *st, const char *task_id, const char *tpath, const char *unused,
			  const struct store_who *who)
{
	_cleanup_stmt_ sqlite3_stmt *docs = NULL, *item = NULL, *trashed = NULL;
	struct doc_row h = { 0 };
	int64_t now = now_ns(), rev, trash_rev = 0;
	int r, rc;

	r = store_prepare_args(st, "SELECT 1 FROM tasks WHERE id = ?1 AND trashed_ns IS NOT NULL", STORE_TEXTS(task_id),
			       NULL, 0, &trashed);
	if (r < 0)
		return r;
	rc = sqlite3_step(trashed);
	if (rc == SQLITE_DONE)
		return -ENOENT; /* not in the trash */
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot look up a task");
	r = last_revision(st, tpath, "trash", &trash_rev);
	if (r < 0)
		return r;
	r = revision_add(st, tpath, who, "restore", now, &rev);
	if (r < 0)
		return r;
	r = store_prepare_args(st, "SELECT path FROM docs WHERE task_id = ?1 AND NOT present", STORE_TEXTS(task_id), NULL,
			       0, &docs);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(docs)) == SQLITE_ROW) {
		_cleanup_stmt_ sqlite3_stmt *copy = NULL;
		struct doc_row d = { 0 };

		r = doc_lookup(st, (const char *)sqlite3_column_text(docs, 0), &d);
		if (r == 0 && d.format == DOC_ARRAY) {
			/* Its last content: the rows its removal closed. */
			r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff, dg) "
					      "SELECT doc_id, seq, off, pre, len, json, key, ts, h, ?3, loff, dg FROM elems "
					      "WHERE doc_id = ?1 AND rev_to = ?2", &copy);
			if (r == 0) {
				sqlite3_bind_int64(copy, 1, d.id);
				sqlite3_bind_int64(copy, 2, d.rev);
				sqlite3_bind_int64(copy, 3, rev);
				if ((rc = sqlite3_step(copy)) != SQLITE_DONE)
					r = store_fail(st, rc, "cannot bring elements back");
			}
			if (r == 0)
				r = search_doc_rows_added(st, d.id, rev);
		}
		if (r == 0)
			r = doc_set_present(st, d.id, true, rev, now);
		doc_row_release(&d);
		if (r < 0)
			return r;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot list a task's docs");
	/* The history item the trash took, unless the history has one again. */
	r = doc_lookup_or_insert(st, "state/taskHistory.json", DOC_ARRAY, now, &h);
	if (r < 0)
		return r;
	r = store_prepare(st, "SELECT json, (SELECT count(*) FROM elems c WHERE c.doc_id = ?1 AND c.key = ?2 "
			      "AND c.rev_to IS NULL) FROM elems WHERE doc_id = ?1 AND key = ?2 AND rev_to = ?3 LIMIT 1",
			  &item);
	if (r == 0) {
		sqlite3_bind_int64(item, 1, h.id);
		sqlite3_bind_text(item, 2, task_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(item, 3, trash_rev);
		rc = sqlite3_step(item);
		if (rc == SQLITE_ROW && sqlite3_column_int64(item, 1) == 0 && (h.format == DOC_ARRAY || !h.present)) {
			struct store_line line = { (const char *)sqlite3_column_text(item, 0),
						   (size_t)sqlite3_column_bytes(item, 0) };

			r = append_rows(st, &h, "state/taskHistory.json", &line, 1, rev, now);
		} else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			r = store_fail(st, rc, "cannot find a history item");
		}
	}
	doc_row_release(&h);
	if (r < 0)
		return r;
	r = set_trashed(st, task_id, 0);
	return r < 0 ? r : revision_detail(st, rev, 0, NULL);
}

int store_task_restore(struct store *st, const char *task_id, const struct store_who *who)
{
	return task_tx(st, task_id, restore_locked, NULL, who);
}

static int create_locked(struct store *st, const char *task_id, const char *tpath, const char *ws_key,
			 const struct store_who *who)
{
	static const char *const names[] = { "api_conversation_history.json", "ui_messages.json" };
	_cleanup_stmt_ sqlite3_stmt *live = NULL;
	int64_t now = now_ns();
	int r, rc;

	r = store_prepare_args(st, "SELECT count(*) FROM docs WHERE task_id = ?1 AND present", STORE_TEXTS(task_id), NULL,
			       0, &live);
	if (r < 0)
		return r;
	if ((rc = sqlite3_step(live)) != SQLITE_ROW)
		return store_fail(st, rc, "cannot look up a task");
	if (sqlite3_column_int64(live, 0) > 0)
		return -EEXIST;
	if ((r = task_ensure(st, task_id, now)) < 0)
		return r;
	if (ws_key) {
		placement_moved(st);
		r = store_run_args(st, "UPDATE tasks SET workspace_id = (SELECT id FROM workspaces WHERE key = ?2), "
					   "trashed_ns = NULL WHERE id = ?1", STORE_TEXTS(task_id, ws_key), NULL, 0,
				   "cannot place a task in its workspace");
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char path[96];
		struct doc_row d = { 0 };
		int64_t rev;

		snprintf(path, sizeof(path), "tasks/%s/%s", task_id, names[i]);
		r = doc_lookup_or_insert(st, path, DOC_ARRAY, now, &d);
		if (r == 0 && (r = revision_replace(st, path, who, "create", &d, now, &rev)) == 0)
			r = doc_update(st, d.id, DOC_ARRAY, 2, now, rev, "[", 1, "]", 1, 0, 0);
		if (r == 0)
			r = revision_detail(st, rev, d.id, NULL);
		doc_row_release(&d);
		if (r < 0)
			return r;
	}
	return 0;
}

int store_task_create(struct store *st, const char *task_id, const char *ws_key, const struct store_who *who)
{
	if (!store_is_task_id(task_id))
		return -EINVAL; /* a session's files are the client's to make */
	return task_tx(st, task_id, create_locked, ws_key, who);
}
