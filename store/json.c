/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * json.c: a validating JSON scanner that builds no tree.
 *
 * Every commit of a conversation file passes through here, so it must be
 * cheap and must not allocate: files of 20 MB and more are scanned in one
 * pass over a mapping of the written bytes, and each element of the top-level
 * array is handed to a callback as a byte range. Values are parsed (with
 * cJSON) only where a field is needed, and only for the elements that changed.
 *
 * Recursion depth is bounded by JSON_MAX_DEPTH, so hostile nesting cannot
 * exhaust a FUSE worker's stack.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/json.h"
#include "store/util.h"

struct scan {
	const char *s;
	size_t n;
	size_t i;
	struct json_error *err;
};

static int fail(struct scan *sc, const char *what)
{
	if (sc->err) {
		sc->err->offset = sc->i;
		if (sc->i >= sc->n)
			snprintf(sc->err->msg, sizeof(sc->err->msg), "%s at end of input", what);
		else if ((unsigned char)sc->s[sc->i] >= 0x20 && (unsigned char)sc->s[sc->i] < 0x7f)
			snprintf(sc->err->msg, sizeof(sc->err->msg), "%s: unexpected '%c'", what, sc->s[sc->i]);
		else
			snprintf(sc->err->msg, sizeof(sc->err->msg), "%s: unexpected byte 0x%02x", what,
				 (unsigned char)sc->s[sc->i]);
	}
	return -EINVAL;
}

