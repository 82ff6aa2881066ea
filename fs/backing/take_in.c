/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * take_in.c: a take-in's course beside the mount.
 *
 * At most mounts nothing changed underneath. So only the top level is
 * looked at before the mount answers (fs_take_in_begin()); the rest of the
 * check (quick.c) runs on a thread of its own, behind the requests, while
 * the mount answers, and the take-in proper (import.c) only if it finds a
 * difference. A request waits (fs_take_in_wait()) until what it touches was
 * looked at underneath; one the check proves unchanged waits for nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs/backing/import_internal.h"
#include "fs/backing/quick.h"
#include "store/util.h"

/*
 * A take-in whose quick check goes on while the mount answers: its walk one
 * level down, and the take-in proper if that finds a difference, run on a
 * thread of its own (take_in_rest()).
 */
struct take_in {
	struct import_ctx c;
	struct store_seen_set top; /* the rows of the top level, looked at before the loop */
	struct quick *q;           /* the walk's check, once made (atomic): requests ask it */
	bool differs;              /* a request found a difference before it was made (atomic) */
	bool same;                 /* the check found nothing changed */
	int src_fd;
	void (*changed)(struct fs *fs);
	pthread_t loop;            /* the thread that runs the FUSE loop: fs_take_in_start()'s */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t ended;
	bool done; /* read without the lock by fs_take_in_done() */
	int r;
};

static void take_in_free(struct take_in *t)
{
	quick_free(t->q);
	store_seen_set_release(&t->top);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->ended);
	free(t);
}

static struct take_in *take_in_new(struct fs *fs, int src_fd, const char *src_name)
{
	struct take_in *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->c = (struct import_ctx){ .fs = fs, .src_name = src_name, .start_ns = now_ns(),
				    .readonly = store_is_readonly(fs->store) };
	t->src_fd = src_fd;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->ended, NULL);
	return t;
}

/*
 * Takes in as much of t as must be done before the mount answers: 1 if the
 * top level is as seen and the rest is left to take_in_rest(), else the
 * take-in's result. Only the rows of the top level are read here: loading
 * all of them takes time that grows with the folder (70 ms at 150,000).
 */
static int take_in_first(struct take_in *t)
{
	bool same = false;
	int r = 0;

	progress_start(&t->c.progress);
	/* Nothing changed: the common case, checked first, fast. */
	if (import_quick_may(&t->c)) {
		r = store_seen_load_top(t->c.fs->store, &t->top);
		if (r == 0 && t->top.n && (r = quick_top_same(&t->top, t->src_fd, &same)) == 0 && same)
			return 1;
		if (r < 0)
			/* The take-in proper says what failed, with the path. */
			log_debug("the quick look at the top underneath failed: %s", strerror(-r));
	}
	r = import_load(&t->c, t->c.fs->store);
	if (r == 0)
		r = import_walk(&t->c, t->src_fd);
	return import_done(&t->c, r);
}

int fs_take_in_begin(struct fs *fs, int src_fd, const char *src_name, struct take_in **ret)
{
	struct take_in *t = take_in_new(fs, src_fd, src_name);
	int r;

	*ret = NULL;
	if (!t) {
		log_err("cannot take in '%s': %s", src_name, strerror(ENOMEM));
		return -ENOMEM;
	}
	r = import_folder_use(fs, src_fd, src_name, &t->c.taken);
	if (r == 0)
		r = take_in_first(t);
	if (r > 0)
		*ret = t;
	else
		take_in_free(t);
	return r;
}

/*
 * The check of t that the loop need not wait for: the load of every row,
 * the look at the top level again with its folders listed, and the walk one
 * level down. Its result: false if anything differs.
 */
static bool take_in_check(struct take_in *t)
{
	const char *delay = getenv("CONVFS_WALK_DELAY_MS");
	struct store *reader = NULL;
	struct quick *q = NULL;
	int r;

	/* CONVFS_WALK_DELAY_MS=n (the tests): the check begins n ms late, and its walk n ms later. */
	if (delay)
		usleep((useconds_t)strtoul(delay, NULL, 10) * 1000);
	/*
	 * Through a connection of its own: a load of 150,000 rows holds its
	 * store's lock (in pieces, but a mutex is not fair: it got them back
	 * before a request that waited), and requests look up their own rows
	 * meanwhile.
	 */
	r = store_open_reader(t->c.fs->store, &reader);
	if (r < 0)
		log_debug("the take-in's check reads through the mount's connection: %s", strerror(-r));
	r = import_load(&t->c, reader ? reader : t->c.fs->store);
	store_free(reader);

	if (r < 0)
		return false; /* the take-in proper loads again, and says what failed */
	r = quick_begin(&t->c.seen, t->c.visited, t->src_fd, &q);
	if (!q)
		return false;
	__atomic_store_n(&t->q, q, __ATOMIC_RELEASE);
	if (r == 0 && !quick_differs_yet(q))
		quick_walk(q);
	/* A failure: the take-in proper says what failed, with the path. */
	return quick_end(q, &t->c.rep.files);
}

static void *take_in_check_thread(void *arg)
{
	struct take_in *t = arg;

	t->same = take_in_check(t);
	return NULL;
}

/*
 * The rest of t: its check, then the take-in proper if anything differs.
 * Behind the mount (idle), the check runs on a thread at the lowest priority
 * (SCHED_IDLE), whose walkers inherit it: on few CPUs they would take them
 * from the requests, and every request would wait behind them. The take-in
 * proper, which requests wait for, runs here at the normal priority (a
 * thread may not leave SCHED_IDLE without a privilege).
 */
