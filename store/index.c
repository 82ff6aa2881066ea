/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * index.c: the search index, kept in step with the rows of elems.
 *
 * The index is an FTS5 table, `search`, with external content: it holds no
 * copy of the text, only the inverted index (search_data, search_idx) and
 * the length of each message (search_docsize). Its content is the view
 * search_text (id, body): each row of elems and its text, convfs_text()
 * of its bytes (search_text.c), computed when FTS5 asks for it (to delete
 * a row from the index, to make a snippet). An indexed row's FTS5 rowid is
 * its elems.id.
 *
 * Invariant: the index holds exactly the current rows (rev_to NULL) of the
 * conversation docs (layout.c's stream), each with the text its bytes give,
 * but while a build is under way (below), when the rows past its cursor
 * may be missing. Rows only change in ways that keep this easy: a row is
 * made current when it is inserted (or copied) and stops being current
 * when it is closed (rev_to set) or deleted, and its bytes never change
 * while it is current but under `convfs forget`. So the hooks are:
 *   - search_row_added(), after a current row is inserted (rows.c, merged.c,
 *     task.c): noted, and indexed with every other row the transaction
 *     made when it ends (search_flush(), called by tx_commit()), in one
 *     statement: FTS5 writes what it was given to its tables at each
 *     statement's savepoint, so a statement a row would write a segment a
 *     row (a save of 2,000 new messages took seconds);
 *   - search_rows_closing(), before elems_close() closes rows (doc.c):
 *     deleted from the index, with the text they still hold (FTS5 needs
 *     it: 3.40 has no contentless_delete), if the index holds them
 *     (search_docsize says: a row made in the same transaction is not
 *     in it yet, and search_flush() takes only rows still current);
 *   - SEARCH_FORGET_SQL() and search_forget_end() around what `convfs
 *     forget` blanks and deletes.
 * Each runs in the transaction of the change, so a commit and its index
 * are one: a daemon killed mid-commit leaves both as they were.
 *
 * The build. A store from before the index (the migration to schema 15),
 * or a new one, has every row to take in: meta 'search_cursor' records how
 * far store_search_build() got, in steps of one transaction each, so that
 * a build cut short goes on where it stopped. Rows inserted meanwhile are
 * indexed by their commit, with one exception that makes a store's first
 * take-in (all of a history, minutes) cost no more than it did: a commit
 * inside a batch (the take-in's) leaves its rows past the cursor to the
 * build. The daemon runs the build behind the mount (fs/indexer.c); `convfs
 * search` says while it is under way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/layout.h"
#include "store/search.h"
#include "store/src.h"
#include "store/store_search.h"

/* The view search_text hands a row's bytes to convfs_text() up to 1048576 (schema.c): no row read whole past that. */
_Static_assert(SEARCH_ELEM_BYTES == ELEM_INLINE && ELEM_INLINE == 1048576, "the view search_text's bound");

/* A step of the build takes at most about this many bytes of messages. */
#define BUILD_BYTES ((size_t)2 << 20)
/* How much of a message convfs_role() reads: its members "role", "say", "ask" come first. */
#define ROLE_BYTES ((size_t)64 << 10)

/* ---- SQL functions ---------------------------------------------------------------------- */

static void blob_closep(sqlite3_blob **b)
{
	if (*b)
		sqlite3_blob_close(*b);
}

/* A message's bytes as search_text_pieces() reads them: through a blob handle on its row's json. */
static int blob_bytes_read(void *ctx, size_t off, void *buf, size_t n)
{
	int rc = sqlite3_blob_read(ctx, buf, (int)n, (int)off);

	return rc == SQLITE_OK ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* Opens row id's json for search_text_pieces() into *m: an SQLite result code. */
static int elem_bytes_open(sqlite3 *db, int64_t id, sqlite3_blob **ret_b, struct search_bytes *m)
{
	int rc = sqlite3_blob_open(db, "main", "elems", "json", id, 0, ret_b);

	if (rc == SQLITE_OK)
		*m = (struct search_bytes){ .len = (size_t)sqlite3_blob_bytes(*ret_b), .read = blob_bytes_read,
					    .ctx = *ret_b };
	return rc;
}

/*
 * The bytes of message (len, json, id) a function reads, at most max: json
 * itself (a row of at most ELEM_INLINE bytes hands it over), or the first
 * ones of row id's json, read through a blob handle (a larger row, which
 * SQLite would otherwise load whole). *ret_buf holds them then (free()).
 */
static int message_bytes(sqlite3_context *ctx, sqlite3_value **argv, size_t max, const char **ret, size_t *ret_len,
			 char **ret_buf)
{
	__attribute__((cleanup(blob_closep))) sqlite3_blob *b = NULL;
	int64_t len = sqlite3_value_int64(argv[0]);
	struct search_bytes m;
	size_t n;
	char *buf;
	int rc;

	*ret_buf = NULL;
	if (sqlite3_value_type(argv[1]) != SQLITE_NULL) {
		n = (size_t)sqlite3_value_bytes(argv[1]);
		*ret = sqlite3_value_blob(argv[1]);
		*ret_len = n < max ? n : max;
		if (!*ret)
			*ret = "";
		return SQLITE_OK;
	}
	n = len < 0 ? 0 : (size_t)len < max ? (size_t)len : max;
	buf = malloc(n + 1);
	if (!buf)
		return SQLITE_NOMEM;
	rc = elem_bytes_open(sqlite3_context_db_handle(ctx), sqlite3_value_int64(argv[2]), &b, &m);
	if (rc == SQLITE_OK && n > m.len)
		n = m.len;
	if (rc == SQLITE_OK)
		rc = sqlite3_blob_read(b, buf, (int)n, 0);
	if (rc != SQLITE_OK) {
		free(buf);
		return rc;
	}
	*ret = *ret_buf = buf;
	*ret_len = n;
	return SQLITE_OK;
}

/* convfs_text(len, json, id): the text search_text() makes of a message (json NULL: read it from row id). */
static void sql_text(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	_cleanup_sb_ struct sb out = SB_INIT;
	_cleanup_free_ char *buf = NULL;
	const char *json;
	size_t n, len;
	char *text;
	int rc = message_bytes(ctx, argv, SEARCH_ELEM_BYTES, &json, &n, &buf);

	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	if (search_text(json, n, &out) < 0) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	text = sb_detach(&out, &len);
	sqlite3_result_text64(ctx, text ? text : "", len, text ? free : SQLITE_STATIC, SQLITE_UTF8);
}

static int piece_keep(void *ctx, size_t k, const char *text, size_t n)
{
	return sb_add(ctx, text, n);
}

/*
 * convfs_piece(rowid[, text_id]): the text of the piece of a message that
 * index row rowid (< 0) is (search_piece_id()), read from row text_id if
 * given (the row of the piece is gone: search_stale).
 */
static void sql_piece(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	__attribute__((cleanup(blob_closep))) sqlite3_blob *b = NULL;
	_cleanup_sb_ struct sb out = SB_INIT;
	int64_t rowid = sqlite3_value_int64(argv[0]);
	size_t k = (size_t)(-rowid & ((1 << SEARCH_PIECE_SHIFT) - 1));
	struct search_bytes m;
	char *text;
	size_t len;
	int rc, r;

	if (rowid >= 0 || k == 0) {
		sqlite3_result_null(ctx);
		return;
	}
	rc = elem_bytes_open(sqlite3_context_db_handle(ctx),
			     argc > 1 ? sqlite3_value_int64(argv[1]) : search_elem_of(rowid), &b, &m);
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	r = search_text_pieces(&m, k, k + 1, piece_keep, &out);
	if (r < 0) {
		sqlite3_result_error_code(ctx, r == -ENOMEM ? SQLITE_NOMEM : SQLITE_IOERR);
		return;
	}
	text = sb_detach(&out, &len);
	sqlite3_result_text64(ctx, text ? text : "", len, text ? free : SQLITE_STATIC, SQLITE_UTF8);
}

/* convfs_role(len, json, id): "user", "assistant" or NULL (search_role()). */
static void sql_role(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	_cleanup_free_ char *buf = NULL;
	const char *json, *name;
	size_t n;
	int rc = message_bytes(ctx, argv, ROLE_BYTES, &json, &n, &buf);

	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	name = search_role_name(search_role(json, n));
	if (name)
		sqlite3_result_text(ctx, name, -1, SQLITE_STATIC);
	else
		sqlite3_result_null(ctx);
}

/* convfs_stream(path): "api" or "ui" for a conversation doc, else NULL (layout.c). */
static void sql_stream(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const char *path = (const char *)sqlite3_value_text(argv[0]);
	struct doc_layout lay;

	if (!path || doc_layout_of(path, &lay) < 0 || lay.stream == STREAM_NONE)
		sqlite3_result_null(ctx);
	else
		sqlite3_result_text(ctx, lay.stream == STREAM_UI ? "ui" : "api", -1, SQLITE_STATIC);
}

int search_register(sqlite3 *db)
{
	/* Innocuous: the view search_text uses convfs_text(), and a schema's functions must be. */
	int flags = SQLITE_UTF8 | SQLITE_INNOCUOUS;
	int rc = sqlite3_create_function(db, "convfs_text", 3, flags, NULL, sql_text, NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "convfs_piece", 1, flags, NULL, sql_piece, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "convfs_piece", 2, flags, NULL, sql_piece, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "convfs_role", 3, flags, NULL, sql_role, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "convfs_stream", 1, flags | SQLITE_DETERMINISTIC, NULL, sql_stream,
					     NULL, NULL);
	if (rc != SQLITE_OK) {
		log_err("cannot register the search functions: %s", sqlite3_errmsg(db));
		return -ENOMEM;
	}
	return search_tokenizer_register(db);
}

/* ---- the state of the index -------------------------------------------------------------- */

/* The build's cursor as meta has it: -1 when no build is under way. */
static int cursor_read(struct store *st, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'search_cursor'", NULL, 0, NULL,
			       0, "cannot read the search index's state", &stmt);

	if (r == -ENOENT) {
		*ret = -1;
		return 0;
	}
	if (r == 0)
		*ret = sqlite3_column_int64(stmt, 0);
	return r;
}

int search_load(struct store *st)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	r = store_row_args(st, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'search'", NULL, 0, NULL,
			   0, "cannot look for the search index", &stmt);
	st->search = r == 0;
	st->search_cursor = -1;
	st->search_pieces_now = SEARCH_PIECES_NOW;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	store_stmt_release(TAKE_PTR(stmt));
	r = store_row_args(st, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'search_later'", NULL, 0,
			   NULL, 0, "cannot look for the search index's pieces to come", &stmt);
	/* A store of schema 17 read as it is: its pieces past the 16th are to come, as the migration says. */
	if (r == -ENOENT)
		r = store_exec(st, SEARCH_LATER_READONLY);
	if (r < 0)
		return r;
	return cursor_read(st, &st->search_cursor);
}

/*
 * The rows the index takes in at the end of a transaction: those from ?1 on
 * (all made in it: row ids only grow) that are current messages it does not
 * hold; but inside a batch, while a build is under way, those past its
 * cursor ?3 are left to it (?2 true).
 */
static const char flush_sql[] =
	"INSERT INTO search(rowid, body) SELECT e.id, " SEARCH_BODY("e") " FROM elems e JOIN docs d ON d.id = e.doc_id "
	"WHERE e.id >= ?1 AND e.rev_to IS NULL AND convfs_stream(d.path) IS NOT NULL AND NOT (?2 AND e.id > ?3) "
	"AND NOT EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id)";

/* The same rows over 1 MiB, whose text has more pieces: those that lack them. */
static const char flush_pieces_sql[] =
	"SELECT e.id FROM elems e JOIN docs d ON d.id = e.doc_id "
	"WHERE e.id >= ?1 AND e.rev_to IS NULL AND " SEARCH_PIECES_MISSING("e") " AND convfs_stream(d.path) IS NOT NULL "
	"AND NOT (?2 AND e.id > ?3)";

/* ---- the pieces of a large message ------------------------------------------------------- */

struct piece_write {
	sqlite3_stmt *stmt;
	int64_t id;
	int rc; /* the statement's failure */
};

static int piece_write(void *ctx, size_t k, const char *text, size_t n)
{
	struct piece_write *pw = ctx;

	sqlite3_bind_int64(pw->stmt, 1, search_piece_id(pw->id, k));
	sqlite3_bind_text64(pw->stmt, 2, text, n, SQLITE_STATIC, SQLITE_UTF8);
	pw->rc = sqlite3_step(pw->stmt);
	sqlite3_reset(pw->stmt);
	return pw->rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * Pieces [from, to) of the text of row text_id go into the index (add) or
 * out of it, as pieces of row id (text_id itself, but for pieces that
 * outlived their row, search_stale): one statement each, with the text the
 * walk of its bytes makes (search_text_pieces(), a window at a time).
 */
static int elem_pieces(struct store *st, int64_t id, int64_t text_id, size_t from, size_t to, bool add)
{
	__attribute__((cleanup(blob_closep))) sqlite3_blob *b = NULL;
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct search_bytes m;
	struct piece_write pw = { .id = id };
	int r, rc;

	if (from >= to)
		return 0;
	rc = elem_bytes_open(st->db, text_id, &b, &m);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot read a message to index");
	r = store_prepare(st, add ? "INSERT INTO search(rowid, body) VALUES (?1, ?2)"
				  : "INSERT INTO search(search, rowid, body) VALUES ('delete', ?1, ?2)",
			  &stmt);
	if (r < 0)
		return r;
	pw.stmt = stmt;
	r = search_text_pieces(&m, from, to, piece_write, &pw);
	if (r < 0 && pw.rc != SQLITE_DONE && pw.rc != SQLITE_OK)
		return store_fail(st, pw.rc, add ? "cannot add a large message to the search index"
						 : "cannot take a large message out of the search index");
	if (r < 0)
		log_err("store: cannot read a large message to index: %s", strerror(-r));
	return r;
}

/* Row id's pieces after the first (*ret_count of them in all), and those the index holds (*ret_held, up to). */
static int pieces_of(struct store *st, int64_t id, size_t *ret_count, size_t *ret_held)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT e.len, (SELECT l.next FROM search_later l WHERE l.id = e.id) FROM elems e "
				   "WHERE e.id = ?1", NULL, 0, STORE_INTS(id), "cannot read a large message to index",
			       &stmt);

	if (r < 0)
		return r; /* -ENOENT: no such row */
	*ret_count = search_piece_count((size_t)sqlite3_column_int64(stmt, 0));
	*ret_held = sqlite3_column_type(stmt, 1) == SQLITE_NULL ? *ret_count : (size_t)sqlite3_column_int64(stmt, 1);
	return 0;
}

