/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_search.c: libFuzzer target for what the search index makes of text
 * nobody controls: the query syntax of `convfs search` (store/search_query.c)
 * and the text of a message (store/search_text.c), with the tokenizer
 * "convfs" (store/tokenize.c) behind both.
 *
 * The input's first byte chooses; the rest is the query (up to its first
 * NUL: argv has none) or the message's bytes.
 *
 *   - A query is refused with -EINVAL and one line (not empty, no newline),
 *     the output left as it was; or accepted, and then it was valid UTF-8
 *     of at most SEARCH_QUERY_MAX bytes, its expression has its quotes in
 *     pairs, parsing it again gives the same, and FTS5 runs it against a
 *     table tokenized by "convfs" without an error: nothing typed reaches
 *     FTS5's own syntax.
 *   - A message's text is made of anything (JSON cut anywhere, or not JSON)
 *     without failing: valid UTF-8, no control character but "\n", at most
 *     about three times the input's length; the same for its first half.
 *     Indexed in an FTS5 table tokenized by "convfs", FTS5's integrity
 *     check passes (the tokenizer gives the same tokens each time, and
 *     positions FTS5 can hold). Its role is one of the three.
 *   - The parts of an identifier begin at 0 and grow, within the input.
 *
 * ASan and UBSan (and LeakSanitizer) check everything else.
 */
#include <errno.h>
#include <string.h>

#include <sqlite3.h>

#include "store/json.h"
#include "store/search.h"
#include "store/util.h"
#include "tests/fuzz/fuzz.h"

/* One connection for every input: an FTS5 table that stores its text, tokenized as the index's. */
static sqlite3 *db_once(void)
{
	static sqlite3 *db;

	if (db)
		return db;
	CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
	CHECK(search_register(db) == 0);
	CHECK(sqlite3_exec(db, "CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'convfs')", NULL, NULL, NULL) ==
	      SQLITE_OK);
	CHECK(sqlite3_exec(db, "INSERT INTO t(body) VALUES ('getUserName snake_case src/a.ts caf\xc3\xa9 ERR_CODE')", NULL,
			   NULL, NULL) == SQLITE_OK);
	return db;
}

static bool valid_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = json_utf8_len((const unsigned char *)s + i, n - i);

		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* FTS5 takes expression e (made of query q). */
static void check_fts5(const struct sb *e, const char *q)
{
	sqlite3_stmt *stmt = NULL;
	int r;

	CHECK(e->len > 0);
	CHECK(sqlite3_prepare_v2(db_once(), "SELECT count(*) FROM t WHERE t MATCH ?1", -1, &stmt, NULL) == SQLITE_OK);
	sqlite3_bind_text(stmt, 1, e->buf, (int)e->len, SQLITE_STATIC);
	r = sqlite3_step(stmt);
	if (r != SQLITE_ROW)
		fprintf(stderr, "FTS5 refused '%s' (from '%s'): %s\n", e->buf, q, sqlite3_errmsg(db_once()));
	CHECK(r == SQLITE_ROW);
	sqlite3_finalize(stmt);
}

/* The query in parts (search_query_split()) is taken exactly when the query is, and FTS5 takes each part. */
static void check_query_parts(const char *q, int parsed)
{
	struct search_parts p;
	char err[200] = "";
	int r = search_query_split(q, &p, err, sizeof(err));

	if (r == -ENOMEM || parsed == -ENOMEM)
		return;
	CHECK(r == parsed);
	if (r < 0)
		return;
	CHECK(p.npos >= 1 && p.npos <= SEARCH_QUERY_TERMS);
	for (size_t i = 0; i < p.npos; i++)
		check_fts5(&p.pos[i], q);
	check_fts5(&p.any, q);
	if (p.neg.len)
		check_fts5(&p.neg, q);
	search_parts_release(&p);
}

static void check_query(const char *q)
{
	_cleanup_sb_ struct sb out = SB_INIT, again = SB_INIT;
	char err[200] = "";
	size_t quotes = 0;
	int r = search_query_parse(q, &out, err, sizeof(err));

	CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	check_query_parts(q, r);
	if (r == -EINVAL) {
		CHECK(err[0] != '\0');
		CHECK(!strchr(err, '\n'));
		CHECK(out.len == 0);
		return;
	}
	if (r < 0)
		return;
	CHECK(err[0] == '\0');
	CHECK(strlen(q) <= SEARCH_QUERY_MAX);
	CHECK(valid_utf8(q, strlen(q)));
	for (size_t i = 0; i < out.len; i++)
		quotes += out.buf[i] == '"';
	CHECK(quotes % 2 == 0);
	CHECK(search_query_parse(q, &again, err, sizeof(err)) == 0);
	CHECK(again.len == out.len && memcmp(again.buf, out.buf, out.len) == 0);
	check_fts5(&out, q);
}

/* The text of json[0, n): made, checked, and returned (free()). */
static char *check_text(const char *json, size_t n, size_t *ret_len)
{
	_cleanup_sb_ struct sb out = SB_INIT;

	CHECK(search_text(json, n, &out) == 0);
	CHECK(out.len <= 3 * n + n / 2 + 1);
	CHECK(valid_utf8(out.buf ? out.buf : "", out.len));
	for (size_t i = 0; i < out.len; i++)
		CHECK(((unsigned char)out.buf[i] >= 0x20 && out.buf[i] != 0x7f) || out.buf[i] == '\n');
	return sb_detach(&out, ret_len);
}

static void check_message(const char *json, size_t n)
{
	sqlite3 *db = db_once();
	sqlite3_stmt *stmt = NULL;
	size_t len, half_len;
	char *text = check_text(json, n, &len), *half = check_text(json, n / 2, &half_len);
	enum search_role role = search_role(json, n);

	CHECK(role == SEARCH_ROLE_NONE || role == SEARCH_ROLE_USER || role == SEARCH_ROLE_ASSISTANT);
	CHECK(sqlite3_prepare_v2(db, "INSERT INTO t(rowid, body) VALUES (2, ?1)", -1, &stmt, NULL) == SQLITE_OK);
	sqlite3_bind_text(stmt, 1, text ? text : "", (int)len, SQLITE_STATIC);
	CHECK(sqlite3_step(stmt) == SQLITE_DONE);
	sqlite3_finalize(stmt);
	if (sqlite3_exec(db, "INSERT INTO t(t) VALUES ('integrity-check')", NULL, NULL, NULL) != SQLITE_OK)
		fprintf(stderr, "FTS5's integrity check fails on the text of the input: %s\n", sqlite3_errmsg(db));
	CHECK(sqlite3_exec(db, "INSERT INTO t(t) VALUES ('integrity-check')", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "DELETE FROM t WHERE rowid = 2", NULL, NULL, NULL) == SQLITE_OK);
	free(text);
	free(half);
}

static void check_parts(const char *s, size_t n)
{
	size_t starts[SEARCH_CAMEL_MAX], k = search_camel_parts(s, n, starts, SEARCH_CAMEL_MAX);

	CHECK(k <= SEARCH_CAMEL_MAX);
	CHECK(n == 0 ? k == 0 : k >= 1);
	if (k < 2)
		return;
	CHECK(starts[0] == 0);
	for (size_t i = 1; i < k; i++)
		CHECK(starts[i] > starts[i - 1] && starts[i] < n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *rest = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		check_message(rest, n);
	} else {
		char *q = strndup(rest, n);

		CHECK_ALLOC(q);
		check_query(q);
		check_parts(q, strlen(q) < 64 ? strlen(q) : 64);
		free(q);
	}
	return 0;
}
