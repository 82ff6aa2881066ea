/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store.c: opening the SQLite store, error translation, settings, batches.
 *
 * One connection serves the whole daemon, guarded by st->lock: SQLite
 * serialises writers anyway, and the hot read paths hold the lock only for a
 * few indexed lookups. The database runs in WAL mode with synchronous=NORMAL:
 * a committed transaction survives the daemon being killed (the WAL is in the
 * kernel's page cache), so nothing a writer was told is saved is lost with it; an fsync of the WAL on
 * every commit would only add protection against power loss, at a large cost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "store/search.h"
#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/util.h"

int store_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_TOOBIG:
		return -EFBIG;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_NOTADB:
		return -ENOTSUP;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_INTERRUPT:
		return -EINTR;
	default: /* SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_ERROR, ... */
		return -EIO;
	}
}

int store_fail(struct store *st, int rc, const char *what)
{
	log_err("store: %s: %s", what, st && st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
	return store_errno(rc) ? store_errno(rc) : -EIO;
}

/*
 * The statement cache: keyed by connection and by the address of the SQL
 * text (every statement is a string literal), each entry in use by at most one
 * caller at a time; a statement asked for while its entry is in use is
 * prepared afresh and finalized on release. Guarded by its own mutex, as
 * several stores may live in one process (tests).
 */
#define STMT_CACHE 96

static struct {
	sqlite3 *db;
	const char *sql;
	sqlite3_stmt *stmt;
	bool busy;
} stmt_cache[STMT_CACHE];
static pthread_mutex_t stmt_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Before a statement that may write outside a transaction: the blob kept
 * open holds a read transaction, and a write on top of it is one SQLite
 * cannot wait for. If another daemon holds the lock or has committed since,
 * it fails at once with SQLITE_BUSY ("database is locked"), the busy
 * handler never asked. Closed, the statement takes the lock afresh and
 * waits its turn like any other.
 */
static void write_ahead(struct store *st)
{
	if (st->blob && sqlite3_get_autocommit(st->db))
		store_blob_drop(st);
}

int store_prepare(struct store *st, const char *sql, sqlite3_stmt **ret)
{
	int rc, free_slot = -1;

	if (store_tx_lost(st))
		return -EIO;
	pthread_mutex_lock(&stmt_cache_lock);
	for (int i = 0; i < STMT_CACHE; i++) {
		if (stmt_cache[i].db == st->db && stmt_cache[i].sql == sql && !stmt_cache[i].busy) {
			stmt_cache[i].busy = true;
			*ret = stmt_cache[i].stmt;
			pthread_mutex_unlock(&stmt_cache_lock);
			goto prepared;
		}
		if (!stmt_cache[i].db && free_slot < 0)
			free_slot = i;
	}
	pthread_mutex_unlock(&stmt_cache_lock);
	rc = sqlite3_prepare_v3(st->db, sql, -1, free_slot >= 0 ? SQLITE_PREPARE_PERSISTENT : 0, ret, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot prepare a statement");
	if (free_slot >= 0) {
		pthread_mutex_lock(&stmt_cache_lock);
		if (!stmt_cache[free_slot].db) {
			stmt_cache[free_slot].db = st->db;
			stmt_cache[free_slot].sql = sql;
			stmt_cache[free_slot].stmt = *ret;
			stmt_cache[free_slot].busy = true;
		}
		pthread_mutex_unlock(&stmt_cache_lock);
	}
prepared:
	if (!sqlite3_stmt_readonly(*ret))
		write_ahead(st);
	return 0;
}

void store_stmt_release(sqlite3_stmt *stmt)
{
	if (!stmt)
		return;
	pthread_mutex_lock(&stmt_cache_lock);
	for (int i = 0; i < STMT_CACHE; i++)
		if (stmt_cache[i].stmt == stmt) {
			sqlite3_reset(stmt);
			sqlite3_clear_bindings(stmt);
			stmt_cache[i].busy = false;
			pthread_mutex_unlock(&stmt_cache_lock);
			return;
		}
	pthread_mutex_unlock(&stmt_cache_lock);
	sqlite3_finalize(stmt);
}

void store_stmt_cache_drop(sqlite3 *db)
{
	pthread_mutex_lock(&stmt_cache_lock);
	for (int i = 0; i < STMT_CACHE; i++)
		if (stmt_cache[i].db == db) {
			sqlite3_finalize(stmt_cache[i].stmt);
			stmt_cache[i].db = NULL;
			stmt_cache[i].sql = NULL;
			stmt_cache[i].stmt = NULL;
			stmt_cache[i].busy = false;
		}
	pthread_mutex_unlock(&stmt_cache_lock);
}

int store_prepare_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		       size_t ni, sqlite3_stmt **ret)
{
	int r = store_prepare(st, sql, ret);

	if (r < 0)
		return r;
	for (size_t i = 0; i < nt; i++)
		sqlite3_bind_text(*ret, (int)i + 1, texts[i], -1, SQLITE_STATIC);
	for (size_t i = 0; i < ni; i++)
		sqlite3_bind_int64(*ret, (int)(nt + i) + 1, ints[i]);
	return 0;
}

int store_prepare_ints(struct store *st, const char *sql, const int64_t *vals, size_t n, sqlite3_stmt **ret)
{
	return store_prepare_args(st, sql, NULL, 0, vals, n, ret);
}

int dup_bytes(sqlite3_stmt *stmt, int col, char **ret, size_t *ret_len)
{
	size_t n = (size_t)sqlite3_column_bytes(stmt, col);
	char *p = malloc(n + 1);

	if (!p)
		return -ENOMEM;
	if (n)
		memcpy(p, sqlite3_column_blob(stmt, col), n);
	p[n] = '\0';
	*ret = p;
	*ret_len = n;
	return 0;
}

/* store_row_args() and store_run_args(): 0 for a row (*ret holds it), 1 for none, or -errno. */
static int step_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		     size_t ni, const char *what, sqlite3_stmt **ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	r = store_prepare_args(st, sql, texts, nt, ints, ni, &stmt);
	if (r < 0)
		return r;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE)
		return 1;
	if (rc != SQLITE_ROW)
		return store_fail(st, rc, what);
	*ret = TAKE_PTR(stmt);
	return 0;
}

