/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * read.c: stat, lists, and snapshots of docs.
 *
 * A snapshot is one version of a doc, pinned at its revision: whatever is
 * committed meanwhile, a reader of a snapshot reads that version whole, as
 * the file or as JSON Lines (the view), by byte ranges found with indexed
 * lookups, never rendered whole.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/doc_internal.h"
#include "store/json.h"
#include "store/util.h"

/* ---- stat, list, snapshots -------------------------------------------------- */

static void stat_from_row(sqlite3_stmt *stmt, int col, struct store_stat *s)
{
	s->ino = STORE_INO_BASE + (uint64_t)sqlite3_column_int64(stmt, col);
	s->size = sqlite3_column_int64(stmt, col + 1);
	s->mtime_ns = sqlite3_column_int64(stmt, col + 2);
	s->ctime_ns = sqlite3_column_int64(stmt, col + 3);
	s->rev = sqlite3_column_int64(stmt, col + 4);
	s->lsize = sqlite3_column_int64(stmt, col + 5);
}

int store_doc_stat(struct store *st, const char *path, struct store_stat *ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_args(st, "SELECT id, size, mtime_ns, ctime_ns, rev, lsize FROM docs WHERE path = ?1 AND present",
			       STORE_TEXTS(path), NULL, 0, &stmt);
	if (r < 0)
		goto out;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		stat_from_row(stmt, 0, ret);
	r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : store_fail(st, rc, "cannot stat a doc");
out:
	return r;
}

struct listed {
	char *name;
	struct store_stat stat;
};

/* Runs a listing query into memory, then calls fn without holding the lock. */
static int list_query(struct store *st, const char *sql, const char *arg, store_list_fn fn, void *ctx)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct listed *v = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	store_lock(st);
	r = store_prepare(st, sql, &stmt);
	if (r < 0) {
		store_unlock(st);
		return r;
	}
	if (arg)
		sqlite3_bind_text(stmt, 1, arg, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if ((r = ARRAY_GROW(v, n, alloc, 16)) < 0)
			break;
		v[n].name = dup_text(stmt, 0);
		if (!v[n].name) {
			r = -ENOMEM;
			break;
		}
		stat_from_row(stmt, 1, &v[n].stat);
		n++;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot list docs");
	store_stmt_release(TAKE_PTR(stmt));
	store_unlock(st);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = fn(ctx, v[i].name, &v[i].stat);
		free(v[i].name);
	}
	free(v);
	return r;
}

int store_doc_list(struct store *st, const char *dir, store_list_fn fn, void *ctx)
{
	return list_query(st, "SELECT name, id, size, mtime_ns, ctime_ns, rev, lsize FROM docs "
			      "WHERE parent = ?1 AND present ORDER BY name", dir, fn, ctx);
}

int store_doc_foreach(struct store *st, store_list_fn fn, void *ctx)
{
	return list_query(st, "SELECT path, id, size, mtime_ns, ctime_ns, rev, lsize FROM docs WHERE present ORDER BY path",
			  NULL, fn, ctx);
}

static int snap_open(struct store *st, const char *path, bool jsonl, bool removed, struct store_snap **ret);

int store_snap_open(struct store *st, const char *path, struct store_snap **ret)
{
	return snap_open(st, path, false, false, ret);
}

int store_snap_open_jsonl(struct store *st, const char *path, struct store_snap **ret)
{
	return snap_open(st, path, true, false, ret);
}

int store_snap_open_removed(struct store *st, const char *path, bool jsonl, struct store_snap **ret)
{
	return snap_open(st, path, jsonl, true, ret);
}

/*
 * removed: path must be a removed doc, and the snapshot is its last version:
 * the revision before the one that removed it, whose rows that revision
 * closed (revisions only grow, so every row of that version is visible).
 */
