/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_apply.c: entries pulled from the shared log, applied to the store.
 *
 * Every entry is applied as written: each doc it changes becomes exactly
 * the version the other machine had (its bytes, its time, its kind), so
 * that every store holds the same versions, and the next entry, which
 * builds on that version, finds it here. A doc this store changed since
 * its last entry (its own commits, not pushed yet) is read first, and
 * once the entries are applied, what it held is committed again on top as
 * a writer's save whose base is that last entry: a three-way merge
 * (docs/MERGE.md), so that what both machines added stays. That merge is
 * a commit of this store like any other, pushed in its turn; the log's
 * next word on the doc is then what both made.
 *
 * A batch of entries is one transaction of the sync's own connection, its
 * bookkeeping included (sync_seen, sync_docs, sync_applied, meta
 * sync_pulled): a daemon killed in the middle applies the batch again from
 * its start, and no entry is ever applied twice. A batch ends after
 * BATCH_MS, so that the commits of requests, which wait for it (SQLite's
 * one writer), wait no longer than that.
 *
 * The usual entry extends the doc's current version: its kept elements are
 * this store's current rows, and the rest is scanned and inserted after
 * them as the store's own commits do (apply_rows()), so an append to a
 * 20 MB conversation writes one row here too. Otherwise the version is
 * put together (the kept elements of the version the entry builds on,
 * then the rest) and committed as written (store_commit()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/array_internal.h"
#include "store/doc_internal.h"
#include "store/sync_internal.h"
#include "store/util.h"

/* A batch ends once it has run this long (and is applied, bookkeeping included). */
#define BATCH_MS 250

void sync_in_release(struct sync_in *in)
{
	sync_bytes_release(&in->payload);
}

void sync_changed_release(struct sync_changed *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->paths[i]);
	free(c->paths);
	c->paths = NULL;
	c->n = c->alloc = 0;
	c->forgot = false;
}

static int changed_add(struct sync_changed *c, const char *path)
{
	int r;

	if (c->n && strcmp(c->paths[c->n - 1], path) == 0)
		return 0;
	if ((r = ARRAY_GROW(c->paths, c->n, c->alloc, 16)) < 0)
		return r;
	if (!(c->paths[c->n] = strdup(path)))
		return -ENOMEM;
	c->n++;
	return 0;
}

/* A doc this store changed since its last entry: what it held, merged again once the batch is applied. */
struct rebase {
	char *path;
	int64_t base_rev; /* the local revision of its last entry; 0: it never had one */
	bool present;
	struct sync_bytes held;
};

struct batch {
	struct store *st;
	const char *machine;
	struct rebase *v;
	size_t n, alloc;
	struct sync_changed *changed;
};

static void batch_release(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->v[i].path);
		sync_bytes_release(&b->v[i].held);
	}
	free(b->v);
}

/* ---- the bookkeeping ------------------------------------------------------------------ */

/* Doc path's row (-ENOENT: none) and its last entry (seq 0: none). */
struct doc_sync {
	struct doc_row d;
	bool exists;
	int64_t seq, rev;
};

static int doc_sync_load(struct store *st, const char *path, struct doc_sync *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	*ret = (struct doc_sync){ 0 };
	r = doc_lookup(st, path, &ret->d);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	ret->exists = true;
	r = store_row_args(st, "SELECT seq, rev FROM sync_docs WHERE doc_id = ?1", NULL, 0, STORE_INTS(ret->d.id),
			   "cannot read the sync's docs", &stmt);
	if (r == 0) {
		ret->seq = sqlite3_column_int64(stmt, 0);
		ret->rev = sqlite3_column_int64(stmt, 1);
	}
	return r == -ENOENT ? 0 : r;
}