int store_run_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		   size_t ni, const char *what)
{
	_cleanup_stmt_ sqlite3_stmt *row = NULL;
	int r = step_args(st, sql, texts, nt, ints, ni, what, &row);

	if (r == 0)
		return store_fail(st, SQLITE_MISUSE, what); /* a statement without results gave one */
	return r < 0 ? r : sqlite3_changes(st->db);
}

int store_row_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		   size_t ni, const char *what, sqlite3_stmt **ret)
{
	int r = step_args(st, sql, texts, nt, ints, ni, what, ret);

	return r == 1 ? -ENOENT : r;
}

int store_run(struct store *st, const char *sql, const int64_t *vals, size_t n, const char *what)
{
	int r = store_run_args(st, sql, NULL, 0, vals, n, what);

	return r < 0 ? r : 0;
}

bool store_tx_lost(struct store *st)
{
	if (!st->tx_open || !sqlite3_get_autocommit(st->db))
		return false;
	log_err("store: the transaction was rolled back by SQLite after an error; nothing more is written in it");
	return true;
}

int store_tx_aside_begin(struct store *st)
{
	int r;

	store_blob_drop(st);
	if ((r = store_exec(st, "BEGIN IMMEDIATE")) == 0)
		st->tx_open = true;
	return r;
}