/*
 * Whether a commit left pieces for the steps since store_search_more() last
 * asked: of the process, not of a connection, since the sync's and the
 * take-in's commit on connections of their own, and the daemon's steps run
 * on the requests' one.
 */
static bool search_more;

/* What rows_pieces() does with the pieces of each row. */
enum pieces_do {
	PIECES_ADD,      /* into the index: the first ones now, the rest later (search_later) */
	PIECES_OUT,      /* out of it: the first ones now, the rest later (search_stale) */
	PIECES_OUT_ALL,  /* out of it, all now (`convfs forget`) */
};

/* One row's pieces, as rows_pieces() says. */
static int row_pieces(struct store *st, int64_t id, enum pieces_do what)
{
	size_t count, held, now = st->search_pieces_now, to;
	int r = pieces_of(st, id, &count, &held);

	if (r < 0)
		return r == -ENOENT ? -EIO : r; /* the row the statement gave */
	if (what == PIECES_ADD) {
		to = count < now ? count : now;
		r = elem_pieces(st, id, id, 1, to, true);
		if (r == 0 && to < count) {
			r = store_run(st, "INSERT OR REPLACE INTO search_later(id, next) VALUES (?1, ?2)",
				      STORE_INTS(id, (int64_t)to), "cannot note the pieces of a message to index later");
			__atomic_store_n(&search_more, true, __ATOMIC_RELEASE);
		}
		return r;
	}
	to = what == PIECES_OUT_ALL || held < now ? held : now;
	r = elem_pieces(st, id, id, 1, to, false);
	if (r == 0 && held < count)
		r = store_run(st, "DELETE FROM search_later WHERE id = ?1", STORE_INTS(id),
			      "cannot note the pieces of a message to index later");
	if (r == 0 && to < held) {
		r = store_run(st, "INSERT OR REPLACE INTO search_stale(id, text_id, next, upto) VALUES (?1, ?1, ?2, ?3)",
			      STORE_INTS(id, (int64_t)to, (int64_t)held),
			      "cannot note the pieces of a message to take out of the index later");
		__atomic_store_n(&search_more, true, __ATOMIC_RELEASE);
	}
	return r;
}