/* Doc path is at entry seq with the content of local revision rev; rev new: it applied that entry. */
static int doc_synced(struct store *st, const char *path, int64_t seq, int64_t rev, bool made)
{
	STORE_LOCK(st);
	int r = store_run_args(st, "INSERT INTO sync_docs(doc_id, seq, rev) SELECT id, ?2, ?3 FROM docs WHERE path = ?1 "
				   "ON CONFLICT(doc_id) DO UPDATE SET seq = excluded.seq, rev = excluded.rev",
			       STORE_TEXTS(path), STORE_INTS(seq, rev), "cannot record a pulled commit");

	if (r >= 0 && made)
		r = store_run(st, "INSERT OR REPLACE INTO sync_applied(rev, seq) VALUES (?1, ?2)", STORE_INTS(rev, seq),
			      "cannot record a pulled commit");
	return r < 0 ? r : 0;
}

static int seen(struct store *st, int64_t seq, int64_t rev, bool mine)
{
	STORE_LOCK(st);

	return store_run(st, "INSERT OR REPLACE INTO sync_seen(seq, rev, mine) VALUES (?1, ?2, ?3)",
			 STORE_INTS(seq, rev, mine), "cannot record a pulled commit");
}

/* One of this machine's own entries, pushed before the store could record it: recorded now. */
static int own_entry(struct store *st, const struct sync_in *in, const struct sync_entry *e)
{
	int64_t rev = in->rev < 0 ? -in->rev : in->rev;
	int r = seen(st, in->seq, rev, true);

	for (size_t i = 0; r == 0 && i < e->neffects; i++)
		r = doc_synced(st, e->effects[i].path, in->seq, rev, false);
	if (r == 0 && in->rev > 0) {
		STORE_LOCK(st);
		r = store_run(st, "UPDATE meta SET value = ?1 WHERE key = 'sync_pushed' AND CAST(value AS INTEGER) < ?1",
			      STORE_INTS(in->rev), "cannot record a pushed commit");
	}
	return r;
}

/* ---- what a doc held, read before the batch changes it --------------------------------- */

static int read_all(struct store *st, const char *path, struct sync_bytes *out)
{
	struct store_snap *snap = NULL;
	_cleanup_free_ char *buf = malloc(SRC_CHUNK);
	off_t off = 0;
	ssize_t n;
	int r = buf ? store_snap_open(st, path, &snap) : -ENOMEM;

	while (r == 0 && (n = store_snap_read(st, snap, buf, SRC_CHUNK, off)) != 0) {
		if (n < 0)
			r = (int)n;
		else if ((r = sync_bytes_add(out, buf, (size_t)n)) == 0)
			off += n;
	}
	store_snap_free(snap);
	return r;
}

/*
 * Before the first entry of the batch changes doc ds: if this store changed
 * it since its last entry, what it holds now is kept, to merge again.
 */
static int rebase_note(struct batch *b, const char *path, const struct doc_sync *ds)
{
	struct rebase *rb;
	int r;

	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->v[i].path, path) == 0)
			return 0;
	if (!ds->exists || ds->d.rev == ds->rev)
		return 0;
	if ((r = ARRAY_GROW(b->v, b->n, b->alloc, 8)) < 0)
		return r;
	rb = &b->v[b->n];
	*rb = (struct rebase){ .base_rev = ds->seq ? ds->rev : 0, .present = ds->d.present && ds->d.format != DOC_RAW };
	sync_bytes_init(&rb->held, NULL);
	if (!(rb->path = strdup(path)))
		return -ENOMEM;
	b->n++;
	if (rb->present && (r = read_all(b->st, path, &rb->held)) < 0) {
		log_err("sync: cannot read '%s' to merge it with another machine's commit: %s", path, strerror(-r));
		return r;
	}
	return 0;
}

