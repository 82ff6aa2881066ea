/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * search.c: the query of the search index (store_search.h).
 *
 * Two steps. First the hits, ranked: the FTS5 match (with filters, joined
 * with each message's row, doc, task and workspace), its bm25 score
 * (FTS5's rank), sorted here, the newest first among equal scores; only
 * the ids and scores are kept (32 bytes a hit, whatever the messages'
 * size), and the times of those that tie. Then, a batch of hits at a
 * time, what a hit shows: its snippet (convfs_snippet(), snippet.c, which
 * reads the text through the view search_text), where it is (doc, position, task,
 * workspace) and the task's title; the callback runs on those with the
 * store's lock let go. A batch is read in one more walk of the match that
 * reads the batch's hits alone, unless the match has many more hits than
 * the batch (a small limit of a common word): then each hit is looked up
 * by its id, for which FTS5 evaluates the match again (about 50 us a hit,
 * most of the time of a query of a few hundred hits, against well under 1
 * us a hit walked). So a query of a limit computes the snippets of those
 * hits alone, and a callback may call the store.
 *
 * A message over 1 MiB is in the index in pieces, each matched alone: for
 * a query of two terms or more, or with a word excluded, such messages are
 * judged whole (search_pieces.c), and that verdict stands above their
 * pieces' hits, in the hits and in the tasks found alike.
 *
 * A message's time is its "ts" (ms) where it has one, else the time of the
 * revision that made its row; the title of a task is its history item's
 * "task", of a CLI 3.x session its manifest's metadata.title (else its
 * prompt).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/search.h"
#include "store/search_sql.h"
#include "store/store_internal.h"
#include "store/store_search.h"
#include "store/util.h"

/* Hits whose details are read under one hold of the lock, before their callbacks. */
#define HITS_AT_ONCE 256
/*
 * The details of a batch of hits are read in one pass of the match (every
 * hit walked, those of the batch read) when the hits are fewer than this
 * many times the batch; else one hit at a time (FTS5 evaluates the match
 * again for each, which costs a hit about 50 us, a walked hit well under 1).
 */
#define PASS_RATIO 32
#define TITLES_KEPT 16

static const char time_sql[] =
	"SELECT " TIME_OF_E " FROM elems e LEFT JOIN revisions r ON r.id = e.rev_from WHERE e.id = ?1";

#define DETAIL_COLUMNS                                                                                    \
	"SELECT convfs_snippet(search, ?2, ?3, '…', ?4), e.seq, d.path, d.task_id, w.key, w.path, " ROLE_OF_E ", " \
	"  convfs_stream(d.path), " TIME_OF_E ", s.rowid FROM search s " JOINS                                 \
	"LEFT JOIN revisions r ON r.id = e.rev_from "

static const char detail_sql[] = DETAIL_COLUMNS "WHERE search MATCH ?1 AND s.rowid = ?5";

/*
 * The same for the hits whose ids are in the JSON array ?5, in one walk of
 * the match: the '+' keeps the IN from being given to FTS5 as a lookup of
 * each id, which would evaluate the match once an id again; as a filter it
 * is tested on each hit before the joins and the snippet, which only the
 * batch's hits cost. (A rowid range beside it, for FTS5 to skip the rest,
 * made SQLite 3.40's snippet() give the open mark alone.)
 */
static const char details_sql[] =
	DETAIL_COLUMNS "WHERE search MATCH ?1 AND +s.rowid IN (SELECT value FROM json_each(?5))";

static const char task_title_sql[] =
	"SELECT CASE WHEN json_valid(e.json) THEN json_extract(e.json, '$.task') END FROM elems e "
	"JOIN docs d ON d.id = e.doc_id WHERE d.path = 'state/taskHistory.json' AND e.key = ?1 AND e.rev_to IS NULL "
	"ORDER BY +e.seq LIMIT 1";

static const char session_title_sql[] =
	"SELECT CASE WHEN json_valid(b.data) THEN coalesce(json_extract(b.data, '$.metadata.title'), "
	"  json_extract(b.data, '$.prompt')) END FROM blobs b JOIN docs d ON d.id = b.doc_id "
	"WHERE d.path = ?1 AND d.present AND b.rev <= d.rev ORDER BY b.rev DESC LIMIT 1";

int store_search_query_check(const char *text, char *err, size_t errlen)
{
	_cleanup_sb_ struct sb expr = SB_INIT;

	return search_query_parse(text, &expr, err, errlen);
}

struct ranked {
	int64_t id, time_ms;
	double score;
	bool across; /* a large message that matches across its pieces, shown by a piece that has a term */
};

/* A hit with the strings it owns. */
struct hit {
	struct store_search_hit h;
	char *task, *ws_key, *ws_path, *doc, *title, *snippet;
	const char *role, *stream; /* static strings */
};

static void hit_release(struct hit *h)
{
	free(h->task);
	free(h->ws_key);
	free(h->ws_path);
	free(h->doc);
	free(h->title);
	free(h->snippet);
	*h = (struct hit){ 0 };
}

/*
 * Column col as a string of ours (NULL stays NULL) on one line: control
 * characters made spaces; but for a snippet only its line breaks (the
 * pieces of a message's text: search_text() has made every other control
 * character a space), since its marks are the caller's.
 */
static int column_line(sqlite3_stmt *stmt, int col, bool snippet, char **ret)
{
	const char *t = (const char *)sqlite3_column_text(stmt, col);
	char *p;

	*ret = NULL;
	if (!t)
		return sqlite3_errcode(sqlite3_db_handle(stmt)) == SQLITE_NOMEM ? -ENOMEM : 0;
	if (!(p = strdup(t)))
		return -ENOMEM;
	for (char *c = p; *c; c++)
		if (snippet ? *c == '\n' : (unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	for (size_t n = strlen(p); n > 0 && p[n - 1] == ' ';)
		p[--n] = '\0';
	*ret = p;
	return 0;
}

/* The titles of the last tasks looked up, round the clock. */
struct titles {
	char *task[TITLES_KEPT], *title[TITLES_KEPT];
	size_t next;
};

static void titles_release(struct titles *t)
{
	for (size_t i = 0; i < TITLES_KEPT; i++) {
		free(t->task[i]);
		free(t->title[i]);
	}
}

/* The title of task (*ret: a copy, "" for none). */
static int title_of(struct store *st, struct titles *t, const char *task, char **ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	char manifest[200], *title = NULL;
	bool session = !store_is_task_id(task);
	size_t k;
	int r;

	for (size_t i = 0; i < TITLES_KEPT; i++)
		if (t->task[i] && strcmp(t->task[i], task) == 0)
			return (*ret = strdup(t->title[i])) ? 0 : -ENOMEM;
	if (session)
		snprintf(manifest, sizeof(manifest), "sessions/%s/%s.json", task, task);
	r = store_row_args(st, session ? session_title_sql : task_title_sql, STORE_TEXTS(session ? manifest : task),
			   NULL, 0, "cannot read a task's title", &stmt);
	if (r == 0)
		r = column_line(stmt, 0, false, &title);
	if (r == -ENOENT)
		r = 0;
	if (r < 0)
		return r;
	if (!title && !(title = strdup("")))
		return -ENOMEM;
	k = t->next++ % TITLES_KEPT;
	free(t->task[k]);
	free(t->title[k]);
	t->task[k] = strdup(task);
	t->title[k] = strdup(title);
	if (!t->task[k] || !t->title[k]) {
		free(t->task[k]);
		free(t->title[k]);
		t->task[k] = t->title[k] = NULL;
	}
	*ret = title;
	return 0;
}

static int by_score(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
}

static int by_time(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->time_ms != y->time_ms)
		return x->time_ms < y->time_ms ? 1 : -1;
	return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
}

/*
 * The hits v[0, n) sorted by score: those of equal score among the first
 * `out` are put newest first. Times are read for those alone, so that a
 * word in most messages, shown by its best few, costs its scores, not a
 * row and a revision looked up for each of its hits. Store lock held.
 */
static int order_ties(struct store *st, struct ranked *v, size_t n, size_t out)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (n > 1) /* v is NULL with no hit, which qsort() may not be given */
		qsort(v, n, sizeof(*v), by_score);
	for (size_t a = 0, b; a < out; a = b) {
		for (b = a + 1; b < n && v[b].score == v[a].score; b++)
			;
		if (b - a < 2)
			continue;
		if (!stmt && (r = store_prepare(st, time_sql, &stmt)) < 0)
			return r;
		for (size_t i = a; i < b; i++) {
			sqlite3_reset(stmt);
			sqlite3_bind_int64(stmt, 1, search_elem_of(v[i].id));
			if ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
				v[i].time_ms = sqlite3_column_int64(stmt, 0);
			else if (rc != SQLITE_DONE)
				return store_fail(st, rc, "cannot read the time of a hit of the search index");
		}
		qsort(v + a, b - a, sizeof(*v), by_time);
	}
	return 0;
}

static void swap_ranked(struct ranked *a, struct ranked *b)
{
	struct ranked t = *a;

	*a = *b;
	*b = t;
}

/*
 * Moves the k best hits of v[0, n) (the least scores; 0 < k < n), and all
 * those that tie with the k-th best, to the front of v, in no order: how
 * many that is. A quickselect, in time linear in n on average: a word in
 * most messages shown by its best few sorts those, not its every hit (a
 * sort of 273,000 hits took 45 ms). Its partition is three-way, so that a
 * run of equal scores (the same message in many tasks) is taken at once.
 */
static size_t select_best(struct ranked *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n; /* the k-th best is in v[lo, hi): all before it less, all after it more */

	while (hi - lo > 1) {
		double pivot = v[lo + (hi - lo) / 2].score;
		size_t lt = lo, i = lo, gt = hi;

		while (i < gt) {
			if (v[i].score < pivot)
				swap_ranked(&v[lt++], &v[i++]);
			else if (v[i].score > pivot)
				swap_ranked(&v[i], &v[--gt]);
			else
				i++;
		}
		if (k - 1 < lt) {
			hi = lt;
		} else if (k - 1 >= gt) {
			lo = gt;
		} else {
			hi = gt; /* the k-th best ties with the pivot, as all of v[lt, gt) do */
			break;
		}
	}
	return hi;
}

/*
 * A message over 1 MiB is in the index in pieces (index.c), each a hit of
 * its own: of the hits of one message only its best stays, so that it is
 * one hit, as any message is. In place; how many hits are left.
 */
static int one_hit_a_message(struct ranked *v, size_t *n)
{
	_cleanup_free_ int64_t *big = NULL;
	_cleanup_free_ size_t *best = NULL;
	size_t nbig = 0, alloc = 0, out = 0;
	int r;

	for (size_t i = 0; i < *n; i++)
		if (v[i].id < 0) {
			if ((r = ARRAY_GROW(big, nbig, alloc, 16)) < 0)
				return r;
			big[nbig++] = search_elem_of(v[i].id);
		}
	if (nbig == 0)
		return 0;
	qsort(big, nbig, sizeof(*big), search_int64_cmp);
	for (size_t i = 1, u = 1; i <= nbig; i++) /* each message once */
		if (i == nbig)
			nbig = u;
		else if (big[i] != big[u - 1])
			big[u++] = big[i];
	if (!(best = malloc(nbig * sizeof(*best))))
		return -ENOMEM;
	for (size_t j = 0; j < nbig; j++)
		best[j] = SIZE_MAX;
	for (size_t i = 0; i < *n; i++) {
		int64_t e = search_elem_of(v[i].id), *at = bsearch(&e, big, nbig, sizeof(*big), search_int64_cmp);

		if (at && (best[at - big] == SIZE_MAX || v[i].score < v[best[at - big]].score))
			best[at - big] = i;
	}
	for (size_t i = 0; i < *n; i++) {
		int64_t e = search_elem_of(v[i].id), *at = bsearch(&e, big, nbig, sizeof(*big), search_int64_cmp);

		if (!at || best[at - big] == i)
			v[out++] = v[i];
	}
	*n = out;
	return 0;
}

/*
 * Puts the verdict on the large messages (search_pieces.c) above their
 * pieces' hits in (*v)[0, *n): drops those of a message that does not match
 * as a whole, and adds one for a message that matches across its pieces
 * alone. Store lock held.
 */
static int whole_messages(struct store *st, const struct store_search_query *q, const struct search_parts *p,
			  struct ranked **v, size_t *n, size_t *alloc)
{
	_cleanup_free_ bool *hit = NULL;
	struct search_verdict verdict;
	size_t out = 0;
	int r = search_pieces_verdict(st, q, p, &verdict);

	if (r < 0 || (verdict.nin == 0 && verdict.nout == 0))
		return r;
	if (verdict.nin && !(hit = calloc(verdict.nin, sizeof(*hit))))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < *n; i++) {
		int64_t e = search_elem_of((*v)[i].id);
		const struct search_whole *w = search_verdict_in(&verdict, e);

		if (w)
			hit[w - verdict.in] = true;
		else if (search_verdict_out(&verdict, e))
			continue;
		(*v)[out++] = (*v)[i];
	}
	if (r == 0)
		*n = out;
	for (size_t j = 0; r == 0 && j < verdict.nin; j++)
		if (!hit[j] && (r = ARRAY_GROW(*v, *n, *alloc, 256)) == 0)
			(*v)[(*n)++] = (struct ranked){ .id = verdict.in[j].rowid, .score = verdict.in[j].score,
							 .across = true };
	search_verdict_release(&verdict);
	return r;
}

