/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_merge_metadata.c: the merge of task_metadata.json (merge_metadata() of
 * store/merge.c) and the pretty printing it lays its result out with
 * (json_pretty(), json_print_pretty() of store/json.c), without SQLite.
 *
 * Texts as written go in; what comes out is compared byte for byte with what
 * JSON.stringify(x, null, 2) gives for the expected object. What cJSON cannot
 * merge faithfully is refused (-EINVAL), so that the store keeps the writer's
 * version as written. The merges of lists (history items, messages) are in
 * test_merge.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "store/json.h"
#include "store/merge.h"
#include "store/util.h"

/* ---- task_metadata.json ---------------------------------------------------------- */

static void test_metadata(void **state)
{
	static const char base[] =
		"{\"files_in_context\":[{\"path\":\"a.c\"}],\"model_usage\":[{\"ts\":1,\"model_id\":\"m1\"}],"
		"\"environment_history\":[],\"title\":\"x\",\"n\":1,\"gone\":0}";
	/* Another writer: appended to all three logs, changed n. */
	static const char head[] =
		"{\"files_in_context\":[{\"path\":\"a.c\"},{\"path\":\"b.c\"},{\"path\":\"d.c\"}],"
		"\"model_usage\":[{\"ts\":1,\"model_id\":\"m1\"},{\"ts\":2,\"model_id\":\"m2\"}],"
		"\"environment_history\":[{\"ts\":5}],\"title\":\"x\",\"n\":2,\"gone\":0}";
	/*
	 * This writer: dropped a.c (an append log keeps it), appended c.c and d.c
	 * (d.c also appended by the other: once), m3 and ts 6; changed title,
	 * left n, removed gone, added added.
	 */
	static const char new[] =
		"{\"files_in_context\":[{\"path\":\"c.c\"},{\"path\":\"d.c\"}],"
		"\"model_usage\":[{\"ts\":1,\"model_id\":\"m1\"},{\"ts\":3,\"model_id\":\"m3\"}],"
		"\"environment_history\":[{\"ts\":6}],\"title\":\"y\",\"n\":1,\"added\":true}";
	/* JSON.stringify(x, null, 2) of the expected object (node). */
	static const char want[] =
		"{\n  \"files_in_context\": [\n    {\n      \"path\": \"a.c\"\n    },\n    {\n      \"path\": \"b.c\"\n"
		"    },\n    {\n      \"path\": \"d.c\"\n    },\n    {\n      \"path\": \"c.c\"\n    }\n  ],\n"
		"  \"model_usage\": [\n    {\n      \"ts\": 1,\n      \"model_id\": \"m1\"\n    },\n    {\n"
		"      \"ts\": 2,\n      \"model_id\": \"m2\"\n    },\n    {\n      \"ts\": 3,\n      \"model_id\": \"m3\"\n"
		"    }\n  ],\n  \"environment_history\": [\n    {\n      \"ts\": 5\n    },\n    {\n      \"ts\": 6\n"
		"    }\n  ],\n  \"title\": \"y\",\n  \"n\": 2,\n  \"added\": true\n}";
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(merge_metadata(base, strlen(base), head, strlen(head), new, strlen(new), &out, &len), 0);
	assert_non_null(out);
	assert_int_equal(len, strlen(out));
	assert_string_equal(out, want);
	free(out);
}

/* Pretty-printing, exactly as JSON.stringify(x, null, 2). */
static void test_metadata_pretty_small(void **state)
{
	static const char in[] = "{\"a\":[],\"b\":1}";
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(merge_metadata(in, strlen(in), in, strlen(in), in, strlen(in), &out, &len), 0);
	assert_string_equal(out, "{\n  \"a\": [],\n  \"b\": 1\n}");
	assert_int_equal(len, strlen("{\n  \"a\": [],\n  \"b\": 1\n}"));
	free(out);
}

/* No base: the logs still merge without duplicates; the writer's plain fields win. */
static void test_metadata_no_base(void **state)
{
	static const char head[] = "{\"files_in_context\":[{\"p\":1},{\"p\":2}],\"x\":1,\"keep\":true}";
	static const char new[] = "{\"files_in_context\":[{\"p\":1},{\"p\":3}],\"x\":2}";
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(merge_metadata(NULL, 0, head, strlen(head), new, strlen(new), &out, &len), 0);
	assert_string_equal(out, "{\n  \"files_in_context\": [\n    {\n      \"p\": 1\n    },\n    {\n      \"p\": 2\n"
				 "    },\n    {\n      \"p\": 3\n    }\n  ],\n  \"x\": 2,\n  \"keep\": true\n}");
	free(out);
}

