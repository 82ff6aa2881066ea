/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_seen.c: what the store last saw of the folder underneath (store/seen.c),
 * and the store calls the take-in (fs/backing/import.c) makes of it: a doc changed on
 * both sides merged against the version taken in last time.
 *
 * Most tests use a :memory: store; the migration tests build a schema-4 store
 * in a file with schema.c's own migrations, as an older convfs left it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/search.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "store/util.h"
#include "tests/unit/memory_store.h"

#define UI "tasks/1/ui_messages.json"
#define HISTORY "state/taskHistory.json"

static const struct store_who mount_who = { .pid = 4242, .comm = "code" };
static const struct store_who import_who = { .pid = 0, .comm = "convfs-import" };

static int64_t db_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

/* The doc at path, read whole through a snapshot (free()). */
static char *doc_read(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	struct sb sb = SB_INIT;
	char buf[4096];
	ssize_t n;
	off_t off = 0;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	while ((n = store_snap_read(st, snap, buf, sizeof(buf), off)) > 0) {
		assert_int_equal(sb_add(&sb, buf, (size_t)n), 0);
		off += n;
	}
	assert_int_equal(n, 0);
	store_snap_free(snap);
	return sb.buf ? sb_detach(&sb, NULL) : strdup("");
}

/* The folder these tests' rows are of: /home/dev/gs, device 1, inode 2, born at 3. */
static void use_folder(struct store *st)
{
	bool taken;

	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 1, 2, 3, &taken), 0);
}

static int setup_seen(void **state)
{
	if (setup(state) < 0)
		return -1;
	use_folder(*state);
	return 0;
}

static void put(struct store *st, const char *path, uint32_t type, int64_t size, int64_t rev)
{
	struct store_seen e = { .path = (char *)path, .type = type, .size = size, .mtime_ns = size * 1000,
				.ino = (uint64_t)size + 7, .rev = rev };

	assert_int_equal(store_seen_put(st, &e), 0);
}

/* Rows come back sorted by path in strcmp order, whatever order they were put in. */
static void test_load_sorted_and_find(void **state)
{
	struct store *st = *state;
	struct store_seen_set set = { 0 };
	/* '-' sorts before '/': a folder's children need not follow it at once, find() must not care. */
	static const char *const order[] = { "a", "a-b", "a/b", "a/c", "state", "state/taskHistory.json", "z" };
	const struct store_seen *e;

	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, 0);
	assert_null(store_seen_find(&set, "a"));
	store_seen_set_release(&set);

	put(st, "z", S_IFREG, 1, 0);
	put(st, "state/taskHistory.json", S_IFREG, 2, 17);
	put(st, "a/c", S_IFREG, 3, 0);
	put(st, "a", S_IFDIR, 4, 0);
	put(st, "state", S_IFDIR, 5, 0);
	put(st, "a/b", S_IFLNK, 6, 0);
	put(st, "a-b", S_IFREG, 7, 0);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, ARRAY_SIZE(order));
	for (size_t i = 0; i < set.n; i++) {
		assert_string_equal(set.v[i].path, order[i]);
		assert_ptr_equal(store_seen_find(&set, order[i]), &set.v[i]);
	}
	assert_null(store_seen_find(&set, "a/"));
	assert_null(store_seen_find(&set, "b"));
	e = store_seen_find(&set, "state/taskHistory.json");
	assert_non_null(e);
	assert_int_equal(e->type, S_IFREG);
	assert_int_equal(e->size, 2);
	assert_int_equal(e->mtime_ns, 2000);
	assert_int_equal(e->ino, 9);
	assert_int_equal(e->rev, 17);
	assert_false(e->gone);
	e = store_seen_find(&set, "a/b");
	assert_int_equal(e->type, S_IFLNK);
	assert_int_equal(e->rev, 0);
	store_seen_set_release(&set);
	store_seen_set_release(&set); /* released twice: nothing left to free */
	store_seen_set_release(NULL);
}

/* Paths of a set, joined by spaces (free()). */
static char *paths_of(const struct store_seen_set *set)
{
	struct sb sb = SB_INIT;

	for (size_t i = 0; i < set->n; i++)
		assert_int_equal(sb_addf(&sb, "%s%s", i ? " " : "", set->v[i].path), 0);
	return sb.buf ? sb_detach(&sb, NULL) : strdup("");
}

