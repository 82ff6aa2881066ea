/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_store.c: the SQLite store as a file, through its interface
 * (store/store.h): the schema of a new store, migration from an old one,
 * the refusal of files that are not a store (left byte for byte as they
 * were), errors, read-only stores, batches and settings.
 *
 * Each test gets a private temporary directory and, for most, a fresh store
 * file in it (store_fixture.h); the file is then also opened with plain
 * sqlite3 to check what the interface cannot show: the schema version, the
 * indexes, and what a refused file holds. What the store keeps of docs is
 * test_store_docs.c's; workspaces and sessions are test_store_tasks.c's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/store_changes.h"
#include "store/store_internal.h"
#include "store/store_search.h"
#include "store/util.h"
#include "tests/unit/store_fixture.h"

/* Not in a header: schema.c keeps it for tests that build old stores. */
int store_migrate_to(struct store *st, int target);

#define APPLICATION_ID 0x636f6e76 /* "conv" */

/* ---- plain files and plain sqlite3 ---------------------------------------------- */

static char *file_read(const char *path, size_t *ret_len)
{
	struct sb sb = SB_INIT;
	char buf[4096];
	size_t n;
	FILE *fp = fopen(path, "rb");

	assert_non_null(fp);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		assert_int_equal(sb_add(&sb, buf, n), 0);
	fclose(fp);
	return sb_detach(&sb, ret_len);
}

static void file_write(const char *path, const char *data, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static bool sidecar_exists(const struct fixture *f, const char *suffix)
{
	char p[320];

	snprintf(p, sizeof(p), "%s%s", f->path, suffix);
	return access(p, F_OK) == 0;
}

/* ---- schema ------------------------------------------------------------------- */

static void test_new_store_schema(void **state)
{
	struct fixture *f = *state;
	_cleanup_free_ char *mode = NULL;
	struct stat sb;

	close_store(f);
	assert_int_equal(db_int(f->path, "PRAGMA user_version"), store_schema_version());
	assert_int_equal(db_int(f->path, "PRAGMA application_id"), APPLICATION_ID);
	mode = db_text(f->path, "PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
				"('meta','workspaces','tasks','revisions','docs','elems','blobs')"), 7);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
				"('elems_key','docs_task','elems_off','docs_parent')"), 4);
	/* History holds secrets: the store is owner-only. */
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_mode & 077, 0);
	/* At rest it is one file. */
	assert_false(sidecar_exists(f, "-wal"));

	/* Opening it again neither fails nor changes the schema. */
	assert_int_equal(store_open(f->path, 0, &f->st), 0);
	close_store(f);
	assert_int_equal(db_int(f->path, "PRAGMA user_version"), store_schema_version());
}

/*
 * A doc rewritten many times (Cline saves its last message again and again)
 * keeps every old element; its current ones are found by index elems_cur,
 * which holds them alone, so a commit does not walk past the old ones. The
 * query plan of the commit's shape of query names that index.
 */
static void test_current_elements_by_index(void **state)
{
	struct fixture *f = *state;
	sqlite3_stmt *stmt;
	char json[128];
	sqlite3 *db;

	for (int i = 0; i < 200; i++) {
		snprintf(json, sizeof(json), "[{\"ts\":1},{\"ts\":2},{\"ts\":%d}]", 3 + i);
		assert_int_equal(commit(f->st, "tasks/1/ui_messages.json", json), 0);
	}
	close_store(f);
	assert_true(db_int(f->path, "SELECT count(*) FROM elems") >= 200);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems INDEXED BY elems_cur WHERE doc_id = "
				"(SELECT id FROM docs WHERE path = 'tasks/1/ui_messages.json') AND rev_to IS NULL"), 3);
	db = db_open(f->path);
	assert_int_equal(sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT pre, json FROM elems "
				"WHERE doc_id = 1 AND rev_to IS NULL ORDER BY seq", -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	assert_non_null(strstr((const char *)sqlite3_column_text(stmt, 3), "elems_cur"));
	sqlite3_finalize(stmt);
	sqlite3_close(db);
}

static const char v1_msg[] = "{\"ts\":1700000000000,\"type\":\"say\",\"say\":\"text\",\"text\":\"from schema v1\"}";
static const char v1_meta[] = "{\"files_in_context\":[],\"model_usage\":[]}";

/*
 * Builds a store at schema version 1 with schema.c's own first migration,
 * holding one array doc (UI: "[" v1_msg "]") and one whole doc (META).
 */
