/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * merged.c: merged commits of array docs, and the bases they merge against.
 *
 * When others committed a doc since a writer's base, the commit is a
 * three-way merge (docs/MERGE.md): the base, what is stored and what the
 * writer wrote, each as a list of identities (load_rows(), new_list()), go
 * to merge_lists() (merge.c, no SQLite), and write_merged() stores the
 * result as the doc's new current rows, keeping those up to the first
 * difference. A base is the revision a writer last read or wrote, or, after
 * a merge, the list of what it wrote (an explicit list): what it wrote is
 * what its next save derives from, not what the merge stored.
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
			int64_t id;

			if ((r = elem_copy_large(st, e->ref, &c, &id)) < 0)
				return r;
			search_row_added(st, lay, id);
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
			search_row_added(st, lay, sqlite3_last_insert_rowid(st->db));
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

int array_commit_merge(struct store *st, struct array_commit *a)
{
	/* Without a base the writer has seen nothing: what is stored stays. */
	static const struct merge_list nothing_seen = { 0 };
	const struct store_commit *c = a->c;
	const struct store_base *base = a->base;
	const struct doc_row *d = &a->d;
	const struct merge_list *bl = &nothing_seen;
	struct merge_list stored = { 0 }, base_loaded = { 0 }, result = { 0 };
	_cleanup_sb_ struct sb stored_bytes = SB_INIT, base_bytes = SB_INIT;
	struct fetch_ctx fc = { st, d->id };
	struct merge_stats ms = { 0 };
	bool is_history = a->lay->ident == IDENT_ITEM_ID;
	int r;

	if ((r = new_list(&a->src, &a->sv, a->lay->ident, &a->written, &a->written_bytes)) < 0)
		goto out;
	r = load_rows(st, d->id, d->present ? ROWS_CURRENT : d->rev, !d->present, a->lay->ident, &stored, &stored_bytes);
	if (r < 0)
		goto out;
	if (base && base->explicit_list) {
		bl = &base->list;
	} else if (base) {
		if ((r = load_rows(st, d->id, base->rev, false, a->lay->ident, &base_loaded, &base_bytes)) < 0)
			goto out;
		if (c->ws_key && (r = filter_ws(st, &base_loaded, *c->ws_key ? c->ws_key : NULL)) < 0)
			goto out;
		bl = &base_loaded;
	}
	r = merge_lists(is_history ? MERGE_HISTORY : MERGE_MESSAGES, bl, base && base->read, &stored, &a->written,
			fetch_by_hash, &fc, &result, &ms);
	if (r < 0)
		goto out;
	a->merged = !merged_is_new(&result, &a->written);
	if ((r = revision_add(st, c->path, c->who, a->merged ? "merge" : c->kind, a->now, &a->rev)) < 0)
		goto out;
	r = write_merged(st, d, &stored, &result, &a->src, a->hd, &a->sv, a->head, a->tail, a->rev, a->now, a->lay,
			 &a->size, &a->lsize);
	if (r < 0)
		goto out;
	r = doc_update(st, d->id, DOC_ARRAY, a->size, a->now, a->rev, a->hd, a->head, a->tl, a->len - a->tail,
		       (int64_t)result.n, a->lsize);
	if (r < 0)
		goto out;
	snprintf(a->detail, sizeof(a->detail),
		 "{\"merged\":%s,\"base\":%" PRId64 ",\"head\":%" PRId64 ",\"written\":%zu,\"result\":%zu,"
		 "\"from_writer\":%zu,\"kept_stored\":%zu,\"others_kept\":%zu,\"removed\":%zu,"
		 "\"fields_merged\":%zu,\"size\":%" PRId64 "}",
		 a->merged ? "true" : "false", base ? base->rev : (int64_t)-1, d->rev, a->written.n, result.n,
		 ms.from_new, ms.from_head, ms.others_kept, ms.removed, ms.fields, a->size);
out:
	merge_list_release(&stored);
	merge_list_release(&base_loaded);
	merge_list_release(&result);
	return r;
}