/*
 * The top level alone, and one entry with all below it: what a mount looks at
 * before it answers, and what a request looks at for its own task folder.
 * '-', '.' sort before '/' and '0' after it: the ranges must not take them.
 */
static void test_load_top_and_below(void **state)
{
	struct store *st = *state;
	struct store_seen_set set = { 0 };
	_cleanup_free_ char *top = NULL, *below = NULL, *none = NULL, *leaf = NULL;
	static const char *const paths[] = { "a", "a-b", "a.json", "a/b", "a/b/c", "a/c", "a0", "b/orphan",
					     "tasks", "tasks/1", "tasks/1/ui.json", "tasks/10", "tasks/10/x", "tasks/1-x" };

	assert_int_equal(store_seen_load_top(st, &set), 0);
	assert_int_equal(set.n, 0);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		put(st, paths[i], strchr(paths[i], '.') ? S_IFREG : S_IFDIR, (int64_t)i + 1, 0);
	assert_int_equal(store_seen_load_top(st, &set), 0);
	top = paths_of(&set);
	/* "b/orphan" has no row of its folder: nothing of b is at the top. */
	assert_string_equal(top, "a a-b a.json a0 tasks");
	assert_int_equal(set.v[4].size, 9);
	store_seen_set_release(&set);
	assert_int_equal(store_seen_load_below(st, "tasks/1", &set), 0);
	below = paths_of(&set);
	assert_string_equal(below, "tasks/1 tasks/1/ui.json");
	store_seen_set_release(&set);
	assert_int_equal(store_seen_load_below(st, "a/b/c", &set), 0);
	leaf = paths_of(&set);
	assert_string_equal(leaf, "a/b/c");
	store_seen_set_release(&set);
	assert_int_equal(store_seen_load_below(st, "tasks/2", &set), 0);
	none = paths_of(&set);
	assert_string_equal(none, "");
	store_seen_set_release(&set);
}

/* More rows than one piece of the load (4096): all come back, in order, once. */
static void test_load_in_pieces(void **state)
{
	struct store *st = *state;
	struct store_seen_set set = { 0 };
	char path[32];

	assert_int_equal(store_batch_begin(st), 0);
	for (int i = 0; i < 10000; i++) {
		snprintf(path, sizeof(path), "tasks/%05d", i);
		put(st, path, S_IFDIR, i + 1, 0);
	}
	assert_int_equal(store_batch_end(st), 0);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, 10000);
	for (int i = 0; i < 10000; i++) {
		snprintf(path, sizeof(path), "tasks/%05d", i);
		assert_string_equal(set.v[i].path, path);
	}
	store_seen_set_release(&set);
}

/* A put replaces the row; gone is set by mark_gone and cleared by the next put. */
static void test_replace_and_gone(void **state)
{
	struct store *st = *state;
	struct store_seen_set set = { 0 };

	put(st, UI, S_IFREG, 10, 3);
	put(st, UI, S_IFREG, 20, 5);
	assert_int_equal(store_seen_mark_gone(st, UI), 0);
	assert_int_equal(store_seen_mark_gone(st, "tasks/2/ui_messages.json"), -ENOENT);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.v[0].size, 20);
	assert_int_equal(set.v[0].rev, 5);
	assert_true(set.v[0].gone);
	store_seen_set_release(&set);

	put(st, UI, S_IFREG, 30, 0);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_false(set.v[0].gone);
	assert_int_equal(set.v[0].rev, 0); /* stored as NULL, read as 0 */
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM underneath WHERE rev IS NULL"), 1);
	store_seen_set_release(&set);
}

/* An inode number past INT64_MAX (some filesystems) survives the signed column. */
static void test_large_inode(void **state)
{
	struct store *st = *state;
	struct store_seen_set set = { 0 };
	struct store_seen e = { .path = (char *)"f", .type = S_IFREG, .ino = UINT64_MAX - 1, .mtime_ns = -5 };

	assert_int_equal(store_seen_put(st, &e), 0);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.v[0].ino, UINT64_MAX - 1);
	assert_int_equal(set.v[0].mtime_ns, -5); /* a file dated before 1970 */
	store_seen_set_release(&set);
}

static int commit(struct store *st, const char *path, const char *json)
{
	return store_doc_commit(st, path, json, strlen(json), &mount_who, "write");
}

