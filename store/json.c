/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * json.c: a validating JSON scanner that builds no tree.
 *
 * Every commit of a conversation file passes through here, so it must be
 * cheap: text in memory is scanned in one pass without allocating, and text
 * too big to hold (a file of any size) is read through a window of
 * JSON_WINDOW bytes that moves forward with the scan (struct json_reader).
 * Each element of the top-level array is handed to a callback as a byte
 * range. Values are parsed (with cJSON) only where a field is needed, and
 * only for the elements that changed.
 *
 * Recursion depth is bounded by JSON_MAX_DEPTH, so hostile nesting cannot
 * exhaust a FUSE worker's stack.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/json.h"
#include "store/util.h"

/*
 * The scan sees the text's bytes [lo, hi) at w: all of it for text in
 * memory; for text read through rd, a window that fill() moves forward.
 */
struct scan {
	const char *w;
	size_t lo, hi;
	size_t n; /* the text's length: the scan stops there */
	size_t i;
	struct json_error *err;
	const struct json_reader *rd;
	char *buf;
	size_t bufsize;
	int rd_err; /* the reader's error: the scan stops, and returns it */
};

static void scan_mem(struct scan *sc, const char *s, size_t n, struct json_error *err)
{
	*sc = (struct scan){ .w = s, .lo = 0, .hi = n, .n = n, .err = err };
}

static int scan_read(struct scan *sc, const struct json_reader *rd, size_t end, struct json_error *err)
{
	size_t size = rd->window ? rd->window : JSON_WINDOW;

	/* At least a member name that is looked for, with its quotes (name_is()). */
	*sc = (struct scan){ .n = end, .err = err, .rd = rd, .bufsize = size < 64 ? 64 : size };
	sc->buf = malloc(sc->bufsize);
	if (!sc->buf)
		return -ENOMEM;
	sc->w = sc->buf;
	return 0;
}

/* What a scan through a reader returns: the reader's error before the scan's own. */
static int scan_done(struct scan *sc, int r)
{
	free(sc->buf);
	sc->buf = NULL;
	return sc->rd_err ? sc->rd_err : r;
}

/*
 * Makes bytes [i, i + k) visible at AT(sc) (k at most the window's size);
 * false if the text ends before (or the reader failed). The window only
 * moves forward: a scan that goes back sets lo = hi = i first.
 */
static bool fill(struct scan *sc, size_t k)
{
	size_t want;
	int r;

	if (sc->i + k <= sc->hi)
		return true;
	if (!sc->rd || sc->rd_err || sc->i + k > sc->n)
		return false;
	want = sc->n - sc->i < sc->bufsize ? sc->n - sc->i : sc->bufsize;
	r = sc->rd->read(sc->rd->ctx, sc->i, sc->buf, want);
	if (r < 0) {
		sc->rd_err = r;
		sc->lo = sc->hi = sc->i;
		return false;
	}
	sc->lo = sc->i;
	sc->hi = sc->i + want;
	return true;
}

#define AT(sc) ((sc)->w[(sc)->i - (sc)->lo])

/* True if there is a byte at i (and makes it visible at AT(sc)). */
static inline bool more(struct scan *sc)
{
	return sc->i < sc->hi || (sc->i < sc->n && fill(sc, 1));
}

static int fail(struct scan *sc, const char *what)
{
	if (sc->err) {
		sc->err->offset = sc->i;
		if (!more(sc))
			snprintf(sc->err->msg, sizeof(sc->err->msg), "%s at end of input", what);
		else if ((unsigned char)AT(sc) >= 0x20 && (unsigned char)AT(sc) < 0x7f)
			snprintf(sc->err->msg, sizeof(sc->err->msg), "%s: unexpected '%c'", what, AT(sc));
		else
			snprintf(sc->err->msg, sizeof(sc->err->msg), "%s: unexpected byte 0x%02x", what,
				 (unsigned char)AT(sc));
	}
	return -EINVAL;
}

static void skip_ws(struct scan *sc)
{
	while (more(sc)) {
		char c = AT(sc);

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		sc->i++;
	}
}

