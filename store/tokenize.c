/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tokenize.c: the tokenizer of the search index, "convfs".
 *
 * FTS5's unicode61, with diacritics removed (remove_diacritics 2), makes the
 * tokens: runs of letters and digits, case folded, so "Über" finds "uber"
 * and `snake_case`, `path/to/file.ts` and `ERR_CODE` come apart at their
 * punctuation (found whole as a phrase of their parts, which is what a query
 * word with that punctuation becomes). It does not split camelCase: this
 * wrapper adds that. A token of ASCII letters and digits with parts
 * (search_camel_parts()) is given as its parts, one position each, and
 * (in a document, not in a query) the whole token too, at the position of
 * the first part (FTS5_TOKEN_COLOCATED). So `getUserName` is found by
 * "user", by "getUserName" (a query of its parts, a phrase) and by
 * "getusername" (the whole token, which is how a query typed in one case
 * reaches it), and `getUser*` finds it as "get" followed by "user*". A
 * token over SEARCH_TOKEN_MAX bytes is not indexed at all (base64,
 * minified code): a query word that long finds nothing.
 *
 * What sqlite3 without convfs can do: everything but the index. The table
 * `search` names this tokenizer, which only a connection of convfs's has
 * (store_open() registers it), so `sqlite3 store.db` reads every other table,
 * the index's shadow tables (search_data, search_idx, search_docsize,
 * search_config) among them, but no query of `search`, nor of the view
 * search_text (whose function, convfs_text(), is ours too): "no such
 * tokenizer: convfs". Nothing else in the store depends on either.
 */
#include <errno.h>
#include <string.h>

#include "store/search.h"

static bool is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

size_t search_camel_parts(const char *s, size_t n, size_t *starts, size_t max)
{
	size_t k = 0;

	if (n == 0 || max == 0)
		return 0;
	starts[k++] = 0;
	for (size_t i = 0; i < n; i++)
		if (!is_upper(s[i]) && !is_lower(s[i]) && !is_digit(s[i]))
			return 1; /* not an identifier of ASCII letters and digits: one part */
	for (size_t i = 1; i < n && k < max; i++) {
		bool boundary = is_upper(s[i]) &&
				((is_lower(s[i - 1]) || is_digit(s[i - 1])) ||
				 (is_upper(s[i - 1]) && i + 1 < n && is_lower(s[i + 1])));

		if (boundary)
			starts[k++] = i;
	}
	return k;
}

/* ---- the wrapper around unicode61 ---------------------------------------------------- */

struct convfs_tokenizer {
	fts5_tokenizer inner;    /* unicode61's methods */
	Fts5Tokenizer *instance; /* unicode61 made with our arguments */
};

/* One call of xTokenize: where the tokens go, and what they come from. */
struct token_call {
	void *ctx;
	int (*xToken)(void *, int, const char *, int, int, int);
	int flags;
	const char *text;
};

