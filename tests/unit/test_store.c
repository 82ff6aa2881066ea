/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_store.c: the SQLite store through its interface (store/store.h).
 *
 * Each test gets a private temporary directory and, for most, a fresh store
 * file in it; the file is then also opened with plain sqlite3 to check what
 * the interface cannot show: the schema version, the revision log, and the
 * rows a rewrite closes but must keep. Contents are always compared byte for
 * byte, read back through snapshots in pieces of several sizes, because the
 * FUSE layer reads at arbitrary offsets and a short read means end of file.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
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
#include "store/store_internal.h"
#include "store/util.h"

/* Not in a header: schema.c keeps it for tests that build old stores. */
int store_migrate_to(struct store *st, int target);

#define APPLICATION_ID 0x636f6e76 /* "conv" */

#define UI "tasks/1/ui_messages.json"
#define API "tasks/1/api_conversation_history.json"
#define META "tasks/1/task_metadata.json"
#define HISTORY "state/taskHistory.json"

static const struct store_who who = { .pid = 4242, .comm = "code" };

/* A string literal that may hold NUL bytes, with its length. */
struct text {
	const char *s;
	size_t n;
};
#define T(lit) { lit, sizeof(lit) - 1 }

/* ---- fixture: a private directory, usually with an open store ------------------ */

struct fixture {
	char dir[256];
	char path[300];
	struct store *st;
};

static int setup_dir(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/convfs-unit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
	*state = f;
	return 0;
}

