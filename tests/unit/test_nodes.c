/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nodes.c: fs/kernel/nodes.c and states.c alone: the opens under way on
 * a version node, and the kernel told of a node that leaves.
 *
 * A reader whose version node went stale (its doc changed after the lookup)
 * must not fail while another open of the node is under way: that open may
 * have read the node's version before the change and be about to record its
 * handle, so the reader waits for it, and then shares that handle's version
 * (-EAGAIN: look again) or, with no handle, makes the node an ordinary one.
 * Two stale readers never wait for each other. Each case runs on threads,
 * under an alarm that fails the test if a wait never ends.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/kernel/nodes.h"

/* The table each case runs on: made anew by setup(). */
static struct nodes *t;

struct stale_call {
	fuse_ino_t ino;
	pid_t pid;
	bool again;
	int r;
	bool left;
	bool done;
	pthread_t thread;
};

static void *stale_open(void *arg)
{
	struct stale_call *c = arg;

	c->r = nodes_open_stale(t, c->ino, c->pid, c->again, &c->left);
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void stale_start(struct stale_call *c)
{
	assert_int_equal(pthread_create(&c->thread, NULL, stale_open, c), 0);
}

static void stale_join(struct stale_call *c)
{
	assert_int_equal(pthread_join(c->thread, NULL), 0);
}

/* A doc's node for revision rev, as a lookup makes it. */
static fuse_ino_t version_node(const char *name, int64_t rev)
{
	struct stat st = { .st_mode = S_IFREG | 0600, .st_nlink = 1, .st_size = 10 };
	bool version = false;
	fuse_ino_t ino = nodes_lookup_version(t, FUSE_ROOT_ID, name, rev, &st, &version);

	assert_true(ino != 0);
	assert_true(version);
	return ino;
}

/* A reader's open of ino begins: it gets the node's version. */
static void reader_begins(fuse_ino_t ino, pid_t pid, int64_t want)
{
	int64_t ver = -1;
	bool left = true;

	assert_int_equal(nodes_open_begin(t, ino, false, pid, &ver, &left), 0);
	assert_int_equal(ver, want);
	assert_false(left);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_nodes: a wait never ended\n";

	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static int setup(void **state)
{
	(void)state;
	signal(SIGALRM, on_alarm);
	alarm(20);
	return nodes_new(&t);
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	nodes_free(t);
	t = NULL;
	return 0;
}

/* Alone on its node, a stale reader makes it ordinary at once. */
static void test_stale_reader_alone_leaves(void **state)
{
	fuse_ino_t ino = version_node("alone", 3);
	struct stale_call c = { .ino = ino, .pid = 100 };
	struct stat st;

	(void)state;
	reader_begins(ino, 100, 3);
	stale_open(&c);
	assert_int_equal(c.r, 0);
	assert_true(c.left);
	assert_false(nodes_version_stat(t, ino, &st));
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	nodes_forget(t, ino, 1);
}

/*
 * Another reader's open is under way (it read version 5 before the change):
 * the stale reader waits for it instead of failing, and once that open has
 * recorded its handle, is told to share it (-EAGAIN). Without the wait it
 * returned -ESTALE at once, and the kernel's one retry could fail the same
 * way: the open() failed.
 */
static void test_stale_reader_waits_for_open_under_way(void **state)
{
	fuse_ino_t ino = version_node("shared", 5);
	struct stale_call c = { .ino = ino, .pid = 200 };
	const uint64_t fh = 0x1234;

	(void)state;
	reader_begins(ino, 100, 5);
	reader_begins(ino, 200, 5);
	stale_start(&c);
	sleep_ms(200);
	assert_false(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE));
	assert_int_equal(nodes_open_end(t, ino, &fh), 0); /* the first reader's handle */
	stale_join(&c);
	assert_int_equal(c.r, -EAGAIN);
	assert_false(c.left);
	assert_true(nodes_with_open(t, ino, NULL, NULL));
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	nodes_open_remove(t, ino, fh);
	nodes_forget(t, ino, 1);
}

/* The open under way ends without a handle: the stale reader then leaves the node. */
static void test_stale_reader_after_failed_open(void **state)
{
	fuse_ino_t ino = version_node("failed", 6);
	struct stale_call c = { .ino = ino, .pid = 200 };

	(void)state;
	reader_begins(ino, 100, 6);
	reader_begins(ino, 200, 6);
	stale_start(&c);
	sleep_ms(100);
	assert_false(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE));
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	stale_join(&c);
	assert_int_equal(c.r, 0);
	assert_true(c.left);
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	nodes_forget(t, ino, 1);
}