/* A member the writer removed goes, even when another differs from it only in case. */
static void test_metadata_case_sensitive_remove(void **state)
{
	static const char base[] = "{\"a\":1,\"A\":1}";
	static const char new[] = "{\"a\":1}";
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(merge_metadata(base, strlen(base), base, strlen(base), new, strlen(new), &out, &len), 0);
	if (strcmp(out, "{\n  \"a\": 1\n}") != 0) {
		fprintf(stderr, "got %s\n", out);
		free(out);
		fail_msg("\"A\" was kept");
	}
	free(out);
}

/* 18. Nested containers, and strings holding what the printer reacts to. */
static void test_pretty(void **state)
{
	static const char in[] =
		"{\"a\":{\"b\":[1,{\"c\":\"x,y:z{}[]\"}],\"e\":{}},\"q\":\"say \\\"hi\\\", {ok}: [1]\","
		"\"bs\":\"end\\\\\",\"arr\":[[],[{}]],\"n\":null,\"t\":[true,false,-1.5],\"u\":\"\xc3\xa9\\\\\\\\\\\"\\\\\"}";
	/* JSON.stringify(JSON.parse(in), null, 2) (node). */
	static const char want[] =
		"{\n  \"a\": {\n    \"b\": [\n      1,\n      {\n        \"c\": \"x,y:z{}[]\"\n      }\n    ],\n"
		"    \"e\": {}\n  },\n  \"q\": \"say \\\"hi\\\", {ok}: [1]\",\n  \"bs\": \"end\\\\\",\n  \"arr\": [\n"
		"    [],\n    [\n      {}\n    ]\n  ],\n  \"n\": null,\n  \"t\": [\n    true,\n    false,\n    -1.5\n"
		"  ],\n  \"u\": \"\xc3\xa9\\\\\\\\\\\"\\\\\"\n}";
	static const struct {
		const char *in, *want;
	} small[] = {
		{ "{}", "{}" },
		{ "[]", "[]" },
		{ "1", "1" },
		{ "\"a,b:{c}\"", "\"a,b:{c}\"" },
		{ "[1]", "[\n  1\n]" },
		{ "[\"]\",\"[\"]", "[\n  \"]\",\n  \"[\"\n]" },
		{ "{\"\":\"\"}", "{\n  \"\": \"\"\n}" },
		{ "{\"k\\\"\":\"\\\\\"}", "{\n  \"k\\\"\": \"\\\\\"\n}" },
	};
	char *out;

	(void)state;
	out = json_pretty(in);
	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
	for (size_t i = 0; i < ARRAY_SIZE(small); i++) {
		out = json_pretty(small[i].in);
		assert_non_null(out);
		assert_string_equal(out, small[i].want);
		free(out);
	}
}

/* json_print_pretty(): a cJSON value printed as json_pretty() lays out its compact text. */
static void test_print_pretty(void **state)
{
	cJSON *o = cJSON_Parse("{\"a\":[1,{\"b\":\"c\"}],\"d\":{}}");
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(o);
	assert_int_equal(json_print_pretty(o, &out, &len), 0);
	assert_string_equal(out, "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"c\"\n    }\n  ],\n  \"d\": {}\n}");
	assert_int_equal(len, strlen(out));
	free(out);
	cJSON_Delete(o);
}

/* merge_metadata()'s return code; any output freed (so a failing check leaks nothing). */
static int meta_rc(const char *b, size_t blen, const char *h, size_t hlen, const char *n, size_t nlen)
{
	char *out = NULL;
	size_t len = 0;
	int r = merge_metadata(b, blen, h, hlen, n, nlen, &out, &len);

	if (r == 0)
		assert_non_null(out);
	else
		assert_null(out);
	free(out);
	return r;
}

