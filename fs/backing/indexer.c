/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * indexer.c: the search index's build, behind the mount.
 *
 * The index is kept by each commit (store/index.c), but three things leave
 * messages for it to take in: a store's first take-in, which would take
 * half again as long if it indexed as it went (and runs before the mount
 * answers), the upgrade of a store from before the index, and the commit
 * of a message over 16 MiB, which indexes that much of its text and leaves
 * the rest (and, when it stops being current, the rest's way out). So the daemon
 * builds it once mounted, on a thread of its own, in steps
 * (store_search_build(): a few hundred messages, one transaction, some
 * tens of milliseconds each), each step taking the store's lock like any
 * request and letting it go after: a request waits at most for one step.
 * A short pause between steps lets a request that waits for the lock have
 * it (a mutex is not fair), and the thread runs niced, so that on few CPUs
 * the mount's requests come first. At unmount it stops between two steps;
 * the next mount goes on from where it stopped (the build's cursor is in
 * the store). Once built, the thread stays, and looks every 50 ms whether
 * a commit of the daemon left it more (store_search_more()), every 5 s
 * whether anyone did (store_search_waiting(): another daemon of the store,
 * or one killed before its steps were done). Meanwhile `convfs search`
 * finds what is indexed, and says that the rest is to come.
 * CONVFS_INDEX_DELAY_MS=n (the tests) makes the pause between steps n ms,
 * so that a build can be cut in its middle.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fs/backing/indexer.h"
#include "store/store_search.h"
#include "store/util.h"

#define STEP_ROWS 256
#define STEP_PAUSE_NS 200000 /* between steps: a request that waits for the lock gets it */
#define NICE 10
#define IDLE_NS 50000000 /* once built: how often it looks whether a commit left it more (and whether to stop) */
#define IDLE_LOOK 100    /* and every so many times, in the store: another daemon's commits (5 s) */

struct indexer {
	struct store *st;
	pthread_t thread;
	bool stop; /* atomic */
};

static void *build(void *arg)
{
	struct indexer *ix = arg;
	struct store_search_state s = { 0 };
	const char *delay = getenv("CONVFS_INDEX_DELAY_MS");
	int64_t ns = delay ? (int64_t)strtoul(delay, NULL, 10) * 1000000 : STEP_PAUSE_NS;
	struct timespec pause = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
	struct timespec idle = { 0, IDLE_NS };
	int64_t t0 = now_ns();
	unsigned ticks = 0;
	bool done = false;
	int r;

	/* On Linux a thread has a nice value of its own. */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), NICE) < 0)
		log_debug("cannot lower the search index build's priority: %s", strerror(errno));
	if (store_search_state(ix->st, false, &s) == 0 && s.to_go > 0)
		log_info("building the search index behind the mount: %lld messages to take in", (long long)s.to_go);
	while (!__atomic_load_n(&ix->stop, __ATOMIC_ACQUIRE)) {
		if (done) {
			/*
			 * Until a commit of this daemon leaves pieces of a large
			 * message for later; now and then, whoever left them.
			 */
			nanosleep(&idle, NULL);
			done = !store_search_more() && (++ticks % IDLE_LOOK != 0 || store_search_waiting(ix->st) <= 0);
			continue;
		}
		r = store_search_build(ix->st, STEP_ROWS, &done);
		if (r == -EBUSY) {
			/* Another daemon's long write: the step is tried again in a while. */
			log_debug("search index: a step waited too long for the store; trying again");
			nanosleep(&(struct timespec){ 1, 0 }, NULL);
			continue;
		}
		if (r < 0) {
			log_err("cannot build the search index: %s; the next mount goes on with it", strerror(-r));
			return NULL;
		}
		if (done && s.to_go > 0) {
			log_info("built the search index: %lld messages taken in, in %.1f s", (long long)s.to_go,
				 (double)(now_ns() - t0) / 1e9);
			s.to_go = 0;
		}
		if (!done)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

int indexer_start(struct store *st, struct indexer **ret)
{
	struct store_search_state s;
	struct indexer *ix;
	int r;

	*ret = NULL;
	if (store_is_readonly(st))
		return 0;
	r = store_search_state(st, false, &s);
	if (r < 0)
		return r;
	if (!s.present)
		return 0;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->st = st;
	r = pthread_create(&ix->thread, NULL, build, ix);
	if (r != 0) {
		free(ix);
		return -r;
	}
	*ret = ix;
	return 0;
}

void indexer_stop(struct indexer *ix)
{
	if (!ix)
		return;
	__atomic_store_n(&ix->stop, true, __ATOMIC_RELEASE);
	pthread_join(ix->thread, NULL);
	free(ix);
}