/*
 * Two readers of the node both found it stale: neither waits for the other
 * for good, one makes the node ordinary and the other finds it so; neither
 * gets -ESTALE.
 */
static void test_stale_readers_do_not_wait_for_each_other(void **state)
{
	fuse_ino_t ino = version_node("both", 7);
	struct stale_call a = { .ino = ino, .pid = 100 }, b = { .ino = ino, .pid = 200 };
	struct stat st;

	(void)state;
	reader_begins(ino, 100, 7);
	reader_begins(ino, 200, 7);
	stale_start(&a);
	stale_start(&b);
	stale_join(&a);
	stale_join(&b);
	assert_int_equal(a.r, 0);
	assert_int_equal(b.r, 0);
	assert_true(a.left != b.left);
	assert_false(nodes_version_stat(t, ino, &st));
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	nodes_forget(t, ino, 1);
}

/*
 * The kernel's attributes of a node that left are dropped before any open can
 * find it ordinary. The hook below stands for the drop and takes its time; a
 * reader's open begun meanwhile (it walked to the node before the doc
 * changed) must not find the node ordinary until the drop is done: it would
 * read the doc as it is now, cut to the old version's size the kernel still
 * has. (The drop was once made after the table lock was let go with nothing
 * to stop such an open, and such reads came back cut short with several
 * windows on one task: the node is LEAVING until the drop is done.)
 */
struct left_watch {
	fuse_ino_t ino;
	int dropped;          /* hook calls that have ended */
	int64_t other_ver;    /* what the other reader's open found */
	int dropped_then;     /* drops ended when it found it */
	pthread_t other;
	bool other_started;
};

static struct left_watch watch;

static void *other_reader(void *arg)
{
	bool left = true;

	(void)arg;
	assert_int_equal(nodes_open_begin(t, watch.ino, false, 300, &watch.other_ver, &left), 0);
	watch.dropped_then = __atomic_load_n(&watch.dropped, __ATOMIC_ACQUIRE);
	return NULL;
}

static void slow_drop(void *arg, fuse_ino_t ino)
{
	(void)arg;
	assert_true(ino == watch.ino);
	if (!watch.other_started) {
		watch.other_started = true;
		assert_int_equal(pthread_create(&watch.other, NULL, other_reader, NULL), 0);
		sleep_ms(100);
	}
	__atomic_add_fetch(&watch.dropped, 1, __ATOMIC_RELEASE);
}

static void test_left_node_attributes_dropped_first(void **state)
{
	fuse_ino_t ino = version_node("dropped", 8);
	struct stale_call c = { .ino = ino, .pid = 100 };
	int64_t ver = -1;
	bool left = false;

	(void)state;
	watch = (struct left_watch){ .ino = ino, .other_ver = -1 };
	nodes_set_left_hook(t, slow_drop, NULL);
	reader_begins(ino, 100, 8);
	stale_open(&c);
	assert_int_equal(c.r, 0);
	assert_true(c.left);
	assert_int_equal(watch.dropped, 1);
	assert_true(watch.other_started);
	assert_int_equal(pthread_join(watch.other, NULL), 0);
	assert_int_equal(watch.other_ver, 0);
	assert_int_equal(watch.dropped_then, 1);
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	nodes_forget(t, ino, 1);

	/* A writer's open and a chmod make a node leave through the same hook. */
	watch = (struct left_watch){ .ino = version_node("written", 9), .other_started = true };
	assert_int_equal(nodes_open_begin(t, watch.ino, true, 100, &ver, &left), 0);
	assert_true(left);
	assert_int_equal(watch.dropped, 1);
	assert_int_equal(nodes_open_end(t, watch.ino, NULL), 0);
	nodes_forget(t, watch.ino, 1);
	watch = (struct left_watch){ .ino = version_node("chmodded", 10), .other_started = true };
	assert_int_equal(nodes_version_leave(t, watch.ino, false, 100), 0);
	assert_int_equal(watch.dropped, 1);
	nodes_forget(t, watch.ino, 1);
	nodes_set_left_hook(t, NULL, NULL);
}

