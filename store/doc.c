/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * doc.c: committing and reading managed files ("docs").
 *
 * An array doc (taskHistory.json, api_conversation_history.json,
 * ui_messages.json) is kept one element a row in `elems`, each with its exact
 * bytes, the bytes before it ("pre": the comma and any white space) and its
 * byte offset in the rendered file. The file is head + (pre + json)... + tail,
 * so any byte range is found with one indexed lookup on (doc_id, off) and
 * nothing is ever rendered whole: a 20 MB conversation streams.
 *
 * Rows are never rewritten in place. A commit keeps the longest prefix of
 * elements whose bytes are unchanged, closes the rest (rev_to = this
 * revision) and inserts the new tail with rev_from = this revision. A reader
 * that took a snapshot at revision R sees exactly the rows with
 * rev_from <= R < rev_to, so it reads the old or the new version, never a
 * mix; and a rewrite that drops messages keeps them as older revisions.
 *
 * Whole docs (task_metadata.json, ...) are one blob per version in `blobs`,
 * read with incremental blob I/O.
 *
 * Every change is one transaction (a savepoint inside a batch) and one row of
 * `revisions`, whose id is the revision number.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/json.h"
#include "store/layout.h"
#include "store/merge.h"
#include "store/store_internal.h"
#include "store/util.h"

#define SMALL_JSON 65536 /* elements up to this size are read in the row lookup */

struct doc_row {
	int64_t id;
	int format;
	bool present;
	int64_t size, mtime_ns, ctime_ns, rev, nelems, lsize;
	char *head, *tail;
};

static void doc_row_release(struct doc_row *d)
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

/* ---- transactions ---------------------------------------------------- */

static int tx_begin(struct store *st)
{
	store_blob_drop(st);
	return store_exec(st, st->batch_depth ? "SAVEPOINT doc" : "BEGIN IMMEDIATE");
}

static int tx_commit(struct store *st)
{
	int r = store_exec(st, st->batch_depth ? "RELEASE doc" : "COMMIT");

	if (r == 0)
		__atomic_add_fetch(&st->generation, 1, __ATOMIC_RELEASE);
	return r;
}

uint64_t store_generation(struct store *st)
{
	return __atomic_load_n(&st->generation, __ATOMIC_ACQUIRE);
}

uint64_t store_placement_generation(struct store *st)
{
	return __atomic_load_n(&st->placement, __ATOMIC_ACQUIRE);
}

static void tx_rollback(struct store *st)
{
	sqlite3_exec(st->db, st->batch_depth ? "ROLLBACK TO doc; RELEASE doc" : "ROLLBACK", NULL, NULL, NULL);
}

/* ---- helpers ---------------------------------------------------------- */

static char *dup_text(sqlite3_stmt *stmt, int col)
{
	const char *t = (const char *)sqlite3_column_text(stmt, col);

	return strdup(t ? t : "");
}

/* Looks up the doc at path; -ENOENT if there is no row (present or not). */
static int doc_lookup(struct store *st, const char *path, struct doc_row *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct doc_row d = { 0 };
	int r, rc;

	r = store_prepare(st, "SELECT id, format, present, size, mtime_ns, ctime_ns, rev, nelems, head, tail, lsize "
			      "FROM docs WHERE path = ?1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot look up a doc");
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

static int task_ensure(struct store *st, const char *task_id, int64_t now)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "INSERT INTO tasks(id, first_seen_ns) VALUES (?1, ?2) ON CONFLICT(id) DO NOTHING", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, task_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, now);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot record a task");
}

/*
 * Records the workspace of a task the first time it is known; afterwards it
 * stays, even if a later history item names another path.
 */
static int task_set_workspace(struct store *st, const char *task_id, const char *ws_path, int64_t now)
{
	_cleanup_stmt_ sqlite3_stmt *ins = NULL, *upd = NULL;
	char key[16];
	int r, rc;

	snprintf(key, sizeof(key), "%" PRIu32, store_workspace_key(ws_path));
	r = store_prepare(st, "INSERT INTO workspaces(key, path, first_seen_ns) VALUES (?1, ?2, ?3) "
			      "ON CONFLICT(key) DO NOTHING", &ins);
	if (r < 0)
		return r;
	sqlite3_bind_text(ins, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 2, ws_path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 3, now);
	rc = sqlite3_step(ins);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot record a workspace");
	r = store_prepare(st, "UPDATE tasks SET workspace_id = (SELECT id FROM workspaces WHERE key = ?2) "
			      "WHERE id = ?1 AND workspace_id IS NULL", &upd);
	if (r < 0)
		return r;
	sqlite3_bind_text(upd, 1, task_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(upd, 2, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(upd);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot record a task's workspace");
	if (sqlite3_changes(st->db) > 0)
		placement_moved(st);
	return 0;
}

/* Learns the task and workspace from one history item (HistoryItem). */
static int history_item_seen(struct store *st, const char *s, size_t n, int64_t now)
{
	_cleanup_free_ char *id = json_member_string(s, n, "id");
	_cleanup_free_ char *cwd = NULL;
	int r;

	if (!id || !store_is_task_id(id))
		return 0; /* not a Cline task: kept as written, nothing to learn */
	r = task_ensure(st, id, now);
	if (r < 0)
		return r;
	cwd = json_member_string(s, n, "cwdOnTaskInitialization");
	if (!cwd || !*cwd) {
		free(cwd);
		cwd = json_member_string(s, n, "shadowGitConfigWorkTree");
	}
	if (cwd && *cwd)
		return task_set_workspace(st, id, cwd, now);
	return 0;
}

/* Learns a 3.x session's workspace from its manifest: "workspace_root", else "cwd". */
static int manifest_seen(struct store *st, const char *session_id, const char *s, size_t n, int64_t now)
{
	_cleanup_free_ char *ws = json_member_string(s, n, "workspace_root");
	int r;

	r = task_ensure(st, session_id, now);
	if (r < 0)
		return r;
	if (!ws || !*ws) {
		free(ws);
		ws = json_member_string(s, n, "cwd");
	}
	if (ws && *ws)
		return task_set_workspace(st, session_id, ws, now);
	return 0;
}

/*
 * Binds what identifies element json[0, len) of a doc of layout lay (its
 * elems.key, ts and h) to columns key_col, key_col + 1 and hash_col of stmt,
 * and learns from it (a history item's task and workspace).
 */
static int elem_bind_identity(struct store *st, sqlite3_stmt *stmt, int key_col, int hash_col,
			      const struct doc_layout *lay, const char *json, size_t len, int64_t now)
{
	struct merge_elem e = { 0 };
	char *key = NULL;

	doc_elem_identity(lay->ident, json, len, &e, &key);
	if (key)
		sqlite3_bind_text(stmt, key_col, key, -1, free); /* SQLite frees it */
	if (e.has_ts)
		sqlite3_bind_int64(stmt, key_col + 1, e.ts);
	sqlite3_bind_int64(stmt, hash_col, (sqlite3_int64)e.hash);
	return lay->learn == LEARN_HISTORY ? history_item_seen(st, json, len, now) : 0;
}

static int revision_add(struct store *st, const char *path, const struct store_who *who, const char *kind,
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

static int revision_detail(struct store *st, int64_t rev, int64_t doc_id, const char *detail)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "UPDATE revisions SET doc_id = ?2, detail = ?3 WHERE id = ?1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, rev);
	sqlite3_bind_int64(stmt, 2, doc_id);
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

static int doc_lookup_or_insert(struct store *st, const char *path, int format, int64_t now, struct doc_row *ret)
{
	int r = doc_lookup(st, path, ret);

	if (r == -ENOENT)
		r = doc_insert(st, path, format, now, ret);
	return r;
}

/* Closes every current element of a doc at revision rev, from seq on. */
static int elems_close(struct store *st, int64_t doc_id, int64_t from_seq, int64_t rev)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "UPDATE elems SET rev_to = ?3 WHERE doc_id = ?1 AND rev_to IS NULL AND seq >= ?2", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int64(stmt, 2, from_seq);
	sqlite3_bind_int64(stmt, 3, rev);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot close superseded elements");
}

static int doc_update(struct store *st, int64_t doc_id, int format, int64_t size, int64_t now, int64_t rev,
		      const char *head, size_t head_len, const char *tail, size_t tail_len, int64_t nelems,
		      int64_t lsize)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "UPDATE docs SET format = ?2, present = 1, size = ?3, mtime_ns = ?4, ctime_ns = ?4, "
			      "rev = ?5, head = ?6, tail = ?7, nelems = ?8, lsize = ?9 WHERE id = ?1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int(stmt, 2, format);
	sqlite3_bind_int64(stmt, 3, size);
	sqlite3_bind_int64(stmt, 4, now);
	sqlite3_bind_int64(stmt, 5, rev);
	sqlite3_bind_text(stmt, 6, head, (int)head_len, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 7, tail, (int)tail_len, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 8, nelems);
	sqlite3_bind_int64(stmt, 9, lsize);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot update a doc");
}

/* Marks doc id present or not as of revision rev (its rows are the caller's business). */
static int doc_set_present(struct store *st, int64_t id, bool present, int64_t rev, int64_t now)
{
	_cleanup_stmt_ sqlite3_stmt *upd = NULL;
	int r, rc;

	r = store_prepare(st, "UPDATE docs SET present = ?4, rev = ?2, ctime_ns = ?3 WHERE id = ?1", &upd);
	if (r < 0)
		return r;
	sqlite3_bind_int64(upd, 1, id);
	sqlite3_bind_int64(upd, 2, rev);
	sqlite3_bind_int64(upd, 3, now);
	sqlite3_bind_int(upd, 4, present);
	placement_moved(st);
	rc = sqlite3_step(upd);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, present ? "cannot bring a doc back" : "cannot remove a doc");
}