static int snap_open(struct store *st, const char *path, bool jsonl, bool removed, struct store_snap **ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct doc_row d = { 0 };
	struct store_snap *s;
	int r, rc;

	r = doc_lookup(st, path, &d);
	if (r < 0)
		goto out;
	if (d.present == removed || (removed && d.rev < 2)) {
		r = -ENOENT;
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		goto out;
	}
	if (jsonl && d.format != DOC_ARRAY) {
		free(s);
		r = -EINVAL; /* a damaged file kept as found has no lines */
		goto out;
	}
	s->doc_id = d.id;
	s->rev = removed ? d.rev - 1 : d.rev;
	s->jsonl = jsonl;
	s->size = jsonl ? d.lsize : d.size;
	s->lsize = d.lsize;
	s->mtime_ns = d.mtime_ns;
	s->ctime_ns = d.ctime_ns;
	s->format = d.format;
	s->head_len = strlen(d.head);
	s->tail_len = strlen(d.tail);
	s->head = TAKE_PTR(d.head);
	s->tail = TAKE_PTR(d.tail);
	if (d.format != DOC_ARRAY && d.size > 0) {
		r = store_prepare(st, "SELECT id FROM blobs WHERE doc_id = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1",
				  &stmt);
		if (r < 0) {
			store_snap_free(s);
			goto out;
		}
		sqlite3_bind_int64(stmt, 1, d.id);
		sqlite3_bind_int64(stmt, 2, s->rev);
		rc = sqlite3_step(stmt);
		if (rc != SQLITE_ROW) {
			r = rc == SQLITE_DONE ? -EIO : store_fail(st, rc, "cannot find a file version");
			if (rc == SQLITE_DONE)
				log_err("store: '%s' has no content for revision %" PRId64, path, d.rev);
			store_snap_free(s);
			goto out;
		}
		s->blob_rowid = sqlite3_column_int64(stmt, 0);
	}
	*ret = s;
	r = 0;
out:
	doc_row_release(&d);
	return r;
}

int store_snap_frame(const struct store_snap *snap, const char **head, size_t *head_len, const char **tail,
		     size_t *tail_len)
{
	if (snap->format != DOC_ARRAY)
		return -EINVAL;
	*head = snap->head, *head_len = snap->head_len;
	*tail = snap->tail, *tail_len = snap->tail_len;
	return 0;
}

void store_snap_free(struct store_snap *snap)
{
	if (!snap)
		return;
	free(snap->head);
	free(snap->tail);
	free(snap);
}