/*
 * The rows the statement rows gives (their ids, column 0) get their pieces
 * in the index, or lose them (what); rows is released first. Few rows are
 * over 1 MiB: their ids are kept while the index changes.
 */
static int rows_pieces(struct store *st, sqlite3_stmt *rows, enum pieces_do what)
{
	_cleanup_free_ int64_t *ids = NULL;
	size_t n = 0, alloc = 0;
	int r = 0, rc;

	while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
		if ((r = ARRAY_GROW(ids, n, alloc, 8)) < 0)
			break;
		ids[n++] = sqlite3_column_int64(rows, 0);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot find the large messages to index");
	store_stmt_release(rows);
	for (size_t i = 0; i < n && r == 0; i++)
		r = row_pieces(st, ids[i], what);
	return r;
}

int search_pieces_out(struct store *st, sqlite3_stmt *rows)
{
	return rows_pieces(st, rows, PIECES_OUT_ALL);
}

/* Pieces a step behind the mount takes in or out: about 2 MiB of text, as a step of the build. */
#define LATER_PIECES 2

/*
 * A row of table (search_later or search_stale) whose text row is gone,
 * which only damage makes (`convfs check` says so): the steps let go of it,
 * with one line, rather than stop at it for good.
 */
static int later_orphan(struct store *st, const char *table, int64_t id, int64_t text_id)
{
	log_err("search: the pieces of element %" PRId64 " in %s have no text (row %" PRId64 " is gone): "
		"left as they are; convfs check reports them", id, table, text_id);
	return store_run(st, strcmp(table, "search_later") == 0 ? "DELETE FROM search_later WHERE id = ?1"
								 : "DELETE FROM search_stale WHERE id = ?1",
			 STORE_INTS(id), "cannot record the search index's build");
}