static int take_in(struct store *st, const char *path, const char *json, const struct store_base *base,
		   bool *ret_merged)
{
	struct store_commit c = { .path = path, .data = json, .len = strlen(json), .who = &import_who,
				  .kind = "import", .merge = true, .base = base };

	return store_commit(st, &c, NULL, ret_merged);
}

/*
 * The take-in's merge: base = the revision that took the file in last time.
 * What the store gained since (through the mount) stays, what was written
 * underneath is added; the result differs from the file (merged).
 */
static void test_merge_against_last_take_in(void **state)
{
	struct store *st = *state;
	struct store_base *base = NULL;
	struct store_stat s;
	_cleanup_free_ char *got = NULL, *hist = NULL;
	bool merged = true;
	int64_t taken;

	/* First take-in: the store holds exactly the file. */
	assert_int_equal(take_in(st, UI, "[{\"ts\":1},{\"ts\":2}]", NULL, &merged), 0);
	assert_false(merged);
	assert_int_equal(store_doc_stat(st, UI, &s), 0);
	taken = s.rev;
	/* Through the mount: a message appended. */
	assert_int_equal(commit(st, UI, "[{\"ts\":1},{\"ts\":2},{\"ts\":4}]"), 0);
	/* Underneath, offline: another one. */
	assert_int_equal(store_base_at(st, UI, taken, &base), 0);
	assert_int_equal(take_in(st, UI, "[{\"ts\":1},{\"ts\":2},{\"ts\":3}]", base, &merged), 0);
	store_base_free(base);
	assert_true(merged);
	got = doc_read(st, UI);
	assert_string_equal(got, "[{\"ts\":1},{\"ts\":2},{\"ts\":3},{\"ts\":4}]");

	/* A new file underneath (no base) is merged into what the store has: nothing of it removed. */
	assert_int_equal(commit(st, HISTORY, "[{\"id\":\"1\"},{\"id\":\"2\"}]"), 0);
	assert_int_equal(take_in(st, HISTORY, "[{\"id\":\"3\"}]", NULL, &merged), 0);
	assert_true(merged);
	hist = doc_read(st, HISTORY);
	assert_string_equal(hist, "[{\"id\":\"1\"},{\"id\":\"2\"},{\"id\":\"3\"}]");
}

/* A read-only store refuses writes up front, and says it is read-only. */
static void test_readonly(void **state)
{
	char dir[] = "/tmp/convfs-seen-XXXXXX", path[64];
	struct store *st = NULL;
	struct store_seen_set set = { 0 };

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_false(store_is_readonly(st));
	use_folder(st);
	put(st, "a", S_IFREG, 1, 0);
	store_free(st);
	assert_int_equal(store_open(path, STORE_OPEN_READONLY, &st), 0);
	assert_true(store_is_readonly(st));
	use_folder(st);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, 1);
	assert_int_equal(store_seen_put(st, &set.v[0]), -EROFS);
	assert_int_equal(store_seen_mark_gone(st, "a"), -EROFS);
	assert_int_equal(store_seen_legacy_done(st), -EROFS);
	store_seen_set_release(&set);
	store_free(st);
	remove_store_file(dir, path);
}

/*
 * A schema-4 store that took its folder in (meta imported_from) gets the time
 * of that import at migration; one that never took one in gets none.
 */
static void make_v4_store(const char *path, bool imported)
{
	struct store *st = NULL;
	sqlite3 *db = NULL;
	char *sql;

	/* A store of this build, taken back to schema 4 as an older convfs left it. */
	assert_int_equal(store_open(path, 0, &st), 0);
	store_free(st);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(search_register(db), 0); /* to drop the search index, which names its tokenizer */
	sql = sqlite3_mprintf("DROP TABLE underneath; DROP TABLE folders; DROP TABLE plain_changes; DROP INDEX revisions_doc; DROP INDEX elems_cur; DROP INDEX tasks_workspace;"
			      "DROP INDEX docs_mtime; DROP TABLE search; DROP VIEW search_text; DELETE FROM meta WHERE key = 'search_cursor';"
			      "DROP TABLE sync_touch; DROP TABLE sync_docs; DROP TABLE sync_seen; DROP TABLE sync_applied;"
			      "PRAGMA user_version = 4;"
			      "INSERT INTO revisions(id, time_ns, path, kind) VALUES (1, 5000, %Q, 'import');"
			      "INSERT INTO revisions(id, time_ns, path, kind) VALUES (2, 4000, 'state/x.json', 'import-damaged');"
			      "INSERT INTO revisions(id, time_ns, path, kind) VALUES (3, 9000, %Q, 'write');"
			      "INSERT INTO revisions(id, time_ns, path, kind) VALUES (4, 9500, %Q, 'import');"
			      "%s",
			      UI, UI, UI, imported ? "INSERT INTO meta VALUES ('imported_from', '/home/dev/gs');" : "");
	assert_non_null(sql);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_free(sql);
	sqlite3_close(db);
}