/* ---- array docs --------------------------------------------------------- */

struct span {
	size_t pre, start, end;
};

struct span_vec {
	struct span *v;
	size_t n, alloc;
};

static int span_push(void *ctx, size_t pre, size_t start, size_t end)
{
	struct span_vec *sv = ctx;

	if (sv->n == sv->alloc) {
		size_t na = sv->alloc ? sv->alloc * 2 : 256;
		struct span *p = realloc(sv->v, na * sizeof(*p));

		if (!p)
			return -ENOMEM;
		sv->v = p;
		sv->alloc = na;
	}
	sv->v[sv->n++] = (struct span){ pre, start, end };
	return 0;
}

/*
 * Counts the leading elements of the doc's current rendering whose bytes
 * equal the new content's: these rows are kept as they are.
 */
static int common_prefix(struct store *st, int64_t doc_id, const char *data, const struct span_vec *sv,
			 size_t *ret_k)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	size_t k = 0;
	int r, rc;

	r = store_prepare(st, "SELECT pre, json FROM elems WHERE doc_id = ?1 AND rev_to IS NULL ORDER BY seq", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	while (k < sv->n && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const struct span *e = &sv->v[k];
		size_t plen = (size_t)sqlite3_column_bytes(stmt, 0);
		const void *p = sqlite3_column_blob(stmt, 0);
		size_t jlen = (size_t)sqlite3_column_bytes(stmt, 1);
		const void *j = sqlite3_column_blob(stmt, 1);

		if (plen != e->start - e->pre || jlen != e->end - e->start ||
		    (plen && memcmp(p, data + e->pre, plen) != 0) || memcmp(j, data + e->start, jlen) != 0)
			break;
		k++;
	}
	if (k < sv->n && rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read elements");
	*ret_k = k;
	return 0;
}

/*
 * Where the JSONL line after a current element starts: its loff + len + 1.
 * by_seq: the element is the current one at position seq of doc; else row id.
 */
static int line_end(struct store *st, int64_t doc_id, int64_t seq_or_id, bool by_seq, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, by_seq ? "SELECT coalesce(loff, 0) + len + 1 FROM elems "
				       "WHERE doc_id = ?1 AND seq = ?2 AND rev_to IS NULL"
				     : "SELECT coalesce(loff, 0) + len + 1 FROM elems WHERE id = ?2", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int64(stmt, 2, seq_or_id);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -EIO : store_fail(st, rc, "cannot find an element's line");
	*ret = sqlite3_column_int64(stmt, 0);
	return 0;
}

/* Inserts elements from..n-1 of sv; *loff is where the first one's line starts, and is moved on. */
static int elems_insert(struct store *st, int64_t doc_id, const char *data, const struct span_vec *sv, size_t from,
			int64_t rev, const struct doc_layout *lay, int64_t now, int64_t *loff)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, rev_from, h, loff) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", &stmt);
	if (r < 0)
		return r;
	for (size_t i = from; i < sv->n; i++) {
		const struct span *e = &sv->v[i];
		const char *j = data + e->start;
		size_t jlen = e->end - e->start;

		sqlite3_reset(stmt);
		sqlite3_clear_bindings(stmt);
		sqlite3_bind_int64(stmt, 1, doc_id);
		sqlite3_bind_int64(stmt, 2, (int64_t)i);
		sqlite3_bind_int64(stmt, 3, (int64_t)e->pre);
		sqlite3_bind_text(stmt, 4, data + e->pre, (int)(e->start - e->pre), SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 5, (int64_t)jlen);
		sqlite3_bind_text64(stmt, 6, j, jlen, SQLITE_STATIC, SQLITE_UTF8);
		if ((r = elem_bind_identity(st, stmt, 7, 10, lay, j, jlen, now)) < 0)
			return r;
		sqlite3_bind_int64(stmt, 9, rev);
		sqlite3_bind_int64(stmt, 11, *loff);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE)
			return store_fail(st, rc, "cannot store an element");
		*loff += (int64_t)jlen + 1;
	}
	return 0;
}

/* ---- merged commits ------------------------------------------------------------ */

struct store_base {
	int64_t doc_id;
	int64_t rev;
	bool read;          /* taken when the writer opened the doc, not from its own commit */
	bool explicit_list; /* the writer's own version, which is not stored as such */
	struct merge_list list;
};

int store_base_from_snap(const struct store_snap *snap, struct store_base **ret)
{
	struct store_base *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->doc_id = snap->doc_id;
	b->rev = snap->rev;
	b->read = true;
	*ret = b;
	return 0;
}

void store_base_free(struct store_base *base)
{
	if (!base)
		return;
	merge_list_release(&base->list);
	free(base);
}

int64_t store_base_rev(const struct store_base *base)
{
	return base->rev;
}

bool store_base_is_read(const struct store_base *base)
{
	return base->read;
}

static int base_at_rev(int64_t doc_id, int64_t rev, struct store_base **ret)
{
	struct store_base *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->doc_id = doc_id;
	b->rev = rev;
	*ret = b;
	return 0;
}

#define ROWS_CURRENT (-1)

/*
 * Loads the rows of a doc valid at revision rev (ROWS_CURRENT: the current
 * ones; closed: the ones that revision rev closed, i.e. a removed doc's last
 * content) as identities; history items also with their bytes (small).
 * The bytes are copied into *ret_store, which must outlive the list.
 */
static int load_rows(struct store *st, int64_t doc_id, int64_t rev, bool closed, enum doc_ident ident,
		     struct merge_list *ret, struct sb *ret_store)
{
	bool bytes = ident == IDENT_ITEM_ID; /* history items are merged field by field */
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct merge_list l = { 0 };
	size_t *offsets = NULL;
	int r, rc;

