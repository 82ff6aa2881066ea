/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_json.c: the validating scanner of store/json.c.
 *
 * json_scan_array() decides what the store accepts and where each element's
 * bytes lie; a wrong offset would corrupt every rendered file, a wrong
 * acceptance would let a torn write replace good history. So the offsets are
 * checked exactly, against compact and JSON.stringify(x, null, 2) layouts,
 * and every refusal RFC 8259 asks for is tried, each on its own input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/json.h"
#include "store/util.h"

/* A string literal that may hold NUL bytes, with its length. */
struct text {
	const char *s;
	size_t n;
};
#define T(lit) { lit, sizeof(lit) - 1 }

/* ---- collecting the elements of a scan ------------------------------------ */

#define MAX_SPANS 512

struct spans {
	size_t n;
	size_t pre[MAX_SPANS], start[MAX_SPANS], end[MAX_SPANS];
};

static int collect(void *ctx, size_t pre, size_t start, size_t end)
{
	struct spans *sp = ctx;

	assert_true(sp->n < MAX_SPANS);
	sp->pre[sp->n] = pre;
	sp->start[sp->n] = start;
	sp->end[sp->n] = end;
	sp->n++;
	return 0;
}

/* One element as the scanner must report it: the bytes before it, and its own. */
struct elem_text {
	const char *pre;
	const char *json;
};

/*
 * Scans s and checks that it splits exactly into head, the elements of want
 * (each preceded by its pre bytes) and tail, and that the offsets say so.
 */
static void check_scan(const char *s, const char *head, const struct elem_text *want, size_t nwant, const char *tail)
{
	struct spans sp = { 0 };
	struct json_error err = { 0 };
	size_t n = strlen(s), h = 0, t = 0, at;

	assert_int_equal(json_scan_array(s, n, collect, &sp, &h, &t, &err), 0);
	assert_int_equal(h, strlen(head));
	assert_memory_equal(s, head, h);
	assert_int_equal(sp.n, nwant);
	at = h;
	for (size_t i = 0; i < nwant; i++) {
		size_t plen = strlen(want[i].pre), jlen = strlen(want[i].json);

		assert_int_equal(sp.pre[i], at);
		assert_int_equal(sp.start[i], at + plen);
		assert_int_equal(sp.end[i], at + plen + jlen);
		assert_memory_equal(s + sp.pre[i], want[i].pre, plen);
		assert_memory_equal(s + sp.start[i], want[i].json, jlen);
		at = sp.end[i];
	}
	assert_int_equal(t, at);
	assert_string_equal(s + t, tail);
}

/* ---- json_scan_array: accepted arrays --------------------------------------- */

static void test_scan_empty(void **state)
{
	check_scan("[]", "[", NULL, 0, "]");
	check_scan("[ ]", "[", NULL, 0, " ]");
	check_scan("[\n\n]", "[", NULL, 0, "\n\n]");
	check_scan(" \t\r\n[]\n", " \t\r\n[", NULL, 0, "]\n");
}

static void test_scan_compact(void **state)
{
	struct spans sp = { 0 };
	size_t h = 0, t = 0;
	const char *s = "[1,2,3]";

	/* Spelled out once by hand; check_scan() derives the rest. */
	assert_int_equal(json_scan_array(s, strlen(s), collect, &sp, &h, &t, NULL), 0);
	assert_int_equal(h, 1);
	assert_int_equal(sp.n, 3);
	assert_int_equal(sp.pre[0], 1);
	assert_int_equal(sp.start[0], 1);
	assert_int_equal(sp.end[0], 2);
	assert_int_equal(sp.pre[1], 2);
	assert_int_equal(sp.start[1], 3);
	assert_int_equal(sp.end[1], 4);
	assert_int_equal(sp.pre[2], 4);
	assert_int_equal(sp.start[2], 5);
	assert_int_equal(sp.end[2], 6);
	assert_int_equal(t, 6);

	static const struct elem_text kinds[] = {
		{ "", "\"a\"" },
		{ ",", "{\"b\":[1,2],\"c\":{}}" },
		{ ",", "null" },
		{ ",", "true" },
		{ ",", "false" },
		{ ",", "-1.5e+3" },
		{ ",", "0" },
		{ ",", "[]" },
		{ ",", "\"],[\\\"\"" },
	};
	check_scan("[\"a\",{\"b\":[1,2],\"c\":{}},null,true,false,-1.5e+3,0,[],\"],[\\\"\"]", "[", kinds,
		   ARRAY_SIZE(kinds), "]");

	static const struct elem_text one[] = { { "", "{\"ts\":1700000000000,\"type\":\"say\"}" } };
	check_scan("[{\"ts\":1700000000000,\"type\":\"say\"}]", "[", one, 1, "]");
}