int store_tx_aside_end(struct store *st, int r)
{
	if (r == 0)
		r = store_tx_lost(st) ? -EIO : store_exec(st, "COMMIT");
	if (r < 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	st->tx_open = false;
	return r;
}

int store_exec(struct store *st, const char *sql)
{
	int rc;

	write_ahead(st);
	rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return store_fail(st, rc, "cannot run a statement");
	return 0;
}

/* convfs_hash(x): hash64() of x's bytes, for migrations and queries. */
static void sql_hash(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const void *p = sqlite3_value_blob(argv[0]);
	int n = sqlite3_value_bytes(argv[0]);

	sqlite3_result_int64(ctx, (sqlite3_int64)hash64(p ? p : "", (size_t)n));
}

/*
 * convfs_digest(x): digest128() of x's bytes with the store's key, or NULL
 * while the key is not read (store_digest_key()): for `convfs check`.
 */
static void sql_digest(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const struct store *st = sqlite3_user_data(ctx);
	const void *p = sqlite3_value_blob(argv[0]);
	int n = sqlite3_value_bytes(argv[0]);
	unsigned char dg[DIGEST_SIZE];

	if (st->digest_key_state <= 0) {
		sqlite3_result_null(ctx);
		return;
	}
	digest128(&st->digest_key, p ? p : "", (size_t)n, dg);
	sqlite3_result_blob(ctx, dg, sizeof(dg), SQLITE_TRANSIENT);
}

/*
 * The SQL functions of ours that migrations and queries use, and the search
 * index's functions and tokenizer (store/index.c), which its table and view
 * name: every connection has them before it touches the schema.
 */
static int register_functions(struct store *st)
{
	int rc = sqlite3_create_function(st->db, "convfs_hash", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_hash,
					 NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(st->db, "convfs_digest", 1, SQLITE_UTF8, st, sql_digest, NULL, NULL);
	if (rc == SQLITE_OK && search_register(st->db) < 0)
		rc = SQLITE_ERROR;
	return rc;
}

/* True if path's filesystem is mounted read-only. */
static bool on_readonly_fs(const char *path)
{
	struct statvfs sv;

	return statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* Opens path read-only as an immutable file (a URI, with its path escaped). */
static int open_immutable(const char *path, sqlite3 **db)
{
	_cleanup_sb_ struct sb uri = SB_INIT;
	int r = sb_adds(&uri, "file:");

	for (const char *p = path; r == 0 && *p; p++)
		r = (*p == '%' || *p == '?' || *p == '#') ? sb_addf(&uri, "%%%02x", (unsigned char)*p)
							  : sb_add(&uri, p, 1);
	if (r == 0)
		r = sb_adds(&uri, "?immutable=1");
	if (r < 0)
		return SQLITE_NOMEM;
	return sqlite3_open_v2(uri.buf, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
}

int store_open(const char *path, int flags, struct store **ret)
{
	_cleanup_free_ struct store *st = NULL;
	int rc, r, oflags;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->readonly = flags & STORE_OPEN_READONLY;
	st->turn_wait = st->turn_yield = -1;
	st->kept_forgets = -1;
	oflags = SQLITE_OPEN_NOMUTEX | (st->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	{
		/* History holds secrets: a new store is created owner-only. */
		mode_t old = umask(077);

		rc = sqlite3_open_v2(path, &st->db, oflags, NULL);
		umask(old);
	}
	if (rc != SQLITE_OK) {
		log_err("cannot open the store '%s': %s", path, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		r = store_errno(rc);
		sqlite3_close(st->db);
		return r;
	}
	sqlite3_extended_result_codes(st->db, 1);
	rc = register_functions(st);
	if (rc != SQLITE_OK) {
		r = store_fail(st, rc, "cannot register the SQL functions and the search tokenizer");
		sqlite3_close(st->db);
		return r;
	}
	/* Another connection's write waited out up to 5 s, its turn taken (store_turns()). */
	sqlite3_busy_handler(st->db, store_busy_wait, st);
	r = pthread_mutex_init(&st->lock, NULL);
	if (r != 0) {
		sqlite3_close(st->db);
		return -r;
	}
	r = pthread_cond_init(&st->batch_over, NULL);
	if (r != 0) {
		pthread_mutex_destroy(&st->lock);
		sqlite3_close(st->db);
		return -r;
	}
	/* A file that is not an SQLite database fails on the first read. */
	rc = sqlite3_exec(st->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	if ((rc & 0xff) == SQLITE_CANTOPEN && on_readonly_fs(path)) {
		/*
		 * A store in WAL mode on a read-only filesystem: SQLite cannot
		 * make the -shm file it reads through. Nothing can change the file
		 * there, so it may be read as immutable.
		 */
		store_stmt_cache_drop(st->db);
		sqlite3_close(st->db);
		st->db = NULL;
		rc = open_immutable(path, &st->db);
		if (rc == SQLITE_OK)
			rc = register_functions(st);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(st->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
		if (rc == SQLITE_OK && !st->readonly)
			log_warn("the store '%s' is on a read-only filesystem: serving it read-only", path);
		st->readonly = true;
	}
	if (rc != SQLITE_OK) {
		log_err("cannot read the store '%s': %s", path, sqlite3_errmsg(st->db));
		r = (rc & 0xff) == SQLITE_NOTADB ? -ENOTSUP : store_errno(rc);
		goto fail;
	}
	/*
	 * SQLite opens a file it may not write (a read-only filesystem, a
	 * read-only file) read-only without a word: say so once, and refuse
	 * writes up front with EROFS instead of failing each in the middle.
	 */
	if (!st->readonly && sqlite3_db_readonly(st->db, "main") == 1) {
		log_warn("the store '%s' cannot be written (read-only file or filesystem): serving it read-only",
			 path);
		st->readonly = true;
	}
	/* Only a file known to be ours may be changed, WAL mode included. */
	r = (flags & STORE_OPEN_AS_IS) && st->readonly ? store_schema_of(st) : store_migrate(st);
	if (r < 0)
		goto fail;
	if (!st->readonly) {
		r = store_exec(st, "PRAGMA journal_mode = WAL");
		if (r < 0)
			goto fail;
	}
	r = store_exec(st, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
			   "PRAGMA cache_size = -8192; PRAGMA temp_store = MEMORY");
	if (r < 0)
		goto fail;
	/*
	 * A damaged schema can fail this read: the mount's check, which comes
	 * next, says how the store is damaged, and refuses it with the reason.
	 * After temp_store is set, which drops the temporary tables there are
	 * (search_load() may make some, for an older schema read as it is).
	 */
	st->search_load_err = search_load(st);
	if (!(flags & STORE_OPEN_AS_IS) && (r = sync_track_load(st)) < 0)
		goto fail;
	*ret = TAKE_PTR(st);
	return 0;
fail:
	store_stmt_cache_drop(st->db);
	sqlite3_close(st->db);
	pthread_cond_destroy(&st->batch_over);
	pthread_mutex_destroy(&st->lock);
	return r;
}

int store_open_reader(struct store *st, struct store **ret)
{
	const char *path = sqlite3_db_filename(st->db, "main");

	int r;

	if (!path || !*path)
		return -EINVAL; /* a store in memory has no file to open again */
	r = store_open(path, STORE_OPEN_READONLY | STORE_OPEN_AS_IS, ret);
	if (r == 0)
		(*ret)->seen_folder = st->seen_folder; /* it reads what the take-in reads */
	return r;
}

void store_free(struct store *st)
{
	if (!st)
		return;
	store_blob_drop(st);
	if (st->batch_depth > 0)
		sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	/*
	 * Fold the WAL back so the store is one file at rest; not while other
	 * daemons serve it: that would wait for their readers, holding their
	 * writers up, and they fold it back when they close.
	 */
	if (!st->readonly && !st->shared)
		sqlite3_exec(st->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	store_stmt_cache_drop(st->db);
	store_rows_drop(st);
	kept_drop(st);
	free(st->ws_last.key);
	free(st->ws_last.path);
	free(st->ws_path_key);
	free(st->ws_path);
	free(st->task_last.task_id);
	free(st->task_last.key);
	if (sqlite3_close(st->db) != SQLITE_OK)
		log_err("cannot close the store: %s", sqlite3_errmsg(st->db));
	store_turns_end(st);
	pthread_cond_destroy(&st->batch_over);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

int store_meta_get(struct store *st, const char *key, char **ret_value)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	char *v;
	int r, rc;

	r = store_prepare_args(st, "SELECT value FROM meta WHERE key = ?1", STORE_TEXTS(key), NULL, 0, &stmt);
	if (r < 0)
		goto out;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_DONE) {
		r = -ENOENT;
		goto out;
	}
	if (rc != SQLITE_ROW) {
		r = store_fail(st, rc, "cannot read a setting");
		goto out;
	}
	v = strdup((const char *)sqlite3_column_text(stmt, 0));
	if (!v) {
		r = -ENOMEM;
		goto out;
	}
	*ret_value = v;
	r = 0;
out:
	return r;
}

int store_meta_set(struct store *st, const char *key, const char *value)
{
	STORE_LOCK(st);
	int r = store_run_args(st, "INSERT INTO meta(key, value) VALUES (?1, ?2) "
				   "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
			       STORE_TEXTS(key, value), NULL, 0, "cannot write a setting");

	return r < 0 ? r : 0;
}

void store_blob_drop(struct store *st)
{
	if (st->blob) {
		sqlite3_blob_close(st->blob);
		st->blob = NULL;
	}
}

void store_lock(struct store *st)
{
	pthread_mutex_lock(&st->lock);
	while (st->batch_depth > 0 && !pthread_equal(st->batch_owner, pthread_self()))
		pthread_cond_wait(&st->batch_over, &st->lock);
}

int store_batch_begin(struct store *st)
{
	int r = 0;

	store_lock(st);
	if (st->batch_depth++ == 0) {
		st->batch_owner = pthread_self();
		store_blob_drop(st);
		r = store_exec(st, "BEGIN IMMEDIATE");
		if (r < 0)
			st->batch_depth--;
		else
			st->tx_open = true;
		st->batch_ns = now_ns();
	}
	store_unlock(st);
	return r;
}

int store_batch_end(struct store *st)
{
	bool ended = false;
	int r = 0;

	store_lock(st);
	if (st->batch_depth > 0 && --st->batch_depth == 0) {
		r = store_tx_lost(st) ? -EIO : store_exec(st, "COMMIT");
		st->tx_open = false;
		if (r < 0)
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		else if (st->placement_pending)
			__atomic_add_fetch(&st->placement, 1, __ATOMIC_RELEASE);
		st->placement_pending = false;
		pthread_cond_broadcast(&st->batch_over);
		ended = true;
	}
	store_unlock(st);
	/* Other daemons' writers that waited for it go first. */
	if (ended)
		store_turn_give(st);
	return r;
}
