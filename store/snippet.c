/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * snippet.c: what a hit of the search index shows of its message, in time
 * linear in the message.
 *
 * FTS5's own snippet() scores a window at each instance of the query's
 * phrases by walking all the instances again: a message that holds a word
 * 40,000 times took it 10 s, and the store's lock is held meanwhile. This
 * one slides a window of ntokens tokens over the instances once, takes the
 * first that holds the most of the query's phrases, centres it on them,
 * and tokenizes the text up to its end, once.
 *
 * convfs_snippet(search, open, close, ellipsis, ntokens): the text of the
 * window, from its first token's first byte (the text's, if it is the
 * first token) to its last token's last (the text's, if it is the last), each
 * instance's tokens between open and close (instances that overlap in one
 * pair), ellipsis before it unless it begins the text and after it unless
 * it ends it: what snippet(search, 0, ...) gives, but for the window it
 * picks among ties.
 */
#include <errno.h>
#include <string.h>

#include "store/search.h"

/* The most tokens a snippet shows; and the phrases a query has at most. */
#define WINDOW_MAX 64
#define PHRASES_MAX (2 * SEARCH_QUERY_TERMS)

/* The tokens of the window as the tokenizer gives them: their bytes in the text. */
struct window {
	int start, n;            /* the window's tokens: positions [start, start + n) */
	int pos;                 /* the position of the next token */
	int from[WINDOW_MAX], to[WINDOW_MAX];
	int seen;                /* how many of the window's tokens came */
	bool more;               /* a token after the window */
};

