/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TEST_MEMORY_STORE_H
#define CONVFS_TEST_MEMORY_STORE_H

/*
 * The cmocka fixture of the unit tests that work on a store: a new store in
 * memory for each test (*state), freed after it. The few tests that need a
 * store file (to open it read-only) make it in a directory of their own and
 * remove both with remove_store_file().
 */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "store/store.h"

static inline int setup(void **state)
{
	struct store *st = NULL;

	if (store_open(":memory:", 0, &st) < 0)
		return -1;
	*state = st;
	return 0;
}

static inline int teardown(void **state)
{
	store_free(*state);
	return 0;
}

/*
 * Removes the store file path, its -wal and -shm (a read-only connection
 * leaves both behind), and its directory dir, which must then be empty.
 */
static inline void remove_store_file(const char *dir, const char *path)
{
	char side[PATH_MAX];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	assert_int_equal(rmdir(dir), 0);
}

#endif