	r = store_prepare(st, rev == ROWS_CURRENT
		? "SELECT id, key, ts, h, len, CASE WHEN ?3 THEN json END FROM elems "
		  "WHERE doc_id = ?1 AND rev_to IS NULL ORDER BY off"
		: closed
		? "SELECT id, key, ts, h, len, CASE WHEN ?3 THEN json END FROM elems "
		  "WHERE doc_id = ?1 AND rev_to = ?2 ORDER BY off"
		: "SELECT id, key, ts, h, len, CASE WHEN ?3 THEN json END FROM elems "
		  "WHERE doc_id = ?1 AND rev_from <= ?2 AND (rev_to IS NULL OR rev_to > ?2) ORDER BY off", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int64(stmt, 2, rev);
	sqlite3_bind_int(stmt, 3, bytes);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct merge_elem e = { 0 };

		e.ref = sqlite3_column_int64(stmt, 0);
		e.hash = (uint64_t)sqlite3_column_int64(stmt, 3);
		e.len = (size_t)sqlite3_column_int64(stmt, 4);
		e.has_ts = sqlite3_column_type(stmt, 2) != SQLITE_NULL;
		e.ts = sqlite3_column_int64(stmt, 2);
		e.key = e.hash;
		/* as doc_elem_identity() gave it when the row was written */
		if (ident != IDENT_TS && sqlite3_column_type(stmt, 1) != SQLITE_NULL)
			e.key = doc_key_of_text((const char *)sqlite3_column_text(stmt, 1),
						(size_t)sqlite3_column_bytes(stmt, 1));
		else if (ident == IDENT_TS && e.has_ts)
			e.key = (uint64_t)e.ts;
		if (bytes) {
			/* Offsets now, pointers once the buffer stops moving. */
			size_t *o = realloc(offsets, (l.n + 1) * sizeof(*o));

			if (!o) {
				r = -ENOMEM;
				break;
			}
			offsets = o;
			offsets[l.n] = ret_store->len;
			if ((r = sb_add(ret_store, sqlite3_column_blob(stmt, 5), e.len)) < 0)
				break;
		}
		if ((r = merge_list_push(&l, &e)) < 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot read elements");
	if (r == 0 && bytes)
		for (size_t i = 0; i < l.n; i++)
			l.v[i].json = ret_store->buf + offsets[i];
	free(offsets);
	if (r < 0) {
		merge_list_release(&l);
		return r;
	}
	*ret = l;
	return 0;
}

struct fetch_ctx {
	struct store *st;
	int64_t doc_id;
};

/* The bytes of a base history item known only by its hash (an explicit base). */
static int fetch_by_hash(void *ctx, const struct merge_elem *e, char **ret_json, size_t *ret_len)
{
	struct fetch_ctx *c = ctx;
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	char *p;

	if (store_prepare(c->st, "SELECT json FROM elems WHERE doc_id = ?1 AND h = ?2 AND key IS NOT NULL LIMIT 1",
			  &stmt) < 0)
		return -EIO;
	sqlite3_bind_int64(stmt, 1, c->doc_id);
	sqlite3_bind_int64(stmt, 2, (sqlite3_int64)e->hash);
	if (sqlite3_step(stmt) != SQLITE_ROW)
		return -ENOENT;
	p = strndup((const char *)sqlite3_column_text(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0));
	if (!p)
		return -ENOMEM;
	*ret_json = p;
	*ret_len = strlen(p);
	return 0;
}

/*
 * Writes the merged list as the doc's new current rows: rows up to the first
 * difference with head stay, the rest are closed and the merged tail is
 * inserted (head rows copied by id, the writer's from its bytes).
 */
static int write_merged(struct store *st, const struct doc_row *d, const struct merge_list *head,
			const struct merge_list *m, const char *data, const struct span_vec *sv, size_t head_len,
			size_t tail, size_t len, int64_t rev, int64_t now, const struct doc_layout *lay, int64_t *ret_size,
			int64_t *ret_lsize)
{
	_cleanup_stmt_ sqlite3_stmt *copy = NULL, *ins = NULL, *pre_of = NULL;
	const char *sep = ",";
	size_t sep_len = 1, first_pre_len = sv->n ? sv->v[0].start - sv->v[0].pre : 0;
	const char *first_pre = sv->n ? data + sv->v[0].pre : "";
	size_t f = 0;
	int64_t off, loff = 0;
	int r, rc;

	if (sv->n >= 2) {
		sep = data + sv->v[1].pre;
		sep_len = sv->v[1].start - sv->v[1].pre;
	}
	/* A removed doc's rows are all closed: everything is inserted anew. */
	if (d->present && strlen(d->head) == head_len && memcmp(d->head, data, head_len) == 0)
		while (f < m->n && f < head->n && m->v[f].origin == MERGE_FROM_HEAD && m->v[f].ref == head->v[f].ref)
			f++;
	r = elems_close(st, d->id, (int64_t)f, rev);
	if (r < 0)
		return r;
	/* The offset where row f starts: the end of row f-1. */
	off = (int64_t)head_len;
	if (f > 0) {
		r = store_prepare(st, "SELECT off + length(CAST(pre AS BLOB)) + len FROM elems WHERE id = ?1", &pre_of);
		if (r < 0)
			return r;
		sqlite3_bind_int64(pre_of, 1, head->v[f - 1].ref);
		rc = sqlite3_step(pre_of);
		if (rc != SQLITE_ROW)
			return store_fail(st, rc, "cannot find an element's end");
		off = sqlite3_column_int64(pre_of, 0);
		if ((r = line_end(st, d->id, head->v[f - 1].ref, false, &loff)) < 0)
			return r;
	}
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff) "
			      "SELECT doc_id, ?2, ?3, ?4, len, json, key, ts, h, ?5, ?6 FROM elems WHERE id = ?1", &copy);
	if (r < 0)
		return r;
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", &ins);
	if (r < 0)
		return r;
	for (size_t i = f; i < m->n; i++) {
		const struct merge_elem *e = &m->v[i];
		const char *pre = i == 0 ? first_pre : sep;
		size_t pre_len = i == 0 ? first_pre_len : sep_len;
		sqlite3_stmt *stmt = e->origin == MERGE_FROM_HEAD ? copy : ins;

		sqlite3_reset(stmt);
		sqlite3_clear_bindings(stmt);
		if (e->origin == MERGE_FROM_HEAD) {
			sqlite3_bind_int64(copy, 1, e->ref);
			sqlite3_bind_int64(copy, 2, (int64_t)i);
			sqlite3_bind_int64(copy, 3, off);
			sqlite3_bind_text(copy, 4, pre, (int)pre_len, SQLITE_STATIC);
			sqlite3_bind_int64(copy, 5, rev);
			sqlite3_bind_int64(copy, 6, loff);
		} else {
			sqlite3_bind_int64(ins, 1, d->id);
			sqlite3_bind_int64(ins, 2, (int64_t)i);
			sqlite3_bind_int64(ins, 3, off);
			sqlite3_bind_text(ins, 4, pre, (int)pre_len, SQLITE_STATIC);
			sqlite3_bind_int64(ins, 5, (int64_t)e->len);
			sqlite3_bind_text64(ins, 6, e->json, e->len, SQLITE_STATIC, SQLITE_UTF8);
			if ((r = elem_bind_identity(st, ins, 7, 9, lay, e->json, e->len, now)) < 0)
				return r;
			sqlite3_bind_int64(ins, 10, rev);
			sqlite3_bind_int64(ins, 11, loff);
		}
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE)
			return store_fail(st, rc, "cannot store a merged element");
		off += (int64_t)(pre_len + e->len);
		loff += (int64_t)e->len + 1;
	}
	*ret_size = off + (int64_t)(len - tail);
	*ret_lsize = loff;
	return 0;
}

/* True if the merged list is exactly what the writer wrote. */
static bool merged_is_new(const struct merge_list *m, const struct merge_list *n)
{
	if (m->n != n->n)
		return false;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].hash != n->v[i].hash)
			return false;
	return true;
}

/*
 * Keeps in l only the history items of tasks in workspace ws_key (NULL: tasks
 * with none): the base of a writer of workspaces/<ws>/taskHistory.json is
 * what it saw there, that workspace's items only.
 */
