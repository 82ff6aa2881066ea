/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_warnings.c: fs/cmd/warnings.c alone, the file of warnings beside a store
 * that `convfs status` reads: warnings and errors go there (info does not),
 * counted, owner-only; the last lines are read back oldest first; past its
 * bound the file is cut back and keeps the newest lines and the exact
 * count; a new mount starts a new file; a file that is not one is refused.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "fs/cmd/warnings.h"
#include "store/util.h"

struct dir {
	char path[64];
	char store[96];
	char file[112];
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->path, sizeof(d->path), "/tmp/convfs-test-warnings.XXXXXX");
	if (!mkdtemp(d->path))
		return -1;
	snprintf(d->store, sizeof(d->store), "%s/s.db", d->path);
	snprintf(d->file, sizeof(d->file), "%s%s", d->store, WARNINGS_SUFFIX);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;

	log_set_sink(NULL);
	unlink(d->file);
	rmdir(d->path);
	free(d);
	return 0;
}

/* Runs with stderr to /dev/null: the lines go there too. */
static int quiet(void)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);

	assert_true(saved >= 0 && null >= 0);
	dup2(null, STDERR_FILENO);
	close(null);
	return saved;
}

static void loud(int saved)
{
	dup2(saved, STDERR_FILENO);
	close(saved);
}

static void test_count_and_last(void **state)
{
	struct dir *d = *state;
	struct warnings w = { 0 };
	struct stat st;
	int saved;

	assert_int_equal(warnings_read(d->store, 5, &w), -ENOENT);
	assert_int_equal(warnings_start(d->store), 0);
	assert_int_equal(stat(d->file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	saved = quiet();
	log_warn("first '%s'", "a");
	log_info("not a warning");
	log_err("second");
	log_warn("third");
	loud(saved);
	assert_int_equal(warnings_read(d->store, 2, &w), 0);
	assert_int_equal(w.count, 3);
	assert_true(w.since_ns > 0 && w.since_ns <= now_ns());
	assert_int_equal(w.nlast, 2);
	assert_non_null(strstr(w.last[0], " error: second"));
	assert_non_null(strstr(w.last[1], " warning: third"));
	warnings_release(&w);
	assert_int_equal(warnings_read(d->store, 10, &w), 0);
	assert_int_equal(w.nlast, 3);
	assert_non_null(strstr(w.last[0], "warning: first 'a'"));
	warnings_release(&w);

	/* A new mount: a new file. */
	assert_int_equal(warnings_start(d->store), 0);
	assert_int_equal(warnings_read(d->store, 10, &w), 0);
	assert_int_equal(w.count, 0);
	assert_int_equal(w.nlast, 0);
	warnings_release(&w);
}

/* Bounded: the newest lines and the exact count stay. */
static void test_bound(void **state)
{
	struct dir *d = *state;
	struct warnings w = { 0 };
	struct stat st;
	int saved;

	assert_int_equal(warnings_start(d->store), 0);
	saved = quiet();
	for (int i = 0; i < 6000; i++)
		log_warn("line %05d of a run that says the same thing again and again and again", i);
	loud(saved);
	assert_int_equal(stat(d->file, &st), 0);
	assert_true(st.st_size <= 256 * 1024 + 1200);
	assert_int_equal(warnings_read(d->store, 1, &w), 0);
	assert_int_equal(w.count, 6000);
	assert_int_equal(w.nlast, 1);
	assert_non_null(strstr(w.last[0], "line 05999 of"));
	warnings_release(&w);
}

/* A file that is not ours. */
static void test_not_ours(void **state)
{
	struct dir *d = *state;
	struct warnings w = { 0 };
	FILE *f = fopen(d->file, "w");

	assert_non_null(f);
	fputs("something else\n", f);
	fclose(f);
	assert_int_equal(warnings_read(d->store, 5, &w), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_count_and_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_ours, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