/*
 * The hits of q (expr, and in parts p), ranked, the best first: *ret_v
 * (free()), *ret_n of them (q's limit at most), of *ret_all in all. Store
 * lock held.
 */
static int rank(struct store *st, const struct store_search_query *q, const char *expr, const struct search_parts *p,
		struct ranked **ret_v, size_t *ret_n, size_t *ret_all)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_free_ struct ranked *v = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	r = store_prepare(st, search_filtered(q) ? FILTERED_HITS_SQL : HITS_SQL, &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_text(stmt, 1, expr, -1, SQLITE_STATIC);
	search_bind_filters(stmt, q);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if ((r = ARRAY_GROW(v, n, alloc, 256)) < 0)
			return r;
		v[n++] = (struct ranked){ .id = sqlite3_column_int64(stmt, 0), .score = sqlite3_column_double(stmt, 1) };
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot search the index");
	store_stmt_release(TAKE_PTR(stmt));
	if ((r = whole_messages(st, q, p, &v, &n, &alloc)) < 0 || (r = one_hit_a_message(v, &n)) < 0)
		return r;
	if (q->limit > 0 && (size_t)q->limit < n)
		r = order_ties(st, v, select_best(v, n, (size_t)q->limit), (size_t)q->limit);
	else
		r = order_ties(st, v, n, n);
	if (r < 0)
		return r;
	*ret_v = TAKE_PTR(v);
	*ret_n = q->limit > 0 && (size_t)q->limit < n ? (size_t)q->limit : n;
	*ret_all = n;
	return 0;
}