static int setup_store(void **state)
{
	struct fixture *f;

	if (setup_dir(state) < 0)
		return -1;
	f = *state;
	return store_open(f->path, 0, &f->st) == 0 ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	store_free(f->st);
	nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* Closes the fixture's store (so that plain sqlite3 sees a file at rest). */
static void close_store(struct fixture *f)
{
	store_free(f->st);
	f->st = NULL;
}

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

static sqlite3 *db_open(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
		fail_msg("cannot open '%s' with sqlite3: %s", path, sqlite3_errmsg(db));
	return db;
}

static void db_exec(const char *path, const char *sql)
{
	sqlite3 *db = db_open(path);
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("'%s' failed: %s", sql, msg);
	sqlite3_close(db);
}

/*
 * Runs a query (formatted with sqlite3_mprintf, so %Q quotes a string) on a
 * separate connection and returns the first column of its first row: as a
 * number from db_int(), as a string to free() from db_text() (NULL for NULL).
 */
static sqlite3_stmt *db_query(sqlite3 *db, const char *fmt, va_list ap)
{
	sqlite3_stmt *stmt = NULL;
	char *sql = sqlite3_vmprintf(fmt, ap);

	assert_non_null(sql);
	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		fail_msg("cannot prepare '%s': %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(stmt) != SQLITE_ROW)
		fail_msg("no row from '%s': %s", sql, sqlite3_errmsg(db));
	sqlite3_free(sql);
	return stmt;
}

static int64_t db_int(const char *path, const char *fmt, ...)
{
	sqlite3 *db = db_open(path);
	sqlite3_stmt *stmt;
	int64_t v;
	va_list ap;

	va_start(ap, fmt);
	stmt = db_query(db, fmt, ap);
	va_end(ap);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

static char *db_text(const char *path, const char *fmt, ...)
{
	sqlite3 *db = db_open(path);
	sqlite3_stmt *stmt;
	const char *t;
	char *v;
	va_list ap;

	va_start(ap, fmt);
	stmt = db_query(db, fmt, ap);
	va_end(ap);
	t = (const char *)sqlite3_column_text(stmt, 0);
	v = t ? strdup(t) : NULL;
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

/* ---- committing and reading docs ------------------------------------------------ */

static int commit(struct store *st, const char *path, const char *json)
{
	return store_doc_commit(st, path, json, strlen(json), &who, "write");
}

/*
 * Reads all of snap, chunk bytes a call, checking that every read is full
 * (FUSE takes a short read for the end of the file). Returns a NUL-terminated
 * copy to free().
 */
static char *snap_read_all(struct store *st, struct store_snap *snap, size_t chunk, size_t *ret_len)
{
	_cleanup_free_ char *buf = malloc(chunk);
	int64_t size = store_snap_size(snap);
	struct sb sb = SB_INIT;

	assert_non_null(buf);
	for (;;) {
		ssize_t n = store_snap_read(st, snap, buf, chunk, (off_t)sb.len);
		int64_t want = size - (int64_t)sb.len < (int64_t)chunk ? size - (int64_t)sb.len : (int64_t)chunk;

		if (n != want)
			fail_msg("read of %zu bytes at %zu of %" PRId64 " returned %zd", chunk, sb.len, size, n);
		if (n == 0)
			break;
		assert_int_equal(sb_add(&sb, buf, (size_t)n), 0);
	}
	return sb_detach(&sb, ret_len);
}

static void assert_snap_reads(struct store *st, struct store_snap *snap, const char *data, size_t len)
{
	static const size_t chunks[] = { 1, 7, 4096, 131072 };

	assert_int_equal(store_snap_size(snap), len);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		_cleanup_free_ char *got = NULL;
		size_t got_len;

		if (chunks[i] == 1 && len > 20000)
			continue; /* one query a byte: too slow for big docs, and 7 covers it */
		got = snap_read_all(st, snap, chunks[i], &got_len);
		assert_int_equal(got_len, len);
		if (memcmp(got, data, len) != 0)
			fail_msg("read in pieces of %zu differs from what was written:\n%s\n---\n%s", chunks[i],
				 got, data);
	}
}

/* Checks that the doc at path reads back exactly data[0, len). */
static void assert_doc(struct store *st, const char *path, const char *data, size_t len)
{
	struct store_snap *snap = NULL;
	struct store_stat s;

	assert_int_equal(store_doc_stat(st, path, &s), 0);
	assert_int_equal(s.size, len);
	assert_int_equal(store_snap_open(st, path, &snap), 0);
	assert_snap_reads(st, snap, data, len);
	store_snap_free(snap);
}

static void assert_doc_str(struct store *st, const char *path, const char *json)
{
	assert_doc(st, path, json, strlen(json));
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
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = 1"), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = 1 AND rev_to IS NOT NULL"), 0);
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

/* ---- round trips ------------------------------------------------------------------ */

static const char *const arrays[] = {
	"[]",
	"[ ]",
	"[{\"ts\":1700000000000,\"type\":\"say\",\"say\":\"task\",\"text\":\"hello\"}]",
	/* JSON.stringify(messages, null, 2) */
	"[\n"
	"  {\n"
	"    \"ts\": 1700000000000,\n"
	"    \"type\": \"say\",\n"
	"    \"say\": \"task\",\n"
	"    \"text\": \"hello\"\n"
	"  },\n"
	"  {\n"
	"    \"ts\": 1700000000001,\n"
	"    \"type\": \"ask\",\n"
	"    \"ask\": \"followup\",\n"
	"    \"text\": \"what next?\",\n"
	"    \"images\": []\n"
	"  }\n"
	"]",
	"[{\"ts\":1,\"text\":\"é 日本語 😀 \\u00e9 \\ud83d\\ude00 \\n\\t\\\"q\\\" \\\\ ]\"},{\"ts\":2,\"text\":\"\xf4\x8f\xbf\xbf\"}]",
	" \n\t[ 1 ,\r\n 2 ]\n\n",
	"[[1,[2]],{\"a\":[]},\"x\",null,true,false,0.5,-1e-7]",
	"[{\"ts\":1700000000000,\"type\":\"say\",\"say\":\"task\",\"text\":\"hello\"},{\"ts\":1700000000002}]",
};

static void test_round_trip_arrays(void **state)
{
	static const char *const paths[] = { UI, API, HISTORY, "tasks/1700000000000/ui_messages.json" };
	struct fixture *f = *state;

	for (size_t p = 0; p < ARRAY_SIZE(paths); p++) {
		/* Forwards and back again, so each version follows several others. */
		for (size_t i = 0; i < 2 * ARRAY_SIZE(arrays); i++) {
			size_t k = i < ARRAY_SIZE(arrays) ? i : 2 * ARRAY_SIZE(arrays) - 1 - i;

			if (commit(f->st, paths[p], arrays[k]) != 0)
				fail_msg("cannot commit array %zu to '%s'", k, paths[p]);
			assert_doc_str(f->st, paths[p], arrays[k]);
		}
	}

	/* Many elements. */
	struct sb sb = SB_INIT;
	assert_int_equal(sb_adds(&sb, "["), 0);
	for (int i = 0; i < 500; i++)
		assert_int_equal(sb_addf(&sb, "%s{\"ts\":%d,\"type\":\"say\",\"text\":\"message %d\"}", i ? "," : "",
					 1700000000 + i, i), 0);
	assert_int_equal(sb_adds(&sb, "]"), 0);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	sb_release(&sb);
}

static void test_round_trip_whole(void **state)
{
	static const char *const paths[] = { META, "tasks/1/context_history.json", "tasks/1/settings.json" };
	static const char *const values[] = {
		"{\"files_in_context\":[],\"model_usage\":[],\"environment_history\":[]}",
		"{\n  \"files_in_context\": [\n    {\n      \"path\": \"src/é.c\",\n      \"record_state\": \"active\"\n"
		"    }\n  ],\n  \"model_usage\": []\n}",
		" {} \n",
		"[1,2]",
		"\"just a string\"",
		"null",
		"{\"text\":\"😀 \\ud83d\\ude00\"}",
	};
	struct fixture *f = *state;

	for (size_t p = 0; p < ARRAY_SIZE(paths); p++)
		for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
			assert_int_equal(commit(f->st, paths[p], values[i]), 0);
			assert_doc_str(f->st, paths[p], values[i]);
		}
}

/* ---- offsets and sizes ------------------------------------------------------------ */

/* A pretty-printed conversation of n messages of varied lengths. */
static void make_conversation(struct sb *sb, int n)
{
	assert_int_equal(sb_adds(sb, "[\n"), 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(sb_addf(sb, "%s  {\n    \"ts\": %d,\n    \"type\": \"say\",\n    \"text\": \"", i ? ",\n" : "",
					 1700000000 + i), 0);
		for (int k = 0; k < (i * 37) % 300; k++)
			assert_int_equal(sb_adds(sb, k % 50 == 49 ? "é" : "x"), 0);
		assert_int_equal(sb_adds(sb, "\"\n  }"), 0);
	}
	assert_int_equal(sb_adds(sb, "\n]\n"), 0);
}

/* Reads at every offset of the doc, with several sizes, against data. */
static void assert_every_offset(struct store *st, const char *path, const char *data, size_t len)
{
	static const size_t sizes[] = { 1, 7, 4096 };
	struct store_snap *snap = NULL;
	char buf[4096];

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		for (size_t off = 0; off <= len; off++) {
			size_t want = len - off < sizes[i] ? len - off : sizes[i];
			ssize_t n = store_snap_read(st, snap, buf, sizes[i], (off_t)off);

			if (n != (ssize_t)want || memcmp(buf, data + off, want) != 0)
				fail_msg("read of %zu bytes at %zu of '%s' returned %zd bytes, not the %zu written",
					 sizes[i], off, path, n, want);
		}
	/* At and past the end, and empty or bad reads. */
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), (off_t)len), 0);
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), (off_t)len + 1), 0);
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), (off_t)len + 1000000), 0);
	assert_int_equal(store_snap_read(st, snap, buf, 0, 0), 0);
	assert_int_equal(store_snap_read(st, snap, buf, sizeof(buf), -1), -EINVAL);
	store_snap_free(snap);
}

