/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * array.c: commits of array docs, merged commits, and appends.
 *
 * An array doc (taskHistory.json, api_conversation_history.json,
 * ui_messages.json, a session's messages) is kept one element a row in
 * `elems`, each with its exact bytes, the bytes before it ("pre": the comma
 * and any white space) and its byte offset in the rendered file. The file is
 * head + (pre + json)... + tail, so any byte range is found with one indexed
 * lookup on (doc_id, off) and nothing is ever rendered whole: a 20 MB
 * conversation streams.
 *
 * Rows are never rewritten in place. A commit keeps the longest prefix of
 * elements whose bytes are unchanged, closes the rest (rev_to = this
 * revision) and inserts the new tail with rev_from = this revision. A reader
 * that took a snapshot at revision R sees exactly the rows with
 * rev_from <= R < rev_to, so it reads the old or the new version, never a
 * mix; and a rewrite that drops messages keeps them as older revisions.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/json.h"
#include "store/src.h"
#include "store/util.h"

/* ---- array docs --------------------------------------------------------- */

struct span {
	size_t pre, start, end;
};

struct span_vec {
	struct span *v;
	size_t n, alloc;
};

static int span_push(void *ctx, size_t pre, size_t start, size_t end)
{
	struct span_vec *sv = ctx;

	if (ARRAY_GROW(sv->v, sv->n, sv->alloc, 256) < 0)
		return -ENOMEM;
	sv->v[sv->n++] = (struct span){ pre, start, end };
	return 0;
}

/* ---- the rows of the last large docs committed, kept ----------------------- */

/*
 * known_prefix() reads a doc's current elements from its index, a row each,
 * to compare them with the new bytes: for a conversation of 20,000
 * messages, 20,000 rows, about 2 ms of a 5 ms commit. What it reads of each
 * (its row, the bytes before it, its length and digest) is kept in memory
 * for the last few large docs committed, together with the rows the commit
 * added, under the revision it made: the next commit of the doc, if the doc
 * is still at that revision, compares with those instead. The current rows
 * of a revision never change (every change of a doc's elements makes a new
 * revision), so a list holds as long as its doc's revision does. A list is
 * kept only once its revision is committed, never from inside a batch,
 * which may yet roll back (and its revision's number come again). A doc of
 * fewer than ROWS_MIN elements is not kept (its index is read quickly), and
 * all lists together hold at most ROWS_TOTAL elements: a few megabytes.
 */
#define ROWS_MIN 1024
#define ROWS_TOTAL ((size_t)1 << 17)

struct row_kept {
	int64_t id;
	uint64_t len;
	uint32_t pre_at, pre_len; /* in doc_rows.pre */
	unsigned char dg[DIGEST_SIZE];
	bool has_dg;
};

struct doc_rows {
	int64_t doc_id, rev;
	struct row_kept *v;
	size_t n, alloc;
	struct sb pre;
	bool broken; /* a row could not be added: not to be kept */
};

static void doc_rows_free(struct doc_rows *l)
{
	if (!l)
		return;
	free(l->v);
	sb_release(&l->pre);
	free(l);
}

/* Appends a row to l; dg NULL if it has no digest. */
static int doc_rows_push(struct doc_rows *l, int64_t id, const char *pre, size_t pre_len, size_t len,
			 const unsigned char *dg)
{
	struct row_kept *k;

	if (l->pre.len + pre_len > UINT32_MAX || ARRAY_GROW(l->v, l->n, l->alloc, 1024) < 0 ||
	    sb_add(&l->pre, pre, pre_len) < 0)
		return -ENOMEM;
	k = &l->v[l->n++];
	*k = (struct row_kept){ .id = id, .len = len, .pre_at = (uint32_t)(l->pre.len - pre_len),
				.pre_len = (uint32_t)pre_len, .has_dg = dg != NULL };
	if (dg)
		memcpy(k->dg, dg, DIGEST_SIZE);
	return 0;
}

/* The list kept of doc doc_id, taken out (the caller owns it), if it is of revision rev; else NULL. */
static struct doc_rows *doc_rows_take(struct store *st, int64_t doc_id, int64_t rev)
{
	for (size_t i = 0; i < STORE_ROWS_KEPT; i++) {
		struct doc_rows *l = st->rows_kept[i];

		if (!l || l->doc_id != doc_id)
			continue;
		st->rows_kept[i] = NULL;
		st->rows_total -= l->n;
		if (l->rev == rev)
			return l;
		doc_rows_free(l);
		return NULL;
	}
	return NULL;
}

/* Keeps l (taken over) as the current rows of its doc at its revision, the oldest list making room. */
static void doc_rows_keep(struct store *st, struct doc_rows *l)
{
	if (l->broken || l->n < ROWS_MIN || l->n > ROWS_TOTAL) {
		doc_rows_free(l);
		return;
	}
	/* From the oldest: until the last place is free and l fits. */
	for (size_t i = STORE_ROWS_KEPT; i-- > 0;) {
		if (!st->rows_kept[i])
			continue;
		if (i < STORE_ROWS_KEPT - 1 && st->rows_total + l->n <= ROWS_TOTAL)
			break;
		st->rows_total -= st->rows_kept[i]->n;
		doc_rows_free(st->rows_kept[i]);
		st->rows_kept[i] = NULL;
	}
	memmove(st->rows_kept + 1, st->rows_kept, (STORE_ROWS_KEPT - 1) * sizeof(st->rows_kept[0]));
	st->rows_kept[0] = l;
	st->rows_total += l->n;
}

void store_rows_drop(struct store *st)
{
	for (size_t i = 0; i < STORE_ROWS_KEPT; i++) {
		doc_rows_free(st->rows_kept[i]);
		st->rows_kept[i] = NULL;
	}
	st->rows_total = 0;
}

/*
 * Whether the row stmt stands on (its columns: id, pre, len, and json where
 * it is at most ELEM_INLINE bytes, as ROW_COLUMNS selects them) holds
 * pre[0, pre_len) and the bytes of element e of src. A larger element is
 * compared a piece at a time.
 */
#define ROW_COLUMNS "id, pre, len, CASE WHEN len <= ?2 THEN json END"

static int row_matches(struct store *st, sqlite3_stmt *row, const char *pre, size_t pre_len, const struct src *src,
		       const struct span *e, struct src_window *w, bool *ret)
{
	size_t len = e->end - e->start;
	const char *mine;
	int r;

	*ret = false;
	if ((size_t)sqlite3_column_bytes(row, 1) != pre_len ||
	    (pre_len && memcmp(sqlite3_column_blob(row, 1), pre, pre_len) != 0) ||
	    (size_t)sqlite3_column_int64(row, 2) != len)
		return 0;
	if (len > ELEM_INLINE)
		return src_equals_blob(st, src, e->start, len, "elems", "json", sqlite3_column_int64(row, 0), ret);
	if ((size_t)sqlite3_column_bytes(row, 3) != len)
		return 0;
	if ((r = src_get(src, e->start, len, w, &mine)) < 0)
		return r;
	*ret = len == 0 || memcmp(sqlite3_column_blob(row, 3), mine, len) == 0;
	return 0;
}

/* Whether row id holds pre[0, pre_len) and the bytes of element e of src (row_matches()). */
static int row_holds(struct store *st, int64_t id, const char *pre, size_t pre_len, const struct src *src,
		     const struct span *e, struct src_window *w, bool *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st, "SELECT " ROW_COLUMNS " FROM elems WHERE id = ?1", STORE_INTS(id, (int64_t)ELEM_INLINE),
			       &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -EIO : store_fail(st, rc, "cannot read an element");
	return row_matches(st, stmt, pre, pre_len, src, e, w, ret);
}

const struct digest_key *store_digest_key(struct store *st)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	unsigned char seed[DIGEST_SEED_SIZE];
	const char *hex;

	if (st->digest_key_state != 0)
		return st->digest_key_state > 0 ? &st->digest_key : NULL;
	if (store_prepare(st, "SELECT value FROM meta WHERE key = 'digest_key'", &stmt) < 0 ||
	    sqlite3_step(stmt) != SQLITE_ROW)
		return NULL; /* asked again at the next commit */
	st->digest_key_state = -1;
	hex = (const char *)sqlite3_column_text(stmt, 0);
	if (!hex || strlen(hex) != 2 * sizeof(seed)) {
		log_warn("the store's digest key is damaged: commits compare every element's bytes");
		return NULL;
	}
	for (size_t i = 0; i < sizeof(seed); i++)
		if (sscanf(hex + 2 * i, "%2hhx", &seed[i]) != 1) {
			log_warn("the store's digest key is damaged: commits compare every element's bytes");
			return NULL;
		}
	digest_key_init(&st->digest_key, seed);
	st->digest_key_state = 1;
	return &st->digest_key;
}