/* Commits what each changed doc held on top of what the batch made it: a merge against its last entry. */
static int rebase_all(struct batch *b)
{
	static const struct store_who who = { .pid = 0, .comm = "convfs-sync" };
	int r = 0;

	for (size_t i = 0; r == 0 && i < b->n; i++) {
		struct rebase *rb = &b->v[i];
		struct store_base *base = NULL;
		struct store_commit c = { .path = rb->path, .who = &who, .kind = "merge", .merge = true, .fd = -1 };
		_cleanup_close_ int fd = -1;
		const char *data = NULL;

		if (!rb->present || rb->held.len == 0)
			continue; /* removed here, or empty: what the other machine made stays */
		if ((r = sync_bytes_slice(&rb->held, 0, rb->held.len, &data, &fd)) < 0)
			break;
		if (rb->base_rev && (r = store_base_at(b->st, rb->path, rb->base_rev, &base)) < 0)
			break;
		c.base = base;
		c.data = data;
		c.fd = fd;
		c.len = rb->held.len;
		r = store_commit(b->st, &c, NULL, NULL);
		store_base_free(base);
		if (r < 0)
			log_err("sync: cannot merge what '%s' held here with another machine's commit: %s", rb->path,
				strerror(-r));
		else
			r = changed_add(b->changed, rb->path);
	}
	return r;
}

/* ---- an array doc's entry that extends its current version ------------------------------- */

struct rest_src {
	const struct src *rest;
	size_t base; /* the offset of the rest's first byte in the file */
};

static int rest_read(void *ctx, size_t off, char *buf, size_t n)
{
	const struct rest_src *rs = ctx;

	if (off < rs->base)
		return -EIO; /* never: the scan starts at the rest */
	return src_read(rs->rest, off - rs->base, buf, n);
}

/* The end of element seq (current) of doc d: where the rest starts, and where its next line does. */
static int kept_end(struct store *st, const struct doc_row *d, int64_t seq, int64_t *ret_off, int64_t *ret_loff)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT off + length(CAST(pre AS BLOB)) + len, coalesce(loff, 0) + len + 1 FROM elems "
				   "WHERE doc_id = ?1 AND seq = ?2 AND rev_to IS NULL",
			       NULL, 0, STORE_INTS(d->id, seq), "cannot find an element's end", &stmt);

	if (r == 0) {
		*ret_off = sqlite3_column_int64(stmt, 0);
		*ret_loff = sqlite3_column_int64(stmt, 1);
	}
	return r == -ENOENT ? -EIO : r;
}

/* Inserts the rest's elements sv (their offsets in the file) after the kept ones, as revision rev. */
static int rows_insert(struct store *st, const struct doc_row *d, const struct doc_layout *lay, const struct rest_src *rs,
		       const struct span_vec *sv, uint64_t keep, int64_t rev, int64_t now, int64_t *loff)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_src_window_ struct src_window pre = SRC_WINDOW_INIT, scratch = SRC_WINDOW_INIT;
	int r = store_prepare(st, elem_insert_sql, &stmt);

	for (size_t i = 0; r == 0 && i < sv->n; i++) {
		const struct span *e = &sv->v[i];
		struct elem_new row = { .doc_id = d->id, .seq = (int64_t)(keep + i), .off = (int64_t)e->pre, .rev = rev,
					.loff = *loff, .pre_len = e->start - e->pre, .src = rs->rest,
					.at = e->start - rs->base, .len = e->end - e->start };

		if ((r = src_get(rs->rest, e->pre - rs->base, row.pre_len, &pre, &row.pre)) == 0)
			r = elem_insert(st, stmt, &row, lay, now, &scratch, "cannot store an element");
		*loff += (int64_t)row.len + 1;
	}
	return r;
}

/*
 * The entry keeps the first keep elements of doc path's current version
 * and says the rest (rest): written after them as revision of kind, who,
 * time now. In its own savepoint. 0, or -errno (-EINVAL: not an array's
 * rest, logged).
 */
