/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_wire.c: the bytes of one entry of the shared log (sync_wire.h), and
 * the buffer they are written to and read from.
 *
 * The encoding is the plainest that can be checked: fixed-width
 * little-endian integers, lengths before strings and byte blocks, the
 * version first. The decoder trusts nothing: every length is checked
 * against what is left before it is used, every string must be valid
 * UTF-8 without NUL bytes, and an effect's path must be one the store
 * keeps as a doc (store_path_kind()), so that a damaged or forged entry is
 * refused whole with one log line and never reaches the store.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/json.h"
#include "store/store.h"
#include "store/sync_wire.h"

/* ---- the buffer ------------------------------------------------------------------- */

void sync_bytes_init(struct sync_bytes *b, const char *dir)
{
	*b = (struct sync_bytes){ .mem = SB_INIT, .fd = -1, .dir = dir, .inline_max = SYNC_INLINE };
}

void sync_bytes_release(struct sync_bytes *b)
{
	sb_release(&b->mem);
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	b->len = 0;
	b->err = 0;
}

/* An unnamed file in dir (NULL: $TMPDIR or /tmp), owner-only: fd or -errno. */
static int unnamed_file(const char *dir)
{
	const char *d = dir;
	int fd;

	if (!d) {
		d = getenv("TMPDIR");
		if (!d || *d != '/')
			d = "/tmp";
	}
	fd = open(d, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;

		log_err("sync: cannot make a file for a large log entry in '%s': %s", d, strerror(e));
		return -e;
	}
	return fd;
}

/* Writes all n bytes of p at off of fd. */
static int write_all(int fd, const void *p, size_t n, size_t off)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = pwrite(fd, c, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		c += k;
		n -= (size_t)k;
		off += (size_t)k;
	}
	return 0;
}

int sync_bytes_add(struct sync_bytes *b, const void *p, size_t n)
{
	int r;

	if (b->err)
		return b->err;
	if (n == 0)
		return 0;
	if (b->fd < 0 && b->len + n > b->inline_max) {
		/* Past what is held in memory: all of it goes to a file from here on. */
		if ((r = unnamed_file(b->dir)) < 0)
			return b->err = r;
		b->fd = r;
		if (b->len && (r = write_all(b->fd, b->mem.buf, b->len, 0)) < 0)
			return b->err = r;
		sb_release(&b->mem);
	}
	if (b->fd >= 0)
		r = write_all(b->fd, p, n, b->len);
	else
		r = sb_add(&b->mem, p, n);
	if (r < 0)
		return b->err = r;
	b->len += n;
	return 0;
}

