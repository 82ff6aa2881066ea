/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_outbox.c: the local revisions waiting to be pushed, made entries of
 * the shared log (sync_wire.h), in one read snapshot of the store.
 *
 * Each entry says what one revision did to each doc it changed, against
 * the log's last entry of that doc (its prev): the elements of prev's
 * version it keeps, then the rest of the new version's bytes. Usually the
 * revision before it of that doc is prev's own local revision, and what it
 * changed is in its rows alone: the rows it added (index elems_added), the
 * first of which is where the kept elements end, since a commit keeps a
 * prefix and writes the rest (store/array.c, merged.c, task.c). So an
 * append to a long conversation reads one row. Otherwise (another
 * machine's entry came in between, or a doc that was never in the log)
 * the two versions are compared element by element: their lengths, the
 * bytes before them and their digests, and bytes where no digest says.
 *
 * An array doc keeps the bytes around its elements (head and tail) for its
 * current version only: a past version is sent with the head and tail it
 * has now, which for Cline's files ("[" and "]") is exact, and for a CLI
 * 3.x session differs only in the fields around its messages.
 *
 * A doc whose content is one pulled entry's while revisions of its own were
 * waiting (they were merged with that entry, and the merge changed
 * nothing) is restated: one more entry with its content, so that the log's
 * last word on every doc is what this store holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/src.h"
#include "store/sync_internal.h"
#include "store/util.h"

/* ---- the log's last entry of each doc, as the round goes ------------------------------ */

struct prev {
	int64_t doc_id, seq, rev;
	bool touched; /* a revision of this round changed it */
};

struct prev_map {
	struct prev *v;
	size_t cap, n;
};

static size_t slot_of(const struct prev_map *m, int64_t doc_id)
{
	uint64_t h = (uint64_t)doc_id * UINT64_C(0x9e3779b97f4a7c15);
	size_t i = (size_t)(h >> 32) & (m->cap - 1);

	while (m->v[i].doc_id && m->v[i].doc_id != doc_id)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int map_grow(struct prev_map *m)
{
	struct prev_map g = { .cap = m->cap ? 2 * m->cap : 256 };

	if (!(g.v = calloc(g.cap, sizeof(*g.v))))
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i].doc_id)
			g.v[slot_of(&g, m->v[i].doc_id)] = m->v[i];
	g.n = m->n;
	free(m->v);
	*m = g;
	return 0;
}

/* The entry of doc_id: from the map, else from sync_docs (seq 0: never in the log). Store lock held. */
static int prev_get(struct store *st, struct prev_map *m, int64_t doc_id, struct prev **ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	size_t i;
	int r;

	i = m->cap ? slot_of(m, doc_id) : 0;
	if (!m->cap || !m->v[i].doc_id) {
		/* Grown only to add: a doc already there stays where it is (restates_make() walks the map). */
		if (2 * (m->n + 1) > m->cap) {
			if ((r = map_grow(m)) < 0)
				return r;
			i = slot_of(m, doc_id);
		}
		m->v[i] = (struct prev){ .doc_id = doc_id };
		m->n++;
		r = store_row_args(st, "SELECT seq, rev FROM sync_docs WHERE doc_id = ?1", NULL, 0, STORE_INTS(doc_id),
				   "cannot read the sync's docs", &stmt);
		if (r < 0 && r != -ENOENT)
			return r;
		if (r == 0) {
			m->v[i].seq = sqlite3_column_int64(stmt, 0);
			m->v[i].rev = sqlite3_column_int64(stmt, 1);
		}
	}
	*ret = &m->v[i];
	return 0;
}

/* ---- what is read of the store ---------------------------------------------------------- */

struct rev_info {
	int64_t id, doc_id, time_ns, pid;
	char *kind, *path, *comm, *detail;
};

static void rev_info_release(struct rev_info *r)
{
	free(r->kind);
	free(r->path);
	free(r->comm);
	free(r->detail);
	*r = (struct rev_info){ 0 };
}