static int apply_rows(struct store *st, const char *path, const struct doc_layout *lay, uint64_t keep,
		      const struct src *rest, const struct store_who *who, const char *kind, int64_t now)
{
	STORE_LOCK(st);
	struct doc_row d = { 0 };
	struct span_vec sv = { 0 };
	struct json_error jerr = { 0 };
	struct rest_src rs = { .rest = rest };
	_cleanup_src_window_ struct src_window tb = SRC_WINDOW_INIT;
	struct json_reader rd = { .read = rest_read, .ctx = &rs };
	size_t head = 0, tail = 0;
	int64_t off = 0, loff = 0, rev = 0;
	const char *tl;
	char detail[160];
	int r;

	if ((r = doc_begin(st, path, DOC_ARRAY, now, &d)) < 0)
		return r;
	if ((r = kept_end(st, &d, (int64_t)keep - 1, &off, &loff)) < 0)
		goto rollback;
	rs.base = (size_t)off;
	rd.len = rs.base + rest->len;
	r = json_scan_array_read(&rd, lay->array_member, &(struct json_known){ .head = strlen(d.head), .end = rs.base },
				 span_push, &sv, &head, &tail, &jerr);
	if (r == -EINVAL)
		log_err("sync: refusing another machine's commit of '%s': not %s: %s at byte %zu", path,
			lay->array_member ? "a JSON object with an array of messages" : "a JSON array", jerr.msg, jerr.offset);
	if (r < 0 || (r = revision_add(st, path, who, kind, now, &rev)) < 0 ||
	    (r = elems_close(st, d.id, (int64_t)keep, rev)) < 0 ||
	    (r = rows_insert(st, &d, lay, &rs, &sv, keep, rev, now, &loff)) < 0 ||
	    (r = src_get(rest, tail - rs.base, rd.len - tail, &tb, &tl)) < 0)
		goto rollback;
	r = doc_update(st, d.id, DOC_ARRAY, (int64_t)rd.len, now, rev, d.head, strlen(d.head), tl, rd.len - tail,
		       (int64_t)(keep + sv.n), loff);
	snprintf(detail, sizeof(detail), "{\"kept\":%" PRIu64 ",\"superseded\":%" PRId64 ",\"added\":%zu,\"size\":%zu}",
		 keep, d.nelems - (int64_t)keep, sv.n, rd.len);
	if (r == 0 && (r = revision_end(st, rev, d.id, detail)) == 0)
		goto out;
rollback:
	tx_rollback(st);
out:
	free(sv.v);
	doc_row_release(&d);
	return r;
}

/* ---- one effect -------------------------------------------------------------------------- */

/*
 * The version an array effect says, put together into out: head, the first
 * keep elements of doc_id's version at rev (this store's copy of the entry
 * it builds on), then the rest.
 */
static int render(struct store *st, int64_t doc_id, int64_t rev, const struct sync_bytes *p, const struct sync_effect *e,
		  struct sync_bytes *out)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	_cleanup_free_ char *buf = malloc(SRC_CHUNK);
	uint64_t n = 0;
	int r, rc;

	if (!buf)
		return -ENOMEM;
	for (size_t at = 0; at < e->head_len; at += SRC_CHUNK) {
		size_t k = e->head_len - at < SRC_CHUNK ? e->head_len - at : SRC_CHUNK;

		if ((r = sync_bytes_read(p, e->head_at + at, buf, k)) < 0 || (r = sync_bytes_add(out, buf, k)) < 0)
			return r;
	}
	r = store_prepare_ints(st, "SELECT pre, json FROM elems WHERE doc_id = ?1 AND rev_from <= ?2 "
				   "AND (rev_to IS NULL OR rev_to > ?2) ORDER BY off LIMIT ?3",
			       STORE_INTS(doc_id, rev, (int64_t)e->keep), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		sync_bytes_add(out, sqlite3_column_blob(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0));
		if ((r = sync_bytes_add(out, sqlite3_column_blob(stmt, 1), (size_t)sqlite3_column_bytes(stmt, 1))) < 0)
			return r;
		n++;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read the version a commit builds on");
	if (n != e->keep)
		return -ENOENT;
	for (size_t at = 0; at < e->rest_len; at += SRC_CHUNK) {
		size_t k = e->rest_len - at < SRC_CHUNK ? e->rest_len - at : SRC_CHUNK;

		if ((r = sync_bytes_read(p, e->rest_at + at, buf, k)) < 0 || (r = sync_bytes_add(out, buf, k)) < 0)
			return r;
	}
	return out->err;
}

/* The doc made an empty file (what an open with O_CREAT leaves before the first save), unless it holds something. */
static int apply_empty(struct store *st, const char *path, const struct store_who *who)
{
	struct store_stat s;
	int r = store_doc_stat(st, path, &s);

	if (r == 0)
		return 0; /* it holds a version already: kept (nothing can be committed empty) */
	r = store_doc_create(st, path, who);
	return r == -EEXIST ? 0 : r;
}

