/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_glue.c: the store's glue between the merge and the tables, through
 * store.h: merged commits against a writer's base, appends and their line
 * checks, a task's life cycle (create, trash, restore) and what it tells a
 * view that caches where tasks are, the list of workspaces, and a
 * workspace's rewrite of its items, which must never touch another
 * workspace's; and a snapshot's copy. Each test opens a store in memory.
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
#include "store/store_view.h"
#include "store/util.h"
#include "tests/unit/memory_store.h"

#define HISTORY "state/taskHistory.json"
#define UI(id) "tasks/" id "/ui_messages.json"
#define API(id) "tasks/" id "/api_conversation_history.json"

static const struct store_who mine = { .pid = 1001, .comm = "code" };
static const struct store_who theirs = { .pid = 2002, .comm = "cline" };

static int commit(struct store *st, const char *path, const char *json)
{
	return store_doc_commit(st, path, json, strlen(json), &theirs, "write");
}

/* The doc's current content, whole (free()). */
static char *doc_read(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	char *buf;
	ssize_t n;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	buf = calloc(1, (size_t)store_snap_size(snap) + 1);
	assert_non_null(buf);
	n = store_snap_read(st, snap, buf, (size_t)store_snap_size(snap), 0);
	assert_int_equal(n, store_snap_size(snap));
	store_snap_free(snap);
	return buf;
}

static void assert_doc(struct store *st, const char *path, const char *want)
{
	char *got = doc_read(st, path);

	assert_string_equal(got, want);
	free(got);
}

/* What a writer that reads path now will have as its base. */
static struct store_base *base_now(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	struct store_base *b = NULL;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	assert_int_equal(store_base_from_snap(snap, &b), 0);
	store_snap_free(snap);
	return b;
}

/* ---- merged commits ---------------------------------------------------------------- */

#define M(ts, text) "{\"ts\":" #ts ",\"type\":\"say\",\"say\":\"text\",\"text\":\"" text "\"}"

/* A writer that read [a] and wrote [a, b] while another added c keeps c: one merge. */
static void test_merged_commit(void **state)
{
	struct store *st = *state;
	struct store_base *base, *nb = NULL;
	const char *mine_json = "[" M(1, "a") "," M(2, "b") "]";
	struct store_commit c = { .path = UI("100"), .data = mine_json, .len = strlen(mine_json), .who = &mine,
				  .kind = "write", .merge = true };
	bool merged = false;

	assert_int_equal(commit(st, UI("100"), "[" M(1, "a") "]"), 0);
	base = base_now(st, UI("100"));
	assert_int_equal(commit(st, UI("100"), "[" M(1, "a") "," M(3, "c") "]"), 0);
	c.base = base;
	assert_int_equal(store_commit(st, &c, &nb, &merged), 0);
	assert_true(merged);
	assert_non_null(nb);
	assert_doc(st, UI("100"), "[" M(1, "a") "," M(2, "b") "," M(3, "c") "]");
	/* The new base is what was stored: committing it again changes nothing. */
	c.base = nb;
	merged = true;
	assert_int_equal(store_commit(st, &c, NULL, &merged), 0);
	assert_doc(st, UI("100"), "[" M(1, "a") "," M(2, "b") "," M(3, "c") "]");
	store_base_free(base);
	store_base_free(nb);
}

/* Without merge, the content is stored as written, even over others' work. */
static void test_unmerged_commit(void **state)
{
	struct store *st = *state;

	assert_int_equal(commit(st, UI("101"), "[" M(1, "a") "," M(3, "c") "]"), 0);
	assert_int_equal(commit(st, UI("101"), "[" M(1, "a") "]"), 0);
	assert_doc(st, UI("101"), "[" M(1, "a") "]");
}

/* A whole doc cannot be a workspace's items; an unknown path is no doc. */
static void test_commit_refusals(void **state)
{
	struct store *st = *state;
	struct store_commit c = { .path = "tasks/102/task_metadata.json", .data = "{}", .len = 2, .who = &mine,
				  .kind = "write", .ws_key = "" };

	assert_int_equal(store_commit(st, &c, NULL, NULL), -EINVAL);
	c.path = "not/a/doc.json";
	c.ws_key = NULL;
	assert_int_equal(store_commit(st, &c, NULL, NULL), -EINVAL);
	assert_int_equal(commit(st, UI("102"), "{\"not\": \"an array\"}"), -EINVAL);
	assert_int_equal(store_doc_stat(st, UI("102"), &(struct store_stat){ 0 }), -ENOENT);
}