static int rev_info_load(struct store *st, int64_t id, struct rev_info *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT kind, path, time_ns, coalesce(pid, 0), comm, doc_id, coalesce(detail, '') "
				   "FROM revisions WHERE id = ?1", NULL, 0, STORE_INTS(id), "cannot read a revision", &stmt);

	if (r < 0)
		return r;
	*ret = (struct rev_info){ .id = id, .time_ns = sqlite3_column_int64(stmt, 2), .pid = sqlite3_column_int64(stmt, 3),
				  .doc_id = sqlite3_column_int64(stmt, 5) };
	ret->kind = dup_text(stmt, 0);
	ret->path = dup_text(stmt, 1);
	ret->comm = sqlite3_column_type(stmt, 4) == SQLITE_NULL ? NULL : dup_text(stmt, 4);
	ret->detail = dup_text(stmt, 6);
	if (!ret->kind || !ret->path || !ret->detail || (sqlite3_column_type(stmt, 4) != SQLITE_NULL && !ret->comm)) {
		rev_info_release(ret);
		return -ENOMEM;
	}
	return 0;
}

/* The last local revision before rev that changed doc_id (0: none). */
static int touch_before(struct store *st, int64_t doc_id, int64_t rev, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT coalesce(max(rev), 0) FROM sync_touch WHERE doc_id = ?1 AND rev < ?2", NULL, 0,
			       STORE_INTS(doc_id, rev), "cannot read which docs commits changed", &stmt);

	if (r == 0)
		*ret = sqlite3_column_int64(stmt, 0);
	return r;
}

/* One row of a version: what tells it from another, and where its bytes are. */
struct vrow {
	int64_t id, off;
	size_t pre_len, len;
	uint64_t h;
	unsigned char dg[DIGEST_SIZE];
	bool has_dg;
	char *pre;
};

struct vrows {
	struct vrow *v;
	size_t n, alloc;
};

static void vrows_release(struct vrows *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].pre);
	free(l->v);
	*l = (struct vrows){ 0 };
}

/* The rows of doc_id's version at rev (rev 0: none), in order. */
static int vrows_load(struct store *st, int64_t doc_id, int64_t rev, struct vrows *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (rev <= 0)
		return 0;
	r = store_prepare_ints(st, "SELECT id, off, pre, len, h, dg FROM elems WHERE doc_id = ?1 AND rev_from <= ?2 "
				   "AND (rev_to IS NULL OR rev_to > ?2) ORDER BY off", STORE_INTS(doc_id, rev), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct vrow *w;

		if ((r = ARRAY_GROW(ret->v, ret->n, ret->alloc, 64)) < 0)
			return r;
		w = &ret->v[ret->n];
		*w = (struct vrow){ .id = sqlite3_column_int64(stmt, 0), .off = sqlite3_column_int64(stmt, 1),
				    .pre_len = (size_t)sqlite3_column_bytes(stmt, 2),
				    .len = (size_t)sqlite3_column_int64(stmt, 3), .h = (uint64_t)sqlite3_column_int64(stmt, 4),
				    .has_dg = sqlite3_column_bytes(stmt, 5) == DIGEST_SIZE };
		if (!(w->pre = strndup(w->pre_len ? (const char *)sqlite3_column_blob(stmt, 2) : "", w->pre_len)))
			return -ENOMEM;
		if (w->has_dg)
			memcpy(w->dg, sqlite3_column_blob(stmt, 5), DIGEST_SIZE);
		ret->n++;
	}
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot read a version's elements");
}