static int take_in_rest(struct take_in *t, bool idle)
{
	pthread_attr_t attr;
	pthread_t thread;
	bool changed = false;
	int r = 0;

	if (idle) {
		struct sched_param none = { 0 };
		bool started = false;

		if (pthread_attr_init(&attr) == 0) {
			started = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) == 0 &&
				  pthread_attr_setschedpolicy(&attr, SCHED_IDLE) == 0 &&
				  pthread_attr_setschedparam(&attr, &none) == 0 &&
				  pthread_create(&thread, &attr, take_in_check_thread, t) == 0;
			pthread_attr_destroy(&attr);
		}
		if (started)
			pthread_join(thread, NULL);
		else
			log_debug("the take-in's check runs at the requests' priority");
		idle = started;
	}
	if (!idle)
		t->same = take_in_check(t);
	if (!t->same) {
		r = import_load(&t->c, t->c.fs->store);
		if (r == 0)
			r = import_walk(&t->c, t->src_fd);
		changed = true;
	}
	r = import_done(&t->c, r);
	if (r == 0 && changed && t->changed)
		t->changed(t->c.fs);
	return r;
}

static void *take_in_thread(void *arg)
{
	struct take_in *t = arg;
	int r = take_in_rest(t, true);

	pthread_mutex_lock(&t->lock);
	t->r = r;
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&t->ended);
	pthread_mutex_unlock(&t->lock);
	if (r < 0) {
		/*
		 * What is underneath would be hidden: end the mount, with a stop
		 * signal (loop_signals_set()), sent to the thread that runs the
		 * loop. Sent to the process, it may land on this thread, and with
		 * -s libfuse's loop would go on waiting in read().
		 */
		log_err("unmounting '%s': its folder underneath could not be taken in", t->c.src_name);
		pthread_kill(t->loop, SIGTERM);
	}
	return NULL;
}

int fs_take_in_start(struct take_in *t, void (*changed)(struct fs *fs))
{
	int r;

	t->changed = changed;
	t->loop = pthread_self();
	r = pthread_create(&t->thread, NULL, take_in_thread, t);
	if (r != 0) {
		log_err("cannot start the take-in's thread: %s", strerror(r));
		return -r;
	}
	t->started = true;
	return 0;
}

bool fs_take_in_done(const struct take_in *t)
{
	return __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
}

/*
 * Whether rel may be served before the walk's check is made: the top level
 * was looked at before the loop; below it, rel's entry one level down is
 * looked at here, against its own rows.
 */
static bool point_serves(struct take_in *t, const char *rel, bool listing)
{
	_cleanup_(store_seen_set_release) struct store_seen_set rows = { 0 };
	_cleanup_free_ char *unit = NULL, *top = NULL;
	const char *slash = strchr(rel, '/'), *name, *end;
	const struct store_seen *row;
	bool same = false;
	int r;

	if (!slash) {
		/* The root, or an entry of the top level: the listing of a folder there waits for the walk. */
		row = *rel ? store_seen_find(&t->top, rel) : NULL;
		return !(listing && row && !row->gone && row->type == S_IFDIR);
	}
	name = slash + 1;
	end = strchrnul(name, '/');
	unit = strndup(rel, (size_t)(end - rel));  /* "tasks/<id>" */
	top = strndup(rel, (size_t)(slash - rel)); /* "tasks" */
	if (!unit || !top)
		r = -ENOMEM;
	else if ((r = store_seen_load_below(t->c.fs->store, unit, &rows)) == 0)
		r = quick_point(&rows, t->src_fd, top, unit + (name - rel), &same);
	if (r < 0)
		log_debug("cannot look at '%s' underneath at once: %s; it waits for the take-in", rel, strerror(-r));
	if (!same)
		__atomic_store_n(&t->differs, true, __ATOMIC_RELAXED);
	return same;
}

int fs_take_in_wait(struct take_in *t, const char *rel, bool view, bool listing)
{
	struct quick *q = __atomic_load_n(&t->q, __ATOMIC_ACQUIRE);
	int r;

	if (!view) {
		if (q) {
			if (quick_serves(q, rel, listing))
				return 0;
		} else if (!__atomic_load_n(&t->differs, __ATOMIC_RELAXED) && point_serves(t, rel, listing)) {
			return 0;
		}
	}
	/*
	 * What no walker has taken yet is looked at here; if nothing differs
	 * once every entry was looked at, nothing is left to wait for.
	 */
	if (q) {
		quick_help(q);
		if (quick_all_same(q))
			return 0;
	}
	pthread_mutex_lock(&t->lock);
	while (!t->done)
		pthread_cond_wait(&t->ended, &t->lock);
	r = t->r;
	pthread_mutex_unlock(&t->lock);
	return r < 0 ? -EIO : 0;
}

int fs_take_in_end(struct take_in *t)
{
	int r;

	if (!t)
		return 0;
	if (t->started)
		pthread_join(t->thread, NULL);
	else
		t->r = take_in_rest(t, false);
	r = t->r;
	take_in_free(t);
	return r;
}

int fs_take_in(struct fs *fs, int src_fd, const char *src_name)
{
	struct take_in *t;
	int r = fs_take_in_begin(fs, src_fd, src_name, &t);

	return r > 0 ? fs_take_in_end(t) : r;
}