/* Column col if it is a or b, as that string (static); else NULL. */
static const char *static_word(sqlite3_stmt *stmt, int col, const char *a, const char *b)
{
	const char *t = (const char *)sqlite3_column_text(stmt, col);

	return !t ? NULL : strcmp(t, a) == 0 ? a : strcmp(t, b) == 0 ? b : NULL;
}

/* Binds what detail_sql and details_sql share: the match and the snippet's marks and length. */
static void bind_detail(sqlite3_stmt *stmt, const struct store_search_query *q, const char *expr)
{
	sqlite3_bind_text(stmt, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, q->mark_open ? q->mark_open : "[", -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 3, q->mark_close ? q->mark_close : "]", -1, SQLITE_STATIC);
	sqlite3_bind_int(stmt, 4, q->snippet_tokens > 0 && q->snippet_tokens <= 64 ? q->snippet_tokens : 12);
}

/* What the row of DETAIL_COLUMNS at stmt shows of hit `in`, into *out (released by the caller, whatever the result). */
static int detail_row(sqlite3_stmt *stmt, const struct ranked *in, struct hit *out)
{
	int r;

	*out = (struct hit){ .h = { .score = in->score, .elem_id = in->id, .time_ms = sqlite3_column_int64(stmt, 8),
				    .seq = sqlite3_column_int64(stmt, 1) } };
	if ((r = column_line(stmt, 0, true, &out->snippet)) < 0 || (r = column_line(stmt, 2, false, &out->doc)) < 0 ||
	    (r = column_line(stmt, 3, false, &out->task)) < 0 || (r = column_line(stmt, 4, false, &out->ws_key)) < 0 ||
	    (r = column_line(stmt, 5, false, &out->ws_path)) < 0)
		return r;
	out->role = static_word(stmt, 6, "user", "assistant");
	out->stream = static_word(stmt, 7, "ui", "api");
	if (!out->task || !out->doc || !out->snippet)
		return -EIO; /* a message of no task: its doc names none */
	return 0;
}

