/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_history.c: what `convfs status`, `log` and `restore` ask of the store
 * (store_history.h), on a store in memory: the summary (tasks and sessions
 * told apart, the trash, the last commit), a doc's versions newest first
 * with their numbers, writers, kinds and sizes (appends and whole docs
 * included), what a merge kept from whom, and a restore: one commit of kind
 * "restore", not merged, of exactly that version; refused for the live
 * version, an unknown number or doc, and a read-only store. The numbers a
 * task's files share: each file's log numbered among the saves of all of
 * them, as store_versions() numbers them, and a restore by such a number.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/store_history.h"
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/memory_store.h"

#define UI(id) "tasks/" id "/ui_messages.json"
#define META(id) "tasks/" id "/task_metadata.json"
#define API(id) "tasks/" id "/api_conversation_history.json"
/* A doc numbered alone: the set of docs that share its numbering is itself. */
#define ALONE(path) (const char *const[]){ path }, 1
#define M(ts, text) "{\"ts\":" #ts ",\"type\":\"say\",\"say\":\"text\",\"text\":\"" text "\"}"

static const struct store_who mine = { .pid = 1001, .comm = "code" };
static const struct store_who theirs = { .pid = 2002, .comm = "cline" };

static int commit(struct store *st, const char *path, const char *json, const struct store_who *who)
{
	return store_doc_commit(st, path, json, strlen(json), who, "write");
}

static char *doc_read(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	char *buf;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	buf = calloc(1, (size_t)store_snap_size(snap) + 1);
	assert_non_null(buf);
	assert_int_equal(store_snap_read(st, snap, buf, (size_t)store_snap_size(snap), 0), store_snap_size(snap));
	store_snap_free(snap);
	return buf;
}

static void assert_doc(struct store *st, const char *path, const char *want)
{
	char *got = doc_read(st, path);

	assert_string_equal(got, want);
	free(got);
}

/* The versions as the callback got them, copied. */
struct seen {
	size_t n;
	struct store_version v[16];
	char kind[16][16], comm[16][16], with_comm[16][16];
};

static int collect(void *ctx, const struct store_version *v)
{
	struct seen *s = ctx;

	assert_true(s->n < ARRAY_SIZE(s->v));
	s->v[s->n] = *v;
	snprintf(s->kind[s->n], sizeof(s->kind[0]), "%s", v->kind);
	snprintf(s->comm[s->n], sizeof(s->comm[0]), "%s", v->comm ? v->comm : "-");
	snprintf(s->with_comm[s->n], sizeof(s->with_comm[0]), "%s", v->with_comm ? v->with_comm : "-");
	s->n++;
	return 0;
}

static void test_summary(void **state)
{
	struct store *st = *state;
	struct store_summary s = { 0 };
	const char *sess = "sessions/1763560000000_ab12c/1763560000000_ab12c.messages.json";
	const char *sess_json = "{\"version\":1,\"messages\":[{\"id\":\"m1\",\"role\":\"user\"}]}";

	assert_int_equal(store_summary_get(st, &s), 0);
	assert_int_equal(s.tasks + s.sessions + s.trashed + s.revisions + s.last_rev, 0);
	assert_null(s.last_path);
	assert_int_equal(s.schema, store_schema_version());
	store_summary_release(&s);

	assert_int_equal(commit(st, UI("1"), "[" M(1, "a") "]", &mine), 0);
	assert_int_equal(commit(st, UI("2"), "[" M(1, "a") "]", &mine), 0);
	assert_int_equal(store_doc_commit(st, sess, sess_json, strlen(sess_json), &theirs, "write"), 0);
	assert_int_equal(store_task_trash(st, "2", &mine), 0);
	assert_int_equal(commit(st, UI("1"), "[" M(1, "a") "," M(2, "b") "]", &theirs), 0);
	assert_int_equal(store_summary_get(st, &s), 0);
	assert_int_equal(s.tasks, 1);
	assert_int_equal(s.sessions, 1);
	assert_int_equal(s.trashed, 1);
	assert_int_equal(s.docs, 2);
	assert_int_equal(s.revisions, 5);
	assert_int_equal(s.last_rev, 5);
	assert_string_equal(s.last_path, UI("1"));
	assert_string_equal(s.last_kind, "write");
	assert_int_equal(s.last_pid, 2002);
	assert_string_equal(s.last_comm, "cline");
	assert_true(s.last_time_ns > 0);
	store_summary_release(&s);
	store_summary_release(NULL);
}