static void test_migrate_legacy(void **state)
{
	char dir[] = "/tmp/convfs-seen-XXXXXX", path[64];
	struct store *st = NULL;
	struct store_seen_set set = { 0 };
	int64_t ns = -1;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	make_v4_store(path, true);
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_int_equal(db_int(st->db, "PRAGMA user_version"), store_schema_version());
	assert_int_equal(store_seen_legacy(st, &ns), 0);
	assert_int_equal(ns, 4000); /* the first import */
	use_folder(st);
	assert_int_equal(store_seen_load_imports(st, &set), 0);
	assert_int_equal(set.n, 2);
	assert_string_equal(set.v[0].path, "state/x.json");
	assert_int_equal(set.v[0].rev, 2);
	assert_string_equal(set.v[1].path, UI);
	assert_int_equal(set.v[1].rev, 4); /* the last import of it, not a write */
	store_seen_set_release(&set);
	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, 0);
	store_seen_set_release(&set);
	assert_int_equal(store_seen_legacy_done(st), 0);
	assert_int_equal(store_seen_legacy(st, &ns), -ENOENT);
	store_free(st);
	unlink(path);

	make_v4_store(path, false);
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_int_equal(store_seen_legacy(st, &ns), -ENOENT);
	store_free(st);
	remove_store_file(dir, path);
}

/* A new store has the table and no legacy time. */
static void test_new_store(void **state)
{
	struct store *st = *state;
	int64_t ns;

	assert_int_equal(db_int(st->db, "SELECT count(*) FROM sqlite_master WHERE name = 'underneath'"), 1);
	assert_int_equal(store_seen_legacy(st, &ns), -ENOENT);
}

/* The rows of the folder in use: n of them, the first at path first (unless NULL). */
static void rows_are(struct store *st, size_t n, const char *first)
{
	struct store_seen_set set = { 0 };

	assert_int_equal(store_seen_load(st, &set), 0);
	assert_int_equal(set.n, n);
	if (first)
		assert_string_equal(set.v[0].path, first);
	store_seen_set_release(&set);
}

/*
 * Each folder mounted over has rows of its own: another folder's are never
 * the base of its take-in. A folder of the same path but another device,
 * inode or birth time (a rebuilt container's) is another folder; one not
 * taken in for 90 days is forgotten with its rows.
 */
static void test_folders(void **state)
{
	struct store *st = *state;
	bool taken = true;

	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 1, 2, 3, &taken), 0);
	assert_false(taken); /* never taken in */
	put(st, "a", S_IFREG, 1, 0);
	assert_int_equal(store_seen_folder_taken(st), 0);
	assert_int_equal(store_seen_folder(st, "/srv/container/gs", 3, 4, 5, &taken), 0);
	assert_false(taken);
	put(st, "b", S_IFREG, 2, 0);
	rows_are(st, 1, "b");
	assert_int_equal(store_seen_mark_gone(st, "a"), -ENOENT); /* the other folder's */
	/* The first folder again: its rows, and taken in before. */
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 1, 2, 3, &taken), 0);
	assert_true(taken);
	rows_are(st, 1, "a");
	/* Its path, rebuilt: another folder, nothing seen of it. */
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 1, 99, 3, &taken), 0);
	assert_false(taken);
	rows_are(st, 0, NULL);
	/*
	 * Rebuilt on a fresh tmpfs: the same device and inode number as the
	 * first (numbered from the start, the device's number handed out
	 * again), but born later: another folder too.
	 */
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 1, 2, 4, &taken), 0);
	assert_false(taken);
	rows_are(st, 0, NULL);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM folders WHERE path = '/home/dev/gs'"), 3);
	/* On a filesystem that keeps no birth time (0), by device and inode alone. */
	assert_int_equal(store_seen_folder(st, "/srv/nobirth", 6, 7, 0, &taken), 0);
	put(st, "c", S_IFREG, 3, 0);
	assert_int_equal(store_seen_folder_taken(st), 0);
	assert_int_equal(store_seen_folder(st, "/srv/nobirth", 6, 7, 0, &taken), 0);
	assert_true(taken);
	rows_are(st, 1, "c");
	/* The second folder, not taken in for 91 days: forgotten when the next is chosen. */
	assert_int_equal(store_seen_folder(st, "/srv/container/gs", 3, 4, 5, &taken), 0);
	assert_int_equal(store_seen_folder_taken(st), 0);
	assert_int_equal(sqlite3_exec(st->db, "UPDATE folders SET taken_ns = 1 WHERE path = '/srv/container/gs'", NULL, NULL,
				      NULL), SQLITE_OK);
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 1, 2, 3, &taken), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM folders WHERE path = '/srv/container/gs'"), 0);
	assert_int_equal(db_int(st->db, "SELECT count(*) FROM underneath WHERE path = 'b'"), 0);
}

