/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * search_check.c: `convfs check`, the words of the search index against the
 * messages' text (index.c says what it must hold; that it holds the rows it
 * must, and no other, check.c's invariants say).
 *
 * FTS5's own 'integrity-check' is a write (an INSERT of a command) that a
 * read-only connection may not run, and check reads beside the daemon. So
 * the same comparison is made here, read-only: each indexed message's
 * tokens, made from the text its bytes give now by the same tokenizer, are
 * as many as the index recorded for it (search_docsize), and all of them,
 * as (token, row, position), hash to the same sum as the index's own
 * entries, read through an fts5vocab table (which also walks every page of
 * the index, so a damaged one stops it with SQLITE_CORRUPT). Its cost is a
 * read of the index and a tokenizing of every message: about as long as
 * building the index.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/search.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/util.h"

/* The entry (token, row, position) as the sum of the index's entries counts it. */
static uint64_t entry_hash(const char *tok, size_t len, int64_t row, int64_t pos)
{
	unsigned char buf[SEARCH_TOKEN_MAX + 1 + 16];

	if (len > SEARCH_TOKEN_MAX)
		len = SEARCH_TOKEN_MAX; /* never: such a token is not indexed */
	memcpy(buf, tok, len);
	buf[len] = 0;
	memcpy(buf + len + 1, &row, 8);
	memcpy(buf + len + 9, &pos, 8);
	return hash64(buf, len + 17);
}

/* The tokens of one message: how many take a position, and the sum of their entries. */
struct text_sum {
	int64_t row, pos, ntokens;
	uint64_t sum;
};

static int on_token(void *ctx, bool colocated, const char *tok, size_t len)
{
	struct text_sum *t = ctx;

	if (!colocated && t->ntokens++ > 0)
		t->pos++;
	t->sum += entry_hash(tok, len, t->row, t->pos);
	return 0;
}

/* The size FTS5 recorded of a message: the varint of its one column. */
static int64_t docsize_of(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n && i < 9; i++) {
		v = (v << 7) | (p[i] & 0x7f);
		if (!(p[i] & 0x80))
			break;
	}
	return (int64_t)v;
}

/* The text side: each message's tokens against its recorded size, and the sum of all entries. */
static int check_text(struct store *st, struct search_tokenizer *tk, store_problem_fn fn, void *ctx, uint64_t *ret_sum,
		      int64_t *ret_tokens)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc, n = 0;

	*ret_sum = 0;
	*ret_tokens = 0;
	/* (The pieces of a row gone that wait to leave the index: their text is another row's, search_stale's.) */
	r = store_prepare(st, "SELECT z.id, z.sz, t.body, d.path, e.seq FROM search_docsize z "
			      "JOIN search_text t ON t.id = z.id JOIN elems e ON e.id = coalesce((SELECT s.text_id "
			      "FROM search_stale s WHERE z.id < 0 AND s.id = -z.id >> 16), " SEARCH_ELEM_OF("z.id") ") "
			      "JOIN docs d ON d.id = e.doc_id",
			  &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct text_sum t = { .row = sqlite3_column_int64(stmt, 0) };
		int64_t size = docsize_of(sqlite3_column_blob(stmt, 1), sqlite3_column_bytes(stmt, 1));
		char line[1024];

		r = search_tokens(tk, (const char *)sqlite3_column_text(stmt, 2), (size_t)sqlite3_column_bytes(stmt, 2),
				  on_token, &t);
		if (r < 0)
			return r;
		*ret_sum += t.sum;
		*ret_tokens += t.ntokens;
		if (t.ntokens == size)
			continue;
		snprintf(line, sizeof(line), "search: doc '%s': element %" PRId64 "%s%.0" PRId64 " is indexed with %" PRId64
			 " words, its text has %" PRId64, (const char *)sqlite3_column_text(stmt, 3),
			 (int64_t)sqlite3_column_int64(stmt, 4), t.row < 0 ? ", piece " : "",
			 t.row < 0 ? -t.row & ((1 << SEARCH_PIECE_SHIFT) - 1) : 0, size, t.ntokens);
		n++;
		if ((r = fn(ctx, line)) < 0)
			return r;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read the messages of the search index");
	return n;
}

/* The index side: the sum of its entries, read through an fts5vocab table of this connection's own. */
static int check_entries(struct store *st, uint64_t *ret_sum, int64_t *ret_tokens)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	uint64_t sum = 0;
	int64_t n = 0;
	int r, rc;

	r = store_exec(st, "CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_check_vocab "
			   "USING fts5vocab(main, search, instance)");
	if (r < 0)
		return r;
	r = store_prepare(st, "SELECT term, doc, offset FROM temp.search_check_vocab", &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		sum += entry_hash((const char *)sqlite3_column_text(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0),
				  sqlite3_column_int64(stmt, 1), sqlite3_column_int64(stmt, 2));
		n++;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read the search index");
	*ret_sum = sum;
	*ret_tokens = n;
	return 0;
}

/* The tokens the index holds against the text: one problem at most (the sums differ), or -errno. */
static int check_words(struct store *st, store_problem_fn fn, void *ctx)
{
	struct search_tokenizer *tk = NULL;
	uint64_t text_sum = 0, index_sum = 0;
	int64_t text_tokens = 0, index_tokens = 0;
	char line[256];
	int r, n;

	r = search_tokenizer_open(st->db, &tk);
	if (r < 0)
		return r;
	n = check_text(st, tk, fn, ctx, &text_sum, &text_tokens);
	search_tokenizer_free(tk);
	if (n < 0)
		return n;
	r = check_entries(st, &index_sum, &index_tokens);
	if (r < 0)
		return r;
	if (text_sum == index_sum)
		return n;
	snprintf(line, sizeof(line), "search: the words of the search index (%" PRId64 ") are not those of the "
		 "messages' text (%" PRId64 ")", index_tokens, text_tokens);
	return (r = fn(ctx, line)) < 0 ? r : n + 1;
}

int search_check_words(struct store *st, store_problem_fn fn, void *ctx)
{
	STORE_LOCK(st);

	return st->search ? check_words(st, fn, ctx) : 0;
}