/* Pieces that wait: a row of search_stale, or of search_later (add; its upto is the message's). */
struct waiting {
	int64_t id, text_id, next, upto;
	bool add;
};

/* The first row of sql (the columns of struct waiting, in its order) into *w: 0, -ENOENT (none) or -errno. */
static int waiting_read(struct store *st, const char *sql, const char *what, struct waiting *w)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, sql, NULL, 0, NULL, 0, what, &stmt);

	if (r < 0)
		return r;
	*w = (struct waiting){ .id = sqlite3_column_int64(stmt, 0), .text_id = sqlite3_column_int64(stmt, 1),
			       .next = sqlite3_column_int64(stmt, 2), .upto = sqlite3_column_int64(stmt, 3),
			       .add = sqlite3_column_int(stmt, 4) };
	return 0;
}

/*
 * One step of what the commits left (search_later, search_stale): a few
 * pieces of the first row of either, the pieces of no message first.
 * *ret_done is true if there was nothing.
 */
static int later_step(struct store *st, bool *ret_done)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct waiting w;
	int r;

	*ret_done = false;
	r = waiting_read(st, "SELECT * FROM (SELECT id, text_id, next, upto, 0 AS later FROM search_stale "
			 "UNION ALL SELECT id, id, next, 0, 1 FROM search_later) ORDER BY later, id LIMIT 1",
			 "cannot read what the search index has yet to take in", &w);
	if (r == -ENOENT) {
		*ret_done = true;
		return 0;
	}
	if (r < 0)
		return r;
	if (w.add) {
		size_t count, held;

		r = pieces_of(st, w.id, &count, &held);
		if (r == -ENOENT)
			return later_orphan(st, "search_later", w.id, w.text_id);
		if (r < 0)
			return r;
		w.upto = (int64_t)count; /* held is next */
	} else {
		r = store_row_args(st, "SELECT 1 FROM elems WHERE id = ?1", NULL, 0, STORE_INTS(w.text_id),
				   "cannot read a message to index", &stmt);
		if (r == -ENOENT)
			return later_orphan(st, "search_stale", w.id, w.text_id);
		if (r < 0)
			return r;
		store_stmt_release(TAKE_PTR(stmt));
	}
	if (w.next + LATER_PIECES < w.upto) {
		r = elem_pieces(st, w.id, w.text_id, (size_t)w.next, (size_t)w.next + LATER_PIECES, w.add);
		if (r == 0)
			r = store_run(st, w.add ? "UPDATE search_later SET next = ?2 WHERE id = ?1"
					      : "UPDATE search_stale SET next = ?2 WHERE id = ?1",
				      STORE_INTS(w.id, w.next + LATER_PIECES), "cannot record the search index's build");
		return r;
	}
	r = elem_pieces(st, w.id, w.text_id, (size_t)w.next, (size_t)w.upto, w.add);
	if (r == 0)
		r = store_run(st, w.add ? "DELETE FROM search_later WHERE id = ?1"
					: "DELETE FROM search_stale WHERE id = ?1",
			      STORE_INTS(w.id), "cannot record the search index's build");
	return r;
}