/* Whether rows a and b hold the same bytes: the same row, or equal lengths, bytes before and content. */
static int vrow_same(struct store *st, const struct vrow *a, const struct vrow *b, bool *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	*ret = a->id == b->id;
	if (*ret || a->len != b->len || a->pre_len != b->pre_len || memcmp(a->pre, b->pre, a->pre_len) != 0 ||
	    a->h != b->h)
		return 0;
	if (a->has_dg && b->has_dg) {
		*ret = memcmp(a->dg, b->dg, DIGEST_SIZE) == 0;
		return 0;
	}
	r = store_row_args(st, "SELECT (SELECT json FROM elems WHERE id = ?1) = (SELECT json FROM elems WHERE id = ?2)",
			   NULL, 0, STORE_INTS(a->id, b->id), "cannot compare two elements", &stmt);
	if (r == 0)
		*ret = sqlite3_column_int(stmt, 0) == 1;
	return r;
}

/* ---- writing an effect's bytes ------------------------------------------------------------ */

/* Copies the json of row id (len bytes, larger than ELEM_INLINE) into b, a piece at a time. */
static int put_large(struct store *st, struct sync_bytes *b, int64_t id, size_t len)
{
	sqlite3_blob *blob = NULL;
	_cleanup_free_ char *piece = malloc(SRC_CHUNK);
	int rc = SQLITE_OK, r = 0;

	if (!piece)
		return -ENOMEM;
	rc = sqlite3_blob_open(st->db, "main", "elems", "json", id, 0, &blob);
	for (size_t at = 0; rc == SQLITE_OK && r == 0 && at < len; at += SRC_CHUNK) {
		size_t k = len - at < SRC_CHUNK ? len - at : SRC_CHUNK;

		rc = sqlite3_blob_read(blob, piece, (int)k, (int)at);
		if (rc == SQLITE_OK)
			r = sync_bytes_add(b, piece, k);
	}
	sqlite3_blob_close(blob);
	return rc != SQLITE_OK ? store_fail(st, rc, "cannot read a large element") : r;
}

/*
 * Writes into b the bytes (pre and json) of the rows stmt gives (columns:
 * pre, json where len <= ELEM_INLINE, len, id), in order.
 */
static int put_rows(struct store *st, struct sync_bytes *b, sqlite3_stmt *stmt)
{
	int r = 0, rc;

	while (r == 0 && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		size_t len = (size_t)sqlite3_column_int64(stmt, 2);

		sync_bytes_add(b, sqlite3_column_blob(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0));
		if (sqlite3_column_type(stmt, 1) == SQLITE_NULL)
			r = put_large(st, b, sqlite3_column_int64(stmt, 3), len);
		else if ((size_t)sqlite3_column_bytes(stmt, 1) != len)
			r = -EIO;
		else
			r = sync_bytes_add(b, sqlite3_column_blob(stmt, 1), len);
	}
	if (r < 0)
		return r;
	return rc == SQLITE_DONE ? b->err : store_fail(st, rc, "cannot read elements");
}

/* The doc as a round sees it. */
struct doc_now {
	int64_t id, rev;
	int format;
	bool present;
	char *path, *head, *tail;
};

static void doc_now_release(struct doc_now *d)
{
	free(d->path);
	free(d->head);
	free(d->tail);
	*d = (struct doc_now){ 0 };
}

static int doc_now_load(struct store *st, int64_t id, struct doc_now *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT path, format, rev, present, head, tail FROM docs WHERE id = ?1", NULL, 0,
			       STORE_INTS(id), "cannot read a doc", &stmt);

	if (r < 0)
		return r;
	*ret = (struct doc_now){ .id = id, .format = sqlite3_column_int(stmt, 1), .rev = sqlite3_column_int64(stmt, 2),
				 .present = sqlite3_column_int(stmt, 3) != 0 };
	ret->path = dup_text(stmt, 0);
	ret->head = dup_text(stmt, 4);
	ret->tail = dup_text(stmt, 5);
	if (!ret->path || !ret->head || !ret->tail) {
		doc_now_release(ret);
		return -ENOMEM;
	}
	return 0;
}

/*
 * An array doc's effect for its version at rev, prev being p: the rows it
 * keeps of p's version, then the rest. fast: p's revision is the doc's
 * last before rev, so what rev changed is the rows it added.
 */