/* What hit `in` shows, into *out (released by the caller, whatever the result); -ENOENT: gone. Store lock held. */
static int detail(struct store *st, const struct store_search_query *q, const char *expr, const struct ranked *in,
		  struct hit *out)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare(st, detail_sql, &stmt);
	if (r < 0)
		return r;
	bind_detail(stmt, q, expr);
	sqlite3_bind_int64(stmt, 5, in->id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return -ENOENT; /* gone since it was ranked (another connection's commit) */
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot read a hit of the search index");
	return detail_row(stmt, in, out);
}

struct by_id {
	int64_t id;
	size_t at; /* its place in the batch */
};

static int by_id_cmp(const void *a, const void *b)
{
	const struct by_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * What hits v[0, n) show, into hits[] at the same places, in one walk of
 * the match (details_sql); a hit gone since it was ranked stays zeroed (no
 * snippet). Store lock held; hits[] released by the caller, whatever the
 * result.
 */
static int details(struct store *st, const struct store_search_query *q, const char *expr, const struct ranked *v,
		   size_t n, struct hit *hits)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_free_ struct by_id *ids = calloc(n, sizeof(*ids));
	_cleanup_sb_ struct sb list = SB_INIT;
	int r = 0, rc;

	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ids[i] = (struct by_id){ v[i].id, i };
	qsort(ids, n, sizeof(*ids), by_id_cmp);
	for (size_t i = 0; i < n && r == 0; i++)
		r = sb_addf(&list, "%c%" PRId64, i ? ',' : '[', ids[i].id);
	if (r < 0 || (r = sb_adds(&list, "]")) < 0 || (r = store_prepare(st, details_sql, &stmt)) < 0)
		return r;
	bind_detail(stmt, q, expr);
	sqlite3_bind_text(stmt, 5, list.buf, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct by_id key = { .id = sqlite3_column_int64(stmt, 9) };
		const struct by_id *at = bsearch(&key, ids, n, sizeof(*ids), by_id_cmp);

		if (at && !hits[at->at].snippet && (r = detail_row(stmt, &v[at->at], &hits[at->at])) < 0)
			return r;
	}
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot read the hits of the search index");
}

