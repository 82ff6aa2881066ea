/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * seen.c: what the store last saw of the folder underneath the mount.
 *
 * One row of table `underneath` per entry (file, folder, symlink) of each
 * folder convfs is mounted over (`folders`: the host's, a container's; one
 * store may serve several at once), as it stood when a take-in last looked at it:
 * its type, size, mtime and inode number, and for a doc the revision whose
 * content is exactly that file's. fs/backing/import.c walks the folder at every mount
 * and compares each entry with its row; only entries that differ are read.
 *
 * Workload: one load of the whole table per mount (tens of thousands of rows,
 * read in primary-key order, so sorted by path without a sort), then writes
 * only for what changed. A row is never deleted: an entry missing underneath
 * is marked gone (so it is reported once, and nothing of it leaves the store);
 * if it comes back, it is compared with what was last seen of it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"
#include "store/util.h"

void store_seen_set_release(struct store_seen_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		free(set->v[i].path);
	free(set->v);
	set->v = NULL;
	set->n = 0;
}

/* Appends e (taking its path) to set, which has room for *alloc rows. */
static int seen_push(struct store_seen_set *set, size_t *alloc, const struct store_seen *e)
{
	if (!e->path)
		return -ENOMEM;
	if (ARRAY_GROW(set->v, set->n, *alloc, 1024) < 0)
		return -ENOMEM;
	set->v[set->n++] = *e;
	return 0;
}

/*
 * Steps stmt to its end, each row made an entry by from_row (its path
 * strdup()ed, NULL if out of memory) and appended to set (room for *alloc);
 * what names a failure to read them. The number of rows, or -errno (set
 * keeps what it had). Called with the store's lock held.
 */
static long seen_step(struct store *st, sqlite3_stmt *stmt, void (*from_row)(sqlite3_stmt *stmt, struct store_seen *e),
		      const char *what, struct store_seen_set *set, size_t *alloc)
{
	long n = 0;
	int r, rc;

	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct store_seen e = { 0 };

		from_row(stmt, &e);
		if ((r = seen_push(set, alloc, &e)) < 0) {
			free(e.path);
			return r;
		}
		n++;
	}
	return rc == SQLITE_DONE ? n : store_fail(st, rc, what);
}

/* The rows of the query sql (no parameters) into *ret, as seen_step() reads them. */
static int seen_read(struct store *st, const char *sql, void (*from_row)(sqlite3_stmt *stmt, struct store_seen *e),
		     const char *what, struct store_seen_set *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct store_seen_set set = { 0 };
	size_t alloc = 0;
	long n;
	int r;

	r = store_prepare(st, sql, &stmt);
	if (r < 0)
		return r;
	n = seen_step(st, stmt, from_row, what, &set, &alloc);
	if (n < 0) {
		store_seen_set_release(&set);
		return (int)n;
	}
	*ret = set;
	return 0;
}

static void seen_from_row(sqlite3_stmt *stmt, struct store_seen *e)
{
	*e = (struct store_seen){
		.path = strdup((const char *)sqlite3_column_text(stmt, 0)),
		.type = (uint32_t)sqlite3_column_int64(stmt, 1),
		.size = sqlite3_column_int64(stmt, 2),
		.mtime_ns = sqlite3_column_int64(stmt, 3),
		.ino = (uint64_t)sqlite3_column_int64(stmt, 4),
		.rev = sqlite3_column_int64(stmt, 5), /* NULL reads as 0 */
		.gone = sqlite3_column_int(stmt, 6) != 0,
	};
}

/* The rows of the folder store_seen_folder() chose, ?1. */
#define SEEN_COLUMNS "SELECT path, type, size, mtime_ns, ino, rev, gone FROM underneath WHERE folder = ?1 AND "
#define SEEN_CHUNK 4096 /* rows read under one hold of the store's lock */
/* A folder not taken in for this long is forgotten: its rows go (it was likely a container's, rebuilt since). */
#define FOLDER_FORGOTTEN_NS (90LL * 86400 * 1000000000)

/*
 * Appends the rows of sql (the folder bound to ?1, its texts to ?2 ..,
 * limit to the next parameter if > 0) to set; the number read, or -errno.
 */