/* 19. Anything but three objects (base may be absent) is refused. */
static void test_metadata_invalid(void **state)
{
	static const char ok[] = "{\"a\":1}";
	static const char *const bad[] = { "{\"a\":", "", "[]", "1", "nul", "{\"a\" 1}", "\"{}\"" };

	(void)state;
	assert_int_equal(meta_rc(NULL, 0, ok, strlen(ok), ok, strlen(ok)), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *b = bad[i];

		assert_int_equal(meta_rc(b, strlen(b), ok, strlen(ok), ok, strlen(ok)), -EINVAL);
		assert_int_equal(meta_rc(ok, strlen(ok), b, strlen(b), ok, strlen(ok)), -EINVAL);
		assert_int_equal(meta_rc(ok, strlen(ok), ok, strlen(ok), b, strlen(b)), -EINVAL);
		assert_int_equal(meta_rc(NULL, 0, b, strlen(b), ok, strlen(ok)), -EINVAL);
	}
	/* The lengths are honoured: a valid prefix is not the whole. */
	assert_int_equal(meta_rc(ok, strlen(ok), ok, strlen(ok), ok, 3), -EINVAL);
}

/* An object followed by more bytes is not an object either (JSON.parse throws). */
static void test_metadata_trailing_garbage(void **state)
{
	static const char ok[] = "{\"a\":1}";
	static const char *const bad[] = { "{\"a\":2}}x", "{\"a\":2} {}", "{\"a\":2}\0" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t n = strlen(bad[i]) + (i == 2); /* the last one with its NUL byte */

		assert_int_equal(meta_rc(ok, strlen(ok), bad[i], n, ok, strlen(ok)), -EINVAL);
		assert_int_equal(meta_rc(ok, strlen(ok), ok, strlen(ok), bad[i], n), -EINVAL);
	}
}

/*
 * A number beyond a double's range (found by tests/fuzz/fuzz_merge): cJSON
 * reads 1e400 as inf, which it finds unequal to itself, so an append log took
 * the same entry again at every merge, and writes it back as null. Such a file
 * is not merged (the store keeps the writer's version as written).
 */
static void test_metadata_number_out_of_range(void **state)
{
	static const char big[] = "{\"files_in_context\":[{\"path\":\"a\",\"size\":1e400}]}";
	static const char ok[] = "{\"files_in_context\":[{\"path\":\"a\",\"size\":1e300}]}";

	(void)state;
	assert_int_equal(meta_rc(NULL, 0, big, strlen(big), big, strlen(big)), -EINVAL);
	assert_int_equal(meta_rc(ok, strlen(ok), ok, strlen(ok), big, strlen(big)), -EINVAL);
	assert_int_equal(meta_rc(big, strlen(big), ok, strlen(ok), ok, strlen(ok)), -EINVAL);
	assert_int_equal(meta_rc(NULL, 0, ok, strlen(ok), ok, strlen(ok)), 0);
}

/*
 * Two members of one name, at any depth (found by tests/fuzz/fuzz_merge):
 * cJSON_Compare() finds such an entry unequal to itself, so an append log took
 * it again at every merge. A \u0000 would cut a string short. Not merged.
 */
static void test_metadata_unmergeable(void **state)
{
	static const char dup[] = "{\"model_usage\":[{\"ts\":1,\"ts\":2}]}";
	static const char top[] = "{\"a\":1,\"a\":2}";
	static const char nul[] = "{\"model_usage\":[],\"a\":\"x\\u0000y\"}";
	static const char ok[] = "{\"model_usage\":[{\"ts\":1}],\"a\":\"x\\u0001y\"}";

	(void)state;
	assert_int_equal(meta_rc(NULL, 0, dup, strlen(dup), dup, strlen(dup)), -EINVAL);
	assert_int_equal(meta_rc(ok, strlen(ok), ok, strlen(ok), top, strlen(top)), -EINVAL);
	assert_int_equal(meta_rc(ok, strlen(ok), nul, strlen(nul), ok, strlen(ok)), -EINVAL);
	assert_int_equal(meta_rc(ok, strlen(ok), ok, strlen(ok), ok, strlen(ok)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_metadata_pretty_small),
		cmocka_unit_test(test_metadata_no_base),
		cmocka_unit_test(test_metadata_case_sensitive_remove),
		cmocka_unit_test(test_pretty),
		cmocka_unit_test(test_print_pretty),
		cmocka_unit_test(test_metadata_invalid),
		cmocka_unit_test(test_metadata_trailing_garbage),
		cmocka_unit_test(test_metadata_number_out_of_range),
		cmocka_unit_test(test_metadata_unmergeable),
	};

	return cmocka_run_group_tests_name("merge_metadata", tests, NULL, NULL);
}