static int put_array(struct store *st, struct sync_bytes *b, const struct doc_now *d, const struct prev *p, int64_t rev,
		     int64_t nelems, bool fast)
{
	_cleanup_stmt_ sqlite3_stmt *sum = NULL, *rows = NULL;
	struct vrows pv = { 0 }, rv = { 0 };
	size_t head_len = strlen(d->head), tail_len = strlen(d->tail);
	uint64_t keep = 0, body = 0;
	int64_t from_off = 0;
	int r;

	if (fast) {
		r = store_row_args(st, "SELECT coalesce(sum(length(CAST(pre AS BLOB)) + len), 0), count(*), min(seq) "
				       "FROM elems WHERE doc_id = ?1 AND rev_from = ?2",
				   NULL, 0, STORE_INTS(d->id, rev), "cannot read what a commit added", &sum);
		if (r < 0)
			return r;
		body = (uint64_t)sqlite3_column_int64(sum, 0);
		if (sqlite3_column_int64(sum, 1) > 0)
			keep = (uint64_t)sqlite3_column_int64(sum, 2);
		else if (nelems >= 0)
			keep = (uint64_t)nelems;
		else
			fast = false; /* only removed elements, and how many are left is not recorded */
		if (fast && nelems >= 0 && (uint64_t)nelems != keep + (uint64_t)sqlite3_column_int64(sum, 1))
			fast = false; /* not a prefix kept and the rest written: compared element by element */
	}
	if (!fast) {
		bool same = true;

		if ((r = vrows_load(st, d->id, p->seq ? p->rev : 0, &pv)) < 0 || (r = vrows_load(st, d->id, rev, &rv)) < 0)
			goto out;
		for (keep = 0, body = 0; keep < pv.n && keep < rv.n; keep++) {
			if ((r = vrow_same(st, &pv.v[keep], &rv.v[keep], &same)) < 0)
				goto out;
			if (!same)
				break;
		}
		for (size_t i = keep; i < rv.n; i++)
			body += rv.v[i].pre_len + rv.v[i].len;
		from_off = keep < rv.n ? rv.v[keep].off : INT64_MAX;
	}
	if (keep == 0) {
		sync_put_effect(b, d->path, SYNC_FMT_ARRAY, p->seq, 0, NULL, 0);
		sync_put_rest_len(b, head_len + body + tail_len);
		sync_bytes_add(b, d->head, head_len);
	} else {
		sync_put_effect(b, d->path, SYNC_FMT_ARRAY, p->seq, keep, d->head, head_len);
		sync_put_rest_len(b, body + tail_len);
	}
	r = fast ? store_prepare_ints(st, "SELECT pre, CASE WHEN len <= ?3 THEN json END, len, id FROM elems "
					  "WHERE doc_id = ?1 AND rev_from = ?2 ORDER BY seq",
				      STORE_INTS(d->id, rev, (int64_t)ELEM_INLINE), &rows)
		 : store_prepare_ints(st, "SELECT pre, CASE WHEN len <= ?3 THEN json END, len, id FROM elems "
					  "WHERE doc_id = ?1 AND rev_from <= ?2 AND (rev_to IS NULL OR rev_to > ?2) "
					  "AND off >= ?4 ORDER BY off",
				      STORE_INTS(d->id, rev, (int64_t)ELEM_INLINE, from_off), &rows);
	if (r == 0)
		r = put_rows(st, b, rows);
	if (r == 0)
		r = sync_bytes_add(b, d->tail, tail_len);
out:
	vrows_release(&pv);
	vrows_release(&rv);
	return r;
}

/* The blob of doc_id written at rev exactly (exact), else the last one up to rev: 0, -ENOENT, -errno. */
static int blob_at(struct store *st, int64_t doc_id, int64_t rev, bool exact, sqlite3_stmt **ret)
{
	return store_row_args(st, exact ? "SELECT data FROM blobs WHERE doc_id = ?1 AND rev = ?2"
					 : "SELECT data FROM blobs WHERE doc_id = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1",
			      NULL, 0, STORE_INTS(doc_id, rev), "cannot read a file version", ret);
}