/* A digest to fill in: of the row id. */
struct digest_fill {
	int64_t id;
	unsigned char dg[DIGEST_SIZE];
};

/* Fills in the digests of rows that had none, once the walk over the index is done. */
static int digests_fill(struct store *st, const struct digest_fill *v, size_t n)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (n == 0)
		return 0;
	r = store_prepare(st, "UPDATE elems SET dg = ?2 WHERE id = ?1", &stmt);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(stmt);
		sqlite3_bind_int64(stmt, 1, v[i].id);
		sqlite3_bind_blob(stmt, 2, v[i].dg, DIGEST_SIZE, SQLITE_STATIC);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_DONE)
			return store_fail(st, rc, "cannot store an element's digest");
	}
	return 0;
}

/*
 * The doc's current elements that the new content goes on with, byte for
 * byte, after the same head: their spans go onto sv, and *known says where
 * they end, so that the scan starts there and only what changed is scanned.
 * These rows are kept as they are. It stops before an element that does not
 * close itself (struct json_known): a number may go on in the new content.
 *
 * The rows are read from the index elems_cur alone, or from *rows, the list
 * kept of the doc's revision (doc_rows_take()): the bytes before each
 * element, its length and the digest of its bytes, which is compared with
 * the digest of the new bytes at that place. A row without a digest is
 * compared by its bytes, and gets its digest. *rows becomes the list of the
 * rows found (the kept list cut short, or a new one for a doc of ROWS_MIN
 * elements or more; else NULL), for the commit to add its own rows to; the
 * caller frees it, whatever is returned.
 */
