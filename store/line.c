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
 * What store_line_check() and store_line_check_fd() say of line i, its
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
	int fd;
	off_t off;
};

static int line_read(void *ctx, size_t off, char *buf, size_t n)
{
	struct src src = { .fd = ((struct line_in_file *)ctx)->fd, .len = SIZE_MAX };

	return src_read(&src, (size_t)((struct line_in_file *)ctx)->off + off, buf, n);
}

int store_line_check_fd(const char *path, size_t i, int fd, off_t off, size_t len, const char *require_member)
{
	struct line_in_file lf = { fd, off };
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

