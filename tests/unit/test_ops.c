/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_ops.c: the store's side of the tools that look inside a store:
 * a task's versions (the view's versions/ folders) and each version's
 * content as it stood; the checks of `convfs check`, each made to find the
 * one broken invariant it is for (the tables changed behind the store's back
 * with SQL); what `convfs forget` removes, and that the store is sound and
 * every version still renders after it. Each test opens a store in memory.
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

#include "store/store.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/memory_store.h"

#define UI(id) "tasks/" id "/ui_messages.json"
#define API(id) "tasks/" id "/api_conversation_history.json"
#define META(id) "tasks/" id "/task_metadata.json"

static const struct store_who who = { .pid = 1001, .comm = "code" };

static void commit(struct store *st, const char *path, const char *json)
{
	assert_int_equal(store_doc_commit(st, path, json, strlen(json), &who, "write"), 0);
}

/* All of snap, read in one piece (free()). */
static char *read_snap(struct store *st, struct store_snap *snap)
{
	char *buf = calloc(1, (size_t)store_snap_size(snap) + 1);

	assert_non_null(buf);
	assert_int_equal(store_snap_read(st, snap, buf, (size_t)store_snap_size(snap), 0), store_snap_size(snap));
	return buf;
}

/* The doc at path after revision rev, as JSON Lines (or whole), read whole (free()); NULL if -ENOENT. */
static char *read_at(struct store *st, const char *path, int64_t rev, bool jsonl)
{
	struct store_snap *snap = NULL;
	char *buf;
	int r = store_snap_open_at(st, path, rev, jsonl, &snap);

	if (r == -ENOENT)
		return NULL;
	assert_int_equal(r, 0);
	buf = calloc(1, (size_t)store_snap_size(snap) + 1);
	assert_non_null(buf);
	assert_int_equal(store_snap_read(st, snap, buf, (size_t)store_snap_size(snap), 0), store_snap_size(snap));
	store_snap_free(snap);
	return buf;
}

/* Every save of any of the three files is a version, and each reads back as it stood then. */
static void test_versions(void **state)
{
	struct store *st = *state;
	const char *paths[] = { API("1"), UI("1"), META("1") };
	struct store_task_version *v = NULL;
	size_t n = 0;
	char *s;

	commit(st, UI("1"), "[{\"ts\":1,\"type\":\"say\",\"say\":\"task\",\"text\":\"one\"}]");
	commit(st, API("1"), "[{\"role\":\"user\",\"content\":\"a\"}]");
	commit(st, UI("2"), "[{\"ts\":9,\"type\":\"say\"}]"); /* another task: not a version of 1 */
	commit(st, API("1"), "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]");
	commit(st, META("1"), "{\"files_in_context\":[]}");
	commit(st, API("1"), "[{\"role\":\"user\",\"content\":\"c\"}]"); /* a rewrite drops two */
	assert_int_equal(store_doc_remove(st, UI("1"), &who, "unlink"), 0); /* no version */

	assert_int_equal(store_versions(st, paths, 3, &v, &n), 0);
	assert_int_equal(n, 5);
	for (size_t i = 1; i < n; i++)
		assert_true(v[i].rev > v[i - 1].rev && v[i].time_ns >= v[i - 1].time_ns);

	/* version 1: the ui stream only; no api file yet */
	assert_null(read_at(st, API("1"), v[0].rev, true));
	s = read_at(st, UI("1"), v[0].rev, true);
	assert_string_equal(s, "{\"ts\":1,\"type\":\"say\",\"say\":\"task\",\"text\":\"one\"}\n");
	free(s);
	/* version 3: two api messages, no metadata yet */
	s = read_at(st, API("1"), v[2].rev, true);
	assert_string_equal(s, "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n");
	free(s);
	assert_null(read_at(st, META("1"), v[2].rev, false));
	/* version 4: metadata, whole */
	s = read_at(st, META("1"), v[3].rev, false);
	assert_string_equal(s, "{\"files_in_context\":[]}");
	free(s);
	/* version 5: the rewrite; the old version 3 still reads as it was */
	s = read_at(st, API("1"), v[4].rev, true);
	assert_string_equal(s, "{\"role\":\"user\",\"content\":\"c\"}\n");
	free(s);
	s = read_at(st, API("1"), v[2].rev, true);
	assert_string_equal(s, "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n");
	free(s);
	/* a whole doc has no JSON Lines, a past array no whole rendering */
	{
		struct store_snap *snap = NULL;

		assert_int_equal(store_snap_open_at(st, META("1"), v[4].rev, true, &snap), -EINVAL);
		assert_int_equal(store_snap_open_at(st, API("1"), v[4].rev, false, &snap), -EINVAL);
		assert_int_equal(store_snap_open_at(st, API("9"), v[4].rev, true, &snap), -ENOENT);
	}
	free(v);

	/* none is not an error */
	{
		const char *none[] = { API("7") };

		v = NULL;
		assert_int_equal(store_versions(st, none, 1, &v, &n), 0);
		assert_int_equal(n, 0);
		free(v);
	}
}

