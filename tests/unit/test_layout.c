/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_layout.c: which paths the store manages (store/layout.c), and Cline's
 * workspace hash.
 *
 * A path wrongly taken as managed would have its bytes parsed and maybe
 * refused; one wrongly taken as plain would lose the merge and the history.
 * The workspace keys were computed with Cline's own JavaScript hash, so the
 * workspaces/ tree names the same folders as the extension's checkpoints/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/util.h"

struct path_case {
	const char *path;
	enum store_path_kind kind;
};

static const struct path_case cases[] = {
	{ "state", STORE_PATH_DOC_DIR },
	{ "state/taskHistory.json", STORE_PATH_ARRAY },
	{ "tasks", STORE_PATH_TASKS_DIR },
	{ "tasks/1", STORE_PATH_DOC_DIR },
	{ "tasks/1700000000000", STORE_PATH_DOC_DIR },
	{ "tasks/1700000000000/api_conversation_history.json", STORE_PATH_ARRAY },
	{ "tasks/1700000000000/ui_messages.json", STORE_PATH_ARRAY },
	{ "tasks/1700000000000/task_metadata.json", STORE_PATH_WHOLE },
	{ "tasks/1700000000000/context_history.json", STORE_PATH_WHOLE },
	{ "tasks/1700000000000/settings.json", STORE_PATH_WHOLE },
	{ "tasks/1/ui_messages.json", STORE_PATH_ARRAY },
	/* 32 digits is the longest task id */
	{ "tasks/12345678901234567890123456789012", STORE_PATH_DOC_DIR },
	{ "tasks/12345678901234567890123456789012/ui_messages.json", STORE_PATH_ARRAY },

	/* the Cline CLI 3.x sessions */
	{ "sessions", STORE_PATH_TASKS_DIR },
	{ "sessions/1795505492931_317uf", STORE_PATH_DOC_DIR },
	{ "sessions/1795505492931_317uf/1795505492931_317uf.json", STORE_PATH_WHOLE },
	{ "sessions/1795505492931_317uf/1795505492931_317uf.messages.json", STORE_PATH_ARRAY },
	{ "sessions/1795505492931_317uf/sub-agent_2.messages.json", STORE_PATH_ARRAY }, /* a subagent's */
	{ "sessions/s/s.json", STORE_PATH_WHOLE },

	/* everything else is a plain file */
	{ "sessions/", STORE_PATH_PLAIN },
	{ "sessions/1795505492931", STORE_PATH_PLAIN },              /* all digits: not a session id */
	{ "sessions/1795505492931/1795505492931.json", STORE_PATH_PLAIN },
	{ "sessions/a.b/a.b.json", STORE_PATH_PLAIN },
	{ "sessions/..", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_317uf/1795505492931_317ug.json", STORE_PATH_PLAIN }, /* another id */
	{ "sessions/1795505492931_317uf/1795505492931_317uf.compaction.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_317uf/1795505492931_317uf.messages.json.tmp", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_317uf/.x.messages.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_317uf/.messages.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_317uf/sub/x.messages.json", STORE_PATH_PLAIN },
	{ "sessions/1795505492931_317uf/other.json", STORE_PATH_PLAIN },
	{ "db/sessions.db", STORE_PATH_PLAIN },
	{ "db/sessions.db-wal", STORE_PATH_PLAIN },
	{ "", STORE_PATH_PLAIN },
	{ "state/", STORE_PATH_PLAIN },
	{ "state/other.json", STORE_PATH_PLAIN },
	{ "state/taskHistory.json.tmp.1700000000000.abc.json", STORE_PATH_PLAIN },
	{ "state/taskHistory.json/x", STORE_PATH_PLAIN },
	{ "/state/taskHistory.json", STORE_PATH_PLAIN },
	{ "tasks/", STORE_PATH_PLAIN },
	{ "tasks/abc", STORE_PATH_PLAIN },
	{ "tasks/abc/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/12a/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/-1/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/123456789012345678901234567890123", STORE_PATH_PLAIN },
	{ "tasks/123456789012345678901234567890123/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/1/", STORE_PATH_PLAIN },
	{ "tasks/1/sub/x", STORE_PATH_PLAIN },
	{ "tasks/1/sub/ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/1//ui_messages.json", STORE_PATH_PLAIN },
	{ "tasks/1/ui_messages.json/x", STORE_PATH_PLAIN },
	{ "tasks/1/ui_messages.json.tmp.1700000000000.x7.json", STORE_PATH_PLAIN },
	{ "tasks/1/.ui_messages.json.new_1700000000000_ab.tmp", STORE_PATH_PLAIN },
	{ "tasks/1/ui_messages.json.lock", STORE_PATH_PLAIN },
	{ "tasks/1/UI_MESSAGES.JSON", STORE_PATH_PLAIN },
	{ "tasks/1/taskHistory.json", STORE_PATH_PLAIN },
	{ "tasks/1/other.json", STORE_PATH_PLAIN },
	{ "tasksx/1/ui_messages.json", STORE_PATH_PLAIN },
	{ "checkpoints/3301258620/.git/HEAD", STORE_PATH_PLAIN },
	{ "settings/cline_mcp_settings.json", STORE_PATH_PLAIN },
	{ "cache", STORE_PATH_PLAIN },
	{ "ui_messages.json", STORE_PATH_PLAIN },
};

static void test_path_kind(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum store_path_kind k = store_path_kind(cases[i].path);

		if (k != cases[i].kind)
			fail_msg("store_path_kind(\"%s\") is %d, expected %d", cases[i].path, k, cases[i].kind);
	}
}

static void test_is_task_id(void **state)
{
	assert_true(store_is_task_id("0"));
	assert_true(store_is_task_id("1"));
	assert_true(store_is_task_id("1700000000000"));
	assert_true(store_is_task_id("12345678901234567890123456789012"));

	assert_false(store_is_task_id(""));
	assert_false(store_is_task_id("123456789012345678901234567890123"));
	assert_false(store_is_task_id("abc"));
	assert_false(store_is_task_id("12a"));
	assert_false(store_is_task_id("-1"));
	assert_false(store_is_task_id("+1"));
	assert_false(store_is_task_id("1 "));
	assert_false(store_is_task_id(" 1"));
	assert_false(store_is_task_id("1.0"));
	assert_false(store_is_task_id(".."));
	assert_false(store_is_task_id("01KABCDEFGHJKMNPQRSTVWXYZ0")); /* a ulid */
	assert_false(store_is_task_id("\xd9\xa1")); /* ARABIC-INDIC DIGIT ONE */
}

static void test_is_session_id(void **state)
{
	assert_true(store_is_session_id("1795505492931_317uf"));
	assert_true(store_is_session_id("a"));
	assert_true(store_is_session_id("A-b_9"));
	assert_false(store_is_session_id("1795505492931")); /* a task id */
	assert_false(store_is_session_id(""));
	assert_false(store_is_session_id("."));
	assert_false(store_is_session_id(".."));
	assert_false(store_is_session_id("a.b"));
	assert_false(store_is_session_id("a/b"));
	assert_false(store_is_session_id("a b"));
	assert_false(store_is_session_id("x1234567890123456789012345678901234567890123456789012345678901234")); /* 65 */
	assert_true(store_is_conversation_id("1795505492931"));
	assert_true(store_is_conversation_id("1795505492931_317uf"));
	assert_false(store_is_conversation_id("a.b"));
}

static void test_conversation_dir(void **state)
{
	char buf[96];

	assert_int_equal(store_conversation_dir("1795505492931", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "tasks/1795505492931");
	assert_int_equal(store_conversation_dir("1795505492931_317uf", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sessions/1795505492931_317uf");
	assert_int_equal(store_conversation_dir("..", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(store_conversation_dir("1795505492931_317uf", buf, 10), -EINVAL);
}

static void test_workspace_key(void **state)
{
	/* Computed with Cline's hash: h = (h * 31 + s.charCodeAt(i)) >>> 0 */
	assert_int_equal(store_workspace_key(""), 0);
	assert_int_equal(store_workspace_key("a"), 97);
	assert_int_equal(store_workspace_key("ab"), 97 * 31 + 98);
	assert_int_equal(store_workspace_key("/home/dev/projects/greeter"), 3301258620u);
	assert_int_equal(store_workspace_key("/home/dev/projects/webapp"), 691006855u);
	/* é is one UTF-16 unit, 😀 a surrogate pair */
	assert_int_equal(store_workspace_key("/tmp/é😀"), 3406327813u);
	assert_int_equal(store_workspace_key("é"), 0xe9);
	assert_int_equal(store_workspace_key("😀"), 0xd83d * 31 + 0xde00);
	assert_int_equal(store_workspace_key("€"), 0x20ac);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_kind),
		cmocka_unit_test(test_is_task_id),
		cmocka_unit_test(test_workspace_key),
		cmocka_unit_test(test_is_session_id),
		cmocka_unit_test(test_conversation_dir),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