/* An effect of bytes (a whole doc, or one kept as found) or an empty one. */
static int put_bytes(struct sync_bytes *b, const char *path, int fmt, const struct prev *p, const void *data, size_t n)
{
	sync_put_effect(b, path, fmt, p->seq, 0, NULL, 0);
	sync_put_rest_len(b, n);
	return sync_bytes_add(b, data, n);
}

/*
 * The effect of revision ri on doc d (present: whether it left the doc
 * there; nelems: its elements then, -1 not known), prev p. 0 or -errno.
 */
static int put_effect(struct store *st, struct sync_bytes *b, const struct rev_info *ri, const struct doc_now *d,
		      const struct prev *p, bool present, int64_t nelems)
{
	_cleanup_stmt_ sqlite3_stmt *blob = NULL;
	bool array = store_path_kind(d->path) == STORE_PATH_ARRAY, raw = strstr(ri->detail, "\"raw\":true") != NULL;
	int64_t before = 0;
	int r;

	if (!present) {
		sync_put_effect(b, d->path, SYNC_FMT_REMOVED, p->seq, 0, NULL, 0);
		return sync_put_rest_len(b, 0);
	}
	if (strcmp(ri->kind, "create") == 0 && ri->doc_id == d->id)
		return put_bytes(b, d->path, array ? SYNC_FMT_ARRAY : SYNC_FMT_WHOLE, p, "", 0);
	r = blob_at(st, d->id, ri->id, true, &blob);
	if (r == -ENOENT && !array)
		r = blob_at(st, d->id, ri->id, false, &blob); /* a task back from the trash: its last version */
	if (r == 0)
		return put_bytes(b, d->path, raw || array ? SYNC_FMT_RAW : SYNC_FMT_WHOLE, p, sqlite3_column_blob(blob, 0),
				 (size_t)sqlite3_column_bytes(blob, 0));
	if (r != -ENOENT)
		return r;
	if (!array)
		return put_bytes(b, d->path, SYNC_FMT_WHOLE, p, "", 0);
	if ((r = touch_before(st, d->id, ri->id, &before)) < 0)
		return r;
	return put_array(st, b, d, p, ri->id, nelems, p->seq ? before == p->rev : before == 0);
}

/* ---- entries ---------------------------------------------------------------------------------- */

/* A touch: revision rev changed doc_id. */
struct touch {
	int64_t rev, doc_id, nelems;
	bool present;
};

static int out_push(struct sync_outbox *o, const char *dir, struct sync_out **ret)
{
	int r = ARRAY_GROW(o->v, o->n, o->alloc, 64);

	if (r < 0)
		return r;
	*ret = &o->v[o->n++];
	**ret = (struct sync_out){ 0 };
	sync_bytes_init(&(*ret)->payload, dir);
	return 0;
}

/* The task the path of a revision names, if any (free()). */
static char *task_of(const char *path)
{
	char id[72];

	return store_path_conversation(path, id, sizeof(id)) == 0 ? strdup(id) : NULL;
}

/* Frees docs[0..n). */
static void docs_release(struct doc_now *docs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		doc_now_release(&docs[i]);
	free(docs);
}

/*
 * Appends to o the entry of revision ri, whose touches are t[0..n) (nelems
 * -1 each for a restatement), as entry seq: its docs' entries in m become
 * this one. A doc forgotten since is left out. rev: the entry's revision
 * (negative: a restatement).
 */