int store_snap_dup(const struct store_snap *snap, struct store_snap **ret)
{
	struct store_snap *s = malloc(sizeof(*s));

	if (!s)
		return -ENOMEM;
	*s = *snap;
	s->head = strdup(snap->head);
	s->tail = strdup(snap->tail);
	if (!s->head || !s->tail) {
		store_snap_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

int64_t store_snap_size(const struct store_snap *snap)
{
	return snap->size;
}

void store_snap_stat(const struct store_snap *snap, struct store_stat *ret)
{
	*ret = (struct store_stat){
		.ino = STORE_INO_BASE + (uint64_t)snap->doc_id,
		.size = snap->size,
		.lsize = snap->lsize,
		.mtime_ns = snap->mtime_ns,
		.ctime_ns = snap->ctime_ns,
		.rev = snap->rev,
	};
}

int64_t store_snap_rev(const struct store_snap *snap)
{
	return snap->rev;
}

/* Copies the part of src[0, n), placed at file offset at, that falls in [pos, end). */
static size_t copy_part(char *buf, off_t buf_off, const char *src, off_t at, size_t n, off_t end)
{
	off_t a = at > buf_off ? at : buf_off;
	off_t b = at + (off_t)n < end ? at + (off_t)n : end;

	if (b <= a)
		return 0;
	memcpy(buf + (a - buf_off), src + (a - at), (size_t)(b - a));
	return (size_t)(b - a);
}

static int blob_read(struct store *st, const char *table, const char *column, int64_t rowid, char *dst, size_t n,
		     int64_t at)
{
	int rc = SQLITE_ERROR;

	if (st->blob && st->blob_table == table && st->blob_column == column) {
		rc = st->blob_rowid == rowid ? SQLITE_OK : sqlite3_blob_reopen(st->blob, rowid);
		if (rc == SQLITE_OK)
			rc = sqlite3_blob_read(st->blob, dst, (int)n, (int)at);
		/* Any failure (a handle expired by a change, most likely): afresh. */
	}
	if (rc != SQLITE_OK) {
		store_blob_drop(st);
		rc = sqlite3_blob_open(st->db, "main", table, column, rowid, 0, &st->blob);
		if (rc == SQLITE_OK)
			rc = sqlite3_blob_read(st->blob, dst, (int)n, (int)at);
		if (rc != SQLITE_OK) {
			int r = store_fail(st, rc, "cannot read stored content");

			store_blob_drop(st);
			return r;
		}
	}
	st->blob_table = table;
	st->blob_column = column;
	st->blob_rowid = rowid;
	return 0;
}

/* The bytes [off, end) of an array doc's version, from its rows; buf holds them from off. */
static ssize_t render_range(struct store *st, struct store_snap *s, char *buf, off_t off, off_t end)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	off_t tail_at = s->size - (off_t)s->tail_len;
	int r, rc;

	copy_part(buf, off, s->head, 0, s->head_len, end);
	if (off < tail_at && end > (off_t)s->head_len) {
		r = store_prepare_ints(st,
			"SELECT id, off, pre, len, CASE WHEN len <= " "65536" " THEN json END FROM elems "
			"WHERE doc_id = ?1 AND rev_from <= ?3 AND (rev_to IS NULL OR rev_to > ?3) AND off < ?4 AND off >= "
			"  coalesce((SELECT max(off) FROM elems WHERE doc_id = ?1 AND off <= ?2 AND rev_from <= ?3 "
			"           AND (rev_to IS NULL OR rev_to > ?3)), 0) "
			"ORDER BY off", STORE_INTS(s->doc_id, off, s->rev, end), &stmt);
		if (r < 0)
			return r;
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(stmt, 0);
			off_t at = sqlite3_column_int64(stmt, 1);
			size_t plen = (size_t)sqlite3_column_bytes(stmt, 2);
			size_t jlen = (size_t)sqlite3_column_int64(stmt, 3);
			off_t jat = at + (off_t)plen;

			copy_part(buf, off, (const char *)sqlite3_column_blob(stmt, 2), at, plen, end);
			if (sqlite3_column_type(stmt, 4) != SQLITE_NULL) {
				copy_part(buf, off, (const char *)sqlite3_column_blob(stmt, 4), jat, jlen, end);
			} else {
				off_t a = jat > off ? jat : off;
				off_t b = jat + (off_t)jlen < end ? jat + (off_t)jlen : end;

				if (b > a && (r = blob_read(st, "elems", "json", id, buf + (a - off), (size_t)(b - a),
							    a - jat)) < 0)
					return r;
			}
		}
		if (rc != SQLITE_DONE)
			return store_fail(st, rc, "cannot read elements");
	}
	copy_part(buf, off, s->tail, tail_at, s->tail_len, end);
	return end - off;
}

/* ---- Renderings kept -------------------------------------------------------
 *
 * A reader that reads a conversation whole, over and over (an editor that
 * shows it, a loop of another mount's after each commit through the first),
 * gets each new version from SQLite, whose page cache another daemon's
 * commit empties whole: the second mount's daemon read every page of the
 * conversation again after each save made through the first. But a save
 * mostly appends, and a version's bytes are its head, its visible rows one
 * after the other, then its tail: every byte before the first row that one
 * version shows and the other does not is the same in both. So the bytes of
 * a doc read from its start twice are kept (KEPT_DOCS docs, their first
 * KEPT_MAX bytes each), and a read of another version takes from them what
 * lies before its first such row, found in the index of offsets
 * (elems_off), not in the rows. A doc read once (a grep of the history) is
 * not kept.
 *
 * Rows change in place only when a forget blanks them, which drops what is
 * kept (kept_drop()), as does another connection's forget, which moves the
 * count of forgets in meta (changes.c). A revision's number comes again
 * after a rollback, with other rows: so, as with the rows a commit keeps
 * (rows.c), nothing read inside a transaction is kept or used, since it
 * may yet roll back (a batch's COMMIT that fails).
 */

static void kept_free(struct kept_render *k)
{
	free(k->head);
	free(k->buf);
	*k = (struct kept_render){ 0 };
}

void kept_drop(struct store *st)
{
	for (size_t i = 0; i < KEPT_DOCS; i++)
		kept_free(&st->kept[i]);
}