/*
 * A store of schema 11 kept one folder's rows: the migration gives them to
 * the folder it took in first (meta imported_from), and the first take-in of
 * that path claims them, whatever its device and inode; another path has
 * none.
 */
static void test_migrate_folders(void **state)
{
	char dir[] = "/tmp/convfs-seen-XXXXXX", path[64];
	struct store *st = NULL;
	sqlite3 *db = NULL;
	bool taken = false;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	assert_int_equal(store_open(path, 0, &st), 0);
	store_free(st);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "DROP TABLE underneath; DROP TABLE folders; DROP TABLE plain_changes;"
					  "DROP TABLE sync_touch; DROP TABLE sync_docs; DROP TABLE sync_seen; DROP TABLE sync_applied;"
					  "CREATE TABLE underneath (path TEXT PRIMARY KEY, type INTEGER NOT NULL, "
					  "size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, "
					  "rev INTEGER, gone INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
					  "INSERT INTO underneath VALUES ('state', 16384, 0, 5, 9, NULL, 0);"
					  "INSERT INTO meta VALUES ('imported_from', '/home/dev/gs');"
					  "PRAGMA user_version = 11;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open(path, 0, &st), 0);
	assert_int_equal(db_int(st->db, "PRAGMA user_version"), store_schema_version());
	assert_int_equal(store_seen_folder(st, "/srv/other", 5, 6, 0, &taken), 0);
	assert_false(taken);
	rows_are(st, 0, NULL);
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 7, 8, 11, &taken), 0);
	assert_true(taken);
	rows_are(st, 1, "state");
	/* Claimed: the same path on another device is another folder now. */
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 7, 10, 11, &taken), 0);
	assert_false(taken);
	/*
	 * A row of schema 12 has no birth time: the next take-in of its path,
	 * device and inode claims it, born whenever; from then on a birth time
	 * of its own.
	 */
	assert_int_equal(sqlite3_exec(st->db, "UPDATE folders SET born_ns = NULL", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 7, 8, 12, &taken), 0);
	assert_true(taken);
	rows_are(st, 1, NULL);
	assert_int_equal(store_seen_folder(st, "/home/dev/gs", 7, 8, 13, &taken), 0);
	assert_false(taken);
	rows_are(st, 0, NULL);
	store_free(st);
	remove_store_file(dir, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load_sorted_and_find, setup_seen, teardown),
		cmocka_unit_test_setup_teardown(test_load_top_and_below, setup_seen, teardown),
		cmocka_unit_test_setup_teardown(test_load_in_pieces, setup_seen, teardown),
		cmocka_unit_test_setup_teardown(test_replace_and_gone, setup_seen, teardown),
		cmocka_unit_test_setup_teardown(test_large_inode, setup_seen, teardown),
		cmocka_unit_test_setup_teardown(test_merge_against_last_take_in, setup_seen, teardown),
		cmocka_unit_test_setup_teardown(test_new_store, setup_seen, teardown),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_migrate_legacy),
		cmocka_unit_test_setup_teardown(test_folders, setup, teardown),
		cmocka_unit_test(test_migrate_folders),
	};

	log_set_level(LOG_LEVEL_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