/*
 * Reads the details of v[0, n) into hits (with the lock), then calls fn on
 * each (without). all: how many hits the query has (the walk of details()
 * costs each of them).
 */
static int deliver(struct store *st, const struct store_search_query *q, const char *expr,
		   const struct search_parts *p, struct titles *titles, const struct ranked *v, size_t n, size_t all,
		   store_search_fn fn, void *ctx, int *ret_count)
{
	_cleanup_free_ struct hit *hits = calloc(n, sizeof(*hits));
	bool walk = n * PASS_RATIO >= all;
	int r = 0;

	if (!hits)
		return -ENOMEM;
	{
		STORE_LOCK(st);

		if (walk)
			r = details(st, q, expr, v, n, hits);
		/* a message found across its pieces: none matches the query, so its snippet is of any term */
		for (size_t i = 0; i < n && r == 0; i++)
			if ((!walk || v[i].across) && !hits[i].snippet &&
			    (r = detail(st, q, v[i].across ? p->any.buf : expr, &v[i], &hits[i])) == -ENOENT) {
				hit_release(&hits[i]);
				r = 0;
			}
		for (size_t i = 0; i < n && r == 0; i++)
			if (hits[i].snippet)
				r = title_of(st, titles, hits[i].task, &hits[i].title);
	}
	for (size_t i = 0; i < n; i++) {
		struct hit *h = &hits[i];

		if (!h->snippet)
			continue; /* gone since it was ranked */
		h->h.task = h->task;
		h->h.ws_key = h->ws_key;
		h->h.ws_path = h->ws_key ? h->ws_path : NULL;
		h->h.doc = h->doc;
		h->h.title = h->title;
		h->h.snippet = h->snippet;
		h->h.role = h->role;
		h->h.stream = h->stream;
		if (r == 0 && (r = fn(ctx, &h->h)) == 0)
			++*ret_count;
	}
	for (size_t i = 0; i < n; i++)
		hit_release(&hits[i]);
	return r;
}