static void test_offsets_and_sizes(void **state)
{
	struct fixture *f = *state;
	struct sb sb = SB_INIT;

	make_conversation(&sb, 60);
	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, UI, sb.buf, sb.len);
	assert_every_offset(f->st, UI, sb.buf, sb.len);

	assert_int_equal(store_doc_commit(f->st, META, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, META, sb.buf, sb.len);
	assert_every_offset(f->st, META, sb.buf, sb.len);
	sb_release(&sb);
}

static void test_large_element(void **state)
{
	struct fixture *f = *state;
	struct store_snap *snap = NULL;
	struct sb sb = SB_INIT;
	size_t big_start, big_end;
	char buf[64];

	/* A 200 KB message between small ones: read with incremental blob I/O. */
	assert_int_equal(sb_adds(&sb, "[\n  {\"ts\":1,\"text\":\"small\"},\n  "), 0);
	big_start = sb.len;
	assert_int_equal(sb_adds(&sb, "{\"ts\":2,\"type\":\"say\",\"text\":\""), 0);
	for (int i = 0; i < 200000; i++)
		assert_int_equal(sb_add(&sb, &"abcdefghijklmnopqrstuvwxyz0123456789"[i % 36], 1), 0);
	assert_int_equal(sb_adds(&sb, "\"}"), 0);
	big_end = sb.len;
	assert_int_equal(sb_adds(&sb, ",\n  {\"ts\":3,\"text\":\"after\"}\n]"), 0);

	assert_int_equal(store_doc_commit(f->st, UI, sb.buf, sb.len, &who, "write"), 0);
	assert_true(db_int(f->path, "SELECT max(len) FROM elems") > 65536);
	assert_doc(f->st, UI, sb.buf, sb.len);

	/* Reads that start or end around the big element's edges. */
	assert_int_equal(store_snap_open(f->st, UI, &snap), 0);
	for (size_t edge = 0; edge < 2; edge++) {
		size_t at = edge ? big_end : big_start;

		for (size_t off = at - 20; off <= at + 20; off++) {
			size_t want = sb.len - off < sizeof(buf) ? sb.len - off : sizeof(buf);
			ssize_t n = store_snap_read(f->st, snap, buf, sizeof(buf), (off_t)off);

			assert_int_equal(n, want);
			if (memcmp(buf, sb.buf + off, want) != 0)
				fail_msg("read at %zu near the big element's edge differs", off);
		}
	}
	/* One read that spans small, big and small elements at once. */
	{
		_cleanup_free_ char *all = malloc(sb.len);
		assert_non_null(all);
		assert_int_equal(store_snap_read(f->st, snap, all, sb.len, 0), sb.len);
		assert_memory_equal(all, sb.buf, sb.len);
		assert_int_equal(store_snap_read(f->st, snap, all, sb.len, 5), sb.len - 5);
		assert_memory_equal(all, sb.buf + 5, sb.len - 5);
	}
	store_snap_free(snap);

	/* The same bytes as a whole doc. */
	assert_int_equal(store_doc_commit(f->st, META, sb.buf, sb.len, &who, "write"), 0);
	assert_doc(f->st, META, sb.buf, sb.len);
	sb_release(&sb);
}

/* ---- snapshots -------------------------------------------------------------------- */

static void assert_snap_str(struct store *st, struct store_snap *snap, const char *data)
{
	assert_snap_reads(st, snap, data, strlen(data));
}

static void test_snapshots(void **state)
{
	static const char v1[] = "[\n  {\"ts\":1,\"text\":\"one\"},\n  {\"ts\":2,\"text\":\"two\"},\n  {\"ts\":3,\"text\":\"three\"}\n]";
	static const char v2[] = "[\n  {\"ts\":1,\"text\":\"one\"},\n  {\"ts\":2,\"text\":\"two\"},\n  {\"ts\":3,\"text\":\"three\"},\n"
				 "  {\"ts\":4,\"text\":\"four\"}\n]";
	static const char v3[] = "[\n  {\"ts\":1,\"text\":\"one\"},\n  {\"ts\":2,\"text\":\"edited\"}\n]";
	static const char v4[] = "\n[\n  {\"ts\":1,\"text\":\"one\"}\n]";
	struct fixture *f = *state;
	struct store_snap *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL, *s5 = NULL;

	assert_int_equal(commit(f->st, UI, v1), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s1), 0);

	/* An append. */
	assert_int_equal(commit(f->st, UI, v2), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s2), 0);
	assert_snap_str(f->st, s1, v1);
	assert_snap_str(f->st, s2, v2);

	/* A rewrite that drops and edits messages. */
	assert_int_equal(commit(f->st, UI, v3), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s3), 0);
	assert_snap_str(f->st, s1, v1);
	assert_snap_str(f->st, s2, v2);
	assert_snap_str(f->st, s3, v3);

	/* A new head: nothing is kept. */
	assert_int_equal(commit(f->st, UI, v4), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s4), 0);

	/* Back to the first version. */
	assert_int_equal(commit(f->st, UI, v1), 0);
	assert_int_equal(store_snap_open(f->st, UI, &s5), 0);
	assert_snap_str(f->st, s1, v1);
	assert_snap_str(f->st, s2, v2);
	assert_snap_str(f->st, s3, v3);
	assert_snap_str(f->st, s4, v4);
	assert_snap_str(f->st, s5, v1);
	assert_true(store_snap_rev(s1) < store_snap_rev(s2));
	assert_true(store_snap_rev(s2) < store_snap_rev(s3));
	assert_true(store_snap_rev(s3) < store_snap_rev(s4));
	assert_true(store_snap_rev(s4) < store_snap_rev(s5));

	/* Snapshots outlive the doc. */
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), 0);
	assert_snap_str(f->st, s2, v2);
	assert_snap_str(f->st, s5, v1);
	store_snap_free(s1);
	store_snap_free(s2);
	store_snap_free(s3);
	store_snap_free(s4);
	store_snap_free(s5);

	/* Whole docs too. */
	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	assert_int_equal(store_snap_open(f->st, META, &s1), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":2,\"more\":true}"), 0);
	assert_int_equal(store_snap_open(f->st, META, &s2), 0);
	assert_int_equal(store_doc_remove(f->st, META, &who, "unlink"), 0);
	assert_snap_str(f->st, s1, "{\"v\":1}");
	assert_snap_str(f->st, s2, "{\"v\":2,\"more\":true}");
	store_snap_free(s1);
	store_snap_free(s2);

	store_snap_free(NULL);
}

