/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SEARCH_H
#define CONVFS_SEARCH_H

/*
 * The full-text index of the conversations, inside the store (not part of
 * the store's interface: store_search.h is). Four parts:
 *
 *   search_text.c  the text of a message the index holds, and its role;
 *   tokenize.c     the tokenizer "convfs" (unicode61, plus the parts of a
 *                  camelCase identifier);
 *   search_query.c the query syntax of `convfs search`, made an FTS5
 *                  expression that nothing typed can turn into FTS5 syntax;
 *   index.c        the index kept in step with the rows of elems, its build,
 *                  its check; search.c the ranked query.
 *
 * The pure parts (text, tokens, queries) need no store, so that the unit
 * tests and the fuzz target call them as they are.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/store_ops.h"
#include "store/util.h"

/*
 * How much of one element the index reads as its first piece: its first
 * bytes, this many. A message over 1 MiB (a pasted log, a file read whole)
 * is kept a piece at a time and never held whole (src.c); its text goes on
 * in more pieces of about as many bytes each (search_text_pieces()), each
 * a document of the index of its own, up to SEARCH_PIECES_MAX (64 GiB).
 *
 * The commit that makes a message current indexes its first
 * SEARCH_PIECES_NOW pieces; the rest wait in the table search_later for
 * the steps behind the mount (store_search_build()), a few at a time. The
 * bound is the time a commit holds the store: FTS5 takes in about 10 MB of
 * dense text a second, and every other request waits meanwhile. Likewise
 * the pieces past those of a message that stops being current wait in
 * search_stale to leave the index; no search finds them meanwhile (their
 * row is gone: a large row is closed by a copy, doc.c).
 */
#define SEARCH_ELEM_BYTES ((size_t)1 << 20)
#define SEARCH_PIECE_BYTES SEARCH_ELEM_BYTES
#define SEARCH_PIECES_MAX 65535
#define SEARCH_PIECES_NOW 16

/*
 * The rowid in the index of piece k >= 1 of the text of elems row id (the
 * first piece is row id itself): negative, so that no row's id is one, and
 * the row's id in its high bits, so that the row is known from it.
 */
#define SEARCH_PIECE_SHIFT 16
_Static_assert(SEARCH_PIECES_MAX <= 1 << SEARCH_PIECE_SHIFT, "a piece's number in its rowid");
static inline int64_t search_piece_id(int64_t id, size_t k)
{
	return -((id << SEARCH_PIECE_SHIFT) | (int64_t)k);
}
static inline int64_t search_elem_of(int64_t rowid)
{
	return rowid > 0 ? rowid : -rowid >> SEARCH_PIECE_SHIFT;
}
/* The same in SQL: the row of index rowid r, and whether row e (of elems) lacks its pieces. */
#define SEARCH_ELEM_OF(r) "(CASE WHEN " r " > 0 THEN " r " ELSE -(" r ") >> 16 END)"
#define SEARCH_PIECES_MISSING(e) \
	"(" e ".len > 1048576 AND NOT EXISTS (SELECT 1 FROM search_docsize p WHERE p.id = -((" e ".id << 16) | 1)))"
/* How many pieces after the first the text of row e is in (search_piece_count() - 1). */
#define SEARCH_MORE_PIECES(e) "min((" e ".len - 1) / 1048576, 65534)"
/* How many of them the index is to hold now: those before search_later's next, if it waits for some. */
#define SEARCH_PIECES_HELD(e) \
	"coalesce((SELECT l.next - 1 FROM search_later l WHERE l.id = " e ".id), " SEARCH_MORE_PIECES(e) ")"

/* A token longer than this (in bytes, case folded) is not indexed: base64, minified blobs. */
#define SEARCH_TOKEN_MAX 64

/*
 * The text a row of elems (named e in SQL) has in the index: the view
 * search_text's body, and what the index is fed, always this one
 * expression. A row's bytes are handed to convfs_text() up to 1 MiB; of a
 * larger one (kept a piece at a time), convfs_text() reads its first MiB
 * itself: SQLite would load the whole value to pass it.
 */
#define SEARCH_BODY(e) "convfs_text(" e ".len, CASE WHEN " e ".len <= 1048576 THEN " e ".json END, " e ".id)"

/*
 * The migration that brings the index (schema.c's migrations[]; its number
 * is its place there, and nothing else depends on it: search_load() looks
 * for the table, so a migration of another change that lands first just
 * goes before it). It makes the view the index reads the text of a row
 * from, the FTS5 table (external content, rowid = elems.id), and the
 * build's cursor at 0: every row is yet to be taken in, by
 * store_search_build(), behind the mount. "IF NOT EXISTS": a store that a
 * test (or a user) set back to an older version number keeps what it has,
 * and the build completes it.
 */