/*
 * q's text as FTS5's expression, into expr, and in parts, into *p (released
 * by the caller, whatever the result): 0, -EINVAL for a query that is not
 * one, or -ENOMEM.
 */
static int query_expr(const struct store_search_query *q, struct sb *expr, struct search_parts *p)
{
	char err[160];
	int r;

	if ((r = search_query_parse(q->text, expr, err, sizeof(err))) < 0 ||
	    (r = search_query_split(q->text, p, err, sizeof(err))) < 0)
		return r;
	return expr->buf && p->any.buf ? 0 : -ENOMEM;
}

static void search_parts_releasep(struct search_parts *p)
{
	search_parts_release(p);
}
#define _cleanup_parts_ _cleanup_(search_parts_releasep)

int store_search(struct store *st, const struct store_search_query *q, store_search_fn fn, void *ctx)
{
	_cleanup_sb_ struct sb expr = SB_INIT;
	_cleanup_parts_ struct search_parts p = { .npos = 0 };
	_cleanup_free_ struct ranked *v = NULL;
	struct titles titles = { 0 };
	size_t n = 0, all = 0;
	int r, count = 0;

	if ((r = query_expr(q, &expr, &p)) < 0)
		return r;
	{
		STORE_LOCK(st);

		if (!st->search)
			return -ENOTSUP;
		if ((r = rank(st, q, expr.buf, &p, &v, &n, &all)) < 0)
			return r;
	}
	r = 0;
	for (size_t i = 0; i < n && r == 0; i += HITS_AT_ONCE)
		r = deliver(st, q, expr.buf, &p, &titles, v + i, n - i < HITS_AT_ONCE ? n - i : HITS_AT_ONCE, all, fn, ctx,
			    &count);
	titles_release(&titles);
	return r < 0 ? r : count;
}

