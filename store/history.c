/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * history.c: the store as the tools that look inside it see it
 * (store_history.h): a summary, the versions of one doc, and a restore.
 *
 * Everything here reads the revision log, `revisions`, which already holds
 * who made each commit (pid and name), when, of what kind, and the merge's
 * counts in `detail`. A doc's versions carry their numbers in the numbering
 * it shares with the other files of its task (STORE_NUMBERED_VERSIONS, the
 * one versions/ uses): the caller names those docs, the store knows no task.
 * They are found by index (`revisions_doc`, schema 6), so listing a file
 * with 10,000 versions does not read the log of the whole store. The tools
 * open the store read-only while the daemon serves it (WAL: a reader never
 * blocks the writer); a restore is made by the daemon that serves the
 * store, through its ordinary commit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/store_history.h"
#include "store/util.h"

static char *dup_or_null(sqlite3_stmt *stmt, int col)
{
	return sqlite3_column_type(stmt, col) == SQLITE_NULL ? NULL : dup_text(stmt, col);
}

int store_summary_get(struct store *st, struct store_summary *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *counts = NULL, *last = NULL, *ver = NULL;
	struct store_summary s = { 0 };
	int r, rc;

	r = store_prepare(st, "SELECT "
			      "(SELECT count(*) FROM tasks WHERE id NOT GLOB '*[^0-9]*' AND trashed_ns IS NULL), "
			      "(SELECT count(*) FROM tasks WHERE id GLOB '*[^0-9]*' AND trashed_ns IS NULL), "
			      "(SELECT count(*) FROM tasks WHERE trashed_ns IS NOT NULL), "
			      "(SELECT count(*) FROM docs WHERE present), "
			      "(SELECT count(*) FROM revisions)", &counts);
	if (r < 0)
		return r;
	rc = sqlite3_step(counts);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot count what the store holds");
	s.tasks = sqlite3_column_int64(counts, 0);
	s.sessions = sqlite3_column_int64(counts, 1);
	s.trashed = sqlite3_column_int64(counts, 2);
	s.docs = sqlite3_column_int64(counts, 3);
	s.revisions = sqlite3_column_int64(counts, 4);
	r = store_prepare(st, "PRAGMA user_version", &ver);
	if (r < 0)
		return r;
	rc = sqlite3_step(ver);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read the schema version");
	s.schema = sqlite3_column_int(ver, 0);
	r = store_prepare(st, "SELECT id, time_ns, pid, comm, path, kind FROM revisions ORDER BY id DESC LIMIT 1", &last);
	if (r < 0)
		return r;
	rc = sqlite3_step(last);
	if (rc == SQLITE_ROW) {
		s.last_rev = sqlite3_column_int64(last, 0);
		s.last_time_ns = sqlite3_column_int64(last, 1);
		s.last_pid = (pid_t)sqlite3_column_int64(last, 2);
		s.last_comm = dup_or_null(last, 3);
		s.last_path = dup_text(last, 4);
		s.last_kind = dup_text(last, 5);
		if (!s.last_path || !s.last_kind || (sqlite3_column_type(last, 3) != SQLITE_NULL && !s.last_comm)) {
			store_summary_release(&s);
			return -ENOMEM;
		}
	} else if (rc != SQLITE_DONE) {
		return store_fail(st, rc, "cannot read the last commit");
	}
	*ret = s;
	return 0;
}

void store_summary_release(struct store_summary *s)
{
	if (!s)
		return;
	free(s->last_path);
	free(s->last_kind);
	free(s->last_comm);
	s->last_path = s->last_kind = s->last_comm = NULL;
}

/* A version as read from the log: its strings owned, until the callbacks have run. */
struct version_row {
	struct store_version v;
	char *comm, *kind, *with_comm;
};

static void version_rows_free(struct version_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].comm);
		free(v[i].kind);
		free(v[i].with_comm);
	}
	free(v);
}

static int64_t int_or(sqlite3_stmt *stmt, int col, int64_t none)
{
	return sqlite3_column_type(stmt, col) == SQLITE_NULL ? none : sqlite3_column_int64(stmt, col);
}

/*
 * The size of a version: what the commit recorded in its detail (array docs;
 * appends since schema 6), else its blob's length (whole docs); -1 for an
 * append recorded before sizes were. A merge's counts, for a merge only (a
 * commit that went through the merge and stored what was written has them
 * too, and is a plain write).
 */
#define VERSION_COLUMNS \
	"v.id, v.time_ns, v.pid, v.comm, v.kind, " \
	"coalesce(CASE WHEN json_valid(v.detail) THEN json_extract(v.detail, '$.size') END, " \
	"         (SELECT length(b.data) FROM blobs b WHERE b.doc_id = v.doc_id AND b.rev = v.id)), " \
	"CASE WHEN json_valid(v.detail) THEN json_extract(v.detail, '$.restored') END, " \
	"CASE WHEN v.kind = 'merge' AND json_valid(v.detail) THEN json_extract(v.detail, '$.from_writer') END, " \
	"CASE WHEN v.kind = 'merge' AND json_valid(v.detail) THEN json_extract(v.detail, '$.kept_stored') END, " \
	"CASE WHEN v.kind = 'merge' AND json_valid(v.detail) THEN json_extract(v.detail, '$.others_kept') END, " \
	"CASE WHEN v.kind = 'merge' AND json_valid(v.detail) THEN json_extract(v.detail, '$.removed') END, " \
	"h.id, h.pid, h.comm, hv.n"