struct found {
	int n;
	char lines[4096];
};

static int collect(void *ctx, const char *line)
{
	struct found *f = ctx;
	size_t used = strlen(f->lines);

	f->n++;
	snprintf(f->lines + used, sizeof(f->lines) - used, "%s\n", line);
	return 0;
}

/* The store after sql, checked: the number of problems, their lines in *f. */
static int check_after(struct store *st, const char *sql, struct found *f)
{
	memset(f, 0, sizeof(*f));
	/* behind the store's back: without the foreign keys that would refuse it */
	if (sql)
		assert_int_equal(sqlite3_exec(st->db, "PRAGMA foreign_keys = OFF", NULL, NULL, NULL), SQLITE_OK);
	if (sql)
		assert_int_equal(sqlite3_exec(st->db, sql, NULL, NULL, NULL), SQLITE_OK);
	return store_check(st, collect, NULL, f);
}

static void fill(struct store *st)
{
	commit(st, UI("1"), "[{\"ts\":1,\"type\":\"say\",\"text\":\"é\"},{\"ts\":2,\"type\":\"say\"}]");
	commit(st, API("1"), "[ {\"role\":\"user\",\"content\":\"a\"},\n {\"role\":\"user\",\"content\":\"b\"} ]");
	commit(st, META("1"), "{\"files_in_context\":[]}");
	commit(st, API("1"), "[ {\"role\":\"user\",\"content\":\"a\"} ]");
}

/* A sound store has no problem; each broken invariant is found and named. */
static void test_check(void **state)
{
	static const struct {
		const char *sql, *want;
	} cases[] = {
		{ "UPDATE docs SET nelems = nelems + 1 WHERE path LIKE '%ui_messages.json'", "2 current rows, its row says 3" },
		{ "UPDATE docs SET size = size + 1 WHERE path LIKE '%ui_messages.json'", "its rows and head and tail make" },
		{ "UPDATE docs SET lsize = 7 WHERE path LIKE '%ui_messages.json'", "JSON Lines size 7" },
		{ "UPDATE elems SET off = off + 1 WHERE seq = 1 AND rev_to IS NULL", "element 1 at offset" },
		{ "UPDATE elems SET loff = 0 WHERE seq = 1 AND rev_to IS NULL", "element 1 at offset" },
		{ "UPDATE elems SET len = len + 1, off = off WHERE seq = 0 AND rev_to IS NULL AND doc_id = "
		  "(SELECT id FROM docs WHERE path LIKE '%ui_messages.json')", "element 0 is" },
		{ "DELETE FROM blobs", "its last version is missing" },
		{ "UPDATE elems SET rev_to = rev_from WHERE rev_to IS NOT NULL", "valid from revision" },
		{ "UPDATE docs SET rev = 999 WHERE path LIKE '%task_metadata.json'", "at revision 999, which the log" },
		{ "INSERT INTO elems(doc_id, seq, off, pre, len, json, rev_from) VALUES (77, 0, 1, '', 2, '{}', 1)",
		  "1 elements of doc 77, which does not exist" },
		{ "UPDATE tasks SET workspace_id = 55", "in workspace 55" },
		{ "PRAGMA user_version = 99", "schema: schema version 99, newer than" },
		{ "DROP INDEX elems_cur", "schema: index 'elems_cur' of table 'elems' is missing" },
		{ "UPDATE elems SET dg = zeroblob(16) WHERE seq = 0 AND rev_to IS NULL", "has the digest of other bytes" },
		{ "UPDATE elems SET json = '{\"ts\":9,\"type\":\"say\",\"text\":\"e\"}' WHERE seq = 0 AND rev_to IS NULL AND "
		  "json LIKE '{\"ts\":1,%'", "has the digest of other bytes" },
	};
	struct found f;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct store *st = NULL;

		assert_int_equal(store_open(":memory:", 0, &st), 0);
		fill(st);
		assert_int_equal(check_after(st, NULL, &f), 0);
		assert_int_equal(f.n, 0);
		assert_true(check_after(st, cases[i].sql, &f) >= 1);
		if (!strstr(f.lines, cases[i].want))
			fail_msg("after %s: expected a line with '%s', got:\n%s", cases[i].sql, cases[i].want, f.lines);
		store_free(st);
	}
}