static long seen_query(struct store *st, const char *sql, const char *const *texts, int ntexts, long limit,
		       struct store_seen_set *set, size_t *alloc)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_prepare(st, sql, &stmt);

	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 1, st->seen_folder);
	for (int i = 0; i < ntexts; i++)
		sqlite3_bind_text(stmt, i + 2, texts[i], -1, SQLITE_STATIC);
	if (limit > 0)
		sqlite3_bind_int64(stmt, ntexts + 2, limit);
	return seen_step(st, stmt, seen_from_row, "cannot read what was seen underneath", set, alloc);
}

int store_seen_load(struct store *st, struct store_seen_set *ret)
{
	struct store_seen_set set = { 0 };
	size_t alloc = 0;
	long n;

	/*
	 * WITHOUT ROWID: the primary key's order is the table's, BINARY
	 * collation is memcmp. In pieces, each under its own hold of the
	 * store's lock: a request's call waits for a piece, not for 150,000
	 * rows. Only the take-in writes the table, and not while it loads it.
	 */
	n = seen_query(st, SEEN_COLUMNS "1 ORDER BY path LIMIT ?2", NULL, 0, SEEN_CHUNK, &set, &alloc);
	while (n == SEEN_CHUNK) {
		const char *after[] = { set.v[set.n - 1].path };

		n = seen_query(st, SEEN_COLUMNS "path > ?2 ORDER BY path LIMIT ?3", after, 1, SEEN_CHUNK, &set,
			       &alloc);
	}
	if (n < 0) {
		store_seen_set_release(&set);
		return (int)n;
	}
	*ret = set;
	return 0;
}

int store_seen_load_below(struct store *st, const char *path, struct store_seen_set *ret)
{
	_cleanup_free_ char *lo = NULL, *hi = NULL;
	struct store_seen_set set = { 0 };
	size_t alloc = 0;
	long n;

	/*
	 * From "path" to "path0" ('0' follows '/'): one range of the key (an OR
	 * of two would scan the table), less what sorts between path and
	 * "path/" ("path-x", "path.json").
	 */
	if (asprintf(&lo, "%s/", path) < 0 || asprintf(&hi, "%s0", path) < 0)
		return -ENOMEM;
	n = seen_query(st, SEEN_COLUMNS "path >= ?2 AND path < ?4 AND (path = ?2 OR path >= ?3) ORDER BY path",
		       (const char *const[]){ path, lo, hi }, 3, 0, &set, &alloc);
	if (n < 0) {
		store_seen_set_release(&set);
		return (int)n;
	}
	*ret = set;
	return 0;
}

int store_seen_load_top(struct store *st, struct store_seen_set *ret)
{
	struct store_seen_set set = { 0 };
	_cleanup_free_ char *from = strdup("");
	size_t alloc = 0;
	long n;

	/*
	 * One seek a row: after a row of the top level, the next string
	 * ("name\x01"); after one below it, past all of that folder ("name0").
	 */
	for (;;) {
		struct store_seen *last;
		const char *slash;
		char *next;
		size_t len;

		if (!from) {
			store_seen_set_release(&set);
			return -ENOMEM;
		}
		n = seen_query(st, SEEN_COLUMNS "path >= ?2 ORDER BY path LIMIT ?3", (const char *const[]){ from },
			       1, 1, &set, &alloc);
		if (n <= 0)
			break;
		last = &set.v[set.n - 1];
		slash = strchr(last->path, '/');
		len = slash ? (size_t)(slash - last->path) : strlen(last->path);
		next = malloc(len + 2);
		if (next) {
			memcpy(next, last->path, len);
			next[len] = slash ? '0' : '\x01';
			next[len + 1] = '\0';
		}
		if (slash) {
			/* A row below the top: its folder's own row, if any, came before it. */
			free(last->path);
			set.n--;
		}
		free(from);
		from = next;
	}
	if (n < 0) {
		store_seen_set_release(&set);
		return (int)n;
	}
	*ret = set;
	return 0;
}

static int seen_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct store_seen *)elem)->path);
}

struct store_seen *store_seen_find(const struct store_seen_set *set, const char *path)
{
	if (!set->n)
		return NULL;
	return bsearch(path, set->v, set->n, sizeof(set->v[0]), seen_cmp);
}