static int filter_ws(struct store *st, struct merge_list *l, const char *ws_key)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	size_t out = 0;
	int r, rc;

	r = store_prepare(st, "SELECT t.id FROM tasks t LEFT JOIN workspaces w ON w.id = t.workspace_id "
			      "WHERE (?1 IS NULL AND w.id IS NULL) OR w.key = ?1", &stmt);
	if (r < 0)
		return r;
	if (ws_key)
		sqlite3_bind_text(stmt, 1, ws_key, -1, SQLITE_STATIC);
	{
		struct merge_list ids = { 0 };

		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			struct merge_elem e = { .key = doc_key_of_text((const char *)sqlite3_column_text(stmt, 0),
								       (size_t)sqlite3_column_bytes(stmt, 0)) };

			if ((r = merge_list_push(&ids, &e)) < 0)
				break;
		}
		if (r == 0 && rc != SQLITE_DONE)
			r = store_fail(st, rc, "cannot list a workspace's tasks");
		for (size_t i = 0; r == 0 && i < l->n; i++) {
			bool in = false;

			for (size_t j = 0; j < ids.n && !in; j++)
				in = ids.v[j].key == l->v[i].key;
			if (in)
				l->v[out++] = l->v[i];
		}
		merge_list_release(&ids);
	}
	if (r == 0)
		l->n = out;
	return r;
}

static int commit_array(struct store *st, const char *path, const struct doc_layout *lay, const char *data,
			size_t len, const struct store_who *who, const char *kind, bool merge,
			const struct store_base *base, struct store_base **ret_base, bool *ret_merged,
			const char *ws_key)
{
	struct span_vec sv = { 0 };
	struct doc_row d = { 0 };
	struct json_error jerr = { 0 };
	struct merge_list nl = { 0 }, hl = { 0 }, bl_loaded = { 0 }, ml = { 0 };
	struct merge_stats ms = { 0 };
	struct store_base *nb = NULL;
	_cleanup_sb_ struct sb hbytes = SB_INIT, bbytes = SB_INIT;
	bool is_history = lay->ident == IDENT_ITEM_ID, merged = false;
	size_t head = 0, tail = 0, k = 0;
	int64_t now = now_ns(), rev = 0, size = (int64_t)len, lsize = 0;
	char detail[320];
	int r;

	r = json_scan_array_at(data, len, lay->array_member, span_push, &sv, &head, &tail, &jerr);
	if (r < 0) {
		if (r == -EINVAL)
			log_warn("refusing to commit '%s': not %s: %s at byte %zu; nothing stored changes", path,
				 lay->array_member ? "a JSON object with an array of messages" : "a JSON array", jerr.msg,
				 jerr.offset);
		free(sv.v);
		return r;
	}
	pthread_mutex_lock(&st->lock);
	r = tx_begin(st);
	if (r < 0)
		goto unlock;
	r = doc_lookup_or_insert(st, path, DOC_ARRAY, now, &d);
	if (r < 0)
		goto rollback;
	if (base && base->doc_id != d.id)
		base = NULL; /* the doc was made anew since */
	/*
	 * Merge when someone committed since this writer's base. A doc that was
	 * renamed away (Roo's safeWriteJson moves it to .bak before renaming the
	 * new file in) merges with its last content.
	 */
	/*
	 * History items are removed only by a writer that read them: a window's
	 * reload can race its own save, so a base that is the writer's own last
	 * write does not license removals, and such a commit always merges.
	 */
	if (merge && d.format == DOC_ARRAY && (d.present ? d.nelems > 0 : base != NULL) &&
	    (!base || base->explicit_list || base->rev != d.rev || (is_history && !base->read) || ws_key)) {
		/* Someone committed since this writer's base: merge three ways. */
		static const struct merge_list nothing_seen = { 0 };
		/* Without a base the writer has seen nothing: what is stored stays. */
		const struct merge_list *bl = &nothing_seen;
		struct fetch_ctx fc = { st, d.id };

		for (size_t i = 0; i < sv.n; i++) {
			struct merge_elem e = { .json = data + sv.v[i].start, .len = sv.v[i].end - sv.v[i].start,
						.ref = (int64_t)i, .origin = MERGE_FROM_NEW };

			doc_elem_identity(lay->ident, e.json, e.len, &e, NULL);
			if ((r = merge_list_push(&nl, &e)) < 0)
				goto rollback;
		}
		if ((r = load_rows(st, d.id, d.present ? ROWS_CURRENT : d.rev, !d.present, lay->ident, &hl, &hbytes)) < 0)
			goto rollback;
		if (base && base->explicit_list) {
			bl = &base->list;
		} else if (base) {
			if ((r = load_rows(st, d.id, base->rev, false, lay->ident, &bl_loaded, &bbytes)) < 0)
				goto rollback;
			if (ws_key && (r = filter_ws(st, &bl_loaded, *ws_key ? ws_key : NULL)) < 0)
				goto rollback;
			bl = &bl_loaded;
		}
		if ((r = merge_lists(is_history ? MERGE_HISTORY : MERGE_MESSAGES, bl, base && base->read, &hl, &nl,
				     fetch_by_hash, &fc, &ml, &ms)) < 0)
			goto rollback;
		merged = !merged_is_new(&ml, &nl);
		r = revision_add(st, path, who, merged ? "merge" : kind, now, &rev);
		if (r < 0)
			goto rollback;
		r = write_merged(st, &d, &hl, &ml, data, &sv, head, tail, len, rev, now, lay, &size, &lsize);
		if (r < 0)
			goto rollback;
		r = doc_update(st, d.id, DOC_ARRAY, size, now, rev, data, head, data + tail, len - tail,
			       (int64_t)ml.n, lsize);
		if (r < 0)
			goto rollback;
		snprintf(detail, sizeof(detail),
			 "{\"merged\":%s,\"base\":%" PRId64 ",\"head\":%" PRId64 ",\"written\":%zu,\"result\":%zu,"
			 "\"from_writer\":%zu,\"kept_stored\":%zu,\"others_kept\":%zu,\"removed\":%zu,"
			 "\"fields_merged\":%zu,\"size\":%" PRId64 "}",
			 merged ? "true" : "false", base ? base->rev : (int64_t)-1, d.rev, nl.n, ml.n, ms.from_new,
			 ms.from_head, ms.others_kept, ms.removed, ms.fields, size);
	} else {
		if (d.format == DOC_ARRAY && d.present && strlen(d.head) == head && memcmp(d.head, data, head) == 0) {
			r = common_prefix(st, d.id, data, &sv, &k);
			if (r < 0)
				goto rollback;
			if (k == sv.n && (int64_t)k == d.nelems && strlen(d.tail) == len - tail &&
			    memcmp(d.tail, data + tail, len - tail) == 0) {
				rev = d.rev; /* nothing changed: no revision, no new mtime */
				r = 0;
				tx_rollback(st);
				goto done;
			}
		}
		r = revision_add(st, path, who, kind, now, &rev);
		if (r < 0)
			goto rollback;
		lsize = 0;
		if (k > 0 && (r = line_end(st, d.id, (int64_t)k - 1, true, &lsize)) < 0)
			goto rollback;
		if (d.format == DOC_ARRAY && (r = elems_close(st, d.id, (int64_t)k, rev)) < 0)
			goto rollback;
		r = elems_insert(st, d.id, data, &sv, k, rev, lay, now, &lsize);
		if (r < 0)
			goto rollback;
		r = doc_update(st, d.id, DOC_ARRAY, (int64_t)len, now, rev, data, head, data + tail, len - tail,
			       (int64_t)sv.n, lsize);
		if (r < 0)
			goto rollback;
		snprintf(detail, sizeof(detail), "{\"kept\":%zu,\"superseded\":%" PRId64 ",\"added\":%zu,\"size\":%zu}",
			 k, d.format == DOC_ARRAY && d.present ? d.nelems - (int64_t)k : 0, sv.n - k, len);
	}
	r = revision_detail(st, rev, d.id, detail);
	if (r < 0)
		goto rollback;
	r = tx_commit(st);
	if (r < 0)
		goto rollback;
done:
	if (ret_base) {
		if (merged) {
			/* The writer's view is what it wrote, not what is stored: keep it. */
			nb = calloc(1, sizeof(*nb));
			if (nb) {
				nb->doc_id = d.id;
				nb->rev = rev;
				nb->explicit_list = true;
				nb->list = nl;
				for (size_t i = 0; i < nb->list.n; i++)
					nb->list.v[i].json = NULL;
				nl = (struct merge_list){ 0 };
			}
		} else {
			base_at_rev(d.id, rev, &nb);
		}
		*ret_base = nb; /* NULL on allocation failure: the next commit has no base, which is safe */
	}
	if (ret_merged)
		*ret_merged = merged;
	goto unlock;
rollback:
	tx_rollback(st);
unlock:
	pthread_mutex_unlock(&st->lock);
	doc_row_release(&d);
	merge_list_release(&nl);
	merge_list_release(&hl);
	merge_list_release(&bl_loaded);
	merge_list_release(&ml);
	free(sv.v);
	return r;
}