/*
 * The check at mount finds what the schema lacks or has changed (a table,
 * an index, a table's columns), and nothing in a sound store.
 */
static void test_check_mount(void **state)
{
	static const struct {
		const char *sql, *want;
	} cases[] = {
		{ "DROP TABLE blobs", "table 'blobs' is missing" },
		{ "DROP INDEX elems_cur", "index 'elems_cur' of table 'elems' is missing" },
		{ "DROP INDEX docs_parent; CREATE INDEX docs_parent ON tasks(id)", "'docs_parent' is an index of 'tasks', not an index of 'docs'" },
		{ "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = "
		  "'CREATE TABLE meta (key TEXT PRIMARY KEY, val TEXT NOT NULL) WITHOUT ROWID' WHERE name = 'meta'",
		  "table 'meta' has the columns (key, val), not (key, value)" },
	};
	struct found f;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct store *st = NULL;

		assert_int_equal(store_open(":memory:", 0, &st), 0);
		fill(st);
		memset(&f, 0, sizeof(f));
		assert_int_equal(store_check_mount(st, collect, &f), 0);
		assert_int_equal(f.n, 0);
		assert_int_equal(sqlite3_exec(st->db, cases[i].sql, NULL, NULL, NULL), SQLITE_OK);
		/* (a schema rewritten behind SQLite's back is read again by a new connection; here, at once) */
		assert_int_equal(sqlite3_exec(st->db, "PRAGMA writable_schema = RESET", NULL, NULL, NULL), SQLITE_OK);
		assert_true(store_check_mount(st, collect, &f) >= 1);
		if (!strstr(f.lines, cases[i].want))
			fail_msg("after %s: expected a line with '%s', got:\n%s", cases[i].sql, cases[i].want, f.lines);
		store_free(st);
	}
}

static int64_t sql_int(struct store *st, const char *sql)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static int count_plan(void *ctx, const struct store_forget_doc *d)
{
	struct found *f = ctx;
	size_t used = strlen(f->lines);

	f->n++;
	snprintf(f->lines + used, sizeof(f->lines) - used, "%s %lld %lld %lld %d %d\n", d->path,
		 (long long)d->messages, (long long)d->current, (long long)d->versions, d->whole, d->head);
	return 0;
}

#define SECRET "sk-LEAKED-0042"
#define HIST "state/taskHistory.json"

