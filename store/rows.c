/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rows.c: the rows of an array doc, read and written a row at a time:
 * which of the stored rows the new bytes of a commit begin with
 * (known_prefix(), the rows of the last large docs kept in memory for that),
 * the new rows inserted (elems_insert(), elem_insert()), and appends, which
 * add rows without reading the doc (store_doc_append()).
 *
 * An array doc is kept one element a row in `elems`, each with its exact
 * bytes, the bytes before it ("pre": the comma and any white space), its
 * byte offset in the rendered file and where its JSON Lines line starts
 * (loff). Rows are never rewritten in place; array.c says how a commit
 * uses them.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/array_internal.h"
#include "store/doc_internal.h"
#include "store/json.h"
#include "store/search.h"
#include "store/src.h"
#include "store/util.h"

int span_push(void *ctx, size_t pre, size_t start, size_t end)
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

void doc_rows_free(struct doc_rows *l)
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
struct doc_rows *doc_rows_take(struct store *st, int64_t doc_id, int64_t rev)
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
void doc_rows_keep(struct store *st, struct doc_rows *l)
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
int row_holds(struct store *st, int64_t id, const char *pre, size_t pre_len, const struct src *src,
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
int known_prefix(struct store *st, const struct doc_row *d, const struct src *src, struct span_vec *sv,
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
int line_end(struct store *st, int64_t doc_id, int64_t seq_or_id, bool by_seq, int64_t *ret)
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

/* The statement elem_insert() runs. */
const char elem_insert_sql[] = "INSERT INTO elems(doc_id, seq, off, pre, len, json, key, ts, rev_from, h, loff, dg) "
				      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

/*
 * Inserts e with stmt, prepared from elem_insert_sql (and reset here), with
 * its identity (elem_bind_identity()), noted for the search index if it is
 * a message (search_row_added()); what names a failure to store it.
 * An element of src larger than ELEM_INLINE is never held whole: its row is
 * made with a zeroblob and the bytes written into it a piece at a time (a
 * history item is always read, to learn from it). A smaller one read from
 * a file is read through w.
 */
int elem_insert(struct store *st, sqlite3_stmt *stmt, const struct elem_new *e, const struct doc_layout *lay,
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
	if (big && (r = src_to_blob(st, e->src, e->at, e->len, "elems", "json", id)) < 0)
		return r;
	search_row_added(st, lay, id);
	return 0;
}

/*
 * Inserts elements from..n-1 of sv; *loff is where the first one's line
 * starts, and is moved on. Each row goes onto rows too, if not NULL.
 */
int elems_insert(struct store *st, int64_t doc_id, const struct src *src, const struct span_vec *sv,
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
