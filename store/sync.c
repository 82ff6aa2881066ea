/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync.c: the rounds of the sync, and the thread that runs them.
 *
 * A round pulls every entry of the log this store has not (sync_apply.c),
 * then pushes the local commits waiting (sync_outbox.c): only a store that
 * has every entry up to the log's head may push after it, so two machines
 * never push on top of different versions of a doc (the log refuses the
 * second, which pulls, merges and pushes again). Between rounds the thread
 * waits for another machine's push (PostgreSQL's NOTIFY) or for a commit of
 * this store (SQLite's data_version moves when another connection of the
 * file commits: every SYNC_POLL_MS), whichever comes first; so a commit on
 * one machine is on the others within a round trip and a round.
 *
 * The thread has a connection of its own to the store, and never holds a
 * transaction of it across a call to PostgreSQL: entries are fetched
 * first, then applied; a push is made of a read snapshot, then recorded
 * (through the requests' connection when it is given: see struct
 * store_sync_config's served).
 * So a request's commit never waits for the network. A PostgreSQL that
 * cannot be reached is tried again every SYNC_RETRY_S; meanwhile the store
 * works as without the sync, and its commits wait here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "store/sync_internal.h"
#include "store/sync_pg.h"
#include "store/util.h"

#define SYNC_POLL_MS 100      /* how often a commit of this store is looked for */
#define SYNC_RETRY_S 3        /* PostgreSQL out of reach: tried again after this */
#define SYNC_CHECK_S 10       /* an idle connection is checked this often */
#define SYNC_BEHIND_S 5       /* commits waiting longer than this: "falling behind" */
#define SYNC_PUSH_MAX 2000    /* entries in one push */
#define SYNC_PUSH_BYTES ((size_t)64 << 20)
#define SYNC_FETCH_MAX 1000   /* entries fetched at a time */
#define SYNC_FETCH_BYTES ((size_t)16 << 20)
#define SYNC_STOP_MS 5000     /* what an unmount waits for the last push */
#define SYNC_NICE 10          /* the sync thread's niceness */

struct engine {
	struct store *st; /* the sync's own connection */
	struct store *served; /* the requests' connection, for what a push records (may be NULL) */
	const char *dir;  /* where large entries go (the store's folder) */
	const struct sync_log_ops *ops;
	void *log;
	struct sync_local local;
	bool connected;
	int64_t head;     /* the log's last entry, as last seen */
	void (*changed)(void *ctx, const char *path);
	void (*prepare)(void *ctx, const char *path);
	void *ctx;
	store_progress_fn progress;
	void *pctx;
	/* for the log lines that say what the sync is doing */
	int64_t down_since, behind_since, pushed_since, pulled_since;
	bool down_said, behind_said, failed_said;
	int64_t deadline; /* a round gives up then (secs_now()); 0: never (the last push before an unmount) */
	int64_t retry_at; /* after a round that failed here (not the connection): the next one then */
	int64_t head_said; /* the head last written for convfs status */
};

static int64_t secs_now(void)
{
	return mono_ns() / 1000000000;
}

static int local_reload(struct engine *e)
{
	struct sync_local l;
	int r = sync_local_load(e->st, &l);

	if (r < 0)
		return r;
	sync_local_release(&e->local);
	e->local = l;
	return 0;
}

static void state_int(struct engine *e, const char *key, int64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%" PRId64, v);
	sync_state_set(e->st, key, t);
}

/* Tells the caller what a batch changed. */
static void tell(struct engine *e, const struct sync_changed *c)
{
	if (!e->changed)
		return;
	for (size_t i = 0; i < c->n; i++)
		e->changed(e->ctx, c->paths[i]);
	if (c->forgot)
		e->changed(e->ctx, NULL);
}

/* Applies in[0..n), a batch (a transaction) at a time. */
static int apply_all(struct engine *e, struct sync_in *in, size_t n)
{
	for (size_t done = 0; done < n;) {
		struct sync_changed c = { .tell = e->changed, .prepare = e->prepare, .ctx = e->ctx };
		int k = sync_apply(e->st, e->local.machine, in + done, n - done, &c);

		if (k > 0)
			tell(e, &c);
		sync_changed_release(&c);
		if (k < 0)
			return k;
		done += (size_t)k;
		e->pulled_since += k;
	}
	return 0;
}

/*
 * For the tests, which need a fault to land inside a step: with
 * CONVFS_SYNC_SLOW=ms, entries are fetched SLOW_FETCH at a time, ms apart,
 * so that a pull spans what a test does to PostgreSQL meanwhile; with
 * CONVFS_SYNC_PUSH_PAUSE=ms, a push the log took is recorded here only ms
 * later, so that a daemon killed then has pushed what it has not recorded.
 */
#define SLOW_FETCH 20

static int env_ms(const char *name)
{
	const char *v = getenv(name);

	return v ? atoi(v) : 0;
}

static int slow_ms(void)
{
	return env_ms("CONVFS_SYNC_SLOW");
}

/* Pulls until this store has every entry up to the log's head (as it was when asked). */
static int pull(struct engine *e)
{
	int64_t start = e->local.pulled, total = e->head - start, last_said = secs_now();
	bool big = total >= 1000;
	int slow = slow_ms(), r = 0;

	if (big)
		log_info("sync: pulling %" PRId64 " commits from the log", total);
	while (e->local.pulled < e->head) {
		struct sync_in *in = NULL;
		size_t n = 0;

		if (e->deadline && secs_now() >= e->deadline)
			return -ETIMEDOUT;

		if (slow > 0)
			usleep((useconds_t)slow * 1000);
		r = e->ops->fetch(e->log, e->local.pulled, slow > 0 ? SLOW_FETCH : SYNC_FETCH_MAX, SYNC_FETCH_BYTES, &in, &n);
		if (r == 0 && n == 0)
			break; /* the head moved back? nothing more to take */
		if (r == 0)
			r = apply_all(e, in, n);
		for (size_t i = 0; i < n; i++)
			sync_in_release(&in[i]);
		free(in);
		if (r < 0 || (r = local_reload(e)) < 0)
			break;
		if (e->progress)
			e->progress(e->pctx, e->local.pulled - start, total);
		if (big && secs_now() - last_said >= 10) {
			log_info("sync: pulled %" PRId64 " of %" PRId64 " commits", e->local.pulled - start, total);
			last_said = secs_now();
		}
	}
	if (r == 0 && e->local.pulled > start) {
		state_int(e, "sync_state_last_pull_ns", now_ns());
		e->ops->seen(e->log, e->local.pulled);
		if (big)
			log_info("sync: pulled %" PRId64 " commits", e->local.pulled - start);
	}
	return r;
}

/* One push of what waits: -EAGAIN if another machine pushed first. */
static int push(struct engine *e, bool *ret_more)
{
	struct sync_outbox o = { 0 };
	int r;

	*ret_more = false;
	r = sync_outbox_make(e->st, e->dir, e->head, SYNC_PUSH_MAX, SYNC_PUSH_BYTES, &o);
	if (r < 0)
		return r;
	if (o.n > 0)
		r = e->ops->push(e->log, e->head, o.v, o.n);
	if (r == 0 && o.n > 0 && env_ms("CONVFS_SYNC_PUSH_PAUSE") > 0)
		usleep((useconds_t)env_ms("CONVFS_SYNC_PUSH_PAUSE") * 1000);
	if (r == 0 && (o.n > 0 || o.upto > e->local.pushed)) {
		r = sync_outbox_done(e->st, e->served, &o, e->head);
		if (r == 0) {
			e->head += (int64_t)o.n;
			if (o.n > 0)
				e->head_said = e->head; /* recorded by sync_outbox_done() */
			e->pushed_since += (int64_t)o.n;
			*ret_more = !o.complete;
		}
	}
	sync_outbox_release(&o);
	if (r == 0 && (r = local_reload(e)) == 0 && o.n > 0)
		e->ops->seen(e->log, e->local.pulled);
	return r;
}

/* Says when the sync falls behind (commits waiting on either side for a while) and when it has caught up. */
static void say_behind(struct engine *e)
{
	int64_t waiting = 0, oldest_ns = 0, behind = e->head - e->local.pulled, age;

	if (sync_waiting(e->st, &waiting, &oldest_ns) < 0)
		return;
	if (e->head != e->head_said) {
		state_int(e, "sync_state_head", e->head);
		e->head_said = e->head;
	}
	if (waiting == 0 && behind <= 0) {
		if (e->behind_said)
			log_info("sync: caught up: pushed %" PRId64 " and pulled %" PRId64 " commits since it fell behind",
				 e->pushed_since, e->pulled_since);
		e->behind_said = false;
		e->behind_since = 0;
		return;
	}
	if (!e->behind_since) {
		e->behind_since = secs_now();
		e->pushed_since = e->pulled_since = 0;
	}
	/* Behind for as long as the oldest commit has waited, or since the commits to pull were first seen. */
	age = secs_now() - e->behind_since;
	if (oldest_ns && (now_ns() - oldest_ns) / 1000000000 > age)
		age = (now_ns() - oldest_ns) / 1000000000;
	if (!e->behind_said && age >= SYNC_BEHIND_S) {
		log_info("sync: falling behind: %" PRId64 " commits wait to be pushed, %" PRId64 " to be pulled%s",
			 waiting, behind > 0 ? behind : 0, e->connected ? "" : " (PostgreSQL cannot be reached)");
		e->behind_said = true;
	}
}

static void went_down(struct engine *e, int r, const char *why)
{
	bool was = e->connected;

	e->connected = false;
	if (e->ops->disconnect)
		e->ops->disconnect(e->log);
	if (was || !e->down_since) {
		e->down_since = secs_now();
		sync_state_set(e->st, "sync_state_connected", "0");
		state_int(e, "sync_state_since_ns", now_ns());
	}
	sync_state_set(e->st, "sync_state_error", why && *why ? why : strerror(-r));
	if (!e->down_said) {
		if (r == -EPROTO)
			log_err("sync: stopped (see the line above); trying again every %d s", SYNC_RETRY_S);
		else
			log_warn("sync: cannot reach PostgreSQL (%s): commits are kept here and pushed once it is "
				 "back; trying again every %d s", why && *why ? why : strerror(-r), SYNC_RETRY_S);
		e->down_said = true;
	}
}

static int came_up(struct engine *e)
{
	e->connected = true;
	sync_state_set(e->st, "sync_state_connected", "1");
	sync_state_set(e->st, "sync_state_error", NULL);
	state_int(e, "sync_state_since_ns", now_ns());
	state_int(e, "sync_state_head", e->head);
	if (e->down_said)
		log_info("sync: connected to PostgreSQL again after %" PRId64 " s", secs_now() - e->down_since);
	else
		log_info("sync: connected to PostgreSQL as machine '%s' (%s); the log has %" PRId64
			 " commits, this store %" PRId64, e->local.name, e->local.machine, e->head, e->local.pulled);
	e->down_said = false;
	e->down_since = 0;
	return 0;
}

/*
 * One round: connects if need be, pulls what is new, pushes what waits
 * (pulling again while another machine pushes first). 0, or -errno (the
 * connection is let go: the next round makes it again).
 */
static int round_run(struct engine *e, const char *(*why)(void *), bool push_too)
{
	int r, tries = 0;
	bool more = false;

	if ((r = local_reload(e)) < 0)
		return r;
	r = e->ops->connect(e->log, &e->head);
	if (r == 0 && e->ops->id && (r = sync_local_follow(e->st, e->ops->id(e->log))) > 0)
		r = local_reload(e);
	if (r == 0 && !e->connected)
		came_up(e);
	while (r == 0) {
		if ((r = pull(e)) < 0 || !push_too)
			break;
		r = push(e, &more);
		if (r == -EAGAIN && ++tries < 20) {
			r = e->ops->connect(e->log, &e->head); /* another machine pushed first: pull, push again */
			continue;
		}
		if (r < 0 || !more)
			break;
	}
	if (r == -ENOTCONN || r == -EPROTO) {
		went_down(e, r, why ? why(e->log) : NULL);
	} else if (r < 0 && r != -EAGAIN && r != -ETIMEDOUT) {
		/* This store's side failed (busy for long, full, ...): said once, tried again in a while. */
		if (!e->failed_said)
			log_warn("sync: a round stopped: %s; trying again in %d s", strerror(-r), SYNC_RETRY_S);
		e->failed_said = true;
		e->retry_at = secs_now() + SYNC_RETRY_S;
	} else if (r == 0) {
		e->failed_said = false;
		e->retry_at = 0;
	}
	say_behind(e);
	return r;
}

/* ---- the thread ---------------------------------------------------------------------------- */

struct store_sync {
	struct store_sync_config cfg;
	char *store_path, *conninfo;
	unsigned char key[STORE_SYNC_KEY_SIZE];
	bool has_key;
	int wake_fd;
	bool stop;
	pthread_t thread;
	struct engine e;
	struct sync_pg *pg;
	char *dir;
	int lock_fd;    /* the store's sync lock, once this daemon holds it; -1 before */
	bool lock_said; /* that another daemon holds it, said once */
};

/*
 * Several daemons may serve one store (containers of one host): one of
 * them syncs it, the one holding an exclusive flock() of the file beside
 * the store (SYNC_LOCK_SUFFIX). The others' commits are recorded in the
 * store as every commit is (sync_touch), so that one pushes them, and what
 * it pulls reaches the others as any other connection's commit does. Two
 * would push the same revisions, which the log refuses. 1 held (*fd set),
 * 0 held by another daemon, or -errno.
 */
#define SYNC_LOCK_SUFFIX ".sync-lock"

static int sync_lock(const char *store_path, int *fd)
{
	_cleanup_free_ char *path = NULL;
	int f;

	if (asprintf(&path, "%s%s", store_path, SYNC_LOCK_SUFFIX) < 0)
		return -ENOMEM;
	f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (f < 0) {
		log_err("sync: cannot open the sync's lock '%s': %s", path, strerror(errno));
		return -errno;
	}
	if (flock(f, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? 0 : -errno;

		if (r < 0)
			log_err("sync: cannot lock '%s': %s", path, strerror(errno));
		close(f);
		return r;
	}
	*fd = f;
	return 1;
}

/* Whether this daemon syncs the store: it holds the lock, or takes it now (the one that held it stopped). */
static bool sync_ours(struct store_sync *s)
{
	int r;

	if (s->lock_fd >= 0)
		return true;
	r = sync_lock(s->store_path, &s->lock_fd);
	if (r > 0 && s->lock_said)
		log_info("sync: this daemon syncs the store from now on (the daemon that did stopped)");
	if (r == 0 && !s->lock_said)
		log_info("sync: another daemon serving this store syncs it; this one's commits go through that one, "
			 "and it takes over if that one stops");
	s->lock_said = s->lock_said || r == 0;
	return r > 0;
}

static const char *pg_why(void *log)
{
	return sync_pg_error(log);
}

/* Whether another connection of the store committed since *seen (SQLite's data_version). */
static bool store_moved(struct store *st, int64_t *seen)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int64_t v;

	if (store_prepare(st, "PRAGMA data_version", &stmt) < 0 || sqlite3_step(stmt) != SQLITE_ROW)
		return true;
	v = sqlite3_column_int64(stmt, 0);
	if (v == *seen)
		return false;
	*seen = v;
	return true;
}

static bool stopping(struct store_sync *s)
{
	return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
}

static void *sync_main(void *arg)
{
	struct store_sync *s = arg;
	struct engine *e = &s->e;
	int64_t version = -1, checked = secs_now();
	bool due = true;

	/*
	 * Below the requests: on few CPUs, a round that runs beside a save
	 * takes less of them (not the lowest, SCHED_IDLE: a round may hold
	 * SQLite's write lock, which a request's commit then waits for).
	 */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), SYNC_NICE) < 0)
		log_debug("sync: cannot lower the sync thread's priority: %s", strerror(errno));

	while (!stopping(s)) {
		int r = 0;

		if (!sync_ours(s)) {
			struct pollfd pfd = { .fd = s->wake_fd, .events = POLLIN };

			poll(&pfd, 1, SYNC_RETRY_S * 1000);
			continue;
		}
		if (due || !e->connected) {
			r = round_run(e, pg_why, true);
			checked = secs_now();
			due = false;
		}
		if (r < 0 && !e->connected) {
			/* Out of reach: wait, and be woken by the stop. */
			struct pollfd pfd = { .fd = s->wake_fd, .events = POLLIN };

			poll(&pfd, 1, SYNC_RETRY_S * 1000);
			continue;
		}
		r = e->ops->wait(e->log, SYNC_POLL_MS, s->wake_fd);
		if (r != 0 || store_moved(e->st, &version) || secs_now() - checked >= SYNC_CHECK_S ||
		    (e->behind_since && !e->behind_said))
			due = true;
		if (e->retry_at && secs_now() < e->retry_at)
			due = false;
	}
	/* The last commits before an unmount: pushed if PostgreSQL answers at once, within SYNC_STOP_MS. */
	if (e->connected && s->lock_fd >= 0) {
		int64_t waiting = 0;

		e->deadline = secs_now() + SYNC_STOP_MS / 1000;
		while (sync_waiting(e->st, &waiting, NULL) == 0 && waiting > 0 &&
		       round_run(e, pg_why, true) == -EAGAIN && secs_now() < e->deadline)
			;
	}
	return NULL;
}

