/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * forget.c: `convfs forget`, the store's side: take a leaked secret (or a
 * whole conversation) out of the store for good, bytes included.
 *
 * Nothing else in the store ever deletes (docs/ARCHITECTURE.md: rows are
 * only closed), so this file breaks that rule on purpose, and keeps the
 * other invariants (docs/SCHEMA.md, store/check.c) while it does:
 *  - a current message leaves its conversation through an ordinary commit
 *    (kind "forget", not merged): the doc is re-laid by the usual code;
 *  - a message of an older version is blanked in place: its bytes become
 *    {"forgotten":true} (or {}) padded with spaces to the same length, so
 *    every version still renders, at the same offsets, as valid JSON;
 *  - a whole file's older versions holding it are deleted (a snapshot at
 *    such a revision reads the version before); its current version is
 *    committed again with the text masked ('*', same length), or, where that
 *    is no valid JSON, the file is removed (present = 0); the same masking
 *    for an array doc's own bytes around its messages (a session's head);
 *  - a forgotten task's docs, rows, versions, revisions and history item go,
 *    and the rows of what was seen underneath lose their revision (so an
 *    unchanged file there is still not taken in again, fs/backing/import.c).
 * The search index lets go of every current row step 2 changes before it
 * changes it (FTS5 takes a row out of the index by its text), and takes
 * back those still current afterwards, blanked; then its segments are
 * merged into one, which leaves no page with the forgotten words.
 * Then the database is rewritten (VACUUM, with secure_delete) and its WAL
 * truncated, so that no free page or WAL frame keeps the bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/search.h"
#include "store/store_ops.h"
#include "store/util.h"

#define HISTORY "state/taskHistory.json"

/*
 * A row holding what is forgotten: ?1 the text (NULL: all of the task), ?2
 * the task (NULL: any); a task's history item is the task's too.
 */
#define ROW_HITS                                                                                                  \
	"(?1 IS NOT NULL OR ?2 IS NOT NULL) "                                                                      \
	"AND (?2 IS NULL OR d.task_id = ?2 OR (d.path = '" HISTORY "' AND e.key = ?2)) "                           \
	"AND (?1 IS NULL OR instr(e.json, ?1) > 0)"
#define BLOB_HITS                                                                                                 \
	"(?1 IS NOT NULL OR ?2 IS NOT NULL) AND (?2 IS NULL OR d.task_id = ?2) "                                   \
	"AND (?1 IS NULL OR instr(b.data, CAST(?1 AS BLOB)) > 0)"
/* the whole doc goes: all of a forgotten task, or a whole file whose current version holds the text */
#define WHOLE_GOES                                                                                                \
	"((?1 IS NULL AND d.task_id = ?2) OR (?1 IS NOT NULL AND d.format != 0 AND d.present "                     \
	" AND (?2 IS NULL OR d.task_id = ?2) AND instr((SELECT data FROM blobs WHERE doc_id = d.id AND rev <= d.rev " \
	"  ORDER BY rev DESC LIMIT 1), CAST(?1 AS BLOB)) > 0))"
#define HEAD_HOLDS                                                                                                \
	"(?1 IS NOT NULL AND d.present AND d.format = 0 AND (?2 IS NULL OR d.task_id = ?2) "                       \
	" AND (instr(d.head, ?1) > 0 OR instr(d.tail, ?1) > 0))"

static void bind_forget(sqlite3_stmt *stmt, const struct store_forget *f)
{
	if (f->match)
		sqlite3_bind_text(stmt, 1, f->match, -1, SQLITE_STATIC);
	if (f->task)
		sqlite3_bind_text(stmt, 2, f->task, -1, SQLITE_STATIC);
}

struct plan_row {
	struct store_forget_doc d;
	int64_t id;
	int format;
	bool present;
};