size_t json_utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len, k;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[k] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Whether none of the 8 bytes of w ends a run of plain text in a string: a
 * quote, a backslash, a control character or a byte of a multi-byte UTF-8
 * character. Each test finds whether any byte matches, exactly (the bit
 * tricks may mark the wrong byte, never a match where there is none), so a
 * word that passes is plain throughout; one that fails is looked at a byte
 * at a time.
 */
static inline bool word_is_plain(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');

	return ((w & highs) |                                /* >= 0x80 */
		((w - ones * 0x20) & ~w & highs) |           /* < 0x20 */
		((quote - ones) & ~quote & highs) |           /* '"' */
		((backslash - ones) & ~backslash & highs)) == 0; /* '\\' */
}

static int scan_string(struct scan *sc)
{
	sc->i++; /* opening quote */
	while (more(sc)) {
		/* Most of a conversation is plain text: skipped in one run to the window's end. */
		const unsigned char *p = (const unsigned char *)&AT(sc), *q = p, *end = p + (sc->hi - sc->i);

		for (uint64_t w; end - q >= 8 && (memcpy(&w, q, 8), word_is_plain(w));)
			q += 8;
		while (q < end && *q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
			q++;
		sc->i += (size_t)(q - p);
		if (q == end)
			continue;
		unsigned char c = *q;

		if (c == '"') {
			sc->i++;
			return 0;
		}
		if (c == '\\') {
			sc->i++;
			if (!more(sc))
				return fail(sc, "unterminated string");
			switch (AT(sc)) {
			case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
				sc->i++;
				break;
			case 'u':
				if (!fill(sc, 5))
					return fail(sc, "truncated \\u escape");
				for (int k = 1; k <= 4; k++)
					if (hexval((&AT(sc))[k]) < 0) {
						sc->i += k;
						return fail(sc, "bad \\u escape");
					}
				sc->i += 5;
				break;
			default:
				return fail(sc, "bad escape");
			}
			continue;
		}
		if (c < 0x20)
			return fail(sc, "control character in string");
		if (c < 0x80) {
			sc->i++;
			continue;
		}
		if (!fill(sc, sc->n - sc->i < 4 ? sc->n - sc->i : 4))
			return fail(sc, "invalid utf-8");
		size_t len = json_utf8_len((const unsigned char *)&AT(sc), sc->hi - sc->i);
		if (!len)
			return fail(sc, "invalid utf-8");
		sc->i += len;
	}
	return fail(sc, "unterminated string");
}

static inline bool at_digit(struct scan *sc)
{
	return more(sc) && AT(sc) >= '0' && AT(sc) <= '9';
}

static inline bool at_char(struct scan *sc, char c)
{
	return more(sc) && AT(sc) == c;
}

static int scan_digits(struct scan *sc)
{
	size_t start = sc->i;

	while (at_digit(sc))
		sc->i++;
	return sc->i > start ? 0 : fail(sc, "bad number");
}

static int scan_number(struct scan *sc)
{
	if (at_char(sc, '-'))
		sc->i++;
	if (at_char(sc, '0'))
		sc->i++;
	else if (scan_digits(sc) < 0)
		return -EINVAL;
	if (at_char(sc, '.')) {
		sc->i++;
		if (scan_digits(sc) < 0)
			return -EINVAL;
	}
	if (at_char(sc, 'e') || at_char(sc, 'E')) {
		sc->i++;
		if (at_char(sc, '+') || at_char(sc, '-'))
			sc->i++;
		if (scan_digits(sc) < 0)
			return -EINVAL;
	}
	return 0;
}

static int scan_literal(struct scan *sc, const char *word)
{
	size_t len = strlen(word);

	if (!fill(sc, len) || memcmp(&AT(sc), word, len) != 0)
		return fail(sc, "bad literal");
	sc->i += len;
	return 0;
}

static int scan_value(struct scan *sc, int depth);

/*
 * The member of an object that scan_container() scans element by element:
 * the first one named name whose value is an array. at is 1 + where the
 * first one named name has its value (0: none), found tells whether that
 * value is an array, head and tail are json_scan_array_at()'s.
 */
struct pick {
	const char *name;
	size_t len;
	json_elem_fn fn;
	void *ctx;
	size_t at, head, tail;
	bool found;
};

/* True if the member name at i (its opening quote) is exactly key, with no escapes. */
static bool name_is(struct scan *sc, const char *key, size_t keylen)
{
	return fill(sc, keylen + 2) && (&AT(sc))[keylen + 1] == '"' && memcmp(&AT(sc) + 1, key, keylen) == 0;
}

static int scan_container(struct scan *sc, int depth, json_elem_fn fn, void *ctx, size_t *ret_last_end,
			  struct pick *pick);

/*
 * One member of an array or object (close: ']' or '}'), from sc->i to just
 * past its value; *pre is where the bytes before it began, and is moved on.
 */
static int scan_member(struct scan *sc, int depth, char close, json_elem_fn fn, void *ctx, size_t *ret_last_end,
		       struct pick *pick, size_t *pre)
{
	bool picked = false;
	size_t start;
	int r;

	if (close == '}') {
		bool mine;

		if (!at_char(sc, '"'))
			return fail(sc, "expected member name");
		mine = pick && !pick->at && name_is(sc, pick->name, pick->len);
		if ((r = scan_string(sc)) < 0)
			return r;
		skip_ws(sc);
		if (!at_char(sc, ':'))
			return fail(sc, "expected ':'");
		sc->i++;
		skip_ws(sc);
		if (mine) {
			pick->at = sc->i + 1;
			picked = pick->found = at_char(sc, '[');
			pick->head = sc->i + 1;
		}
	}
	start = sc->i;
	if (picked)
		r = scan_container(sc, depth + 1, pick->fn, pick->ctx, &pick->tail, NULL);
	else
		r = scan_value(sc, depth + 1);
	if (r < 0)
		return r;
	if (fn && (r = fn(ctx, *pre, start, sc->i)) < 0)
		return r;
	*pre = sc->i;
	if (ret_last_end)
		*ret_last_end = *pre;
	return 0;
}

/*
 * The members of an array or object (close: ']' or '}') from sc->i, past its
 * opening bracket; of an object, pick's member (may be NULL). after_value:
 * sc->i is just past a member's value, not at the first member.
 */
static int scan_members(struct scan *sc, int depth, char close, json_elem_fn fn, void *ctx, size_t *ret_last_end,
			struct pick *pick, bool after_value)
{
	size_t pre = sc->i;
	int r;

	if (ret_last_end)
		*ret_last_end = pre;
	if (!after_value) {
		skip_ws(sc);
		if (at_char(sc, close)) {
			sc->i++;
			return 0;
		}
	}
	for (;;) {
		if (!after_value && (r = scan_member(sc, depth, close, fn, ctx, ret_last_end, pick, &pre)) < 0)
			return r;
		after_value = false;
		skip_ws(sc);
		if (!more(sc))
			return fail(sc, close == ']' ? "unterminated array" : "unterminated object");
		if (AT(sc) == ',') {
			sc->i++;
			skip_ws(sc);
			continue;
		}
		if (AT(sc) == close) {
			sc->i++;
			return 0;
		}
		return fail(sc, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
	}
}

/* Scans an array or object whose opening bracket is at sc->i; of an object, pick's member (may be NULL). */
static int scan_container(struct scan *sc, int depth, json_elem_fn fn, void *ctx, size_t *ret_last_end,
			  struct pick *pick)
{
	char close = AT(sc) == '[' ? ']' : '}';

	if (depth >= JSON_MAX_DEPTH)
		return fail(sc, "nesting too deep");
	sc->i++;
	return scan_members(sc, depth, close, fn, ctx, ret_last_end, pick, false);
}

static int scan_value(struct scan *sc, int depth)
{
	if (!more(sc))
		return fail(sc, "expected a value");
	switch (AT(sc)) {
	case '{':
	case '[':
		return scan_container(sc, depth, NULL, NULL, NULL, NULL);
	case '"':
		return scan_string(sc);
	case 't':
		return scan_literal(sc, "true");
	case 'f':
		return scan_literal(sc, "false");
	case 'n':
		return scan_literal(sc, "null");
	default:
		if (AT(sc) == '-' || (AT(sc) >= '0' && AT(sc) <= '9'))
			return scan_number(sc);
		return fail(sc, "expected a value");
	}
}

static int scan_end(struct scan *sc)
{
	skip_ws(sc);
	return sc->i == sc->n ? 0 : fail(sc, "trailing data after the value");
}

/*
 * The array of the whole text, or of member `member` of its top-level object
 * (member NULL: the top-level array itself): json_scan_array_at().
 */
static int scan_array(struct scan *sc, const char *member, const struct json_known *known, json_elem_fn fn,
		      void *ctx, size_t *ret_head, size_t *ret_tail)
{
	struct pick pick = { .name = member, .len = member ? strlen(member) : 0, .fn = fn, .ctx = ctx };
	int r;

	if (known && known->end) {
		/* Inside the array, just past an element: its members at depth 1 if it is an object's. */
		sc->i = known->end;
		pick.at = pick.head = known->head;
		r = scan_members(sc, member ? 1 : 0, ']', fn, ctx, &pick.tail, NULL, true);
		if (r == 0 && member)
			r = scan_members(sc, 0, '}', NULL, NULL, NULL, &pick, true);
		if (r < 0)
			return r;
		pick.found = true;
		goto end;
	}
	skip_ws(sc);
	if (!member) {
		if (!at_char(sc, '[')) {
			if (more(sc) && scan_value(sc, 0) == 0 && scan_end(sc) == 0) {
				sc->i = 0;
				if (sc->rd)
					sc->lo = sc->hi = 0; /* back to the start: the window starts there again */
				return fail(sc, "top-level value is not an array");
			}
			return sc->i >= sc->n ? fail(sc, "expected '['") : -EINVAL;
		}
		pick.head = sc->i + 1;
		if ((r = scan_container(sc, 0, fn, ctx, &pick.tail, NULL)) < 0)
			return r;
		pick.found = true;
	} else if (at_char(sc, '{')) {
		/* The object, member by member: the first `member` that is an array is scanned element by element. */
		if ((r = scan_container(sc, 0, NULL, NULL, NULL, &pick)) < 0)
			return r;
	} else if ((r = scan_value(sc, 0)) < 0) {
		return r;
	}
end:
	if ((r = scan_end(sc)) < 0)
		return r;
	if (!pick.found) {
		if (sc->err) {
			snprintf(sc->err->msg, sizeof(sc->err->msg), pick.at ? "member \"%s\" is not an array"
									     : "no member \"%s\" in a top-level object", member);
			sc->err->offset = pick.at ? pick.at - 1 : 0;
		}
		return -EINVAL;
	}
	if (ret_head)
		*ret_head = pick.head;
	if (ret_tail)
		*ret_tail = pick.tail;
	return 0;
}

int json_scan_array(const char *s, size_t n, json_elem_fn fn, void *ctx,
		    size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	return json_scan_array_at(s, n, NULL, fn, ctx, ret_head, ret_tail, err);
}

int json_scan_array_at(const char *s, size_t n, const char *member, json_elem_fn fn, void *ctx,
		       size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	return json_scan_array_after(s, n, member, NULL, fn, ctx, ret_head, ret_tail, err);
}

int json_scan_array_after(const char *s, size_t n, const char *member, const struct json_known *known,
			  json_elem_fn fn, void *ctx, size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	struct scan sc;

	scan_mem(&sc, s, n, err);
	return scan_array(&sc, member, known, fn, ctx, ret_head, ret_tail);
}

int json_scan_array_read(const struct json_reader *rd, const char *member, const struct json_known *known,
			 json_elem_fn fn, void *ctx, size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	struct scan sc;
	int r = scan_read(&sc, rd, rd->len, err);

	return r < 0 ? r : scan_done(&sc, scan_array(&sc, member, known, fn, ctx, ret_head, ret_tail));
}

static int validate(struct scan *sc)
{
	int r;

	skip_ws(sc);
	if ((r = scan_value(sc, 0)) < 0)
		return r;
	return scan_end(sc);
}

int json_validate(const char *s, size_t n, struct json_error *err)
{
	struct scan sc;

	scan_mem(&sc, s, n, err);
	return validate(&sc);
}

int json_validate_read(const struct json_reader *rd, struct json_error *err)
{
	struct scan sc;
	int r = scan_read(&sc, rd, rd->len, err);

	return r < 0 ? r : scan_done(&sc, validate(&sc));
}

/* Finds member key of the object that starts at sc->i (json_object_member()). */
static int member_of(struct scan *sc, const char *key, size_t *ret_start, size_t *ret_end)
{
	size_t keylen = strlen(key);

	skip_ws(sc);
	if (!at_char(sc, '{'))
		return -ENOENT;
	sc->i++;
	for (;;) {
		size_t vstart;
		bool match;

		skip_ws(sc);
		if (!at_char(sc, '"'))
			return -ENOENT;
		/* Keys with escapes never match: Cline's keys are plain ASCII. */
		match = name_is(sc, key, keylen);
		if (scan_string(sc) < 0)
			return -ENOENT;
		skip_ws(sc);
		if (!at_char(sc, ':'))
			return -ENOENT;
		sc->i++;
		skip_ws(sc);
		vstart = sc->i;
		if (scan_value(sc, 1) < 0)
			return -ENOENT;
		if (match) {
			*ret_start = vstart;
			*ret_end = sc->i;
			return 0;
		}
		skip_ws(sc);
		if (!at_char(sc, ','))
			return -ENOENT;
		sc->i++;
	}
}

int json_object_member(const char *s, size_t n, const char *key, size_t *ret_start, size_t *ret_end)
{
	struct scan sc;

	scan_mem(&sc, s, n, NULL);
	return member_of(&sc, key, ret_start, ret_end);
}

int json_object_member_read(const struct json_reader *rd, size_t start, size_t end, const char *key,
			    size_t *ret_start, size_t *ret_end)
{
	struct scan sc;
	int r = scan_read(&sc, rd, end, NULL);

	if (r < 0)
		return r;
	sc.i = sc.lo = sc.hi = start;
	return scan_done(&sc, member_of(&sc, key, ret_start, ret_end));
}

int json_to_int64(const char *s, size_t n, long long *ret)
{
	long long v = 0;
	size_t i = 0;
	bool neg = false;

	if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
		s++, n -= 2;
	if (n && s[0] == '-')
		neg = true, i++;
	if (i >= n || n - i > 18)
		return -EINVAL;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = neg ? -v : v;
	return 0;
}

char *json_member_string(const char *s, size_t n, const char *key)
{
	size_t a, b;
	cJSON *v;
	char *out = NULL;

	if (json_object_member(s, n, key, &a, &b) < 0)
		return NULL;
	v = cJSON_ParseWithLength(s + a, b - a);
	if (v && cJSON_IsString(v) && v->valuestring)
		out = strdup(v->valuestring);
	cJSON_Delete(v);
	return out;
}

static int indent(struct sb *out, int depth)
{
	int r = sb_add(out, "\n", 1);

	for (int i = 0; r == 0 && i < depth; i++)
		r = sb_add(out, "  ", 2);
	return r;
}

char *json_pretty(const char *s)
{
	_cleanup_sb_ struct sb out = SB_INIT;
	int depth = 0, r = 0;

	for (const char *p = s; *p && r == 0; p++) {
		switch (*p) {
		case '"': {
			const char *q = p + 1;

			while (*q && *q != '"')
				q += (*q == '\\' && q[1]) ? 2 : 1;
			r = sb_add(&out, p, (size_t)(q - p) + (*q ? 1 : 0));
			p = *q ? q : q - 1;
			break;
		}
		case '{':
		case '[':
			if (p[1] == (*p == '{' ? '}' : ']')) {
				r = sb_add(&out, p, 2);
				p++;
			} else {
				r = sb_add(&out, p, 1);
				if (r == 0)
					r = indent(&out, ++depth);
			}
			break;
		case '}':
		case ']':
			r = indent(&out, --depth);
			if (r == 0)
				r = sb_add(&out, p, 1);
			break;
		case ',':
			r = sb_add(&out, ",", 1);
			if (r == 0)
				r = indent(&out, depth);
			break;
		case ':':
			r = sb_add(&out, ": ", 2);
			break;
		default:
			r = sb_add(&out, p, 1);
		}
	}
	return r == 0 ? sb_detach(&out, NULL) : NULL;
}

int json_print_pretty(const cJSON *o, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *compact = cJSON_PrintUnformatted(o);
	char *pretty = compact ? json_pretty(compact) : NULL;

	if (!pretty)
		return -ENOMEM;
	*ret_len = strlen(pretty);
	*ret = pretty;
	return 0;
}

void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
