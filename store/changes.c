/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * changes.c: what other connections committed (store_changes.h).
 *
 * Several daemons may serve one store, each with its own connection; a
 * commit through one must reach what the others keep: their kernels'
 * caches, the view's lists, their own snapshot. SQLite says cheaply that
 * another connection committed (PRAGMA data_version moves; it reads
 * nothing but the WAL index), and what it committed is in the log every
 * commit writes anyway: `revisions`, one row a commit of a doc. Plain
 * files are not in the log: a daemon that changes one while others serve
 * the store records its path in `plain_changes` (a row a change, pruned as
 * new ones come), which is read the same way.
 *
 * Workload: store_changed_elsewhere() on every wakeup of a daemon's
 * watcher (each commit of another connection, and once a second);
 * store_changes_since() only when it says yes, reading just the new rows
 * by their primary keys.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "store/store_changes.h"
#include "store/store_internal.h"
#include "store/util.h"

/* Plain changes kept: a daemon that has not read them within this long is told that it missed some. */
#define PLAIN_KEEP_NS (60LL * 1000000000)
#define PLAIN_PRUNE_EVERY 256
/* Changes read under one hold of the store's lock. */
#define CHANGES_CHUNK 1024

static int max_id(struct store *st, const char *sql, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, sql, NULL, 0, NULL, 0, "cannot read the end of the log", &stmt);

	if (r < 0)
		return r;
	*ret = sqlite3_column_int64(stmt, 0);
	return 0;
}

/* The count of forgets ever made in the store (meta forgets; 0 before the first), into *ret. Lock held. */
static int forgets_count(struct store *st, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'forgets'", NULL, 0, NULL, 0,
			       "cannot read the count of forgets", &stmt);

	if (r < 0 && r != -ENOENT)
		return r;
	*ret = r == 0 ? sqlite3_column_int64(stmt, 0) : 0;
	return 0;
}

int store_mark_end(struct store *st, struct store_mark *ret)
{
	STORE_LOCK(st);
	struct store_mark m = { 0 };
	int r = max_id(st, "SELECT coalesce(max(id), 0) FROM revisions", &m.rev);

	if (r == 0)
		r = max_id(st, "SELECT coalesce(max(id), 0) FROM plain_changes", &m.plain);
	if (r == 0)
		r = forgets_count(st, &m.forgets);
	if (r == 0)
		*ret = m;
	return r;
}

int store_changed_elsewhere(struct store *st)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int64_t v;
	int r, was;

	/* A blob kept open holds a read transaction: this connection would see none of it. */
	store_blob_drop(st);
	r = store_row_args(st, "PRAGMA data_version", NULL, 0, NULL, 0, "cannot ask whether others committed", &stmt);
	if (r < 0)
		return r;
	v = sqlite3_column_int64(stmt, 0);
	was = st->data_version != 0 && st->data_version != v;
	st->data_version = v;
	return was;
}

void store_read_anew(struct store *st)
{
	STORE_LOCK(st);

	store_blob_drop(st);
}

void store_forgot_elsewhere(struct store *st)
{
	STORE_LOCK(st);

	store_blob_drop(st);
	kept_drop(st);
}

/* One change read from the log, its path copied. */
struct change {
	enum store_change_kind kind;
	char *path;
};

/* Appends a change of kind at path (copied) to v. */
static int change_add(struct change **v, size_t *n, size_t *alloc, enum store_change_kind kind, const char *path)
{
	int r = ARRAY_GROW(*v, *n, *alloc, 64);

	if (r < 0)
		return r;
	(*v)[*n] = (struct change){ kind, strdup(path) };
	if (!(*v)[*n].path)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Up to CHANGES_CHUNK changes of sql past *after into v (n of them); *after moves past them. */
static int read_changes(struct store *st, const char *sql, enum store_change_kind kind, int64_t *after,
			struct change **v, size_t *n, size_t *alloc)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_ints(st, sql, STORE_INTS(*after, CHANGES_CHUNK), &stmt);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(stmt, 1);

		if ((r = change_add(v, n, alloc, kind, p ? p : "")) < 0)
			return r;
		*after = sqlite3_column_int64(stmt, 0);
	}
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot read what was committed elsewhere");
}

/*
 * A forget made by another connection (a daemon's sync, pulling one from
 * another machine) blanked rows in place, which no revision says: the count
 * of forgets in meta moves. What read.c keeps of docs' bytes goes, and if
 * the count moved past *mark, a change says so into v. Lock held.
 */
static int forgets_check(struct store *st, int64_t *mark, struct change **v, size_t *n, size_t *alloc)
{
	int64_t now;
	int r = forgets_count(st, &now);

	if (r < 0)
		return r;
	if (now != st->kept_forgets) {
		kept_drop(st);
		st->kept_forgets = now;
	}
	if (now == *mark)
		return 0;
	if ((r = change_add(v, n, alloc, STORE_CHANGE_FORGET, "")) < 0)
		return r;
	*mark = now;
	return 0;
}

/*
 * Whether plain changes past *mark were pruned before this reader read
 * them: the first row left is past the next id (ids go up by one, and the
 * newest row is never pruned). If so, a change says so into v, and *mark
 * moves to just before that row. Lock held.
 */
static int plain_lost_check(struct store *st, int64_t *mark, struct change **v, size_t *n, size_t *alloc)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int64_t first;
	int r = store_row_args(st, "SELECT coalesce(min(id), 0) FROM plain_changes WHERE id > ?1", NULL, 0,
			       STORE_INTS(*mark), "cannot read the log of plain changes", &stmt);

	if (r < 0)
		return r;
	first = sqlite3_column_int64(stmt, 0);
	if (first <= *mark + 1)
		return 0;
	if ((r = change_add(v, n, alloc, STORE_CHANGE_LOST, "")) < 0)
		return r;
	*mark = first - 1;
	return 0;
}