static int engine_start(struct engine *e, const char *store_path, const char *conninfo, const unsigned char *key,
			struct sync_pg **ret_pg)
{
	int r = store_open(store_path, 0, &e->st);

	if (r < 0)
		return r;
	if ((r = local_reload(e)) < 0) {
		if (r == -ENOTSUP)
			log_err("sync: the store '%s' does not sync (store_sync_enable() first)", store_path);
		return r;
	}
	if ((r = sync_pg_new(conninfo, key, e->local.machine, e->local.name, ret_pg)) < 0)
		return r;
	e->ops = &sync_pg_ops;
	e->log = *ret_pg;
	return 0;
}

static void engine_end(struct engine *e)
{
	if (e->st && e->connected)
		sync_state_set(e->st, "sync_state_connected", "0");
	sync_local_release(&e->local);
	store_free(e->st);
	e->st = NULL;
}

/* The folder of the store's file, where large entries are kept for a while (free()). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

void store_sync_stop(struct store_sync *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	if (s->wake_fd >= 0) {
		__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
		if (write(s->wake_fd, &one, sizeof(one)) < 0)
			log_warn("sync: cannot wake the sync's thread to stop it: %s", strerror(errno));
		pthread_join(s->thread, NULL);
		close(s->wake_fd);
	}
	engine_end(&s->e);
	sync_pg_free(s->pg);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	explicit_bzero(s->key, sizeof(s->key));
	free(s->store_path);
	free(s->conninfo);
	free(s->dir);
	free(s);
}

int store_sync_start(const struct store_sync_config *cfg, struct store_sync **ret)
{
	struct store_sync *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->wake_fd = s->lock_fd = -1;
	s->cfg = *cfg;
	if (!(s->store_path = strdup(cfg->store_path)) || !(s->conninfo = strdup(cfg->conninfo)) ||
	    !(s->dir = dir_of(cfg->store_path))) {
		r = -ENOMEM;
		goto fail;
	}
	if (cfg->key) {
		memcpy(s->key, cfg->key, sizeof(s->key));
		s->has_key = true;
	}
	s->e = (struct engine){ .dir = s->dir, .changed = cfg->changed, .prepare = cfg->prepare, .ctx = cfg->ctx,
				.served = cfg->served };
	if ((r = engine_start(&s->e, s->store_path, s->conninfo, s->has_key ? s->key : NULL, &s->pg)) < 0)
		goto fail;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		r = -errno;
		goto fail;
	}
	if ((r = -pthread_create(&s->thread, NULL, sync_main, s)) < 0) {
		close(s->wake_fd);
		s->wake_fd = -1;
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	log_err("sync: cannot start: %s", strerror(-r));
	store_sync_stop(s);
	return r;
}

int store_sync_catch_up(const struct store_sync_config *cfg, store_progress_fn progress, void *ctx)
{
	_cleanup_free_ char *dir = dir_of(cfg->store_path);
	struct engine e = { .dir = dir, .progress = progress, .pctx = ctx, .changed = cfg->changed, .prepare = cfg->prepare,
			    .ctx = cfg->ctx };
	struct sync_pg *pg = NULL;
	int r, lock_fd = -1;

	if (!dir)
		return -ENOMEM;
	/* Another daemon of the store syncs it: it takes the history in, and this mount sees it come. */
	if ((r = sync_lock(cfg->store_path, &lock_fd)) <= 0)
		return r;
	r = engine_start(&e, cfg->store_path, cfg->conninfo, cfg->key, &pg);
	if (r == 0)
		r = round_run(&e, pg_why, false);
	if (r == 0)
		log_info("sync: this store has every commit of the log (%" PRId64 ")", e.local.pulled);
	engine_end(&e);
	sync_pg_free(pg);
	close(lock_fd);
	return r;
}

