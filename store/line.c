/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * line.c: the check of one line of JSON Lines that becomes an element of
 * an array doc, by an append (>> to the view's messages.jsonl) or a rewrite
 * of the view's file: one JSON object, with the member the doc requires
 * ("role" for the API stream). In memory, or in a file a piece at a time.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/json.h"
#include "store/src.h"
#include "store/util.h"

/*
 * What store_line_check() and store_lines_check_fd() say of line i, its
 * checks done: r from json_validate() (jerr), whether it starts with '{'
 * and whether it has the member.
 */
static int line_verdict(const char *path, size_t i, int r, const struct json_error *jerr, bool object,
			bool has_member, const char *require_member)
{
	if (r == -EINVAL) {
		log_warn("refusing to append to '%s': line %zu is not valid JSON: %s at byte %zu; nothing stored",
			 path, i + 1, jerr->msg, jerr->offset);
		return -EINVAL;
	}
	if (r < 0)
		return r;
	if (!object) {
		log_warn("refusing to append to '%s': line %zu is not a JSON object; nothing stored", path, i + 1);
		return -EINVAL;
	}
	if (require_member && !has_member) {
		log_warn("refusing to append to '%s': line %zu has no \"%s\"; nothing stored", path, i + 1,
			 require_member);
		return -EINVAL;
	}
	return 0;
}

int store_line_check(const char *path, size_t i, const struct store_line *l, const char *require_member)
{
	struct json_error jerr = { 0 };
	size_t a, b, k = 0;
	int r;

	while (k < l->len && (l->data[k] == ' ' || l->data[k] == '\t'))
		k++;
	r = json_validate(l->data, l->len, &jerr);
	return line_verdict(path, i, r, &jerr, k < l->len && l->data[k] == '{',
			    !require_member || json_object_member(l->data, l->len, require_member, &a, &b) == 0,
			    require_member);
}

struct line_in_file {
	const struct src *src;
	size_t off;
};

static int line_read(void *ctx, size_t off, char *buf, size_t n)
{
	const struct line_in_file *lf = ctx;

	return src_read(lf->src, lf->off + off, buf, n);
}

/* Line i, [off, off + len) of src, too long for a window: checked a piece at a time. */
static int line_check_read(const char *path, size_t i, const struct src *src, size_t off, size_t len,
			   const char *require_member)
{
	struct line_in_file lf = { src, off };
	struct json_reader rd = { .read = line_read, .ctx = &lf, .len = len };
	struct json_error jerr = { 0 };
	size_t a, b, k = 0;
	char c = 0;
	int r, m = 0;

	/* The first byte that is not a blank says whether it is an object. */
	while (k < len && (r = line_read(&lf, k, &c, 1)) == 0 && (c == ' ' || c == '\t'))
		k++;
	r = json_validate_read(&rd, &jerr);
	if (r == 0 && require_member && (m = json_object_member_read(&rd, 0, len, require_member, &a, &b)) < 0 &&
	    m != -ENOENT)
		r = m;
	return line_verdict(path, i, r, &jerr, k < len && c == '{', !require_member || m == 0, require_member);
}

int store_lines_check_fd(const char *path, int fd, size_t size, const struct store_line_at *lines, size_t n,
			 const char *require_member)
{
	_cleanup_src_window_ struct src_window w = SRC_WINDOW_INIT;
	struct src src = { .fd = fd, .len = size };
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct store_line l = { .len = lines[i].len };

		if (l.len > SRC_WINDOW)
			r = line_check_read(path, i, &src, lines[i].off, l.len, require_member);
		else if ((r = src_get(&src, lines[i].off, l.len, &w, &l.data)) == 0)
			r = store_line_check(path, i, &l, require_member);
	}
	return r;
}
