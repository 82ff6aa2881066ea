/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * doc.c: the rows of docs, the revision log, and whole docs.
 *
 * A doc is one managed file. An array doc (taskHistory.json,
 * api_conversation_history.json, ui_messages.json, a session's messages) is
 * kept one element a row (array.c); a whole doc (task_metadata.json, a
 * session's manifest, ...) is one blob per version in `blobs`, read with
 * incremental blob I/O. This file holds what every commit is made of (its
 * transaction, the doc's row, the revision log) and the commit entry points,
 * which send each doc to the commit its layout asks for.
 *
 * Every change is one transaction (a savepoint inside a batch) and one row of
 * `revisions`, whose id is the revision number.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/search.h"
#include "store/src.h"
#include "store/json.h"
#include "store/util.h"

/* ---- transactions ---------------------------------------------------- */

int tx_begin(struct store *st)
{
	int r;

	store_blob_drop(st);
	if (st->batch_depth)
		/* Outside a transaction a savepoint would begin one of its own. */
		return store_tx_lost(st) ? -EIO : store_exec(st, "SAVEPOINT doc");
	st->touch_n = 0;
	r = store_exec(st, "BEGIN IMMEDIATE");
	if (r == 0)
		st->tx_open = true;
	return r;
}

int tx_commit(struct store *st)
{
	uint64_t gen;
	int r;

	/* The messages the transaction made current, into the search index, in it. */
	r = store_tx_lost(st) ? -EIO : search_flush(st);
	if (r == 0)
		r = store_exec(st, st->batch_depth ? "RELEASE doc" : "COMMIT");
	if (r < 0)
		return r;
	if (!st->batch_depth)
		st->tx_open = false;
	gen = __atomic_add_fetch(&st->generation, 1, __ATOMIC_RELEASE);
	if (!st->batch_depth && !st->placement_pending)
		ws_carry(st, gen - 1, gen);
	if (st->placement_pending && !st->batch_depth) {
		st->placement_pending = false;
		__atomic_add_fetch(&st->placement, 1, __ATOMIC_RELEASE);
	}
	return 0;
}

uint64_t store_generation(struct store *st)
{
	return __atomic_load_n(&st->generation, __ATOMIC_ACQUIRE);
}

uint64_t store_placement_generation(struct store *st)
{
	return __atomic_load_n(&st->placement, __ATOMIC_ACQUIRE);
}

void tx_rollback(struct store *st)
{
	sqlite3_exec(st->db, st->batch_depth ? "ROLLBACK TO doc; RELEASE doc" : "ROLLBACK", NULL, NULL, NULL);
	search_forget_pending(st);
	if (!st->batch_depth) {
		st->placement_pending = false;
		st->tx_open = false;
	}
}

/* ---- helpers ---------------------------------------------------------- */

char *dup_text(sqlite3_stmt *stmt, int col)
{
	const char *t = (const char *)sqlite3_column_text(stmt, col);

	return strdup(t ? t : "");
}

/* Looks up the doc at path; -ENOENT if there is no row (present or not). */
int doc_lookup(struct store *st, const char *path, struct doc_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct doc_row d = { 0 };
	int r;

	r = store_row_args(st, "SELECT id, format, present, size, mtime_ns, ctime_ns, rev, nelems, head, tail, lsize "
			       "FROM docs WHERE path = ?1", STORE_TEXTS(path), NULL, 0, "cannot look up a doc", &stmt);
	if (r < 0)
		return r;
	d.id = sqlite3_column_int64(stmt, 0);
	d.format = sqlite3_column_int(stmt, 1);
	d.present = sqlite3_column_int(stmt, 2);
	d.size = sqlite3_column_int64(stmt, 3);
	d.mtime_ns = sqlite3_column_int64(stmt, 4);
	d.ctime_ns = sqlite3_column_int64(stmt, 5);
	d.rev = sqlite3_column_int64(stmt, 6);
	d.nelems = sqlite3_column_int64(stmt, 7);
	d.head = dup_text(stmt, 8);
	d.tail = dup_text(stmt, 9);
	d.lsize = sqlite3_column_int64(stmt, 10);
	if (!d.head || !d.tail) {
		doc_row_release(&d);
		return -ENOMEM;
	}
	*ret = d;
	return 0;
}

int task_ensure(struct store *st, const char *task_id, int64_t now)
{
	int r = store_run_args(st, "INSERT INTO tasks(id, first_seen_ns) VALUES (?1, ?2) ON CONFLICT(id) DO NOTHING",
			       STORE_TEXTS(task_id), STORE_INTS(now), "cannot record a task");

	return r < 0 ? r : 0;
}

/*
 * Records the workspace of a task the first time it is known; afterwards it
 * stays, even if a later history item names another path.
 */
static int task_set_workspace(struct store *st, const char *task_id, const char *ws_path, int64_t now)
{
	char key[16];
	int r;

	snprintf(key, sizeof(key), "%" PRIu32, store_workspace_key(ws_path));
	r = store_run_args(st, "INSERT INTO workspaces(key, path, first_seen_ns) VALUES (?1, ?2, ?3) "
			       "ON CONFLICT(key) DO NOTHING", STORE_TEXTS(key, ws_path), STORE_INTS(now),
			   "cannot record a workspace");
	if (r < 0)
		return r;
	r = store_run_args(st, "UPDATE tasks SET workspace_id = (SELECT id FROM workspaces WHERE key = ?2) "
			       "WHERE id = ?1 AND workspace_id IS NULL", STORE_TEXTS(task_id, key), NULL, 0,
			   "cannot record a task's workspace");
	if (r < 0)
		return r;
	if (r > 0)
		placement_moved(st);
	return 0;
}

/*
 * Records task task_id, and its workspace: the first of the members `first`
 * and `then` of the JSON object s[0, n) that is a string not empty, if any.
 */
static int task_seen(struct store *st, const char *task_id, const char *s, size_t n, const char *first,
		     const char *then, int64_t now)
{
	_cleanup_free_ char *ws = NULL;
	int r;

	r = task_ensure(st, task_id, now);
	if (r < 0)
		return r;
	ws = json_member_string(s, n, first);
	if (!ws || !*ws) {
		free(ws);
		ws = json_member_string(s, n, then);
	}
	if (ws && *ws)
		return task_set_workspace(st, task_id, ws, now);
	return 0;
}

/* Learns the task and workspace from one history item (HistoryItem). */
static int history_item_seen(struct store *st, const char *s, size_t n, int64_t now)
{
	_cleanup_free_ char *id = json_member_string(s, n, "id");

	if (!id || !store_is_task_id(id))
		return 0; /* not a Cline task: kept as written, nothing to learn */
	return task_seen(st, id, s, n, "cwdOnTaskInitialization", "shadowGitConfigWorkTree", now);
}

/* Learns a 3.x session's workspace from its manifest: "workspace_root", else "cwd". */
static int manifest_seen(struct store *st, const char *session_id, const char *s, size_t n, int64_t now)
{
	return task_seen(st, session_id, s, n, "workspace_root", "cwd", now);
}

int elem_bind_identity(struct store *st, sqlite3_stmt *stmt, int key_col, int hash_col, const struct doc_layout *lay,
		       const struct merge_elem *id, char *key_text, const char *json, size_t len, int64_t now)
{
	if (key_text)
		sqlite3_bind_text(stmt, key_col, key_text, -1, free); /* SQLite frees it */
	if (id->has_ts)
		sqlite3_bind_int64(stmt, key_col + 1, id->ts);
	sqlite3_bind_int64(stmt, hash_col, (sqlite3_int64)id->hash);
	return lay->learn == LEARN_HISTORY ? history_item_seen(st, json, len, now) : 0;
}

int revision_add(struct store *st, const char *path, const struct store_who *who, const char *kind,
		 int64_t now, int64_t *ret_rev)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "INSERT INTO revisions(time_ns, pid, comm, path, kind) VALUES (?1, ?2, ?3, ?4, ?5)", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, now);
	if (who && who->pid > 0)
		sqlite3_bind_int64(stmt, 2, who->pid);
	if (who && who->comm)
		sqlite3_bind_text(stmt, 3, who->comm, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 4, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 5, kind, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot add to the revision log");
	*ret_rev = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int revision_replace(struct store *st, const char *path, const struct store_who *who, const char *kind,
		     const struct doc_row *d, int64_t now, int64_t *ret_rev)
{
	int64_t rev;
	int r = revision_add(st, path, who, kind, now, &rev);

	if (r == 0 && d->format == DOC_ARRAY)
		r = elems_close(st, d->id, 0, rev);
	if (r == 0)
		*ret_rev = rev;
	return r;
}

int revision_end(struct store *st, int64_t rev, int64_t doc_id, const char *detail)
{
	int r = revision_detail(st, rev, doc_id, detail);

	return r < 0 ? r : tx_commit(st);
}

int revision_detail(struct store *st, int64_t rev, int64_t doc_id, const char *detail)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st, "UPDATE revisions SET doc_id = ?2, detail = ?3 WHERE id = ?1", STORE_INTS(rev, doc_id),
			       &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 3, detail, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot add to the revision log");
}

/* Makes sure a row exists for the doc at path (absent until committed). */
static int doc_insert(struct store *st, const char *path, int format, int64_t now, struct doc_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct doc_layout lay = { 0 };
	const char *task_id = doc_layout_of(path, &lay) == 0 && lay.task_id[0] ? lay.task_id : NULL;
	const char *slash = strrchr(path, '/');
	int r, rc;

	if (task_id && (r = task_ensure(st, task_id, now)) < 0)
		return r;
	r = store_prepare(st, "INSERT INTO docs(path, parent, name, task_id, format, present, size, mtime_ns, ctime_ns, rev) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, 0, 0, ?6, ?6, 0)", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
	if (slash)
		sqlite3_bind_text(stmt, 2, path, (int)(slash - path), SQLITE_STATIC);
	else
		sqlite3_bind_text(stmt, 2, "", 0, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 3, slash ? slash + 1 : path, -1, SQLITE_STATIC);
	if (task_id)
		sqlite3_bind_text(stmt, 4, task_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 5, format);
	sqlite3_bind_int64(stmt, 6, now);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot create a doc");
	*ret = (struct doc_row){ .id = sqlite3_last_insert_rowid(st->db), .format = format };
	ret->head = strdup("");
	ret->tail = strdup("");
	if (!ret->head || !ret->tail) {
		doc_row_release(ret);
		return -ENOMEM;
	}
	return 0;
}

int doc_lookup_or_insert(struct store *st, const char *path, int format, int64_t now, struct doc_row *ret)
{
	int r = doc_lookup(st, path, ret);

	if (r == -ENOENT)
		r = doc_insert(st, path, format, now, ret);
	return r;
}

int doc_begin(struct store *st, const char *path, int format, int64_t now, struct doc_row *ret)
{
	int r = tx_begin(st);

	if (r < 0)
		return r;
	r = doc_lookup_or_insert(st, path, format, now, ret);
	if (r < 0)
		tx_rollback(st);
	return r;
}

/* Closes every current element of a doc at revision rev, from seq on. */
static void blob_closep(sqlite3_blob **b)
{
	if (*b)
		sqlite3_blob_close(*b);
}

/*
 * How much of a large element a copy moves at a time. Each write through
 * one handle makes SQLite forget where the other one was in the row's
 * chain of pages, so each piece read starts a walk from the row's first
 * page: the pieces are large, to keep the walks few (25 for 100 MB).
 */
#define COPY_PIECE ((size_t)4 << 20)

/* Copies the len bytes of elems.json from row `from` into row `to`, which holds as many (a zeroblob). */
static int json_copy(struct store *st, int64_t from, int64_t to, size_t len)
{
	__attribute__((cleanup(blob_closep))) sqlite3_blob *in = NULL, *out = NULL;
	_cleanup_free_ char *piece = malloc(len < COPY_PIECE ? len + 1 : COPY_PIECE);
	int rc;

	if (!piece)
		return -ENOMEM;
	rc = sqlite3_blob_open(st->db, "main", "elems", "json", from, 0, &in);
	if (rc == SQLITE_OK)
		rc = sqlite3_blob_open(st->db, "main", "elems", "json", to, 1, &out);
	for (size_t at = 0; rc == SQLITE_OK && at < len;) {
		size_t k = len - at < COPY_PIECE ? len - at : COPY_PIECE;

		rc = sqlite3_blob_read(in, piece, (int)k, (int)at);
		if (rc == SQLITE_OK)
			rc = sqlite3_blob_write(out, piece, (int)k, (int)at);
		at += k;
	}
	return rc == SQLITE_OK ? 0 : store_fail(st, rc, "cannot copy a large element");
}

int elem_copy_large(struct store *st, int64_t id, const struct elem_copy *c, int64_t *ret_id)
{
	_cleanup_stmt_ sqlite3_stmt *sel = NULL, *ins = NULL;
	int64_t len, to;
	int r, rc;

	r = store_prepare_ints(st, "SELECT doc_id, seq, off, pre, len, key, ts, rev_from, rev_to, h, loff "
				   "FROM elems WHERE id = ?1", STORE_INTS(id), &sel);
	if (r < 0)
		return r;
	rc = sqlite3_step(sel);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -EIO : store_fail(st, rc, "cannot read a large element");
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, key, ts, rev_from, rev_to, h, loff, json) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", &ins);
	if (r < 0)
		return r;
	for (int i = 0; i < 11; i++)
		sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
	if (c->seq >= 0)
		sqlite3_bind_int64(ins, 2, c->seq);
	if (c->off >= 0)
		sqlite3_bind_int64(ins, 3, c->off);
	if (c->pre)
		sqlite3_bind_text(ins, 4, c->pre, (int)c->pre_len, SQLITE_STATIC);
	if (c->rev_from >= 0)
		sqlite3_bind_int64(ins, 8, c->rev_from);
	if (c->rev_to >= 0)
		sqlite3_bind_int64(ins, 9, c->rev_to);
	else
		sqlite3_bind_null(ins, 9);
	if (c->loff >= 0)
		sqlite3_bind_int64(ins, 11, c->loff);
	len = sqlite3_column_int64(sel, 4);
	/* Last in the row (schema 8), a zeroblob is never made in memory. */
	sqlite3_bind_zeroblob64(ins, 12, (sqlite3_uint64)len);
	rc = sqlite3_step(ins);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot copy a large element");
	to = sqlite3_last_insert_rowid(st->db);
	if ((r = json_copy(st, id, to, (size_t)len)) < 0)
		return r;
	if (ret_id)
		*ret_id = to;
	return 0;
}

int elems_close(struct store *st, int64_t doc_id, int64_t from_seq, int64_t rev)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int64_t *large = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	/* The search index lets go of them first, while they still hold their text. */
	r = search_rows_closing(st, doc_id, from_seq, rev);
	if (r < 0)
		return r;
	/*
	 * An UPDATE rebuilds the whole row in memory: a large element's row
	 * is closed by a copy made a piece at a time (closed), and deleted.
	 */
	r = store_prepare_ints(st, "SELECT id FROM elems WHERE doc_id = ?1 AND rev_to IS NULL AND seq >= ?2 "
				   "AND rev_from < ?3 AND len > ?4",
			       STORE_INTS(doc_id, from_seq, rev, (int64_t)ELEM_INLINE), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if ((r = ARRAY_GROW(large, n, alloc, 8)) < 0)
			goto out;
		large[n++] = sqlite3_column_int64(stmt, 0);
	}
	if (rc != SQLITE_DONE) {
		r = store_fail(st, rc, "cannot find superseded elements");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct elem_copy c = { .seq = -1, .off = -1, .rev_from = -1, .rev_to = rev, .loff = -1 };
		int64_t to;

		if ((r = elem_copy_large(st, large[i], &c, &to)) < 0 || (r = search_row_moved(st, large[i], to)) < 0 ||
		    (r = store_run(st, "DELETE FROM elems WHERE id = ?1", STORE_INTS(large[i]),
				   "cannot close a large element")) < 0)
			goto out;
	}
	r = store_run(st, "UPDATE elems SET rev_to = ?3 WHERE doc_id = ?1 AND rev_to IS NULL AND seq >= ?2 "
			  "AND rev_from < ?3 AND len <= ?4",
		      STORE_INTS(doc_id, from_seq, rev, (int64_t)ELEM_INLINE), "cannot close superseded elements");
out:
	free(large);
	return r;
}

int doc_update(struct store *st, int64_t doc_id, int format, int64_t size, int64_t now, int64_t rev,
	       const char *head, size_t head_len, const char *tail, size_t tail_len, int64_t nelems,
	       int64_t lsize)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL, *was = NULL;
	int r, rc;

	/* A doc made present again, or for the first time, may make its task live: a task may have moved. */
	r = store_row_args(st, "SELECT present FROM docs WHERE id = ?1", NULL, 0, STORE_INTS(doc_id),
			   "cannot look up a doc", &was);
	if (r < 0)
		return r;
	if (!sqlite3_column_int(was, 0))
		placement_moved(st);
	st->touch_n++;
	st->touch_doc = doc_id;
	st->touch_ns = now;
	r = store_prepare_ints(st, "UPDATE docs SET format = ?2, present = 1, size = ?3, mtime_ns = ?4, ctime_ns = ?4, "
				   "rev = ?5, nelems = ?6, lsize = ?7, head = ?8, tail = ?9 WHERE id = ?1",
			       STORE_INTS(doc_id, format, size, now, rev, nelems, lsize), &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 8, head, (int)head_len, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 9, tail, (int)tail_len, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot update a doc");
	return sync_touch(st, rev, doc_id, true, format == DOC_ARRAY ? nelems : -1);
}

/* Marks doc id present or not as of revision rev (its rows are the caller's business). */
int doc_set_present(struct store *st, int64_t id, bool present, int64_t rev, int64_t now)
{
	int r;

	placement_moved(st);
	r = store_run(st, "UPDATE docs SET present = ?4, rev = ?2, ctime_ns = ?3 WHERE id = ?1",
		      STORE_INTS(id, rev, now, present), present ? "cannot bring a doc back" : "cannot remove a doc");
	return r < 0 ? r : sync_touch(st, rev, id, present, -1);
}

/* ---- whole docs ------------------------------------------------------- */

/*
 * Steps *ret to the row of a whole doc's version at rev, its bytes in column
 * 0: 0, -ENOENT if the doc has none, or -errno (logged as what). The caller
 * releases *ret.
 */
static int blob_row(struct store *st, int64_t doc_id, int64_t rev, const char *what, sqlite3_stmt **ret)
{
	int r, rc;

	r = store_prepare_ints(st, "SELECT data FROM blobs WHERE doc_id = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1",
			       STORE_INTS(doc_id, rev), ret);
	if (r < 0)
		return r;
	rc = sqlite3_step(*ret);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : store_fail(st, rc, what);
	return 0;
}

static int blob_equal(struct store *st, int64_t doc_id, int64_t rev, const struct src *src, bool *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st, "SELECT id, length(CAST(data AS BLOB)) FROM blobs WHERE doc_id = ?1 AND rev <= ?2 "
				   "ORDER BY rev DESC LIMIT 1", STORE_INTS(doc_id, rev), &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE) {
		*ret = src->len == 0;
		return 0;
	}
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read a blob");
	if ((size_t)sqlite3_column_int64(stmt, 1) != src->len || src->len == 0) {
		*ret = src->len == 0 && sqlite3_column_int64(stmt, 1) == 0;
		return 0;
	}
	return src_equals_blob(st, src, 0, src->len, "blobs", "data", sqlite3_column_int64(stmt, 0), ret);
}