static int on_token(void *ctx, int flags, const char *tok, int len, int from, int to)
{
	struct window *w = ctx;
	int at;

	if (flags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK; /* a part of the token before, at its position */
	at = w->pos++ - w->start;
	if (at >= w->n) {
		w->more = true;
		return SQLITE_DONE; /* the window is complete: the rest of the text is not read */
	}
	if (at >= 0) {
		w->from[at] = from;
		w->to[at] = to;
		w->seen = at + 1;
	}
	return SQLITE_OK;
}

/*
 * The first window of n tokens that holds the most distinct phrases, and
 * of those the most instances, as the position of its first instance (-1:
 * no instance), and its last token's position.
 */
static int best_window(const Fts5ExtensionApi *api, Fts5Context *fts, int n, int *ret_last)
{
	int count[PHRASES_MAX] = { 0 };
	int ninst = 0, best = -1, distinct = 0, right = 0;
	int64_t best_score = 0;

	if (api->xInstCount(fts, &ninst) != SQLITE_OK)
		return -1;
	*ret_last = -1;
	for (int left = 0; left < ninst; left++) {
		int phrase, col, off, p2, c2, o2;

		if (api->xInst(fts, left, &phrase, &col, &off) != SQLITE_OK)
			break;
		/* the instances that begin in [off, off + n) */
		while (right < ninst && api->xInst(fts, right, &p2, &c2, &o2) == SQLITE_OK && o2 < off + n) {
			if (p2 >= 0 && p2 < PHRASES_MAX && count[p2]++ == 0)
				distinct++;
			right++;
		}
		/* the most phrases, then the most instances of them */
		if ((int64_t)distinct * (ninst + 1) + (right - left) > best_score) {
			best_score = (int64_t)distinct * (ninst + 1) + (right - left);
			best = off;
			if (api->xInst(fts, right - 1, &p2, &c2, &o2) == SQLITE_OK)
				*ret_last = o2 + api->xPhraseSize(fts, p2) - 1;
		}
		if (phrase >= 0 && phrase < PHRASES_MAX && --count[phrase] == 0)
			distinct--;
	}
	return best;
}

/* Marks the instances in the window: opens[j] and closes[j] for its token j. */
static void window_marks(const Fts5ExtensionApi *api, Fts5Context *fts, const struct window *w, bool *opens,
			 bool *closes)
{
	int ninst = 0, run_from = -1, run_to = -1;

	if (api->xInstCount(fts, &ninst) != SQLITE_OK)
		return;
	for (int i = 0; i <= ninst; i++) {
		int phrase, col, off = 0, last = 0;

		if (i < ninst) {
			if (api->xInst(fts, i, &phrase, &col, &off) != SQLITE_OK)
				return;
			last = off + api->xPhraseSize(fts, phrase) - 1;
			if (last < w->start)
				continue;
			if (run_from >= 0 && off <= run_to) { /* overlaps the run: one pair of marks */
				if (last > run_to)
					run_to = last;
				continue;
			}
		}
		if (run_from >= 0) {
			int a = run_from - w->start, b = run_to - w->start;

			if (a < w->n && b >= 0) {
				opens[a < 0 ? 0 : a] = true;
				closes[b >= w->n ? w->n - 1 : b] = true;
			}
		}
		if (i == ninst || off >= w->start + w->n)
			return;
		run_from = off;
		run_to = last;
	}
}

static void snippet(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int argc,
		    sqlite3_value **argv)
{
	_cleanup_sb_ struct sb out = SB_INIT;
	const char *open, *close, *ellipsis, *text;
	bool opens[WINDOW_MAX] = { false }, closes[WINDOW_MAX] = { false };
	struct window w = { 0 };
	int n = 0, ntokens = 0, first, last, r = 0, rc;

	if (argc != 4) {
		sqlite3_result_error(ctx, "convfs_snippet(): open, close, ellipsis and a number of tokens", -1);
		return;
	}
	open = (const char *)sqlite3_value_text(argv[0]);
	close = (const char *)sqlite3_value_text(argv[1]);
	ellipsis = (const char *)sqlite3_value_text(argv[2]);
	w.n = sqlite3_value_int(argv[3]);
	if (w.n < 1 || w.n > WINDOW_MAX)
		w.n = WINDOW_MAX;
	rc = api->xColumnText(fts, 0, &text, &n);
	if (rc == SQLITE_OK)
		rc = api->xColumnSize(fts, 0, &ntokens);
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	/* The window: centred on the instances it holds, and inside the text. */
	first = best_window(api, fts, w.n, &last);
	if (first >= 0 && last >= first && last - first + 1 < w.n)
		first -= (w.n - (last - first + 1)) / 2;
	if (first > ntokens - w.n)
		first = ntokens - w.n;
	w.start = first > 0 ? first : 0;
	rc = api->xTokenize(fts, text ? text : "", n, &w, on_token);
	if (rc != SQLITE_OK && rc != SQLITE_DONE) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	w.n = w.seen;
	window_marks(api, fts, &w, opens, closes);
	/* What comes before the first token and after the last is the text's, where the window begins or ends it. */
	if (w.start > 0)
		r = sb_adds(&out, ellipsis ? ellipsis : "");
	for (int j = 0; j < w.n && r == 0; j++) {
		if (j > 0 || w.start == 0)
			r = sb_add(&out, text + (j ? w.to[j - 1] : 0), (size_t)(w.from[j] - (j ? w.to[j - 1] : 0)));
		if (r == 0 && opens[j])
			r = sb_adds(&out, open ? open : "");
		if (r == 0)
			r = sb_add(&out, text + w.from[j], (size_t)(w.to[j] - w.from[j]));
		if (r == 0 && closes[j])
			r = sb_adds(&out, close ? close : "");
	}
	if (r == 0 && w.more)
		r = sb_adds(&out, ellipsis ? ellipsis : "");
	else if (r == 0 && w.n > 0)
		r = sb_add(&out, text + w.to[w.n - 1], (size_t)(n - w.to[w.n - 1]));
	if (r < 0) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	sqlite3_result_text(ctx, sb_str(&out), (int)out.len, SQLITE_TRANSIENT);
}

int search_snippet_register(fts5_api *api)
{
	return api->xCreateFunction(api, "convfs_snippet", NULL, snippet, NULL) == SQLITE_OK ? 0 : -ENOMEM;
}
