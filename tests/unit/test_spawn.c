/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_spawn.c: fs/view/spawn.c alone, on the messages a real Cline CLI
 * 3.0.65 session wrote when the tests' model server had it spawn a subagent,
 * and one of those spawn its own (tests/integration/real_clients/
 * model_server.js, tasks [spawn] and [spawn nested]): the calls found, their
 * results, subagents matched to calls by their first message (the same task
 * twice taken in order), and spawn.json's text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs/view/spawn.h"

/* The session's own conversation, as the CLI wrote it (texts shortened). */
static const char *const root[] = {
	"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Spawn a helper for the file [spawn]\"}]}",
	"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"I will ask a subagent.\"},{\"type\":"
	"\"tool_use\",\"id\":\"call_fake_1\",\"name\":\"spawn_agent\",\"input\":{\"systemPrompt\":\"You write files "
	"when asked.\",\"task\":\"Write child.txt containing a greeting [child]\"}}]}",
	"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"call_fake_1\",\"name\":"
	"\"spawn_agent\",\"content\":\"{\\\"text\\\":\\\"The subagent wrote child.txt.\\\",\\\"iterations\\\":2,"
	"\\\"finishReason\\\":\\\"completed\\\",\\\"usage\\\":{\\\"inputTokens\\\":200,\\\"outputTokens\\\":40}}\"}]}",
	"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"The subagent is done. Task done.\"}]}",
};

static void feed(struct spawn_calls *c, const char *const *msgs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(spawn_calls_add(c, (int64_t)i, msgs[i], strlen(msgs[i])), 0);
}

/* A call and its result: the line of the message that makes it, the task, how it ended. */
static void test_call(void **state)
{
	struct spawn_calls c = { 0 };
	struct spawn_call *k;

	feed(&c, root, 2);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.v[0].line, 2);
	assert_string_equal(c.v[0].id, "call_fake_1");
	assert_string_equal(c.v[0].task, "Write child.txt containing a greeting [child]");
	assert_string_equal(c.v[0].system_prompt, "You write files when asked.");
	assert_null(c.v[0].finish); /* no result yet: running */
	feed(&c, root, 4);
	assert_int_equal(c.n, 2); /* the same messages again: one more call, the result to the last */
	assert_null(c.v[0].finish);
	assert_string_equal(c.v[1].finish, "completed");
	spawn_calls_release(&c);
	feed(&c, root, 4);
	assert_int_equal(c.n, 1);
	assert_string_equal(c.v[0].finish, "completed");
	assert_string_equal(c.v[0].text, "The subagent wrote child.txt.");
	assert_int_equal(c.v[0].iterations, 2);
	assert_null(spawn_calls_take(&c, "Another task"));
	k = spawn_calls_take(&c, "Write child.txt containing a greeting [child]");
	assert_non_null(k);
	assert_ptr_equal(k, &c.v[0]);
	assert_null(spawn_calls_take(&c, "Write child.txt containing a greeting [child]")); /* taken */
	spawn_calls_release(&c);
}

/* Two subagents given one task are matched in order; an error's result; what is not a message is passed over. */
static void test_same_task(void **state)
{
	static const char *const msgs[] = {
		("{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"spawn_agent\","
		 "\"input\":{\"task\":\"t\"}},{\"type\":\"tool_use\",\"id\":\"b\",\"name\":\"spawn_agent\",\"input\":"
		 "{\"task\":\"t\"}},{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"editor\",\"input\":{}}]}"),
		("{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"b\",\"content\":\"boom\","
		 "\"is_error\":true},{\"type\":\"tool_result\",\"tool_use_id\":\"c\",\"content\":\"ok\"}]}"),
		"not json",
		"[1,2]",
		"{\"role\":\"user\",\"content\":\"spawn_agent in a string\"}",
	};
	struct spawn_calls c = { 0 };

	feed(&c, msgs, 5);
	assert_int_equal(c.n, 2);
	assert_ptr_equal(spawn_calls_take(&c, "t"), &c.v[0]);
	assert_ptr_equal(spawn_calls_take(&c, "t"), &c.v[1]);
	assert_null(c.v[0].finish);
	assert_string_equal(c.v[1].finish, "error");
	assert_string_equal(c.v[1].text, "boom");
	assert_null(c.v[0].system_prompt);
	spawn_calls_release(&c);
}

static void test_json(void **state)
{
	struct spawn_calls c = { 0 };
	struct spawn_info in = {
		.agent = "agent_1796531624146_w9s96i",
		.session_id = "1796531623230_uiyd8__agent_1796531624146_w9s96i",
		.parent = "1796531623230_uiyd8",
		.spawned_by = "../../messages.jsonl:2",
		.updated_ms = 1796531624483,
	};
	char *text;
	size_t len;

	in.started_ms = spawn_agent_ms(in.agent);
	assert_int_equal(in.started_ms, 1796531624146);
	assert_int_equal(spawn_agent_ms("agent_x_1"), 0);
	assert_int_equal(spawn_agent_ms("1796531623230_uiyd8"), 0);
	feed(&c, root, 4);
	in.call = spawn_calls_take(&c, "Write child.txt containing a greeting [child]");
	assert_int_equal(spawn_json(&in, &text, &len), 0);
	assert_int_equal(len, strlen(text));
	assert_string_equal(text,
			    "{\n\t\"agent\":\t\"agent_1796531624146_w9s96i\",\n"
			    "\t\"sessionId\":\t\"1796531623230_uiyd8__agent_1796531624146_w9s96i\",\n"
			    "\t\"parent\":\t\"1796531623230_uiyd8\",\n"
			    "\t\"spawnedBy\":\t\"../../messages.jsonl:2\",\n"
			    "\t\"task\":\t\"Write child.txt containing a greeting [child]\",\n"
			    "\t\"systemPrompt\":\t\"You write files when asked.\",\n"
			    "\t\"status\":\t\"completed\",\n"
			    "\t\"result\":\t\"The subagent wrote child.txt.\",\n"
			    "\t\"iterations\":\t2,\n"
			    "\t\"startedAt\":\t\"2026-12-06T04:33:44.146Z\",\n"
			    "\t\"updatedAt\":\t\"2026-12-06T04:33:44.483Z\"\n}\n");
	free(text);
	/* No call found: its first message is the task, nothing else is known. */
	in.call = NULL;
	in.spawned_by = NULL;
	in.first = "Write child.txt containing a greeting [child]";
	in.updated_ms = 0;
	assert_int_equal(spawn_json(&in, &text, &len), 0);
	assert_non_null(strstr(text, "\"spawnedBy\":\tnull"));
	assert_non_null(strstr(text, "\"status\":\tnull"));
	assert_non_null(strstr(text, "\"task\":\t\"Write child.txt"));
	assert_non_null(strstr(text, "\"updatedAt\":\tnull"));
	free(text);
	spawn_calls_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_same_task),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
