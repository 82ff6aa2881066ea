/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.c: `convfs check`, the store's side: is the database sound, and do
 * its tables agree with each other?
 *
 * Each invariant is one query that returns the rows breaking it, already
 * worded, so the checks cost what SQLite's own scans cost (a few seconds a
 * gigabyte) and add no state. The invariants (docs/SCHEMA.md):
 *  - an array doc renders as head + (pre + json)* + tail: its current rows
 *    (rev_to NULL) are seq 0..nelems-1, each at the offset the ones before
 *    it give (off, and loff for JSON Lines), len is the bytes of json, and
 *    size and lsize are their sums; a current row's digest (dg) is that of
 *    its bytes, since a commit keeps a row by its digest alone;
 *  - a whole doc's last blob up to its revision is size bytes;
 *  - a row is valid over [rev_from, rev_to), both revisions that exist, not
 *    after its doc's revision;
 *  - every row names a doc that exists, every doc a task, every task a
 *    workspace, every revision recorded for the folder underneath exists;
 *  - the search index holds the current messages, and nothing else (and
 *    their words: search_check.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/search.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/util.h"

/* head and tail as bytes: length() of TEXT counts characters */
#define BYTES(x) "length(CAST(" x " AS BLOB))"

/* The current messages of conversation docs, which the search index holds (store/index.c). */
#define CURRENT_MESSAGE "e.rev_to IS NULL AND convfs_stream(d.path) IS NOT NULL"
/* The build's cursor (store/index.c): messages past it may be missing from the index yet. */
#define SEARCH_CURSOR "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'search_cursor'), -1)"

struct invariant {
	const char *what;
	const char *sql; /* rows of one column: the problem, worded */
};

static const struct invariant invariants[] = {
	{ "the current rows of array docs",
	  "SELECT printf('doc ''%s'': %d current rows, its row says %d', d.path, count(e.id), d.nelems) "
	  "FROM docs d LEFT JOIN elems e ON e.doc_id = d.id AND e.rev_to IS NULL "
	  "WHERE d.format = 0 AND d.present GROUP BY d.id HAVING count(e.id) != d.nelems "
	  "UNION ALL "
	  "SELECT printf('doc ''%s'': size %d, its rows and head and tail make %d', d.path, d.size, "
	  "  " BYTES("d.head") " + " BYTES("d.tail") " + coalesce(sum(" BYTES("e.pre") " + e.len), 0)) "
	  "FROM docs d LEFT JOIN elems e ON e.doc_id = d.id AND e.rev_to IS NULL "
	  "WHERE d.format = 0 AND d.present GROUP BY d.id "
	  "HAVING d.size != " BYTES("d.head") " + " BYTES("d.tail") " + coalesce(sum(" BYTES("e.pre") " + e.len), 0) "
	  "UNION ALL "
	  "SELECT printf('doc ''%s'': JSON Lines size %d, its rows make %d', d.path, d.lsize, coalesce(sum(e.len + 1), 0)) "
	  "FROM docs d LEFT JOIN elems e ON e.doc_id = d.id AND e.rev_to IS NULL "
	  "WHERE d.format = 0 AND d.present GROUP BY d.id HAVING d.lsize != coalesce(sum(e.len + 1), 0)" },
	{ "the offsets of array docs",
	  "SELECT printf('doc ''%s'': element %d at offset %d (line offset %s), expected %d (%d)', path, seq, off, "
	  "  coalesce(loff, 'none'), want, lwant) FROM ("
	  "  SELECT d.path, e.seq, e.off, e.loff, "
	  "    " BYTES("d.head") " + coalesce(sum(" BYTES("e.pre") " + e.len) OVER w, 0) AS want, "
	  "    coalesce(sum(e.len + 1) OVER w, 0) AS lwant, "
	  "    row_number() OVER (PARTITION BY e.doc_id ORDER BY e.seq) - 1 AS pos "
	  "  FROM elems e JOIN docs d ON d.id = e.doc_id "
	  "  WHERE e.rev_to IS NULL AND d.format = 0 AND d.present "
	  "  WINDOW w AS (PARTITION BY e.doc_id ORDER BY e.seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) "
	  "WHERE off != want OR loff IS NOT lwant OR seq != pos "
	  "UNION ALL "
	  "SELECT printf('doc ''%s'': element %d is %d bytes, its row says %d', d.path, e.seq, " BYTES("e.json") ", e.len) "
	  "FROM elems e JOIN docs d ON d.id = e.doc_id WHERE e.rev_to IS NULL AND " BYTES("e.json") " != e.len" },
	{ "the digests of current elements",
	  "SELECT printf('doc ''%s'': element %d has the digest of other bytes', d.path, e.seq) "
	  "FROM elems e JOIN docs d ON d.id = e.doc_id "
	  "WHERE e.rev_to IS NULL AND e.dg IS NOT NULL AND e.dg != convfs_digest(e.json)" },
	{ "the content of whole docs",
	  "SELECT printf('doc ''%s'': size %d, its last version is %s', d.path, d.size, "
	  "  coalesce((SELECT length(b.data) || ' bytes' FROM blobs b WHERE b.doc_id = d.id AND b.rev <= d.rev "
	  "            ORDER BY b.rev DESC LIMIT 1), 'missing')) "
	  "FROM docs d WHERE d.format != 0 AND d.present AND d.size != coalesce((SELECT length(b.data) FROM blobs b "
	  "  WHERE b.doc_id = d.id AND b.rev <= d.rev ORDER BY b.rev DESC LIMIT 1), 0)" },
	{ "the revisions rows name",
	  "SELECT printf('doc ''%s'': element %d valid from revision %d to %s', d.path, e.seq, e.rev_from, "
	  "  coalesce(e.rev_to, 'now')) FROM elems e JOIN docs d ON d.id = e.doc_id "
	  "WHERE e.rev_to <= e.rev_from OR e.rev_from > d.rev OR e.rev_to > d.rev "
	  "UNION ALL "
	  "SELECT printf('doc ''%s'': at revision %d, which the log does not have', d.path, d.rev) FROM docs d "
	  "WHERE d.rev > 0 AND NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = d.rev) "
	  "UNION ALL "
	  "SELECT printf('doc ''%s'': a version at revision %d, which the log does not have', d.path, b.rev) "
	  "FROM blobs b JOIN docs d ON d.id = b.doc_id WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = b.rev) "
	  "UNION ALL "
	  "SELECT printf('underneath: ''%s'' is recorded at revision %d, which the log does not have', u.path, u.rev) "
	  "FROM underneath u WHERE u.rev IS NOT NULL AND NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = u.rev)" },
	{ "what rows name",
	  "SELECT printf('%d elements of doc %d, which does not exist', count(*), e.doc_id) FROM elems e "
	  "WHERE NOT EXISTS (SELECT 1 FROM docs d WHERE d.id = e.doc_id) GROUP BY e.doc_id "
	  "UNION ALL "
	  "SELECT printf('%d versions of doc %d, which does not exist', count(*), b.doc_id) FROM blobs b "
	  "WHERE NOT EXISTS (SELECT 1 FROM docs d WHERE d.id = b.doc_id) GROUP BY b.doc_id "
	  "UNION ALL "
	  "SELECT printf('doc ''%s'': of task ''%s'', which the tasks table does not have', d.path, d.task_id) "
	  "FROM docs d WHERE d.task_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = d.task_id) "
	  "UNION ALL "
	  "SELECT printf('task ''%s'': in workspace %d, which the workspaces table does not have', t.id, t.workspace_id) "
	  "FROM tasks t WHERE t.workspace_id IS NOT NULL "
	  "AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = t.workspace_id)" },
};

/* The search index's rows (a store from before it has none: not checked there). */
static const struct invariant search_invariants[] = {
	{ "the messages of the search index",
	  "SELECT printf('search: doc ''%s'': %d current messages are not in the search index (the first: element %d)', "
	  "  d.path, count(*), min(e.seq)) "
	  "FROM elems e JOIN docs d ON d.id = e.doc_id "
	  "WHERE " CURRENT_MESSAGE " AND (" SEARCH_CURSOR " < 0 OR e.id <= " SEARCH_CURSOR ") "
	  "  AND NOT EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id) GROUP BY d.id" },
	{ "the pieces of the search index",
	  "SELECT printf('search: doc ''%s'': element %d has %d of the %d more pieces of its text in the search index', "
	  "  d.path, e.seq, n, " SEARCH_PIECES_HELD("e") ") "
	  "FROM (SELECT e.*, (SELECT count(*) FROM search_docsize z WHERE z.id BETWEEN -((e.id << 16) | 65535) "
	  "  AND -((e.id << 16) | 1)) AS n FROM elems e WHERE e.len > 1048576) e JOIN docs d ON d.id = e.doc_id "
	  "WHERE " CURRENT_MESSAGE " AND (" SEARCH_CURSOR " < 0 OR e.id <= " SEARCH_CURSOR ") "
	  "  AND EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id) AND n != " SEARCH_PIECES_HELD("e") },
	{ "the rows of the search index",
	  "SELECT CASE WHEN d.id IS NULL THEN printf('search: the search index holds row %d, which no message has', z.id) "
	  "  WHEN " CURRENT_MESSAGE " THEN printf('search: doc ''%s'': the search index holds piece %d of element %d, "
	  "which has %d', d.path, -z.id & 65535, e.seq, 1 + " SEARCH_PIECES_HELD("e") ") "
	  "  ELSE printf('search: doc ''%s'': the search index holds element %d of revision %d, which is not "
	  "a current message', d.path, e.seq, e.rev_from) END "
	  "FROM search_docsize z LEFT JOIN elems e ON e.id = " SEARCH_ELEM_OF("z.id") " LEFT JOIN docs d ON d.id = e.doc_id "
	  "WHERE (d.id IS NULL OR NOT (" CURRENT_MESSAGE ") "
	  "  OR (z.id < 0 AND (-z.id & 65535) NOT BETWEEN 1 AND " SEARCH_PIECES_HELD("e") ")) "
	  /* the pieces of a row gone that wait to leave the index */
	  "  AND NOT (z.id < 0 AND e.id IS NULL AND EXISTS (SELECT 1 FROM search_stale s WHERE s.id = -z.id >> 16 "
	  "    AND (-z.id & 65535) >= s.next AND (-z.id & 65535) < s.upto))" },
	{ "the pieces the search index has yet to take in and out",
	  "SELECT printf('search: the pieces of element %d wait to be indexed from piece %d on, but it %s', l.id, l.next, "
	  "  CASE WHEN d.id IS NULL THEN 'is no row' WHEN NOT (" CURRENT_MESSAGE ") THEN 'is no current message' "
	  "  ELSE printf('has %d', 1 + " SEARCH_MORE_PIECES("e") ") END) "
	  "FROM search_later l LEFT JOIN elems e ON e.id = l.id LEFT JOIN docs d ON d.id = e.doc_id "
	  "WHERE d.id IS NULL OR NOT (" CURRENT_MESSAGE ") OR l.next < 2 OR l.next > " SEARCH_MORE_PIECES("e") " "
	  "UNION ALL "
	  "SELECT printf('search: pieces %d to %d of element %d wait to leave the index, but %s', s.next, s.upto - 1, s.id, "
	  "  CASE WHEN s.next >= s.upto THEN 'that is none' WHEN EXISTS (SELECT 1 FROM elems e WHERE e.id = s.id) "
	  "  THEN 'the element is still there' ELSE printf('their text''s row %d is gone', s.text_id) END) "
	  "FROM search_stale s WHERE s.next >= s.upto OR EXISTS (SELECT 1 FROM elems e WHERE e.id = s.id) "
	  "  OR NOT EXISTS (SELECT 1 FROM elems e WHERE e.id = s.text_id)" },
};

/* Runs sql (one text column) and reports each row; returns the number reported or -errno. */
static int report_rows(struct store *st, const char *sql, const char *prefix, store_problem_fn fn, void *ctx)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc, n = 0;

	r = store_prepare(st, sql, &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		char line[1024];
		const char *text = (const char *)sqlite3_column_text(stmt, 0);

		snprintf(line, sizeof(line), "%s%s", prefix, text ? text : "(null)");
		n++;
		if ((r = fn(ctx, line)) < 0)
			return r;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot check the store");
	return n;
}

/*
 * Runs one check (sql NULL: the search index's words); a damaged file
 * (SQLITE_CORRUPT, -EIO) that stops it is one more problem, and the other
 * checks go on. Returns problems found or -errno.
 */
static int check_step(struct store *st, const char *what, const char *sql, const char *prefix, store_problem_fn fn,
		      void *ctx)
{
	char line[256];
	int r = sql ? report_rows(st, sql, prefix, fn, ctx) : search_check_words(st, fn, ctx);

	if (r != -EIO)
		return r;
	snprintf(line, sizeof(line), "%scannot check %s: %s", prefix, what, strerror(-r));
	r = fn(ctx, line);
	return r < 0 ? r : 1;
}

/* ---- the check at every mount: bounded, whatever the store's size ---------------- */

static int problemf(store_problem_fn fn, void *ctx, const char *fmt, ...) _printf_(3, 4);
static int problemf(store_problem_fn fn, void *ctx, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r = fn(ctx, line);
	return r < 0 ? r : 1;
}

/* Prepares sql (not cached: it is made for one call) on db. 0, or the SQLite result code. */
static int prepare_once(sqlite3 *db, const char *sql, sqlite3_stmt **ret)
{
	return sqlite3_prepare_v2(db, sql, -1, ret, NULL);
}

/* The columns of table in db, "a, b, c", into buf; "" for a table it does not have. */
static void columns_of(sqlite3 *db, const char *table, char *buf, size_t size)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;

	buf[0] = '\0';
	if (prepare_once(db, "SELECT group_concat(name, ', ') FROM (SELECT name FROM pragma_table_info(?1) ORDER BY cid)",
			 &stmt) != SQLITE_OK)
		return;
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(stmt, 0));
}