/*
 * The kernel is told with no lock of the table held: telling it may take as
 * long as the kernel likes, and every request needs the table. The hook
 * below looks a path up in the table and asks whether the node is open,
 * which takes the table's lock: made under it, as it once was, the hook
 * waits for itself and the alarm ends the test.
 */
static int hook_calls;

static void hook_takes_table(void *arg, fuse_ino_t ino)
{
	(void)arg;
	(void)nodes_find(t, "told");
	(void)nodes_with_open(t, ino, NULL, NULL);
	hook_calls++;
}

static void test_left_told_without_table_lock(void **state)
{
	fuse_ino_t ino = version_node("told", 11);
	struct stale_call c = { .ino = ino, .pid = 100 };
	int64_t ver = -1;
	bool left = false;

	(void)state;
	hook_calls = 0;
	nodes_set_left_hook(t, hook_takes_table, NULL);
	reader_begins(ino, 100, 11);
	stale_open(&c); /* a stale reader alone */
	assert_int_equal(c.r, 0);
	assert_true(c.left);
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	nodes_forget(t, ino, 1);
	ino = version_node("told", 12);
	assert_int_equal(nodes_open_begin(t, ino, true, 100, &ver, &left), 0); /* a writer */
	assert_true(left);
	assert_int_equal(nodes_open_end(t, ino, NULL), 0);
	ino = version_node("told", 13);
	assert_int_equal(nodes_version_leave(t, ino, false, 100), 0); /* a chmod */
	assert_int_equal(hook_calls, 3);
	nodes_set_left_hook(t, NULL, NULL);
}

/*
 * A writer opens a version another reader has open: the open fails with
 * -ESTALE, and the name gets an ordinary node held for the writer's retry,
 * which a lookup of the doc's next version finds (not a version node) and
 * which the writer's retry then opens, ordinary from then on.
 */
static void test_shared_version_held_for_retry(void **state)
{
	fuse_ino_t ino = version_node("held", 20), held;
	struct stat st = { .st_mode = S_IFREG | 0600, .st_nlink = 1, .st_size = 12 };
	const uint64_t fh = 0x99;
	int64_t ver = -1;
	bool version = true, left = true;

	(void)state;
	reader_begins(ino, 100, 20);
	assert_int_equal(nodes_open_end(t, ino, &fh), 0);
	assert_int_equal(nodes_open_begin(t, ino, true, 200, &ver, &left), -ESTALE);
	assert_false(left);
	assert_true(nodes_version_stat(t, ino, &st)); /* its reader's version stays */
	held = nodes_lookup_version(t, FUSE_ROOT_ID, "held", 21, &st, &version);
	assert_true(held != 0 && held != ino);
	assert_false(version);
	assert_int_equal(nodes_open_begin(t, held, true, 200, &ver, &left), 0);
	assert_int_equal(ver, 0);
	assert_int_equal(nodes_open_end(t, held, NULL), 0);
	/* Retried: the next lookup gets a version node again. */
	assert_true(nodes_lookup_version(t, FUSE_ROOT_ID, "held", 21, &st, &version) != held);
	assert_true(version);
	nodes_open_remove(t, ino, fh);
}

static void count_release(uint64_t fh, void *arg)
{
	uint64_t *seen = arg;

	seen[fh]++;
}

/*
 * Handles the kernel never released (an unmount that tore the connection down
 * with releases still on their way) are each handed over once at the end, on
 * a node still looked up and on one the kernel forgot, and not again after.
 */
static void test_handles_left_released_once(void **state)
{
	uint64_t fh1 = 1, fh2 = 2, seen[3] = { 0 };
	fuse_ino_t a, b;

	(void)state;
	a = nodes_lookup(t, FUSE_ROOT_ID, "a", S_IFREG, &fh1);
	b = nodes_lookup(t, FUSE_ROOT_ID, "b", S_IFREG, &fh2);
	assert_true(a != 0 && b != 0);
	nodes_forget(t, b, 1);
	nodes_release_left(t, count_release, seen);
	assert_int_equal(seen[1], 1);
	assert_int_equal(seen[2], 1);
	nodes_release_left(t, count_release, seen);
	assert_int_equal(seen[1] + seen[2], 2);
}

static bool any_node(const char *const *up, size_t n)
{
	(void)up;
	(void)n;
	return true;
}