int search_stale_out(struct store *st)
{
	int r;

	if (!st->search)
		return 0;
	for (;;) {
		struct waiting w;

		r = waiting_read(st, "SELECT id, text_id, next, upto, 0 FROM search_stale LIMIT 1",
				 "cannot read what the search index has yet to take out", &w);
		if (r == -ENOENT)
			return 0;
		r = r < 0 ? r : elem_pieces(st, w.id, w.text_id, (size_t)w.next, (size_t)w.upto, false);
		if (r == 0)
			r = store_run(st, "DELETE FROM search_stale WHERE id = ?1", STORE_INTS(w.id),
				      "cannot record the search index's build");
		if (r < 0)
			return r;
	}
}

int search_row_moved(struct store *st, int64_t from, int64_t to)
{
	if (!st->search)
		return 0;
	return store_run(st, "UPDATE search_stale SET text_id = ?2 WHERE text_id = ?1", STORE_INTS(from, to),
			 "cannot note where the text of pieces to take out of the index went");
}

bool store_search_more(void)
{
	return __atomic_exchange_n(&search_more, false, __ATOMIC_ACQ_REL);
}

int store_search_waiting(struct store *st)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	if (!st->search)
		return 0;
	r = store_row_args(st, "SELECT EXISTS (SELECT 1 FROM search_later) OR EXISTS (SELECT 1 FROM search_stale)",
			   NULL, 0, NULL, 0, "cannot read what the search index has yet to take in", &stmt);
	return r < 0 ? r : sqlite3_column_int(stmt, 0);
}