static void make_v1_store(const char *path)
{
	struct store old = { .db = db_open(path) };
	char *sql;

	assert_int_equal(store_migrate_to(&old, 1), 0);
	sql = sqlite3_mprintf(
		"INSERT INTO tasks(id, first_seen_ns) VALUES ('1', 1000);"
		"INSERT INTO revisions(id, time_ns, path, doc_id, kind) VALUES (1, 1000, %Q, 1, 'import');"
		"INSERT INTO revisions(id, time_ns, path, doc_id, kind) VALUES (2, 1000, %Q, 2, 'import');"
		"INSERT INTO docs(id, path, parent, name, task_id, format, present, size, mtime_ns, ctime_ns, rev,"
		"                 head, tail, nelems)"
		"  VALUES (1, %Q, 'tasks/1', 'ui_messages.json', '1', 0, 1, %d, 1000, 1000, 1, '[', ']', 1);"
		"INSERT INTO elems(doc_id, seq, off, pre, len, json, ts, rev_from)"
		"  VALUES (1, 0, 1, '', %d, %Q, 1700000000000, 1);"
		"INSERT INTO docs(id, path, parent, name, task_id, format, present, size, mtime_ns, ctime_ns, rev)"
		"  VALUES (2, %Q, 'tasks/1', 'task_metadata.json', '1', 1, 1, %d, 1000, 1000, 2);"
		"INSERT INTO blobs(doc_id, rev, data) VALUES (2, 2, CAST(%Q AS BLOB));",
		UI, META, UI, (int)strlen(v1_msg) + 2, (int)strlen(v1_msg), v1_msg, META, (int)strlen(v1_meta),
		v1_meta);
	assert_non_null(sql);
	if (sqlite3_exec(old.db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("cannot fill the v1 store: %s", sqlite3_errmsg(old.db));
	sqlite3_free(sql);
	sqlite3_close(old.db);
	assert_int_equal(db_int(path, "PRAGMA user_version"), 1);
	assert_int_equal(db_int(path, "PRAGMA application_id"), APPLICATION_ID);
	assert_int_equal(db_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'elems_key'"), 0);
}

static int no_hit(void *ctx, const struct store_search_hit *hit)
{
	(void)ctx;
	(void)hit;
	return 0;
}

/* Runs the search index's build to its end; whether it then finds the v1 message. */
static bool index_built(struct store *st)
{
	struct store_search_query q = { .text = "schema" };
	struct store_search_state s;
	bool done = false;

	if (store_search_state(st, false, &s) < 0 || !s.present)
		return false;
	for (int i = 0; !done && i < 100; i++)
		if (store_search_build(st, 100, &done) < 0)
			return false;
	return done && store_search(st, &q, no_hit, NULL) == 1;
}

static void test_migrate_from_v1(void **state)
{
	struct fixture *f = *state;
	struct store_stat s;
	char ui[256];

	make_v1_store(f->path);
	assert_int_equal(store_open(f->path, 0, &f->st), 0);
	assert_int_equal(db_int(f->path, "PRAGMA user_version"), store_schema_version());
	assert_int_equal(db_int(f->path, "PRAGMA application_id"), APPLICATION_ID);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'elems_key'"), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'docs_task'"), 1);

	/* The data is kept, metadata included. */
	snprintf(ui, sizeof(ui), "[%s]", v1_msg);
	assert_int_equal(store_doc_stat(f->st, UI, &s), 0);
	assert_int_equal(s.mtime_ns, 1000);
	assert_int_equal(s.rev, 1);
	assert_doc_str(f->st, UI, ui);
	assert_doc_str(f->st, META, v1_meta);

	/* And it takes commits: an append keeps the migrated row. */
	snprintf(ui, sizeof(ui), "[%s,{\"ts\":1700000000001,\"type\":\"ask\"}]", v1_msg);
	assert_int_equal(commit(f->st, UI, ui), 0);
	assert_doc_str(f->st, UI, ui);
	/* The migrated row was compared by its bytes, kept, and has its digest now. */
	assert_int_equal(db_int(f->path, "SELECT length(value) FROM meta WHERE key = 'digest_key'"), 2 * DIGEST_SEED_SIZE);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE rev_to IS NOT NULL"), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE length(dg) = 16"), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = 1"), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = 1 AND rev_to IS NOT NULL"), 0);

	/*
	 * Every migration in turn, the search index's after the folders' (11 ->
	 * 12 -> 13 -> 14 -> 15): the index is there, its build takes in the old message.
	 */
	assert_true(index_built(f->st));
}

