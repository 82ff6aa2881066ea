/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * search_pieces.c: a message over 1 MiB matched as a whole.
 *
 * Such a message is in the index in pieces of about a MiB (index.c), each
 * a document of its own, and FTS5 matches a query against one document at
 * a time: "a b" would miss the message whose a is in its first MiB and b in
 * its fifth, and "a -b" would find a piece of a message that has b in
 * another. So for a query of two terms or more, or with a word excluded,
 * search.c asks here which large messages match as a whole, and that
 * verdict stands above what their pieces matched:
 *   - each term that must match, over the pieces from the second on
 *     (rowid < 0, which FTS5 seeks to: a store without large messages pays
 *     a lookup a term), with the query's filters; then over the first
 *     pieces (rowid = the row's id) of the messages found;
 *   - the words excluded, over the same pieces;
 *   - a message found for every term and for no excluded word matches. Its
 *     score is the sum of its terms' best scores (bm25 is a sum over the
 *     terms); it is shown by its best piece for the first term. Any other
 *     message with a piece among them does not match.
 * A message found by the query in its first piece alone, with no piece
 * after it that has a term or an excluded word, is not in the verdict:
 * the query's own hit is right. A phrase cut by the start of a piece is
 * not found (a piece starts at a space, so a word is never cut).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store/search.h"
#include "store/search_sql.h"
#include "store/store_internal.h"

/* A piece that matched term `term` (SIZE_MAX: an excluded word). */
struct piece_hit {
	int64_t elem, rowid;
	double score;
	size_t term;
};

struct piece_hits {
	struct piece_hit *v;
	size_t n, alloc;
};

static const char pieces_sql[] = HITS_SQL " AND rowid < 0";
static const char filtered_pieces_sql[] = FILTERED_HITS_SQL " AND s.rowid < 0";
/* The first pieces of the rows in the JSON array ?2 (each id a lookup of its own). */
static const char firsts_sql[] = HITS_SQL " AND rowid IN (SELECT value FROM json_each(?2))";

/*
 * Appends the pieces that match expr to h, as matches of term: those from
 * the second on (q's filters if q), or the first pieces of the rows in the
 * JSON array ids.
 */
static int pass(struct store *st, const char *expr, const struct store_search_query *q, const char *ids, size_t term,
		struct piece_hits *h)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, ids ? firsts_sql : q ? filtered_pieces_sql : pieces_sql, &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, expr, -1, SQLITE_STATIC);
	if (ids)
		sqlite3_bind_text(stmt, 2, ids, -1, SQLITE_STATIC);
	else if (q)
		search_bind_filters(stmt, q);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		int64_t rowid = sqlite3_column_int64(stmt, 0);

		if ((r = ARRAY_GROW(h->v, h->n, h->alloc, 64)) < 0)
			return r;
		h->v[h->n++] = (struct piece_hit){ .elem = search_elem_of(rowid), .rowid = rowid,
						   .score = sqlite3_column_double(stmt, 1), .term = term };
	}
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot search the pieces of large messages");
}

static int by_elem(const void *a, const void *b)
{
	const struct piece_hit *x = a, *y = b;

	return x->elem < y->elem ? -1 : x->elem > y->elem;
}

/* The messages of h[0, n) (sorted by elem), each once, as a JSON array, into ids. */
static int elems_json(const struct piece_hit *v, size_t n, struct sb *ids)
{
	int r = sb_adds(ids, "[");

	for (size_t i = 0; r == 0 && i < n; i++)
		if (i == 0 || v[i].elem != v[i - 1].elem)
			r = sb_addf(ids, "%s%" PRId64, ids->len > 1 ? "," : "", v[i].elem);
	return r < 0 ? r : sb_adds(ids, "]");
}

/* The verdict on the messages of the hits h (sorted by elem), into v. */
static int judge(const struct search_parts *p, const struct piece_hit *h, size_t n, struct search_verdict *v)
{
	_cleanup_free_ double *best = malloc(p->npos * sizeof(*best));
	size_t in_alloc = 0, out_alloc = 0;
	int r;

	if (!best)
		return -ENOMEM;
	for (size_t i = 0, end; i < n; i = end) {
		struct search_whole w = { .elem = h[i].elem };
		size_t found = 0;
		bool excluded = false;

		for (size_t t = 0; t < p->npos; t++)
			best[t] = 1; /* bm25 is never positive: not found */
		for (end = i; end < n && h[end].elem == h[i].elem; end++) {
			const struct piece_hit *x = &h[end];

			if (x->term == SIZE_MAX) {
				excluded = true;
			} else if (best[x->term] > 0 || x->score < best[x->term]) {
				found += best[x->term] > 0;
				best[x->term] = x->score;
				if (x->term == 0)
					w.rowid = x->rowid;
			}
		}
		if (!excluded && found == p->npos) {
			for (size_t t = 0; t < p->npos; t++)
				w.score += best[t];
			if ((r = ARRAY_GROW(v->in, v->nin, in_alloc, 8)) < 0)
				return r;
			v->in[v->nin++] = w;
		} else {
			if ((r = ARRAY_GROW(v->out, v->nout, out_alloc, 8)) < 0)
				return r;
			v->out[v->nout++] = w.elem;
		}
	}
	return 0;
}

int search_pieces_verdict(struct store *st, const struct store_search_query *q, const struct search_parts *p,
			  struct search_verdict *v)
{
	const struct store_search_query *filters = search_filtered(q) ? q : NULL;
	struct piece_hits h = { 0 };
	_cleanup_sb_ struct sb ids = SB_INIT;
	int r = 0;

	*v = (struct search_verdict){ 0 };
	if (p->npos < 2 && p->neg.len == 0)
		return 0; /* one term: a message matches if a piece does */
	for (size_t t = 0; t < p->npos && r == 0; t++)
		r = pass(st, p->pos[t].buf, filters, NULL, t, &h);
	if (r == 0 && p->neg.len)
		r = pass(st, p->neg.buf, NULL, NULL, SIZE_MAX, &h);
	if (r == 0 && h.n) {
		qsort(h.v, h.n, sizeof(*h.v), by_elem);
		r = elems_json(h.v, h.n, &ids);
		for (size_t t = 0; t < p->npos && r == 0; t++)
			r = pass(st, p->pos[t].buf, NULL, ids.buf, t, &h);
		if (r == 0 && p->neg.len)
			r = pass(st, p->neg.buf, NULL, ids.buf, SIZE_MAX, &h);
		if (r == 0) {
			qsort(h.v, h.n, sizeof(*h.v), by_elem);
			r = judge(p, h.v, h.n, v);
		}
	}
	free(h.v);
	if (r < 0)
		search_verdict_release(v);
	return r;
}

void search_verdict_release(struct search_verdict *v)
{
	free(v->in);
	free(v->out);
	*v = (struct search_verdict){ 0 };
}

int search_int64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

bool search_verdict_out(const struct search_verdict *v, int64_t elem)
{
	return v->nout && bsearch(&elem, v->out, v->nout, sizeof(*v->out), search_int64_cmp);
}

const struct search_whole *search_verdict_in(const struct search_verdict *v, int64_t elem)
{
	/* in[] is sorted by elem, its first member */
	return v->nin ? bsearch(&elem, v->in, v->nin, sizeof(*v->in), search_int64_cmp) : NULL;
}