/* ---- revisions -------------------------------------------------------------------- */

static void test_revisions_kept(void **state)
{
	static const char abc[] = "[{\"ts\":1,\"text\":\"a\"},{\"ts\":2,\"text\":\"b\"},{\"ts\":3,\"text\":\"c\"}]";
	static const char a[] = "[{\"ts\":1,\"text\":\"a\"}]";
	static const struct store_who node = { .pid = 99, .comm = "node" };
	struct fixture *f = *state;
	struct store_stat s1, s2, s3;
	_cleanup_free_ char *kind1 = NULL, *comm1 = NULL, *kind2 = NULL, *comm2 = NULL, *json = NULL;
	int64_t doc;

	assert_int_equal(store_doc_commit(f->st, UI, abc, strlen(abc), &who, "write"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s1), 0);
	assert_int_equal(store_doc_commit(f->st, UI, a, strlen(a), &node, "rename"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s2), 0);
	assert_true(s2.rev > s1.rev);
	assert_int_equal(s2.ino, s1.ino);
	assert_doc_str(f->st, UI, a);

	/* The dropped messages are still there, closed at the rewrite. */
	doc = db_int(f->path, "SELECT id FROM docs WHERE path = %Q", UI);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld", (long long)doc), 3);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND rev_to IS NULL",
				(long long)doc), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND rev_to = %lld",
				(long long)doc, (long long)s2.rev), 2);
	json = db_text(f->path, "SELECT group_concat(json, '|') FROM (SELECT json FROM elems WHERE doc_id = %lld "
			"AND rev_to IS NOT NULL ORDER BY seq)", (long long)doc);
	assert_string_equal(json, "{\"ts\":2,\"text\":\"b\"}|{\"ts\":3,\"text\":\"c\"}");
	assert_int_equal(db_int(f->path, "SELECT ts FROM elems WHERE doc_id = %lld AND seq = 2", (long long)doc), 3);

	/* One revision a commit, saying who made it and how. */
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q", UI), 2);
	assert_int_equal(db_int(f->path, "SELECT pid FROM revisions WHERE id = %lld", (long long)s1.rev), 4242);
	comm1 = db_text(f->path, "SELECT comm FROM revisions WHERE id = %lld", (long long)s1.rev);
	kind1 = db_text(f->path, "SELECT kind FROM revisions WHERE id = %lld", (long long)s1.rev);
	assert_string_equal(comm1, "code");
	assert_string_equal(kind1, "write");
	assert_int_equal(db_int(f->path, "SELECT pid FROM revisions WHERE id = %lld", (long long)s2.rev), 99);
	comm2 = db_text(f->path, "SELECT comm FROM revisions WHERE id = %lld", (long long)s2.rev);
	kind2 = db_text(f->path, "SELECT kind FROM revisions WHERE id = %lld", (long long)s2.rev);
	assert_string_equal(comm2, "node");
	assert_string_equal(kind2, "rename");
	assert_int_equal(db_int(f->path, "SELECT doc_id FROM revisions WHERE id = %lld", (long long)s2.rev), doc);

	/* The same content again: no revision, no new metadata. */
	assert_int_equal(store_doc_commit(f->st, UI, a, strlen(a), &node, "write"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s3), 0);
	assert_int_equal(s3.rev, s2.rev);
	assert_int_equal(s3.mtime_ns, s2.mtime_ns);
	assert_int_equal(s3.ctime_ns, s2.ctime_ns);
	assert_int_equal(s3.size, s2.size);
	assert_int_equal(s3.ino, s2.ino);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q", UI), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld", (long long)doc), 3);

	/* A commit with nobody named records NULLs. */
	assert_int_equal(store_doc_commit(f->st, UI, abc, strlen(abc), NULL, "import"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s3), 0);
	assert_int_equal(db_int(f->path, "SELECT pid IS NULL AND comm IS NULL FROM revisions WHERE id = %lld",
				(long long)s3.rev), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld", (long long)doc), 5);

	/* Whole docs: each version kept, an identical commit is a no-op. */
	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":2}"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &s1), 0);
	assert_int_equal(commit(f->st, META, "{\"v\":2}"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &s2), 0);
	assert_int_equal(s2.rev, s1.rev);
	assert_int_equal(s2.mtime_ns, s1.mtime_ns);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q", META), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM blobs WHERE doc_id = (SELECT id FROM docs WHERE path = %Q)",
				META), 2);
}

/* ---- refusals --------------------------------------------------------------------- */