static int known_prefix(struct store *st, const struct doc_row *d, const struct src *src, struct span_vec *sv,
			struct json_known *known, struct doc_rows **rows)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_src_window_ struct src_window w = SRC_WINDOW_INIT;
	const struct digest_key *key = store_digest_key(st);
	_cleanup_free_ struct digest_fill *fill = NULL;
	struct doc_rows *kept = *rows;
	size_t head = strlen(d->head), at = head, nfill = 0, fill_alloc = 0, i = 0;
	const char *hd;
	int r = 0, rc = SQLITE_DONE;

	*known = (struct json_known){ 0 };
	if (!kept && d->nelems >= ROWS_MIN && (*rows = calloc(1, sizeof(**rows))))
		(*rows)->doc_id = d->id; /* no list on allocation failure: the next commit reads the index */
	if (head == 0 || head > src->len)
		goto out;
	if ((r = src_get(src, 0, head, &w, &hd)) < 0)
		goto out;
	if (memcmp(hd, d->head, head) != 0)
		goto out;
	if (!kept) {
		r = store_prepare_ints(st, "SELECT id, pre, len, dg FROM elems WHERE doc_id = ?1 AND rev_to IS NULL "
					   "ORDER BY seq",
				       STORE_INTS(d->id), &stmt);
		if (r < 0)
			goto out;
	}
	for (;; i++) {
		size_t pre_len, len;
		int64_t id;
		const char *pre_kept;
		const unsigned char *dg_kept;
		struct span e;
		unsigned char dg[DIGEST_SIZE];
		const char *bytes, *last;
		bool same, small, digested = false;

		if (kept) {
			const struct row_kept *k;

			if (i == kept->n)
				break;
			k = &kept->v[i];
			id = k->id;
			pre_kept = kept->pre.buf + k->pre_at;
			pre_len = k->pre_len;
			len = (size_t)k->len;
			dg_kept = k->has_dg ? k->dg : NULL;
		} else {
			if ((rc = sqlite3_step(stmt)) != SQLITE_ROW)
				break;
			id = sqlite3_column_int64(stmt, 0);
			pre_kept = sqlite3_column_blob(stmt, 1);
			pre_len = (size_t)sqlite3_column_bytes(stmt, 1);
			len = (size_t)sqlite3_column_int64(stmt, 2);
			dg_kept = sqlite3_column_bytes(stmt, 3) == DIGEST_SIZE ? sqlite3_column_blob(stmt, 3) : NULL;
		}
		small = len <= ELEM_INLINE;
		e = (struct span){ at, at + pre_len, at + pre_len + len };
		if (len == 0 || len > src->len || pre_len + len > src->len - at)
			break;
		if ((r = src_get(src, e.pre, pre_len, &w, &bytes)) < 0)
			goto out;
		if (pre_len && memcmp(bytes, pre_kept, pre_len) != 0)
			break;
		if (small && key) {
			if ((r = src_get(src, e.start, len, &w, &bytes)) < 0)
				goto out;
			digest128(key, bytes, len, dg);
			digested = true;
		}
		if (digested && dg_kept) {
			same = memcmp(dg_kept, dg, DIGEST_SIZE) == 0;
		} else {
			if ((r = row_holds(st, id, pre_kept, pre_len, src, &e, &w, &same)) < 0)
				goto out;
			if (same && digested) {
				if ((r = ARRAY_GROW(fill, nfill, fill_alloc, 64)) < 0)
					goto out;
				fill[nfill].id = id;
				memcpy(fill[nfill++].dg, dg, DIGEST_SIZE);
				if (kept) {
					memcpy(kept->v[i].dg, dg, DIGEST_SIZE);
					kept->v[i].has_dg = true;
				}
			}
		}
		if (!same)
			break;
		if ((r = src_get(src, e.end - 1, 1, &w, &last)) < 0)
			goto out;
		if (*last != '}' && *last != ']' && *last != '"')
			break;
		if ((r = span_push(sv, e.pre, e.start, e.end)) < 0)
			goto out;
		if (!kept && *rows && doc_rows_push(*rows, id, pre_kept, pre_len, len, digested ? dg : NULL) < 0)
			(*rows)->broken = true;
		at = e.end;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		r = store_fail(st, rc, "cannot read elements");
		goto out;
	}
	if (stmt)
		sqlite3_reset(stmt);
	if ((r = digests_fill(st, fill, nfill)) < 0)
		goto out;
	if (sv->n > 0)
		*known = (struct json_known){ .head = head, .end = at };
out:
	if (kept) {
		/* The rows found; the commit adds its own after them. */
		kept->n = sv->n;
		kept->pre.len = kept->n ? kept->v[kept->n - 1].pre_at + kept->v[kept->n - 1].pre_len : 0;
		if (kept->pre.buf)
			kept->pre.buf[kept->pre.len] = '\0'; /* a struct sb ends in one */
	}
	return r;
}

/*
 * Where the JSONL line after a current element starts: its loff + len + 1.
 * by_seq: the element is the current one at position seq of doc; else row id.
 */
static int line_end(struct store *st, int64_t doc_id, int64_t seq_or_id, bool by_seq, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st, by_seq ? "SELECT coalesce(loff, 0) + len + 1 FROM elems "
				            "WHERE doc_id = ?1 AND seq = ?2 AND rev_to IS NULL"
				          : "SELECT coalesce(loff, 0) + len + 1 FROM elems WHERE id = ?2",
			       STORE_INTS(doc_id, seq_or_id), &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -EIO : store_fail(st, rc, "cannot find an element's line");
	*ret = sqlite3_column_int64(stmt, 0);
	return 0;
}

/*
 * A new row of elems: the element of doc doc_id at json[0, len), or (json
 * NULL) at bytes [at, at + len) of src, after pre[0, pre_len).
 */
struct elem_new {
	int64_t doc_id, seq, off, rev, loff; /* rev: its rev_from; loff: where its JSONL line starts */
	const char *pre, *json;
	size_t pre_len, len;
	const struct src *src;
	size_t at;
	struct doc_rows *rows; /* if not NULL, the row goes onto it too */
};

/* The statement elem_insert() runs. */
static const char elem_insert_sql[] = "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, rev_from, h, loff, dg) "
				      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

/*
 * Inserts e with stmt, prepared from elem_insert_sql (and reset here), with
 * its identity (elem_bind_identity()); what names a failure to store it.
 * An element of src larger than ELEM_INLINE is never held whole: its row is
 * made with a zeroblob and the bytes written into it a piece at a time (a
 * history item is always read, to learn from it). A smaller one read from
 * a file is read through w.
 */
