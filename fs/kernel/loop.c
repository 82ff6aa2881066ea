/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop.c: the loop that takes the kernel's requests and serves them.
 *
 * libfuse's multithreaded loop keeps its idle workers asleep in read() of
 * /dev/fuse, so every request wakes one of them, and the reply wakes the
 * caller. On a virtual machine a wakeup across CPUs is an interrupt between
 * virtual CPUs, tens of microseconds each; a client that asks one thing at
 * a time pays it for every request. grep -r pays it three times a file (its
 * OPEN, the reply, its RELEASE), which made a warm grep three times as slow
 * as on the plain folder, though the daemon's own work for a file is a few
 * microseconds.
 *
 * So one worker at a time is the reader. After each request it serves, it
 * keeps asking the device for the next one without sleeping (the device
 * set O_NONBLOCK) for SPIN_NS, then sleeps in poll(). A request that comes
 * while the reader looks is taken with no wakeup at all. The reader serves
 * the request it took itself, on its own thread and with its own buffer,
 * then comes back to read: a client's next request usually comes while it
 * spins. Only the reply's wakeup of the caller is left.
 *
 * A request may take long: a commit of a large file, a wait for the
 * take-in, a lock another request holds. Whoever serves it must not hold
 * up the rest, and waking a second worker at every request would bring the
 * wakeups back. One idle worker is therefore the standby: while the reader
 * is busy, it looks every STANDBY_NS whether the reader role has been left
 * for that long, and if so becomes the reader itself. The others sleep on a
 * condition variable until a role is free. While the reader sleeps in
 * poll() the standby sleeps too: an idle mount wakes nobody.
 *
 * A write's bytes cross the daemon twice when read(): from the device into
 * the worker's buffer, then into the file. After a large request (only a
 * WRITE is), the reader takes the next ones by splice() into a pipe of its
 * own instead, and the bytes go from the pipe into the file (SPLICE_AFTER).
 *
 * At most max_workers threads serve at once, as with libfuse's loop; a new
 * one starts when the standby takes over and nobody is left to be the next
 * standby. The thread that called loop_run() only waits for the end: an
 * unmount (the device says ENODEV) or a stop signal, whichever thread it
 * lands on (the handler wakes the reader through an eventfd).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fs/kernel/loop.h"
#include "store/util.h"

/* How long the reader asks for the next request before it sleeps. */
#define SPIN_NS 200000
/* How long a request may keep the reader before the standby reads instead. */
#define STANDBY_NS 2000000
#define MAX_WORKERS LOOP_WORKERS_MAX
/*
 * A request's buffer, in pages: the most libfuse lets the kernel send in
 * one (256 pages of data, as it caps max_write) and a page for the headers.
 */
#define READ_PAGES (256 + 1)
/*
 * A request this large can only be a WRITE's (the others carry a name or a
 * few fields). After one, the reader expects another: it takes the next
 * request by splice() into a pipe of its own, and the write's bytes go from
 * the writer's pages to the backing file without a copy through the
 * daemon's memory (ll_write_buf()). Any other request is read out of the
 * pipe whole, one call more than a read() of the device.
 */
#define SPLICE_AFTER ((size_t)64 << 10)
/*
 * How many smaller requests the reader still takes by splice() after a large
 * one: a write of 1 MiB comes as one request of loop_max_write() and one of
 * the pages left over.
 */
#define SPLICE_RUN 2
/*
 * The pipe's size: the most /proc/sys/fs/pipe-max-size allows by default. A
 * request spliced into it takes a slot (a page) for its headers and one for
 * each page its data touches, so a write may bring two pages less than the
 * pipe holds (loop_max_write()).
 */
#define PIPE_BYTES (1 << 20)

struct loop {
	struct fuse_session *se;
	int fd;
	size_t bufsize;              /* of each worker's request buffer */
	pthread_mutex_t lock;
	pthread_cond_t idle_cond;    /* workers with no role */
	pthread_cond_t standby_cond; /* the standby */
	bool reading;                /* a worker is the reader */
	bool polling;                /* ... and it sleeps in poll() */
	bool has_standby;
	bool standby_sleeps;         /* the standby waits for the reader to wake */
	int64_t left_at;             /* when the reader role was last left (monotonic ns) */
	unsigned idle;
	unsigned workers, max_workers;
	pthread_t threads[MAX_WORKERS];
	unsigned splice_next;        /* requests the reader takes by splice() (SPLICE_RUN) */
	bool stop;
	int error;
	sem_t done;                  /* posted when a worker saw the end */
};

