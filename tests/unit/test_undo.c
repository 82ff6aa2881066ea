/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_undo.c: fs/cmd/undo_find.c's reading of agent.diff alone: the
 * paths a diff changes, as git and libgit2 print them (names with spaces,
 * quoted names, renames, new, deleted and binary files), each once, and its
 * "# convfs:" notes; git's C-style quoting undone, and what is not valid
 * quoting refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fs/cmd/undo.h"

/* What `git diff` printed for the checkpoints test's workspace, shortened. */
static const char diff[] =
	"# convfs: agent.diff: what the agent's file tools changed after checkpoint 1 (8bcaa4a) up to ...\n"
	"# convfs: what commands the agent ran changed is not tracked by the client, and not here.\n"
	"# convfs: left out, changed by the user too: README.md\n"
	"diff --git a/docs/a file.txt b/docs/a file.txt\n"
	"index 3b18e51..9daeafb 100644\n"
	"--- a/docs/a file.txt\t\n"
	"+++ b/docs/a file.txt\t\n"
	"@@ -1 +1 @@\n"
	"-diff --git a/not/a/header b/not/a/header\n"
	"+rename from not-a-header\n"
	"diff --git \"a/docs/r\\303\\251sum\\303\\251 \\346\\227\\245.txt\" \"b/docs/r\\303\\251sum\\303\\251 \\346\\227\\245.txt\"\n"
	"new file mode 100644\n"
	"index 0000000..b0b3b3b\n"
	"--- /dev/null\n"
	"+++ \"b/docs/r\\303\\251sum\\303\\251 \\346\\227\\245.txt\"\n"
	"@@ -0,0 +1 @@\n"
	"+unicode\n"
	"diff --git a/src/main b/src/app b/src/main b/src/app\n"
	"similarity index 100%\n"
	"rename from src/main b/src/app\n"
	"rename to src/main b/src/app2\n"
	"diff --git a/old.txt b/new \"q\".txt\n"
	"similarity index 90%\n"
	"rename from old.txt\n"
	"rename to \"new \\\"q\\\".txt\"\n"
	"diff --git a/data.bin b/data.bin\n"
	"Binary files a/data.bin and b/data.bin differ\n"
	"diff --git a/data.bin b/data.bin\n"
	"deleted file mode 100644\n";

static void test_paths(void **state)
{
	static const char *const want[] = {
		"docs/a file.txt",
		"docs/r\303\251sum\303\251 \346\227\245.txt",
		"src/main b/src/app",
		"src/main b/src/app2",
		"old.txt",
		"new \"q\".txt",
		"data.bin",
	};
	struct undo_diff d;

	(void)state;
	assert_int_equal(undo_diff_parse(&d, diff, sizeof(diff) - 1), 0);
	assert_int_equal(d.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < d.n; i++)
		assert_string_equal(d.paths[i], want[i]);
	/* The notes, less the first (what agent.diff is). */
	assert_int_equal(d.nnotes, 2);
	assert_string_equal(d.notes[1], "# convfs: left out, changed by the user too: README.md");
	undo_diff_release(&d);
	assert_int_equal(undo_diff_parse(&d, "", 0), 0);
	assert_int_equal(d.n, 0);
	undo_diff_release(&d);
}

static void test_unquote(void **state)
{
	static const char ok[] = "\"a\\tb\\\\c\\\"d\\101\" rest";
	size_t used = 0;
	char *s;

	(void)state;
	s = undo_unquote(ok, strlen(ok), &used);
	assert_non_null(s);
	assert_string_equal(s, "a\tb\\c\"dA");
	assert_int_equal(used, strlen(ok) - strlen(" rest"));
	free(s);
	/* Not quoting: no closing quote, an unknown escape, a NUL, a third octal digit missing. */
	assert_null(undo_unquote("\"abc", 4, &used));
	assert_null(undo_unquote("\"a\\qb\"", 6, &used));
	assert_null(undo_unquote("\"a\\000b\"", 8, &used));
	assert_null(undo_unquote("\"a\\10\"", 6, &used));
	assert_null(undo_unquote("abc", 3, &used));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_unquote),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