static void assert_stat_equal(const struct store_stat *a, const struct store_stat *b)
{
	assert_int_equal(a->ino, b->ino);
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->mtime_ns, b->mtime_ns);
	assert_int_equal(a->ctime_ns, b->ctime_ns);
	assert_int_equal(a->rev, b->rev);
}

static void test_invalid_json_refused(void **state)
{
	static const char good[] = "[{\"ts\":1,\"text\":\"good\"},{\"ts\":2,\"text\":\"also good\"}]";
	static const struct text bad_arrays[] = {
		T("[{\"ts\":1,\"text\":\"good\"},{\"ts\":2,\"text\":\"also"), /* torn mid-string */
		T("[{\"ts\":1,\"text\":\"good\"},{\"ts\":2"),                /* torn mid-array */
		T("{\"ts\":1}"),
		T("\"[]\""),
		T(""),
		T("[1] x"),
		T("[\"\xff\"]"),
		T("[\"a\0b\"]"),
		T("[01]"),
	};
	static const char *const bad_wholes[] = { "{\"v\":", "{\"v\":1}}", "", "{'v':1}", "\xef\xbb\xbf{}" };
	struct fixture *f = *state;
	struct store_stat before, after;
	int64_t nrev;

	assert_int_equal(commit(f->st, UI, good), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &before), 0);
	nrev = db_int(f->path, "SELECT count(*) FROM revisions");
	for (size_t i = 0; i < ARRAY_SIZE(bad_arrays); i++) {
		int r = store_doc_commit(f->st, UI, bad_arrays[i].s, bad_arrays[i].n, &who, "write");

		if (r != -EINVAL)
			fail_msg("bad array %zu not refused with -EINVAL (got %d)", i, r);
		assert_int_equal(store_doc_stat(f->st, UI, &after), 0);
		assert_stat_equal(&before, &after);
		assert_doc_str(f->st, UI, good);
	}

	assert_int_equal(commit(f->st, META, "{\"v\":1}"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &before), 0);
	nrev++;
	for (size_t i = 0; i < ARRAY_SIZE(bad_wholes); i++) {
		assert_int_equal(commit(f->st, META, bad_wholes[i]), -EINVAL);
		assert_int_equal(store_doc_stat(f->st, META, &after), 0);
		assert_stat_equal(&before, &after);
		assert_doc_str(f->st, META, "{\"v\":1}");
	}
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);

	/* A refused first write leaves no doc behind. */
	assert_int_equal(commit(f->st, API, "[{\"role\":\"user\""), -EINVAL);
	assert_int_equal(store_doc_stat(f->st, API, &after), -ENOENT);
	assert_int_equal(commit(f->st, "tasks/1/context_history.json", "{"), -EINVAL);
	assert_int_equal(store_doc_stat(f->st, "tasks/1/context_history.json", &after), -ENOENT);

	/* Paths the store does not manage. */
	assert_int_equal(commit(f->st, "tasks/abc/ui_messages.json", "[]"), -EINVAL);
	assert_int_equal(commit(f->st, "settings/x.json", "{}"), -EINVAL);
	assert_int_equal(commit(f->st, "tasks/1", "[]"), -EINVAL);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);
}