/*
 * Descriptors whose last close waits until the request that let them go is
 * answered: the kernel frees a file's pages at its last close, about a
 * millisecond for a 20 MB temp file renamed over a doc, which its writer
 * need not wait for.
 */
#define AFTER_REPLY_MAX 4
static __thread int after_reply[AFTER_REPLY_MAX];
static __thread unsigned after_reply_n;
static __thread bool serving; /* this thread is a worker, serving a request */

/* The worker's pipe for splice(): none yet (-1), or none to be had (-2). */
static __thread int splice_pipe[2] = { -1, -1 };

static struct fuse_session *signal_se;
static volatile sig_atomic_t stop_signal;
static int wake_fd = -1;

/* Logs what failed, with errno's text, and returns -errno. */
static int fail(const char *what)
{
	int e = errno;

	log_err("%s: %s", what, strerror(e));
	return -e;
}

static struct timespec mono_at(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
}

static void wake_reader(void)
{
	int fd = __atomic_load_n(&wake_fd, __ATOMIC_SEQ_CST);
	uint64_t one = 1;

	if (fd >= 0)
		(void)!write(fd, &one, sizeof(one));
}

static void on_signal(int sig)
{
	int saved = errno;

	stop_signal = sig;
	if (signal_se)
		fuse_session_exit(signal_se);
	wake_reader();
	errno = saved;
}

int loop_signals_set(struct fuse_session *se)
{
	struct sigaction sa = { .sa_handler = on_signal }, ign = { .sa_handler = SIG_IGN };
	static const int sigs[] = { SIGHUP, SIGINT, SIGTERM };

	signal_se = se;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return fail("cannot set a stop signal's handler");
	if (sigaction(SIGPIPE, &ign, NULL) < 0)
		return fail("cannot ignore SIGPIPE");
	return 0;
}