/*
 * The offset of the first row before limit that one of versions a and b
 * shows and the other does not; INT64_MAX if none. The scan of the index
 * ends at limit (what is kept): after an append the first such row is the
 * last, and a doc's rows past what is kept need not be looked at.
 */
static int first_change(struct store *st, int64_t doc_id, int64_t a, int64_t b, int64_t limit, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int64_t lo = a < b ? a : b, hi = a < b ? b : a;
	int r, rc;

	r = store_prepare_ints(st,
		"SELECT off FROM elems WHERE doc_id = ?1 AND off < ?4 AND ((rev_from > ?2 AND rev_from <= ?3) "
		"OR (rev_to > ?2 AND rev_to <= ?3)) ORDER BY off LIMIT 1", STORE_INTS(doc_id, lo, hi, limit), &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(stmt, 0);
	else if (rc == SQLITE_DONE)
		*ret = INT64_MAX;
	else
		return store_fail(st, rc, "cannot compare two versions of a doc");
	return 0;
}

/* Whether doc_id was read from its start once lately (and notes that it is now, if not). */
static bool kept_seen(struct store *st, int64_t doc_id)
{
	for (size_t i = 0; i < ARRAY_SIZE(st->kept_seen); i++)
		if (st->kept_seen[i] == doc_id)
			return true;
	st->kept_seen[st->kept_seen_next++ % ARRAY_SIZE(st->kept_seen)] = doc_id;
	return false;
}

/*
 * What is kept of s's doc, made to hold only bytes of s's version; NULL if
 * nothing is, or inside a transaction (and, for a read from the start of a
 * doc read so once before, a slot to keep it in from now on).
 */
static struct kept_render *kept_find(struct store *st, struct store_snap *s, off_t off)
{
	int64_t tail_at = s->size - (int64_t)s->tail_len, keep;
	struct kept_render *k = NULL;

	if (st->tx_open)
		return NULL;
	for (size_t i = 0; i < KEPT_DOCS; i++)
		if (st->kept[i].doc_id == s->doc_id)
			k = &st->kept[i];
	if (k) {
		keep = (int64_t)k->len < tail_at ? (int64_t)k->len : tail_at;
		if (keep > k->tail_at)
			keep = k->tail_at;
		if (strcmp(k->head, s->head) != 0) {
			char *head = strdup(s->head);

			if (!head) {
				kept_free(k);
				return NULL;
			}
			free(k->head);
			k->head = head;
			keep = 0;
		}
		if (k->rev != s->rev && keep > 0) {
			int64_t at = INT64_MAX;

			if (first_change(st, s->doc_id, k->rev, s->rev, keep, &at) < 0) {
				kept_free(k);
				return NULL;
			}
			if (at < keep)
				keep = at;
		}
		if (keep < 0)
			keep = 0; /* a snapshot cut before its first element: its head alone, shorter than its tail */
		k->rev = s->rev;
		k->tail_at = tail_at;
		k->len = (size_t)keep;
		k->used = ++st->kept_tick;
		return k;
	}
	if (off != 0 || !kept_seen(st, s->doc_id))
		return NULL;
	k = &st->kept[0];
	for (size_t i = 1; i < KEPT_DOCS; i++)
		if (st->kept[i].used < k->used)
			k = &st->kept[i];
	/* Its buffer serves again: readers of three docs in turn would map and fault in a new one each time. */
	free(k->head);
	k->head = strdup(s->head);
	if (!k->head) {
		kept_free(k);
		return NULL;
	}
	k->doc_id = s->doc_id;
	k->rev = s->rev;
	k->tail_at = tail_at;
	k->len = 0;
	k->used = ++st->kept_tick;
	return k;
}

/* Adds the n bytes p, which follow what k holds, if they fit; else keeps what it has. */
static void kept_add(struct kept_render *k, const char *p, size_t n)
{
	if (n > KEPT_MAX - k->len)
		return;
	if (k->len + n > k->cap) {
		size_t cap = k->cap ? k->cap : 256 * 1024;
		char *buf;

		while (cap < k->len + n)
			cap *= 2;
		if (cap > KEPT_MAX)
			cap = KEPT_MAX;
		buf = realloc(k->buf, cap);
		if (!buf)
			return;
		k->buf = buf;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
}

static ssize_t read_array(struct store *st, struct store_snap *s, char *buf, off_t off, off_t end)
{
	struct kept_render *k = kept_find(st, s, off);
	off_t from = off;
	ssize_t r;

	if (k && off < (off_t)k->len) {
		from = end < (off_t)k->len ? end : (off_t)k->len;
		memcpy(buf, k->buf + off, (size_t)(from - off));
	}
	if (from == end)
		return end - off;
	r = render_range(st, s, buf + (from - off), from, end);
	if (r < 0)
		return r;
	if (k && from == (off_t)k->len)
		kept_add(k, buf + (from - off), (size_t)(end - from));
	return end - off;
}

/*
 * The line breaks of n bytes of an element (one written pretty-printed) as
 * spaces, found with memchr(): most elements have none, and testing each
 * byte was an eighth of the daemon's time in a grep -r of the view.
 */
static void blank_breaks(char *p, size_t n)
{
	static const char breaks[] = { '\n', '\r' };

	for (size_t i = 0; i < sizeof(breaks); i++)
		for (char *q = p, *e = p + n; (q = memchr(q, breaks[i], (size_t)(e - q))) != NULL; q++)
			*q = ' ';
}

/* A JSONL line: the element's bytes, line breaks as spaces, then "\n". */
static ssize_t read_jsonl(struct store *st, struct store_snap *s, char *buf, off_t off, off_t end)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st,
		"SELECT id, loff, len, CASE WHEN len <= 65536 THEN json END FROM elems "
		"WHERE doc_id = ?1 AND rev_from <= ?3 AND (rev_to IS NULL OR rev_to > ?3) AND loff < ?4 AND loff >= "
		"  coalesce((SELECT max(loff) FROM elems WHERE doc_id = ?1 AND loff <= ?2 AND rev_from <= ?3 "
		"           AND (rev_to IS NULL OR rev_to > ?3)), 0) "
		"ORDER BY loff", STORE_INTS(s->doc_id, off, s->rev, end), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(stmt, 0);
		off_t at = sqlite3_column_int64(stmt, 1);
		size_t jlen = (size_t)sqlite3_column_int64(stmt, 2);
		off_t a = at > off ? at : off;
		off_t b = at + (off_t)jlen < end ? at + (off_t)jlen : end;

		if (sqlite3_column_type(stmt, 3) != SQLITE_NULL)
			copy_part(buf, off, (const char *)sqlite3_column_blob(stmt, 3), at, jlen, end);
		else if (b > a && (r = blob_read(st, "elems", "json", id, buf + (a - off), (size_t)(b - a), a - at)) < 0)
			return r;
		if (b > a)
			blank_breaks(buf + (a - off), (size_t)(b - a));
		if (at + (off_t)jlen >= off && at + (off_t)jlen < end)
			buf[at + (off_t)jlen - off] = '\n';
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "cannot read elements");
	return end - off;
}

