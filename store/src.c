/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * src.c: the bytes of a commit, in memory or in a file (src.h).
 *
 * A file handed to store_commit() is one no other process can reach (the
 * daemon's private copy of what a writer wrote), so a byte read twice reads
 * the same: the scan validates the bytes once, and the commit reads each
 * element again, piece by piece, to compare and store it. A file that ends
 * early all the same is an I/O error, never a short element.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "store/src.h"

void src_of_commit(const struct store_commit *c, struct src *ret)
{
	*ret = (struct src){ .mem = c->data, .fd = c->data ? -1 : c->fd, .len = c->len,
			     .shared = !c->data && c->fd_shared };
	if (!c->data && !c->len && !ret->shared)
		ret->mem = "";
}

int src_own_rest(const struct store_commit *c, struct src *s, size_t from)
{
	size_t n = 0;
	int fd = -1, r;

	if (!s->shared || s->has_tail || !c->copy_rest)
		return -EINVAL;
	r = c->copy_rest(c->copy_ctx, s->fd, from, &fd, &n);
	if (r < 0)
		return r;
	s->has_tail = true;
	s->tail_fd = fd;
	s->split = from;
	s->len = from + n;
	return 0;
}

void src_release(struct src *s)
{
	if (s->has_tail)
		close(s->tail_fd);
	s->has_tail = false;
}

int src_read(const struct src *s, size_t off, char *buf, size_t n)
{
	if (off > s->len || n > s->len - off)
		return SRC_CUT_SHORT;
	if (s->mem) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	while (n > 0) {
		int fd = s->fd;
		size_t at = off, max = n;
		ssize_t k;

		if (s->has_tail && off >= s->split) {
			fd = s->tail_fd;
			at = off - s->split;
		} else if (s->has_tail && max > s->split - off) {
			max = s->split - off;
		}
		k = pread(fd, buf, max, (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return SRC_CUT_SHORT;
		buf += k;
		off += (size_t)k;
		n -= (size_t)k;
	}
	return 0;
}

int src_get(const struct src *s, size_t off, size_t n, struct src_window *w, const char **ret)
{
	size_t k;
	int r;

	if (off > s->len || n > s->len - off)
		return SRC_CUT_SHORT;
	if (s->mem) {
		*ret = s->mem + off;
		return 0;
	}
	if (!w->buf.buf || off < w->off || off + n > w->off + w->buf.len) {
		k = n > SRC_WINDOW ? n : SRC_WINDOW;
		if (k > s->len - off)
			k = s->len - off;
		w->buf.len = 0;
		if ((r = sb_grow(&w->buf, k)) < 0)
			return r;
		if ((r = src_read(s, off, w->buf.buf, k)) < 0)
			return r;
		w->buf.len = k;
		w->off = off;
	}
	*ret = w->buf.buf + (off - w->off);
	return 0;
}

static int read_cb(void *ctx, size_t off, char *buf, size_t n)
{
	return src_read(ctx, off, buf, n);
}

static struct json_reader reader_of(const struct src *s)
{
	return (struct json_reader){ .read = read_cb, .ctx = (void *)s, .len = s->len };
}

int src_scan_array(const struct src *s, const char *member, const struct json_known *known, json_elem_fn fn,
		   void *ctx, size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	struct json_reader rd = reader_of(s);

	if (s->mem)
		return json_scan_array_after(s->mem, s->len, member, known, fn, ctx, ret_head, ret_tail, err);
	return json_scan_array_read(&rd, member, known, fn, ctx, ret_head, ret_tail, err);
}

int src_validate(const struct src *s, struct json_error *err)
{
	struct json_reader rd = reader_of(s);

	return s->mem ? json_validate(s->mem, s->len, err) : json_validate_read(&rd, err);
}

int src_identity(const struct src *s, enum doc_ident ident, size_t start, size_t end, struct merge_elem *e,
		 char **ret_key_text)
{
	struct json_reader rd = reader_of(s);

	if (s->mem) {
		doc_elem_identity(ident, s->mem + start, end - start, e, ret_key_text);
		return 0;
	}
	return doc_elem_identity_read(ident, &rd, start, end, e, ret_key_text);
}

static void blob_closep(sqlite3_blob **b)
{
	if (*b)
		sqlite3_blob_close(*b);
}

int src_to_blob(struct store *st, const struct src *s, size_t off, size_t n, const char *table,
		const char *column, int64_t rowid)
{
	__attribute__((cleanup(blob_closep))) sqlite3_blob *b = NULL;
	_cleanup_free_ char *chunk = s->mem ? NULL : malloc(SRC_CHUNK);
	int r, rc;

	if (!s->mem && !chunk)
		return -ENOMEM;
	rc = sqlite3_blob_open(st->db, "main", table, column, rowid, 1, &b);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot open stored content to write it");
	for (size_t at = 0; at < n;) {
		size_t k = n - at < SRC_CHUNK ? n - at : SRC_CHUNK;
		const char *p = s->mem ? s->mem + off + at : chunk;

		if (!s->mem && (r = src_read(s, off + at, chunk, k)) < 0)
			return r;
		rc = sqlite3_blob_write(b, p, (int)k, (int)at);
		if (rc != SQLITE_OK)
			return store_fail(st, rc, "cannot write stored content");
		at += k;
	}
	return 0;
}

int src_equals_blob(struct store *st, const struct src *s, size_t off, size_t n, const char *table,
		    const char *column, int64_t rowid, bool *ret)
{
	__attribute__((cleanup(blob_closep))) sqlite3_blob *b = NULL;
	_cleanup_free_ char *chunk = malloc(2 * SRC_CHUNK);
	int r, rc;

	if (!chunk)
		return -ENOMEM;
	rc = sqlite3_blob_open(st->db, "main", table, column, rowid, 0, &b);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot open stored content to compare it");
	if ((size_t)sqlite3_blob_bytes(b) != n) {
		*ret = false;
		return 0;
	}
	for (size_t at = 0; at < n;) {
		size_t k = n - at < SRC_CHUNK ? n - at : SRC_CHUNK;

		rc = sqlite3_blob_read(b, chunk, (int)k, (int)at);
		if (rc != SQLITE_OK)
			return store_fail(st, rc, "cannot read stored content");
		if ((r = src_read(s, off + at, chunk + SRC_CHUNK, k)) < 0)
			return r;
		if (memcmp(chunk, chunk + SRC_CHUNK, k) != 0) {
			*ret = false;
			return 0;
		}
		at += k;
	}
	*ret = true;
	return 0;
}