static int entry_make(struct store *st, struct sync_outbox *o, const char *dir, struct prev_map *m, int64_t seq,
		      const struct rev_info *ri, int64_t rev, const struct sync_header *head, const struct touch *t,
		      size_t n)
{
	struct sync_header h = *head;
	struct doc_now *docs = calloc(n ? n : 1, sizeof(*docs));
	struct sync_out *out;
	size_t nd = 0;
	int r = docs ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < n; i++) {
		r = doc_now_load(st, t[i].doc_id, &docs[nd]);
		if (r == 0)
			nd++;
		else if (r == -ENOENT)
			r = 0; /* forgotten since: nothing of it is pushed */
	}
	if (r == 0)
		r = out_push(o, dir, &out);
	if (r == 0 && !(out->docs = calloc(nd ? nd : 1, sizeof(*out->docs))))
		r = -ENOMEM;
	if (r < 0)
		goto out;
	out->rev = rev;
	out->task = task_of(ri->path);
	h.neffects = (uint32_t)nd;
	if (h.task_op)
		h.task = out->task;
	sync_put_header(&out->payload, &h);
	for (size_t i = 0, k = 0; r == 0 && k < nd; i++) {
		struct prev *p;

		if (t[i].doc_id != docs[k].id)
			continue;
		if ((r = prev_get(st, m, docs[k].id, &p)) == 0)
			r = put_effect(st, &out->payload, ri, &docs[k], p, t[i].present, t[i].nelems);
		if (r == 0) {
			p->seq = seq;
			p->rev = rev < 0 ? -rev : rev;
			p->touched = true;
			out->docs[out->ndocs++] = docs[k].id;
		}
		k++;
	}
	if (r == 0)
		r = out->payload.err;
	if (r == 0)
		o->bytes += out->payload.len;
out:
	docs_release(docs, nd);
	return r;
}

/* The entry of local revision t[0].rev, whose touches are t[0..n). */
static int revision_make(struct store *st, struct sync_outbox *o, const char *dir, struct prev_map *m, int64_t seq,
			 const struct touch *t, size_t n)
{
	struct rev_info ri = { 0 };
	struct sync_header h;
	int r;

	if ((r = rev_info_load(st, t[0].rev, &ri)) < 0)
		return r == -ENOENT ? 0 : r; /* forgotten since */
	h = (struct sync_header){ .kind = ri.kind, .path = ri.path, .comm = ri.comm, .time_ns = ri.time_ns,
				  .pid = ri.pid };
	if (ri.doc_id == 0 && (strcmp(ri.kind, "trash") == 0 || strcmp(ri.kind, "restore") == 0) &&
	    (store_path_kind(ri.path) == STORE_PATH_DOC_DIR))
		h.task_op = strcmp(ri.kind, "trash") == 0 ? SYNC_TASK_TRASH : SYNC_TASK_RESTORE;
	r = entry_make(st, o, dir, m, seq, &ri, t[0].rev, &h, t, n);
	rev_info_release(&ri);
	return r;
}

/* A restatement of doc p's content (its local revision now), appended to o as entry seq. */
static int restate_make(struct store *st, struct sync_outbox *o, const char *dir, struct prev_map *m, struct prev *p,
			int64_t cur, int64_t seq)
{
	struct rev_info ri = { 0 };
	_cleanup_free_ char *path = NULL;
	struct touch t = { .rev = cur, .doc_id = p->doc_id, .nelems = -1, .present = true };
	struct sync_header h = { .kind = "sync", .comm = "convfs", .time_ns = now_ns() };
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	r = store_row_args(st, "SELECT path, present FROM docs WHERE id = ?1", NULL, 0, STORE_INTS(p->doc_id),
			   "cannot read a doc", &stmt);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (!(path = dup_text(stmt, 0)))
		return -ENOMEM;
	t.present = sqlite3_column_int(stmt, 1) != 0;
	if ((r = rev_info_load(st, cur, &ri)) < 0)
		return r == -ENOENT ? 0 : r;
	h.path = path;
	r = entry_make(st, o, dir, m, seq, &ri, -cur, &h, &t, 1);
	rev_info_release(&ri);
	return r;
}