/* ---- the hooks ------------------------------------------------------------------------------ */

void search_row_added(struct store *st, const struct doc_layout *lay, int64_t id)
{
	if (st->search && lay->stream != STREAM_NONE && (!st->search_from || id < st->search_from))
		st->search_from = id;
}

int search_doc_rows_added(struct store *st, int64_t doc_id, int64_t rev)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	if (!st->search)
		return 0;
	r = store_row_args(st, "SELECT min(id) FROM elems WHERE doc_id = ?1 AND rev_from = ?2 AND rev_to IS NULL", NULL,
			   0, STORE_INTS(doc_id, rev), "cannot find the rows of a revision", &stmt);
	if (r < 0)
		return r;
	if (sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
		int64_t id = sqlite3_column_int64(stmt, 0);

		if (!st->search_from || id < st->search_from)
			st->search_from = id;
	}
	return 0;
}

int search_flush(struct store *st)
{
	sqlite3_stmt *rows = NULL;
	bool defer = st->batch_depth > 0 && st->search_cursor >= 0;
	int r;

	/* Nothing, or all of it past the build's cursor, left to the build (a first take-in). */
	if (!st->search_from || (defer && st->search_from > st->search_cursor)) {
		st->search_from = 0;
		return 0;
	}
	r = store_run(st, flush_sql, STORE_INTS(st->search_from, defer, st->search_cursor),
		      "cannot add messages to the search index");
	if (r == 0)
		r = store_prepare_ints(st, flush_pieces_sql, STORE_INTS(st->search_from, defer, st->search_cursor), &rows);
	if (r == 0)
		r = rows_pieces(st, rows, PIECES_ADD);
	if (r == 0)
		st->search_from = 0;
	return r;
}

void search_forget_pending(struct store *st)
{
	st->search_from = 0;
}

int search_rows_closing(struct store *st, int64_t doc_id, int64_t from_seq, int64_t rev)
{
	_cleanup_stmt_ sqlite3_stmt *any = NULL;
	sqlite3_stmt *big = NULL;
	int r;

	if (!st->search)
		return 0;
	/*
	 * Whether it has any to take out, first: most closes have none (a new
	 * doc, taskHistory.json, a take-in's rows left to the build), and a
	 * statement that writes to the index costs more than the lookup.
	 */
	r = store_row_args(st, "SELECT 1 FROM elems e WHERE e.doc_id = ?1 AND e.rev_to IS NULL AND e.seq >= ?2 "
			       "AND e.rev_from < ?3 AND EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id) LIMIT 1",
			   NULL, 0, STORE_INTS(doc_id, from_seq, rev), "cannot look in the search index", &any);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	store_stmt_release(TAKE_PTR(any));
	r = store_prepare_ints(st, "SELECT e.id FROM elems e WHERE e.doc_id = ?1 AND e.rev_to IS NULL AND e.seq >= ?2 "
				   "AND e.rev_from < ?3 AND e.len > 1048576 AND EXISTS (SELECT 1 FROM search_docsize z "
				   "WHERE z.id = -((e.id << 16) | 1))",
			       STORE_INTS(doc_id, from_seq, rev), &big);
	if (r == 0)
		r = rows_pieces(st, big, PIECES_OUT);
	if (r < 0)
		return r;
	return store_run(st, "INSERT INTO search(search, rowid, body) SELECT 'delete', e.id, " SEARCH_BODY("e") " "
			     "FROM elems e WHERE e.doc_id = ?1 AND e.rev_to IS NULL AND e.seq >= ?2 AND e.rev_from < ?3 "
			     "AND EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id)",
			 STORE_INTS(doc_id, from_seq, rev), "cannot take messages out of the search index");
}