/* Newest first, numbered from the oldest; who, kind and size of each; removals are no version. */
static void test_versions(void **state)
{
	struct store *st = *state;
	struct store_line line = { M(3, "c"), strlen(M(3, "c")) };
	struct seen s = { 0 };
	const char *v1 = "[" M(1, "a") "]", *v2 = "[" M(1, "a") "," M(2, "b") "]";

	assert_int_equal(store_doc_versions(st, UI("7"), ALONE(UI("7")), collect, &s), -ENOENT);
	assert_int_equal(store_doc_create(st, UI("7"), &mine), 0); /* open(O_CREAT): no version yet */
	assert_int_equal(commit(st, UI("7"), v1, &mine), 0);
	/* Through the merge, storing what was written: a plain write, without a merge's counts. */
	assert_int_equal(store_commit(st, &(struct store_commit){ .path = UI("7"), .data = v2, .len = strlen(v2),
								  .who = &theirs, .kind = "write", .merge = true },
				      NULL, NULL), 0);
	assert_int_equal(store_doc_append(st, UI("7"), &line, 1, NULL, &mine), 0);
	assert_int_equal(commit(st, UI("8"), "[]", &mine), 0); /* another doc: not listed */
	assert_int_equal(store_doc_remove(st, UI("7"), &mine, "unlink"), 0);
	assert_int_equal(store_doc_versions(st, UI("7"), ALONE(UI("7")), collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.v[0].number, 3);
	assert_string_equal(s.kind[0], "append");
	assert_int_equal(s.v[0].size, (int64_t)strlen(v2) + 1 + (int64_t)strlen(M(3, "c")));
	assert_int_equal(s.v[0].pid, 1001);
	assert_string_equal(s.comm[0], "code");
	assert_int_equal(s.v[1].number, 2);
	assert_string_equal(s.kind[1], "write");
	assert_int_equal(s.v[1].size, (int64_t)strlen(v2));
	assert_string_equal(s.comm[1], "cline");
	assert_int_equal(s.v[2].number, 1);
	assert_int_equal(s.v[2].size, (int64_t)strlen(v1));
	assert_true(s.v[2].rev < s.v[1].rev && s.v[1].rev < s.v[0].rev);
	assert_true(s.v[2].time_ns <= s.v[0].time_ns);
	assert_int_equal(s.v[0].from_writer, -1); /* not a merge */
	assert_int_equal(s.v[1].from_writer, -1);
	assert_int_equal(s.v[0].with_rev, 0);

	/* A whole doc: its sizes are its blobs'. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(commit(st, META("7"), "{\"files_in_context\":[]}", &mine), 0);
	assert_int_equal(store_doc_versions(st, META("7"), ALONE(META("7")), collect, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].size, (int64_t)strlen("{\"files_in_context\":[]}"));
}

/*
 * A merge says what it kept from the writer and from whom it kept the rest,
 * that version by its number among the task's (an api save came between).
 */
static void test_merge_detail(void **state)
{
	struct store *st = *state;
	const char *mine_json = "[" M(1, "a") "," M(2, "b") "]";
	struct store_commit c = { .path = UI("9"), .data = mine_json, .len = strlen(mine_json), .who = &mine,
				  .kind = "write", .merge = true };
	const char *const task[] = { UI("9"), API("9") };
	struct store_snap *snap = NULL;
	struct store_base *base = NULL;
	struct seen s = { 0 };
	bool merged = false;

	assert_int_equal(commit(st, UI("9"), "[" M(1, "a") "]", &mine), 0);
	assert_int_equal(store_snap_open(st, UI("9"), &snap), 0);
	assert_int_equal(store_base_from_snap(snap, &base), 0);
	store_snap_free(snap);
	assert_int_equal(commit(st, API("9"), "[]", &mine), 0);
	assert_int_equal(commit(st, UI("9"), "[" M(1, "a") "," M(3, "c") "]", &theirs), 0);
	c.base = base;
	assert_int_equal(store_commit(st, &c, NULL, &merged), 0);
	assert_true(merged);
	store_base_free(base);
	assert_int_equal(store_doc_versions(st, UI("9"), task, 2, collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.v[0].number, 4);
	assert_string_equal(s.kind[0], "merge");
	assert_int_equal(s.v[0].from_writer, 1);  /* b */
	assert_int_equal(s.v[0].kept_stored, 2);  /* a, and c */
	assert_int_equal(s.v[0].others_kept, 1);  /* c, which the writer never saw */
	assert_int_equal(s.v[0].removed, 0);
	assert_int_equal(s.v[0].with_rev, s.v[1].rev);
	assert_int_equal(s.v[0].with_pid, 2002);
	assert_int_equal(s.v[0].with_number, 3);
	assert_string_equal(s.with_comm[0], "cline");
	assert_int_equal(s.v[0].size, (int64_t)strlen("[" M(1, "a") "," M(2, "b") "," M(3, "c") "]"));
}

/* A restore: that version, as one unmerged commit of kind "restore". */
static void test_restore(void **state)
{
	struct store *st = *state;
	const char *v1 = "[" M(1, "a") "]", *v3 = "[" M(1, "a") "," M(2, "b") "," M(3, "c") "]";
	struct seen s = { 0 };
	int64_t rev = 0;

	assert_int_equal(commit(st, UI("5"), v1, &mine), 0);
	assert_int_equal(commit(st, UI("5"), "[" M(1, "a") "," M(2, "b") "]", &theirs), 0);
	assert_int_equal(commit(st, UI("5"), v3, &theirs), 0);
	assert_int_equal(store_doc_restore(st, UI("5"), ALONE(UI("5")), 1, &mine, &rev), 0);
	assert_doc(st, UI("5"), v1);
	assert_int_equal(store_doc_versions(st, UI("5"), ALONE(UI("5")), collect, &s), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.kind[0], "restore");
	assert_int_equal(s.v[0].rev, rev);
	assert_int_equal(s.v[0].restored, 1);
	assert_int_equal(s.v[0].size, (int64_t)strlen(v1));
	assert_string_equal(s.comm[0], "code");
	assert_int_equal(s.v[1].restored, 0);
	/* Forward again: the newest is a version like any other. */
	assert_int_equal(store_doc_restore(st, UI("5"), ALONE(UI("5")), 3, &mine, NULL), 0);
	assert_doc(st, UI("5"), v3);
	/* The live version, a number it does not have, a doc it does not have. */
	assert_int_equal(store_doc_restore(st, UI("5"), ALONE(UI("5")), 5, &mine, NULL), -EALREADY);
	assert_int_equal(store_doc_restore(st, UI("5"), ALONE(UI("5")), 6, &mine, NULL), -ENOENT);
	assert_int_equal(store_doc_restore(st, UI("5"), ALONE(UI("5")), 0, &mine, NULL), -ENOENT);
	assert_int_equal(store_doc_restore(st, UI("6"), ALONE(UI("6")), 1, &mine, NULL), -ENOENT);

	/* A whole doc. */
	assert_int_equal(commit(st, META("5"), "{\"a\":1}", &mine), 0);
	assert_int_equal(commit(st, META("5"), "{\"a\":2}", &mine), 0);
	assert_int_equal(store_doc_restore(st, META("5"), ALONE(META("5")), 1, &theirs, NULL), 0);
	assert_doc(st, META("5"), "{\"a\":1}");
}

/*
 * A task's files share one numbering, the one of its versions/: each file's
 * log has the numbers of the saves that were its own (they skip), and a
 * restore of number n brings the file back as it stood after save n,
 * whichever file that save was of.
 */
static void test_numbering_across_docs(void **state)
{
	struct store *st = *state;
	const char *const task[] = { API("3"), UI("3") };
	const char *a1 = "[{\"role\":\"user\",\"content\":\"a\"}]";
	const char *a3 = "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]";
	const char *a5 = "[{\"role\":\"user\",\"content\":\"c\"}]";
	struct store_task_version *all = NULL;
	struct seen s = { 0 };
	size_t n = 0;

	assert_int_equal(store_doc_create(st, UI("3"), &mine), 0);  /* no version */
	assert_int_equal(commit(st, API("3"), a1, &mine), 0);        /* 1 */
	assert_int_equal(commit(st, UI("3"), "[" M(1, "a") "]", &mine), 0); /* 2 */
	assert_int_equal(commit(st, UI("4"), "[" M(1, "x") "]", &mine), 0); /* another task: not numbered */
	assert_int_equal(commit(st, API("3"), a3, &mine), 0);        /* 3 */
	assert_int_equal(commit(st, UI("3"), "[" M(1, "a") "," M(2, "b") "]", &mine), 0); /* 4 */
	assert_int_equal(commit(st, API("3"), a5, &theirs), 0);      /* 5 */

	assert_int_equal(store_doc_versions(st, API("3"), task, 2, collect, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.v[0].number, 5);
	assert_int_equal(s.v[1].number, 3);
	assert_int_equal(s.v[2].number, 1);
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_doc_versions(st, UI("3"), task, 2, collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v[0].number, 4);
	assert_int_equal(s.v[1].number, 2);
	/* The same numbering as versions/'s: version k is the k-th of the task's list. */
	assert_int_equal(store_versions(st, task, 2, &all, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(all[3].rev, s.v[0].rev);
	assert_int_equal(all[1].rev, s.v[1].rev);
	free(all);
	/* A file alone keeps its own numbering; a file outside the set it is given has none. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_doc_versions(st, UI("3"), ALONE(UI("3")), collect, &s), 0);
	assert_int_equal(s.v[0].number, 2);
	assert_int_equal(store_doc_versions(st, UI("4"), task, 2, collect, &s), -EINVAL);

	/* 4 was a save of the ui messages: the api messages come back as they stood then, as of 3. */
	assert_int_equal(store_doc_restore(st, API("3"), task, 2, 4, &mine, NULL), 0);
	assert_doc(st, API("3"), a3);
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_doc_versions(st, API("3"), task, 2, collect, &s), 0);
	assert_int_equal(s.v[0].number, 6);
	assert_int_equal(s.v[0].restored, 4);
	assert_string_equal(s.kind[0], "restore");
	/* Before the file's first version, past the last, and what is live already. */
	assert_int_equal(store_doc_restore(st, UI("3"), task, 2, 1, &mine, NULL), -ENOENT);
	assert_int_equal(store_doc_restore(st, API("3"), task, 2, 7, &mine, NULL), -ENOENT);
	assert_int_equal(store_doc_restore(st, API("3"), task, 2, 3, &mine, NULL), -EALREADY);
	assert_int_equal(store_doc_restore(st, UI("3"), task, 2, 5, &mine, NULL), -EALREADY);
	assert_int_equal(store_doc_restore(st, API("3"), task, 2, 2, &mine, NULL), 0);
	assert_doc(st, API("3"), a1);
}

/* A session's messages come back between the head and tail it has now. */
static void test_restore_session(void **state)
{
	struct store *st = *state;
	const char *path = "sessions/1763560000000_ab12c/1763560000000_ab12c.messages.json";
	const char *v1 = "{\n  \"version\": 1,\n  \"messages\": [\n    {\"id\": \"m1\"}\n  ]\n}\n";
	const char *v2 = "{\n  \"version\": 1,\n  \"messages\": [\n    {\"id\": \"m1\"},\n    {\"id\": \"m2\"}\n  ]\n}\n";

	assert_int_equal(store_doc_commit(st, path, v1, strlen(v1), &mine, "write"), 0);
	assert_int_equal(store_doc_commit(st, path, v2, strlen(v2), &mine, "write"), 0);
	assert_int_equal(store_doc_restore(st, path, ALONE(path), 1, &mine, NULL), 0);
	assert_doc(st, path, v1);
}

/* A read-only store restores nothing. */
static void test_restore_readonly(void **state)
{
	char dir[] = "/tmp/convfs-test-history.XXXXXX", path[64];
	struct store *st = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_int_equal(commit(st, UI("1"), "[" M(1, "a") "]", &mine), 0);
	assert_int_equal(commit(st, UI("1"), "[]", &mine), 0);
	store_free(st);
	assert_int_equal(store_open(path, STORE_OPEN_READONLY, &st), 0);
	assert_int_equal(store_doc_restore(st, UI("1"), ALONE(UI("1")), 1, &mine, NULL), -EROFS);
	assert_doc(st, UI("1"), "[]");
	store_free(st);
	remove_store_file(dir, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_versions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_detail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_numbering_across_docs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_session, setup, teardown),
		cmocka_unit_test(test_restore_readonly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