/* ---- appends ------------------------------------------------------------------ */

int store_line_check(const char *path, size_t i, const struct store_line *l, const char *require_member)
{
	struct json_error jerr = { 0 };
	size_t a, b, k = 0;

	while (k < l->len && (l->data[k] == ' ' || l->data[k] == '\t'))
		k++;
	if (json_validate(l->data, l->len, &jerr) < 0) {
		log_warn("refusing to append to '%s': line %zu is not valid JSON: %s at byte %zu; nothing stored",
			 path, i + 1, jerr.msg, jerr.offset);
		return -EINVAL;
	}
	if (k >= l->len || l->data[k] != '{') {
		log_warn("refusing to append to '%s': line %zu is not a JSON object; nothing stored", path, i + 1);
		return -EINVAL;
	}
	if (require_member && json_object_member(l->data, l->len, require_member, &a, &b) < 0) {
		log_warn("refusing to append to '%s': line %zu has no \"%s\"; nothing stored", path, i + 1,
			 require_member);
		return -EINVAL;
	}
	return 0;
}

/*
 * Appends lines to doc d as revision rev, inside the caller's transaction,
 * and updates the doc's row.
 */
static int append_rows(struct store *st, const struct doc_row *dr, const char *path, const struct store_line *lines,
		       size_t n, int64_t rev, int64_t now)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	const struct doc_row d = *dr;
	struct doc_layout lay;
	const char *head = "[", *tail = "]";
	int64_t off, loff, seq;
	int r, rc;

	if (doc_layout_of(path, &lay) < 0 || lay.kind != STORE_PATH_ARRAY)
		return -EINVAL;
	if (d.present && d.format == DOC_ARRAY && d.size > 0) {
		head = d.head;
		tail = d.tail;
		off = d.size - (int64_t)strlen(d.tail);
		loff = d.lsize;
		seq = d.nelems;
	} else if (lay.array_member) {
		log_warn("refusing to append to '%s': it has no content to append to", path);
		return -ENOENT; /* the object around the array is the client's to write first */
	} else {
		off = 1;
		loff = 0;
		seq = 0;
	}
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, rev_from, h, loff) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", &stmt);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++, seq++) {
		const struct store_line *l = &lines[i];
		const char *pre = seq == 0 ? "" : ",";

		sqlite3_reset(stmt);
		sqlite3_clear_bindings(stmt);
		sqlite3_bind_int64(stmt, 1, d.id);
		sqlite3_bind_int64(stmt, 2, seq);
		sqlite3_bind_int64(stmt, 3, off);
		sqlite3_bind_text(stmt, 4, pre, -1, SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 5, (int64_t)l->len);
		sqlite3_bind_text64(stmt, 6, l->data, l->len, SQLITE_STATIC, SQLITE_UTF8);
		if ((r = elem_bind_identity(st, stmt, 7, 10, &lay, l->data, l->len, now)) < 0)
			return r;
		sqlite3_bind_int64(stmt, 9, rev);
		sqlite3_bind_int64(stmt, 11, loff);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE)
			return store_fail(st, rc, "cannot append an element");
		off += (int64_t)(strlen(pre) + l->len);
		loff += (int64_t)l->len + 1;
	}
	return doc_update(st, d.id, DOC_ARRAY, off + (int64_t)strlen(tail), now, rev, head, strlen(head), tail,
			  strlen(tail), seq, loff);
}

/* The part of store_doc_append() under the lock. */
static int append_locked(struct store *st, const char *path, const struct store_line *lines, size_t n,
			 const struct store_who *who)
{
	struct doc_row d = { 0 };
	int64_t now = now_ns(), rev;
	char detail[64];
	int r;

	r = tx_begin(st);
	if (r < 0)
		return r;
	r = doc_lookup_or_insert(st, path, DOC_ARRAY, now, &d);
	if (r < 0)
		goto rollback;
	if (d.present && d.format != DOC_ARRAY && d.size > 0) {
		log_warn("refusing to append to '%s': it is kept as found, unparsed; rewrite it whole first", path);
		r = -EINVAL;
		goto rollback;
	}
	if ((r = revision_add(st, path, who, "append", now, &rev)) < 0)
		goto rollback;
	if ((r = append_rows(st, &d, path, lines, n, rev, now)) < 0)
		goto rollback;
	snprintf(detail, sizeof(detail), "{\"appended\":%zu}", n);
	if ((r = revision_detail(st, rev, d.id, detail)) < 0 || (r = tx_commit(st)) < 0)
		goto rollback;
	doc_row_release(&d);
	return 0;
rollback:
	tx_rollback(st);
	doc_row_release(&d);
	return r;
}