/* A secret in current and older messages and in a whole file's versions leaves every row; the rest stays. */
static void test_forget_match(void **state)
{
	struct store *st = *state;
	struct store_forget f = { .match = SECRET };
	const char *paths[] = { API("1"), UI("1"), META("1") };
	struct store_task_version *v = NULL;
	struct store_snap *held = NULL;
	struct found plan = { 0 }, problems;
	size_t n = 0;
	char *s;

	commit(st, HIST, "[{\"id\":\"1\",\"ts\":1,\"task\":\"key " SECRET "\"},{\"id\":\"2\",\"ts\":2,\"task\":\"b\"}]");
	commit(st, API("1"), "[{\"role\":\"user\",\"content\":\"my key is " SECRET "\"},{\"role\":\"assistant\","
			     "\"content\":\"ok\"}]");
	/* a reader holds the first version, read whole twice: kept (store/read.c), which the forget must drop */
	assert_int_equal(store_snap_open(st, API("1"), &held), 0);
	for (int i = 0; i < 2; i++) {
		s = read_snap(st, held);
		assert_non_null(strstr(s, SECRET));
		free(s);
	}
	commit(st, API("1"), "[{\"role\":\"assistant\",\"content\":\"ok\"}]"); /* the secret only in an older version */
	commit(st, API("1"), "[{\"role\":\"assistant\",\"content\":\"ok\"},{\"role\":\"user\",\"content\":\"" SECRET "\"},"
			     "{\"role\":\"user\",\"content\":\"after\"}]");
	commit(st, META("1"), "{\"k\":\"" SECRET "\"}");
	commit(st, META("1"), "{\"k\":\"clean\"}");
	commit(st, UI("2"), "[{\"ts\":5,\"type\":\"say\",\"text\":\"" SECRET "\"}]");
	assert_int_equal(store_versions(st, paths, 3, &v, &n), 0);

	assert_int_equal(store_forget_plan(st, &f, count_plan, &plan), 4);
	assert_non_null(strstr(plan.lines, HIST " 1 1 0 0 0\n"));
	assert_non_null(strstr(plan.lines, API("1") " 2 1 0 0 0\n"));
	assert_non_null(strstr(plan.lines, META("1") " 0 0 1 0 0\n"));
	assert_non_null(strstr(plan.lines, UI("2") " 1 1 0 0 0\n"));

	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM elems WHERE instr(json, '" SECRET "')"), 0);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM blobs WHERE instr(data, CAST('" SECRET "' AS BLOB))"), 0);
	/* a blanked row keeps no digest of what it held */
	assert_int_equal(sql_int(st, "SELECT count(*) FROM elems WHERE instr(json, 'forgotten') AND dg IS NOT NULL"), 0);
	assert_int_equal(store_forget_plan(st, &f, count_plan, &plan), 0);
	assert_int_equal(check_after(st, NULL, &problems), 0);

	/* the current conversation lost the message, kept the others */
	s = read_at(st, API("1"), INT64_MAX, true);
	assert_string_equal(s, "{\"role\":\"assistant\",\"content\":\"ok\"}\n{\"role\":\"user\",\"content\":\"after\"}\n");
	free(s);
	s = read_at(st, HIST, INT64_MAX, true);
	assert_string_equal(s, "{\"id\":\"2\",\"ts\":2,\"task\":\"b\"}\n");
	free(s);
	/* the first version still has two lines, the first blanked at its length */
	s = read_snap(st, held);
	assert_null(strstr(s, SECRET));
	assert_non_null(strstr(s, "{\"forgotten\":true}    "));
	free(s);
	store_snap_free(held);
	s = read_at(st, API("1"), v[0].rev, true);
	assert_non_null(strstr(s, "{\"forgotten\":true}    "));
	assert_non_null(strstr(s, "\n{\"role\":\"assistant\",\"content\":\"ok\"}\n"));
	free(s);
	/* the metadata's version that held it is gone: that revision reads the one before (none: empty) */
	s = read_at(st, META("1"), v[3].rev, false);
	assert_string_equal(s, "");
	free(s);
	s = read_at(st, META("1"), INT64_MAX, false);
	assert_string_equal(s, "{\"k\":\"clean\"}");
	free(s);
	free(v);
}