int store_seen_put(struct store *st, const struct store_seen *e)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (st->readonly)
		return -EROFS;
	if (!st->seen_folder)
		return -EINVAL; /* store_seen_folder() first */
	r = store_prepare(st, "INSERT OR REPLACE INTO underneath(path, type, size, mtime_ns, ino, rev, gone, folder) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &stmt);
	if (r < 0)
		return r;
	sqlite3_bind_int64(stmt, 8, st->seen_folder);
	sqlite3_bind_text(stmt, 1, e->path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, (sqlite3_int64)e->type);
	sqlite3_bind_int64(stmt, 3, e->size);
	sqlite3_bind_int64(stmt, 4, e->mtime_ns);
	sqlite3_bind_int64(stmt, 5, (sqlite3_int64)e->ino);
	if (e->rev > 0)
		sqlite3_bind_int64(stmt, 6, e->rev);
	else
		sqlite3_bind_null(stmt, 6);
	sqlite3_bind_int(stmt, 7, e->gone);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot record what was seen underneath");
}

int store_seen_mark_gone(struct store *st, const char *path)
{
	STORE_LOCK(st);
	int r;

	if (st->readonly)
		return -EROFS;
	r = store_run_args(st, "UPDATE underneath SET gone = 1 WHERE path = ?1 AND folder = ?2", STORE_TEXTS(path),
			   STORE_INTS(st->seen_folder), "cannot record what is missing underneath");
	return r < 0 ? r : r > 0 ? 0 : -ENOENT;
}

/* How folder_find() looks for a folder. */
enum folder_match {
	FOLDER_EXACT,    /* this folder */
	FOLDER_UNBORN,   /* a row of its path, device and inode from before birth times (schema 12) */
	FOLDER_UNKNOWN,  /* a row from before schema 12, whose device and inode were never known */
};

/* The folder: its row id, or -ENOENT (0 with *ret_taken). */
static int folder_find(struct store *st, const char *path, uint64_t dev, uint64_t ino, int64_t born_ns,
		       enum folder_match how, int64_t *ret_id, bool *ret_taken)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	switch (how) {
	case FOLDER_EXACT:
		r = store_row_args(st, "SELECT id, taken_ns IS NOT NULL FROM folders WHERE path = ?1 AND dev = ?2 AND "
				       "ino = ?3 AND born_ns = ?4", STORE_TEXTS(path),
				   STORE_INTS((int64_t)dev, (int64_t)ino, born_ns), "cannot read the folders taken in",
				   &stmt);
		break;
	case FOLDER_UNBORN:
		r = store_row_args(st, "SELECT id, taken_ns IS NOT NULL FROM folders WHERE path = ?1 AND dev = ?2 AND "
				       "ino = ?3 AND born_ns IS NULL", STORE_TEXTS(path),
				   STORE_INTS((int64_t)dev, (int64_t)ino), "cannot read the folders taken in", &stmt);
		break;
	default:
		/* The folder first taken in, by its path ("" if that take-in never ended). */
		r = store_row_args(st, "SELECT id, taken_ns IS NOT NULL FROM folders WHERE dev IS NULL AND "
				       "(path = ?1 OR path = '') ORDER BY path = ?1 DESC LIMIT 1",
				   STORE_TEXTS(path), NULL, 0, "cannot read the folders taken in", &stmt);
		break;
	}
	if (r < 0)
		return r;
	*ret_id = sqlite3_column_int64(stmt, 0);
	*ret_taken = sqlite3_column_int(stmt, 1) != 0;
	return 0;
}

/* The folder's row: this folder's, or one from before that it claims; -ENOENT if none. */
static int folder_row(struct store *st, const char *path, uint64_t dev, uint64_t ino, int64_t born_ns,
		      int64_t *ret_id, bool *ret_taken)
{
	int r;

	r = folder_find(st, path, dev, ino, born_ns, FOLDER_EXACT, ret_id, ret_taken);
	if (r != -ENOENT)
		return r;
	r = folder_find(st, path, dev, ino, born_ns, FOLDER_UNBORN, ret_id, ret_taken);
	if (r == -ENOENT)
		r = folder_find(st, path, dev, ino, born_ns, FOLDER_UNKNOWN, ret_id, ret_taken);
	if (r < 0 || st->readonly)
		return r;
	r = store_run_args(st, "UPDATE folders SET path = ?1, dev = ?2, ino = ?3, born_ns = ?4 WHERE id = ?5",
			   STORE_TEXTS(path), STORE_INTS((int64_t)dev, (int64_t)ino, born_ns, *ret_id),
			   "cannot record the folder taken in");
	return r < 0 ? r : 0;
}