int store_doc_append(struct store *st, const char *path, const struct store_line *lines, size_t n,
		     const char *require_member, const struct store_who *who)
{
	int r;

	if (st->readonly)
		return -EROFS;
	if (store_path_kind(path) != STORE_PATH_ARRAY)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((r = store_line_check(path, i, &lines[i], require_member)) < 0)
			return r;
	if (n == 0)
		return 0;
	STORE_LOCK(st);
	return append_locked(st, path, lines, n, who);
}

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

	r = store_prepare(st, "SELECT seq, off, pre, len, loff FROM elems WHERE doc_id = ?1 AND rev_to IS NULL "
			      "AND seq = ?2", &q);
	if (r < 0)
		return r;
	sqlite3_bind_int64(q, 1, d->id);
	sqlite3_bind_int64(q, 2, seq);
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
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff) "
			      "SELECT doc_id, seq - 1, ?3, coalesce(?4, pre), len, json, key, ts, h, ?5, ?6 FROM elems "
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
		r = store_prepare(st, "SELECT length(CAST(pre AS BLOB)), len FROM elems "
				      "WHERE doc_id = ?1 AND seq = ?2 AND rev_from = ?3", &len_q);
		if (r < 0)
			goto out;
		sqlite3_bind_int64(len_q, 1, d->id);
		sqlite3_bind_int64(len_q, 2, i - 1);
		sqlite3_bind_int64(len_q, 3, rev);
		if ((rc = sqlite3_step(len_q)) != SQLITE_ROW) {
			r = store_fail(st, rc, "cannot read a moved element");
			goto out;
		}
		plen = sqlite3_column_int64(len_q, 0);
		len = sqlite3_column_int64(len_q, 1);
		off += plen + len;
		loff += len + 1;
	}
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

	r = store_prepare(st, "SELECT max(id) FROM revisions WHERE path = ?1 AND kind = ?2", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, kind, -1, SQLITE_STATIC);
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
	r = store_prepare(st, "SELECT path FROM docs WHERE task_id = ?1 AND present", &docs);
	if (r < 0)
		return r;
	sqlite3_bind_text(docs, 1, task_id, -1, SQLITE_STATIC);
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
	_cleanup_stmt_ sqlite3_stmt *docs = NULL, *item = NULL;
	struct doc_row h = { 0 };
	int64_t now = now_ns(), rev, trash_rev = 0;
	int r, rc;

	r = last_revision(st, tpath, "trash", &trash_rev);
	if (r < 0)
		return r;
	r = revision_add(st, tpath, who, "restore", now, &rev);
	if (r < 0)
		return r;
	r = store_prepare(st, "SELECT path FROM docs WHERE task_id = ?1 AND NOT present", &docs);
	if (r < 0)
		return r;
	sqlite3_bind_text(docs, 1, task_id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(docs)) == SQLITE_ROW) {
		_cleanup_stmt_ sqlite3_stmt *copy = NULL;
		struct doc_row d = { 0 };

		r = doc_lookup(st, (const char *)sqlite3_column_text(docs, 0), &d);
		if (r == 0 && d.format == DOC_ARRAY) {
			/* Its last content: the rows its removal closed. */
			r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff) "
					      "SELECT doc_id, seq, off, pre, len, json, key, ts, h, ?3, loff FROM elems "
					      "WHERE doc_id = ?1 AND rev_to = ?2", &copy);
			if (r == 0) {
				sqlite3_bind_int64(copy, 1, d.id);
				sqlite3_bind_int64(copy, 2, d.rev);
				sqlite3_bind_int64(copy, 3, rev);
				if ((rc = sqlite3_step(copy)) != SQLITE_DONE)
					r = store_fail(st, rc, "cannot bring elements back");
			}
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
	_cleanup_stmt_ sqlite3_stmt *ws = NULL, *live = NULL;
	int64_t now = now_ns();
	int r, rc;

	r = store_prepare(st, "SELECT count(*) FROM docs WHERE task_id = ?1 AND present", &live);
	if (r < 0)
		return r;
	sqlite3_bind_text(live, 1, task_id, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(live)) != SQLITE_ROW)
		return store_fail(st, rc, "cannot look up a task");
	if (sqlite3_column_int64(live, 0) > 0)
		return -EEXIST;
	if ((r = task_ensure(st, task_id, now)) < 0)
		return r;
	if (ws_key) {
		r = store_prepare(st, "UPDATE tasks SET workspace_id = (SELECT id FROM workspaces WHERE key = ?2), "
				      "trashed_ns = NULL WHERE id = ?1", &ws);
		if (r < 0)
			return r;
		sqlite3_bind_text(ws, 1, task_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(ws, 2, ws_key, -1, SQLITE_STATIC);
		placement_moved(st);
		if ((rc = sqlite3_step(ws)) != SQLITE_DONE)
			return store_fail(st, rc, "cannot place a task in its workspace");
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char path[96];
		struct doc_row d = { 0 };
		int64_t rev;

		snprintf(path, sizeof(path), "tasks/%s/%s", task_id, names[i]);
		r = doc_lookup_or_insert(st, path, DOC_ARRAY, now, &d);
		if (r == 0 && (r = revision_add(st, path, who, "create", now, &rev)) == 0 &&
		    d.format == DOC_ARRAY && (r = elems_close(st, d.id, 0, rev)) == 0)
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

/* ---- whole docs ------------------------------------------------------- */

static int blob_equal(struct store *st, int64_t doc_id, int64_t rev, const char *data, size_t len, bool *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "SELECT data FROM blobs WHERE doc_id = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int64(stmt, 2, rev);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE) {
		*ret = len == 0;
		return 0;
	}
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read a blob");
	*ret = (size_t)sqlite3_column_bytes(stmt, 0) == len &&
	       (len == 0 || memcmp(sqlite3_column_blob(stmt, 0), data, len) == 0);
	return 0;
}

/* The bytes of a whole doc's version at rev; free() them. */
static int blob_load(struct store *st, int64_t doc_id, int64_t rev, char **ret, size_t *ret_len)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;
	size_t n;
	char *p;

	r = store_prepare(st, "SELECT data FROM blobs WHERE doc_id = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int64(stmt, 2, rev);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : store_fail(st, rc, "cannot read a file version");
	n = (size_t)sqlite3_column_bytes(stmt, 0);
	p = malloc(n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, sqlite3_column_blob(stmt, 0), n);
	p[n] = '\0';
	*ret = p;
	*ret_len = n;
	return 0;
}

static int commit_blob(struct store *st, const char *path, const struct doc_layout *lay, const char *data,
		       size_t len, const struct store_who *who, const char *kind, int format, bool merge,
		       const struct store_base *base, struct store_base **ret_base, bool *ret_merged)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_free_ char *merged_data = NULL;
	struct doc_row d = { 0 };
	int64_t now = now_ns(), rev = 0;
	bool same = false, merged = false;
	int r, rc;

	r = tx_begin(st);
	if (r < 0)
		goto unlock;
	r = doc_lookup_or_insert(st, path, format, now, &d);
	if (r < 0)
		goto rollback;
	if (merge && base && base->doc_id == d.id && base->rev != d.rev && d.present && d.format == DOC_WHOLE &&
	    format == DOC_WHOLE && lay->whole_merge == WHOLE_MERGE_METADATA) {
		_cleanup_free_ char *b = NULL, *h = NULL;
		size_t blen = 0, hlen = 0, mlen = 0;

		if (blob_load(st, d.id, base->rev, &b, &blen) == 0 && blob_load(st, d.id, d.rev, &h, &hlen) == 0 &&
		    merge_metadata(b, blen, h, hlen, data, len, &merged_data, &mlen) == 0) {
			merged = mlen != len || memcmp(merged_data, data, len) != 0;
			data = merged_data;
			len = mlen;
		}
	}
	rev = d.rev;
	if (d.present && d.format == format && format != DOC_ARRAY) {
		r = blob_equal(st, d.id, d.rev, data, len, &same);
		if (r < 0)
			goto rollback;
		if (same) {
			r = 0;
			tx_rollback(st);
			goto done;
		}
	}
	r = revision_add(st, path, who, merged ? "merge" : kind, now, &rev);
	if (r < 0)
		goto rollback;
	if (d.format == DOC_ARRAY && (r = elems_close(st, d.id, 0, rev)) < 0)
		goto rollback;
	r = store_prepare(st, "INSERT INTO blobs(doc_id, rev, data) VALUES (?1, ?2, ?3)", &stmt);
	if (r < 0)
		goto rollback;
	sqlite3_bind_int64(stmt, 1, d.id);
	sqlite3_bind_int64(stmt, 2, rev);
	sqlite3_bind_blob64(stmt, 3, len ? data : "", len, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE) {
		r = store_fail(st, rc, "cannot store a file version");
		goto rollback;
	}
	r = doc_update(st, d.id, format, (int64_t)len, now, rev, "", 0, "", 0, 0, 0);
	if (r == 0 && format == DOC_WHOLE && lay->learn == LEARN_MANIFEST)
		r = manifest_seen(st, lay->task_id, data, len, now);
	if (r < 0)
		goto rollback;
	r = revision_detail(st, rev, d.id, format == DOC_RAW ? "{\"raw\":true}" : merged ? "{\"merged\":true}" : NULL);
	if (r < 0)
		goto rollback;
	r = tx_commit(st);
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

static int commit_doc(struct store *st, const char *path, const char *data, size_t len,
		      const struct store_who *who, const char *kind, bool merge, const struct store_base *base,
		      struct store_base **ret_base, bool *ret_merged)
{
	struct json_error jerr = { 0 };
	struct doc_layout lay = { 0 };
	int r;

	if (st->readonly)
		return -EROFS;
	if (doc_layout_of(path, &lay) < 0)
		return -EINVAL;
	switch (lay.kind) {
	case STORE_PATH_ARRAY:
		return commit_array(st, path, &lay, data, len, who, kind, merge, base, ret_base, ret_merged, NULL);
	case STORE_PATH_WHOLE:
		r = json_validate(data, len, &jerr);
		if (r < 0) {
			log_warn("refusing to commit '%s': not valid JSON: %s at byte %zu; nothing stored changes",
				 path, jerr.msg, jerr.offset);
			return r;
		}
		return commit_blob(st, path, &lay, data, len, who, kind, DOC_WHOLE, merge, base, ret_base,
				   ret_merged);
	default:
		return -EINVAL;
	}
}

int store_doc_commit(struct store *st, const char *path, const char *data, size_t len,
		     const struct store_who *who, const char *kind)
{
	return commit_doc(st, path, data, len, who, kind, false, NULL, NULL, NULL);
}

int store_doc_commit_merged(struct store *st, const char *path, const char *data, size_t len,
			    const struct store_who *who, const char *kind, const struct store_base *base,
			    struct store_base **ret_base, bool *ret_merged)
{
	return commit_doc(st, path, data, len, who, kind, true, base, ret_base, ret_merged);
}

int store_history_commit_ws(struct store *st, const char *ws_key, const char *data, size_t len,
			    const struct store_who *who, const struct store_base *base, struct store_base **ret_base)
{
	struct doc_layout lay;

	if (st->readonly)
		return -EROFS;
	if (doc_layout_of("state/taskHistory.json", &lay) < 0)
		return -EINVAL;
	return commit_array(st, "state/taskHistory.json", &lay, data, len, who, "merge", true, base, ret_base, NULL,
			    ws_key ? ws_key : "");
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
	struct doc_layout lay;

	if (st->readonly)
		return -EROFS;
	if (doc_layout_of(path, &lay) < 0 || (lay.kind != STORE_PATH_ARRAY && lay.kind != STORE_PATH_WHOLE))
		return -EINVAL;
	return commit_blob(st, path, &lay, data, len, who, why, DOC_RAW, false, NULL, NULL, NULL);
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
	pthread_mutex_lock(&st->lock);
	r = tx_begin(st);
	if (r < 0)
		goto unlock;
	r = doc_lookup_or_insert(st, path, kind == STORE_PATH_ARRAY ? DOC_ARRAY : DOC_WHOLE, now, &d);
	if (r < 0)
		goto rollback;
	if (d.present) {
		r = -EEXIST;
		goto rollback;
	}
	r = revision_add(st, path, who, "create", now, &rev);
	if (r < 0)
		goto rollback;
	r = doc_update(st, d.id, kind == STORE_PATH_ARRAY ? DOC_ARRAY : DOC_WHOLE, 0, now, rev, "", 0, "", 0, 0, 0);
	if (r < 0 || (r = revision_detail(st, rev, d.id, NULL)) < 0 || (r = tx_commit(st)) < 0)
		goto rollback;
	goto unlock;
rollback:
	tx_rollback(st);
unlock:
	pthread_mutex_unlock(&st->lock);
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
	r = revision_add(st, path, who, kind, now, &rev);
	if (r < 0)
		goto rollback;
	if (d.format == DOC_ARRAY && (r = elems_close(st, d.id, 0, rev)) < 0)
		goto rollback;
	/* size, head, tail, nelems, lsize stay: they describe the closed rows, for a revival. */
	r = doc_set_present(st, d.id, false, rev, now);
	if (r < 0)
		goto rollback;
	if ((r = revision_detail(st, rev, d.id, NULL)) < 0 || (r = tx_commit(st)) < 0)
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
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (st->readonly)
		return -EROFS;
	r = store_prepare(st, "UPDATE docs SET mtime_ns = ?2 WHERE path = ?1 AND present", &stmt);
	if (r == 0) {
		sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 2, mtime_ns);
		rc = sqlite3_step(stmt);
		r = rc != SQLITE_DONE ? store_fail(st, rc, "cannot set a doc's mtime")
				      : sqlite3_changes(st->db) ? 0 : -ENOENT;
	}
	return r;
}