static void test_commit_raw(void **state)
{
	static const char damaged[] = "\x00\xff[{\"ts\":1,\"text\":\"torn\r\n\x01";
	struct fixture *f = *state;
	struct store_snap *raw_snap = NULL;
	struct store_stat s;
	_cleanup_free_ char *kind = NULL, *detail = NULL;
	int64_t nrev;

	assert_int_equal(commit(f->st, UI, "[1,2,3]"), 0);
	assert_int_equal(store_doc_commit_raw(f->st, UI, damaged, sizeof(damaged) - 1, &who, "import-damaged"), 0);
	assert_doc(f->st, UI, damaged, sizeof(damaged) - 1);
	assert_int_equal(store_doc_stat(f->st, UI, &s), 0);
	kind = db_text(f->path, "SELECT kind FROM revisions WHERE id = %lld", (long long)s.rev);
	detail = db_text(f->path, "SELECT detail FROM revisions WHERE id = %lld", (long long)s.rev);
	assert_string_equal(kind, "import-damaged");
	assert_string_equal(detail, "{\"raw\":true}");

	/* A valid commit replaces it; a snapshot of the raw bytes still reads them. */
	assert_int_equal(store_snap_open(f->st, UI, &raw_snap), 0);
	assert_int_equal(commit(f->st, UI, "[1,2,3,4]"), 0);
	assert_doc_str(f->st, UI, "[1,2,3,4]");
	assert_snap_reads(f->st, raw_snap, damaged, sizeof(damaged) - 1);
	store_snap_free(raw_snap);

	/* Whole docs take raw bytes too; empty raw content is an empty file. */
	assert_int_equal(store_doc_commit_raw(f->st, META, damaged, sizeof(damaged) - 1, &who, "import-damaged"), 0);
	assert_doc(f->st, META, damaged, sizeof(damaged) - 1);
	assert_int_equal(store_doc_commit_raw(f->st, API, "", 0, &who, "import-damaged"), 0);
	assert_doc(f->st, API, "", 0);

	/* The same raw bytes again change nothing. */
	nrev = db_int(f->path, "SELECT count(*) FROM revisions");
	assert_int_equal(store_doc_commit_raw(f->st, API, "", 0, &who, "import-damaged"), 0);
	assert_int_equal(store_doc_commit_raw(f->st, META, damaged, sizeof(damaged) - 1, &who, "import-damaged"), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions"), nrev);

	/* Not for paths the store does not manage. */
	assert_int_equal(store_doc_commit_raw(f->st, "settings/x.json", "x", 1, &who, "import"), -EINVAL);
	assert_int_equal(store_doc_commit_raw(f->st, "tasks/1", "x", 1, &who, "import"), -EINVAL);
}

/* ---- create, remove, list --------------------------------------------------------- */

#define MAX_LISTED 16

struct listing {
	size_t n;
	char *names[MAX_LISTED];
	struct store_stat stats[MAX_LISTED];
	int stop_with; /* returned by the callback if nonzero */
};

static int list_collect(void *ctx, const char *name, const struct store_stat *stat)
{
	struct listing *l = ctx;

	assert_true(l->n < MAX_LISTED);
	l->names[l->n] = strdup(name);
	assert_non_null(l->names[l->n]);
	l->stats[l->n] = *stat;
	l->n++;
	return l->stop_with;
}

static void listing_release(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	*l = (struct listing){ 0 };
}

static void assert_listing(const struct listing *l, const char *const *names, size_t n)
{
	assert_int_equal(l->n, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(l->names[i], names[i]);
}

static void test_create_remove(void **state)
{
	struct fixture *f = *state;
	struct store_snap *snap = NULL;
	struct store_stat s;
	char buf[16];
	int64_t doc;

	assert_int_equal(store_doc_create(f->st, UI, &who), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s), 0);
	assert_int_equal(s.size, 0);
	assert_true(s.ino >= STORE_INO_BASE);
	assert_int_equal(store_snap_open(f->st, UI, &snap), 0);
	assert_int_equal(store_snap_size(snap), 0);
	assert_int_equal(store_snap_read(f->st, snap, buf, sizeof(buf), 0), 0);
	store_snap_free(snap);
	assert_int_equal(store_doc_create(f->st, UI, &who), -EEXIST);

	/* An empty doc takes content; then it exists all the more. */
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");
	assert_int_equal(store_doc_create(f->st, UI, &who), -EEXIST);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");

	assert_int_equal(store_doc_create(f->st, META, &who), 0);
	assert_doc(f->st, META, "", 0);
	assert_int_equal(commit(f->st, META, "{}"), 0);
	assert_doc_str(f->st, META, "{}");

	assert_int_equal(store_doc_create(f->st, "tasks/1/notes.json", &who), -EINVAL);
	assert_int_equal(store_doc_create(f->st, "tasks", &who), -EINVAL);
	assert_int_equal(store_doc_create(f->st, "tasks/1", &who), -EINVAL);

	/* Removed: gone from the tree, kept in the store. */
	doc = db_int(f->path, "SELECT id FROM docs WHERE path = %Q", UI);
	assert_int_equal(store_snap_open_removed(f->st, UI, false, &snap), -ENOENT); /* not removed yet */
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1},{\"ts\":2}]"), 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0); /* a row closed before the removal */
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), 0);
	assert_int_equal(store_doc_stat(f->st, UI, &s), -ENOENT);
	assert_int_equal(store_snap_open(f->st, UI, &snap), -ENOENT);
	/* ... and its last version reads back, as JSON and as JSON Lines (the trash). */
	assert_int_equal(store_snap_open_removed(f->st, UI, false, &snap), 0);
	assert_snap_reads(f->st, snap, "[{\"ts\":1}]", 10);
	store_snap_free(snap);
	assert_int_equal(store_snap_open_removed(f->st, UI, true, &snap), 0);
	assert_snap_reads(f->st, snap, "{\"ts\":1}\n", 9);
	store_snap_free(snap);
	assert_int_equal(store_doc_remove(f->st, UI, &who, "unlink"), -ENOENT);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND json = '{\"ts\":1}'",
				(long long)doc), 1);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE doc_id = %lld AND rev_to IS NULL",
				(long long)doc), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM revisions WHERE path = %Q AND kind = 'unlink'", UI), 1);

	assert_int_equal(store_doc_remove(f->st, META, &who, "unlink"), 0);
	assert_int_equal(store_doc_stat(f->st, META, &s), -ENOENT);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM blobs WHERE CAST(data AS TEXT) = '{}'"), 1);

	assert_int_equal(store_doc_remove(f->st, "tasks/9/ui_messages.json", &who, "unlink"), -ENOENT);

	/* It can come back, empty, and be written again. */
	assert_int_equal(store_doc_create(f->st, UI, &who), 0);
	assert_doc(f->st, UI, "", 0);
	assert_int_equal(commit(f->st, UI, "[{\"ts\":1}]"), 0);
	assert_doc_str(f->st, UI, "[{\"ts\":1}]");
}