/* Accepts the nodes named b whose folder is d. */
static bool is_d_b(const char *const *up, size_t n)
{
	return n == 2 && strcmp(up[0], "b") == 0 && strcmp(up[1], "d") == 0;
}

static bool refs_hold(const struct node_ref *v, size_t n, fuse_ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].ino == ino)
			return true;
	return false;
}

/*
 * A walk of the table finds every node still under its name, with the names
 * of the folders above it, and none removed or replaced: after lookups, a
 * removal, a rename and a version that replaced another.
 */
static void test_collect_finds_named_nodes_only(void **state)
{
	struct node_ref *v = NULL;
	fuse_ino_t d, b, gone, moved, old, cur;
	size_t n = 0;

	(void)state;
	d = nodes_lookup(t, FUSE_ROOT_ID, "d", S_IFDIR, NULL);
	b = nodes_lookup(t, d, "b", S_IFREG, NULL);
	gone = nodes_lookup(t, FUSE_ROOT_ID, "gone", S_IFREG, NULL);
	moved = nodes_lookup(t, FUSE_ROOT_ID, "x", S_IFREG, NULL);
	assert_true(d != 0 && b != 0 && gone != 0 && moved != 0);
	old = version_node("doc", 1);
	cur = version_node("doc", 2);
	assert_true(old != cur);
	nodes_removed(t, FUSE_ROOT_ID, "gone");
	nodes_renamed(t, FUSE_ROOT_ID, "x", d, "y", false);

	assert_int_equal(nodes_collect(t, any_node, &v, &n), 0);
	assert_int_equal(n, 4);
	assert_true(refs_hold(v, n, d) && refs_hold(v, n, b) && refs_hold(v, n, moved) && refs_hold(v, n, cur));
	assert_false(refs_hold(v, n, gone) || refs_hold(v, n, old));
	free(v);

	assert_int_equal(nodes_collect(t, is_d_b, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_true(v[0].ino == b);
	free(v);
}

/*
 * A version node answers stat() with the attributes its lookup gave, every
 * field a file's attributes carry to the kernel, as they were: the node
 * keeps them in fewer bytes than a struct stat.
 */
static void test_version_attributes_kept_whole(void **state)
{
	struct stat st = {
		.st_ino = 0x123456789abcULL,
		.st_mode = S_IFREG | 0640,
		.st_nlink = 3,
		.st_uid = 1000,
		.st_gid = 4000000000u,
		.st_size = (off_t)5 << 40,
		.st_blksize = 4096,
		.st_blocks = ((off_t)5 << 40) / 512,
		.st_atim = { .tv_sec = -86400, .tv_nsec = 1 },
		.st_mtim = { .tv_sec = 1765000000, .tv_nsec = 999999999 },
		.st_ctim = { .tv_sec = (time_t)1 << 40, .tv_nsec = 500 },
	};
	struct stat got;
	bool version = false;
	fuse_ino_t ino;

	(void)state;
	ino = nodes_lookup_version(t, FUSE_ROOT_ID, "doc", 7, &st, &version);
	assert_true(ino != 0 && version);
	memset(&got, 0xa5, sizeof(got));
	assert_true(nodes_version_stat(t, ino, &got));
	assert_int_equal(got.st_ino, st.st_ino);
	assert_int_equal(got.st_mode, st.st_mode);
	assert_int_equal(got.st_nlink, st.st_nlink);
	assert_int_equal(got.st_uid, st.st_uid);
	assert_int_equal(got.st_gid, st.st_gid);
	assert_int_equal(got.st_size, st.st_size);
	assert_int_equal(got.st_blksize, st.st_blksize);
	assert_int_equal(got.st_blocks, st.st_blocks);
	assert_int_equal(got.st_rdev, 0);
	assert_memory_equal(&got.st_atim, &st.st_atim, sizeof(st.st_atim));
	assert_memory_equal(&got.st_mtim, &st.st_mtim, sizeof(st.st_mtim));
	assert_memory_equal(&got.st_ctim, &st.st_ctim, sizeof(st.st_ctim));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stale_reader_alone_leaves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_reader_waits_for_open_under_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_reader_after_failed_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_readers_do_not_wait_for_each_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_node_attributes_dropped_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_told_without_table_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_version_held_for_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handles_left_released_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collect_finds_named_nodes_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_version_attributes_kept_whole, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
