/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_shares.c: fs/ops/shares.c alone, the shares of the daemon's open files
 * that other users of a shared mount get: a quarter of the limit each, half
 * for all of them, the owner never counted, and what a handle gives back
 * free again; and the space a daemon run by root keeps for root, on the
 * filesystem of a temp folder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/ops/shares.h"

#define OWNER 1000

/* Takes n for uid into c[0..n); returns how many were granted before the first refusal. */
static size_t take(struct shares *s, uid_t uid, struct fd_charge *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = shares_fd_take(s, uid, &c[i]);

		if (r < 0) {
			assert_int_equal(r, -EMFILE);
			assert_false(c[i].held);
			return i;
		}
	}
	return n;
}

static void test_fd_shares(void **state)
{
	struct fd_charge a[300], b[300], c[10], o[2000];
	struct shares *s = NULL;

	assert_int_equal(shares_new(OWNER, 1024, &s), 0);
	/* The owner is never counted, nor refused. */
	assert_int_equal(take(s, OWNER, o, 2000), 2000);
	for (size_t i = 0; i < 2000; i++)
		assert_false(o[i].held);
	/* One other user: a quarter. */
	assert_int_equal(take(s, 2001, a, 300), 256);
	/* A second: a quarter too; then all of them hold half, and a third gets none. */
	assert_int_equal(take(s, 2002, b, 300), 256);
	assert_int_equal(take(s, 2003, c, 10), 0);
	/* Given back, it is free again: for the one who gave it, and for the third. */
	shares_fd_put(&a[0]);
	assert_false(a[0].held);
	shares_fd_put(&a[0]); /* twice is once */
	assert_int_equal(take(s, 2003, c, 10), 1);
	assert_int_equal(take(s, 2001, a, 1), 0);
	shares_fd_put(&c[0]);
	assert_int_equal(take(s, 2001, a, 1), 1);
	/* A charge handed on moves, and the one it left holds nothing. */
	struct fd_charge moved = shares_fd_move(&a[0]);

	assert_true(moved.held);
	assert_false(a[0].held);
	shares_fd_put(&moved);
	for (size_t i = 1; i < 256; i++)
		shares_fd_put(&a[i]);
	for (size_t i = 0; i < 256; i++)
		shares_fd_put(&b[i]);
	/* All given back: the whole share again. */
	assert_int_equal(take(s, 2003, c, 10), 10);
	for (size_t i = 0; i < 10; i++)
		shares_fd_put(&c[i]);
	shares_free(s);
	/* Without shares nothing is counted. */
	assert_int_equal(shares_fd_take(NULL, 2001, &c[0]), 0);
	assert_false(c[0].held);
}

static void test_space(void **state)
{
	char dir[] = "/tmp/convfs-test-shares.XXXXXX";
	struct shares *s = NULL;
	struct statvfs sv;
	int fd;

	assert_non_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(fstatvfs(fd, &sv), 0);
	assert_int_equal(shares_new(OWNER, 1024, &s), 0);
	/* Not watched: nothing is refused. */
	assert_int_equal(shares_space(s, 2001, UINT64_MAX / 2), 0);
	shares_watch_space(s, fd);
	/* root is never refused; others within what non-root may use are let through. */
	assert_int_equal(shares_space(s, 0, UINT64_MAX / 2), 0);
	assert_int_equal(shares_space(s, 2001, 4096), 0);
	/* Past it: refused, where the filesystem keeps blocks for root (tmpfs keeps none). */
	assert_int_equal(shares_space(s, 2001, (uint64_t)sv.f_bavail * sv.f_frsize + 1),
			 sv.f_bfree > sv.f_bavail ? -ENOSPC : 0);
	shares_free(s);
	close(fd);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fd_shares),
		cmocka_unit_test(test_space),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