static void test_migrate_readonly_refused(void **state)
{
	struct fixture *f = *state;
	struct store *st = NULL;

	make_v1_store(f->path);
	assert_int_equal(store_open(f->path, STORE_OPEN_READONLY, &st), -EROFS);
	assert_null(st);
	assert_int_equal(db_int(f->path, "PRAGMA user_version"), 1);
}

/* Checks that store_open() refuses the file at f->path and leaves it as it was. */
static void assert_refused_untouched(struct fixture *f)
{
	_cleanup_free_ char *before = NULL, *after = NULL;
	size_t before_len, after_len, i = 0;

	before = file_read(f->path, &before_len);
	assert_int_equal(store_open(f->path, 0, &f->st), -ENOTSUP);
	assert_null(f->st);
	after = file_read(f->path, &after_len);
	assert_int_equal(after_len, before_len);
	while (i < before_len && before[i] == after[i])
		i++;
	if (i < before_len) {
		unsigned char was = (unsigned char)before[i], is = (unsigned char)after[i];

		/* Free first: fail_msg() jumps past the cleanup attributes. */
		free(TAKE_PTR(before));
		free(TAKE_PTR(after));
		fail_msg("store_open() changed the refused file '%s' at byte %zu (0x%02x -> 0x%02x)", f->path, i,
			 was, is);
	}
	assert_false(sidecar_exists(f, "-wal"));
	assert_false(sidecar_exists(f, "-shm"));
	assert_false(sidecar_exists(f, "-journal"));
}

static void test_refuse_not_sqlite(void **state)
{
	struct fixture *f = *state;
	struct sb sb = SB_INIT;

	for (int i = 0; i < 200; i++)
		assert_int_equal(sb_addf(&sb, "line %d of some notes that are not a database\n", i), 0);
	file_write(f->path, sb.buf, sb.len);
	sb_release(&sb);
	assert_refused_untouched(f);

	/* Short text, shorter than an SQLite header. */
	file_write(f->path, "hello\n", 6);
	assert_refused_untouched(f);
}

static void test_refuse_foreign_sqlite(void **state)
{
	struct fixture *f = *state;

	/* Another program's database: tables, no application_id. */
	db_exec(f->path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);"
			 "INSERT INTO notes(body) VALUES ('keep me');");
	assert_int_equal(store_open(f->path, 0, &f->st), -ENOTSUP);
	assert_null(f->st);
	assert_int_equal(db_int(f->path, "PRAGMA application_id"), 0);
	assert_int_equal(db_int(f->path, "PRAGMA user_version"), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM sqlite_master"), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM notes"), 1);
}

static void test_refuse_foreign_sqlite_untouched(void **state)
{
	struct fixture *f = *state;

	/* Byte for byte, as store.h promises ("leaving the file untouched"). */
	db_exec(f->path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);"
			 "INSERT INTO notes(body) VALUES ('keep me');");
	assert_refused_untouched(f);

	/* An empty database that belongs to another application. */
	assert_int_equal(remove(f->path), 0);
	db_exec(f->path, "PRAGMA application_id = 305419896");
	assert_int_equal(db_int(f->path, "PRAGMA application_id"), 305419896);
	assert_refused_untouched(f);
}

static void test_refuse_newer_schema(void **state)
{
	struct fixture *f = *state;
	char sql[64];

	assert_int_equal(commit(f->st, UI, "[1]"), 0);
	close_store(f);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", store_schema_version() + 1);
	db_exec(f->path, sql);
	assert_refused_untouched(f);
	assert_int_equal(db_int(f->path, "PRAGMA user_version"), store_schema_version() + 1);
}

/* ---- errors, read-only, batches, settings ------------------------------------------- */

/* ":memory:" works too (the WAL pragma is a no-op there): handy for tools and tests. */
static void test_memory_store(void **state)
{
	struct store *st = NULL;
	struct store_stat s;

	assert_int_equal(store_open(":memory:", 0, &st), 0);
	assert_int_equal(commit(st, UI, "[1,2]"), 0);
	assert_doc_str(st, UI, "[1,2]");
	assert_int_equal(store_doc_stat(st, API, &s), -ENOENT);
	store_free(st);
	store_free(NULL);
}