static const char *article(const char *noun)
{
	return strchr("aeiou", noun[0]) ? "an" : "a";
}

/*
 * One table or index the schema has, looked for in st: missing, of another
 * kind, or a table with other columns is one problem. Returns 0 or 1, or
 * -errno.
 */
static int check_object(struct store *st, sqlite3 *fresh, const char *type, const char *name, const char *table,
			store_problem_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	char want[512], got[512];
	int rc;

	rc = prepare_once(st->db, "SELECT type, tbl_name FROM sqlite_master WHERE name = ?1", &stmt);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot read the schema");
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return strcmp(type, "table") == 0 ? problemf(fn, ctx, "table '%s' is missing", name)
						  : problemf(fn, ctx, "index '%s' of table '%s' is missing", name, table);
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read the schema");
	if (strcmp((const char *)sqlite3_column_text(stmt, 0), type) != 0 ||
	    strcmp((const char *)sqlite3_column_text(stmt, 1), table) != 0)
		return problemf(fn, ctx, "'%s' is %s %s of '%s', not %s %s of '%s'", name,
				article((const char *)sqlite3_column_text(stmt, 0)),
				(const char *)sqlite3_column_text(stmt, 0), (const char *)sqlite3_column_text(stmt, 1),
				article(type), type, table);
	if (strcmp(type, "table") != 0)
		return 0;
	columns_of(fresh, name, want, sizeof(want));
	columns_of(st->db, name, got, sizeof(got));
	if (strcmp(want, got) != 0)
		return problemf(fn, ctx, "table '%s' has the columns (%s), not (%s)", name, got, want);
	return 0;
}