static void test_list(void **state)
{
	static const char *const task1[] = { "api_conversation_history.json", "ui_messages.json" };
	static const char *const all[] = {
		HISTORY, API, UI, "tasks/2/ui_messages.json",
	};
	struct fixture *f = *state;
	struct listing l = { 0 };

	assert_int_equal(commit(f->st, UI, "[1]"), 0);
	assert_int_equal(commit(f->st, API, "[1,2]"), 0);
	assert_int_equal(commit(f->st, META, "{}"), 0);
	assert_int_equal(commit(f->st, "tasks/2/ui_messages.json", "[]"), 0);
	assert_int_equal(commit(f->st, HISTORY, "[]"), 0);
	assert_int_equal(store_doc_remove(f->st, META, &who, "unlink"), 0);

	assert_int_equal(store_doc_list(f->st, "tasks/1", list_collect, &l), 0);
	assert_listing(&l, task1, ARRAY_SIZE(task1));
	assert_int_equal(l.stats[0].size, 5);
	assert_int_equal(l.stats[1].size, 3);
	assert_true(l.stats[0].ino >= STORE_INO_BASE);
	assert_true(l.stats[0].ino != l.stats[1].ino);
	listing_release(&l);

	assert_int_equal(store_doc_list(f->st, "state", list_collect, &l), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.names[0], "taskHistory.json");
	listing_release(&l);

	assert_int_equal(store_doc_list(f->st, "tasks/3", list_collect, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(store_doc_list(f->st, "", list_collect, &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(store_doc_list(f->st, "tasks", list_collect, &l), 0);
	assert_int_equal(l.n, 0);

	assert_int_equal(store_doc_foreach(f->st, list_collect, &l), 0);
	assert_listing(&l, all, ARRAY_SIZE(all));
	listing_release(&l);

	/* A callback's error stops the listing and is returned. */
	l.stop_with = -EINTR;
	assert_int_equal(store_doc_foreach(f->st, list_collect, &l), -EINTR);
	assert_int_equal(l.n, 1);
	listing_release(&l);
	l.stop_with = -EINTR;
	assert_int_equal(store_doc_list(f->st, "tasks/1", list_collect, &l), -EINTR);
	assert_int_equal(l.n, 1);
	listing_release(&l);
}

/* ---- workspaces ------------------------------------------------------------------- */

static char *task_workspace_key(const char *path, const char *task_id)
{
	return db_text(path, "SELECT w.key FROM tasks t LEFT JOIN workspaces w ON w.id = t.workspace_id "
			     "WHERE t.id = %Q", task_id);
}

static void assert_task_workspace(const char *path, const char *task_id, const char *key)
{
	_cleanup_free_ char *got = task_workspace_key(path, task_id);

	if (!got || strcmp(got, key) != 0)
		fail_msg("task %s is in workspace %s, expected %s", task_id, got ? got : "(none)", key);
}

static void test_workspaces(void **state)
{
	static const char h1[] =
		"[\n"
		"  {\"id\":\"1700000000001\",\"ts\":1700000000001,\"task\":\"greet\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/greeter\"},\n"
		"  {\"id\":\"1700000000002\",\"ts\":1700000000002,\"task\":\"web\","
		"\"shadowGitConfigWorkTree\":\"/home/dev/projects/webapp\"},\n"
		"  {\"id\":\"1700000000003\",\"ts\":1700000000003,\"task\":\"both\",\"cwdOnTaskInitialization\":\"\","
		"\"shadowGitConfigWorkTree\":\"/tmp/é😀\"},\n"
		"  {\"id\":\"not-a-task\",\"ts\":1,\"cwdOnTaskInitialization\":\"/nowhere\"}\n"
		"]";
	/* Task 1 moved to another folder; task 4 is new; task 5 has files already. */
	static const char h2[] =
		"[\n"
		"  {\"id\":\"1700000000001\",\"ts\":1700000009999,\"task\":\"greet\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/webapp\"},\n"
		"  {\"id\":\"1700000000004\",\"ts\":1700000000004,\"task\":\"more\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/greeter\"},\n"
		"  {\"id\":\"1700000000005\",\"ts\":1700000000005,\"task\":\"late\","
		"\"cwdOnTaskInitialization\":\"/home/dev/projects/greeter\"}\n"
		"]";
	struct fixture *f = *state;
	_cleanup_free_ char *ws_path = NULL, *ws_path3 = NULL, *key = NULL, *none = NULL;

	assert_int_equal(commit(f->st, HISTORY, h1), 0);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM workspaces"), 3);
	ws_path = db_text(f->path, "SELECT path FROM workspaces WHERE key = '3301258620'");
	assert_string_equal(ws_path, "/home/dev/projects/greeter");
	assert_task_workspace(f->path, "1700000000001", "3301258620");
	assert_task_workspace(f->path, "1700000000002", "691006855");  /* from shadowGitConfigWorkTree */
	assert_task_workspace(f->path, "1700000000003", "3406327813"); /* empty cwd: the shadow work tree */
	ws_path3 = db_text(f->path, "SELECT path FROM workspaces WHERE key = '3406327813'");
	assert_string_equal(ws_path3, "/tmp/é😀");
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM tasks WHERE id = 'not-a-task'"), 0);
	key = db_text(f->path, "SELECT key FROM elems WHERE seq = 0 AND rev_to IS NULL AND doc_id = "
			       "(SELECT id FROM docs WHERE path = %Q)", HISTORY);
	assert_string_equal(key, "1700000000001");

	/* A task known from its files first gets its workspace from history later. */
	assert_int_equal(commit(f->st, "tasks/1700000000005/ui_messages.json", "[]"), 0);
	none = task_workspace_key(f->path, "1700000000005");
	assert_null(none);

	assert_int_equal(commit(f->st, HISTORY, h2), 0);
	assert_task_workspace(f->path, "1700000000001", "3301258620"); /* stays where it began */
	assert_task_workspace(f->path, "1700000000004", "3301258620");
	assert_task_workspace(f->path, "1700000000005", "3301258620");
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM workspaces WHERE key = '3301258620'"), 1);
	/* Tasks dropped from the list keep theirs. */
	assert_task_workspace(f->path, "1700000000002", "691006855");
}

/* ---- Cline CLI 3.x sessions ----------------------------------------------------------- */

#define SID "1795505492931_317uf"
#define SESSION_MSGS "sessions/" SID "/" SID ".messages.json"
#define SESSION_MANIFEST "sessions/" SID "/" SID ".json"

/* A session's conversation as the CLI writes it: pretty-printed, the array not last. */
#define SESSION_DOC(msgs) \
	"{\n  \"version\": 1,\n  \"agent\": \"lead\",\n  \"sessionId\": \"" SID "\",\n  \"messages\": [" msgs \
	"\n  ],\n  \"system_prompt\": \"You are Cline.\"\n}\n"
#define MSG_A "\n    {\n      \"id\": \"a\",\n      \"role\": \"user\",\n      \"content\": \"hi\",\n      \"ts\": 10\n    }"
#define MSG_B "\n    {\n      \"id\": \"b\",\n      \"role\": \"assistant\",\n      \"content\": \"yes\",\n      \"ts\": 20\n    }"
#define MSG_B2 "\n    {\n      \"id\": \"b\",\n      \"role\": \"assistant\",\n      \"content\": \"yes, done\",\n      \"ts\": 20\n    }"
#define MSG_C "\n    {\n      \"id\": \"c\",\n      \"role\": \"user\",\n      \"content\": \"from A\",\n      \"ts\": 30\n    }"
#define MSG_D "\n    {\n      \"id\": \"d\",\n      \"role\": \"user\",\n      \"content\": \"from B\",\n      \"ts\": 30\n    }"

/* The base a writer takes when it opens path now. */
static struct store_base *base_now(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	struct store_base *b = NULL;

	assert_int_equal(store_snap_open(st, path, &snap), 0);
	assert_int_equal(store_base_from_snap(snap, &b), 0);
	store_snap_free(snap);
	return b;
}

static int commit_from(struct store *st, const char *path, const char *json, const struct store_base *base)
{
	struct store_commit c = { .path = path, .data = json, .len = strlen(json), .who = &who, .kind = "write",
				  .merge = true, .base = base };

	return store_commit(st, &c, NULL, NULL);
}

static void test_session(void **state)
{
	struct fixture *f = *state;
	struct store_base *ba, *bb;
	struct store_line line = { "{\"id\":\"e\",\"role\":\"user\",\"content\":\"appended\",\"ts\":40}", 0 };
	_cleanup_free_ char *key = NULL, *ws = NULL;

	/* Stored as written, one message a row, the object around it kept. */
	assert_int_equal(commit(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B)), 0);
	assert_doc_str(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B));
	assert_int_equal(db_int(f->path, "SELECT nelems FROM docs WHERE path = %Q", SESSION_MSGS), 2);
	assert_int_equal(db_int(f->path, "SELECT count(*) FROM elems WHERE key IN ('a', 'b') AND rev_to IS NULL"), 2);

	/* The manifest teaches the session's workspace. */
	assert_int_equal(commit(f->st, SESSION_MANIFEST,
				"{\"session_id\":\"" SID "\",\"cwd\":\"/elsewhere\","
				"\"workspace_root\":\"/home/dev/projects/webapp\"}"), 0);
	key = task_workspace_key(f->path, SID);
	assert_non_null(key);
	assert_string_equal(key, "691006855");
	ws = db_text(f->path, "SELECT path FROM workspaces WHERE key = '691006855'");
	assert_string_equal(ws, "/home/dev/projects/webapp");

	/*
	 * Two writers read the same version; A adds c and completes b, B adds d.
	 * Identity is the message's id: both additions stay, b is A's.
	 */
	ba = base_now(f->st, SESSION_MSGS);
	bb = base_now(f->st, SESSION_MSGS);
	assert_int_equal(commit_from(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B2 "," MSG_C), ba), 0);
	assert_int_equal(commit_from(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B "," MSG_D), bb), 0);
	assert_doc_str(f->st, SESSION_MSGS, SESSION_DOC(MSG_A "," MSG_B2 "," MSG_C "," MSG_D));
	store_base_free(ba);
	store_base_free(bb);

	/* An append (>> to the view) adds one row inside the array, the rest kept. */
	line.len = strlen(line.data);
	assert_int_equal(store_doc_append(f->st, SESSION_MSGS, &line, 1, "role", &who), 0);
	assert_doc_str(f->st, SESSION_MSGS,
		       SESSION_DOC(MSG_A "," MSG_B2 "," MSG_C "," MSG_D ",{\"id\":\"e\",\"role\":\"user\","
				   "\"content\":\"appended\",\"ts\":40}"));

	/* Not a session's shape: refused, nothing changes. */
	assert_int_equal(commit(f->st, SESSION_MSGS, "[]"), -EINVAL);
	assert_int_equal(commit(f->st, SESSION_MSGS, "{\"messages\": {}}"), -EINVAL);
	assert_int_equal(commit(f->st, SESSION_MSGS, "{\"version\": 1}"), -EINVAL);
	assert_int_equal(db_int(f->path, "SELECT nelems FROM docs WHERE path = %Q", SESSION_MSGS), 5);

	/* Trash and restore take the session's docs by its id. */
	assert_int_equal(store_task_trash(f->st, SID, &who), 0);
	assert_int_equal(store_doc_stat(f->st, SESSION_MSGS, &(struct store_stat){ 0 }), -ENOENT);
	assert_int_equal(store_task_restore(f->st, SID, &who), 0);
	assert_int_equal(db_int(f->path, "SELECT nelems FROM docs WHERE path = %Q", SESSION_MSGS), 5);
	/* A session is the client's to make, not mkdir's. */
	assert_int_equal(store_task_create(f->st, "new_session", NULL, &who), -EINVAL);
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
		cmocka_unit_test_setup_teardown(test_round_trip_arrays, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_whole, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_offsets_and_sizes, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_large_element, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_snapshots, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_revisions_kept, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_json_refused, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_commit_raw, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_create_remove, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_workspaces, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_session, setup_store, teardown),
		cmocka_unit_test(test_memory_store),
		cmocka_unit_test(test_errno_mapping),
		cmocka_unit_test_setup_teardown(test_readonly, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup_store, teardown),
		cmocka_unit_test_setup_teardown(test_meta, setup_store, teardown),
	};

	log_set_level(LOG_LEVEL_ERR);
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