#define SEARCH_MIGRATION                                                                                      \
	"CREATE VIEW IF NOT EXISTS search_text(id, body) AS SELECT id, " SEARCH_BODY("elems") " FROM elems;"  \
	"CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(body, content = 'search_text', "                 \
	"  content_rowid = 'id', tokenize = 'convfs');"                                                         \
	"INSERT OR REPLACE INTO meta(key, value) VALUES ('search_cursor', '0');"

/*
 * The migration that indexes the text of a message past its first MiB: the
 * view search_text gets the pieces' text (convfs_piece() of their rowid,
 * for FTS5's snippets and `convfs check`; the rowids the index holds are
 * the pieces it has), and the build goes back to the first row over 1 MiB,
 * which it gives its pieces (rows it already holds cost it a lookup each).
 */
#define SEARCH_PIECES_MIGRATION                                                                                 \
	"DROP VIEW IF EXISTS search_text;"                                                                        \
	"CREATE VIEW search_text(id, body) AS SELECT id, " SEARCH_BODY("elems") " FROM elems "                    \
	"  UNION ALL SELECT z.id, convfs_piece(z.id) FROM search_docsize z WHERE z.id < 0;"                       \
	"INSERT OR REPLACE INTO meta(key, value) SELECT 'search_cursor', min(x) FROM ("                           \
	"  SELECT min(id) - 1 AS x FROM elems WHERE len > 1048576 "                                               \
	"  UNION ALL SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'search_cursor') HAVING min(x) IS NOT NULL;"

/*
 * The migration that indexes all of a large message's text: the pieces
 * that wait to go into the index (search_later: row id, its next piece to
 * index) and to leave it (search_stale: the pieces [next, upto) of row id,
 * whose text row text_id has now, id itself gone). A message that the last
 * schema indexed has its first 16 pieces, the rest to come. The view
 * search_text reads the text of a piece of a row gone from text_id.
 */
#define SEARCH_LATER_TABLES(temp)                                                                               \
	"CREATE " temp " TABLE IF NOT EXISTS search_later (id INTEGER PRIMARY KEY, next INTEGER NOT NULL);"       \
	"CREATE " temp " TABLE IF NOT EXISTS search_stale (id INTEGER PRIMARY KEY, text_id INTEGER NOT NULL, "   \
	"  next INTEGER NOT NULL, upto INTEGER NOT NULL);"                                                         \
	"INSERT OR IGNORE INTO search_later(id, next) SELECT e.id, 16 FROM elems e WHERE e.rev_to IS NULL "        \
	"  AND e.len > 16 * 1048576 AND EXISTS (SELECT 1 FROM search_docsize p WHERE p.id = -((e.id << 16) | 1));"
#define SEARCH_LATER_MIGRATION                                                                                  \
	SEARCH_LATER_TABLES("")                                                                                   \
	"DROP VIEW IF EXISTS search_text;"                                                                        \
	"CREATE VIEW search_text(id, body) AS SELECT id, " SEARCH_BODY("elems") " FROM elems "                    \
	"  UNION ALL SELECT z.id, convfs_piece(z.id, coalesce((SELECT s.text_id FROM search_stale s "             \
	"  WHERE s.id = -z.id >> 16), -z.id >> 16)) FROM search_docsize z WHERE z.id < 0;"
/* The same tables for a connection of its own to a store of schema 17, read as it is (`check`, `search`). */
#define SEARCH_LATER_READONLY SEARCH_LATER_TABLES("TEMP")

/* ---- search_text.c ------------------------------------------------------------------ */

/*
 * The text of message json[0, len) that the index holds, appended to out:
 * the pieces a person reads, each decoded from its JSON string and followed
 * by "\n", control and invisible formatting characters made spaces, bytes
 * that are not UTF-8 made '?'. json may be cut anywhere (the first
 * SEARCH_ELEM_BYTES of a large message) or not JSON at all: what can be read
 * is taken. 0 or -ENOMEM. The rules (docs/ARCHITECTURE.md, "Search"):
 *   - "content" (API messages, CLI 3.x messages): a string, or blocks:
 *     "text" of text blocks, "thinking" of thinking blocks, "name" and
 *     every string in "input" of tool_use blocks, "content" of tool_result
 *     blocks (a string, or blocks again); images and documents are not text;
 *   - "text" and "reasoning" (ui messages), but not of the say types whose
 *     text is a copy of the API request or a screenshot (api_req_*,
 *     deleted_api_reqs, browser_action_result).
 */
int search_text(const char *json, size_t len, struct sb *out);

/* The bytes of a message, read a window at a time. */
struct search_bytes {
	size_t len;
	/* Reads exactly n bytes at off (off + n <= len): 0 or -errno. */
	int (*read)(void *ctx, size_t off, void *buf, size_t n);
	void *ctx;
	size_t window; /* bytes read at once; 0: SEARCH_PIECE_BYTES (the tests make it small) */
};

