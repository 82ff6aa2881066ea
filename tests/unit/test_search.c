/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_search.c: the search index (store/search.h).
 *
 * The pure parts: which strings of a message are its text, who wrote
 * it, where an identifier comes apart, and the query syntax (what it
 * accepts, the FTS5 expression it makes, and the one line that says what is
 * wrong with what it refuses).
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

#include "store/search.h"
#include "store/util.h"

#define M(ts, text) "{\"ts\":" #ts ",\"type\":\"say\",\"say\":\"text\",\"text\":\"" text "\"}"
#define U(text) "{\"role\":\"user\",\"content\":\"" text "\"}"

/* ---- the text of a message ---------------------------------------------------------------- */

static void test_text(void **state)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "{\"role\":\"user\",\"content\":\"hello \\\"world\\\"\\nbye\"}", "hello \"world\" bye\n" },
		{ "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
		  "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"editor\",\"input\":{\"path\":\"src/a.ts\","
		  "\"edits\":[{\"old\":\"x\",\"new\":\"y\"}],\"n\":3}},"
		  "{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"SIG\"},"
		  "{\"type\":\"image\",\"source\":{\"data\":\"iVBORw0KGgo\",\"text\":\"no\"}}]}",
		  "one\neditor\nsrc/a.ts\nx\ny\nhmm\n" },
		{ "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"done\"},"
		  "{\"type\":\"tool_result\",\"content\":[{\"type\":\"text\",\"text\":\"deep\"},{\"type\":\"image\","
		  "\"text\":\"no\"}]},{\"type\":\"weird\",\"text\":\"kept\",\"other\":\"not\"}]}",
		  "done\ndeep\nkept\n" },
		{ M(1, "hi there"), "hi there\n" },
		{ "{\"ts\":2,\"type\":\"say\",\"say\":\"api_req_started\",\"text\":\"{\\\"request\\\":\\\"copy\\\"}\"}", "" },
		{ "{\"ts\":2,\"type\":\"say\",\"say\":\"browser_action_result\",\"text\":\"base64\"}", "" },
		{ "{\"ts\":3,\"type\":\"ask\",\"ask\":\"followup\",\"text\":\"{\\\"question\\\":\\\"why?\\\"}\"}",
		  "{\"question\":\"why?\"}\n" },
		{ "{\"ts\":4,\"type\":\"say\",\"say\":\"reasoning\",\"reasoning\":\"because\",\"text\":\"\"}", "because\n" },
		/* escapes, controls, invisible formatting, bytes that are not UTF-8 */
		{ U("caf\\u00e9 \\ud83d\\ude00 \\ud800x a\\u0007b c\\u200bd \xff!"),
		  "caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbdx a b c d ?!\n" },
		/* cut anywhere: what can be read */
		{ "{\"role\":\"user\",\"content\":\"abc de", "abc de\n" },
		{ "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"par", "par\n" },
		{ "{\"role\":\"user\",\"content\":\"x\\", "x\xef\xbf\xbd\n" },
		{ "[1,2]", "" },
		{ "", "" },
		{ "{\"text\":1,\"content\":{\"text\":\"not blocks\"}}", "" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_sb_ struct sb out = SB_INIT;

		assert_int_equal(search_text(cases[i].json, strlen(cases[i].json), &out), 0);
		if (strcmp(sb_str(&out), cases[i].want) != 0)
			fail_msg("case %zu: text of %s is '%s', expected '%s'", i, cases[i].json, sb_str(&out),
				 cases[i].want);
	}
}

static void test_role(void **state)
{
	assert_int_equal(search_role(U("x"), strlen(U("x"))), SEARCH_ROLE_USER);
	assert_int_equal(search_role("{\"content\":\"x\",\"role\":\"assistant\"}", 34), SEARCH_ROLE_ASSISTANT);
	assert_int_equal(search_role(M(1, "x"), strlen(M(1, "x"))), SEARCH_ROLE_ASSISTANT);
	assert_int_equal(search_role("{\"type\":\"say\",\"say\":\"task\"}", 28), SEARCH_ROLE_USER);
	assert_int_equal(search_role("{\"type\":\"say\",\"say\":\"user_feedback\"}", 37), SEARCH_ROLE_USER);
	assert_int_equal(search_role("{\"type\":\"ask\",\"ask\":\"followup\"}", 32), SEARCH_ROLE_ASSISTANT);
	assert_int_equal(search_role("{\"ts\":1}", 8), SEARCH_ROLE_NONE);
	assert_int_equal(search_role("{\"role\":\"us", 11), SEARCH_ROLE_NONE);
	assert_string_equal(search_role_name(SEARCH_ROLE_USER), "user");
	assert_null(search_role_name(SEARCH_ROLE_NONE));
}

