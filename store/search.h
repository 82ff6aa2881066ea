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
 *                  its check; search.c the ranked query (to come).
 *
 * The pure parts (text, tokens, queries) need no store, so that the unit
 * tests and the fuzz target call them as they are.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/util.h"

/*
 * How much of one element the index reads: its first bytes, this many. A
 * message over 1 MiB (a pasted log, a file read whole) is kept a piece at a
 * time and never held whole (src.c); its text past this is not found.
 */
#define SEARCH_ELEM_BYTES ((size_t)1 << 20)

/* A token longer than this (in bytes, case folded) is not indexed: base64, minified blobs. */
#define SEARCH_TOKEN_MAX 64

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

/* Registers the tokenizer "convfs" on db (every connection that reads or writes the index). */
int search_tokenizer_register(sqlite3 *db);

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

#endif