static int elem_insert(struct store *st, sqlite3_stmt *stmt, const struct elem_new *e, const struct doc_layout *lay,
		       int64_t now, struct src_window *w, const char *what)
{
	const char *json = e->json;
	bool big = !json && e->len > ELEM_INLINE && lay->learn != LEARN_HISTORY;
	const struct digest_key *dk;
	struct merge_elem ident = { 0 };
	unsigned char dg[DIGEST_SIZE];
	bool digested = false;
	char *key = NULL;
	int64_t id;
	int r, rc;

	if (!json && !big && (r = src_get(e->src, e->at, e->len, w, &json)) < 0)
		return r;
	if (json)
		doc_elem_identity(lay->ident, json, e->len, &ident, &key);
	else if ((r = src_identity(e->src, lay->ident, e->at, e->at + e->len, &ident, &key)) < 0)
		return r;
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	sqlite3_bind_int64(stmt, 1, e->doc_id);
	sqlite3_bind_int64(stmt, 2, e->seq);
	sqlite3_bind_int64(stmt, 3, e->off);
	sqlite3_bind_text(stmt, 4, e->pre, (int)e->pre_len, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 5, (int64_t)e->len);
	if (big)
		sqlite3_bind_zeroblob64(stmt, 6, e->len);
	else
		sqlite3_bind_text64(stmt, 6, json, e->len, SQLITE_STATIC, SQLITE_UTF8);
	if ((r = elem_bind_identity(st, stmt, 7, 10, lay, &ident, key, json, e->len, now)) < 0)
		return r;
	sqlite3_bind_int64(stmt, 9, e->rev);
	sqlite3_bind_int64(stmt, 11, e->loff);
	if (json && (dk = store_digest_key(st))) {
		digest128(dk, json, e->len, dg);
		sqlite3_bind_blob(stmt, 12, dg, sizeof(dg), SQLITE_TRANSIENT);
		digested = true;
	}
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, what);
	id = sqlite3_last_insert_rowid(st->db);
	if (e->rows && doc_rows_push(e->rows, id, e->pre, e->pre_len, e->len, digested ? dg : NULL) < 0)
		e->rows->broken = true;
	return big ? src_to_blob(st, e->src, e->at, e->len, "elems", "json", id) : 0;
}

/*
 * Inserts elements from..n-1 of sv; *loff is where the first one's line
 * starts, and is moved on. Each row goes onto rows too, if not NULL.
 */
static int elems_insert(struct store *st, int64_t doc_id, const struct src *src, const struct span_vec *sv,
			size_t from, int64_t rev, const struct doc_layout *lay, int64_t now, int64_t *loff,
			struct doc_rows *rows)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_src_window_ struct src_window pre = SRC_WINDOW_INIT, scratch = SRC_WINDOW_INIT;
	int r;

	r = store_prepare(st, elem_insert_sql, &stmt);
	if (r < 0)
		return r;
	for (size_t i = from; i < sv->n; i++) {
		const struct span *e = &sv->v[i];
		struct elem_new row = { .doc_id = doc_id, .seq = (int64_t)i, .off = (int64_t)e->pre, .rev = rev,
					.loff = *loff, .pre_len = e->start - e->pre, .src = src, .at = e->start,
					.len = e->end - e->start, .rows = rows };

		if ((r = src_get(src, e->pre, row.pre_len, &pre, &row.pre)) < 0 ||
		    (r = elem_insert(st, stmt, &row, lay, now, &scratch, "cannot store an element")) < 0)
			return r;
		*loff += (int64_t)row.len + 1;
	}
	return 0;
}

/* ---- merged commits ------------------------------------------------------------ */

int store_base_from_snap(const struct store_snap *snap, struct store_base **ret)
{
	struct store_base *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->doc_id = snap->doc_id;
	b->rev = snap->rev;
	b->read = true;
	*ret = b;
	return 0;
}

void store_base_free(struct store_base *base)
{
	if (!base)
		return;
	merge_list_release(&base->list);
	free(base);
}

int64_t store_base_rev(const struct store_base *base)
{
	return base->rev;
}

bool store_base_is_read(const struct store_base *base)
{
	return base->read;
}

int base_at_rev(int64_t doc_id, int64_t rev, struct store_base **ret)
{
	struct store_base *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->doc_id = doc_id;
	b->rev = rev;
	*ret = b;
	return 0;
}

#define ROWS_CURRENT (-1)

/*
 * Loads the rows of a doc valid at revision rev (ROWS_CURRENT: the current
 * ones; closed: the ones that revision rev closed, i.e. a removed doc's last
 * content) as identities; history items also with their bytes (small).
 * The bytes are copied into *ret_store, which must outlive the list.
 */
static int load_rows(struct store *st, int64_t doc_id, int64_t rev, bool closed, enum doc_ident ident,
		     struct merge_list *ret, struct sb *ret_store)
{
	bool bytes = ident == IDENT_ITEM_ID; /* history items are merged field by field */
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct merge_list l = { 0 };
	size_t *offsets = NULL, offsets_alloc = 0;
	int r, rc;