static void test_errno_mapping(void **state)
{
	assert_int_equal(store_errno(SQLITE_OK), 0);
	assert_int_equal(store_errno(SQLITE_ROW), 0);
	assert_int_equal(store_errno(SQLITE_DONE), 0);
	assert_int_equal(store_errno(SQLITE_BUSY), -EBUSY);
	assert_int_equal(store_errno(SQLITE_BUSY_SNAPSHOT), -EBUSY);
	assert_int_equal(store_errno(SQLITE_LOCKED), -EBUSY);
	assert_int_equal(store_errno(SQLITE_FULL), -ENOSPC);
	assert_int_equal(store_errno(SQLITE_NOMEM), -ENOMEM);
	assert_int_equal(store_errno(SQLITE_READONLY), -EROFS);
	assert_int_equal(store_errno(SQLITE_READONLY_DBMOVED), -EROFS);
	assert_int_equal(store_errno(SQLITE_CONSTRAINT_UNIQUE), -EEXIST);
	assert_int_equal(store_errno(SQLITE_CONSTRAINT_PRIMARYKEY), -EEXIST);
	assert_int_equal(store_errno(SQLITE_IOERR), -EIO);
	assert_int_equal(store_errno(SQLITE_IOERR_WRITE), -EIO);
	assert_int_equal(store_errno(SQLITE_IOERR_FSYNC), -EIO);
	assert_int_equal(store_errno(SQLITE_CORRUPT), -EIO);
	assert_int_equal(store_errno(SQLITE_TOOBIG), -EFBIG);
	assert_int_equal(store_errno(SQLITE_PERM), -EACCES);
	assert_int_equal(store_errno(SQLITE_INTERRUPT), -EINTR);
	assert_int_equal(store_errno(SQLITE_NOTADB), -ENOTSUP);
}

static void test_readonly(void **state)
{
	struct fixture *f = *state;
	struct store_stat s;
	_cleanup_free_ char *v = NULL;
	int64_t nrev;

	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	close_store(f);
	nrev = db_int(f->path, "SELECT count(*) FROM revisions");

	assert_int_equal(store_open(f->path, STORE_OPEN_READONLY, &f->st), 0);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");
	assert_doc_str(f->st, META, "{\"v\":1}");
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1},{\"ts\":2}]"), -EROFS);
	assert_int_equal(commit(f->st, META, "{\"v\":2}"), -EROFS);
	assert_int_equal(commit(f->st, API, "[]"), -EROFS);
	assert_int_equal(store_doc_commit_raw(f->st, UI, "x", 1, &who, "import"), -EROFS);
	assert_int_equal(store_doc_create(f->st, API, &who), -EROFS);
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), -EROFS);
	assert_int_equal(store_meta_set(f->st, "imported_from", "/x"), -EROFS);
	assert_int_equal(store_meta_get(f->st, "imported_from", &v), -ENOENT);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");
	assert_int_equal(store_doc_stat(f->st, API, &s), -ENOENT);
	close_store(f);

	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);
}

static void test_batch(void **state)
{
	struct fixture *f = *state;
	struct store_stat s;

	assert_int_equal(store_batch_begin(f->st), 0);
	assert_int_equal(commit(f->st, UI, "[1]"), 0);
	assert_int_equal(store_doc_create(f->st, META, &who), 0);
	assert_int_equal(store_doc_create(f->st, META, &who), -EEXIST);
	assert_int_equal(commit(f->st, API, "[1"), -EINVAL);
	assert_int_equal(store_batch_begin(f->st), 0); /* nested: one transaction still */
	assert_int_equal(commit(f->st, "tasks/2/ui_messages.json", "[2]"), 0);
	assert_int_equal(store_batch_end(f->st), 0);
	/* Nothing is visible to another connection before the batch ends. */
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM docs"), 0);
	assert_int_equal(store_batch_end(f->st), 0);

	assert_int_equal(db_int(f->path, "SELECT count(*) FROM docs WHERE present"), 3);
	assert_doc_str(f->st, UI, "[1]");
	assert_doc(f->st, META, "", 0);
	assert_doc_str(f->st, "tasks/2/ui_messages.json", "[2]");
	assert_int_equal(store_doc_stat(f->st, API, &s), -ENOENT);
}

static void test_meta(void **state)
{
	struct fixture *f = *state;
	char *v = (char *)"untouched";

	assert_int_equal(store_meta_get(f->st, "imported_from", &v), -ENOENT);
	assert_string_equal(v, "untouched");
	assert_int_equal(store_meta_set(f->st, "imported_from", "/home/dev/.config/Code"), 0);
	assert_int_equal(store_meta_set(f->st, "imported_from", "/home/dev/globalStorage"), 0);
	close_store(f);
	assert_int_equal(store_open(f->path, 0, &f->st), 0);
	assert_int_equal(store_meta_get(f->st, "imported_from", &v), 0);
	assert_string_equal(v, "/home/dev/globalStorage");
	free(v);
}