/*
 * After `convfs forget` blanked rows (SEARCH_FORGET_SQL() took the current
 * ones out first): every current message the index lacks goes back in,
 * with the text it has now, but those a build under way has yet to reach.
 * A walk of the current rows: forget rewrites the whole file anyway.
 */
int search_forget_end(struct store *st)
{
	sqlite3_stmt *big = NULL;
	int r;

	if (!st->search)
		return 0;
	r = store_run(st, "INSERT INTO search(rowid, body) SELECT e.id, " SEARCH_BODY("e") " FROM elems e "
			  "JOIN docs d ON d.id = e.doc_id WHERE e.rev_to IS NULL AND convfs_stream(d.path) IS NOT NULL "
			  "AND (?1 < 0 OR e.id <= ?1) AND NOT EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id)",
		      STORE_INTS(st->search_cursor), "cannot put messages back in the search index");
	if (r == 0)
		r = store_prepare_ints(st, "SELECT e.id FROM elems e JOIN docs d ON d.id = e.doc_id WHERE e.rev_to IS NULL "
					   "AND " SEARCH_PIECES_MISSING("e") " AND convfs_stream(d.path) IS NOT NULL "
					   "AND (?1 < 0 OR e.id <= ?1)",
				       STORE_INTS(st->search_cursor), &big);
	return r < 0 ? r : rows_pieces(st, big, PIECES_ADD);
}

/* What is left of the forgotten text in the index's pages goes: its segments merged into one. */
int search_forget_pages(struct store *st)
{
	if (!st->search)
		return 0;
	return store_exec(st, "INSERT INTO search(search) VALUES ('optimize')");
}

/* ---- the build --------------------------------------------------------------------------- */

/* The rows a step looks at, past the cursor: whether each is a message to take in, and its size. */
#define BUILD_ROWS_SQL \
	"SELECT e.id, e.len, e.rev_to IS NULL AND convfs_stream(d.path) IS NOT NULL " \
	"  AND (NOT EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id) OR " SEARCH_PIECES_MISSING("e") ") " \
	"FROM elems e JOIN docs d ON d.id = e.doc_id WHERE e.id > ?1 ORDER BY e.id LIMIT ?2"

/*
 * One step, in the transaction store_search_build() opened: the rows past
 * the cursor, up to max_rows of them or BUILD_BYTES of messages to take in,
 * taken in with one statement (one segment of the index). *ret_cursor is
 * where it stopped, -1 if nothing is left.
 */