	r = store_prepare_ints(st, rev == ROWS_CURRENT
		? "SELECT id, key, ts, h, len, CASE WHEN ?3 THEN json END FROM elems "
		  "WHERE doc_id = ?1 AND rev_to IS NULL ORDER BY seq"
		: closed
		? "SELECT id, key, ts, h, len, CASE WHEN ?3 THEN json END FROM elems "
		  "WHERE doc_id = ?1 AND rev_to = ?2 ORDER BY off"
		: "SELECT id, key, ts, h, len, CASE WHEN ?3 THEN json END FROM elems "
		  "WHERE doc_id = ?1 AND rev_from <= ?2 AND (rev_to IS NULL OR rev_to > ?2) ORDER BY off",
		STORE_INTS(doc_id, rev, bytes), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct merge_elem e = { 0 };

		e.ref = sqlite3_column_int64(stmt, 0);
		e.hash = (uint64_t)sqlite3_column_int64(stmt, 3);
		e.len = (size_t)sqlite3_column_int64(stmt, 4);
		e.has_ts = sqlite3_column_type(stmt, 2) != SQLITE_NULL;
		e.ts = sqlite3_column_int64(stmt, 2);
		e.key = e.hash;
		/* as doc_elem_identity() gave it when the row was written */
		if (ident != IDENT_TS && sqlite3_column_type(stmt, 1) != SQLITE_NULL)
			e.key = doc_key_of_text((const char *)sqlite3_column_text(stmt, 1),
						(size_t)sqlite3_column_bytes(stmt, 1));
		else if (ident == IDENT_TS && e.has_ts)
			e.key = (uint64_t)e.ts;
		if (bytes) {
			/* Offsets now, pointers once the buffer stops moving. */
			if ((r = ARRAY_GROW(offsets, l.n, offsets_alloc, 256)) < 0)
				break;
			offsets[l.n] = ret_store->len;
			if ((r = sb_add(ret_store, sqlite3_column_blob(stmt, 5), e.len)) < 0)
				break;
		}
		if ((r = merge_list_push(&l, &e)) < 0)
			break;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot read elements");
	if (r == 0 && bytes)
		for (size_t i = 0; i < l.n; i++)
			l.v[i].json = ret_store->buf + offsets[i];
	free(offsets);
	if (r < 0) {
		merge_list_release(&l);
		return r;
	}
	*ret = l;
	return 0;
}

struct fetch_ctx {
	struct store *st;
	int64_t doc_id;
};

/* The bytes of a base history item known only by its hash (an explicit base). */
static int fetch_by_hash(void *ctx, const struct merge_elem *e, char **ret_json, size_t *ret_len)
{
	struct fetch_ctx *c = ctx;
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	char *p;
	int rc;

	if (store_prepare(c->st, "SELECT json FROM elems WHERE doc_id = ?1 AND h = ?2 AND key IS NOT NULL LIMIT 1",
			  &stmt) < 0)
		return -EIO;
	sqlite3_bind_int64(stmt, 1, c->doc_id);
	sqlite3_bind_int64(stmt, 2, (sqlite3_int64)e->hash);
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : store_fail(c->st, rc, "cannot read a history item by its hash");
	p = strndup((const char *)sqlite3_column_text(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0));
	if (!p)
		return -ENOMEM;
	*ret_json = p;
	*ret_len = strlen(p);
	return 0;
}

/*
 * Writes the merged list as the doc's new current rows: rows up to the first
 * difference with head stay, the rest are closed and the merged tail is
 * inserted (head rows copied by id, the writer's from its bytes).
 */
static int write_merged(struct store *st, const struct doc_row *d, const struct merge_list *head,
			const struct merge_list *m, const struct src *src, const char *head_bytes,
			const struct span_vec *sv, size_t head_len, size_t tail, int64_t rev, int64_t now,
			const struct doc_layout *lay, int64_t *ret_size, int64_t *ret_lsize)
{
	_cleanup_stmt_ sqlite3_stmt *copy = NULL, *ins = NULL, *pre_of = NULL;
	_cleanup_src_window_ struct src_window first_pre_buf = SRC_WINDOW_INIT, sep_buf = SRC_WINDOW_INIT,
					       scratch = SRC_WINDOW_INIT;
	const char *sep = ",", *first_pre = "";
	size_t sep_len = 1, first_pre_len = sv->n ? sv->v[0].start - sv->v[0].pre : 0;
	size_t f = 0;
	int64_t off, loff = 0;
	int r, rc;

	if (sv->n && (r = src_get(src, sv->v[0].pre, first_pre_len, &first_pre_buf, &first_pre)) < 0)
		return r;
	if (sv->n >= 2) {
		sep_len = sv->v[1].start - sv->v[1].pre;
		if ((r = src_get(src, sv->v[1].pre, sep_len, &sep_buf, &sep)) < 0)
			return r;
	}
	/*
	 * Rows up to the first difference stay: the stored row itself, or one
	 * with the very bytes the writer wrote there (the merge takes the
	 * writer's copy of a message both have). A removed doc's rows are all
	 * closed: everything is inserted anew.
	 */
	if (d->present && strlen(d->head) == head_len && memcmp(d->head, head_bytes, head_len) == 0)
		for (; f < m->n && f < head->n; f++) {
			const struct merge_elem *e = &m->v[f], *h = &head->v[f];
			bool same = e->origin == MERGE_FROM_HEAD && e->ref == h->ref;

			if (!same && e->origin == MERGE_FROM_NEW && e->hash == h->hash && e->len == h->len &&
			    (r = row_holds(st, h->ref, f == 0 ? first_pre : sep, f == 0 ? first_pre_len : sep_len, src,
					   &sv->v[e->ref], &scratch, &same)) < 0)
				return r;
			if (!same)
				break;
		}
	/* The offset where row f starts: the end of row f-1. */
	off = (int64_t)head_len;
	if (f > 0) {
		r = store_prepare_ints(st, "SELECT off + length(CAST(pre AS BLOB)) + len FROM elems WHERE id = ?1",
				       STORE_INTS(head->v[f - 1].ref), &pre_of);
		if (r < 0)
			return r;
		rc = sqlite3_step(pre_of);
		if (rc != SQLITE_ROW)
			return store_fail(st, rc, "cannot find an element's end");
		off = sqlite3_column_int64(pre_of, 0);
		if ((r = line_end(st, d->id, head->v[f - 1].ref, false, &loff)) < 0)
			return r;
	}
	r = store_prepare(st, "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, h, rev_from, loff, dg) "
			      "SELECT doc_id, ?2, ?3, ?4, len, json, key, ts, h, ?5, ?6, dg FROM elems WHERE id = ?1", &copy);
	if (r < 0)
		return r;
	r = store_prepare(st, elem_insert_sql, &ins);
	if (r < 0)
		return r;
	for (size_t i = f; i < m->n; i++) {
		const struct merge_elem *e = &m->v[i];
		const char *pre = i == 0 ? first_pre : sep;
		size_t pre_len = i == 0 ? first_pre_len : sep_len;

		if (e->origin == MERGE_FROM_HEAD && e->len > ELEM_INLINE) {
			struct elem_copy c = { .seq = (int64_t)i, .off = off, .rev_from = rev, .rev_to = -1, .loff = loff,
					       .pre = pre, .pre_len = pre_len };

			if ((r = elem_copy_large(st, e->ref, &c, NULL)) < 0)
				return r;
		} else if (e->origin == MERGE_FROM_HEAD) {
			sqlite3_reset(copy);
			sqlite3_clear_bindings(copy);
			sqlite3_bind_int64(copy, 1, e->ref);
			sqlite3_bind_int64(copy, 2, (int64_t)i);
			sqlite3_bind_int64(copy, 3, off);
			sqlite3_bind_text(copy, 4, pre, (int)pre_len, SQLITE_STATIC);
			sqlite3_bind_int64(copy, 5, rev);
			sqlite3_bind_int64(copy, 6, loff);
			rc = sqlite3_step(copy);
			if (rc != SQLITE_DONE)
				return store_fail(st, rc, "cannot store a merged element");
		} else {
			/* The writer's element, from its bytes (or the bytes a field merge made). */
			struct elem_new row = { .doc_id = d->id, .seq = (int64_t)i, .off = off, .rev = rev, .loff = loff,
						.pre = pre, .pre_len = pre_len, .json = e->json, .len = e->len,
						.src = src, .at = e->json ? 0 : sv->v[e->ref].start };

			if ((r = elem_insert(st, ins, &row, lay, now, &scratch, "cannot store a merged element")) < 0)
				return r;
		}
		off += (int64_t)(pre_len + e->len);
		loff += (int64_t)e->len + 1;
	}
	/* Last: the rows copied above were read by their ids, which closing a large one changes. */
	if ((r = elems_close(st, d->id, (int64_t)f, rev)) < 0)
		return r;
	*ret_size = off + (int64_t)(src->len - tail);
	*ret_lsize = loff;
	return 0;
}

/* True if the merged list is exactly what the writer wrote. */
static bool merged_is_new(const struct merge_list *m, const struct merge_list *n)
{
	if (m->n != n->n)
		return false;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].hash != n->v[i].hash)
			return false;
	return true;
}