void loop_signals_remove(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	sigemptyset(&dfl.sa_mask);
	sigaction(SIGHUP, &dfl, NULL);
	sigaction(SIGINT, &dfl, NULL);
	sigaction(SIGTERM, &dfl, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	signal_se = NULL;
}

/* The end, seen by a worker: lock held. */
static void loop_end(struct loop *l, int error)
{
	if (error < 0 && !l->error)
		l->error = error;
	__atomic_store_n(&l->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&l->idle_cond);
	pthread_cond_broadcast(&l->standby_cond);
	wake_reader();
	sem_post(&l->done);
}

static void splice_pipe_close(int state)
{
	for (int i = 0; i < 2; i++)
		if (splice_pipe[i] >= 0)
			close(splice_pipe[i]);
	splice_pipe[0] = splice_pipe[1] = state;
}

/*
 * The worker's pipe, of PIPE_BYTES: false if it cannot have one (a pipe of
 * more than /proc/sys/fs/pipe-max-size takes CAP_SYS_RESOURCE), and then
 * it never tries again.
 */
static bool splice_pipe_ready(void)
{
	int size;

	if (splice_pipe[0] >= 0)
		return true;
	if (splice_pipe[0] == -2)
		return false;
	if (pipe2(splice_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		splice_pipe[0] = splice_pipe[1] = -2;
		return false;
	}
	size = fcntl(splice_pipe[0], F_SETPIPE_SZ, PIPE_BYTES);
	if (size < PIPE_BYTES) {
		splice_pipe_close(-2);
		return false;
	}
	return true;
}

/*
 * Empties the pipe after a request served from it: a handler that failed
 * may have left its bytes there. If it cannot, the pipe is dropped (a new
 * one is made when needed).
 */
static void splice_pipe_drain(struct fuse_buf *buf, size_t size)
{
	for (;;) {
		int left;

		if (ioctl(splice_pipe[0], FIONREAD, &left) < 0 || (left > 0 && read(splice_pipe[0], buf->mem, size) <= 0)) {
			splice_pipe_close(-1);
			return;
		}
		if (left == 0)
			return;
	}
}

/* Reads n bytes, a whole request, out of the pipe into buf->mem. */
static int splice_pipe_take(struct fuse_buf *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(splice_pipe[0], (char *)buf->mem + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			log_err("cannot read a request out of the loop's pipe: %s", k < 0 ? strerror(errno) : "it ended");
			splice_pipe_close(-1);
			return -EIO;
		}
		got += (size_t)k;
	}
	return 0;
}

/*
 * One read of the device into buf, as fuse_session_receive_buf() does it,
 * but without its perror() to stderr: a read that races the kernel's
 * teardown at an unmount fails with ECONNABORTED, and whether that was an
 * unmount or a real abort is for the loop's caller to tell (and log), after
 * the loop. A request the kernel took back (ENOENT: interrupted before it
 * was read) is skipped. Returns the request's size, 0 at the end (ENODEV:
 * unmounted), or a negative errno (-EAGAIN when none is there yet).
 *
 * After a large request, by splice() (SPLICE_AFTER, SPLICE_RUN): a large one
 * is left in the pipe (buf->flags FUSE_BUF_IS_FD), a small one read into
 * buf->mem.
 */
static int device_read(struct loop *l, struct fuse_buf *buf)
{
	bool by_splice;
	ssize_t n;

	if (!buf->mem) {
		buf->mem = malloc(l->bufsize);
		if (!buf->mem)
			return -ENOMEM;
	}
	buf->flags = 0;
	by_splice = l->splice_next > 0 && splice_pipe_ready();
	do
		n = by_splice ? splice(l->fd, NULL, splice_pipe[1], NULL, l->bufsize, 0)
			      : read(l->fd, buf->mem, l->bufsize);
	while (n < 0 && errno == ENOENT);
	if (fuse_session_exited(l->se))
		return 0;
	if (n < 0 && by_splice && errno != EAGAIN && errno != EINTR && errno != ENODEV) {
		/* Whatever splice() cannot do here, read() can: this worker reads from now on. */
		log_warn("cannot take requests from /dev/fuse by splice(): %s; reading them instead", strerror(errno));
		splice_pipe_close(-2);
		return -EAGAIN;
	}
	if (n < 0) {
		if (errno != ENODEV)
			return -errno;
		fuse_session_exit(l->se);
		return 0;
	}
	if ((size_t)n < sizeof(struct fuse_in_header)) {
		log_err("a read of /dev/fuse gave %zd bytes, less than a request's header", n);
		return -EIO;
	}
	buf->size = n;
	if ((size_t)n >= SPLICE_AFTER)
		l->splice_next = SPLICE_RUN;
	else if (l->splice_next > 0)
		l->splice_next--;
	if (!by_splice)
		return n;
	if ((size_t)n >= SPLICE_AFTER) {
		buf->flags = FUSE_BUF_IS_FD;
		buf->fd = splice_pipe[0];
		return n;
	}
	return splice_pipe_take(buf, (size_t)n) < 0 ? -EIO : n;
}

/*
 * The reader's wait for one request into buf: asks the device until one
 * comes, sleeping in poll() once SPIN_NS went by without one. Lock not held.
 * Returns the request's size, 0 at the end (the mount went away, or the
 * loop stops), or a negative errno.
 */
static int take(struct loop *l, struct fuse_buf *buf)
{
	int64_t until = mono_ns() + SPIN_NS;

	for (;;) {
		struct pollfd p[2] = { { .fd = l->fd, .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
		int r = device_read(l, buf);

		if (r != -EAGAIN && r != -EINTR)
			return r;
		if (fuse_session_exited(l->se) || __atomic_load_n(&l->stop, __ATOMIC_RELAXED))
			return 0;
		if (mono_ns() < until) {
			/* Others runnable on this CPU (the client, perhaps) go first. */
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&l->lock);
		l->polling = true;
		pthread_mutex_unlock(&l->lock);
		r = poll(p, 2, -1);
		pthread_mutex_lock(&l->lock);
		l->polling = false;
		if (l->standby_sleeps)
			pthread_cond_signal(&l->standby_cond);
		pthread_mutex_unlock(&l->lock);
		if (r < 0 && errno != EINTR)
			return fail("cannot wait for the kernel's next request");
		until = mono_ns() + SPIN_NS;
	}
}

size_t loop_max_write(void)
{
	return PIPE_BYTES - 2 * (size_t)getpagesize();
}

void loop_close_after_reply(int fd)
{
	if (!serving || after_reply_n == AFTER_REPLY_MAX) {
		close(fd);
		return;
	}
	after_reply[after_reply_n++] = fd;
}

static void serve_request(struct loop *l, struct fuse_buf *buf)
{
	serving = true;
	fuse_session_process_buf(l->se, buf);
	serving = false;
	if (buf->flags & FUSE_BUF_IS_FD)
		splice_pipe_drain(buf, l->bufsize);
	while (after_reply_n > 0)
		close(after_reply[--after_reply_n]);
}

static void *worker(void *arg);

/* Lock held. A failure to start one leaves the others serving. */
static void worker_start(struct loop *l)
{
	int r;

	if (l->workers >= l->max_workers)
		return;
	r = pthread_create(&l->threads[l->workers], NULL, worker, l);
	if (r != 0) {
		log_warn("cannot start a thread to serve requests: %s", strerror(r));
		return;
	}
	l->workers++;
}

/*
 * The standby's watch, lock held: returns when the reader role has been left
 * for STANDBY_NS (the caller takes it) or the loop stops.
 */
static void standby(struct loop *l)
{
	l->has_standby = true;
	while (!l->stop) {
		int64_t now = mono_ns();
		struct timespec at;

		if (!l->reading && now >= l->left_at + STANDBY_NS)
			break;
		if (l->reading && l->polling) {
			/* The reader sleeps until a request comes: so can the standby. */
			l->standby_sleeps = true;
			pthread_cond_wait(&l->standby_cond, &l->lock);
			l->standby_sleeps = false;
			continue;
		}
		/* The reader spins and may leave at any time, or left at left_at. */
		at = mono_at((l->reading ? now : l->left_at) + STANDBY_NS);
		pthread_cond_timedwait(&l->standby_cond, &l->lock, &at);
	}
	l->has_standby = false;
}

static void *worker(void *arg)
{
	struct loop *l = arg;
	struct fuse_buf buf = { .mem = NULL };
	sigset_t stops;

	/* The stop signals go to the thread that waits for the end, if it can take them. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGHUP);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		int r;

		if (l->reading) {
			if (!l->has_standby)
				standby(l);
			else {
				l->idle++;
				pthread_cond_wait(&l->idle_cond, &l->lock);
				l->idle--;
			}
			continue;
		}
		l->reading = true;
		pthread_mutex_unlock(&l->lock);
		r = take(l, &buf);
		pthread_mutex_lock(&l->lock);
		l->reading = false;
		l->left_at = mono_ns();
		if (r <= 0 || l->stop) {
			loop_end(l, r);
			break;
		}
		/* Someone must watch while this request is served. */
		if (!l->has_standby) {
			if (l->idle)
				pthread_cond_signal(&l->idle_cond);
			else
				worker_start(l);
		}
		pthread_mutex_unlock(&l->lock);
		serve_request(l, &buf);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	free(buf.mem);
	splice_pipe_close(-1);
	return NULL;
}

int loop_run(struct fuse_session *se, unsigned max_workers)
{
	struct loop l = {
		.se = se,
		.fd = fuse_session_fd(se),
		.bufsize = READ_PAGES * (size_t)getpagesize(),
		.max_workers = max_workers,
	};
	pthread_condattr_t attr;
	int flags, fd, r;

	if (l.max_workers < 1)
		l.max_workers = 1;
	if (l.max_workers > MAX_WORKERS)
		l.max_workers = MAX_WORKERS;
	flags = fcntl(l.fd, F_GETFL);
	if (flags < 0 || fcntl(l.fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return fail("cannot make /dev/fuse non-blocking");
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0) {
		r = fail("cannot make an eventfd");
		goto out_flags;
	}
	__atomic_store_n(&wake_fd, fd, __ATOMIC_SEQ_CST);
	if (sem_init(&l.done, 0, 0) < 0) {
		r = fail("cannot make a semaphore");
		goto out_wake;
	}
	pthread_mutex_init(&l.lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&l.standby_cond, &attr);
	pthread_cond_init(&l.idle_cond, &attr);
	pthread_condattr_destroy(&attr);

	pthread_mutex_lock(&l.lock);
	worker_start(&l);
	worker_start(&l);
	r = l.workers ? 0 : -EAGAIN;
	pthread_mutex_unlock(&l.lock);
	if (r == 0) {
		/* sem_wait() returns at a signal: the handler has set the session's exit. */
		while (!fuse_session_exited(se) && sem_wait(&l.done) < 0 && errno == EINTR)
			;
		pthread_mutex_lock(&l.lock);
		if (!l.stop)
			loop_end(&l, 0);
		pthread_mutex_unlock(&l.lock);
		for (unsigned i = 0; i < l.workers; i++)
			pthread_join(l.threads[i], NULL);
		r = l.error;
	} else {
		log_err("cannot start a thread to serve requests");
	}
	pthread_cond_destroy(&l.idle_cond);
	pthread_cond_destroy(&l.standby_cond);
	pthread_mutex_destroy(&l.lock);
	sem_destroy(&l.done);
	if (r == 0 && stop_signal)
		r = stop_signal;
out_wake:
	/* No handler may write to the descriptor once closed: its number may be another file's. */
	fd = __atomic_exchange_n(&wake_fd, -1, __ATOMIC_SEQ_CST);
	close(fd);
out_flags:
	fcntl(l.fd, F_SETFL, flags);
	fuse_session_reset(se);
	return r;
}