/* The docs the forget touches, into memory (the caller frees each path and the array). */
static int plan_rows(struct store *st, const struct store_forget *f, struct plan_row **ret_v, size_t *ret_n)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct plan_row *v = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	r = store_prepare(st,
		"WITH h AS (SELECT e.doc_id, count(*) AS n, sum(e.rev_to IS NULL) AS cur FROM elems e "
		"           JOIN docs d ON d.id = e.doc_id WHERE " ROW_HITS " GROUP BY e.doc_id), "
		"     bh AS (SELECT b.doc_id, count(*) AS n FROM blobs b JOIN docs d ON d.id = b.doc_id "
		"            WHERE " BLOB_HITS " GROUP BY b.doc_id) "
		"SELECT d.path, coalesce(h.n, 0), coalesce(h.cur, 0), coalesce(bh.n, 0), " WHOLE_GOES ", "
		"  " HEAD_HOLDS ", d.id, d.format, d.present "
		"FROM docs d LEFT JOIN h ON h.doc_id = d.id LEFT JOIN bh ON bh.doc_id = d.id "
		"WHERE h.n > 0 OR bh.n > 0 OR " WHOLE_GOES " OR " HEAD_HOLDS " ORDER BY d.path", &stmt);
	if (r < 0)
		return r;
	bind_forget(stmt, f);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if ((r = ARRAY_GROW(v, n, alloc, 16)) < 0)
			break;
		v[n] = (struct plan_row){
			.d = { .path = (const char *)dup_text(stmt, 0), .messages = sqlite3_column_int64(stmt, 1),
			       .current = sqlite3_column_int64(stmt, 2), .versions = sqlite3_column_int64(stmt, 3),
			       .whole = sqlite3_column_int(stmt, 4), .head = sqlite3_column_int(stmt, 5) },
			.id = sqlite3_column_int64(stmt, 6),
			.format = sqlite3_column_int(stmt, 7),
			.present = sqlite3_column_int(stmt, 8),
		};
		if (!v[n].d.path) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot find what to forget");
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free((char *)v[i].d.path);
		free(v);
		return r;
	}
	*ret_v = v;
	*ret_n = n;
	return 0;
}

static void plan_free(struct plan_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].d.path);
	free(v);
}

int store_forget_plan(struct store *st, const struct store_forget *f, store_forget_fn fn, void *ctx)
{
	struct plan_row *v = NULL;
	size_t n = 0;
	int r = plan_rows(st, f, &v, &n);

	for (size_t i = 0; r == 0 && i < n; i++)
		r = fn(ctx, &v[i].d);
	plan_free(v, n);
	return r < 0 ? r : (int)n;
}

/*
 * The current version of array doc id without the rows that hold what is
 * forgotten (free()): head, the kept elements, tail. The first kept element
 * takes the separator of the first element ("" or a pretty-printer's
 * indent), so that the result is the file the client would have written.
 */
static int doc_without(struct store *st, int64_t id, const struct store_forget *f, struct sb *out)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *doc = NULL, *rows = NULL;
	_cleanup_free_ char *first_pre = NULL;
	bool any = false;
	int r, rc;

	r = store_prepare_ints(st, "SELECT head, tail FROM docs WHERE id = ?1", STORE_INTS(id), &doc);
	if (r < 0)
		return r;
	if ((rc = sqlite3_step(doc)) != SQLITE_ROW)
		return store_fail(st, rc, "cannot read a conversation");
	if ((r = sb_adds(out, (const char *)sqlite3_column_text(doc, 0))) < 0)
		return r;
	r = store_prepare(st, "SELECT e.pre, e.json, " ROW_HITS " FROM elems e JOIN docs d ON d.id = e.doc_id "
			      "WHERE e.doc_id = ?3 AND e.rev_to IS NULL ORDER BY e.seq", &rows);
	if (r < 0)
		return r;
	bind_forget(rows, f);
	sqlite3_bind_int64(rows, 3, id);
	while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
		const char *pre = (const char *)sqlite3_column_text(rows, 0);

		if (!first_pre && !(first_pre = strdup(pre ? pre : "")))
			return -ENOMEM;
		if (sqlite3_column_int(rows, 2))
			continue; /* forgotten */
		if ((r = sb_adds(out, any && pre ? pre : first_pre)) < 0 ||
		    (r = sb_add(out, sqlite3_column_blob(rows, 1), (size_t)sqlite3_column_bytes(rows, 1))) < 0)
			return r;
		any = true;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read a conversation");
	return sb_adds(out, (const char *)sqlite3_column_text(doc, 1));
}

bool forget_mask(char *buf, size_t len, const char *text)
{
	size_t tl = text ? strlen(text) : 0;
	bool any = false;

	for (char *p = buf; tl && (p = memmem(p, len - (size_t)(p - buf), text, tl)); p += tl) {
		memset(p, '*', tl);
		any = true;
	}
	return any;
}

/* The current content of the doc at path, whole, into out. */
static int doc_read(struct store *st, const char *path, struct sb *out)
{
	struct store_snap *snap = NULL;
	char buf[65536];
	off_t off = 0;
	ssize_t n;
	int r = store_snap_open(st, path, &snap);

	while (r == 0 && (n = store_snap_read(st, snap, buf, sizeof(buf), off)) != 0) {
		if (n < 0)
			r = (int)n;
		else if ((r = sb_add(out, buf, (size_t)n)) == 0)
			off += n;
	}
	store_snap_free(snap);
	return r;
}

/*
 * Commits data with the text masked; where that is not valid JSON (the text
 * straddles a quote or an escape), -EINVAL and nothing changed.
 */