int store_changes_since(struct store *st, struct store_mark *mark, store_change_fn fn, void *ctx)
{
	struct store_mark m = *mark;
	_cleanup_free_ struct change *v = NULL;
	size_t alloc = 0;
	int total = 0, r;

	/* A chunk at a time, its paths let go once told: others may commit as fast as this reads. */
	for (bool first = true;; first = false) {
		size_t n = 0;

		/* Read under the lock, told after it: fn may call the store. */
		{
			STORE_LOCK(st);

			r = first ? forgets_check(st, &m.forgets, &v, &n, &alloc) : 0;
			if (r == 0)
				r = plain_lost_check(st, &m.plain, &v, &n, &alloc);
			if (r == 0)
				r = read_changes(st, "SELECT id, path FROM revisions WHERE id > ?1 ORDER BY id LIMIT ?2",
						 STORE_CHANGE_DOC, &m.rev, &v, &n, &alloc);
			if (r == 0)
				r = read_changes(st, "SELECT id, path FROM plain_changes WHERE id > ?1 ORDER BY id LIMIT ?2",
						 STORE_CHANGE_PLAIN, &m.plain, &v, &n, &alloc);
			if (r == 0 && n > 0) {
				/* What is kept by generation (the view's lists) is asked for again. */
				__atomic_add_fetch(&st->generation, 1, __ATOMIC_RELEASE);
				__atomic_add_fetch(&st->placement, 1, __ATOMIC_RELEASE);
			}
		}
		for (size_t i = 0; r >= 0 && i < n; i++)
			r = fn(ctx, v[i].kind, v[i].path);
		for (size_t i = 0; i < n; i++)
			free(v[i].path);
		if (r < 0)
			break;
		total += (int)n;
		*mark = m;
		if (n < CHANGES_CHUNK)
			break;
	}
	return r < 0 ? r : total;
}

int store_plain_changed(struct store *st, const char *path)
{
	STORE_LOCK(st);
	int64_t now = now_ns();
	int r;

	if (st->readonly)
		return -EROFS;
	r = store_run_args(st, "INSERT INTO plain_changes(path, time_ns) VALUES (?1, ?2)", STORE_TEXTS(path),
			   STORE_INTS(now), "cannot record a change of a plain file for the other daemons");
	if (r >= 0 && ++st->plain_n >= PLAIN_PRUNE_EVERY) {
		st->plain_n = 0;
		r = store_run_args(st, "DELETE FROM plain_changes WHERE time_ns < ?1", NULL, 0,
				   STORE_INTS(now - PLAIN_KEEP_NS), "cannot prune the changes of plain files");
	}
	return r < 0 ? r : 0;
}

void store_set_shared(struct store *st, bool shared)
{
	__atomic_store_n(&st->shared, shared, __ATOMIC_RELEASE);
}

bool store_is_shared(const struct store *st)
{
	return __atomic_load_n(&st->shared, __ATOMIC_ACQUIRE);
}

/* Whether a writer of another daemon (or another thread of this one) waits for SQLite's lock. */
static bool turn_wanted(struct store *st)
{
	if (st->turn_yield < 0)
		return false;
	if (flock(st->turn_yield, LOCK_EX | LOCK_NB) == 0) {
		flock(st->turn_yield, LOCK_UN);
		return false;
	}
	return errno == EWOULDBLOCK;
}

bool store_batch_due(struct store *st)
{
	return st->batch_depth > 0 && now_ns() - st->batch_ns > STORE_BATCH_NS &&
	       (store_is_shared(st) || turn_wanted(st));
}

int store_turns(struct store *st, const char *dir)
{
	int fd[2];

	for (int i = 0; i < 2; i++) {
		/* Two opens, two locks: flock() locks an open file, not the folder. */
		fd[i] = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd[i] < 0) {
			int r = -errno;

			if (i == 1)
				close(fd[0]);
			return r;
		}
	}
	st->turn_wait = fd[0];
	st->turn_yield = fd[1];
	return 0;
}

void store_turns_end(struct store *st)
{
	if (st->turn_wait >= 0)
		close(st->turn_wait);
	if (st->turn_yield >= 0)
		close(st->turn_yield);
	st->turn_wait = st->turn_yield = -1;
}

void store_turn_end(struct store *st)
{
	flock(st->turn_wait, LOCK_UN);
	st->turn_held = false;
}

void store_turn_give(struct store *st)
{
	int64_t start;

	if (!turn_wanted(st))
		return;
	start = now_ns();
	/* They hold their turn from their wait until their write is done: then it can be taken. */
	while (turn_wanted(st) && now_ns() - start < STORE_TURN_NS)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

int store_busy_wait(void *ctx, int count)
{
	/* Short naps: the lock may be free for a moment only (a batch that gives its turn waits for us). */
	static const int nap_ms[] = { 1, 2, 5, 10 };
	struct store *st = ctx;
	int64_t now = now_ns();
	int nap = nap_ms[count < 3 ? count : 3];

	if (count == 0)
		st->busy_ns = now;
	else if (now - st->busy_ns >= STORE_BUSY_NS)
		return 0;
	/* A take-in's batch waits its turn too: two take-ins then take turns. */
	if (st->turn_wait >= 0 && !st->turn_held && flock(st->turn_wait, LOCK_SH | LOCK_NB) == 0)
		st->turn_held = true;
	nanosleep(&(struct timespec){ .tv_nsec = nap * 1000000L }, NULL);
	return 1;
}
