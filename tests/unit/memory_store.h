/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TEST_MEMORY_STORE_H
#define CONVFS_TEST_MEMORY_STORE_H

/*
 * The cmocka fixture of the unit tests that work on a store: a new store in
 * memory for each test (*state), freed after it.
 */
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

#endif