/*
 * How many pieces the text of a message of len bytes is in: 1 (the text
 * search_text() makes of its first SEARCH_ELEM_BYTES) up to that many
 * bytes, else one more for each SEARCH_PIECE_BYTES begun, SEARCH_PIECES_MAX
 * at most.
 */
size_t search_piece_count(size_t len);

/*
 * Where piece k >= 1 of message m begins: at byte k * SEARCH_PIECE_BYTES,
 * or up to 256 bytes before it, just after a space or else a punctuation
 * mark, so that the word it would cut is whole in the piece (the first
 * piece has the start of that word too). len for k past the last piece.
 */
int search_piece_start(const struct search_bytes *m, size_t k, size_t *ret);

/*
 * The text of pieces [from, to) of message m (from >= 1: the first piece
 * is search_text()'s), each handed to fn as it is made: the text that the
 * walk of all of m's bytes by search_text()'s rules makes of the strings'
 * characters that begin in the piece's bytes (its start, search_piece_start(),
 * to the next one's). A piece with no text is handed on, empty. The walk
 * holds a window of m->window bytes and the text of one piece at a time,
 * never all of m; it stops after piece to - 1. 0, -errno from m->read or
 * fn (which ends the walk), or -ENOMEM.
 */
typedef int (*search_piece_fn)(void *ctx, size_t k, const char *text, size_t n);
int search_text_pieces(const struct search_bytes *m, size_t from, size_t to, search_piece_fn fn, void *ctx);

enum search_role {
	SEARCH_ROLE_NONE = 0,
	SEARCH_ROLE_USER,
	SEARCH_ROLE_ASSISTANT,
};

/*
 * Who wrote message json[0, len) (cut anywhere, as for search_text()): its
 * "role"; a ui message is the user's for say task, user_feedback and
 * user_feedback_diff, else the assistant's.
 */
enum search_role search_role(const char *json, size_t len);
const char *search_role_name(enum search_role r); /* "user", "assistant" or NULL */

/* ---- tokenize.c ----------------------------------------------------------------------- */

/*
 * Where the parts of identifier s[0, n) begin (starts[0] is 0), at most max
 * of them: a new part at an upper-case letter after a lower-case letter or a
 * digit ("getUser", "v2Api"), and at the last upper-case letter of a run of
 * them followed by a lower-case one ("HTTPServer"). Only a token of ASCII
 * letters and digits is split. Returns the number of parts (1: not split).
 */
size_t search_camel_parts(const char *s, size_t n, size_t *starts, size_t max);
#define SEARCH_CAMEL_MAX 16

/*
 * Registers the tokenizer "convfs" on db (every connection that reads or
 * writes the index), and the snippet function of the hits (snippet.c).
 */
int search_tokenizer_register(sqlite3 *db);

/* ---- snippet.c ------------------------------------------------------------------------ */

/* Registers convfs_snippet(search, open, close, ellipsis, ntokens), FTS5's snippet() in linear time. */
int search_snippet_register(fts5_api *api);

/*
 * The tokenizer of db (which has it registered), to make the tokens of
 * text as the index makes them from a message: for `convfs check`, which
 * compares the index with the text. Free with search_tokenizer_free().
 */
struct search_tokenizer;
int search_tokenizer_open(sqlite3 *db, struct search_tokenizer **ret);
void search_tokenizer_free(struct search_tokenizer *t);
/* Calls fn for each token of text[0, n) (colocated ones included, flagged); 0, fn's refusal, or -errno. */
typedef int (*search_token_fn)(void *ctx, bool colocated, const char *tok, size_t len);
int search_tokens(struct search_tokenizer *t, const char *text, size_t n, search_token_fn fn, void *ctx);

/* ---- search_query.c ------------------------------------------------------------------- */

/* Words of a query at most, and its bytes. */
#define SEARCH_QUERY_TERMS 64
#define SEARCH_QUERY_MAX 4096

/*
 * Makes query (`convfs search` syntax: words that must all match,
 * "phrases", prefix*, OR between two terms, -word to exclude) an FTS5
 * expression, appended to out. A query that is not valid: -EINVAL and one
 * line in err (no newline, lowercase), out unchanged. Also -ENOMEM.
 */
int search_query_parse(const char *query, struct sb *out, char *err, size_t errlen);

/*
 * The same query in parts, to match a message of several pieces as a
 * whole (search_pieces.c): pos[i], each term that must match (an item, or
 * items joined by OR), as an FTS5 expression; any, all of them joined by
 * OR; neg, the items excluded with '-', joined by OR (empty if none). The
 * errors of search_query_parse(); release with search_parts_release().
 */
struct search_parts {
	struct sb pos[SEARCH_QUERY_TERMS];
	size_t npos;
	struct sb any, neg;
};
int search_query_split(const char *query, struct search_parts *p, char *err, size_t errlen);
void search_parts_release(struct search_parts *p);

