/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TEST_STORE_FIXTURE_H
#define CONVFS_TEST_STORE_FIXTURE_H

/*
 * What the unit tests of the store (test_store.c, test_store_docs.c,
 * test_store_tasks.c) share, in store_fixture.c: the cmocka fixture of a
 * private directory, usually with a store file open in it (*state is a
 * struct fixture); plain sqlite3 on that file, to check what the interface
 * cannot show; and docs committed and read back byte for byte.
 */
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/store.h"

#define UI "tasks/1/ui_messages.json"
#define API "tasks/1/api_conversation_history.json"
#define META "tasks/1/task_metadata.json"
#define HISTORY "state/taskHistory.json"

/* Who commits, unless a test says otherwise: pid 4242, "code". */
extern const struct store_who who;

/* ---- fixture: a private directory, usually with an open store ------------------ */

struct fixture {
	char dir[256];
	char path[300];
	struct store *st;
};

/* The directory alone (f->path names a store file not made yet), or with a store open in f->st. */
int setup_dir(void **state);
int setup_store(void **state);
/* Frees the store, if open, and removes the directory. */
int teardown(void **state);
void close_store(struct fixture *f);

/* ---- plain sqlite3 ------------------------------------------------------------- */

sqlite3 *db_open(const char *path);
/* Runs sql on the store file through a connection of its own; fails the test if it fails. */
void db_exec(const char *path, const char *sql);
int64_t db_int(const char *path, const char *fmt, ...);
char *db_text(const char *path, const char *fmt, ...);

/* ---- committing and reading docs ------------------------------------------------ */

int commit(struct store *st, const char *path, const char *json);
/* Reads all of snap, chunk bytes a call, each read full; a NUL-terminated copy to free(). */
char *snap_read_all(struct store *st, struct store_snap *snap, size_t chunk, size_t *ret_len);
void assert_snap_reads(struct store *st, struct store_snap *snap, const char *data, size_t len);
void assert_doc(struct store *st, const char *path, const char *data, size_t len);
void assert_doc_str(struct store *st, const char *path, const char *json);

#endif