/* The bytes of a whole doc's version at rev; free() them. */
static int blob_load(struct store *st, int64_t doc_id, int64_t rev, char **ret, size_t *ret_len)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = blob_row(st, doc_id, rev, "cannot read a file version", &stmt);

	return r < 0 ? r : dup_bytes(stmt, 0, ret, ret_len);
}

static int commit_blob(struct store *st, const struct store_commit *c, const struct doc_layout *lay, int format,
		       struct store_base **ret_base, bool *ret_merged)
{
	STORE_LOCK(st);
	const char *path = c->path, *kind = c->kind;
	const struct store_who *who = c->who;
	const struct store_base *base = c->base;
	bool merge = c->merge;
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_free_ char *merged_data = NULL;
	_cleanup_src_window_ struct src_window whole = SRC_WINDOW_INIT;
	struct doc_row d = { 0 };
	struct src src;
	const char *data;
	int64_t now = c->time_ns ? c->time_ns : now_ns(), rev = 0;
	bool same = false, merged = false;
	int r, rc;

	src_of_commit(c, &src);
	r = doc_begin(st, path, format, now, &d);
	if (r < 0)
		goto unlock;
	if (merge && base && base->doc_id == d.id && base->rev != d.rev && d.present && d.format == DOC_WHOLE &&
	    format == DOC_WHOLE && lay->whole_merge == WHOLE_MERGE_METADATA) {
		_cleanup_free_ char *b = NULL, *h = NULL;
		size_t blen = 0, hlen = 0, mlen = 0;

		/* A field-by-field merge parses all three versions, so it holds them. */
		if ((r = src_get(&src, 0, src.len, &whole, &data)) < 0)
			goto rollback;
		if (blob_load(st, d.id, base->rev, &b, &blen) == 0 && blob_load(st, d.id, d.rev, &h, &hlen) == 0 &&
		    merge_metadata(b, blen, h, hlen, data, src.len, &merged_data, &mlen) == 0) {
			merged = mlen != src.len || memcmp(merged_data, data, src.len) != 0;
			src = (struct src){ .mem = merged_data, .fd = -1, .len = mlen };
		}
	}
	rev = d.rev;
	if (d.present && d.format == format && format != DOC_ARRAY) {
		r = blob_equal(st, d.id, d.rev, &src, &same);
		if (r < 0)
			goto rollback;
		if (same) {
			r = 0;
			tx_rollback(st);
			goto done;
		}
	}
	r = revision_replace(st, path, who, merged ? "merge" : kind, &d, now, &rev);
	if (r < 0)
		goto rollback;
	r = store_prepare_ints(st, "INSERT INTO blobs(doc_id, rev, data) VALUES (?1, ?2, ?3)", STORE_INTS(d.id, rev),
			       &stmt);
	if (r < 0)
		goto rollback;
	/* A large version goes in a piece at a time (src_to_blob()), never held whole. */
	if (src.mem && src.len <= ELEM_INLINE)
		sqlite3_bind_blob64(stmt, 3, src.len ? src.mem : "", src.len, SQLITE_STATIC);
	else
		sqlite3_bind_zeroblob64(stmt, 3, src.len);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE) {
		r = store_fail(st, rc, "cannot store a file version");
		goto rollback;
	}
	if (!(src.mem && src.len <= ELEM_INLINE) &&
	    (r = src_to_blob(st, &src, 0, src.len, "blobs", "data", sqlite3_last_insert_rowid(st->db))) < 0)
		goto rollback;
	r = doc_update(st, d.id, format, (int64_t)src.len, now, rev, "", 0, "", 0, 0, 0);
	/* A session's manifest is small: it is read whole to learn its workspace. */
	if (r == 0 && format == DOC_WHOLE && lay->learn == LEARN_MANIFEST && (r = src_get(&src, 0, src.len, &whole, &data)) == 0)
		r = manifest_seen(st, lay->task_id, data, src.len, now);
	if (r < 0)
		goto rollback;
	r = revision_end(st, rev, d.id, format == DOC_RAW ? "{\"raw\":true}" : merged ? "{\"merged\":true}" : NULL);
	if (r < 0)
		goto rollback;