int store_seen_folder(struct store *st, const char *path, uint64_t dev, uint64_t ino, int64_t born_ns,
		      bool *ret_taken)
{
	STORE_LOCK(st);
	int64_t id = 0, now = now_ns();
	bool taken = false;
	int r;

	r = folder_row(st, path, dev, ino, born_ns, &id, &taken);
	if (r == -ENOENT && st->readonly) {
		/* Never taken in, and nothing can be recorded: no rows. */
		st->seen_folder = 0;
		*ret_taken = false;
		return 0;
	}
	if (r == -ENOENT) {
		r = store_run_args(st, "INSERT INTO folders(path, dev, ino, born_ns) VALUES (?1, ?2, ?3, ?4)",
				   STORE_TEXTS(path), STORE_INTS((int64_t)dev, (int64_t)ino, born_ns),
				   "cannot record the folder taken in");
		id = sqlite3_last_insert_rowid(st->db);
	}
	if (r < 0)
		return r;
	st->seen_folder = id;
	*ret_taken = taken;
	if (st->readonly)
		return 0;
	/* The folders not taken in for long (containers rebuilt since) go, with their rows. */
	r = store_run_args(st, "DELETE FROM underneath WHERE folder IN "
			       "(SELECT id FROM folders WHERE taken_ns < ?1 AND id != ?2)", NULL, 0,
			   STORE_INTS(now - FOLDER_FORGOTTEN_NS, id), "cannot forget the folders long gone");
	if (r >= 0)
		r = store_run_args(st, "DELETE FROM folders WHERE taken_ns < ?1 AND id != ?2", NULL, 0,
				   STORE_INTS(now - FOLDER_FORGOTTEN_NS, id), "cannot forget the folders long gone");
	return r < 0 ? r : 0;
}

int64_t store_seen_folder_id(const struct store *st)
{
	return st->seen_folder;
}

int store_seen_folder_taken(struct store *st)
{
	STORE_LOCK(st);
	int64_t now = now_ns();
	int r;

	if (st->readonly || !st->seen_folder)
		return 0;
	/* At most once a day: a mount with nothing changed writes nothing else. */
	r = store_run_args(st, "UPDATE folders SET taken_ns = ?1 WHERE id = ?2 AND (taken_ns IS NULL OR taken_ns < ?3)",
			   NULL, 0, STORE_INTS(now, st->seen_folder, now - 86400LL * 1000000000),
			   "cannot record the take-in of the folder");
	return r < 0 ? r : 0;
}

static void path_from_row(sqlite3_stmt *stmt, struct store_seen *e)
{
	*e = (struct store_seen){ .path = strdup((const char *)sqlite3_column_text(stmt, 0)) };
}

int store_seen_folder_paths(struct store *st, int (*fn)(void *ctx, const char *path), void *ctx)
{
	struct store_seen_set set = { 0 };
	int r;

	{
		STORE_LOCK(st);

		r = seen_read(st, "SELECT DISTINCT path FROM folders WHERE path != '' ORDER BY path", path_from_row,
			      "cannot read the folders taken in", &set);
	}
	for (size_t i = 0; r == 0 && i < set.n; i++)
		r = fn(ctx, set.v[i].path);
	store_seen_set_release(&set);
	return r;
}

int store_seen_legacy(struct store *st, int64_t *ret_ns)
{
	_cleanup_free_ char *v = NULL;
	char *end;
	long long ns;
	int r;

	r = store_meta_get(st, "underneath_before", &v);
	if (r < 0)
		return r;
	errno = 0;
	ns = strtoll(v, &end, 10);
	*ret_ns = errno || *end || ns < 0 ? 0 : (int64_t)ns;
	return 0;
}

int store_seen_legacy_done(struct store *st)
{
	STORE_LOCK(st);

	if (st->readonly)
		return -EROFS;
	return store_exec(st, "DELETE FROM meta WHERE key = 'underneath_before'");
}

static void import_from_row(sqlite3_stmt *stmt, struct store_seen *e)
{
	*e = (struct store_seen){ .path = strdup((const char *)sqlite3_column_text(stmt, 0)),
				  .rev = sqlite3_column_int64(stmt, 1) };
}

int store_seen_load_imports(struct store *st, struct store_seen_set *ret)
{
	STORE_LOCK(st);

	/* One scan of the revision log (it has no index on path), once per store. */
	return seen_read(st, "SELECT path, max(id) FROM revisions WHERE kind IN ('import', 'import-damaged') "
			     "GROUP BY path ORDER BY path", import_from_row, "cannot read the first import", ret);
}

bool store_is_readonly(const struct store *st)
{
	return st->readonly;
}