static void test_scan_pretty(void **state)
{
	/* JSON.stringify([{ts: 1, say: "hi"}, {ts: 2}, [], "x"], null, 2) */
	static const char s[] =
		"[\n"
		"  {\n"
		"    \"ts\": 1,\n"
		"    \"say\": \"hi\"\n"
		"  },\n"
		"  {\n"
		"    \"ts\": 2\n"
		"  },\n"
		"  [],\n"
		"  \"x\"\n"
		"]";
	static const struct elem_text want[] = {
		{ "\n  ", "{\n    \"ts\": 1,\n    \"say\": \"hi\"\n  }" },
		{ ",\n  ", "{\n    \"ts\": 2\n  }" },
		{ ",\n  ", "[]" },
		{ ",\n  ", "\"x\"" },
	};

	check_scan(s, "[", want, ARRAY_SIZE(want), "\n]");

	/* White space in every place the grammar allows it, CRLF included. */
	static const struct elem_text spaced[] = {
		{ " \r\n\t", "1" },
		{ " , ", "{ \"a\" : [ 2 , 3 ] }" },
		{ "\r\n,\r\n", "\"é😀\"" },
	};
	check_scan("\n [ \r\n\t1 , { \"a\" : [ 2 , 3 ] }\r\n,\r\n\"é😀\" \n] \n", "\n [", spaced, ARRAY_SIZE(spaced),
		   " \n] \n");
}

static int stop_at_second(void *ctx, size_t pre, size_t start, size_t end)
{
	int *calls = ctx;

	return ++*calls == 2 ? -ECANCELED : 0;
}

static void test_scan_callback_stops(void **state)
{
	const char *s = "[1,2,3]";
	size_t h = 777, t = 888;
	int calls = 0;

	assert_int_equal(json_scan_array(s, strlen(s), stop_at_second, &calls, &h, &t, NULL), -ECANCELED);
	assert_int_equal(calls, 2);
	assert_int_equal(h, 777);
	assert_int_equal(t, 888);
}

/* ---- refusals ----------------------------------------------------------------- */

/* Not a JSON array: each must be refused with -EINVAL and out-parameters untouched. */
static const struct text not_arrays[] = {
	T(""), T(" \n"), T("["), T("[1,2"), T("[1,2,"), T("[{\"a\":1}"), T("[[]"), T("]"),
	/* torn mid-string, mid-escape, mid-literal, mid-number */
	T("[\"abc"), T("[{\"text\":\"hello wor"), T("[\"ab\\"), T("[\"\\u12"), T("[tr"), T("[-"),
	/* trailing garbage */
	T("[1] x"), T("[1]]"), T("[1],"), T("[][]"), T("[1]\0"),
	/* valid JSON, but not an array at the top */
	T("{\"a\":1}"), T("\"[1]\""), T("1"), T("null"), T("{}"),
	/* a byte order mark is not JSON white space */
	T("\xef\xbb\xbf[]"),
	/* invalid UTF-8: stray byte, overlong, surrogate, beyond U+10FFFF, truncated */
	T("[\"\xff\"]"), T("[\"\x80\"]"), T("[\"\xc0\xaf\"]"), T("[\"\xe0\x80\xaf\"]"), T("[\"\xf0\x80\x80\xaf\"]"),
	T("[\"\xed\xa0\x80\"]"), T("[\"\xed\xbf\xbf\"]"), T("[\"\xf4\x90\x80\x80\"]"), T("[\"\xf5\x80\x80\x80\"]"),
	T("[\"\xc3\"]"), T("[\"\xe2\x82\"]"), T("[\"\xc3"),
	/* raw NUL and other control characters inside a string */
	T("[\"a\0b\"]"), T("[\"a\tb\"]"), T("[\"a\nb\"]"), T("[\"\x1f\"]"),
	/* bad escapes */
	T("[\"\\x41\"]"), T("[\"\\'\"]"), T("[\"\\u12g4\"]"), T("[\"\\u123\"]"), T("[\"\\U1234\"]"), T("[\"\\\"]"),
	/* bad numbers */
	T("[01]"), T("[-01]"), T("[1.]"), T("[-]"), T("[.5]"), T("[+1]"), T("[1e]"), T("[1e+]"), T("[0x10]"),
	T("[NaN]"), T("[Infinity]"), T("[-Infinity]"), T("[1.5.2]"),
	/* bad literals and structure */
	T("[tru]"), T("[nul]"), T("[True]"), T("[1,]"), T("[,1]"), T("[1 2]"), T("[{\"a\" 1}]"), T("[{a:1}]"),
	T("[{\"a\":1,}]"), T("['a']"), T("[{\"a\":1 \"b\":2}]"), T("[{\"a\"}]"), T("[{1:2}]"), T("[}"),
};

static void test_scan_refusals(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(not_arrays); i++) {
		struct json_error err = { .offset = SIZE_MAX };
		size_t h = 777, t = 888;
		int r;

		r = json_scan_array(not_arrays[i].s, not_arrays[i].n, NULL, NULL, &h, &t, &err);
		if (r != -EINVAL)
			fail_msg("input %zu was not refused with -EINVAL (got %d)", i, r);
		assert_int_equal(h, 777);
		assert_int_equal(t, 888);
		assert_true(err.offset <= not_arrays[i].n);
		assert_true(err.msg[0] != '\0');
	}
}