int sync_bytes_read(const struct sync_bytes *b, size_t off, void *buf, size_t n)
{
	char *c = buf;

	if (off > b->len || n > b->len - off)
		return -EIO;
	if (b->fd < 0) {
		if (n)
			memcpy(buf, b->mem.buf + off, n);
		return 0;
	}
	while (n > 0) {
		ssize_t k = pread(b->fd, c, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		c += k;
		n -= (size_t)k;
		off += (size_t)k;
	}
	return 0;
}

int sync_bytes_slice(const struct sync_bytes *b, size_t off, size_t n, const char **ret_data, int *ret_fd)
{
	loff_t in = (loff_t)off;
	int fd, r;

	if (off > b->len || n > b->len - off)
		return -EIO;
	if (b->fd < 0) {
		*ret_data = b->mem.buf ? b->mem.buf + off : "";
		*ret_fd = -1;
		return 0;
	}
	if ((fd = unnamed_file(b->dir)) < 0)
		return fd;
	for (size_t left = n; left > 0;) {
		ssize_t k = copy_file_range(b->fd, &in, fd, NULL, left, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -EIO;
			close(fd);
			return r;
		}
		left -= (size_t)k;
	}
	*ret_data = NULL;
	*ret_fd = fd;
	return 0;
}

/* ---- writing ------------------------------------------------------------------------ */

static int put_u8(struct sync_bytes *b, uint8_t v)
{
	return sync_bytes_add(b, &v, 1);
}

static int put_u32(struct sync_bytes *b, uint32_t v)
{
	unsigned char c[4] = { v, v >> 8, v >> 16, v >> 24 };

	return sync_bytes_add(b, c, sizeof(c));
}

static int put_u64(struct sync_bytes *b, uint64_t v)
{
	unsigned char c[8];

	for (int i = 0; i < 8; i++)
		c[i] = (unsigned char)(v >> (8 * i));
	return sync_bytes_add(b, c, sizeof(c));
}

/* A string: u32 length, then its bytes. NULL is written as length 0xffffffff (none). */
static int put_str(struct sync_bytes *b, const char *s)
{
	size_t n;

	if (!s)
		return put_u32(b, UINT32_MAX);
	n = strlen(s);
	if (n >= UINT32_MAX)
		return b->err = -EOVERFLOW;
	put_u32(b, (uint32_t)n);
	return sync_bytes_add(b, s, n);
}

int sync_put_header(struct sync_bytes *b, const struct sync_header *h)
{
	sync_bytes_add(b, SYNC_WIRE_MAGIC, 4);
	put_u8(b, SYNC_WIRE_VERSION);
	put_str(b, h->kind);
	put_str(b, h->path);
	put_str(b, h->comm);
	put_u64(b, (uint64_t)h->time_ns);
	put_u64(b, (uint64_t)h->pid);
	put_u8(b, (uint8_t)h->task_op);
	put_str(b, h->task);
	put_str(b, h->forget_match);
	put_str(b, h->forget_task);
	return put_u32(b, h->neffects);
}

int sync_put_effect(struct sync_bytes *b, const char *path, int fmt, int64_t prev, uint64_t keep, const void *head,
		    size_t head_len)
{
	put_str(b, path);
	put_u8(b, (uint8_t)fmt);
	put_u64(b, (uint64_t)prev);
	put_u64(b, keep);
	put_u64(b, head_len);
	return sync_bytes_add(b, head, head_len);
}

int sync_put_rest_len(struct sync_bytes *b, uint64_t len)
{
	return put_u64(b, len);
}

/* ---- reading -------------------------------------------------------------------------- */

struct reader {
	const struct sync_bytes *b;
	size_t at;
	const char *what; /* what was being read when it failed */
};

static int bad(struct reader *rd)
{
	log_err("sync: a log entry is damaged or not of this convfs: bad %s at byte %zu of %zu; it is not applied",
		rd->what, rd->at, rd->b->len);
	return -EPROTO;
}

static int get(struct reader *rd, void *buf, size_t n)
{
	if (rd->at > rd->b->len || n > rd->b->len - rd->at || sync_bytes_read(rd->b, rd->at, buf, n) < 0)
		return bad(rd);
	rd->at += n;
	return 0;
}

static int get_u8(struct reader *rd, uint8_t *v)
{
	return get(rd, v, 1);
}

static int get_u32(struct reader *rd, uint32_t *v)
{
	unsigned char c[4];
	int r = get(rd, c, sizeof(c));

	if (r == 0)
		*v = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
	return r;
}

static int get_u64(struct reader *rd, uint64_t *v)
{
	unsigned char c[8];
	int r = get(rd, c, sizeof(c));

	if (r == 0) {
		*v = 0;
		for (int i = 7; i >= 0; i--)
			*v = *v << 8 | c[i];
	}
	return r;
}

/* A string of at most 64 KiB (paths, names, a forget's text), UTF-8 without NUL; NULL where none was written. */
static int get_str(struct reader *rd, const char *what, char **ret)
{
	uint32_t n = 0;
	char *s;

	rd->what = what;
	if (get_u32(rd, &n) < 0)
		return -EPROTO;
	if (n == UINT32_MAX) {
		*ret = NULL;
		return 0;
	}
	if (n > 65536)
		return bad(rd);
	if (!(s = malloc((size_t)n + 1)))
		return -ENOMEM;
	if (get(rd, s, n) < 0) {
		free(s);
		return -EPROTO;
	}
	s[n] = '\0';
	for (size_t i = 0; i < n;) {
		size_t k = s[i] ? json_utf8_len((const unsigned char *)s + i, n - i) : 0;

		if (k == 0) {
			free(s);
			rd->at -= n - i;
			return bad(rd);
		}
		i += k;
	}
	*ret = s;
	return 0;
}

/* A block of bytes: its length, and where it is; skipped over. */
static int get_block(struct reader *rd, const char *what, size_t *ret_at, size_t *ret_len)
{
	uint64_t n = 0;

	rd->what = what;
	if (get_u64(rd, &n) < 0)
		return -EPROTO;
	if (n > rd->b->len - rd->at)
		return bad(rd);
	*ret_at = rd->at;
	*ret_len = (size_t)n;
	rd->at += (size_t)n;
	return 0;
}

static int get_effect(struct reader *rd, struct sync_effect *e)
{
	enum store_path_kind kind;
	uint64_t prev = 0;
	uint8_t fmt = 0;
	int r;

	if ((r = get_str(rd, "effect path", &e->path)) < 0)
		return r;
	rd->what = "effect";
	if (!e->path || get_u8(rd, &fmt) < 0 || get_u64(rd, &prev) < 0 || get_u64(rd, &e->keep) < 0)
		return -EPROTO;
	kind = store_path_kind(e->path);
	if ((kind != STORE_PATH_ARRAY && kind != STORE_PATH_WHOLE) || fmt > SYNC_FMT_REMOVED ||
	    (fmt == SYNC_FMT_ARRAY && kind != STORE_PATH_ARRAY) || (fmt == SYNC_FMT_WHOLE && kind != STORE_PATH_WHOLE) ||
	    prev > INT64_MAX || (fmt != SYNC_FMT_ARRAY && e->keep))
		return bad(rd);
	e->fmt = fmt;
	e->prev = (int64_t)prev;
	if ((r = get_block(rd, "effect head", &e->head_at, &e->head_len)) < 0)
		return r;
	return get_block(rd, "effect content", &e->rest_at, &e->rest_len);
}

int sync_decode(const struct sync_bytes *b, struct sync_entry *ret)
{
	struct reader rd = { .b = b, .what = "magic" };
	struct sync_entry e = { 0 };
	char magic[4];
	uint64_t time_ns = 0, pid = 0;
	uint32_t n = 0;
	uint8_t version = 0, op = 0;
	int r;

	if (get(&rd, magic, sizeof(magic)) < 0 || memcmp(magic, SYNC_WIRE_MAGIC, 4) != 0)
		return rd.at == 4 ? bad(&rd) : -EPROTO;
	rd.what = "version";
	if (get_u8(&rd, &version) < 0)
		return -EPROTO;
	if (version != SYNC_WIRE_VERSION) {
		log_err("sync: a log entry is of version %u, which this convfs does not know (%d): upgrade convfs",
			version, SYNC_WIRE_VERSION);
		return -EPROTO;
	}
	if ((r = get_str(&rd, "kind", &e.kind)) < 0 || (r = get_str(&rd, "path", &e.path)) < 0 ||
	    (r = get_str(&rd, "process name", &e.comm)) < 0)
		goto fail;
	rd.what = "header";
	if ((r = get_u64(&rd, &time_ns)) < 0 || (r = get_u64(&rd, &pid)) < 0 || (r = get_u8(&rd, &op)) < 0)
		goto fail;
	if ((r = get_str(&rd, "task", &e.task)) < 0 || (r = get_str(&rd, "forget", &e.forget_match)) < 0 ||
	    (r = get_str(&rd, "forget", &e.forget_task)) < 0)
		goto fail;
	rd.what = "header";
	if ((r = get_u32(&rd, &n)) < 0)
		goto fail;
	if (!e.kind || !e.path || op > SYNC_TASK_RESTORE || (op && (!e.task || !store_is_conversation_id(e.task))) ||
	    (e.forget_task && !store_is_conversation_id(e.forget_task)) || n > 65536) {
		r = bad(&rd);
		goto fail;
	}
	e.time_ns = (int64_t)time_ns;
	e.pid = (int64_t)pid;
	e.task_op = op;
	if (n && !(e.effects = calloc(n, sizeof(*e.effects)))) {
		r = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < n; i++) {
		e.neffects++;
		if ((r = get_effect(&rd, &e.effects[i])) < 0)
			goto fail;
	}
	if (rd.at != b->len) {
		rd.what = "end";
		r = bad(&rd);
		goto fail;
	}
	*ret = e;
	return 0;
fail:
	sync_entry_release(&e);
	return r;
}

void sync_entry_release(struct sync_entry *e)
{
	free(e->kind);
	free(e->path);
	free(e->comm);
	free(e->task);
	free(e->forget_match);
	free(e->forget_task);
	for (size_t i = 0; i < e->neffects; i++)
		free(e->effects[i].path);
	free(e->effects);
	*e = (struct sync_entry){ 0 };
}