/*
 * Another daemon of the store commits while this one has just read a large
 * element (the blob handle kept open holds a read transaction). A write
 * outside a transaction here must wait its turn and then go in, not fail
 * with "database is locked": SQLite does not wait for a connection that
 * reads, and a stale read cannot become a write.
 */
static void test_write_after_blob_read(void **state)
{
	struct fixture *f = *state;
	struct store *other = NULL;
	size_t n = 100 * 1024;
	_cleanup_free_ char *big = malloc(n + 16);
	char *v = NULL;

	assert_non_null(big);
	memcpy(big, "[\"", 2);
	memset(big + 2, 'a', n);
	memcpy(big + 2 + n, "\"]", 3);
	assert_int_equal(commit(f->st, UI, big), 0);
	assert_int_equal(store_open(f->path, 0, &other), 0);

	assert_doc_str(f->st, UI, big); /* leaves the blob open */
	assert_int_equal(commit(other, API, "[1]"), 0);
	assert_int_equal(store_plain_changed(f->st, "settings/a.json"), 0);
	assert_doc_str(f->st, UI, big);
	assert_int_equal(commit(other, API, "[1,2]"), 0);
	assert_int_equal(store_meta_set(f->st, "imported_from", "/home/dev"), 0);
	assert_int_equal(store_meta_get(other, "imported_from", &v), 0);
	assert_string_equal(v, "/home/dev");
	free(v);
	store_free(other);
}

/* store_changes_since()'s callback: the kinds told, one letter each (d, p, f, l), into an sb. */
static int kinds_told(void *ctx, enum store_change_kind kind, const char *path)
{
	(void)path;
	return sb_add(ctx, &"dpfl"[kind], 1);
}

/*
 * Changes of plain files another connection made are told; those pruned
 * before this reader read them (its daemon stopped for over a minute) are
 * told as lost, once, and the ones after them as changes.
 */
static void test_plain_changes_lost(void **state)
{
	struct fixture *f = *state;
	struct store *other = NULL;
	struct store_mark mark;
	_cleanup_sb_ struct sb told = SB_INIT;

	assert_int_equal(store_open(f->path, 0, &other), 0);
	assert_int_equal(store_mark_end(f->st, &mark), 0);
	assert_int_equal(store_plain_changed(other, "settings/a.json"), 0);
	assert_int_equal(store_plain_changed(other, "settings/b.json"), 0);
	assert_int_equal(store_changes_since(f->st, &mark, kinds_told, &told), 2);
	assert_int_equal(told.len, 2);
	assert_memory_equal(told.buf, "pp", 2);

	/* Three more, the first two pruned before this reader came to them. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_plain_changed(other, "settings/c.json"), 0);
	assert_true(store_run_args(other, "DELETE FROM plain_changes WHERE id < (SELECT max(id) FROM plain_changes)",
				   NULL, 0, NULL, 0, "prune") >= 0);
	told.len = 0;
	assert_int_equal(store_changes_since(f->st, &mark, kinds_told, &told), 2);
	assert_int_equal(told.len, 2);
	assert_memory_equal(told.buf, "lp", 2);
	/* Told once: nothing more since. */
	told.len = 0;
	assert_int_equal(store_changes_since(f->st, &mark, kinds_told, &told), 0);
	assert_int_equal(told.len, 0);
	assert_int_equal(store_plain_changed(other, "settings/d.json"), 0);
	assert_int_equal(store_changes_since(f->st, &mark, kinds_told, &told), 1);
	assert_memory_equal(told.buf, "p", 1);

	/* More than a chunk of them (1,024), each told once, in one call. */
	assert_int_equal(store_batch_begin(other), 0);
	for (int i = 0; i < 2500; i++)
		assert_int_equal(store_plain_changed(other, "settings/e.json"), 0);
	assert_int_equal(store_batch_end(other), 0);
	told.len = 0;
	assert_int_equal(store_changes_since(f->st, &mark, kinds_told, &told), 2500);
	assert_int_equal(told.len, 2500);
	assert_int_equal(store_changes_since(f->st, &mark, kinds_told, &told), 0);
	store_free(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_store_schema, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_from_v1, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_readonly_refused, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_not_sqlite, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_foreign_sqlite, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_foreign_sqlite_untouched, setup_dir, teardown),
		cmocka_unit_test_setup_teardown(test_refuse_newer_schema, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_current_elements_by_index, setup_store, teardown),
		cmocka_unit_test(test_memory_store),
		cmocka_unit_test(test_errno_mapping),
		cmocka_unit_test_setup_teardown(test_readonly, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_meta, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_write_after_blob_read, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_plain_changes_lost, setup_store, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
