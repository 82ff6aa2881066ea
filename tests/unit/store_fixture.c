/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store_fixture.c: what the store's unit tests share (store_fixture.h): a
 * private temporary directory for each test, usually with a fresh store
 * file in it; that file opened with plain sqlite3 on the side; docs
 * committed and read back through snapshots in pieces of several sizes.
 */
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/util.h"
#include "tests/unit/store_fixture.h"

const struct store_who who = { .pid = 4242, .comm = "code" };

/* ---- fixture: a private directory, usually with an open store ------------------ */

int setup_dir(void **state)
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

int setup_store(void **state)
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

int teardown(void **state)
{
	struct fixture *f = *state;

	store_free(f->st);
	nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* Closes the fixture's store (so that plain sqlite3 sees a file at rest). */
void close_store(struct fixture *f)
{
	store_free(f->st);
	f->st = NULL;
}

/* ---- plain sqlite3 ------------------------------------------------------------- */

sqlite3 *db_open(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
		fail_msg("cannot open '%s' with sqlite3: %s", path, sqlite3_errmsg(db));
	return db;
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

void db_exec(const char *path, const char *sql)
{
	sqlite3 *db = db_open(path);
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("'%s' failed: %s", sql, msg);
	sqlite3_close(db);
}

int64_t db_int(const char *path, const char *fmt, ...)
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

char *db_text(const char *path, const char *fmt, ...)
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

int commit(struct store *st, const char *path, const char *json)
{
	return store_doc_commit(st, path, json, strlen(json), &who, "write");
}

/*
 * Reads all of snap, chunk bytes a call, checking that every read is full
 * (FUSE takes a short read for the end of the file). Returns a NUL-terminated
 * copy to free().
 */
char *snap_read_all(struct store *st, struct store_snap *snap, size_t chunk, size_t *ret_len)
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

void assert_snap_reads(struct store *st, struct store_snap *snap, const char *data, size_t len)
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
void assert_doc(struct store *st, const char *path, const char *data, size_t len)
{
	struct store_snap *snap = NULL;
	struct store_stat s;

	assert_int_equal(store_doc_stat(st, path, &s), 0);
	assert_int_equal(s.size, len);
	assert_int_equal(store_snap_open(st, path, &snap), 0);
	assert_snap_reads(st, snap, data, len);
	store_snap_free(snap);
}

void assert_doc_str(struct store *st, const char *path, const char *json)
{
	assert_doc(st, path, json, strlen(json));
}