int store_bind_version_docs(sqlite3_stmt *stmt, const char *const *paths, size_t npaths)
{
	if (npaths > STORE_VERSION_DOCS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < npaths; i++)
		sqlite3_bind_text(stmt, (int)i + 1, paths[i], -1, SQLITE_STATIC);
	return 0;
}

/*
 * The doc at path, one of paths[0..npaths) that share its numbering (a doc
 * outside them would have no number); -ENOENT if the store never had it.
 */
static int numbered_doc(struct store *st, const char *path, const char *const *paths, size_t npaths,
			struct doc_row *ret)
{
	size_t i;

	for (i = 0; i < npaths && strcmp(paths[i], path) != 0; i++)
		;
	if (i == npaths)
		return -EINVAL;
	return doc_lookup(st, path, ret);
}

int store_doc_versions(struct store *st, const char *path, const char *const *paths, size_t npaths,
		       store_version_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct version_row *v = NULL;
	struct doc_row d = { 0 };
	size_t n = 0, alloc = 0;
	int r, rc;

	store_lock(st);
	r = numbered_doc(st, path, paths, npaths, &d);
	doc_row_release(&d);
	if (r == 0)
		r = store_prepare(st,
			"WITH " STORE_NUMBERED_VERSIONS " "
			"SELECT v.n, " VERSION_COLUMNS " FROM numbered v "
			"LEFT JOIN revisions h ON v.kind = 'merge' AND json_valid(v.detail) "
			"  AND h.id = json_extract(v.detail, '$.head') "
			"LEFT JOIN numbered hv ON hv.id = h.id "
			"WHERE v.doc_id = ?5 ORDER BY v.id DESC", &stmt);
	if (r == 0)
		r = store_bind_version_docs(stmt, paths, npaths);
	if (r < 0) {
		store_unlock(st);
		return r;
	}
	sqlite3_bind_int64(stmt, 5, d.id);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct version_row *row;

		if ((r = ARRAY_GROW(v, n, alloc, 64)) < 0)
			break;
		row = &v[n];
		*row = (struct version_row){ 0 };
		row->comm = dup_or_null(stmt, 4);
		row->kind = dup_text(stmt, 5);
		row->with_comm = dup_or_null(stmt, 14);
		n++;
		if (!row->kind || (!row->comm && sqlite3_column_type(stmt, 4) != SQLITE_NULL) ||
		    (!row->with_comm && sqlite3_column_type(stmt, 14) != SQLITE_NULL)) {
			r = -ENOMEM;
			break;
		}
		row->v = (struct store_version){
			.number = sqlite3_column_int64(stmt, 0),
			.rev = sqlite3_column_int64(stmt, 1),
			.time_ns = sqlite3_column_int64(stmt, 2),
			.pid = (pid_t)int_or(stmt, 3, 0),
			.size = int_or(stmt, 6, -1),
			.restored = int_or(stmt, 7, 0),
			.from_writer = int_or(stmt, 8, -1),
			.kept_stored = int_or(stmt, 9, -1),
			.others_kept = int_or(stmt, 10, -1),
			.removed = int_or(stmt, 11, -1),
			.with_rev = int_or(stmt, 12, 0),
			.with_pid = (pid_t)int_or(stmt, 13, 0),
			.with_number = int_or(stmt, 15, 0),
		};
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot read the revision log");
	store_stmt_release(TAKE_PTR(stmt));
	store_unlock(st);
	/* The callbacks run without the lock: they may call the store. */
	for (size_t i = 0; r == 0 && i < n; i++) {
		v[i].v.comm = v[i].comm;
		v[i].v.kind = v[i].kind;
		v[i].v.with_comm = v[i].with_comm;
		r = fn(ctx, &v[i].v);
	}
	version_rows_free(v, n);
	return r;
}

/*
 * The revision of the doc's version that version number of the numbering
 * left live: the doc's last version numbered number or less. -ENOENT if the
 * numbering has no such number, or the doc no version yet by then.
 */
static int version_rev(struct store *st, const char *const *paths, size_t npaths, int64_t doc_id, int64_t number,
		       int64_t *ret_rev)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "WITH " STORE_NUMBERED_VERSIONS " "
			      "SELECT max(id) FROM numbered WHERE doc_id = ?5 AND n <= ?6 "
			      "AND ?6 <= (SELECT max(n) FROM numbered)", &stmt);
	if (r == 0)
		r = store_bind_version_docs(stmt, paths, npaths);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 5, doc_id);
	sqlite3_bind_int64(stmt, 6, number);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot find a version");
	if (sqlite3_column_type(stmt, 0) == SQLITE_NULL)
		return -ENOENT;
	*ret_rev = sqlite3_column_int64(stmt, 0);
	return 0;
}