/*
 * Keeps in l only the history items of tasks in workspace ws_key (NULL: tasks
 * with none): the base of a writer of workspaces/<ws>/taskHistory.json is
 * what it saw there, that workspace's items only.
 */
static int filter_ws(struct store *st, struct merge_list *l, const char *ws_key)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	size_t out = 0;
	int r, rc;

	r = store_prepare(st, "SELECT t.id FROM tasks t LEFT JOIN workspaces w ON w.id = t.workspace_id "
			      "WHERE (?1 IS NULL AND w.id IS NULL) OR w.key = ?1", &stmt);
	if (r < 0)
		return r;
	if (ws_key)
		sqlite3_bind_text(stmt, 1, ws_key, -1, SQLITE_STATIC);
	{
		struct merge_list ids = { 0 };

		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			struct merge_elem e = { .key = doc_key_of_text((const char *)sqlite3_column_text(stmt, 0),
								       (size_t)sqlite3_column_bytes(stmt, 0)) };

			if ((r = merge_list_push(&ids, &e)) < 0)
				break;
		}
		if (r == 0 && rc != SQLITE_DONE)
			r = store_fail(st, rc, "cannot list a workspace's tasks");
		for (size_t i = 0; r == 0 && i < l->n; i++) {
			bool in = false;

			for (size_t j = 0; j < ids.n && !in; j++)
				in = ids.v[j].key == l->v[i].key;
			if (in)
				l->v[out++] = l->v[i];
		}
		merge_list_release(&ids);
	}
	if (r == 0)
		l->n = out;
	return r;
}

/*
 * The writer's elements as a merge list: identities, and (history items,
 * merged field by field) the bytes, copied into *bytes unless src is in
 * memory.
 */
static int new_list(const struct src *src, const struct span_vec *sv, enum doc_ident ident, struct merge_list *ret,
		    struct sb *bytes)
{
	bool keep = ident == IDENT_ITEM_ID;
	size_t *offsets = NULL;
	int r = 0;

	if (keep && !src->mem && !(offsets = calloc(sv->n ? sv->n : 1, sizeof(*offsets))))
		return -ENOMEM;
	for (size_t i = 0; i < sv->n && r == 0; i++) {
		struct merge_elem e = { .len = sv->v[i].end - sv->v[i].start, .ref = (int64_t)i, .origin = MERGE_FROM_NEW };

		if ((r = src_identity(src, ident, sv->v[i].start, sv->v[i].end, &e, NULL)) < 0)
			break;
		if (keep && src->mem) {
			e.json = src->mem + sv->v[i].start;
		} else if (keep) {
			offsets[i] = bytes->len;
			if ((r = sb_grow(bytes, e.len)) < 0 || (r = src_read(src, sv->v[i].start, bytes->buf + bytes->len, e.len)) < 0)
				break;
			bytes->len += e.len;
			bytes->buf[bytes->len] = '\0';
		}
		r = merge_list_push(ret, &e);
	}
	if (r == 0 && offsets)
		for (size_t i = 0; i < ret->n; i++)
			ret->v[i].json = bytes->buf + offsets[i];
	free(offsets);
	return r;
}

int commit_array(struct store *st, const struct store_commit *c, const struct doc_layout *lay,
		 struct store_base **ret_base, bool *ret_merged)
{
	const char *path = c->path, *kind = c->kind, *ws_key = c->ws_key, *hd = NULL, *tl = NULL;
	const struct store_who *who = c->who;
	const struct store_base *base = c->base;
	bool merge = c->merge;
	struct src src;
	struct span_vec sv = { 0 };
	struct doc_row d = { 0 };
	struct json_error jerr = { 0 };
	struct merge_list nl = { 0 }, hl = { 0 }, bl_loaded = { 0 }, ml = { 0 };
	struct merge_stats ms = { 0 };
	struct store_base *nb = NULL;
	_cleanup_sb_ struct sb hbytes = SB_INIT, bbytes = SB_INIT, nbytes = SB_INIT;
	_cleanup_src_window_ struct src_window hb = SRC_WINDOW_INIT, tb = SRC_WINDOW_INIT;
	struct json_known known = { 0 };
	struct doc_rows *rows = NULL; /* the doc's current rows, kept for its next commit */
	bool is_history = lay->ident == IDENT_ITEM_ID, merged = false, merging;
	size_t head = 0, tail = 0, k = 0, len;
	int64_t now = now_ns(), rev = 0, size, lsize = 0;
	char detail[320];
	int r;