done:
	if (ret_base) {
		*ret_base = NULL; /* on allocation failure: no base next time, which is safe */
		base_at_rev(d.id, rev, ret_base);
	}
	if (ret_merged)
		*ret_merged = merged;
	goto unlock;
rollback:
	tx_rollback(st);
unlock:
	doc_row_release(&d);
	return r;
}

static int commit_doc(struct store *st, const struct store_commit *c, struct store_base **ret_base,
		      bool *ret_merged)
{
	struct json_error jerr = { 0 };
	struct doc_layout lay = { 0 };
	struct src src;
	int r;

	if (st->readonly)
		return -EROFS;
	if (doc_layout_of(c->path, &lay) < 0)
		return -EINVAL;
	if (c->fd_shared && !c->data && (c->raw || lay.kind != STORE_PATH_ARRAY)) {
		/* Read more than once (validated, then stored): all of it copied first. */
		struct store_commit own = *c;

		src_of_commit(c, &src);
		if ((r = src_own_rest(c, &src, 0)) < 0) {
			log_err("cannot read the content to commit to '%s': %s; nothing stored changes", c->path,
				strerror(-r));
			return r;
		}
		own.fd = src.tail_fd;
		own.len = src.len;
		own.fd_shared = false;
		r = commit_doc(st, &own, ret_base, ret_merged);
		src_release(&src);
		return r;
	}
	if (c->raw)
		return lay.kind == STORE_PATH_ARRAY || lay.kind == STORE_PATH_WHOLE
			       ? commit_blob(st, c, &lay, DOC_RAW, ret_base, ret_merged) : -EINVAL;
	switch (lay.kind) {
	case STORE_PATH_ARRAY:
		return commit_array(st, c, &lay, ret_base, ret_merged);
	case STORE_PATH_WHOLE:
		if (c->ws_key)
			return -EINVAL;
		src_of_commit(c, &src);
		r = src_validate(&src, &jerr);
		if (r == -EINVAL)
			log_warn("refusing to commit '%s': not valid JSON: %s at byte %zu; nothing stored changes",
				 c->path, jerr.msg, jerr.offset);
		else if (r < 0)
			log_err("cannot read the content to commit to '%s': %s; nothing stored changes", c->path,
				strerror(-r));
		if (r < 0)
			return r;
		return commit_blob(st, c, &lay, DOC_WHOLE, ret_base, ret_merged);
	default:
		return -EINVAL;
	}
}