static int pragma_user_version(struct store *st, int *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int rc = prepare_once(st->db, "PRAGMA user_version", &stmt);

	if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		*ret = sqlite3_column_int(stmt, 0);
		return 0;
	}
	return store_fail(st, rc, "cannot read the schema version");
}

/*
 * The schema: every table, index and column of the current schema version,
 * as a store made afresh in memory has them.
 * Returns the problems reported, or -errno.
 */
static int check_schema(struct store *st, store_problem_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct store *fresh = NULL;
	int version = 0, rc, r, n = 0;

	r = pragma_user_version(st, &version);
	/*
	 * A newer schema is the schema version's problem; an older one (opened
	 * as it is by convfs check) is migrated by the next mount, which then
	 * compares it.
	 */
	if (r < 0 || version != store_schema_version())
		return r;
	r = store_open(":memory:", 0, &fresh);
	if (r == 0) {
		rc = prepare_once(fresh->db, "SELECT type, name, tbl_name FROM sqlite_master "
					     "WHERE type IN ('table', 'index') ORDER BY type DESC, name", &stmt);
		r = rc == SQLITE_OK ? 0 : store_fail(fresh, rc, "cannot read the schema of a new store");
	}
	while (r == 0 && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		r = check_object(st, fresh->db, (const char *)sqlite3_column_text(stmt, 0),
				 (const char *)sqlite3_column_text(stmt, 1), (const char *)sqlite3_column_text(stmt, 2),
				 fn, ctx);
		if (r > 0)
			n += r;
		r = r > 0 ? 0 : r;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(fresh, rc, "cannot read the schema of a new store");
	store_stmt_release(TAKE_PTR(stmt));
	store_free(fresh);
	return r < 0 ? r : n;
}

/*
 * Runs sql, which reads from the root of the b-tree of what (a table or an
 * index, at page) down to one leaf, and reports a failure to read as the
 * damage of what. A statement SQLite cannot make for it (an index it will
 * not scan so) is no problem. Returns 0 or 1, or -errno.
 */
static int read_root(struct store *st, const char *sql, const char *type, const char *what, int page,
		     store_problem_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int rc;

	if (!sql)
		return -ENOMEM;
	rc = prepare_once(st->db, sql, &stmt);
	if (rc != SQLITE_OK)
		return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_IOERR
			       ? problemf(fn, ctx, "%s '%s' (page %d): %s", type, what, page, sqlite3_errmsg(st->db))
			       : 0;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return 0;
	return problemf(fn, ctx, "%s '%s' (page %d) cannot be read: %s", type, what, page, sqlite3_errmsg(st->db));
}

/* What read_root() runs for one b-tree: its first row and (a rowid table) its last. */
static int check_root(struct store *st, const char *type, const char *name, const char *table, int page,
		      const char *sql, store_problem_fn fn, void *ctx)
{
	const char *where = sql ? strstr(sql, " WHERE ") : NULL;
	char *q;
	int r;

	if (strcmp(type, "table") == 0) {
		q = sqlite3_mprintf("SELECT 1 FROM \"%w\" LIMIT 1", name);
		r = read_root(st, q, type, name, page, fn, ctx);
		sqlite3_free(q);
		if (r != 0 || (sql && strstr(sql, "WITHOUT ROWID")))
			return r;
		q = sqlite3_mprintf("SELECT max(rowid) FROM \"%w\"", name);
	} else {
		/* A partial index is scanned only for what implies its WHERE. */
		q = sqlite3_mprintf("SELECT 1 FROM \"%w\" INDEXED BY \"%w\" %s LIMIT 1", table, name,
				    where ? where : "");
	}
	r = read_root(st, q, type, name, page, fn, ctx);
	sqlite3_free(q);
	return r;
}

/* The root page of every table and index, with the path to its first (and last) leaf. */
static int check_roots(struct store *st, store_problem_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int rc, r = 0, n = 0;

	rc = prepare_once(st->db, "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master "
				  "WHERE type IN ('table', 'index') AND rootpage > 0 ORDER BY rootpage", &stmt);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot read the schema");
	/* SQLite checks each page it loads more closely meanwhile. */
	(void)store_exec(st, "PRAGMA cell_size_check = ON");
	while (r >= 0 && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		r = check_root(st, (const char *)sqlite3_column_text(stmt, 0), (const char *)sqlite3_column_text(stmt, 1),
			       (const char *)sqlite3_column_text(stmt, 2), sqlite3_column_int(stmt, 3),
			       (const char *)sqlite3_column_text(stmt, 4), fn, ctx);
		n += r > 0 ? r : 0;
	}
	(void)store_exec(st, "PRAGMA cell_size_check = OFF");
	if (r >= 0 && rc != SQLITE_DONE)
		r = problemf(fn, ctx, "the schema cannot be read whole: %s", sqlite3_errmsg(st->db));
	return r < 0 ? r : n + r;
}

int store_check_mount(struct store *st, store_problem_fn fn, void *ctx)
{
	STORE_LOCK(st);
	int r = check_schema(st, fn, ctx), n;

	if (r < 0)
		return r;
	n = r;
	r = check_roots(st, fn, ctx);
	if (r < 0)
		return r;
	n += r;
	/* Nothing else found: the index's state that could not be read at open is the damage. */
	if (n == 0 && st->search_load_err < 0)
		return problemf(fn, ctx, "the search index's state cannot be read: %s", strerror(-st->search_load_err));
	return n;
}

/* check_schema() for `convfs check`: each line "schema: ...". */
struct prefixed {
	store_problem_fn fn;
	void *ctx;
};

static int schema_line(void *ctx, const char *line)
{
	const struct prefixed *p = ctx;
	char buf[1100];

	snprintf(buf, sizeof(buf), "schema: %s", line);
	return p->fn(p->ctx, buf);
}

static int check_schema_step(struct store *st, store_problem_fn fn, void *ctx)
{
	STORE_LOCK(st);
	struct prefixed p = { fn, ctx };

	return check_schema(st, schema_line, &p);
}

int store_check(struct store *st, store_problem_fn fn, store_progress_fn progress, void *ctx)
{
	int64_t nstore = (int64_t)ARRAY_SIZE(invariants), total = nstore + (int64_t)ARRAY_SIZE(search_invariants) + 4;
	char schema[256];
	int r, n = 0;

	{
		STORE_LOCK(st);
		(void)store_digest_key(st); /* for convfs_digest(); without it, digests go unchecked */
	}
	snprintf(schema, sizeof(schema),
		 "SELECT printf('schema version %%d, newer than this convfs writes (%d)', user_version) "
		 "FROM pragma_user_version WHERE user_version > %d",
		 store_schema_version(), store_schema_version());
	for (int64_t i = 0; i < total; i++) {
		if (progress)
			progress(ctx, i, total);
		if (i == 0) /* SQLite's own: pages, indexes, constraints; "ok" is the one row of a sound file */
			r = check_step(st, "the database file",
				       "SELECT integrity_check FROM pragma_integrity_check WHERE integrity_check != 'ok'",
				       "sqlite: ", fn, ctx);
		else if (i == 1)
			r = check_step(st, "the schema version", schema, "schema: ", fn, ctx);
		else if (i == 2)
			r = check_schema_step(st, fn, ctx);
		else if (i < 3 + nstore)
			r = check_step(st, invariants[i - 3].what, invariants[i - 3].sql, "store: ", fn, ctx);
		else if (!st->search)
			r = 0;
		else if (i < total - 1)
			r = check_step(st, search_invariants[i - 3 - nstore].what, search_invariants[i - 3 - nstore].sql,
				       "", fn, ctx);
		else
			r = check_step(st, "the words of the search index", NULL, "search: ", fn, ctx);
		if (r < 0)
			return r;
		n += r;
	}
	if (progress)
		progress(ctx, total, total);
	return n;
}