	src_of_commit(c, &src);
	len = src.len;
	size = (int64_t)len;
	store_lock(st);
	r = doc_begin(st, path, DOC_ARRAY, now, &d);
	if (r < 0)
		goto unlock;
	if (base && base->doc_id != d.id)
		base = NULL; /* the doc was made anew since */
	/*
	 * Merge when someone committed since this writer's base. A doc that was
	 * renamed away (Roo's safeWriteJson moves it to .bak before renaming the
	 * new file in) merges with its last content.
	 */
	/*
	 * History items are removed only by a writer that read them: a window's
	 * reload can race its own save, so a base that is the writer's own last
	 * write does not license removals, and such a commit always merges.
	 */
	merging = merge && d.format == DOC_ARRAY && (d.present ? d.nelems > 0 : base != NULL) &&
		  (!base || base->explicit_list || base->rev != d.rev || (is_history && !base->read) || ws_key);
	/* Otherwise what is stored unchanged is kept, and only what follows it is scanned. */
	rows = doc_rows_take(st, d.id, d.rev);
	if (merging || d.format != DOC_ARRAY || !d.present) {
		doc_rows_free(TAKE_PTR(rows)); /* this commit makes a new revision of the doc, or none */
	} else if ((r = known_prefix(st, &d, &src, &sv, &known, &rows)) < 0) {
		if (r != SRC_CUT_SHORT || !src.shared)
			goto rollback;
		/* The file ended early: another process cut it. What it holds now is taken whole. */
		sv.n = 0;
		known = (struct json_known){ 0 };
		doc_rows_free(TAKE_PTR(rows));
	}
	/* A file others may change: what is read again from here on is copied first. */
	if (src.shared) {
		if ((r = src_own_rest(c, &src, known.end)) < 0) {
			log_err("cannot read the content to commit to '%s': %s; nothing stored changes", path,
				strerror(-r));
			goto rollback;
		}
		len = src.len;
		size = (int64_t)len;
	}
	k = sv.n;
	r = src_scan_array(&src, lay->array_member, &known, span_push, &sv, &head, &tail, &jerr);
	if (r == -EINVAL)
		log_warn("refusing to commit '%s': not %s: %s at byte %zu; nothing stored changes", path,
			 lay->array_member ? "a JSON object with an array of messages" : "a JSON array", jerr.msg,
			 jerr.offset);
	else if (r < 0)
		log_err("cannot read the content to commit to '%s': %s; nothing stored changes", path, strerror(-r));
	/*
	 * What comes before the first element and after the last: small, held.
	 * After a known prefix the head is the stored one, which known_prefix()
	 * found the same (and a shared file's head is read once).
	 */
	if (r == 0 && known.end)
		hd = d.head;
	else if (r == 0)
		r = src_get(&src, 0, head, &hb, &hd);
	if (r == 0)
		r = src_get(&src, tail, len - tail, &tb, &tl);
	if (r < 0)
		goto rollback;
	if (merging) {
		/* Someone committed since this writer's base: merge three ways. */
		static const struct merge_list nothing_seen = { 0 };
		/* Without a base the writer has seen nothing: what is stored stays. */
		const struct merge_list *bl = &nothing_seen;
		struct fetch_ctx fc = { st, d.id };

		if ((r = new_list(&src, &sv, lay->ident, &nl, &nbytes)) < 0)
			goto rollback;
		if ((r = load_rows(st, d.id, d.present ? ROWS_CURRENT : d.rev, !d.present, lay->ident, &hl, &hbytes)) < 0)
			goto rollback;
		if (base && base->explicit_list) {
			bl = &base->list;
		} else if (base) {
			if ((r = load_rows(st, d.id, base->rev, false, lay->ident, &bl_loaded, &bbytes)) < 0)
				goto rollback;
			if (ws_key && (r = filter_ws(st, &bl_loaded, *ws_key ? ws_key : NULL)) < 0)
				goto rollback;
			bl = &bl_loaded;
		}
		if ((r = merge_lists(is_history ? MERGE_HISTORY : MERGE_MESSAGES, bl, base && base->read, &hl, &nl,
				     fetch_by_hash, &fc, &ml, &ms)) < 0)
			goto rollback;
		merged = !merged_is_new(&ml, &nl);
		r = revision_add(st, path, who, merged ? "merge" : kind, now, &rev);
		if (r < 0)
			goto rollback;
		r = write_merged(st, &d, &hl, &ml, &src, hd, &sv, head, tail, rev, now, lay, &size, &lsize);
		if (r < 0)
			goto rollback;
		r = doc_update(st, d.id, DOC_ARRAY, size, now, rev, hd, head, tl, len - tail, (int64_t)ml.n, lsize);
		if (r < 0)
			goto rollback;
		snprintf(detail, sizeof(detail),
			 "{\"merged\":%s,\"base\":%" PRId64 ",\"head\":%" PRId64 ",\"written\":%zu,\"result\":%zu,"
			 "\"from_writer\":%zu,\"kept_stored\":%zu,\"others_kept\":%zu,\"removed\":%zu,"
			 "\"fields_merged\":%zu,\"size\":%" PRId64 "}",
			 merged ? "true" : "false", base ? base->rev : (int64_t)-1, d.rev, nl.n, ml.n, ms.from_new,
			 ms.from_head, ms.others_kept, ms.removed, ms.fields, size);
	} else {
		if (d.format == DOC_ARRAY && d.present && strlen(d.head) == head && memcmp(d.head, hd, head) == 0 &&
		    k == sv.n && (int64_t)k == d.nelems && strlen(d.tail) == len - tail &&
		    memcmp(d.tail, tl, len - tail) == 0) {
			rev = d.rev; /* nothing changed: no revision, no new mtime */
			r = 0;
			tx_rollback(st);
			goto done;
		}
		r = revision_add(st, path, who, kind, now, &rev);
		if (r < 0)
			goto rollback;
		lsize = 0;
		if (k > 0 && (r = line_end(st, d.id, (int64_t)k - 1, true, &lsize)) < 0)
			goto rollback;
		if (d.format == DOC_ARRAY && (r = elems_close(st, d.id, (int64_t)k, rev)) < 0)
			goto rollback;
		r = elems_insert(st, d.id, &src, &sv, k, rev, lay, now, &lsize, rows);
		if (r < 0)
			goto rollback;
		r = doc_update(st, d.id, DOC_ARRAY, (int64_t)len, now, rev, hd, head, tl, len - tail, (int64_t)sv.n,
			       lsize);
		if (r < 0)
			goto rollback;
		snprintf(detail, sizeof(detail), "{\"kept\":%zu,\"superseded\":%" PRId64 ",\"added\":%zu,\"size\":%zu}",
			 k, d.format == DOC_ARRAY && d.present ? d.nelems - (int64_t)k : 0, sv.n - k, len);
	}
	r = revision_end(st, rev, d.id, detail);
	if (r < 0)
		goto rollback;
done:
	/* Committed (or nothing changed): the rows are the doc's at rev; not from inside a batch. */
	if (rows && !st->batch_depth) {
		rows->rev = rev;
		doc_rows_keep(st, TAKE_PTR(rows));
	}
	if (ret_base) {
		if (merged) {
			/* The writer's view is what it wrote, not what is stored: keep it. */
			nb = calloc(1, sizeof(*nb));
			if (nb) {
				nb->doc_id = d.id;
				nb->rev = rev;
				nb->explicit_list = true;
				nb->list = nl;
				for (size_t i = 0; i < nb->list.n; i++)
					nb->list.v[i].json = NULL;
				nl = (struct merge_list){ 0 };
			}
		} else {
			base_at_rev(d.id, rev, &nb);
		}
		*ret_base = nb; /* NULL on allocation failure: the next commit has no base, which is safe */
	}
	if (ret_merged)
		*ret_merged = merged;
	goto unlock;
rollback:
	tx_rollback(st);
unlock:
	pthread_mutex_unlock(&st->lock);
	doc_row_release(&d);
	merge_list_release(&nl);
	merge_list_release(&hl);
	merge_list_release(&bl_loaded);
	merge_list_release(&ml);
	doc_rows_free(rows);
	free(sv.v);
	src_release(&src);
	return r;
}