/* ---- the tasks found ---------------------------------------------------------------------------- */

/*
 * A task's best score (bm25: the least) and its newest hit's time, to order
 * the tasks as their hits are; but not of the large messages in the JSON
 * array ?2, which do not match as a whole (search_pieces.c).
 */
static const char tasks_sql[] =
	"SELECT d.task_id, w.key, w.path, min(s.rank) AS best, max(coalesce(e.ts, 0)) AS latest FROM search s " JOINS
	"WHERE search MATCH ?1 AND d.task_id IS NOT NULL "
	"  AND (?2 IS NULL OR e.id NOT IN (SELECT value FROM json_each(?2))) "
	"GROUP BY d.task_id ORDER BY best, latest DESC, d.task_id";

/* The task of message ?1, in tasks_sql's columns (its score is the caller's). */
static const char task_of_sql[] =
	"SELECT d.task_id, w.key, w.path, NULL, coalesce(e.ts, 0) FROM elems e JOIN docs d ON d.id = e.doc_id "
	"LEFT JOIN tasks k ON k.id = d.task_id LEFT JOIN workspaces w ON w.id = k.workspace_id "
	"WHERE e.id = ?1 AND d.task_id IS NOT NULL";

struct found_task {
	char *task, *ws_key, *ws_path;
	double best;
	int64_t latest;
};

static void found_strings_release(struct found_task *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].task);
		free(v[i].ws_key);
		free(v[i].ws_path);
	}
}

static void found_release(struct found_task *v, size_t n)
{
	found_strings_release(v, n);
	free(v);
}

struct found {
	struct found_task *v;
	size_t n, alloc;
};

/* Appends the task of stmt's row, in tasks_sql's columns, to f. */
static int found_add(sqlite3_stmt *stmt, struct found *f)
{
	struct found_task *t;
	int r;

	if ((r = ARRAY_GROW(f->v, f->n, f->alloc, 64)) < 0)
		return r;
	t = &f->v[f->n++];
	*t = (struct found_task){ .best = sqlite3_column_double(stmt, 3), .latest = sqlite3_column_int64(stmt, 4) };
	if ((r = column_line(stmt, 0, false, &t->task)) < 0 || (r = column_line(stmt, 1, false, &t->ws_key)) < 0)
		return r;
	return column_line(stmt, 2, false, &t->ws_path);
}

static int by_rank(const void *a, const void *b)
{
	const struct found_task *x = a, *y = b;

	if (x->best != y->best)
		return x->best < y->best ? -1 : 1;
	if (x->latest != y->latest)
		return x->latest < y->latest ? 1 : -1;
	return strcmp(x->task, y->task);
}

/* Counts whole message w in the tasks found f: its task's score and time, or its task added. */
static int found_whole(struct store *st, const struct search_whole *w, struct found *f)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	const char *task;
	int64_t latest;
	int r = store_row_args(st, task_of_sql, NULL, 0, STORE_INTS(w->elem), "cannot read the task of a hit", &stmt);

	if (r == -ENOENT)
		return 0; /* a message of no task */
	if (r < 0)
		return r;
	task = (const char *)sqlite3_column_text(stmt, 0);
	latest = sqlite3_column_int64(stmt, 4);
	for (size_t i = 0; task && i < f->n; i++)
		if (f->v[i].task && strcmp(f->v[i].task, task) == 0) {
			f->v[i].best = w->score < f->v[i].best ? w->score : f->v[i].best;
			f->v[i].latest = latest > f->v[i].latest ? latest : f->v[i].latest;
			return 0;
		}
	if ((r = found_add(stmt, f)) < 0)
		return r;
	f->v[f->n - 1].best = w->score;
	return 0;
}