static void skip_ws(struct scan *sc)
{
	while (sc->i < sc->n) {
		char c = sc->s[sc->i];

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

static int scan_string(struct scan *sc)
{
	sc->i++; /* opening quote */
	while (sc->i < sc->n) {
		unsigned char c = (unsigned char)sc->s[sc->i];

		if (c == '"') {
			sc->i++;
			return 0;
		}
		if (c == '\\') {
			sc->i++;
			if (sc->i >= sc->n)
				return fail(sc, "unterminated string");
			switch (sc->s[sc->i]) {
			case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
				sc->i++;
				break;
			case 'u':
				if (sc->n - sc->i < 5)
					return fail(sc, "truncated \\u escape");
				for (int k = 1; k <= 4; k++)
					if (hexval(sc->s[sc->i + k]) < 0) {
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
		size_t len = json_utf8_len((const unsigned char *)sc->s + sc->i, sc->n - sc->i);
		if (!len)
			return fail(sc, "invalid utf-8");
		sc->i += len;
	}
	return fail(sc, "unterminated string");
}

static int scan_digits(struct scan *sc)
{
	size_t start = sc->i;

	while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')
		sc->i++;
	return sc->i > start ? 0 : fail(sc, "bad number");
}

static int scan_number(struct scan *sc)
{
	if (sc->s[sc->i] == '-')
		sc->i++;
	if (sc->i < sc->n && sc->s[sc->i] == '0')
		sc->i++;
	else if (scan_digits(sc) < 0)
		return -EINVAL;
	if (sc->i < sc->n && sc->s[sc->i] == '.') {
		sc->i++;
		if (scan_digits(sc) < 0)
			return -EINVAL;
	}
	if (sc->i < sc->n && (sc->s[sc->i] == 'e' || sc->s[sc->i] == 'E')) {
		sc->i++;
		if (sc->i < sc->n && (sc->s[sc->i] == '+' || sc->s[sc->i] == '-'))
			sc->i++;
		if (scan_digits(sc) < 0)
			return -EINVAL;
	}
	return 0;
}

static int scan_literal(struct scan *sc, const char *word)
{
	size_t len = strlen(word);

	if (sc->n - sc->i < len || memcmp(sc->s + sc->i, word, len) != 0)
		return fail(sc, "bad literal");
	sc->i += len;
	return 0;
}

static int scan_value(struct scan *sc, int depth);

/* Scans an array or object whose opening bracket is at sc->i. */
static int scan_container(struct scan *sc, int depth, json_elem_fn fn, void *ctx, size_t *ret_last_end)
{
	char close = sc->s[sc->i] == '[' ? ']' : '}';
	size_t pre;
	int r;

	if (depth >= JSON_MAX_DEPTH)
		return fail(sc, "nesting too deep");
	sc->i++;
	pre = sc->i;
	if (ret_last_end)
		*ret_last_end = pre;
	skip_ws(sc);
	if (sc->i < sc->n && sc->s[sc->i] == close) {
		sc->i++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			if (sc->i >= sc->n || sc->s[sc->i] != '"')
				return fail(sc, "expected member name");
			if ((r = scan_string(sc)) < 0)
				return r;
			skip_ws(sc);
			if (sc->i >= sc->n || sc->s[sc->i] != ':')
				return fail(sc, "expected ':'");
			sc->i++;
			skip_ws(sc);
		}
		size_t start = sc->i;
		if ((r = scan_value(sc, depth + 1)) < 0)
			return r;
		if (fn && (r = fn(ctx, pre, start, sc->i)) < 0)
			return r;
		pre = sc->i;
		if (ret_last_end)
			*ret_last_end = pre;
		skip_ws(sc);
		if (sc->i >= sc->n)
			return fail(sc, close == ']' ? "unterminated array" : "unterminated object");
		if (sc->s[sc->i] == ',') {
			sc->i++;
			skip_ws(sc);
			continue;
		}
		if (sc->s[sc->i] == close) {
			sc->i++;
			return 0;
		}
		return fail(sc, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
	}
}

static int scan_value(struct scan *sc, int depth)
{
	if (sc->i >= sc->n)
		return fail(sc, "expected a value");
	switch (sc->s[sc->i]) {
	case '{':
	case '[':
		return scan_container(sc, depth, NULL, NULL, NULL);
	case '"':
		return scan_string(sc);
	case 't':
		return scan_literal(sc, "true");
	case 'f':
		return scan_literal(sc, "false");
	case 'n':
		return scan_literal(sc, "null");
	default:
		if (sc->s[sc->i] == '-' || (sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9'))
			return scan_number(sc);
		return fail(sc, "expected a value");
	}
}

static int scan_end(struct scan *sc)
{
	skip_ws(sc);
	return sc->i == sc->n ? 0 : fail(sc, "trailing data after the value");
}

int json_scan_array(const char *s, size_t n, json_elem_fn fn, void *ctx,
		    size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	struct scan sc = { s, n, 0, err };
	size_t head, tail = 0;
	int r;

	skip_ws(&sc);
	if (sc.i >= n || s[sc.i] != '[') {
		if (sc.i < n && scan_value(&sc, 0) == 0 && scan_end(&sc) == 0) {
			sc.i = 0;
			return fail(&sc, "top-level value is not an array");
		}
		return sc.i >= n ? fail(&sc, "expected '['") : -EINVAL;
	}
	head = sc.i + 1;
	r = scan_container(&sc, 0, fn, ctx, &tail);
	if (r < 0)
		return r;
	if ((r = scan_end(&sc)) < 0)
		return r;
	if (ret_head)
		*ret_head = head;
	if (ret_tail)
		*ret_tail = tail;
	return 0;
}

int json_scan_array_at(const char *s, size_t n, const char *member, json_elem_fn fn, void *ctx,
		       size_t *ret_head, size_t *ret_tail, struct json_error *err)
{
	struct scan sc = { s, n, 0, err };
	size_t a, b, tail = 0;
	int r;

	if (!member)
		return json_scan_array(s, n, fn, ctx, ret_head, ret_tail, err);
	if ((r = json_validate(s, n, err)) < 0)
		return r;
	if (json_object_member(s, n, member, &a, &b) < 0) {
		if (err) {
			snprintf(err->msg, sizeof(err->msg), "no member \"%s\" in a top-level object", member);
			err->offset = 0;
		}
		return -EINVAL;
	}
	if (s[a] != '[') {
		if (err) {
			snprintf(err->msg, sizeof(err->msg), "member \"%s\" is not an array", member);
			err->offset = a;
		}
		return -EINVAL;
	}
	sc.i = a;
	if ((r = scan_container(&sc, 0, fn, ctx, &tail)) < 0)
		return r;
	if (ret_head)
		*ret_head = a + 1;
	if (ret_tail)
		*ret_tail = tail;
	return 0;
}

int json_validate(const char *s, size_t n, struct json_error *err)
{
	struct scan sc = { s, n, 0, err };
	int r;

	skip_ws(&sc);
	if ((r = scan_value(&sc, 0)) < 0)
		return r;
	return scan_end(&sc);
}

int json_object_member(const char *s, size_t n, const char *key, size_t *ret_start, size_t *ret_end)
{
	struct scan sc = { s, n, 0, NULL };
	size_t keylen = strlen(key);

	skip_ws(&sc);
	if (sc.i >= n || s[sc.i] != '{')
		return -ENOENT;
	sc.i++;
	for (;;) {
		size_t kstart, kend, vstart;

		skip_ws(&sc);
		if (sc.i >= n || s[sc.i] != '"')
			return -ENOENT;
		kstart = sc.i + 1;
		if (scan_string(&sc) < 0)
			return -ENOENT;
		kend = sc.i - 1;
		skip_ws(&sc);
		if (sc.i >= n || s[sc.i] != ':')
			return -ENOENT;
		sc.i++;
		skip_ws(&sc);
		vstart = sc.i;
		if (scan_value(&sc, 1) < 0)
			return -ENOENT;
		/* Keys with escapes never match: Cline's keys are plain ASCII. */
		if (kend - kstart == keylen && memcmp(s + kstart, key, keylen) == 0) {
			*ret_start = vstart;
			*ret_end = sc.i;
			return 0;
		}
		skip_ws(&sc);
		if (sc.i >= n || s[sc.i] != ',')
			return -ENOENT;
		sc.i++;
	}
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