static int build_rows(struct store *st, size_t max_rows, int64_t *ret_cursor)
{
	_cleanup_stmt_ sqlite3_stmt *rows = NULL;
	sqlite3_stmt *big = NULL;
	int64_t cursor = st->search_cursor;
	size_t seen = 0, bytes = 0, todo = 0;
	int r, rc = SQLITE_DONE;

	r = store_prepare_ints(st, BUILD_ROWS_SQL, STORE_INTS(cursor, (int64_t)max_rows), &rows);
	if (r < 0)
		return r;
	while (bytes < BUILD_BYTES && (rc = sqlite3_step(rows)) == SQLITE_ROW) {
		int64_t len = sqlite3_column_int64(rows, 1);

		seen++;
		cursor = sqlite3_column_int64(rows, 0);
		if (!sqlite3_column_int(rows, 2))
			continue;
		todo++;
		bytes += (size_t)len; /* all of a large one: its pieces too */
	}
	if (bytes < BUILD_BYTES && rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read the rows to index");
	store_stmt_release(TAKE_PTR(rows));
	if (todo)
		r = store_run(st, "INSERT INTO search(rowid, body) SELECT e.id, " SEARCH_BODY("e") " FROM elems e "
				  "JOIN docs d ON d.id = e.doc_id WHERE e.id > ?1 AND e.id <= ?2 AND e.rev_to IS NULL "
				  "AND convfs_stream(d.path) IS NOT NULL "
				  "AND NOT EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id)",
			      STORE_INTS(st->search_cursor, cursor), "cannot add messages to the search index");
	if (todo && r == 0)
		r = store_prepare_ints(st, "SELECT e.id FROM elems e JOIN docs d ON d.id = e.doc_id WHERE e.id > ?1 "
					   "AND e.id <= ?2 AND e.rev_to IS NULL AND " SEARCH_PIECES_MISSING("e") " "
					   "AND convfs_stream(d.path) IS NOT NULL",
				       STORE_INTS(st->search_cursor, cursor), &big);
	if (todo && r == 0)
		r = rows_pieces(st, big, PIECES_ADD);
	if (r < 0)
		return r;
	*ret_cursor = bytes >= BUILD_BYTES || seen == max_rows ? cursor : -1;
	return 0;
}

int store_search_build(struct store *st, size_t max_rows, bool *ret_done)
{
	STORE_LOCK(st);
	int64_t cursor = -1;
	int r;

	*ret_done = true;
	if (!st->search)
		return 0;
	if (st->readonly)
		return -EROFS;
	if ((r = store_tx_aside_begin(st)) < 0)
		return r;
	if (st->search_cursor < 0) {
		/* The build is over: what commits left to the steps behind the mount. */
		r = later_step(st, ret_done);
		return store_tx_aside_end(st, r);
	}
	r = build_rows(st, max_rows ? max_rows : 1, &cursor);
	if (r == 0)
		r = cursor < 0 ? store_run(st, "DELETE FROM meta WHERE key = 'search_cursor'", NULL, 0,
					   "cannot record the search index's build")
			       : store_run(st, "UPDATE meta SET value = ?1 WHERE key = 'search_cursor'", STORE_INTS(cursor),
					   "cannot record the search index's build");
	if ((r = store_tx_aside_end(st, r)) < 0)
		return r;
	st->search_cursor = cursor;
	*ret_done = false; /* the pieces left for later, next */
	return 0;
}

int store_search_state(struct store *st, bool count, struct store_search_state *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *counted = NULL, *to_go = NULL, *later = NULL;
	struct store_search_state s = { .present = st->search };
	int64_t cursor = -1;
	int r;

	if (!st->search) {
		*ret = s;
		return 0;
	}
	/* Another process may be building it: the cursor as the file has it now. */
	if ((r = cursor_read(st, &cursor)) < 0)
		return r;
	s.indexed = -1;
	if (count) {
		r = store_row_args(st, "SELECT count(*) FROM search_docsize WHERE id > 0", NULL, 0, NULL, 0,
				   "cannot count the messages of the search index", &counted);
		if (r < 0)
			return r;
		s.indexed = sqlite3_column_int64(counted, 0);
	}
	r = store_row_args(st, "SELECT count(*), coalesce(sum(" SEARCH_MORE_PIECES("e") " + 1 - l.next), 0) "
			       "FROM search_later l JOIN elems e ON e.id = l.id", NULL, 0, NULL, 0,
			   "cannot count what the search index has yet to take in", &later);
	if (r < 0)
		return r;
	s.pieces_to_go = sqlite3_column_int64(later, 1);
	s.building = cursor >= 0 || s.pieces_to_go > 0;
	s.to_go = sqlite3_column_int64(later, 0); /* messages not all of whose text is in */
	if (cursor >= 0) {
		r = store_row_args(st, "SELECT count(*) FROM elems e JOIN docs d ON d.id = e.doc_id "
				       "WHERE e.id > ?1 AND e.rev_to IS NULL AND convfs_stream(d.path) IS NOT NULL "
				       "AND (NOT EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id) OR "
				       SEARCH_PIECES_MISSING("e") ")",
				   NULL, 0, STORE_INTS(cursor), "cannot count what the search index has yet to take in",
				   &to_go);
		if (r < 0)
			return r;
		s.to_go += sqlite3_column_int64(to_go, 0);
	}
	*ret = s;
	return 0;
}