/* ---- appends ------------------------------------------------------------------ */

/*
 * Appends lines to doc d as revision rev, inside the caller's transaction,
 * and updates the doc's row.
 */
int append_rows(struct store *st, const struct doc_row *dr, const char *path, const struct store_line *lines,
		size_t n, int64_t rev, int64_t now)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	const struct doc_row d = *dr;
	struct doc_layout lay;
	const char *head = "[", *tail = "]";
	int64_t off, loff, seq;
	int r;

	if (doc_layout_of(path, &lay) < 0 || lay.kind != STORE_PATH_ARRAY)
		return -EINVAL;
	if (d.present && d.format == DOC_ARRAY && d.size > 0) {
		head = d.head;
		tail = d.tail;
		off = d.size - (int64_t)strlen(d.tail);
		loff = d.lsize;
		seq = d.nelems;
	} else if (lay.array_member) {
		log_warn("refusing to append to '%s': it has no content to append to", path);
		return -ENOENT; /* the object around the array is the client's to write first */
	} else {
		off = 1;
		loff = 0;
		seq = 0;
	}
	r = store_prepare(st, elem_insert_sql, &stmt);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++, seq++) {
		const struct store_line *l = &lines[i];
		const char *pre = seq == 0 ? "" : ",";
		struct elem_new row = { .doc_id = d.id, .seq = seq, .off = off, .rev = rev, .loff = loff, .pre = pre,
					.pre_len = strlen(pre), .json = l->data, .len = l->len };

		if ((r = elem_insert(st, stmt, &row, &lay, now, NULL, "cannot append an element")) < 0)
			return r;
		off += (int64_t)(strlen(pre) + l->len);
		loff += (int64_t)l->len + 1;
	}
	return doc_update(st, d.id, DOC_ARRAY, off + (int64_t)strlen(tail), now, rev, head, strlen(head), tail,
			  strlen(tail), seq, loff);
}

/* The size of doc id as its row has it now: for the revision log (convfs log). */
static int doc_size(struct store *st, int64_t id, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st, "SELECT size FROM docs WHERE id = ?1", STORE_INTS(id), &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : store_fail(st, rc, "cannot read a doc's size");
	*ret = sqlite3_column_int64(stmt, 0);
	return 0;
}

/* The part of store_doc_append() under the lock. */
static int append_locked(struct store *st, const char *path, const struct store_line *lines, size_t n,
			 const struct store_who *who)
{
	struct doc_row d = { 0 };
	int64_t now = now_ns(), rev, size = 0;
	char detail[80];
	int r;

	r = doc_begin(st, path, DOC_ARRAY, now, &d);
	if (r < 0)
		return r;
	if (d.present && d.format != DOC_ARRAY && d.size > 0) {
		log_warn("refusing to append to '%s': it is kept as found, unparsed; rewrite it whole first", path);
		r = -EINVAL;
		goto rollback;
	}
	if ((r = revision_add(st, path, who, "append", now, &rev)) < 0)
		goto rollback;
	if ((r = append_rows(st, &d, path, lines, n, rev, now)) < 0 || (r = doc_size(st, d.id, &size)) < 0)
		goto rollback;
	snprintf(detail, sizeof(detail), "{\"appended\":%zu,\"size\":%" PRId64 "}", n, size);
	if ((r = revision_end(st, rev, d.id, detail)) < 0)
		goto rollback;
	doc_row_release(&d);
	return 0;
rollback:
	tx_rollback(st);
	doc_row_release(&d);
	return r;
}

int store_doc_append(struct store *st, const char *path, const struct store_line *lines, size_t n,
		     const char *require_member, const struct store_who *who)
{
	int r;

	if (st->readonly)
		return -EROFS;
	if (store_path_kind(path) != STORE_PATH_ARRAY)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((r = store_line_check(path, i, &lines[i], require_member)) < 0)
			return r;
	if (n == 0)
		return 0;
	STORE_LOCK(st);
	return append_locked(st, path, lines, n, who);
}