/* Removes doc path, as revision of kind and time now. */
static int apply_removal(struct store *st, const char *path, const struct store_who *who, const char *kind, int64_t now)
{
	STORE_LOCK(st);
	struct doc_row d = { 0 };
	int64_t rev;
	int r = tx_begin(st);

	if (r < 0)
		return r;
	r = doc_lookup(st, path, &d);
	if (r == -ENOENT || (r == 0 && !d.present)) {
		r = 0;
		goto rollback; /* not here: nothing to remove */
	}
	if (r == 0 && (r = revision_replace(st, path, who, kind, &d, now, &rev)) == 0 &&
	    (r = doc_set_present(st, d.id, false, rev, now)) == 0 && (r = revision_end(st, rev, d.id, NULL)) == 0)
		goto out;
rollback:
	tx_rollback(st);
out:
	doc_row_release(&d);
	return r;
}

/* Commits the effect's version as written: bytes [off, off + n) of p, or the rendered version out. */
static int commit_written(struct store *st, const struct sync_bytes *p, size_t off, size_t n, const char *path,
			  bool raw, const struct store_who *who, const char *kind, int64_t now)
{
	struct store_commit c = { .path = path, .who = who, .kind = kind, .raw = raw, .time_ns = now, .fd = -1 };
	_cleanup_close_ int fd = -1;
	int r;

	if (n == 0)
		return apply_empty(st, path, who);
	if ((r = sync_bytes_slice(p, off, n, &c.data, &fd)) < 0)
		return r;
	c.fd = fd;
	c.len = n;
	return store_commit(st, &c, NULL, NULL);
}

/* Applies effect e of entry en (pulled as seq) as written; ds: the doc before it. */
static int apply_effect(struct batch *b, const struct sync_in *in, const struct sync_entry *en,
			const struct sync_effect *e, const struct doc_sync *ds)
{
	struct store *st = b->st;
	struct store_who who = { .pid = 0, .comm = en->comm };
	struct sync_bytes built;
	struct doc_layout lay = { 0 };
	int r;

	switch (e->fmt) {
	case SYNC_FMT_REMOVED:
		return apply_removal(st, e->path, &who, en->kind, en->time_ns);
	case SYNC_FMT_WHOLE:
	case SYNC_FMT_RAW:
		return commit_written(st, &in->payload, e->rest_at, e->rest_len, e->path, e->fmt == SYNC_FMT_RAW, &who,
				      en->kind, en->time_ns);
	}
	if (e->keep == 0)
		return commit_written(st, &in->payload, e->rest_at, e->rest_len, e->path, false, &who, en->kind,
				      en->time_ns);
	if (doc_layout_of(e->path, &lay) < 0)
		return -EPROTO;
	if (ds->exists && ds->d.present && ds->d.format == DOC_ARRAY && ds->d.rev == ds->rev &&
	    e->keep <= (uint64_t)ds->d.nelems && e->head_len == strlen(ds->d.head)) {
		/* This store's current version is the one the entry builds on: its rows stay, the rest goes after them. */
		_cleanup_free_ char *head = malloc(e->head_len + 1);
		struct src rest = { .fd = -1, .len = e->rest_len };
		_cleanup_close_ int fd = -1;

		if (!head)
			return -ENOMEM;
		if ((r = sync_bytes_read(&in->payload, e->head_at, head, e->head_len)) < 0)
			return r;
		if (memcmp(head, ds->d.head, e->head_len) == 0) {
			if ((r = sync_bytes_slice(&in->payload, e->rest_at, e->rest_len, &rest.mem, &fd)) < 0)
				return r;
			rest.fd = fd;
			if (!rest.mem && fd < 0)
				rest.mem = "";
			return apply_rows(st, e->path, &lay, e->keep, &rest, &who, en->kind, en->time_ns);
		}
	}
	sync_bytes_init(&built, NULL);
	r = render(st, ds->d.id, ds->rev, &in->payload, e, &built);
	if (r == 0)
		r = commit_written(st, &built, 0, built.len, e->path, false, &who, en->kind, en->time_ns);
	sync_bytes_release(&built);
	return r;
}