/* The verdict's messages that do not match, as a JSON array for tasks_sql's ?2, into out (empty: none). */
static int verdict_out_json(const struct search_verdict *v, struct sb *out)
{
	int r = 0;

	for (size_t i = 0; i < v->nout && r == 0; i++)
		r = sb_addf(out, "%c%" PRId64, i ? ',' : '[', v->out[i]);
	return r < 0 || v->nout == 0 ? r : sb_adds(out, "]");
}

/* Reads the tasks of expr into f, as tasks_sql ranks them; limit of them if limit > 0. */
static int tasks_of_query(struct store *st, const char *expr, const struct search_verdict *verdict, int64_t limit,
			  struct found *f)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_sb_ struct sb out = SB_INIT;
	int r, rc = SQLITE_DONE;

	if ((r = verdict_out_json(verdict, &out)) < 0 || (r = store_prepare(st, tasks_sql, &stmt)) < 0)
		return r;
	sqlite3_bind_text(stmt, 1, expr, -1, SQLITE_STATIC);
	if (out.len)
		sqlite3_bind_text(stmt, 2, out.buf, -1, SQLITE_STATIC);
	while ((limit <= 0 || (int64_t)f->n < limit) && (rc = sqlite3_step(stmt)) == SQLITE_ROW)
		if ((r = found_add(stmt, f)) < 0)
			return r;
	if ((limit <= 0 || (int64_t)f->n < limit) && rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot search the index for tasks");
	return 0;
}

/* The tasks of expr (in parts p), ranked, into *ret_v (found_release()). Store lock held. */
static int tasks_ranked(struct store *st, const char *expr, const struct search_parts *p, int64_t limit,
			struct found_task **ret_v, size_t *ret_n)
{
	const struct store_search_query all = { .text = "" }; /* no filters */
	struct search_verdict verdict;
	struct found f = { 0 };
	int r;

	if ((r = search_pieces_verdict(st, &all, p, &verdict)) < 0)
		return r;
	/* the whole messages' tasks can change the ranks: then every task is read */
	r = tasks_of_query(st, expr, &verdict, verdict.nin ? 0 : limit, &f);
	for (size_t i = 0; i < verdict.nin && r == 0; i++)
		r = found_whole(st, &verdict.in[i], &f);
	if (r == 0 && verdict.nin) {
		qsort(f.v, f.n, sizeof(*f.v), by_rank);
		if (limit > 0 && (int64_t)f.n > limit) {
			found_strings_release(f.v + limit, f.n - (size_t)limit);
			f.n = (size_t)limit;
		}
	}
	search_verdict_release(&verdict);
	if (r < 0) {
		found_release(f.v, f.n);
		return r;
	}
	*ret_v = f.v;
	*ret_n = f.n;
	return 0;
}

int store_search_tasks(struct store *st, const struct store_search_query *q, store_search_task_fn fn, void *ctx)
{
	_cleanup_sb_ struct sb expr = SB_INIT;
	_cleanup_parts_ struct search_parts p = { .npos = 0 };
	struct found_task *v = NULL;
	size_t n = 0;
	int r = 0;

	if ((r = query_expr(q, &expr, &p)) < 0)
		return r;
	{
		STORE_LOCK(st);

		if (!st->search)
			return -ENOTSUP;
		if ((r = tasks_ranked(st, expr.buf, &p, q->limit, &v, &n)) < 0)
			return r;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		struct store_search_task t = { .rank = (int64_t)i + 1, .task = v[i].task, .ws_key = v[i].ws_key,
					       .ws_path = v[i].ws_key ? v[i].ws_path : NULL };

		r = fn(ctx, &t);
	}
	found_release(v, n);
	return r < 0 ? r : (int)n;
}

int store_search_last(struct store *st, int64_t *ret_ns)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT time_ns FROM revisions ORDER BY id DESC LIMIT 1", NULL, 0, NULL, 0,
			       "cannot read the time of the store's last change", &stmt);

	*ret_ns = r == 0 ? sqlite3_column_int64(stmt, 0) : 0;
	return r == -ENOENT ? 0 : r;
}