static int on_token(void *p, int tflags, const char *tok, int ntok, int start, int end)
{
	struct token_call *c = p;
	size_t starts[SEARCH_CAMEL_MAX], nparts;
	int rc;

	if (ntok <= 0 || ntok > SEARCH_TOKEN_MAX)
		return SQLITE_OK;
	/* The folded token of an ASCII one has its length, so its parts are at the same offsets. */
	nparts = end - start == ntok ? search_camel_parts(c->text + start, (size_t)ntok, starts, SEARCH_CAMEL_MAX) : 1;
	if (nparts < 2)
		return c->xToken(c->ctx, tflags, tok, ntok, start, end);
	for (size_t i = 0; i < nparts; i++) {
		int from = (int)starts[i], to = i + 1 < nparts ? (int)starts[i + 1] : ntok;

		rc = c->xToken(c->ctx, i == 0 ? tflags : 0, tok + from, to - from, start + from, start + to);
		if (rc == SQLITE_OK && i == 0 && !(c->flags & FTS5_TOKENIZE_QUERY))
			rc = c->xToken(c->ctx, FTS5_TOKEN_COLOCATED, tok, ntok, start, end);
		if (rc != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
}

static int tok_create(void *api_ptr, const char **args, int nargs, Fts5Tokenizer **ret)
{
	static const char *inner_args[] = { "remove_diacritics", "2" };
	fts5_api *api = api_ptr;
	struct convfs_tokenizer *t;
	void *uctx = NULL;
	int rc;

	if (nargs != 0)
		return SQLITE_ERROR; /* the table's declaration is ours: no arguments */
	t = calloc(1, sizeof(*t));
	if (!t)
		return SQLITE_NOMEM;
	rc = api->xFindTokenizer(api, "unicode61", &uctx, &t->inner);
	if (rc == SQLITE_OK)
		rc = t->inner.xCreate(uctx, inner_args, (int)ARRAY_SIZE(inner_args), &t->instance);
	if (rc != SQLITE_OK) {
		free(t);
		return rc;
	}
	*ret = (Fts5Tokenizer *)t;
	return SQLITE_OK;
}

static void tok_delete(Fts5Tokenizer *p)
{
	struct convfs_tokenizer *t = (struct convfs_tokenizer *)p;

	if (!t)
		return;
	t->inner.xDelete(t->instance);
	free(t);
}

static int tok_tokenize(Fts5Tokenizer *p, void *ctx, int flags, const char *text, int n,
			int (*xToken)(void *, int, const char *, int, int, int))
{
	struct convfs_tokenizer *t = (struct convfs_tokenizer *)p;
	struct token_call c = { ctx, xToken, flags, text };

	return t->inner.xTokenize(t->instance, &c, flags, text, n, on_token);
}

/* The FTS5 API of db: NULL if this SQLite has no FTS5. */
static fts5_api *fts5_api_of(sqlite3 *db)
{
	fts5_api *api = NULL;
	sqlite3_stmt *stmt = NULL;

	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &stmt, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_pointer(stmt, 1, (void *)&api, "fts5_api_ptr", NULL);
	sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return api && api->iVersion >= 2 ? api : NULL;
}

int search_tokenizer_register(sqlite3 *db)
{
	fts5_tokenizer tok = { tok_create, tok_delete, tok_tokenize };
	fts5_api *api = fts5_api_of(db);

	if (!api) {
		log_err("cannot register the search tokenizer: this SQLite has no FTS5");
		return -ENOTSUP;
	}
	if (api->xCreateTokenizer(api, "convfs", api, &tok, NULL) != SQLITE_OK || search_snippet_register(api) < 0) {
		log_err("cannot register the search tokenizer: %s", sqlite3_errmsg(db));
		return -ENOMEM;
	}
	return 0;
}

/* ---- tokens for the check --------------------------------------------------------------- */

struct search_tokenizer {
	fts5_tokenizer tok;
	Fts5Tokenizer *inst;
};

int search_tokenizer_open(sqlite3 *db, struct search_tokenizer **ret)
{
	fts5_api *api = fts5_api_of(db);
	struct search_tokenizer *t;
	void *tctx = NULL;
	int rc;

	if (!api)
		return -ENOTSUP;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	rc = api->xFindTokenizer(api, "convfs", &tctx, &t->tok);
	if (rc == SQLITE_OK)
		rc = t->tok.xCreate(tctx, NULL, 0, &t->inst);
	if (rc != SQLITE_OK) {
		free(t);
		return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
	}
	*ret = t;
	return 0;
}

void search_tokenizer_free(struct search_tokenizer *t)
{
	if (!t)
		return;
	t->tok.xDelete(t->inst);
	free(t);
}

struct tokens_call {
	search_token_fn fn;
	void *ctx;
	int r;
};

static int on_check_token(void *p, int tflags, const char *tok, int ntok, int start, int end)
{
	struct tokens_call *c = p;

	c->r = c->fn(c->ctx, tflags & FTS5_TOKEN_COLOCATED, tok, (size_t)ntok);
	return c->r < 0 ? SQLITE_ABORT : SQLITE_OK;
}

int search_tokens(struct search_tokenizer *t, const char *text, size_t n, search_token_fn fn, void *ctx)
{
	struct tokens_call c = { fn, ctx, 0 };
	int rc;

	if (n > INT32_MAX)
		return -EFBIG;
	rc = t->tok.xTokenize(t->inst, &c, FTS5_TOKENIZE_DOCUMENT, text, (int)n, on_check_token);
	if (c.r < 0)
		return c.r;
	return rc == SQLITE_OK ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}