ssize_t store_snap_read(struct store *st, struct store_snap *s, char *buf, size_t size, off_t off)
{
	off_t end;
	ssize_t r;

	if (off < 0)
		return -EINVAL;
	if (off >= s->size || size == 0)
		return 0;
	end = (off_t)size > s->size - off ? s->size : off + (off_t)size;
	store_lock(st);
	if (s->jsonl)
		r = read_jsonl(st, s, buf, off, end);
	else if (s->format == DOC_ARRAY)
		r = read_array(st, s, buf, off, end);
	else
		r = blob_read(st, "blobs", "data", s->blob_rowid, buf, (size_t)(end - off), off) < 0 ? -EIO : end - off;
	store_unlock(st);
	return r;
}

int store_snap_limit(struct store *st, struct store_snap *s, int64_t n)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (s->format != DOC_ARRAY)
		return -EINVAL;
	if (n <= 0) {
		/* The compat rendering keeps its head ('['); like any cut, no tail. */
		s->size = s->jsonl ? 0 : (int64_t)s->head_len;
		s->tail_len = 0;
		return 0;
	}
	/*
	 * The n-th element is most often still current: found by the index of
	 * current rows. A closed one is found by a walk of the doc's rows, as
	 * no index has (doc_id, seq) for them.
	 */
	static const char *const sql[] = {
		"SELECT off + length(CAST(pre AS BLOB)) + len, coalesce(loff, 0) + len + 1 FROM elems "
		"WHERE doc_id = ?1 AND seq = ?2 AND rev_to IS NULL AND rev_from <= ?3",
		"SELECT off + length(CAST(pre AS BLOB)) + len, coalesce(loff, 0) + len + 1 FROM elems "
		"WHERE doc_id = ?1 AND seq = ?2 AND rev_from <= ?3 AND rev_to > ?3",
	};
	rc = SQLITE_DONE;
	for (size_t i = 0; i < ARRAY_SIZE(sql) && rc == SQLITE_DONE; i++) {
		store_stmt_release(TAKE_PTR(stmt));
		r = store_prepare_ints(st, sql[i], STORE_INTS(s->doc_id, n - 1, s->rev), &stmt);
		if (r < 0)
			return r;
		rc = sqlite3_step(stmt);
	}
	if (rc == SQLITE_DONE)
		return 0; /* fewer elements than n: the whole snapshot */
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, "cannot find an element");
	s->size = sqlite3_column_int64(stmt, s->jsonl ? 1 : 0);
	if (!s->jsonl)
		s->tail_len = 0; /* a cut array has no tail; the compat cut is for internal use only */
	return 0;
}