/* The error says what failed and where, for the log line a refused write gets. */
static void check_error(const char *s, size_t n, size_t offset, const char *msg)
{
	struct json_error err = { 0 };

	assert_int_equal(json_scan_array(s, n, NULL, NULL, NULL, NULL, &err), -EINVAL);
	assert_int_equal(err.offset, offset);
	if (!strstr(err.msg, msg))
		fail_msg("error for '%.*s' is '%s', expected it to say '%s'", (int)n, s, err.msg, msg);
}

static void test_scan_error_position(void **state)
{
	check_error("[1,2", 4, 4, "unterminated array");
	check_error("[{\"text\":\"hello wor", 19, 19, "unterminated string");
	check_error("[1] x", 5, 4, "trailing data");
	check_error("{\"a\":1}", 7, 0, "not an array");
	check_error("", 0, 0, "expected '['");
	check_error("[\"ok\",\"\xff\"]", 10, 7, "invalid utf-8");
	check_error("[\"a\0b\"]", 7, 3, "control character");
	check_error("[\"\\q\"]", 6, 3, "bad escape");
	check_error("[01]", 4, 2, "expected ',' or ']'");
}

/* n nested arrays: "[[[...]]]". */
static char *nested(size_t n)
{
	char *s = malloc(2 * n + 1);

	assert_non_null(s);
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	return s;
}

