/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jsonl.c: a rewrite of the view's JSON Lines (messages.jsonl,
 * ui_messages.jsonl) made into the JSON array it stands for.
 *
 * Each line is an element, the lines joined by commas between the doc's own
 * bytes before and after its array (its '[' and ']'; for a CLI 3.x session,
 * the object's other members too, kept as they are), or between "[" and
 * "]" for a doc made new. The file is read 1 MiB at a time and the array
 * written as it goes, into memory up to COMMIT_INLINE
 * and then into a private file (fs_private_file()), so that a rewrite of
 * any size is converted in bounded memory; then each line is checked as an
 * append's line is (store_line_check(), or store_lines_check_fd() in the
 * file). The caller commits the array like any save (commit_taken()).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/fs.h"
#include "store/util.h"

/*
 * The JSON array a rewrite of the view's JSON Lines makes: written into
 * memory up to COMMIT_INLINE bytes, then into a private file (the bytes in
 * memory moved there), a piece at a time, so that a file of any size is
 * converted in bounded memory. The spans of its lines are kept to check each.
 */
struct jsonl_out {
	struct fs *fs;
	struct commit_bytes *b; /* mem, or fd once spilled */
	size_t len;             /* bytes written in all */
	struct sb buf;          /* once spilled: what is not in the file yet */
	struct store_line_at *lines;
	size_t nlines, alloc;
};

static int out_flush(struct jsonl_out *o)
{
	int r = pwrite_all(o->b->fd, o->buf.buf, o->buf.len, o->len - o->buf.len);

	if (r == 0)
		o->buf.len = 0;
	return r;
}

static int out_add(struct jsonl_out *o, const char *p, size_t n)
{
	int r;

	if (o->b->fd < 0 && o->len + n > COMMIT_INLINE) {
		/* Too big to hold: from now on into a private file. */
		int fd = fs_private_file(o->fs);

		if (fd < 0)
			return fd;
		o->b->fd = fd;
		o->b->own_fd = true;
		o->buf = o->b->mem;
		o->b->mem = (struct sb)SB_INIT;
		if ((r = out_flush(o)) < 0)
			return r;
	}
	if ((r = sb_add(o->b->fd < 0 ? &o->b->mem : &o->buf, p, n)) < 0)
		return r;
	o->len += n;
	return o->b->fd >= 0 && o->buf.len >= ((size_t)1 << 20) ? out_flush(o) : 0;
}

/*
 * Converts the JSON Lines staged in fd into "[line,line,...]" in o, each
 * line without its "\n" (and a "\r" before it). Refuses a last line that has
 * no newline; -ENODATA for nothing at all.
 */
static int convert(const char *path, int fd, const struct jsonl_frame *frame, struct jsonl_out *o)
{
	_cleanup_free_ char *chunk = malloc((size_t)1 << 20);
	size_t line_start = frame->head_len, in = 0;
	bool cr = false, any = false;
	int r;

	if (!chunk)
		return -ENOMEM;
	if ((r = out_add(o, frame->head, frame->head_len)) < 0)
		return r;
	for (;;) {
		ssize_t n = pread_retry(fd, chunk, (size_t)1 << 20, in);

		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		in += (size_t)n;
		any = true;
		for (size_t i = 0, from = 0; i <= (size_t)n; i++) {
			if (i < (size_t)n && chunk[i] != '\n' && chunk[i] != '\r')
				continue;
			if (i > from) {
				/* A "\r" held back is the line's after all: more of it follows. */
				if (cr && (r = out_add(o, "\r", 1)) < 0)
					return r;
				cr = false;
				if ((r = out_add(o, chunk + from, i - from)) < 0)
					return r;
			}
			if (i == (size_t)n)
				break;
			if (chunk[i] == '\r') {
				/* Held back: dropped if "\n" follows. */
				if (cr && (r = out_add(o, "\r", 1)) < 0)
					return r;
				cr = true;
			} else {
				if ((r = ARRAY_GROW(o->lines, o->nlines, o->alloc, 64)) < 0)
					return r;
				o->lines[o->nlines].off = line_start;
				o->lines[o->nlines].len = o->len - line_start;
				o->nlines++;
				cr = false;
				if ((r = out_add(o, ",", 1)) < 0)
					return r;
				line_start = o->len;
			}
			from = i + 1;
		}
	}
	if (!any)
		return -ENODATA;
	if (cr || o->len > line_start) {
		log_warn("refusing to commit '%s': its last line has no newline; nothing stored", path);
		return -EINVAL;
	}
	/* The "," after the last line gives way to the "]". */
	o->len--;
	if (o->b->fd < 0)
		o->b->mem.len--;
	else if (o->buf.len)
		o->buf.len--;
	if ((r = out_add(o, frame->tail, frame->tail_len)) < 0 || (o->b->fd >= 0 && (r = out_flush(o)) < 0))
		return r;
	o->b->len = o->len;
	return 0;
}

/* Checks each line of the converted JSON Lines as an append's (store_line_check()). */
static int check(const char *path, const char *require, const struct jsonl_out *o)
{
	int r = 0;

	if (o->b->fd >= 0)
		return store_lines_check_fd(path, o->b->fd, o->len, o->lines, o->nlines, require);
	for (size_t i = 0; r == 0 && i < o->nlines; i++)
		r = store_line_check(path, i, &(struct store_line){ o->b->mem.buf + o->lines[i].off, o->lines[i].len },
				     require);
	return r;
}

int jsonl_to_array(struct fs *fs, const char *path, const char *require, const struct jsonl_frame *frame, int fd,
		   struct commit_bytes *ret)
{
	static const struct jsonl_frame bare = { "[", 1, "]", 1 };
	struct jsonl_out o = { .fs = fs, .b = ret, .buf = SB_INIT };
	struct stat st;
	int r;

	*ret = (struct commit_bytes){ .mem = SB_INIT, .fd = -1 };
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((r = commit_size_check(fd, &st, path)) < 0)
		return r;
	r = convert(path, fd, frame ? frame : &bare, &o);
	if (r == 0)
		r = check(path, require, &o);
	sb_release(&o.buf);
	free(o.lines);
	if (r < 0)
		commit_bytes_release(ret);
	return r;
}