/* ---- stat, list, snapshots -------------------------------------------------- */

static void stat_from_row(sqlite3_stmt *stmt, int col, struct store_stat *s)
{
	s->ino = STORE_INO_BASE + (uint64_t)sqlite3_column_int64(stmt, col);
	s->size = sqlite3_column_int64(stmt, col + 1);
	s->mtime_ns = sqlite3_column_int64(stmt, col + 2);
	s->ctime_ns = sqlite3_column_int64(stmt, col + 3);
	s->rev = sqlite3_column_int64(stmt, col + 4);
	s->lsize = sqlite3_column_int64(stmt, col + 5);
}

int store_doc_stat(struct store *st, const char *path, struct store_stat *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "SELECT id, size, mtime_ns, ctime_ns, rev, lsize FROM docs WHERE path = ?1 AND present", &stmt);
	if (r < 0)
		goto out;
	sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		stat_from_row(stmt, 0, ret);
	r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : store_fail(st, rc, "cannot stat a doc");
out:
	return r;
}

struct listed {
	char *name;
	struct store_stat stat;
};

/* Runs a listing query into memory, then calls fn without holding the lock. */
static int list_query(struct store *st, const char *sql, const char *arg, store_list_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct listed *v = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	pthread_mutex_lock(&st->lock);
	r = store_prepare(st, sql, &stmt);
	if (r < 0) {
		pthread_mutex_unlock(&st->lock);
		return r;
	}
	if (arg)
		sqlite3_bind_text(stmt, 1, arg, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 16;
			struct listed *p = realloc(v, na * sizeof(*p));

			if (!p) {
				r = -ENOMEM;
				break;
			}
			v = p;
			alloc = na;
		}
		v[n].name = dup_text(stmt, 0);
		if (!v[n].name) {
			r = -ENOMEM;
			break;
		}
		stat_from_row(stmt, 1, &v[n].stat);
		n++;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot list docs");
	store_stmt_release(TAKE_PTR(stmt));
	pthread_mutex_unlock(&st->lock);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = fn(ctx, v[i].name, &v[i].stat);
		free(v[i].name);
	}
	free(v);
	return r;
}

int store_doc_list(struct store *st, const char *dir, store_list_fn fn, void *ctx)
{
	return list_query(st, "SELECT name, id, size, mtime_ns, ctime_ns, rev, lsize FROM docs "
			      "WHERE parent = ?1 AND present ORDER BY name", dir, fn, ctx);
}

int store_doc_foreach(struct store *st, store_list_fn fn, void *ctx)
{
	return list_query(st, "SELECT path, id, size, mtime_ns, ctime_ns, rev, lsize FROM docs WHERE present ORDER BY path",
			  NULL, fn, ctx);
}

static int snap_open(struct store *st, const char *path, bool jsonl, bool removed, struct store_snap **ret);

int store_snap_open(struct store *st, const char *path, struct store_snap **ret)
{
	return snap_open(st, path, false, false, ret);
}

int store_snap_open_jsonl(struct store *st, const char *path, struct store_snap **ret)
{
	return snap_open(st, path, true, false, ret);
}

int store_snap_open_removed(struct store *st, const char *path, bool jsonl, struct store_snap **ret)
{
	return snap_open(st, path, jsonl, true, ret);
}

/*
 * removed: path must be a removed doc, and the snapshot is its last version:
 * the revision before the one that removed it, whose rows that revision
 * closed (revisions only grow, so every row of that version is visible).
 */
static int snap_open(struct store *st, const char *path, bool jsonl, bool removed, struct store_snap **ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct doc_row d = { 0 };
	struct store_snap *s;
	int r, rc;

	r = doc_lookup(st, path, &d);
	if (r < 0)
		goto out;
	if (d.present == removed || (removed && d.rev < 2)) {
		r = -ENOENT;
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		goto out;
	}
	if (jsonl && d.format != DOC_ARRAY) {
		free(s);
		r = -EINVAL; /* a damaged file kept as found has no lines */
		goto out;
	}
	s->doc_id = d.id;
	s->rev = removed ? d.rev - 1 : d.rev;
	s->jsonl = jsonl;
	s->size = jsonl ? d.lsize : d.size;
	s->lsize = d.lsize;
	s->mtime_ns = d.mtime_ns;
	s->ctime_ns = d.ctime_ns;
	s->format = d.format;
	s->head_len = strlen(d.head);
	s->tail_len = strlen(d.tail);
	s->head = TAKE_PTR(d.head);
	s->tail = TAKE_PTR(d.tail);
	if (d.format != DOC_ARRAY && d.size > 0) {
		r = store_prepare(st, "SELECT id FROM blobs WHERE doc_id = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1",
				  &stmt);
		if (r < 0) {
			store_snap_free(s);
			goto out;
		}
		sqlite3_bind_int64(stmt, 1, d.id);
		sqlite3_bind_int64(stmt, 2, s->rev);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW) {
			r = rc == SQLITE_DONE ? -EIO : store_fail(st, rc, "cannot find a file version");
			if (rc == SQLITE_DONE)
				log_err("store: '%s' has no content for revision %" PRId64, path, d.rev);
			store_snap_free(s);
			goto out;
		}
		s->blob_rowid = sqlite3_column_int64(stmt, 0);
	}
	*ret = s;
	r = 0;
out:
	doc_row_release(&d);
	return r;
}

void store_snap_free(struct store_snap *snap)
{
	if (!snap)
		return;
	free(snap->head);
	free(snap->tail);
	free(snap);
}