int sync_round_once(struct store *st, struct store *served, const char *dir, const struct sync_log_ops *ops, void *log,
		    bool push_too, void (*changed)(void *ctx, const char *path), void *ctx)
{
	struct engine e = { .st = st, .served = served, .dir = dir, .ops = ops, .log = log, .changed = changed, .ctx = ctx,
			    .connected = true, .down_said = true };
	int r = round_run(&e, NULL, push_too);

	sync_local_release(&e.local);
	return r;
}

/* Pushes a forget of f for the other machines (after every entry this store has: pulled again as need be). */
static int forget_push(struct engine *e, const struct store_forget *f)
{
	char dir[96] = "";
	struct sync_header h = { .kind = "forget", .path = dir, .comm = "convfs-forget", .time_ns = now_ns(),
				 .pid = getpid(), .forget_match = f->match, .forget_task = f->task };
	struct sync_outbox o = { .n = 1, .alloc = 1 };
	int r = 0;

	if (f->task)
		store_conversation_dir(f->task, dir, sizeof(dir));
	if (!(o.v = calloc(1, sizeof(*o.v))))
		return -ENOMEM;
	sync_bytes_init(&o.v[0].payload, e->dir);
	/* Its number on this machine: none of its revisions' (those are positive, restatements above -2^62). */
	o.v[0].rev = -(INT64_C(1) << 62) - now_ns() / 1000;
	o.v[0].forget = true;
	r = sync_put_header(&o.v[0].payload, &h);
	for (int tries = 0; r == 0; tries++) {
		r = e->ops->push(e->log, e->head, o.v, 1);
		if (r != -EAGAIN || tries >= 20)
			break;
		if ((r = round_run(e, pg_why, false)) < 0) /* another machine pushed first: pull, then push */
			break;
	}
	if (r == 0)
		r = sync_outbox_done(e->st, NULL, &o, e->head);
	sync_outbox_release(&o);
	if (r == 0 && (r = local_reload(e)) == 0)
		e->ops->seen(e->log, e->local.pulled);
	return r;
}

int store_sync_forget(const struct store_sync_config *cfg, const struct store_forget *f, store_progress_fn progress,
		      void *ctx)
{
	_cleanup_free_ char *dir = dir_of(cfg->store_path);
	struct engine e = { .dir = dir };
	struct sync_pg *pg = NULL;
	int r;

	if (!dir)
		return -ENOMEM;
	r = engine_start(&e, cfg->store_path, cfg->conninfo, cfg->key, &pg);
	/* Its own commits first, the forget's among them: each conversation without it. */
	if (r == 0 && (r = round_run(&e, pg_why, true)) == 0)
		r = sync_pg_forget(pg, f, progress, ctx);
	if (r == 0)
		r = forget_push(&e, f);
	if (r == -ENOTCONN)
		log_err("sync: PostgreSQL cannot be reached (%s)", sync_pg_error(pg));
	engine_end(&e);
	sync_pg_free(pg);
	return r;
}