/* The docs of this round whose content is a pulled entry's, not their last entry's: restated. */
static int restates_make(struct store *st, struct sync_outbox *o, const char *dir, struct prev_map *m, int64_t head)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < m->cap; i++) {
		_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
		struct prev *p = &m->v[i];

		if (!p->doc_id || !p->touched)
			continue;
		r = store_row_args(st, "SELECT d.rev FROM docs d WHERE d.id = ?1 AND d.rev != ?2 "
				       "AND EXISTS (SELECT 1 FROM sync_applied a WHERE a.rev = d.rev)",
				   NULL, 0, STORE_INTS(p->doc_id, p->rev), "cannot read a doc", &stmt);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r == 0) {
			int64_t cur = sqlite3_column_int64(stmt, 0);

			store_stmt_release(TAKE_PTR(stmt));
			r = restate_make(st, o, dir, m, p, cur, head + 1 + (int64_t)o->n);
		}
	}
	return r;
}

/* The touches of the revisions waiting, after pushed and up to upto, in order. */
static int touches_load(struct store *st, int64_t pushed, int64_t upto, struct touch **ret, size_t *ret_n)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct touch *v = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	r = store_prepare_ints(st, "SELECT t.rev, t.doc_id, t.present, coalesce(t.nelems, -1) FROM sync_touch t "
				   "WHERE t.rev > ?1 AND t.rev <= ?2 "
				   "AND NOT EXISTS (SELECT 1 FROM sync_applied a WHERE a.rev = t.rev) ORDER BY t.rev, t.doc_id",
			       STORE_INTS(pushed, upto), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if ((r = ARRAY_GROW(v, n, alloc, 256)) < 0) {
			free(v);
			return r;
		}
		v[n++] = (struct touch){ .rev = sqlite3_column_int64(stmt, 0), .doc_id = sqlite3_column_int64(stmt, 1),
					 .present = sqlite3_column_int(stmt, 2) != 0, .nelems = sqlite3_column_int64(stmt, 3) };
	}
	if (rc != SQLITE_DONE) {
		free(v);
		return store_fail(st, rc, "cannot read the commits to push");
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* sync_outbox_make() inside its read transaction. */
static int outbox_read(struct store *st, const char *dir, int64_t head, size_t max_entries, size_t max_bytes,
		       struct sync_outbox *o)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_free_ struct touch *t = NULL;
	struct prev_map m = { 0 };
	int64_t pushed, max;
	size_t n = 0, i, j;
	int r;

	r = store_row_args(st, "SELECT (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'sync_pushed'), "
			       "(SELECT coalesce(max(id), 0) FROM revisions)",
			   NULL, 0, NULL, 0, "cannot read the commits to push", &stmt);
	if (r < 0)
		return r;
	pushed = sqlite3_column_int64(stmt, 0);
	max = sqlite3_column_int64(stmt, 1);
	store_stmt_release(TAKE_PTR(stmt));
	if ((r = touches_load(st, pushed, max, &t, &n)) < 0)
		return r;
	o->upto = max < pushed ? pushed : max;
	o->complete = true;
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && t[j].rev == t[i].rev; j++)
			;
		if (o->n >= max_entries || o->bytes >= max_bytes) {
			o->upto = t[i].rev - 1;
			o->complete = false;
			break;
		}
		if ((r = revision_make(st, o, dir, &m, head + 1 + (int64_t)o->n, &t[i], j - i)) < 0)
			goto out;
	}
	if (o->complete)
		r = restates_make(st, o, dir, &m, head);
out:
	free(m.v);
	return r;
}

int sync_outbox_make(struct store *st, const char *dir, int64_t head, size_t max_entries, size_t max_bytes,
		     struct sync_outbox *ret)
{
	STORE_LOCK(st);
	struct sync_outbox o = { 0 };
	int r;

	store_blob_drop(st);
	if ((r = store_exec(st, "BEGIN")) < 0)
		return r;
	r = outbox_read(st, dir, head, max_entries, max_bytes, &o);
	sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	if (r < 0) {
		sync_outbox_release(&o);
		return r;
	}
	*ret = o;
	return 0;
}