/*
 * The bytes of doc d as revision rev left it, into out: its blob (a whole
 * doc, or a file kept as found), else its elements then current between the
 * doc's head and tail as they are now.
 */
static int version_render(struct store *st, const struct doc_row *d, int64_t rev, struct sb *out)
{
	_cleanup_stmt_ sqlite3_stmt *blob = NULL, *elems = NULL;
	int r, rc;

	r = store_prepare(st, "SELECT data FROM blobs WHERE doc_id = ?1 AND rev = ?2", &blob);
	if (r < 0)
		return r;
	sqlite3_bind_int64(blob, 1, d->id);
	sqlite3_bind_int64(blob, 2, rev);
	rc = sqlite3_step(blob);
	if (rc == SQLITE_ROW)
		return sb_add(out, sqlite3_column_blob(blob, 0), (size_t)sqlite3_column_bytes(blob, 0));
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read a file version");
	if (d->format != DOC_ARRAY)
		return 0; /* a whole doc made empty (created): nothing */
	r = store_prepare(st, "SELECT pre, json FROM elems "
			      "WHERE doc_id = ?1 AND rev_from <= ?2 AND (rev_to IS NULL OR rev_to > ?2) ORDER BY off",
			  &elems);
	if (r < 0)
		return r;
	sqlite3_bind_int64(elems, 1, d->id);
	sqlite3_bind_int64(elems, 2, rev);
	if ((r = sb_adds(out, d->head)) < 0)
		return r;
	while ((rc = sqlite3_step(elems)) == SQLITE_ROW)
		if ((r = sb_add(out, sqlite3_column_blob(elems, 0), (size_t)sqlite3_column_bytes(elems, 0))) < 0 ||
		    (r = sb_add(out, sqlite3_column_blob(elems, 1), (size_t)sqlite3_column_bytes(elems, 1))) < 0)
			return r;
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read elements");
	return sb_adds(out, d->tail);
}

/* Records in the revision log which version a restore brought back. */
static int note_restored(struct store *st, int64_t rev, int64_t number)
{
	STORE_LOCK(st);

	return store_run(st, "UPDATE revisions SET detail = json_set(coalesce(detail, '{}'), '$.restored', ?2) "
			     "WHERE id = ?1", STORE_INTS(rev, number), "cannot add to the revision log");
}

/* The last revision of the log, 0 if none. */
static int last_rev(struct store *st, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "SELECT coalesce(max(id), 0) FROM revisions", &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read the revision log");
	*ret = sqlite3_column_int64(stmt, 0);
	return 0;
}

/*
 * The revision a restore by who made of doc doc_id after revision after,
 * or 0 if it made none (the version was the live one). Only a restore makes
 * kind "restore" of a doc, and no two running processes share a pid.
 */
static int restore_made(struct store *st, int64_t doc_id, int64_t after, const struct store_who *who, int64_t *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, "SELECT id FROM revisions WHERE doc_id = ?1 AND id > ?2 AND kind = 'restore' "
			      "AND pid IS ?3 ORDER BY id LIMIT 1", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, doc_id);
	sqlite3_bind_int64(stmt, 2, after);
	if (who && who->pid > 0)
		sqlite3_bind_int64(stmt, 3, who->pid);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read the revision log");
	*ret = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
	return 0;
}

int store_doc_restore(struct store *st, const char *path, const char *const *paths, size_t npaths, int64_t number,
		      const struct store_who *who, int64_t *ret_rev)
{
	_cleanup_sb_ struct sb data = SB_INIT;
	struct doc_row d = { 0 };
	int64_t rev = 0, before = 0, made = 0, doc_id;
	int r;

	if (st->readonly)
		return -EROFS;
	{
		STORE_LOCK(st);

		r = numbered_doc(st, path, paths, npaths, &d);
		if (r == 0)
			r = version_rev(st, paths, npaths, d.id, number, &rev);
		if (r == 0)
			r = version_render(st, &d, rev, &data);
		if (r == 0)
			r = last_rev(st, &before);
		doc_id = d.id;
		doc_row_release(&d);
		if (r < 0)
			return r;
	}
	/*
	 * Committed as written, not merged: that version is the live one,
	 * whatever others committed since it. A commit between the render and
	 * this one is simply older than the restore.
	 */
	r = store_doc_commit(st, path, sb_str(&data), data.len, who, "restore");
	if (r < 0)
		return r;
	if ((r = restore_made(st, doc_id, before, who, &made)) < 0)
		return r;
	if (made == 0)
		return -EALREADY;
	r = note_restored(st, made, number);
	if (r == 0 && ret_rev)
		*ret_rev = made;
	return r;
}