int store_commit(struct store *st, const struct store_commit *c, struct store_base **ret_base, bool *ret_merged)
{
	return commit_doc(st, c, ret_base, ret_merged);
}

int store_doc_commit(struct store *st, const char *path, const char *data, size_t len,
		     const struct store_who *who, const char *kind)
{
	struct store_commit c = { .path = path, .data = data, .len = len, .who = who, .kind = kind };

	return commit_doc(st, &c, NULL, NULL);
}

int store_base_at(struct store *st, const char *path, int64_t rev, struct store_base **ret)
{
	STORE_LOCK(st);
	struct doc_row d = { 0 };
	int r = doc_lookup(st, path, &d);

	if (r == 0) {
		r = base_at_rev(d.id, rev, ret);
		if (r == 0)
			(*ret)->read = true;
	}
	doc_row_release(&d);
	return r;
}

int store_doc_commit_raw(struct store *st, const char *path, const char *data, size_t len,
			 const struct store_who *who, const char *why)
{
	struct store_commit c = { .path = path, .data = data, .len = len, .who = who, .kind = why, .raw = true };

	return commit_doc(st, &c, NULL, NULL);
}

int store_doc_create(struct store *st, const char *path, const struct store_who *who)
{
	enum store_path_kind kind = store_path_kind(path);
	struct doc_row d = { 0 };
	int64_t now = now_ns(), rev;
	int r;

	if (kind != STORE_PATH_ARRAY && kind != STORE_PATH_WHOLE)
		return -EINVAL;
	if (st->readonly)
		return -EROFS;
	store_lock(st);
	r = doc_begin(st, path, kind == STORE_PATH_ARRAY ? DOC_ARRAY : DOC_WHOLE, now, &d);
	if (r < 0)
		goto unlock;
	if (d.present) {
		r = -EEXIST;
		goto rollback;
	}
	r = revision_add(st, path, who, "create", now, &rev);
	if (r < 0)
		goto rollback;
	r = doc_update(st, d.id, kind == STORE_PATH_ARRAY ? DOC_ARRAY : DOC_WHOLE, 0, now, rev, "", 0, "", 0, 0, 0);
	if (r < 0 || (r = revision_end(st, rev, d.id, NULL)) < 0)
		goto rollback;
	goto unlock;
rollback:
	tx_rollback(st);
unlock:
	store_unlock(st);
	doc_row_release(&d);
	return r;
}

