/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_context.c: fs/view/context.c, a Cline task's conversation as the
 * model saw it.
 *
 * Each case is a conversation, a deleted range and a context_history.json,
 * and the lines the client would have sent, worked out by hand from the
 * client's ContextManager (getAndAlterTruncatedMessages): what is cut, the
 * tool results orphaned by the cut, the latest edit of each block (and those
 * a checkpoint's time leaves out), and tool calls answered first and in
 * order. A message the client sends as stored must come back as "kept as it
 * is", so that the view streams its bytes unchanged.
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

#include "fs/view/context.h"
#include "store/util.h"

#define NONE ((struct context_range){ .set = false })
#define RANGE(a, b) ((struct context_range){ .set = true, .start = (a), .end = (b) })

/*
 * The conversation msgs[0..n) rebuilt: its lines joined, each ending in
 * "\n"; a message sent as stored is marked with a leading '=' so the cases
 * can tell it from one written again. free() it.
 */
static char *rebuild(const char *const *msgs, size_t n, struct context_range range, const char *edits_json,
		     int64_t max_ts)
{
	struct context_edits *edits = NULL;
	struct context_walk *w = NULL;
	struct sb out = SB_INIT;

	assert_int_equal(context_edits_parse(edits_json, edits_json ? strlen(edits_json) : 0, max_ts, &edits), 0);
	assert_int_equal(context_walk_new(edits, &range, (int64_t)n, &w), 0);
	for (size_t i = 0; i < n; i++) {
		char *json = NULL;
		size_t len = 0;
		bool kept;

		assert_int_equal(context_walk_next(w, (int64_t)i, msgs[i], strlen(msgs[i]), &kept, &json, &len), 0);
		if (!kept) {
			assert_null(json);
			continue;
		}
		if (json) {
			assert_int_equal(len, strlen(json));
			assert_int_equal(sb_add(&out, json, len), 0);
		} else {
			assert_int_equal(sb_addf(&out, "=%s", msgs[i]), 0);
		}
		assert_int_equal(sb_adds(&out, "\n"), 0);
		free(json);
	}
	context_walk_free(w);
	context_edits_free(edits);
	return sb_detach(&out, NULL) ?: strdup("");
}

static void expect(const char *const *msgs, size_t n, struct context_range range, const char *edits, int64_t max_ts,
		   const char *want)
{
	char *got = rebuild(msgs, n, range, edits, max_ts);

	assert_string_equal(got, want);
	free(got);
}

#define U(t) "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}"
#define A(t) "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}"

static const char *const plain[] = { U("task"), A("a1"), U("u2"), A("a3"), U("u4"), A("a5"), U("u6"), A("a7") };

/* Never cut, never edited: every message as stored (context.jsonl is messages.jsonl). */
static void test_untouched(void **state)
{
	expect(plain, 8, NONE, NULL, INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" A("a3") "\n=" U("u4") "\n=" A("a5") "\n=" U("u6") "\n="
	       A("a7") "\n");
	/* A range that cuts nothing yet ([2, 1]: the client's first range of a short conversation). */
	expect(plain, 4, RANGE(2, 1), NULL, INT64_MAX, "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" A("a3") "\n");
}

/* [2, 3]: messages 0 and 1 are always kept, 2 and 3 left out; the range's start does not count. */
static void test_range(void **state)
{
	const char *want = "=" U("task") "\n=" A("a1") "\n=" U("u4") "\n=" A("a5") "\n=" U("u6") "\n=" A("a7") "\n";

	expect(plain, 8, RANGE(2, 3), NULL, INT64_MAX, want);
	expect(plain, 8, RANGE(7, 3), NULL, INT64_MAX, want);
	/* Past the end: the first pair alone. */
	expect(plain, 8, RANGE(2, 40), NULL, INT64_MAX, "=" U("task") "\n=" A("a1") "\n");
}

/* The first message after the cut loses its tool results, whose calls were cut; no other message does. */
static void test_orphans(void **state)
{
	const char *const msgs[] = {
		U("task"),
		A("a1"),
		U("u2"),
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"x\",\"input\":{}}]}",
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"r\"},"
		"{\"type\":\"text\",\"text\":\"u4\"}]}",
		A("a5"),
	};

	expect(msgs, 6, RANGE(2, 3), NULL, INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"u4\"}]}\n=" A("a5")
	       "\n");
	/* Uncut, the call is there and so is its result. */
	expect(msgs, 6, NONE, NULL, INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","
	       "\"id\":\"t1\",\"name\":\"x\",\"input\":{}}]}\n=" "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
	       "\"tool_use_id\":\"t1\",\"content\":\"r\"},{\"type\":\"text\",\"text\":\"u4\"}]}\n=" A("a5") "\n");
}

/* The context_history.json of a real truncation (Cline CLI 1.0.10): the notice on message 1, a read made short. */
static const char history[] =
	"[[2,[3,[[0,[[1000,\"text\",[\"[write_to_file for 'hello.txt'] Result: short\"],[]]]]]]],"
	"[4,[2,[[0,[[1000,\"text\",[\"[read_file for 'hello.txt'] Result:\\n[[NOTE] removed]\"],[]]]]]]],"
	"[1,[0,[[0,[[1000,\"text\",[\"[NOTE] Some previous conversation history has been removed.\"],[]]]]]]]]";

static void test_edits(void **state)
{
	expect(plain, 8, RANGE(2, 3), history, INT64_MAX,
	       "=" U("task") "\n" A("[NOTE] Some previous conversation history has been removed.") "\n"
	       U("[read_file for 'hello.txt'] Result:\\n[[NOTE] removed]") "\n=" A("a5") "\n=" U("u6") "\n=" A("a7") "\n");
	/* Edits hold without a cut too (a file read made short saved enough). */
	expect(plain, 4, NONE, history, INT64_MAX,
	       "=" U("task") "\n" A("[NOTE] Some previous conversation history has been removed.") "\n"
	       U("[write_to_file for 'hello.txt'] Result: short") "\n=" A("a3") "\n");
}

/* The latest edit of a block counts, once those after the checkpoint's time are dropped from the end. */
static void test_edit_times(void **state)
{
	const char *edits = "[[2,[2,[[0,[[100,\"text\",[\"first\"],[]],[200,\"text\",[\"second\"],[]]]]]]]]";

	expect(plain, 4, NONE, edits, INT64_MAX, "=" U("task") "\n=" A("a1") "\n" U("second") "\n=" A("a3") "\n");
	expect(plain, 4, NONE, edits, 150, "=" U("task") "\n=" A("a1") "\n" U("first") "\n=" A("a3") "\n");
	expect(plain, 4, NONE, edits, 200, "=" U("task") "\n=" A("a1") "\n" U("second") "\n=" A("a3") "\n");
	/* None left at that time: the message as stored. */
	expect(plain, 4, NONE, edits, 99, "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" A("a3") "\n");
	/* An edit that gives the text the message has is no change: its bytes as stored. */
	expect(plain, 4, NONE, "[[2,[2,[[0,[[1,\"text\",[\"u2\"],[]]]]]]]]", INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" A("a3") "\n");
	/* A later entry of the same message replaces the earlier one, as in a Map. */
	expect(plain, 4, NONE, "[[2,[2,[[0,[[1,\"text\",[\"x\"],[]]]]]]],[2,[2,[]]]]", INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" A("a3") "\n");
	/* An empty text list: the text is undefined, and JSON leaves the member out. */
	expect(plain, 4, NONE, "[[2,[2,[[0,[[1,\"text\",[],[]]]]]]]]", INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}\n=" A("a3") "\n");
}

/* An edit of a tool result sets the text of its first part; its index is taken after the cut's results are gone. */
static void test_edit_blocks(void **state)
{
	const char *const msgs[] = {
		U("task"),
		A("a1"),
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t0\",\"content\":[{\"type\":\"text\","
		"\"text\":\"long\"}]}]}",
		A("a3"),
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"x\"},"
		"{\"type\":\"text\",\"text\":\"b1\"},{\"type\":\"text\",\"text\":\"b2\"}]}",
		A("a5"),
	};

	expect(msgs, 4, NONE, "[[2,[2,[[0,[[1,\"text\",[\"short\"],[]]]]]]]]", INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t0\","
	       "\"content\":[{\"type\":\"text\",\"text\":\"short\"}]}]}\n=" A("a3") "\n");
	/* Block 1 of message 4 is "b2" once the orphaned result is out. */
	expect(msgs, 6, RANGE(2, 3), "[[4,[2,[[1,[[1,\"text\",[\"edited\"],[]]]]]]]]", INT64_MAX,
	       "=" U("task") "\n=" A("a1") "\n{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"b1\"},"
	       "{\"type\":\"text\",\"text\":\"edited\"}]}\n=" A("a5") "\n");
	/* A block that is not there, or not text, is left alone. */
	{
		char want[1024];

		snprintf(want, sizeof(want), "=%s\n=%s\n=%s\n=%s\n", msgs[0], msgs[1], msgs[2], msgs[3]);
		expect(msgs, 4, NONE, "[[3,[2,[[7,[[1,\"text\",[\"x\"],[]]]]]]],[1,[0,[[0,[[1,\"image\",[\"x\"],[]]]]]]]]",
		       INT64_MAX, want);
	}
}

/* A file the client cannot load gives it no edits at all. */
static void test_bad_history(void **state)
{
	static const char *const bad[] = {
		"not json", "{}", "[5]", "[[2]]", "[[2,[2,7]]]", "[[2,[2,[[0,[[1,\"text\",[\"x\"],[]]]]]]],[3,[2,\"s\"]]]",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		expect(plain, 4, NONE, bad[i], INT64_MAX, "=" U("task") "\n=" A("a1") "\n=" U("u2") "\n=" A("a3") "\n");
}

/* A conversation of one message is sent as it is, edits or not. */
static void test_one_message(void **state)
{
	expect(plain, 1, RANGE(2, 3), "[[0,[0,[[0,[[1,\"text\",[\"x\"],[]]]]]]]]", INT64_MAX, "=" U("task") "\n");
}

#define CALLS "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"go\"}," \
	      "{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"x\",\"input\":{}}," \
	      "{\"type\":\"tool_use\",\"id\":\"b\",\"name\":\"y\",\"input\":{}}]}"
#define RES(id) "{\"type\":\"tool_result\",\"tool_use_id\":\"" id "\",\"content\":\"r" id "\"}"

/* The results of an assistant's tool calls come first in the next message, in the calls' order. */
static void test_tool_pairs(void **state)
{
	const char *const in_order[] = { U("task"), CALLS, "{\"role\":\"user\",\"content\":[" RES("a") "," RES("b")
		",{\"type\":\"text\",\"text\":\"t\"}]}" };
	const char *const mixed[] = { U("task"), CALLS, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"t\"},"
		RES("b") "," RES("z") "," RES("a") "]}" };
	const char *const missing[] = { U("task"), CALLS, "{\"role\":\"user\",\"content\":[" RES("a") "]}", A("a3") };
	const char *const as_text[] = { U("task"), CALLS, "{\"role\":\"user\",\"content\":\"plain\"}" };
	const char *const not_user[] = { U("task"), CALLS, A("a2"), U("u3") };

	{
		char want[1024];

		snprintf(want, sizeof(want), "=%s\n=%s\n=%s\n", in_order[0], in_order[1], in_order[2]);
		expect(in_order, 3, NONE, NULL, INT64_MAX, want);
	}
	/* Reordered; the result of a call that is not there is dropped. */
	expect(mixed, 3, NONE, NULL, INT64_MAX,
	       "=" U("task") "\n=" CALLS "\n{\"role\":\"user\",\"content\":[" RES("a") "," RES("b")
	       ",{\"type\":\"text\",\"text\":\"t\"}]}\n");
	/* A missing result is made up. */
	expect(missing, 4, NONE, NULL, INT64_MAX,
	       "=" U("task") "\n=" CALLS "\n{\"role\":\"user\",\"content\":[" RES("a") ","
	       "{\"type\":\"tool_result\",\"tool_use_id\":\"b\",\"content\":\"result missing\"}]}\n=" A("a3") "\n");
	/* Content that is not an array becomes [] first: the text is lost, as the client loses it. */
	expect(as_text, 3, NONE, NULL, INT64_MAX,
	       "=" U("task") "\n=" CALLS "\n{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"a\","
	       "\"content\":\"result missing\"},{\"type\":\"tool_result\",\"tool_use_id\":\"b\",\"content\":\"result "
	       "missing\"}]}\n");
	/* Only a user message right after the calls is looked at. */
	expect(not_user, 4, NONE, NULL, INT64_MAX, "=" U("task") "\n=" CALLS "\n=" A("a2") "\n=" U("u3") "\n");
}

/* The calls before the cut do not reach across it: the message after the cut follows message 1. */
static void test_pairs_across_cut(void **state)
{
	const char *const msgs[] = { U("task"), CALLS, U("u2"), A("a3"),
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"u4\"}]}" };

	/* Message 1's calls are answered by what follows it in the rebuilt array: message 4. */
	expect(msgs, 5, RANGE(2, 3), NULL, INT64_MAX,
	       "=" U("task") "\n=" CALLS "\n{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"a\","
	       "\"content\":\"result missing\"},{\"type\":\"tool_result\",\"tool_use_id\":\"b\",\"content\":\"result "
	       "missing\"},{\"type\":\"text\",\"text\":\"u4\"}]}\n");
}

/* A message the client would have to read and cannot is an error, not a guess. */
static void test_not_json(void **state)
{
	const char *const msgs[] = { U("task"), A("a1"), "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\"" };
	struct context_range range = RANGE(2, 1);
	struct context_walk *w;
	char *json;
	size_t len;
	bool kept;

	range.end = 1;
	assert_int_equal(context_walk_new(NULL, &range, 3, &w), 0);
	assert_int_equal(context_walk_next(w, 0, msgs[0], strlen(msgs[0]), &kept, &json, &len), 0);
	assert_int_equal(context_walk_next(w, 1, msgs[1], strlen(msgs[1]), &kept, &json, &len), 0);
	/* Not looked at: nothing to change in it. */
	assert_int_equal(context_walk_next(w, 2, "{\"role\":", 8, &kept, &json, &len), 0);
	context_walk_free(w);
	assert_int_equal(context_walk_new(NULL, &range, 4, &w), 0);
	assert_int_equal(context_walk_next(w, 0, msgs[0], strlen(msgs[0]), &kept, &json, &len), 0);
	assert_int_equal(context_walk_next(w, 1, CALLS, strlen(CALLS), &kept, &json, &len), 0);
	assert_int_equal(context_walk_next(w, 2, msgs[2], strlen(msgs[2]), &kept, &json, &len), -EINVAL);
	context_walk_free(w);
}

static void test_range_parse(void **state)
{
	struct context_range r;

	context_range_parse("[2,5]", 5, &r);
	assert_true(r.set);
	assert_int_equal(r.start, 2);
	assert_int_equal(r.end, 5);
	context_range_parse("null", 4, &r);
	assert_false(r.set);
	context_range_parse("[2]", 3, &r);
	assert_false(r.set);
	context_range_parse(NULL, 0, &r);
	assert_false(r.set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untouched),   cmocka_unit_test(test_range),
		cmocka_unit_test(test_orphans),     cmocka_unit_test(test_edits),
		cmocka_unit_test(test_edit_times),  cmocka_unit_test(test_edit_blocks),
		cmocka_unit_test(test_bad_history), cmocka_unit_test(test_one_message),
		cmocka_unit_test(test_tool_pairs),  cmocka_unit_test(test_pairs_across_cut),
		cmocka_unit_test(test_not_json),    cmocka_unit_test(test_range_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