/*
 * A past version: the rows valid at rev (rev_from <= rev, not closed by then)
 * or the last blob up to rev. The JSON Lines size is summed from those rows
 * (one indexed range of the doc's rows); an array doc's head and tail are
 * kept for its current version only, so a past version is JSON Lines only.
 */
int store_snap_open_at(struct store *st, const char *path, int64_t rev, bool jsonl, struct store_snap **ret)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *last = NULL, *size = NULL;
	struct doc_row d = { 0 };
	struct store_snap *s = NULL;
	int r, rc;

	r = doc_lookup(st, path, &d);
	if (r < 0)
		goto out;
	if (jsonl != (d.format == DOC_ARRAY)) {
		r = -EINVAL;
		goto out;
	}
	r = store_prepare_ints(st, "SELECT max(id), max(time_ns) FROM revisions WHERE doc_id = ?1 AND id <= ?2",
			       STORE_INTS(d.id, rev), &last);
	if (r < 0)
		goto out;
	rc = sqlite3_step(last);
	if (rc != SQLITE_ROW) {
		r = store_fail(st, rc, "cannot read the revision log");
		goto out;
	}
	if (sqlite3_column_type(last, 0) == SQLITE_NULL) {
		r = -ENOENT; /* not made yet at rev */
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->head = strdup("")) || !(s->tail = strdup(""))) {
		r = -ENOMEM;
		goto out;
	}
	s->doc_id = d.id;
	s->rev = rev;
	s->jsonl = jsonl;
	s->format = d.format;
	s->mtime_ns = s->ctime_ns = sqlite3_column_int64(last, 1);
	if (jsonl)
		r = store_prepare_ints(st, "SELECT NULL, coalesce(sum(len + 1), 0) FROM elems WHERE doc_id = ?1 AND "
				           "rev_from <= ?2 AND (rev_to IS NULL OR rev_to > ?2)", STORE_INTS(d.id, rev), &size);
	else
		r = store_prepare_ints(st, "SELECT id, length(data) FROM blobs WHERE doc_id = ?1 AND rev <= ?2 "
				           "ORDER BY rev DESC LIMIT 1", STORE_INTS(d.id, rev), &size);
	if (r < 0)
		goto out;
	rc = sqlite3_step(size);
	if (rc == SQLITE_ROW) {
		s->blob_rowid = sqlite3_column_int64(size, 0);
		s->size = s->lsize = sqlite3_column_int64(size, 1);
	} else if (rc != SQLITE_DONE) {
		r = store_fail(st, rc, "cannot size a past version");
		goto out;
	} /* a whole doc whose versions up to rev were all empty: no blob, size 0 */
	*ret = TAKE_PTR(s);
	r = 0;
out:
	store_snap_free(s);
	doc_row_release(&d);
	return r;
}