static int commit_masked(struct store *st, const struct store_forget *f, const char *path, struct sb *data,
			 const struct store_who *who)
{
	forget_mask(data->buf, data->len, f->match);
	return store_doc_commit(st, path, data->buf, data->len, who, "forget");
}

/* Step 1: what is current leaves through ordinary commits (and removals). */
static int forget_current(struct store *st, const struct store_forget *f, const struct plan_row *p,
			  const struct store_who *who)
{
	_cleanup_sb_ struct sb data = SB_INIT;
	int r;

	if (!p->present || (p->d.whole && !f->match))
		return 0; /* a forgotten task's docs go in step 2 */
	if (p->d.whole) {
		/* a whole file that holds it now: a new version with it masked, or the file goes */
		r = doc_read(st, p->d.path, &data);
		if (r == 0)
			r = commit_masked(st, f, p->d.path, &data, who);
		return r == -EINVAL ? store_doc_remove(st, p->d.path, who, "forget") : r;
	}
	if (p->format != DOC_ARRAY || (p->d.current == 0 && !p->d.head))
		return 0;
	r = doc_without(st, p->id, f, &data);
	if (r < 0)
		return r;
	if (p->d.head) {
		/* the file's own fields (a session's head): masked if it stays valid */
		_cleanup_sb_ struct sb copy = SB_INIT;

		if ((r = sb_add(&copy, data.buf, data.len)) < 0)
			return r;
		r = commit_masked(st, f, p->d.path, &copy, who);
		if (r != -EINVAL)
			return r;
		log_warn("'%s': masking the text leaves it no valid JSON; only its messages are forgotten", p->d.path);
	}
	return p->d.current ? store_doc_commit(st, p->d.path, data.buf, data.len, who, "forget") : 0;
}

/* Step 2, in one transaction: blank what older versions hold, delete what must go. */
static const char *const forget_sql[] = {
	/* older versions' rows (and, with a task, all of its rows) blanked at the same length */
	"UPDATE elems SET json = CASE WHEN len >= 18 THEN '{\"forgotten\":true}' || printf('%-*s', len - 18, '') "
	"  ELSE '{}' || printf('%-*s', len - 2, '') END, h = NULL, dg = NULL "
	"WHERE id IN (SELECT e.id FROM elems e JOIN docs d ON d.id = e.doc_id WHERE " ROW_HITS ")",
	"UPDATE elems SET h = convfs_hash(json) WHERE h IS NULL",
	/* versions of whole files */
	"DELETE FROM blobs WHERE id IN (SELECT b.id FROM blobs b JOIN docs d ON d.id = b.doc_id WHERE " BLOB_HITS ")",
	/* all of a forgotten task */
	"DELETE FROM elems WHERE ?1 IS NULL AND doc_id IN (SELECT id FROM docs WHERE task_id = ?2)",
	"DELETE FROM revisions WHERE ?1 IS NULL AND (doc_id IN (SELECT id FROM docs WHERE task_id = ?2) "
	"  OR path IN ('tasks/' || ?2, 'sessions/' || ?2))",
	"DELETE FROM docs WHERE ?1 IS NULL AND task_id = ?2",
	"DELETE FROM tasks WHERE ?1 IS NULL AND id = ?2",
	/* a removed whole file with no version left */
	"DELETE FROM docs AS d WHERE (?1 IS NOT NULL OR ?2 IS NOT NULL) AND d.format != 0 AND NOT d.present "
	"  AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.doc_id = d.id)",
	/* what was seen underneath keeps its row (an unchanged file is not taken in again), not a revision gone */
	"UPDATE underneath SET rev = NULL WHERE rev IS NOT NULL AND NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = rev)",
	/* counted: other daemons drop what they keep of docs' bytes (store/changes.c) */
	"INSERT INTO meta(key, value) VALUES ('forgets', 1) ON CONFLICT(key) DO UPDATE SET value = value + 1",
	/* what the sync knew of revisions and docs gone (store/sync_local.c) */
	"DELETE FROM sync_touch WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = sync_touch.rev)",
	"DELETE FROM sync_applied WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = sync_applied.rev)",
	"DELETE FROM sync_docs WHERE NOT EXISTS (SELECT 1 FROM docs d WHERE d.id = sync_docs.doc_id)",
};

/*
 * SQLite numbers a new row after the largest id there is: once the last
 * revisions are deleted, their numbers would come again, and a store that
 * syncs has pushed them already (meta sync_pushed). A row of kind "forget"
 * keeps the last number taken (the revision log's own record that a forget
 * was made there).
 */
static int keep_numbering(struct store *st, int64_t last)
{
	int r = store_run(st, "INSERT INTO revisions(id, time_ns, path, kind, doc_id) SELECT ?1, ?2, '', 'forget', 0 "
			      "WHERE (SELECT coalesce(max(id), 0) FROM revisions) < ?1", STORE_INTS(last, now_ns()),
			  "cannot keep the revision log's numbering");

	return r;
}