/* The parts of an identifier, as "a|b|c". */
static void assert_parts(const char *s, const char *want)
{
	size_t starts[SEARCH_CAMEL_MAX], n = search_camel_parts(s, strlen(s), starts, SEARCH_CAMEL_MAX);
	char got[256] = "";

	for (size_t i = 0; i < n; i++) {
		size_t end = i + 1 < n ? starts[i + 1] : strlen(s);

		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%.*s", i ? "|" : "", (int)(end - starts[i]),
			 s + starts[i]);
	}
	if (n == 1)
		snprintf(got, sizeof(got), "%s", s);
	if (strcmp(got, want) != 0)
		fail_msg("parts of '%s': '%s', expected '%s'", s, got, want);
}

static void test_camel(void **state)
{
	assert_parts("getUserName", "get|User|Name");
	assert_parts("HTTPServer", "HTTP|Server");
	assert_parts("parseJSON", "parse|JSON");
	assert_parts("v2Api", "v2|Api");
	assert_parts("utf8decode", "utf8decode");
	assert_parts("ERRCODE", "ERRCODE");
	assert_parts("Simple", "Simple");
	assert_parts("iOS", "i|OS");
	assert_parts("caf\xc3\xa9" "Bar", "caf\xc3\xa9" "Bar"); /* not ASCII: left alone */
	assert_parts("aBcDeFgHiJkLmNoPqRsTuVwXyZ", "a|Bc|De|Fg|Hi|Jk|Lm|No|Pq|Rs|Tu|Vw|Xy|Z");
}

static void test_query(void **state)
{
	static const struct {
		const char *query, *want; /* want: the expression, or (err) a piece of the message */
		bool err;
	} cases[] = {
		{ "race", "(\"race\")", false },
		{ "race condition", "(\"race\") AND (\"condition\")", false },
		{ "  \"race condition\"  writers* ", "(\"race condition\") AND (\"writers\"*)", false },
		{ "docker OR podman compose", "(\"docker\" OR \"podman\") AND (\"compose\")", false },
		{ "a OR b OR c", "(\"a\" OR \"b\" OR \"c\")", false },
		{ "cache -redis -\"lru list\"", "((\"cache\")) NOT (\"redis\") NOT (\"lru list\")", false },
		{ "snake_case src/a.ts ERR_CODE", "(\"snake_case\") AND (\"src/a.ts\") AND (\"ERR_CODE\")", false },
		{ "AND NOT NEAR or", "(\"AND\") AND (\"NOT\") AND (\"NEAR\") AND (\"or\")", false },
		{ "col:umn ^x (y) {z}", "(\"col:umn\") AND (\"^x\") AND (\"(y)\") AND (\"{z}\")", false },
		{ "\"a b\"*", "(\"a b\"*)", false },
		{ "caf\xc3\xa9", "(\"caf\xc3\xa9\")", false },
		{ "", "the query is empty", true },
		{ "   ", "the query is empty", true },
		{ "\"open", "a phrase is not closed", true },
		{ "a\"b", "a quote inside a word", true },
		{ "\"a\"b", "a phrase must end at a space", true },
		{ "\"--\"", "has no letter or digit", true },
		{ "\"\"", "has no letter or digit", true },
		{ "--", "has no letter or digit", true },
		{ "*", "has no letter or digit", true },
		{ "- a", "'-' excludes the word right after it", true },
		{ "-a", "a query needs a word to look for", true },
		{ "OR a", "'OR' goes between", true },
		{ "a OR", "'OR' goes between", true },
		{ "a OR OR b", "'OR' goes between", true },
		{ "-a OR b", "'OR' goes between", true },
		{ "a OR -b", "'OR' goes between", true },
		{ "bad \xff utf", "not valid UTF-8", true },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_sb_ struct sb out = SB_INIT;
		char err[160] = "x";
		int r = search_query_parse(cases[i].query, &out, err, sizeof(err));

		if (cases[i].err) {
			if (r != -EINVAL || !strstr(err, cases[i].want) || out.len || strchr(err, '\n'))
				fail_msg("'%s': %d '%s', expected an error with '%s'", cases[i].query, r, err, cases[i].want);
		} else if (r != 0 || strcmp(sb_str(&out), cases[i].want) != 0 || err[0]) {
			fail_msg("'%s': %d '%s' (%s), expected '%s'", cases[i].query, r, sb_str(&out), err, cases[i].want);
		}
	}
	/* too many words, too long */
	{
		_cleanup_sb_ struct sb q = SB_INIT, out = SB_INIT;
		char err[160];

		for (int i = 0; i <= SEARCH_QUERY_TERMS; i++)
			assert_int_equal(sb_addf(&q, "w%d ", i), 0);
		assert_int_equal(search_query_parse(q.buf, &out, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "more than 64 words"));
		q.len = 0;
		for (int i = 0; i <= SEARCH_QUERY_MAX; i++)
			assert_int_equal(sb_add(&q, "x", 1), 0);
		assert_int_equal(search_query_parse(q.buf, &out, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "longer than"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_role),
		cmocka_unit_test(test_camel),
		cmocka_unit_test(test_query),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