/* Whether effect e follows what this store has of its doc: the entry it builds on is the doc's last here. */
static bool follows(const struct sync_in *in, const struct sync_effect *e, const struct doc_sync *ds)
{
	if (e->prev == ds->seq)
		return true;
	/* A doc this store never had (or forgot) is taken whole, or its removal is nothing here. */
	if ((!ds->exists || !ds->seq) && (e->fmt != SYNC_FMT_ARRAY || e->keep == 0))
		return true;
	log_err("sync: entry %" PRId64 " of the log changes '%s' from entry %" PRId64 ", but this store has it at entry %"
		PRId64 "; that change is not applied here", in->seq, e->path, e->prev, ds->seq);
	return false;
}

/* The last revision of the store (0: none). */
static int last_rev(struct store *st, int64_t *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT coalesce(max(id), 0) FROM revisions", NULL, 0, NULL, 0,
			       "cannot read the revision log", &stmt);

	if (r == 0)
		*ret = sqlite3_column_int64(stmt, 0);
	return r;
}

/* Revisions after..upto were made by applying entry seq: never pushed. */
static int applied(struct store *st, int64_t after, int64_t upto, int64_t seq)
{
	STORE_LOCK(st);
	int r = store_run(st, "INSERT OR REPLACE INTO sync_applied(rev, seq) SELECT id, ?3 FROM revisions "
			      "WHERE id > ?1 AND id <= ?2", STORE_INTS(after, upto, seq), "cannot record a pulled commit");

	return r;
}

/*
 * A task's trip to the trash or back, made here by the store's own
 * operation, which makes it one revision of the task's folder as on the
 * other machine (and the next trip finds it). A task this store does not
 * have there is left to the entry's effects.
 */
static int task_op(struct batch *b, const struct sync_entry *en)
{
	struct store_who who = { .pid = 0, .comm = en->comm };
	char dir[96];
	int r;

	r = en->task_op == SYNC_TASK_TRASH ? store_task_trash(b->st, en->task, &who)
					   : store_task_restore(b->st, en->task, &who);
	if (r < 0 && r != -ENOENT)
		return r;
	{
		STORE_LOCK(b->st);

		placement_moved(b->st);
		r = store_run_args(b->st, "UPDATE tasks SET trashed_ns = CASE WHEN ?2 THEN coalesce(trashed_ns, ?3) END "
					  "WHERE id = ?1",
				   STORE_TEXTS(en->task), STORE_INTS(en->task_op == SYNC_TASK_TRASH, en->time_ns),
				   "cannot move a task to or from the trash");
	}
	if (r >= 0 && store_conversation_dir(en->task, dir, sizeof(dir)) == 0)
		r = changed_add(b->changed, dir);
	return r < 0 ? r : 0;
}

/*
 * One entry of another machine: its task's trip, if any, then each effect
 * as written (what the trip did already changes nothing more), and the
 * bookkeeping: every revision it made is one that applied it.
 */