static void test_depth_limit(void **state)
{
	_cleanup_free_ char *ok = nested(JSON_MAX_DEPTH);
	_cleanup_free_ char *deep = nested(JSON_MAX_DEPTH + 1);
	_cleanup_free_ char *very_deep = nested(100000);
	struct json_error err = { 0 };

	assert_int_equal(json_validate(ok, strlen(ok), NULL), 0);
	assert_int_equal(json_scan_array(ok, strlen(ok), NULL, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(json_validate(deep, strlen(deep), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nesting too deep"));
	assert_int_equal(err.offset, JSON_MAX_DEPTH);
	assert_int_equal(json_scan_array(deep, strlen(deep), NULL, NULL, NULL, NULL, NULL), -EINVAL);
	/* Far past the limit: refused, not a stack overflow. */
	assert_int_equal(json_validate(very_deep, strlen(very_deep), NULL), -EINVAL);

	/* Objects count towards the same limit. */
	struct sb sb = SB_INIT;
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		assert_int_equal(sb_adds(&sb, "{\"a\":"), 0);
	assert_int_equal(sb_adds(&sb, "1"), 0);
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		assert_int_equal(sb_adds(&sb, "}"), 0);
	assert_int_equal(json_validate(sb.buf, sb.len, NULL), -EINVAL);
	sb_release(&sb);
}

/* ---- json_validate --------------------------------------------------------------- */

static const struct text valid_values[] = {
	T("0"), T("-0"), T("123"), T("-1.5e-3"), T("1E+10"), T("0.0"), T("1e5"), T("-0.5E2"),
	T("\"\""), T("\"plain\""), T("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\""), T("\"\\u00e9\\ud83d\\ude00\\uABCD\""),
	T("\"é 日本語 😀 \xf4\x8f\xbf\xbf \xef\xbf\xbf\""), T("\"\x7f\""),
	T("true"), T("false"), T("null"), T(" null "), T("\t\r\n[1]\n"),
	T("{}"), T("[]"), T("{\"a\":{\"b\":[1,{\"c\":null}]},\"d\":\"e\"}"), T("[[],[[]],{}]"),
	T("{ \"a\" : 1 , \"a\" : 2 }"),
};

static const struct text invalid_values[] = {
	T(""), T(" "), T("nul"), T("{"), T("{\"a\"}"), T("1 2"), T("{} x"), T("\"a\" \"b\""), T("[1]]"),
	T("\"\xed\xa0\x80\""), T("\"a\0\""), T("-"), T("01"), T("1."), T("\xef\xbb\xbf{}"), T("{\"a\":1}\0"),
};

static void test_validate(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(valid_values); i++) {
		struct json_error err = { 0 };
		int r = json_validate(valid_values[i].s, valid_values[i].n, &err);

		if (r != 0)
			fail_msg("valid value %zu refused: %s at byte %zu", i, err.msg, err.offset);
	}
	for (size_t i = 0; i < ARRAY_SIZE(invalid_values); i++) {
		struct json_error err = { 0 };
		int r = json_validate(invalid_values[i].s, invalid_values[i].n, &err);

		if (r != -EINVAL)
			fail_msg("invalid value %zu not refused with -EINVAL (got %d)", i, r);
		assert_true(err.msg[0] != '\0');
	}
}

/*
 * A string's plain text is skipped 8 bytes at a time: each byte that ends
 * such a run (a control character, a quote, a backslash, a byte of a
 * multi-byte UTF-8 character, one that is not UTF-8) at each position of a
 * 24-byte string, so at each place in a word and across words, is seen: the
 * same verdict, at the same byte, as the byte-at-a-time scan.
 */
static void test_string_every_position(void **state)
{
	static const struct {
		const char *ins;
		bool valid;
		bool at; /* refused at the inserted byte */
	} cases[] = {
		{ "\x01", false, true }, { "\x1f", false, true }, { "\t", false, true }, { "\x7f", true, false },
		{ "\\n", true, false }, { "\\u00e9", true, false }, { "\\x", false, false },
		{ "\xc3\xa9", true, false }, { "\xe6\x97\xa5", true, false }, { "\xff", false, true },
		{ "\xc3" "a", false, true }, { "\"", false, false },
	};

	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++)
		for (size_t p = 0; p < 24; p++) {
			char text[64];
			struct json_error err = { 0 };
			int n = snprintf(text, sizeof(text), "\"%.*s%s%.*s\"", (int)p, "aaaaaaaaaaaaaaaaaaaaaaaa",
					 cases[c].ins, (int)(24 - p), "aaaaaaaaaaaaaaaaaaaaaaaa");
			int r = json_validate(text, (size_t)n, &err);

			if (cases[c].valid && r != 0)
				fail_msg("case %zu at %zu refused: %s at byte %zu", c, p, err.msg, err.offset);
			if (!cases[c].valid && r != -EINVAL)
				fail_msg("case %zu at %zu not refused (%d)", c, p, r);
			if (!cases[c].valid && cases[c].at && err.offset != p + 1)
				fail_msg("case %zu at %zu refused at byte %zu, not %zu", c, p, err.offset, p + 1);
		}
}

/* ---- json_object_member and json_to_int64 ---------------------------------------- */

static void check_member(const char *s, const char *key, const char *want)
{
	size_t a = 0, b = 0;

	assert_int_equal(json_object_member(s, strlen(s), key, &a, &b), 0);
	assert_int_equal(b - a, strlen(want));
	assert_memory_equal(s + a, want, b - a);
}

static void check_no_member(const char *s, const char *key)
{
	size_t a = 777, b = 888;

	assert_int_equal(json_object_member(s, strlen(s), key, &a, &b), -ENOENT);
	assert_int_equal(a, 777);
	assert_int_equal(b, 888);
}

static void test_object_member(void **state)
{
	static const char item[] =
		"{\"id\":\"1700000000000\", \"ts\" : 17 ,\"nested\":{\"id\":\"x\",\"deep\":{\"k\":1}},"
		"\"arr\":[1,{\"ts\":2}],\"text\":\"a \\\"quoted\\\" } ]\",\"last\":null}";

	check_member(item, "id", "\"1700000000000\"");
	check_member(item, "ts", "17");
	check_member(item, "nested", "{\"id\":\"x\",\"deep\":{\"k\":1}}");
	check_member(item, "arr", "[1,{\"ts\":2}]");
	check_member(item, "text", "\"a \\\"quoted\\\" } ]\"");
	check_member(item, "last", "null");
	check_no_member(item, "missing");
	check_no_member(item, "i");       /* a prefix of a key */
	check_no_member(item, "idx");     /* longer than a key */
	check_no_member(item, "k");       /* only in a nested object */
	check_no_member(item, "");
	check_no_member("{}", "id");
	check_no_member("[{\"id\":1}]", "id");
	check_no_member("\"id\"", "id");
	check_no_member("", "id");

	/* Pretty-printed, as Cline writes a message. */
	check_member("{\n  \"ts\": 1700000000123,\n  \"type\": \"say\"\n}", "type", "\"say\"");
	check_member("  {\n  \"ts\": 1700000000123\n}  ", "ts", "1700000000123");
}

static void check_int(const char *s, long long want)
{
	long long v = -777;

	assert_int_equal(json_to_int64(s, strlen(s), &v), 0);
	assert_true(v == want);
}

static void check_not_int(const char *s)
{
	long long v = -777;

	if (json_to_int64(s, strlen(s), &v) != -EINVAL)
		fail_msg("'%s' was taken as a whole number", s);
	assert_true(v == -777);
}

static void test_to_int64(void **state)
{
	check_int("0", 0);
	check_int("-0", 0);
	check_int("42", 42);
	check_int("-42", -42);
	check_int("1700000000000", 1700000000000LL);
	check_int("\"1700000000000\"", 1700000000000LL);
	check_int("\"-5\"", -5);
	check_int("999999999999999999", 999999999999999999LL);

	check_not_int("");
	check_not_int("\"\"");
	check_not_int("\"");
	check_not_int("-");
	check_not_int("\"-\"");
	check_not_int("1.5");
	check_not_int("1e3");
	check_not_int("abc");
	check_not_int("\"12a\"");
	check_not_int("null");
	check_not_int("true");
	check_not_int(" 12");
	check_not_int("99999999999999999999");   /* would overflow */
	check_not_int("-99999999999999999999");
}

/* ---- the same scans through a reader ----------------------------------------------- */

/*
 * Text in memory served through struct json_reader, a window at a time, as a
 * commit from a file reads it. Each check runs the reader variant with every
 * window from 64 to 64 + 17 bytes, so that window edges fall on every byte of
 * escapes, multi-byte UTF-8, literals and numbers, and asks for exactly what
 * the memory variant says: return, element spans, head, tail and error.
 */
#define WINDOW_MIN 64
#define WINDOW_MAX (64 + 17)

struct mem_text {
	const char *s;
	size_t n;
	size_t fail_at; /* a read that reaches this offset fails with -EIO (SIZE_MAX: none) */
	size_t calls;
};

static int mem_read(void *ctx, size_t off, char *buf, size_t n)
{
	struct mem_text *m = ctx;

	assert_true(off <= m->n && n <= m->n - off);
	m->calls++;
	if (m->fail_at != SIZE_MAX && off + n > m->fail_at)
		return -EIO;
	memcpy(buf, m->s + off, n);
	return 0;
}

struct scan_result {
	int r;
	size_t h, t;
	struct spans sp;
	struct json_error err;
};

static void scan_result_equal(const struct scan_result *a, const struct scan_result *b, const char *what,
			      const char *s, size_t n, const char *member, size_t window)
{
	bool same = a->r == b->r && a->h == b->h && a->t == b->t && a->sp.n == b->sp.n;

	for (size_t i = 0; same && i < a->sp.n; i++)
		same = a->sp.pre[i] == b->sp.pre[i] && a->sp.start[i] == b->sp.start[i] && a->sp.end[i] == b->sp.end[i];
	if (same && a->r == -EINVAL)
		same = a->err.offset == b->err.offset &&
		       strcmp(a->err.msg, b->err.msg) == 0;
	if (!same)
		fail_msg("%s of '%.*s' (member %s) with window %zu: memory %d head %zu tail %zu %zu elements "
			 "error '%s' at %zu; reader %d head %zu tail %zu %zu elements error '%s' at %zu",
			 what, (int)(n > 200 ? 200 : n), s, member ? member : "-", window, a->r, a->h, a->t, a->sp.n,
			 a->err.msg, a->err.offset, b->r, b->h, b->t, b->sp.n, b->err.msg, b->err.offset);
}

/* The scan of s through a reader equals the scan in memory, for every window; so does its validation. */
static void check_read_equal(const char *s, size_t n, const char *member)
{
	_cleanup_free_ struct scan_result *mem = calloc(1, sizeof(*mem));
	_cleanup_free_ struct scan_result *rd = calloc(1, sizeof(*rd));
	struct json_error verr_mem = { 0 };
	int vr_mem;

	assert_non_null(mem);
	assert_non_null(rd);
	mem->h = mem->t = 777;
	mem->r = json_scan_array_at(s, n, member, collect, &mem->sp, &mem->h, &mem->t, &mem->err);
	vr_mem = json_validate(s, n, &verr_mem);
	for (size_t w = WINDOW_MIN; w <= WINDOW_MAX; w++) {
		struct mem_text m = { .s = s, .n = n, .fail_at = SIZE_MAX };
		struct json_reader reader = { .read = mem_read, .ctx = &m, .len = n, .window = w };
		struct json_error verr = { 0 };
		int vr;

		memset(rd, 0, sizeof(*rd));
		rd->h = rd->t = 777;
		rd->r = json_scan_array_read(&reader, member, NULL, collect, &rd->sp, &rd->h, &rd->t, &rd->err);
		scan_result_equal(mem, rd, "scan", s, n, member, w);
		if (member)
			continue;
		vr = json_validate_read(&reader, &verr);
		if (vr != vr_mem || (vr == -EINVAL && (verr.offset != verr_mem.offset || strcmp(verr.msg, verr_mem.msg))))
			fail_msg("validate of '%.*s' with window %zu: memory %d '%s' at %zu, reader %d '%s' at %zu",
				 (int)(n > 200 ? 200 : n), s, w, vr_mem, verr_mem.msg, verr_mem.offset, vr, verr.msg,
				 verr.offset);
	}
}

static void check_read_equal_str(const char *s, const char *member)
{
	check_read_equal(s, strlen(s), member);
}

/* The accepted arrays of the tests above. */
static const char *const accepted[] = {
	"[]", "[ ]", "[\n\n]", " \t\r\n[]\n", "[1,2,3]",
	"[\"a\",{\"b\":[1,2],\"c\":{}},null,true,false,-1.5e+3,0,[],\"],[\\\"\"]",
	"[{\"ts\":1700000000000,\"type\":\"say\"}]",
	"[\n  {\n    \"ts\": 1,\n    \"say\": \"hi\"\n  },\n  {\n    \"ts\": 2\n  },\n  [],\n  \"x\"\n]",
	"\n [ \r\n\t1 , { \"a\" : [ 2 , 3 ] }\r\n,\r\n\"é😀\" \n] \n",
};

/*
 * An array over 300 bytes with every kind of token, each element repeated
 * with a growing indent so that no token sits at the same offset twice.
 */
static char *long_array(void)
{
	static const char *const elems[] = {
		"{\"ts\": 1700000000000, \"text\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\"}",
		"\"é 日本語 😀 \xf4\x8f\xbf\xbf \xef\xbf\xbf \\u00DF\\u6771\\uD801\\uDC37\"",
		"true", "false", "null", "-0.5e-10", "1E+300", "123456789.987654321e2", "-0", "0.125E-7",
		"[[1,[2,[3,[]]]],{}]",
		"{\"a\":{\"b\":[true,null,false,\"\\u0041\"]},\"c\" : [ 1e5 , -2 ] , \"d\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
		"[ ]", "{ }", "\"\"",
	};
	struct sb sb = SB_INIT;

	assert_int_equal(sb_adds(&sb, "[\n"), 0);
	for (int rep = 0; rep < 3; rep++)
		for (size_t i = 0; i < ARRAY_SIZE(elems); i++) {
			if (rep || i)
				assert_int_equal(sb_adds(&sb, ",\r\n"), 0);
			for (size_t k = 0; k < (rep * ARRAY_SIZE(elems) + i) % 7; k++)
				assert_int_equal(sb_adds(&sb, k % 2 ? "\t" : " "), 0);
			assert_int_equal(sb_adds(&sb, elems[i]), 0);
		}
	assert_int_equal(sb_adds(&sb, "\n]\n"), 0);
	assert_true(sb.len > 300);
	return sb.buf;
}

/* The long array as the member "messages" of an object, after another long member. */
static char *long_object(const char *arr)
{
	struct sb sb = SB_INIT;

	assert_int_equal(sb_adds(&sb, "{\"other\": "), 0);
	assert_int_equal(sb_adds(&sb, arr), 0);
	assert_int_equal(sb_adds(&sb, ", \"messagesX\": [1], \"messages\" :"), 0);
	assert_int_equal(sb_adds(&sb, arr), 0);
	assert_int_equal(sb_adds(&sb, ",\"b\":[2]}"), 0);
	return sb.buf;
}

static void test_read_equals_memory(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(accepted); i++)
		check_read_equal_str(accepted[i], NULL);
	for (size_t i = 0; i < ARRAY_SIZE(not_arrays); i++)
		check_read_equal(not_arrays[i].s, not_arrays[i].n, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(valid_values); i++)
		check_read_equal(valid_values[i].s, valid_values[i].n, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(invalid_values); i++)
		check_read_equal(invalid_values[i].s, invalid_values[i].n, NULL);
	check_read_equal_str("[\"ok\",\"\xff\"]", NULL);
	check_read_equal("[\"a\0b\"]", 7, NULL);

	/* Nesting at, over and far past the limit; of objects too. */
	size_t depths[] = { JSON_MAX_DEPTH, JSON_MAX_DEPTH + 1, 100000 };
	for (size_t i = 0; i < ARRAY_SIZE(depths); i++) {
		_cleanup_free_ char *s = nested(depths[i]);

		check_read_equal_str(s, NULL);
	}
	struct sb sb = SB_INIT;
	assert_int_equal(sb_adds(&sb, "["), 0);
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		assert_int_equal(sb_adds(&sb, "{\"a\":"), 0);
	assert_int_equal(sb_adds(&sb, "1"), 0);
	for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
		assert_int_equal(sb_adds(&sb, "}"), 0);
	assert_int_equal(sb_adds(&sb, "]"), 0);
	check_read_equal(sb.buf, sb.len, NULL);
	check_read_equal(sb.buf + 1, sb.len - 2, NULL);
	sb_release(&sb);
}

/* The long inputs, whole, torn at every byte, and with every byte in turn made invalid. */
static void test_read_equals_memory_long(void **state)
{
	_cleanup_free_ char *arr = long_array();
	_cleanup_free_ char *obj = long_object(arr);
	const char *texts[] = { arr, obj };
	const char *members[] = { NULL, "messages" };

	for (size_t k = 0; k < ARRAY_SIZE(texts); k++) {
		size_t n = strlen(texts[k]);
		_cleanup_free_ char *bad = strdup(texts[k]);

		assert_non_null(bad);
		check_read_equal(texts[k], n, members[k]);
		for (size_t cut = 0; cut < n; cut++)
			check_read_equal(texts[k], cut, members[k]);
		for (size_t at = 0; at < n; at++) {
			char was = bad[at];

			bad[at] = (at % 3 == 0) ? '\xff' : (at % 3 == 1) ? '"' : '}';
			check_read_equal(bad, n, members[k]);
			bad[at] = was;
		}
	}
	/* The long array scanned whole: all its elements, in order. */
	struct spans sp = { 0 };
	assert_int_equal(json_scan_array(arr, strlen(arr), collect, &sp, NULL, NULL, NULL), 0);
	assert_int_equal(sp.n, 45);
}

static void test_read_member(void **state)
{
	static const char *const objs[] = {
		"{\"a\":1,\"messages\":[{\"x\":1},{\"y\":\"\\u00e9\"}],\"b\":[2]}",
		"{\"a\":1,\"b\":[2]}",                           /* no such member */
		"{\"messages\":{\"x\":[1]}}",                    /* not an array */
		"{\"messages\":\"[1,2]\"}",
		"{\"messages\":null}",
		"{\"messages\":[1],\"messages\":[2,3]}",         /* twice */
		"{\"messages\":{},\"messages\":[2,3]}",
		"{\"messages\":[1,2],\"messages\":\"x\"}",
		"{\"mess\\u0061ges\":[1]}",                      /* an escaped name */
		" { \"x\" : { \"messages\" : [ 9 ] } , \"messages\" : [ 1 , 2 ] } ",
		"{\"messages\":[1,]}", "{\"messages\":[1],}", "{\"messages\":[1]", "{\"messages\":[1]} x",
		"[{\"messages\":[1]}]", "{}", "", "{\"messages\":[1]}\xff",
	};

	for (size_t i = 0; i < ARRAY_SIZE(objs); i++)
		check_read_equal_str(objs[i], "messages");
	for (size_t i = 0; i < ARRAY_SIZE(accepted); i++)
		check_read_equal_str(accepted[i], "messages");
}

/* json_object_member_read() finds what json_object_member() finds, anywhere in the text. */
static void test_read_object_member(void **state)
{
	static const char item[] =
		"{\"id\":\"1700000000000\", \"ts\" : 17 ,\"nested\":{\"id\":\"x\",\"deep\":{\"k\":1}},"
		"\"arr\":[1,{\"ts\":2}],\"text\":\"a \\\"quoted\\\" } ]\",\"pad\":\"0123456789012345678901234567890123456789"
		"0123456789\",\"last\":null}";
	static const char *const keys[] = { "id", "ts", "nested", "arr", "text", "last", "missing", "i", "k", "" };
	char buf[512];

	for (size_t lead = 0; lead < 20; lead++) {
		size_t n = strlen(item);

		memset(buf, 'x', lead);
		memcpy(buf + lead, item, n);
		memcpy(buf + lead + n, "]]]", 4);
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			for (size_t w = WINDOW_MIN; w <= WINDOW_MAX; w++) {
				struct mem_text m = { .s = buf, .n = lead + n + 3, .fail_at = SIZE_MAX };
				struct json_reader rd = { .read = mem_read, .ctx = &m, .len = m.n, .window = w };
				size_t a = 777, b = 888, ra = 777, rb = 888;
				int r = json_object_member(item, n, keys[i], &a, &b);

				assert_int_equal(json_object_member_read(&rd, lead, lead + n, keys[i], &ra, &rb), r);
				if (r == 0) {
					assert_int_equal(ra, lead + a);
					assert_int_equal(rb, lead + b);
				} else {
					assert_int_equal(ra, 777);
					assert_int_equal(rb, 888);
				}
			}
	}
}

/* A reader that fails makes the scan fail with its error, not as if the text were bad. */
static void test_read_error(void **state)
{
	_cleanup_free_ char *arr = long_array();
	_cleanup_free_ char *obj = long_object(arr);
	const char *texts[] = { arr, obj };
	const char *members[] = { NULL, "messages" };

	for (size_t k = 0; k < ARRAY_SIZE(texts); k++) {
		size_t n = strlen(texts[k]);

		for (size_t fail_at = 0; fail_at < n; fail_at += 37) {
			struct mem_text m = { .s = texts[k], .n = n, .fail_at = fail_at };
			struct json_reader rd = { .read = mem_read, .ctx = &m, .len = n, .window = 64 };
			struct json_error err = { 0 };
			struct spans sp = { 0 };
			size_t h = 777, t = 888, a, b;

			assert_int_equal(json_scan_array_read(&rd, members[k], NULL, collect, &sp, &h, &t, &err), -EIO);
			assert_int_equal(h, 777);
			assert_int_equal(t, 888);
			assert_int_equal(json_validate_read(&rd, &err), -EIO);
			/* The array is no object: its first window tells, and only a failure in it is seen. */
			assert_int_equal(json_object_member_read(&rd, 0, n, "b", &a, &b),
					 k == 0 && fail_at >= rd.window ? -ENOENT : -EIO);
		}
	}
}

/* A callback that stops the scan stops the reader's scan the same way. */
static void test_read_callback_stops(void **state)
{
	const char *s = "[1,2,3]";
	struct mem_text m = { .s = s, .n = strlen(s), .fail_at = SIZE_MAX };
	struct json_reader rd = { .read = mem_read, .ctx = &m, .len = m.n, .window = 64 };
	size_t h = 777, t = 888;
	int calls = 0;

	assert_int_equal(json_scan_array_read(&rd, NULL, NULL, stop_at_second, &calls, &h, &t, NULL), -ECANCELED);
	assert_int_equal(calls, 2);
	assert_int_equal(h, 777);
	assert_int_equal(t, 888);
}

/*
 * The scan of text in memory that goes back to report a value that is not
 * an array still shows the byte there (a window reset meant for a reader
 * once hid it: "at end of input").
 */
static void test_not_array_message(void **state)
{
	struct json_error err = { 0 };

	assert_int_equal(json_scan_array("{\"a\":1}", 7, NULL, NULL, NULL, NULL, &err), -EINVAL);
	assert_int_equal(err.offset, 0);
	assert_string_equal(err.msg, "top-level value is not an array: unexpected '{'");
}

/*
 * A scan that skips what is known (json_scan_array_after()) reports what a
 * whole scan reports past that point: the same head, tail, error and the
 * spans after it, in memory and through a reader with every window, from the
 * end of each element that closes itself; and of the text cut short after
 * that point, what a whole scan of it reports (mostly an error, at its place).
 */
static void check_after(const char *s, size_t n, const char *member)
{
	_cleanup_free_ struct scan_result *all = calloc(1, sizeof(*all));
	_cleanup_free_ struct scan_result *mem = calloc(1, sizeof(*mem));

	assert_non_null(all);
	assert_non_null(mem);
	all->r = json_scan_array_at(s, n, member, collect, &all->sp, &all->h, &all->t, &all->err);
	assert_int_equal(all->r, 0);
	for (size_t i = 0; i < all->sp.n; i++) {
		struct json_known known = { all->h, all->sp.end[i] };
		char last = s[known.end - 1];
		struct scan_result want = { 0 };

		if (last != '}' && last != ']' && last != '"')
			continue;
		want = (struct scan_result){ .r = 0, .h = all->h, .t = all->t };
		for (size_t k = i + 1; k < all->sp.n; k++) {
			want.sp.pre[want.sp.n] = all->sp.pre[k];
			want.sp.start[want.sp.n] = all->sp.start[k];
			want.sp.end[want.sp.n++] = all->sp.end[k];
		}
		memset(mem, 0, sizeof(*mem));
		mem->r = json_scan_array_after(s, n, member, &known, collect, &mem->sp, &mem->h, &mem->t, &mem->err);
		scan_result_equal(&want, mem, "scan after an element", s, n, member, 0);
		for (size_t w = WINDOW_MIN; w <= WINDOW_MAX; w += 5) {
			struct mem_text m = { .s = s, .n = n, .fail_at = SIZE_MAX };
			struct json_reader reader = { .read = mem_read, .ctx = &m, .len = n, .window = w };

			memset(mem, 0, sizeof(*mem));
			mem->r = json_scan_array_read(&reader, member, &known, collect, &mem->sp, &mem->h, &mem->t,
						      &mem->err);
			scan_result_equal(&want, mem, "scan after an element, through a reader", s, n, member, w);
		}
		/* The tail cut short. */
		for (size_t cut = known.end; cut < n; cut += (n - known.end) / 3 + 1) {
			struct scan_result whole = { 0 };

			whole.r = json_scan_array_at(s, cut, member, NULL, NULL, &whole.h, &whole.t, &whole.err);
			memset(mem, 0, sizeof(*mem));
			mem->r = json_scan_array_after(s, cut, member, &known, NULL, NULL, &mem->h, &mem->t, &mem->err);
			scan_result_equal(&whole, mem, "scan after an element, of text cut short", s, cut, member, 0);
		}
	}
}

static void test_scan_after(void **state)
{
	_cleanup_free_ char *arr = long_array();
	_cleanup_free_ char *obj = long_object(arr);
	const char *messages = "{\"a\":1,\"messages\":[{\"x\":1},\"y\",[2],3],\"messages\":[3],\"b\":[4]}";

	check_after(arr, strlen(arr), NULL);
	check_after(obj, strlen(obj), "messages");
	check_after(messages, strlen(messages), "messages");
	for (size_t i = 0; i < ARRAY_SIZE(accepted); i++)
		check_after(accepted[i], strlen(accepted[i]), NULL);
	(void)state;
}

/*
 * The array of a member: the first member of that name that is an array,
 * element by element; a later one of the same name is only validated.
 */
static void test_member_array(void **state)
{
	/*               0         1         2         3         4         5
	 *               0123456789012345678901234567890123456789012345678901234 */
	const char *s = "{\"a\":1,\"messages\":[{\"x\":1}, 2],\"messages\":[3],\"b\":[4]}";
	const char *not_array = "{\"messages\":{\"x\":[1]}}";
	struct json_error err = { 0 };
	struct spans sp = { 0 };
	size_t h = 0, t = 0;

	assert_int_equal(json_scan_array_at(s, strlen(s), "messages", collect, &sp, &h, &t, &err), 0);
	assert_int_equal(h, 19);
	assert_int_equal(sp.n, 2);
	assert_int_equal(sp.pre[0], 19);
	assert_int_equal(sp.start[0], 19);
	assert_int_equal(sp.end[0], 26);
	assert_int_equal(sp.pre[1], 26);
	assert_int_equal(sp.start[1], 28);
	assert_int_equal(sp.end[1], 29);
	assert_int_equal(t, 29);
	assert_int_equal(json_scan_array_at(not_array, strlen(not_array), "messages", NULL, NULL, &h, &t, &err),
			 -EINVAL);
	assert_string_equal(err.msg, "member \"messages\" is not an array");
	assert_int_equal(err.offset, 12);
	assert_int_equal(json_scan_array_at(s, strlen(s), "missing", NULL, NULL, &h, &t, &err), -EINVAL);
	assert_string_equal(err.msg, "no member \"missing\" in a top-level object");
	assert_int_equal(err.offset, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_empty),
		cmocka_unit_test(test_scan_compact),
		cmocka_unit_test(test_scan_pretty),
		cmocka_unit_test(test_scan_callback_stops),
		cmocka_unit_test(test_scan_refusals),
		cmocka_unit_test(test_scan_error_position),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_string_every_position),
		cmocka_unit_test(test_object_member),
		cmocka_unit_test(test_to_int64),
		cmocka_unit_test(test_read_equals_memory),
		cmocka_unit_test(test_read_equals_memory_long),
		cmocka_unit_test(test_read_member),
		cmocka_unit_test(test_read_object_member),
		cmocka_unit_test(test_read_error),
		cmocka_unit_test(test_read_callback_stops),
		cmocka_unit_test(test_not_array_message),
		cmocka_unit_test(test_member_array),
		cmocka_unit_test(test_scan_after),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
