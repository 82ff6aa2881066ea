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

#define MAX_SPANS 16

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
		cmocka_unit_test(test_object_member),
		cmocka_unit_test(test_to_int64),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