/* The current rows step 2 changes: they leave the search index first, while they hold their text. */
static int forget_index(struct store *st, const struct store_forget *f)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (!st->search)
		return 0;
	/* Pieces of rows gone, which the steps behind the mount had yet to take out: their text may be forgotten. */
	if ((r = search_stale_out(st)) < 0)
		return r;
	r = store_prepare(st, SEARCH_FORGET_PIECES_SQL(ROW_HITS), &stmt);
	if (r < 0)
		return r;
	bind_forget(stmt, f);
	if ((r = search_pieces_out(st, TAKE_PTR(stmt))) < 0)
		return r;
	r = store_prepare(st, SEARCH_FORGET_SQL(ROW_HITS), &stmt);
	if (r < 0)
		return r;
	bind_forget(stmt, f);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot take what is forgotten out of the search index");
}

static int forget_rows(struct store *st, const struct store_forget *f)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *last = NULL;
	int64_t last_rev;
	int r, rc;

	kept_drop(st); /* what was read of the rows blanked below */
	r = tx_begin(st);
	if (r < 0)
		return r;
	r = store_row_args(st, "SELECT coalesce(max(id), 0) FROM revisions", NULL, 0, NULL, 0,
			   "cannot read the revision log", &last);
	if (r < 0) {
		tx_rollback(st);
		return r;
	}
	last_rev = sqlite3_column_int64(last, 0);
	store_stmt_release(TAKE_PTR(last));
	r = forget_index(st, f);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(forget_sql); i++) {
		_cleanup_stmt_ sqlite3_stmt *stmt = NULL;

		r = store_prepare(st, forget_sql[i], &stmt);
		if (r < 0)
			break;
		if (sqlite3_bind_parameter_count(stmt) >= 1)
			bind_forget(stmt, f);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE) {
			r = store_fail(st, rc, "cannot forget");
			break;
		}
	}
	if (r == 0)
		r = search_forget_end(st);
	if (r == 0)
		r = keep_numbering(st, last_rev);
	if (r == 0)
		placement_moved(st);
	if (r == 0 && (r = tx_commit(st)) == 0)
		return 0;
	tx_rollback(st);
	return r;
}

/*
 * Step 3: no free page, no WAL frame keeps the old bytes. served: other
 * connections of the file are open (a mounted daemon's: a forget pulled
 * from another machine), which may read on in the WAL for a while: the last
 * checkpoint then may not empty it, which is said, and the next one does.
 */
static int forget_bytes(struct store *st, bool served)
{
	STORE_LOCK(st);
	int r;

	store_blob_drop(st);
	r = search_forget_pages(st);
	if (r == 0 && !served)
		r = store_exec(st, "PRAGMA wal_checkpoint(TRUNCATE)");
	if (r == 0)
		r = store_exec(st, "VACUUM");
	if (r == 0 && served && sqlite3_exec(st->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK)
		log_warn("forget: the store's write-ahead log keeps the forgotten bytes until its next checkpoint "
			 "(readers of the mount were using it)");
	else if (r == 0 && !served)
		r = store_exec(st, "PRAGMA wal_checkpoint(TRUNCATE)");
	return r;
}

static int forget_run(struct store *st, const struct store_forget *f, const struct store_who *who,
		      store_progress_fn progress, void *ctx, bool served);

int store_forget_run(struct store *st, const struct store_forget *f, const struct store_who *who,
		     store_progress_fn progress, void *ctx)
{
	return forget_run(st, f, who, progress, ctx, false);
}

int store_forget_synced(struct store *st, const struct store_forget *f, const struct store_who *who)
{
	return forget_run(st, f, who, NULL, NULL, true);
}

static int forget_run(struct store *st, const struct store_forget *f, const struct store_who *who,
		      store_progress_fn progress, void *ctx, bool served)
{
	struct plan_row *v = NULL;
	size_t n = 0;
	int r;

	if (st->readonly)
		return -EROFS;
	if (!f->match && !f->task)
		return -EINVAL;
	r = store_exec(st, "PRAGMA secure_delete = ON");
	if (r == 0)
		r = plan_rows(st, f, &v, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (progress)
			progress(ctx, (int64_t)i, (int64_t)n + 2);
		r = forget_current(st, f, &v[i], who);
		if (r == -ENOENT)
			r = 0; /* removed meanwhile */
	}
	plan_free(v, n);
	if (progress)
		progress(ctx, (int64_t)n, (int64_t)n + 2);
	if (r == 0)
		r = forget_rows(st, f);
	if (progress)
		progress(ctx, (int64_t)n + 1, (int64_t)n + 2);
	if (r == 0)
		r = forget_bytes(st, served);
	return r;
}