/* A copy of a snapshot reads the version it was taken at, whole, after later commits too. */
static void test_snap_dup(void **state)
{
	const char *v1 = "[" M(1, "a") "," M(2, "b") "]";
	struct store *st = *state;
	struct store_snap *snap = NULL, *dup = NULL;
	char buf[256] = { 0 };

	assert_int_equal(commit(st, UI("103"), v1), 0);
	assert_int_equal(store_snap_open(st, UI("103"), &snap), 0);
	assert_int_equal(store_snap_dup(snap, &dup), 0);
	store_snap_free(snap);
	assert_int_equal(commit(st, UI("103"), "[" M(1, "a") "]"), 0);
	assert_int_equal(store_snap_size(dup), (int64_t)strlen(v1));
	assert_int_equal(store_snap_read(st, dup, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(v1));
	assert_string_equal(buf, v1);
	store_snap_free(dup);
}

/* ---- appends ------------------------------------------------------------------------ */

static void test_append(void **state)
{
	struct store *st = *state;
	struct store_line two[] = { { M(1, "a"), strlen(M(1, "a")) }, { M(2, "b"), strlen(M(2, "b")) } };
	struct store_line bad[] = { { M(3, "c"), strlen(M(3, "c")) }, { "[1]", 3 } };
	struct store_line role = { "{\"role\":\"user\",\"content\":\"hi\"}", 30 };
	struct store_line no_role = { "{\"content\":\"hi\"}", 16 };
	struct store_line torn = { "{\"role\":", 8 };

	/* Appending to a doc that does not exist makes it. */
	assert_int_equal(store_doc_append(st, UI("110"), two, 2, NULL, &mine), 0);
	assert_doc(st, UI("110"), "[" M(1, "a") "," M(2, "b") "]");
	/* One line that is not an object: none of the lines is stored. */
	assert_int_equal(store_doc_append(st, UI("110"), bad, 2, NULL, &mine), -EINVAL);
	assert_doc(st, UI("110"), "[" M(1, "a") "," M(2, "b") "]");
	/* The API stream's lines must have "role". */
	assert_int_equal(store_doc_append(st, API("110"), &no_role, 1, "role", &mine), -EINVAL);
	assert_int_equal(store_doc_append(st, API("110"), &torn, 1, "role", &mine), -EINVAL);
	assert_int_equal(store_doc_stat(st, API("110"), &(struct store_stat){ 0 }), -ENOENT);
	assert_int_equal(store_doc_append(st, API("110"), &role, 1, "role", &mine), 0);
	assert_doc(st, API("110"), "[{\"role\":\"user\",\"content\":\"hi\"}]");
	/* The same check, alone, as a rewrite through the view makes it. */
	assert_int_equal(store_line_check(API("110"), 0, &role, "role"), 0);
	assert_int_equal(store_line_check(API("110"), 0, &no_role, "role"), -EINVAL);
	assert_int_equal(store_line_check(API("110"), 0, &(struct store_line){ "", 0 }, NULL), -EINVAL);
}

/* ---- a task's life cycle -------------------------------------------------------------- */

#define ITEM(id, cwd) "{\"id\":\"" id "\",\"ts\":" id ",\"task\":\"t\",\"cwdOnTaskInitialization\":\"" cwd "\"}"

/* The workspace key the store learned for a task (free()). */
static char *key_of(struct store *st, const char *task)
{
	char *key = NULL;
	bool trashed = true;

	assert_int_equal(store_task_workspace(st, task, &key, &trashed), 0);
	assert_false(trashed);
	assert_non_null(key);
	return key;
}

static void test_task_life_cycle(void **state)
{
	struct store *st = *state;
	uint64_t g0, g1, g2, g3;
	char *key, *k2 = NULL;
	bool trashed = false;

	assert_int_equal(commit(st, HISTORY, "[" ITEM("1700000000001", "/home/dev/a") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000001"), "[" M(1, "a") "]"), 0);
	key = key_of(st, "1700000000001");

	/* mkdir of a task in the workspace's view: empty conversation files, in that workspace. */
	g0 = store_placement_generation(st);
	assert_int_equal(store_task_workspace(st, "1700000000002", &k2, &trashed), -ENOENT); /* asked before: */
	assert_int_equal(store_task_create(st, "1700000000002", key, &mine), 0);
	assert_doc(st, UI("1700000000002"), "[]");
	assert_doc(st, API("1700000000002"), "[]");
	assert_int_equal(store_task_workspace(st, "1700000000002", &k2, &trashed), 0);
	assert_string_equal(k2, key);
	assert_int_equal(store_task_create(st, "1700000000002", key, &mine), -EEXIST);
	g1 = store_placement_generation(st);
	assert_true(g1 != g0);

	/* A change of content moves no task: a view's cache of places holds. */
	assert_int_equal(commit(st, UI("1700000000001"), "[" M(1, "a") "," M(2, "b") "]"), 0);
	assert_true(store_placement_generation(st) == g1);

	/* To the trash: the docs leave the tree, the item leaves the history. */
	free(key_of(st, "1700000000001")); /* asked before, too */
	assert_int_equal(store_task_trash(st, "1700000000001", &mine), 0);
	g2 = store_placement_generation(st);
	assert_true(g2 != g1);
	assert_int_equal(store_doc_stat(st, UI("1700000000001"), &(struct store_stat){ 0 }), -ENOENT);
	assert_doc(st, HISTORY, "[]");
	free(k2);
	k2 = NULL;
	assert_int_equal(store_task_workspace(st, "1700000000001", &k2, &trashed), 0);
	assert_true(trashed);
	assert_int_equal(store_task_trash(st, "1700000000009", &mine), -ENOENT);

	/* And back, with its last content and its item. */
	assert_int_equal(store_task_restore(st, "1700000000001", &mine), 0);
	g3 = store_placement_generation(st);
	assert_true(g3 != g2);
	assert_doc(st, UI("1700000000001"), "[" M(1, "a") "," M(2, "b") "]");
	assert_doc(st, HISTORY, "[" ITEM("1700000000001", "/home/dev/a") "]");
	assert_int_equal(store_task_restore(st, "1700000000001", &mine), -ENOENT);
	free(k2);
	free(key);
}

/* ---- the list of workspaces ------------------------------------------------------------ */

struct ws_seen {
	char key[32];
	int64_t ntasks, first_ns, last_ns;
};

static int ws_collect(void *ctx, const struct store_workspace *ws)
{
	struct ws_seen *v = ctx;

	while (v->key[0])
		v++;
	snprintf(v->key, sizeof(v->key), "%s", ws->key);
	v->ntasks = ws->ntasks;
	v->first_ns = ws->first_ns;
	v->last_ns = ws->last_ns;
	return 0;
}

/*
 * store_workspace_last(), the time of the view's root: the latest last
 * activity of the list, and want.
 */
static void assert_ws_last(struct store *st, int64_t want)
{
	struct ws_seen all[8] = { 0 };
	int64_t max = 0, got = -1;

	assert_int_equal(store_workspace_list(st, ws_collect, all), 0);
	for (size_t i = 0; i < ARRAY_SIZE(all) && all[i].key[0]; i++)
		if (all[i].last_ns > max)
			max = all[i].last_ns;
	assert_int_equal(store_workspace_last(st, &got), 0);
	assert_int_equal(got, max);
	assert_int_equal(got, want);
}

/*
 * A workspace counts its live tasks; its first activity is its oldest task,
 * trashed or not, and its last the last change of a live task's docs. One
 * whose tasks are all in the trash is still listed (a task can go back).
 */
static void test_workspace_list(void **state)
{
	struct store *st = *state;
	struct ws_seen all[4] = { 0 }, one[2] = { 0 };
	struct store_stat live = { 0 };
	char *a, *b;

	assert_int_equal(commit(st, HISTORY, "[" ITEM("1700000000021", "/home/dev/a") "," ITEM("1700000000022", "/home/dev/a")
				     "," ITEM("1700000000023", "/home/dev/b") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000022"), "[" M(1, "older") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000021"), "[" M(1, "a") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000023"), "[" M(1, "b") "]"), 0);
	a = key_of(st, "1700000000021");
	b = key_of(st, "1700000000023");
	/* Changed last, then trashed: its change is no longer the workspace's last. */
	assert_int_equal(commit(st, UI("1700000000022"), "[" M(1, "older") "," M(2, "newer") "]"), 0);
	assert_int_equal(store_task_trash(st, "1700000000022", &mine), 0);
	assert_int_equal(store_task_trash(st, "1700000000023", &mine), 0);
	assert_int_equal(store_doc_stat(st, UI("1700000000021"), &live), 0);

	assert_int_equal(store_workspace_list(st, ws_collect, all), 0);
	assert_string_equal(all[0].key, a);
	assert_int_equal(all[0].ntasks, 1);
	assert_int_equal(all[0].first_ns, 1700000000021LL * 1000000);
	assert_int_equal(all[0].last_ns, live.mtime_ns);
	assert_string_equal(all[1].key, b);
	assert_int_equal(all[1].ntasks, 0);
	assert_int_equal(all[1].first_ns, 1700000000023LL * 1000000);
	assert_int_equal(all[2].key[0], '\0');
	/* Not the trashed task's later change: */
	assert_ws_last(st, live.mtime_ns);

	/* One workspace by its key: the same answer. */
	assert_int_equal(store_workspace_get(st, b, ws_collect, one), 0);
	assert_memory_equal(&one[0], &all[1], sizeof(one[0]));
	assert_int_equal(store_workspace_get(st, "123", ws_collect, one), -ENOENT);

	/* Asked again after each change: the answer of now, not of before. */
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].last_ns, live.mtime_ns);
	assert_int_equal(commit(st, UI("1700000000021"), "[" M(1, "a") "," M(2, "a again") "]"), 0);
	assert_int_equal(store_doc_stat(st, UI("1700000000021"), &live), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].last_ns, live.mtime_ns);
	assert_int_equal(one[0].ntasks, 1);
	/* Its only doc removed, then saved again: a task that goes and comes back. */
	assert_int_equal(store_doc_remove(st, UI("1700000000021"), &mine, "unlink"), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].ntasks, 0);
	assert_int_equal(commit(st, UI("1700000000021"), "[" M(1, "a") "]"), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].ntasks, 1);
	/* A change elsewhere (a task of no workspace) leaves it as it was. */
	assert_int_equal(commit(st, UI("1700000000099"), "[" M(1, "x") "]"), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(commit(st, UI("1700000000099"), "[" M(1, "x") "," M(2, "y") "]"), 0);
	assert_int_equal(store_doc_stat(st, UI("1700000000021"), &live), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].last_ns, live.mtime_ns);
	assert_ws_last(st, live.mtime_ns); /* nor the latest change, of a task of no workspace */
	/* A file of it dated ahead (touch -d): a save of another file of it is not the latest activity. */
	assert_int_equal(commit(st, API("1700000000021"), "[{\"role\":\"user\",\"content\":\"q\"}]"), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(store_doc_set_mtime(st, UI("1700000000021"), 4000000000000000000LL), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].last_ns, 4000000000000000000LL);
	assert_int_equal(commit(st, API("1700000000021"), "[{\"role\":\"user\",\"content\":\"r\"}]"), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].last_ns, 4000000000000000000LL);
	assert_ws_last(st, 4000000000000000000LL);
	assert_int_equal(store_task_trash(st, "1700000000021", &mine), 0);
	memset(one, 0, sizeof(one));
	assert_int_equal(store_workspace_get(st, a, ws_collect, one), 0);
	assert_int_equal(one[0].ntasks, 0);
	assert_ws_last(st, 0); /* every task in the trash */
	/* What every answer above was checked against: the whole list, asked afresh. */
	memset(all, 0, sizeof(all));
	assert_int_equal(store_workspace_list(st, ws_collect, all), 0);
	assert_memory_equal(&one[0], &all[0], sizeof(one[0]));
	free(a);
	free(b);
}