int store_doc_remove(struct store *st, const char *path, const struct store_who *who, const char *kind)
{
	STORE_LOCK(st);
	struct doc_row d = { 0 };
	int64_t now = now_ns(), rev;
	int r;

	if (st->readonly)
		return -EROFS;
	r = tx_begin(st);
	if (r < 0)
		goto unlock;
	r = doc_lookup(st, path, &d);
	if (r < 0)
		goto rollback;
	if (!d.present) {
		r = -ENOENT;
		goto rollback;
	}
	r = revision_replace(st, path, who, kind, &d, now, &rev);
	if (r < 0)
		goto rollback;
	/* size, head, tail, nelems, lsize stay: they describe the closed rows, for a revival. */
	r = doc_set_present(st, d.id, false, rev, now);
	if (r < 0)
		goto rollback;
	if ((r = revision_end(st, rev, d.id, NULL)) < 0)
		goto rollback;
	goto unlock;
rollback:
	tx_rollback(st);
unlock:
	doc_row_release(&d);
	return r;
}

int store_doc_set_mtime(struct store *st, const char *path, int64_t mtime_ns)
{
	STORE_LOCK(st);
	int r;

	if (st->readonly)
		return -EROFS;
	r = store_run_args(st, "UPDATE docs SET mtime_ns = ?2 WHERE path = ?1 AND present", STORE_TEXTS(path),
			   STORE_INTS(mtime_ns), "cannot set a doc's mtime");
	if (r > 0) /* a committed change like any other (its own statement's transaction) */
		__atomic_add_fetch(&st->generation, 1, __ATOMIC_RELEASE);
	return r < 0 ? r : r > 0 ? 0 : -ENOENT;
}
