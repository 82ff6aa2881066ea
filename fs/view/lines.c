/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lines.c: the lines of a JSON Lines snapshot, one at a time (lines.h).
 *
 * The snapshot is read through a window of LINES_CHUNK bytes; a line is
 * gathered while it is at most the caller's keep, and past that only looked
 * through for the caller's words (with the end of the last piece, so that a
 * word that spans two pieces is found) and let go. So the memory is the
 * window and one kept line, whatever the conversation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/view/lines.h"
#include "store/util.h"

#define LINES_CHUNK (1 << 20)
#define LINES_TAIL 64 /* longer than any word looked for */

struct line {
	struct lines_line at;
	struct sb buf;
	bool held;
	char tail[LINES_TAIL];
	size_t ntail;
	size_t keep;
	const char *const *words;
};

static void look_through(struct line *l, const char *p, size_t n)
{
	char edge[2 * LINES_TAIL];
	size_t k = n < LINES_TAIL ? n : LINES_TAIL;

	/* What spans the last piece and this one, then this one. */
	memcpy(edge, l->tail, l->ntail);
	memcpy(edge + l->ntail, p, k);
	for (size_t i = 0; l->words && l->words[i] && i < LINES_WORDS; i++) {
		size_t wl = strlen(l->words[i]);

		if (memmem(edge, l->ntail + k, l->words[i], wl) || memmem(p, n, l->words[i], wl))
			l->at.found |= 1u << i;
	}
	if (n >= LINES_TAIL) {
		memcpy(l->tail, p + n - LINES_TAIL, LINES_TAIL);
		l->ntail = LINES_TAIL;
	} else {
		size_t keep = l->ntail + n > LINES_TAIL ? LINES_TAIL - n : l->ntail;

		memmove(l->tail, l->tail + l->ntail - keep, keep);
		memcpy(l->tail + keep, p, n);
		l->ntail = keep + n;
	}
}

static int line_add(struct line *l, const char *p, size_t n)
{
	l->at.len += (int64_t)n;
	if (l->held && l->buf.len + n <= l->keep)
		return sb_add(&l->buf, p, n);
	if (l->held) { /* too long to hold: look through what was held, then let it go */
		look_through(l, sb_str(&l->buf), l->buf.len);
		sb_release(&l->buf);
		l->held = false;
	}
	look_through(l, p, n);
	return 0;
}

static int line_end(struct line *l, lines_fn fn, void *ctx)
{
	if (l->held) {
		l->ntail = 0;
		look_through(l, sb_str(&l->buf), l->buf.len);
		l->at.bytes = sb_str(&l->buf);
	}
	return fn(ctx, &l->at);
}

static void line_reset(struct line *l, int64_t off, int64_t index)
{
	sb_release(&l->buf);
	l->at = (struct lines_line){ .index = index, .off = off };
	l->held = true;
	l->ntail = 0;
}

int64_t lines_each(struct store *st, struct store_snap *snap, size_t keep, const char *const *words, lines_fn fn,
		   void *ctx)
{
	int64_t size = store_snap_size(snap), at = 0, n = 0;
	_cleanup_free_ char *chunk = malloc(LINES_CHUNK);
	struct line l = { .keep = keep, .words = words };
	int r = 0;

	if (!chunk)
		return -ENOMEM;
	line_reset(&l, 0, 0);
	while (r == 0 && at < size) {
		ssize_t got = store_snap_read(st, snap, chunk, LINES_CHUNK, at);
		const char *p = chunk, *end;

		if (got <= 0) {
			r = got < 0 ? (int)got : -EIO;
			break;
		}
		end = chunk + got;
		while (r == 0 && p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));

			r = line_add(&l, p, (size_t)((nl ? nl : end) - p));
			if (r == 0 && nl) {
				l.at.nl = true;
				r = line_end(&l, fn, ctx);
				line_reset(&l, at + (nl + 1 - chunk), ++n);
			}
			p = nl ? nl + 1 : end;
		}
		at += got;
	}
	/* A last line without its "\n" (JSON Lines of the store always has one). */
	if (r == 0 && l.at.len > 0) {
		r = line_end(&l, fn, ctx);
		n++;
	}
	sb_release(&l.buf);
	return r != 0 ? r : n;
}