static int task_collect(void *ctx, const char *id, int64_t mtime_ns)
{
	struct sb *sb = ctx;

	(void)mtime_ns;
	return sb_addf(sb, "%s ", id);
}

/* The tasks of a workspace, of none, and in the trash: each its own, and only those. */
static void test_task_list(void **state)
{
	struct store *st = *state;
	_cleanup_sb_ struct sb ka = SB_INIT, kb = SB_INIT, none = SB_INIT, trash = SB_INIT, after = SB_INIT;
	char *a, *b;

	assert_int_equal(commit(st, HISTORY, "[" ITEM("1700000000031", "/home/dev/a") "," ITEM("1700000000032", "/home/dev/b")
				     "," ITEM("1700000000034", "/home/dev/a") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000031"), "[" M(1, "a") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000032"), "[" M(1, "b") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000033"), "[" M(1, "none") "]"), 0);
	assert_int_equal(commit(st, UI("1700000000034"), "[" M(1, "a too") "]"), 0);
	a = key_of(st, "1700000000031");
	b = key_of(st, "1700000000032");
	assert_int_equal(store_task_trash(st, "1700000000034", &mine), 0);

	assert_int_equal(store_task_list(st, a, false, task_collect, &ka), 0);
	assert_string_equal(sb_str(&ka), "1700000000031 ");
	assert_int_equal(store_task_list(st, b, false, task_collect, &kb), 0);
	assert_string_equal(sb_str(&kb), "1700000000032 ");
	assert_int_equal(store_task_list(st, NULL, false, task_collect, &none), 0);
	assert_string_equal(sb_str(&none), "1700000000033 ");
	assert_int_equal(store_task_list(st, NULL, true, task_collect, &trash), 0);
	assert_string_equal(sb_str(&trash), "1700000000034 ");
	assert_int_equal(store_task_list(st, "123", false, task_collect, &after), 0);
	assert_string_equal(sb_str(&after), "");
	free(a);
	free(b);
}

/* ---- a workspace's items ------------------------------------------------------------- */

/*
 * A workspace's history is its tasks' items, in the history's order, and
 * nothing else: not another workspace's, not a trashed task's; the items
 * of no workspace (no cwd) are their own. (Its query starts from the
 * workspace's tasks: the order of the rows must be the history's anyway.)
 */
static void test_workspace_items(void **state)
{
	struct store *st = *state;
	const char *all = "[" ITEM("1700000000023", "/home/dev/a") "," ITEM("1700000000021", "/home/dev/b") ","
			  ITEM("1700000000022", "/home/dev/a") ","
			  "{\"id\":\"1700000000024\",\"ts\":1700000000024,\"task\":\"t\"}" ","
			  ITEM("1700000000025", "/home/dev/a") "]";
	char *a, *view = NULL;
	size_t len = 0;

	assert_int_equal(commit(st, HISTORY, all), 0);
	for (const char *const *id = (const char *const[]){ "1700000000021", "1700000000022", "1700000000023",
							     "1700000000024", "1700000000025", NULL };
	     *id; id++) {
		char path[64];

		snprintf(path, sizeof(path), "tasks/%s/ui_messages.json", *id);
		assert_int_equal(commit(st, path, "[]"), 0);
	}
	a = key_of(st, "1700000000023");
	assert_int_equal(store_task_trash(st, "1700000000025", &mine), 0);
	assert_int_equal(store_history_render_ws(st, a, &view, &len, NULL, NULL), 0);
	assert_string_equal(view, "[" ITEM("1700000000023", "/home/dev/a") "," ITEM("1700000000022", "/home/dev/a") "]");
	assert_int_equal(len, strlen(view));
	free(view);
	assert_int_equal(store_history_render_ws(st, NULL, &view, &len, NULL, NULL), 0);
	assert_string_equal(view, "[{\"id\":\"1700000000024\",\"ts\":1700000000024,\"task\":\"t\"}]");
	free(view);
	free(a);
}

/* A rewrite of workspace A's items removes and adds A's, and never touches B's. */
static void test_workspace_rewrite(void **state)
{
	struct store *st = *state;
	const char *all = "[" ITEM("1700000000011", "/home/dev/a") "," ITEM("1700000000012", "/home/dev/b") ","
			  ITEM("1700000000013", "/home/dev/a") "]";
	const char *a_new = "[" ITEM("1700000000013", "/home/dev/a") "," ITEM("1700000000014", "/home/dev/a") "]";
	struct store_commit c = { .path = HISTORY, .data = a_new, .len = strlen(a_new), .who = &mine,
				  .kind = "merge", .merge = true };
	char *a, *view = NULL;
	size_t len = 0;
	int64_t mtime, rev;

	assert_int_equal(commit(st, HISTORY, all), 0);
	assert_int_equal(commit(st, UI("1700000000011"), "[]"), 0);
	a = key_of(st, "1700000000011");
	/* What the view showed of workspace A: the base of its rewrite. */
	assert_int_equal(store_history_render_ws(st, a, &view, &len, &mtime, &rev), 0);
	assert_non_null(strstr(view, "1700000000011"));
	assert_null(strstr(view, "1700000000012"));
	assert_int_equal(store_base_at(st, HISTORY, rev, (struct store_base **)&c.base), 0);
	c.ws_key = a;
	assert_int_equal(store_commit(st, &c, NULL, NULL), 0);
	assert_doc(st, HISTORY,
		   "[" ITEM("1700000000012", "/home/dev/b") "," ITEM("1700000000013", "/home/dev/a") ","
		   ITEM("1700000000014", "/home/dev/a") "]");
	store_base_free((struct store_base *)c.base);
	free(view);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merged_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmerged_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snap_dup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_life_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workspace_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workspace_rewrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workspace_items, setup, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
