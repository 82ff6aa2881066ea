/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bases.c: fs/commit/bases.c alone, the merge base each writer keeps per doc.
 *
 * A base a writer read never replaces one it wrote: else a later commit of
 * that writer would count as seen, and remove, what others added after the
 * version it wrote. Two threads of one writer put a written and a read base
 * at the same moment, over and over; every time, the written one must stay.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/fs.h"
#include "store/doc_internal.h"
#include "store/store.h"

#define DOC "tasks/1/ui_messages.json"
#define ROUNDS 20000

static const struct store_who who = { .pid = 1, .comm = "test" };
static const struct fs_proc writer = { .tgid = 4242, .start = 1 };

struct racer {
	struct bases *b;
	pthread_barrier_t *start;
	struct store_base *base;
};

static void *put(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->start);
	bases_put(r->b, &writer, DOC, r->base);
	return NULL;
}

static struct store_base *base(struct store *st, bool read)
{
	struct store_base *b = NULL;

	assert_int_equal(store_base_at(st, DOC, 1, &b), 0);
	b->read = read;
	return b;
}

static void test_read_never_replaces_written(void **state)
{
	struct store *st = NULL;
	struct bases *b = NULL;
	pthread_barrier_t start;
	unsigned lost = 0;

	assert_int_equal(store_open(":memory:", 0, &st), 0);
	assert_int_equal(store_doc_commit(st, DOC, "[]", 2, &who, "write"), 0);
	assert_int_equal(bases_new(&b), 0);
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	for (unsigned i = 0; i < ROUNDS; i++) {
		struct racer w = { b, &start, base(st, false) }, r = { b, &start, base(st, true) };
		struct store_base *got;
		pthread_t tw, tr;

		assert_int_equal(pthread_create(&tw, NULL, put, &w), 0);
		assert_int_equal(pthread_create(&tr, NULL, put, &r), 0);
		pthread_join(tw, NULL);
		pthread_join(tr, NULL);
		got = bases_take(b, &writer, DOC);
		assert_non_null(got);
		lost += store_base_is_read(got);
		store_base_free(got);
	}
	assert_int_equal(lost, 0);
	pthread_barrier_destroy(&start);
	bases_free(b);
	store_free(st);
}

/*
 * fs_proc_get() keeps what it read of a thread for a tenth of a second, then
 * reads /proc again: the thread's new name shows within it, not sooner
 * (kept), and not later (read again).
 */
static void test_proc_kept_a_tenth_of_a_second(void **state)
{
	pid_t tid = gettid();
	struct fs_proc p;
	struct timespec pause = { 0, 150000000 };

	(void)state;
	assert_int_equal(prctl(PR_SET_NAME, "convfs-before"), 0);
	assert_int_equal(fs_proc_get(tid, &p), 0);
	assert_string_equal(p.comm, "convfs-before");
	assert_int_equal(p.tgid, getpid());
	assert_int_equal(prctl(PR_SET_NAME, "convfs-after"), 0);
	assert_int_equal(fs_proc_get(tid, &p), 0);
	assert_string_equal(p.comm, "convfs-before");
	nanosleep(&pause, NULL);
	assert_int_equal(fs_proc_get(tid, &p), 0);
	assert_string_equal(p.comm, "convfs-after");
	assert_int_equal(p.tgid, getpid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_never_replaces_written),
		cmocka_unit_test(test_proc_kept_a_tenth_of_a_second),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
