/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch.c: learning of the commits this daemon did not make.
 *
 * Several daemons may serve one store (containers of one host, the host's
 * and a container's); the sync (PostgreSQL) commits through a connection
 * of its own. Each daemon's kernel keeps entries, attributes, pages and
 * listings of what its mount showed, and the view keeps lists by the
 * store's generation: a commit made elsewhere must reach all of those, as
 * one made through this mount does before it returns.
 *
 * How it learns: every commit writes the store's WAL, so the thread waits
 * on inotify for the WAL to change (and wakes once a second anyway, for a
 * filesystem that does not tell: a network one); SQLite then says whether
 * another connection committed (PRAGMA data_version: no read of the log),
 * and only then is the log read from where this daemon last was: each doc
 * committed (a revision) and each plain file another daemon changed
 * (plain_changes, which daemons record only while they are not alone:
 * watch_peers(), counted from the registrations beside the store, which
 * inotify says come and go).
 *
 * What it tells the kernel: as after a local commit (fs_invalidate()): a new
 * epoch, so that a name is looked up again and gets the doc's new version;
 * the attributes of the doc's node and the listing of its folder; the
 * view's folders of its conversation; the task folders if tasks may have
 * moved. For a plain file, its pages too (this thread serves no request:
 * dropping them waits for nothing it holds); after a forget (the sync's,
 * pulled from another machine by whichever daemon syncs), every page the
 * kernel keeps, versions' included, as the daemon that applied it does.
 * Within a few milliseconds of the commit on an idle machine; a reader that
 * opened before keeps its version, but for a forget's blanks.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "fs/cmd/registry.h"
#include "fs/kernel/kcache.h"
#include "fs/kernel/watch.h"
#include "fs/ops/ops_internal.h"
#include "store/store_changes.h"
#include "store/util.h"

/* Milliseconds between looks when nothing wakes the thread. */
#define WATCH_POLL_MS 1000

struct watch {
	struct fs *fs;
	char *store_path;
	int inotify_fd;
	int wal_wd, reg_wd;
	char *wal_name; /* the WAL's name in its folder: the events of other files there are not looked at */
	int stop_fd;     /* an eventfd: the thread ends once it is written */
	pthread_t thread;
	struct store_mark mark;
	bool again; /* the last read of the changes failed: the next wakeup reads them, whatever SQLite says */
};

int watch_peers(const struct fs *fs)
{
	return __atomic_load_n(&fs->peers, __ATOMIC_ACQUIRE);
}

/* Counts the other daemons registered beside the store; the store keeps its batches short if there are. */
static void count_peers(struct watch *w)
{
	int n = registry_count(w->store_path);

	if (n < 0) {
		log_debug("cannot count the daemons serving '%s': %s", w->store_path, strerror(-n));
		return;
	}
	/* Itself among them, unless it could not register (it said why). */
	if (w->fs->registry.path)
		n = n > 0 ? n - 1 : 0;
	if (n != watch_peers(w->fs))
		log_info("%d other daemon%s serve%s the store '%s'", n, n == 1 ? "" : "s", n == 1 ? "s" : "",
			 w->store_path);
	__atomic_store_n(&w->fs->peers, n, __ATOMIC_RELEASE);
	store_set_shared(w->fs->store, n > 0);
}

/* store_changes_since(): tells the kernel of one change. */
static int tell(void *ctx, enum store_change_kind kind, const char *path)
{
	struct watch *w = ctx;

	if (kind == STORE_CHANGE_DOC) {
		fs_invalidate(w->fs, path); /* as after a commit of this mount's */
		return 0;
	}
	if (kind == STORE_CHANGE_FORGET || kind == STORE_CHANGE_LOST) {
		/*
		 * Rows blanked in place, a version's held by the kernel
		 * included; or plain files changed, which ones not known:
		 * every page goes, and every name is looked up again.
		 */
		kcache_forgot(w->fs);
		return 0;
	}
	{
		/* A plain file, folder or link: its pages too, and its folder's listing. */
		const char *slash = strrchr(path, '/');
		_cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup("");

		kcache_invalidate_pages(w->fs, path);
		if (dir)
			kcache_invalidate(w->fs, dir);
	}
	return 0;
}

/* What others committed since the last look: told to the kernel. */
static void look(struct watch *w)
{
	int r = store_changed_elsewhere(w->fs->store);

	if (r < 0) {
		log_debug("cannot tell whether others committed to the store: %s", strerror(-r));
		return;
	}
	/* SQLite says a commit once: a read of its changes that failed is made again at each wakeup. */
	if (r == 0 && !w->again)
		return;
	r = store_changes_since(w->fs->store, &w->mark, tell, w);
	if (r < 0 && !w->again)
		log_warn("cannot read what other daemons committed to the store: %s; this mount may show older "
			 "versions of their files until it can (it tries again every second)", strerror(-r));
	else if (r >= 0 && w->again)
		log_info("read what other daemons committed to the store again");
	w->again = r < 0;
	if (r > 0)
		kcache_placement_check(w->fs);
}

/*
 * Drains inotify's events: whether the registrations changed (*ret_reg)
 * and whether the WAL did (*ret_wal). Other files of the store's folder (a
 * log kept beside it, another store) say nothing.
 */
static void drain(struct watch *w, bool *ret_reg, bool *ret_wal)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	*ret_reg = *ret_wal = false;
	while ((n = read(w->inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if (e->mask & IN_Q_OVERFLOW)
				*ret_reg = *ret_wal = true;
			else if (e->wd == w->reg_wd)
				*ret_reg = true;
			else if (e->wd == w->wal_wd && e->len > 0 && strcmp(e->name, w->wal_name) == 0)
				*ret_wal = true;
			p += sizeof(*e) + e->len;
		}
	}
}

static void *watch_thread(void *arg)
{
	struct watch *w = arg;
	struct pollfd fds[2] = { { .fd = w->stop_fd, .events = POLLIN }, { .fd = w->inotify_fd, .events = POLLIN } };
	int64_t looked_ns = mono_ns();

	for (;;) {
		bool reg, wal;
		int n = poll(fds, w->inotify_fd >= 0 ? 2 : 1, WATCH_POLL_MS);

		if (n < 0 && errno != EINTR) {
			log_err("the watcher of the store cannot wait: %s; this mount no longer follows other mounts",
				strerror(errno));
			break;
		}
		if (fds[0].revents)
			break;
		/* No event (a second passed), or no inotify: everything. */
		reg = wal = n == 0 || w->inotify_fd < 0;
		if (n > 0 && w->inotify_fd >= 0)
			drain(w, &reg, &wal);
		/*
		 * At least once a second, whatever inotify said: a filesystem
		 * that does not tell of others' writes, while other files of the
		 * folder keep the thread awake.
		 */
		if (mono_ns() - looked_ns >= WATCH_POLL_MS * 1000000LL)
			reg = wal = true;
		if (reg)
			count_peers(w);
		if (reg || wal) {
			look(w);
			looked_ns = mono_ns();
		}
	}
	return NULL;
}

/* Watches the WAL's folder (for the WAL) and the registrations' folder; -1 if inotify cannot. */
static int watch_files(struct watch *w)
{
	_cleanup_free_ char *copy = strdup(w->store_path), *reg = NULL, *wal = NULL;
	const char *dir, *slash = strrchr(w->store_path, '/');
	int fd;

	if (!copy || asprintf(&reg, "%s%s", w->store_path, REGISTRY_SUFFIX) < 0 ||
	    asprintf(&wal, "%s-wal", slash ? slash + 1 : w->store_path) < 0)
		return -ENOMEM;
	w->wal_name = TAKE_PTR(wal);
	dir = dirname(copy);
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return -errno;
	w->inotify_fd = fd;
	/* The folder: the WAL is made anew when the store is opened after it was folded back. */
	w->wal_wd = inotify_add_watch(fd, dir, IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	w->reg_wd = inotify_add_watch(fd, reg,
				      IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR | IN_DONT_FOLLOW);
	if (w->wal_wd < 0)
		return -errno;
	return 0;
}

int watch_start(struct fs *fs, const char *store_path, struct watch **ret)
{
	struct watch *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->fs = fs;
	w->inotify_fd = w->stop_fd = -1;
	w->wal_wd = w->reg_wd = -1;
	w->store_path = strdup(store_path);
	if (!w->store_path) {
		r = -ENOMEM;
		goto fail;
	}
	/* SQLite's answer first, then the log's end: a commit between the two is seen, and found already read. */
	if ((r = store_changed_elsewhere(fs->store)) < 0 || (r = store_mark_end(fs->store, &w->mark)) < 0)
		goto fail;
	r = watch_files(w);
	if (r < 0) {
		log_info("cannot watch the store '%s' for other mounts' commits (%s): looking once a second",
			 store_path, strerror(-r));
		if (w->inotify_fd >= 0)
			close(w->inotify_fd);
		w->inotify_fd = -1;
	}
	count_peers(w);
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (w->stop_fd < 0) {
		r = -errno;
		goto fail;
	}
	r = pthread_create(&w->thread, NULL, watch_thread, w);
	if (r != 0) {
		r = -r;
		goto fail;
	}
	*ret = w;
	return 0;
fail:
	log_err("cannot watch the store '%s' for other mounts' commits: %s", store_path, strerror(-r));
	if (w->inotify_fd >= 0)
		close(w->inotify_fd);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	free(w->wal_name);
	free(w->store_path);
	free(w);
	return r;
}

void watch_stop(struct watch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (write(w->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_err("cannot stop the watcher of the store: %s", strerror(errno));
	else
		pthread_join(w->thread, NULL);
	close(w->stop_fd);
	if (w->inotify_fd >= 0)
		close(w->inotify_fd);
	free(w->wal_name);
	free(w->store_path);
	free(w);
}