/* A forgotten task leaves no doc, row, version, revision or history item; others stay. */
static void test_forget_task(void **state)
{
	struct store *st = *state;
	struct store_forget f = { .task = "1" };
	struct found problems;
	char *s;

	commit(st, HIST, "[{\"id\":\"1\",\"ts\":1,\"task\":\"a\"},{\"id\":\"2\",\"ts\":2,\"task\":\"b\"}]");
	fill(st);
	commit(st, UI("2"), "[{\"ts\":5,\"type\":\"say\"}]");
	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM docs WHERE task_id = '1'"), 0);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM tasks WHERE id = '1'"), 0);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM revisions WHERE path LIKE 'tasks/1/%'"), 0);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM elems WHERE json LIKE '%\"id\":\"1\"%'"), 0);
	assert_int_equal(check_after(st, NULL, &problems), 0);
	s = read_at(st, HIST, INT64_MAX, true);
	assert_string_equal(s, "{\"id\":\"2\",\"ts\":2,\"task\":\"b\"}\n");
	free(s);
	s = read_at(st, UI("2"), INT64_MAX, true);
	assert_string_equal(s, "{\"ts\":5,\"type\":\"say\"}\n");
	free(s);
}

/* Both: only what holds the text in that task; the same text elsewhere stays. */
static void test_forget_match_in_task(void **state)
{
	struct store *st = *state;
	struct store_forget f = { .match = SECRET, .task = "1" };
	char *s;

	commit(st, API("1"), "[{\"role\":\"user\",\"content\":\"" SECRET "\"},{\"role\":\"user\",\"content\":\"x\"}]");
	commit(st, API("2"), "[{\"role\":\"user\",\"content\":\"" SECRET "\"}]");
	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	s = read_at(st, API("1"), INT64_MAX, true);
	assert_string_equal(s, "{\"role\":\"user\",\"content\":\"x\"}\n");
	free(s);
	s = read_at(st, API("2"), INT64_MAX, true);
	assert_string_equal(s, "{\"role\":\"user\",\"content\":\"" SECRET "\"}\n");
	free(s);
	assert_int_equal(sql_int(st, "SELECT count(*) FROM elems WHERE instr(json, '" SECRET "')"), 1);
}

/* A whole file's current version, and a session's own fields, keep their place with the text masked. */
static void test_forget_masks(void **state)
{
	struct store *st = *state;
	struct store_forget f = { .match = SECRET };
	const char *sess = "sessions/1795505492931_y5z6u/1795505492931_y5z6u.messages.json";
	char *s;

	commit(st, META("3"), "{\"k\":\"" SECRET "\"}");
	commit(st, sess, "{\"version\":1,\"system_prompt\":\"use " SECRET "\",\"messages\":[{\"id\":\"a\",\"role\":\"user\","
			 "\"content\":\"hi\"},{\"id\":\"b\",\"role\":\"user\",\"content\":\"" SECRET "\"}]}");
	assert_int_equal(store_forget_run(st, &f, &who, NULL, NULL), 0);
	s = read_at(st, META("3"), INT64_MAX, false);
	assert_string_equal(s, "{\"k\":\"**************\"}");
	free(s);
	{
		struct store_snap *snap = NULL;
		char buf[512] = { 0 };

		assert_int_equal(store_snap_open(st, sess, &snap), 0);
		assert_true(store_snap_read(st, snap, buf, sizeof(buf) - 1, 0) > 0);
		store_snap_free(snap);
		assert_string_equal(buf, "{\"version\":1,\"system_prompt\":\"use **************\",\"messages\":"
					 "[{\"id\":\"a\",\"role\":\"user\",\"content\":\"hi\"}]}");
	}
	assert_int_equal(sql_int(st, "SELECT count(*) FROM docs WHERE instr(head, '" SECRET "')"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_versions, setup, teardown),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_check_mount),
		cmocka_unit_test_setup_teardown(test_forget_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget_match_in_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget_masks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