/* ---- search_pieces.c: a message over 1 MiB matched as a whole (store's lock held) ---- */

struct store;
struct store_search_query;

/* A large message that matches a query as a whole: the piece to show it by, and its score. */
struct search_whole {
	int64_t elem; /* first: in[] is sorted by it */
	int64_t rowid;
	double score;
};

/* Which large messages match a query as a whole, and which do not, whatever their pieces match. */
struct search_verdict {
	struct search_whole *in; /* sorted by elem */
	size_t nin;
	int64_t *out; /* sorted */
	size_t nout;
};

/*
 * The verdict on the large messages that have a piece matching a term of
 * p (the query q->text, of q's filters), into *v (search_verdict_release()):
 * empty for a query of one term and no word excluded, which a message
 * matches if one of its pieces does. 0 or -errno.
 */
int search_pieces_verdict(struct store *st, const struct store_search_query *q, const struct search_parts *p,
			  struct search_verdict *v);
void search_verdict_release(struct search_verdict *v);
bool search_verdict_out(const struct search_verdict *v, int64_t elem);
const struct search_whole *search_verdict_in(const struct search_verdict *v, int64_t elem);
/* Orders two int64_t, for qsort() and bsearch(). */
int search_int64_cmp(const void *a, const void *b);

/* ---- index.c: the index kept in step with elems (called with the store's lock held) ---- */

struct doc_layout;

/* The SQL functions the index and its queries use (convfs_text(), ...), and the tokenizer. */
int search_register(sqlite3 *db);
/* After the store is opened (and migrated): whether it has an index, and how far its build got. */
int search_load(struct store *st);
/*
 * Row id of a doc of layout lay was made current: into the index, if it is
 * a message, when the transaction ends (search_flush()).
 */
void search_row_added(struct store *st, const struct doc_layout *lay, int64_t id);
/* Revision rev made current rows of doc doc_id by copying them (a task back from the trash): the same. */
int search_doc_rows_added(struct store *st, int64_t doc_id, int64_t rev);
/*
 * At the end of a transaction (tx_commit()), before it commits: the rows it
 * made current go into the index, in one statement. search_forget_end()
 * clears what is noted, as a rollback does.
 */
int search_flush(struct store *st);
/*
 * Before elems_close(doc_id, from_seq, rev): the rows it closes leave the
 * index (the pieces of a large one past the first SEARCH_PIECES_NOW, later).
 */
int search_rows_closing(struct store *st, int64_t doc_id, int64_t from_seq, int64_t rev);
/* elems_close() copied large row from to row to, and deletes it: the pieces it left for later read to. */
int search_row_moved(struct store *st, int64_t from, int64_t to);
/*
 * `convfs forget` (in its transaction): SEARCH_FORGET_SQL(cond), with the
 * parameters cond has, takes the current rows it is about to blank or
 * delete out of the index; search_forget_end() afterwards puts back those
 * still current (blanked), with the text they hold then.
 */
#define SEARCH_FORGET_SQL(cond)                                                                                \
	"INSERT INTO search(search, rowid, body) SELECT 'delete', e.id, " SEARCH_BODY("e") " FROM elems e "    \
	"JOIN docs d ON d.id = e.doc_id WHERE e.rev_to IS NULL AND (" cond ") "                                \
	"AND EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = e.id)"
/*
 * And before it, SEARCH_FORGET_PIECES_SQL(cond) prepared and bound the same
 * way, handed to search_pieces_out() (which releases it): the pieces of
 * those rows over 1 MiB leave the index.
 */
#define SEARCH_FORGET_PIECES_SQL(cond)                                                                           \
	"SELECT e.id FROM elems e JOIN docs d ON d.id = e.doc_id WHERE e.rev_to IS NULL AND (" cond ") "         \
	"AND e.len > 1048576 AND EXISTS (SELECT 1 FROM search_docsize z WHERE z.id = -((e.id << 16) | 1))"
int search_pieces_out(struct store *st, sqlite3_stmt *rows);
/* And first of all: the pieces of messages gone from the store that still wait to leave the index, all. */
int search_stale_out(struct store *st);
int search_forget_end(struct store *st);
/* Notes that the transaction ended without search_flush() (rolled back). */
void search_forget_pending(struct store *st);
/* The index's segments merged into one, so that no page keeps forgotten text. */
int search_forget_pages(struct store *st);

/* ---- search_check.c ------------------------------------------------------------------------ */

/*
 * `convfs check`: the words of the index against the messages' text (which
 * rows it holds, check.c's invariants say), each problem one line through
 * fn. The number of problems, or -errno. Takes the store's lock.
 */
int search_check_words(struct store *st, store_problem_fn fn, void *ctx);

#endif