static int apply_entry(struct batch *b, const struct sync_in *in, const struct sync_entry *en)
{
	_cleanup_free_ bool *ok = calloc(en->neffects ? en->neffects : 1, sizeof(*ok));
	int64_t before = 0, after = 0;
	int r = ok ? last_rev(b->st, &before) : -ENOMEM;

	for (size_t i = 0; r == 0 && i < en->neffects; i++) {
		struct doc_sync ds;

		if ((r = doc_sync_load(b->st, en->effects[i].path, &ds)) == 0 && (ok[i] = follows(in, &en->effects[i], &ds)))
			r = rebase_note(b, en->effects[i].path, &ds);
		doc_row_release(&ds.d);
	}
	if (r == 0 && en->task_op)
		r = task_op(b, en);
	for (size_t i = 0; r == 0 && i < en->neffects; i++) {
		struct doc_sync ds;

		if (!ok[i])
			continue;
		if (en->effects[i].fmt != SYNC_FMT_REMOVED && b->changed->prepare)
			b->changed->prepare(b->changed->ctx, en->effects[i].path);
		if ((r = doc_sync_load(b->st, en->effects[i].path, &ds)) == 0)
			r = apply_effect(b, in, en, &en->effects[i], &ds);
		doc_row_release(&ds.d);
	}
	if (r == 0 && (r = last_rev(b->st, &after)) == 0 && after > before)
		r = applied(b->st, before, after, in->seq);
	for (size_t i = 0; r == 0 && i < en->neffects; i++) {
		struct doc_sync ds;

		if (!ok[i] || (r = doc_sync_load(b->st, en->effects[i].path, &ds)) < 0)
			continue;
		if (ds.exists)
			r = doc_synced(b->st, en->effects[i].path, in->seq, ds.d.rev, false);
		if (r == 0 && after > before)
			r = changed_add(b->changed, en->effects[i].path);
		doc_row_release(&ds.d);
	}
	return r < 0 ? r : seen(b->st, in->seq, after > before ? after : 0, false);
}

/* ---- a batch ------------------------------------------------------------------------------------ */

/* Ends the batch: committed (ok), or all of it rolled back. */
static int batch_end(struct store *st, bool ok)
{
	if (ok)
		return store_batch_end(st);
	store_lock(st);
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	st->batch_depth = 0;
	st->tx_open = false;
	st->placement_pending = false;
	pthread_cond_broadcast(&st->batch_over);
	store_unlock(st);
	return 0;
}

static int64_t ms_now(void)
{
	return mono_ns() / 1000000;
}

/* Whether en is another machine's forget: applied on its own, outside a batch (it rewrites the file). */
static bool is_forget(const char *machine, const struct sync_in *in, const struct sync_entry *en)
{
	return strcmp(in->machine, machine) != 0 && strcmp(en->kind, "forget") == 0 && (en->forget_match || en->forget_task);
}

int sync_apply(struct store *st, const char *machine, const struct sync_in *in, size_t n,
	       struct sync_changed *changed)
{
	struct batch b = { .st = st, .machine = machine, .changed = changed };
	int64_t start = ms_now();
	struct sync_entry en;
	size_t done = 0;
	int r;

	if (n == 0)
		return 0;
	if ((r = sync_decode(&in[0].payload, &en)) < 0)
		return r;
	if (is_forget(machine, &in[0], &en)) {
		/* Anything the daemon keeps may hold what goes: told before (its readers let go) and after. */
		changed->forgot = true;
		if (changed->tell)
			changed->tell(changed->ctx, NULL);
		r = sync_forget_apply(st, &in[0], &en);
		sync_entry_release(&en);
		return r < 0 ? r : 1;
	}
	sync_entry_release(&en);
	if ((r = store_batch_begin(st)) < 0)
		return r;
	for (; r == 0 && done < n && (done == 0 || ms_now() - start < BATCH_MS); done++) {
		if ((r = sync_decode(&in[done].payload, &en)) < 0)
			break;
		if (is_forget(machine, &in[done], &en)) {
			sync_entry_release(&en);
			break; /* the next batch begins with it */
		}
		if (strcmp(in[done].machine, machine) == 0)
			r = own_entry(st, &in[done], &en);
		else
			r = apply_entry(&b, &in[done], &en);
		sync_entry_release(&en);
	}
	if (r == 0)
		r = rebase_all(&b);
	if (r == 0) {
		STORE_LOCK(st);
		char seq[24];

		snprintf(seq, sizeof(seq), "%" PRId64, in[done - 1].seq);
		r = store_run_args(st, "UPDATE meta SET value = ?1 WHERE key = 'sync_pulled'", STORE_TEXTS(seq), NULL, 0,
				   "cannot record the pulled commits");
		r = r < 0 ? r : 0;
	}
	batch_release(&b);
	if (r < 0) {
		batch_end(st, false);
		return r;
	}
	r = batch_end(st, true);
	return r < 0 ? r : (int)done;
}