int64_t store_snap_size(const struct store_snap *snap)
{
	return snap->size;
}

void store_snap_stat(const struct store_snap *snap, struct store_stat *ret)
{
	*ret = (struct store_stat){
		.ino = STORE_INO_BASE + (uint64_t)snap->doc_id,
		.size = snap->size,
		.lsize = snap->lsize,
		.mtime_ns = snap->mtime_ns,
		.ctime_ns = snap->ctime_ns,
		.rev = snap->rev,
	};
}

int64_t store_snap_rev(const struct store_snap *snap)
{
	return snap->rev;
}

/* Copies the part of src[0, n), placed at file offset at, that falls in [pos, end). */
static size_t copy_part(char *buf, off_t buf_off, const char *src, off_t at, size_t n, off_t end)
{
	off_t a = at > buf_off ? at : buf_off;
	off_t b = at + (off_t)n < end ? at + (off_t)n : end;

	if (b <= a)
		return 0;
	memcpy(buf + (a - buf_off), src + (a - at), (size_t)(b - a));
	return (size_t)(b - a);
}

static int blob_read(struct store *st, const char *table, const char *column, int64_t rowid, char *dst, size_t n,
		     int64_t at)
{
	int rc = SQLITE_ERROR;

	if (st->blob && st->blob_table == table && st->blob_column == column) {
		rc = st->blob_rowid == rowid ? SQLITE_OK : sqlite3_blob_reopen(st->blob, rowid);
		if (rc == SQLITE_OK)
			rc = sqlite3_blob_read(st->blob, dst, (int)n, (int)at);
		/* Any failure (a handle expired by a change, most likely): afresh. */
	}
	if (rc != SQLITE_OK) {
		store_blob_drop(st);
		rc = sqlite3_blob_open(st->db, "main", table, column, rowid, 0, &st->blob);
		if (rc == SQLITE_OK)
			rc = sqlite3_blob_read(st->blob, dst, (int)n, (int)at);
		if (rc != SQLITE_OK) {
			int r = store_fail(st, rc, "cannot read stored content");

			store_blob_drop(st);
			return r;
		}
	}
	st->blob_table = table;
	st->blob_column = column;
	st->blob_rowid = rowid;
	return 0;
}

static ssize_t read_array(struct store *st, struct store_snap *s, char *buf, off_t off, off_t end)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	off_t tail_at = s->size - (off_t)s->tail_len;
	int r, rc;

	copy_part(buf, off, s->head, 0, s->head_len, end);
	if (off < tail_at && end > (off_t)s->head_len) {
		r = store_prepare(st,
			"SELECT id, off, pre, len, CASE WHEN len <= " "65536" " THEN json END FROM elems "
			"WHERE doc_id = ?1 AND rev_from <= ?3 AND (rev_to IS NULL OR rev_to > ?3) AND off < ?4 AND off >= "
			"  coalesce((SELECT max(off) FROM elems WHERE doc_id = ?1 AND off <= ?2 AND rev_from <= ?3 "
			"           AND (rev_to IS NULL OR rev_to > ?3)), 0) "
			"ORDER BY off", &stmt);
		if (r < 0)
			return r;
		sqlite3_bind_int64(stmt, 1, s->doc_id);
		sqlite3_bind_int64(stmt, 2, off);
		sqlite3_bind_int64(stmt, 3, s->rev);
		sqlite3_bind_int64(stmt, 4, end);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(stmt, 0);
			off_t at = sqlite3_column_int64(stmt, 1);
			size_t plen = (size_t)sqlite3_column_bytes(stmt, 2);
			size_t jlen = (size_t)sqlite3_column_int64(stmt, 3);
			off_t jat = at + (off_t)plen;

			copy_part(buf, off, (const char *)sqlite3_column_blob(stmt, 2), at, plen, end);
			if (sqlite3_column_type(stmt, 4) != SQLITE_NULL) {
				copy_part(buf, off, (const char *)sqlite3_column_blob(stmt, 4), jat, jlen, end);
			} else {
				off_t a = jat > off ? jat : off;
				off_t b = jat + (off_t)jlen < end ? jat + (off_t)jlen : end;

				if (b > a && (r = blob_read(st, "elems", "json", id, buf + (a - off), (size_t)(b - a),
							    a - jat)) < 0)
					return r;
			}
		}
		if (rc != SQLITE_DONE)
			return store_fail(st, rc, "cannot read elements");
	}
	copy_part(buf, off, s->tail, tail_at, s->tail_len, end);
	return end - off;
}

/* A JSONL line: the element's bytes, line breaks as spaces, then "\n". */
static ssize_t read_jsonl(struct store *st, struct store_snap *s, char *buf, off_t off, off_t end)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st,
		"SELECT id, loff, len, CASE WHEN len <= 65536 THEN json END FROM elems "
		"WHERE doc_id = ?1 AND rev_from <= ?3 AND (rev_to IS NULL OR rev_to > ?3) AND loff < ?4 AND loff >= "
		"  coalesce((SELECT max(loff) FROM elems WHERE doc_id = ?1 AND loff <= ?2 AND rev_from <= ?3 "
		"           AND (rev_to IS NULL OR rev_to > ?3)), 0) "
		"ORDER BY loff", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, s->doc_id);
	sqlite3_bind_int64(stmt, 2, off);
	sqlite3_bind_int64(stmt, 3, s->rev);
	sqlite3_bind_int64(stmt, 4, end);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(stmt, 0);
		off_t at = sqlite3_column_int64(stmt, 1);
		size_t jlen = (size_t)sqlite3_column_int64(stmt, 2);
		off_t a = at > off ? at : off;
		off_t b = at + (off_t)jlen < end ? at + (off_t)jlen : end;

		if (sqlite3_column_type(stmt, 3) != SQLITE_NULL)
			copy_part(buf, off, (const char *)sqlite3_column_blob(stmt, 3), at, jlen, end);
		else if (b > a && (r = blob_read(st, "elems", "json", id, buf + (a - off), (size_t)(b - a), a - at)) < 0)
			return r;
		for (off_t i = a; i < b; i++)
			if (buf[i - off] == '\n' || buf[i - off] == '\r')
				buf[i - off] = ' ';
		if (at + (off_t)jlen >= off && at + (off_t)jlen < end)
			buf[at + (off_t)jlen - off] = '\n';
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read elements");
	return end - off;
}

ssize_t store_snap_read(struct store *st, struct store_snap *s, char *buf, size_t size, off_t off)
{
	off_t end;
	ssize_t r;

	if (off < 0)
		return -EINVAL;
	if (off >= s->size || size == 0)
		return 0;
	end = (off_t)size > s->size - off ? s->size : off + (off_t)size;
	pthread_mutex_lock(&st->lock);
	if (s->jsonl)
		r = read_jsonl(st, s, buf, off, end);
	else if (s->format == DOC_ARRAY)
		r = read_array(st, s, buf, off, end);
	else
		r = blob_read(st, "blobs", "data", s->blob_rowid, buf, (size_t)(end - off), off) < 0 ? -EIO : end - off;
	pthread_mutex_unlock(&st->lock);
	return r;
}

int store_snap_limit(struct store *st, struct store_snap *s, int64_t n)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (s->format != DOC_ARRAY)
		return -EINVAL;
	if (n <= 0) {
		s->size = s->jsonl ? 0 : (int64_t)s->head_len; /* the compat rendering keeps its '[' */
		return 0;
	}
	r = store_prepare(st, "SELECT off + length(CAST(pre AS BLOB)) + len, coalesce(loff, 0) + len + 1 FROM elems "
			      "WHERE doc_id = ?1 AND seq = ?2 AND rev_from <= ?3 AND (rev_to IS NULL OR rev_to > ?3)", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, s->doc_id);
	sqlite3_bind_int64(stmt, 2, n - 1);
	sqlite3_bind_int64(stmt, 3, s->rev);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return 0; /* fewer elements than n: the whole snapshot */
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot find an element");
	s->size = sqlite3_column_int64(stmt, s->jsonl ? 1 : 0);
	if (!s->jsonl)
		s->tail_len = 0; /* a cut array has no tail; the compat cut is for internal use only */
	return 0;
}
