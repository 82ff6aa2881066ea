/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_INTERNAL_H
#define CONVFS_STORE_INTERNAL_H

/* Shared by the SQLite backend's files; not part of the store interface. */

#include <pthread.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/store_seen.h"
#include "store/store_view.h"
#include "store/util.h"

enum doc_format {
	DOC_ARRAY = 0, /* elements in table elems */
	DOC_WHOLE = 1, /* validated JSON in table blobs */
	DOC_RAW = 2,   /* unparsed bytes in table blobs (damaged on import) */
};

struct doc_rows;
#define STORE_ROWS_KEPT 4

/* Docs whose rendering read.c keeps, and the most bytes it keeps of one. */
#define KEPT_DOCS 2
#define KEPT_MAX ((size_t)4 << 20)

struct store {
	sqlite3 *db;
	pthread_mutex_t lock;
	int batch_depth; /* > 0 while store_batch_begin() is open */
	/*
	 * A transaction of ours is open (tx_begin() at depth 0, a batch).
	 * SQLite rolls a transaction back by itself after some errors (an I/O
	 * error, a full disk, no memory): every statement after that would run
	 * in a transaction of its own and stay, whatever happens to the rest.
	 * store_tx_lost() tells, and nothing more is run (see its callers).
	 */
	bool tx_open;
	pthread_t batch_owner;  /* the thread that began it: others wait for its end */
	pthread_cond_t batch_over;
	uint64_t generation; /* bumped by every committed change */
	uint64_t placement;  /* bumped whenever a task may have moved (placement_moved()) */
	bool placement_pending; /* a task moved in the transaction open now */
	/* The docs whose content the transaction open now changed (doc_update()): how many, the last, its time. */
	int touch_n;
	int64_t touch_doc, touch_ns;
	bool readonly;
	int64_t seen_folder; /* the folder underneath whose rows seen.c reads and writes (store_seen_folder()) */
	int64_t data_version; /* PRAGMA data_version at the last store_changed_elsewhere() (0: none yet) */
	bool shared;          /* other daemons serve the store too (store_set_shared()) */
	int64_t batch_ns;     /* when the batch open now began */
	unsigned plain_n;     /* plain changes recorded since the last pruning */
	/*
	 * The store syncs (meta sync_machine, store/sync_local.c): every
	 * change of a doc is recorded in sync_touch, in its own transaction,
	 * so that the sync knows which docs each revision changed.
	 */
	bool sync_track;
	/*
	 * Turns with the other daemons' writers (store_turns(), changes.c):
	 * two open files of the daemons' meeting place, flock()ed shared by a
	 * writer that waits for SQLite's lock (turn_wait, held from its first
	 * wait until the store's lock is let go) and tried exclusively by a
	 * batch that ends (turn_yield). -1 without.
	 */
	int turn_wait, turn_yield;
	bool turn_held;   /* turn_wait is flock()ed shared now */
	int64_t busy_ns;  /* when the statement waiting for SQLite's lock first found it taken */
	/*
	 * The last blob read, kept open: SQLite finds offset k of a blob by
	 * walking its overflow pages from the start, unless one handle reads
	 * on (it remembers the pages). Without it, reading a 100 MB message
	 * in 128 KiB pieces took 20 s. The handle holds a read transaction, so
	 * it is closed before every write (store_blob_drop()).
	 */
	sqlite3_blob *blob;
	const char *blob_table, *blob_column; /* string literals, compared by address */
	int64_t blob_rowid;
	/*
	 * The bytes of a few docs read from their start, with what tells
	 * whether another version of the doc begins with them (read.c,
	 * "Renderings kept").
	 */
	struct kept_render {
		int64_t doc_id, rev; /* doc_id 0: the slot is free */
		char *head;          /* the head the bytes were read with */
		int64_t tail_at;     /* where that read's tail began: no element's byte lies past it */
		char *buf;
		size_t len, cap;     /* buf holds the first len bytes */
		uint64_t used;       /* kept_tick at the last read: the least recent slot goes first */
	} kept[KEPT_DOCS];
	uint64_t kept_tick;
	int64_t kept_seen[KEPT_DOCS * 2]; /* docs read from their start once since: kept at the next such read */
	unsigned kept_seen_next;
	int64_t kept_forgets; /* meta forgets when changes.c last read it (-1: not yet): a move drops what is kept */
	/*
	 * The view parses a path at every request on it, and a path walk
	 * asks for one workspace and one task many times: kept here are the
	 * last workspace summed up (good while the generation stays), the path
	 * of the last workspace key looked up (good for ever: a workspace's row
	 * is never changed or removed) and the placement of the last task
	 * looked up (good while the placement generation stays). None is kept
	 * from inside a batch, which may yet roll back without a bump. A
	 * commit that changed one doc and moved no task carries the workspace
	 * forward (ws_carry()): the workspace's last activity is then the
	 * later of its own and the commit's.
	 */
	struct store_ws_cache {
		uint64_t generation;
		char *key, *path;
		int64_t ntasks, first_ns, last_ns;
	} ws_last;
	char *ws_path_key, *ws_path;
	struct store_task_cache {
		uint64_t placement;
		char *task_id, *key; /* key NULL: the task has no workspace */
		bool trashed;
		int r; /* 0, or -ENOENT: not a live task nor one in the trash */
	} task_last;
	/* The key of the elements' digests (digest128()), read from meta at the first commit that needs it. */
	struct digest_key digest_key;
	int digest_key_state; /* 0: not read yet; 1: read; -1: the store has none */
	/*
	 * The search index (store/index.c): whether the file has one, and
	 * the cursor of its build (-1: none under way), as this connection
	 * last wrote or read it.
	 */
	bool search;
	int search_load_err;     /* why the index's state could not be read at open (store_check_mount() says it) */
	int64_t search_cursor;
	/*
	 * The first row the transaction open now made current that the index
	 * is to take in when it ends (search_flush(); 0: none). One statement
	 * a transaction: FTS5 writes what it was given to its tables at every
	 * statement's savepoint, so a statement a row would make a segment a
	 * row.
	 */
	int64_t search_from;
	/* How many pieces of a large message's text its commit indexes (SEARCH_PIECES_NOW; the tests make it fewer). */
	size_t search_pieces_now;
	/* The current rows of the last large docs committed, newest first (store/array.c). */
	struct doc_rows *rows_kept[STORE_ROWS_KEPT];
	size_t rows_total; /* rows in them */
};

/*
 * A task may have moved: to or from the trash, to another workspace, or a
 * doc of it came or went. Noted as the change is made; the counter moves when
 * the transaction commits (tx_commit()), so that whoever sees it move and
 * looks again finds the new placement.
 */
static inline void placement_moved(struct store *st)
{
	st->placement_pending = true;
}

/*
 * The key of the elements' digests (elems.dg), read from meta once; NULL if
 * the store has none (then rows get none, and are compared by their bytes).
 * Called with the store's lock held (store/array.c).
 */
const struct digest_key *store_digest_key(struct store *st);

/* Frees the rows kept of the last docs committed (store/array.c). */
void store_rows_drop(struct store *st);

/* Called by tx_commit(), with the lock held, after a commit outside a batch (store/view.c). */
void ws_carry(struct store *st, uint64_t before, uint64_t after);

/* Closes the kept blob handle, if any. Called with the store's lock held. */
void store_blob_drop(struct store *st);

/*
 * Frees the renderings kept (read.c). Called, lock held, where rows change
 * in place or a revision's number may come again: a forget, a rollback.
 */
void kept_drop(struct store *st);

/*
 * Statements come from a cache (store.c): store_prepare() hands out a
 * prepared statement for that SQL text, store_stmt_release() gives it back
 * reset (or finalizes one that is not cached). Parsing SQL was a large part of
 * the cost of a getattr.
 */
void store_stmt_release(sqlite3_stmt *stmt);
/* Finalizes the cached statements of a connection (before closing it). */
void store_stmt_cache_drop(sqlite3 *db);

static inline void stmt_finalizep(sqlite3_stmt **p)
{
	store_stmt_release(*p);
}
#define _cleanup_stmt_ _cleanup_(stmt_finalizep)

/*
 * Takes st->lock, for the thread's own calls: while another thread's batch
 * is open, waits for its end, so that no change joins a batch it did not
 * begin (a batch that rolled back would take it along).
 */
void store_lock(struct store *st);

/* Lets go of a turn taken while waiting for SQLite's lock (changes.c). */
void store_turn_end(struct store *st);

/* Lets go of st->lock, and of the turn its holder took, if any. */
static inline void store_unlock(struct store *st)
{
	if (st->turn_held)
		store_turn_end(st);
	pthread_mutex_unlock(&st->lock);
}

static inline void store_unlockp(struct store **p)
{
	if (*p)
		store_unlock(*p);
}

/* A batch ended: waits (bounded) until the writers that waited for it have had their turn (changes.c). */
void store_turn_give(struct store *st);
/* Closes the files of store_turns(). */
void store_turns_end(struct store *st);

/* SQLite's busy handler of a writable store: waits up to STORE_BUSY_NS, taking a turn (changes.c). */
int store_busy_wait(void *ctx, int count);
#define STORE_BUSY_NS (5000LL * 1000000)

/*
 * Holds st->lock until the end of the enclosing scope. Declare it before any
 * _cleanup_stmt_ variable: cleanups run in reverse order, so statements are
 * finalized while the lock is still held (the connection is not thread-safe).
 */
#define STORE_LOCK(st) \
	_cleanup_(store_unlockp) __attribute__((unused)) struct store *store_locked_ = (store_lock(st), (st))

/* Prepares sql; on failure logs what failed and returns -errno. */
int store_prepare(struct store *st, const char *sql, sqlite3_stmt **ret);
/*
 * The integers of a statement's parameters ?1 .. ?n, written in place as
 * STORE_INTS(doc_id, rev): the array and its length, each value converted
 * to int64_t.
 */
#define STORE_INTS(...) \
	(const int64_t[]){ __VA_ARGS__ }, sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)
/* Likewise for text parameters: STORE_TEXTS(path, kind); a NULL text binds NULL. */
#define STORE_TEXTS(...) \
	(const char *const[]){ __VA_ARGS__ }, sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *)
/*
 * Prepares sql (store_prepare()) with ?1 .. ?nt bound to texts[0, nt)
 * (SQLITE_STATIC: they must outlive the statement's use) and the next ni
 * parameters to ints[0, ni); the caller binds any other parameter, steps
 * and releases *ret.
 */
int store_prepare_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		       size_t ni, sqlite3_stmt **ret);
/* store_prepare_args() of integers only: ?1 .. ?n bound to vals[0, n). */
int store_prepare_ints(struct store *st, const char *sql, const int64_t *vals, size_t n, sqlite3_stmt **ret);
/*
 * Runs sql, one statement without results, its parameters bound as
 * store_prepare_args() binds them. Returns the number of rows it changed,
 * or -errno, logged as "store: <what>: ..." (store_fail()).
 */
int store_run_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		   size_t ni, const char *what);
/*
 * Prepares sql as store_prepare_args() does and steps it once: 0 with *ret
 * on its first row (the caller reads it and releases *ret), -ENOENT if it
 * has none, or -errno, logged as "store: <what>: ...".
 */
int store_row_args(struct store *st, const char *sql, const char *const *texts, size_t nt, const int64_t *ints,
		   size_t ni, const char *what, sqlite3_stmt **ret);
/* A copy of column col's bytes, NUL-terminated (free()), and their length. */
int dup_bytes(sqlite3_stmt *stmt, int col, char **ret, size_t *ret_len);
/* store_run_args() of integers only; 0 or -errno. */
int store_run(struct store *st, const char *sql, const int64_t *vals, size_t n, const char *what);
/* Runs a statement without results; logs and returns -errno on failure. */
int store_exec(struct store *st, const char *sql);
/*
 * True, with one log line, if a transaction of ours was open and SQLite has
 * rolled it back after an error: what the caller would run now would be
 * committed on its own. Store lock held.
 */
bool store_tx_lost(struct store *st);
/*
 * A transaction that changes no doc (a step of the search index's build,
 * what a sync's push records): the store's generation does not move, so
 * the view keeps what it holds. store_tx_aside_end() commits if r is 0,
 * else rolls back, and returns r or why the commit failed. Store lock held
 * across both; not inside a batch.
 */
int store_tx_aside_begin(struct store *st);
int store_tx_aside_end(struct store *st, int r);
/* Logs an SQLite failure with context and returns its errno. */
int store_fail(struct store *st, int rc, const char *what);

/*
 * The one rule for which revisions of a doc are saved versions, shared by a
 * task's versions/ (store_versions()) and a file's log and restore
 * (store_history.h): every kind but a removal ('unlink', 'rename-out') and
 * the empty file an open(O_CREAT), or a task's mkdir, makes before the first
 * save ('create'). A fragment to follow "kind NOT IN".
 */
#define STORE_NOT_A_VERSION "('unlink', 'rename-out', 'create')"

/*
 * The one numbering of versions, shared by versions/ (store_versions()) and
 * a file's log and restore (history.c): the versions of a set of docs (a
 * task's files; the caller says which), numbered from 1 in the order of the
 * revision log. A table for a WITH clause, "numbered": n and the columns of
 * revisions, of the docs at the paths bound to ?1 .. ?STORE_VERSION_DOCS_MAX
 * (store_bind_version_docs()); an unbound parameter is NULL and matches no
 * path. The docs by their unique path, their revisions by index
 * revisions_doc (doc_id, id): one indexed range a doc, then one sort.
 */
#define STORE_NUMBERED_VERSIONS \
	"numbered AS (SELECT row_number() OVER (ORDER BY r.id) AS n, r.* FROM revisions r " \
	"  WHERE r.doc_id IN (SELECT id FROM docs WHERE path IN (?1, ?2, ?3, ?4)) " \
	"  AND r.kind NOT IN " STORE_NOT_A_VERSION ")"

/*
 * Binds paths[0..npaths) to the parameters of STORE_NUMBERED_VERSIONS
 * (SQLITE_STATIC: they must outlive the statement's run); -EINVAL for more
 * than STORE_VERSION_DOCS_MAX of them.
 */
int store_bind_version_docs(sqlite3_stmt *stmt, const char *const *paths, size_t npaths);

/*
 * Records that revision rev changed doc doc_id (present or removed; nelems
 * its elements then, -1: not known), if the store syncs (st->sync_track).
 * In the caller's transaction (sync_local.c).
 */
int sync_touch(struct store *st, int64_t rev, int64_t doc_id, bool present, int64_t nelems);
/* Whether the store syncs: st->sync_track from meta, at open (sync_local.c). */
int sync_track_load(struct store *st);

/*
 * Overwrites every occurrence of text (NULL: none) in buf[0, len) with '*':
 * same length, and a JSON string stays one (forget.c). Whether any was.
 */
bool forget_mask(char *buf, size_t len, const char *text);

/* Schema creation and migration (schema.c). */
int store_migrate(struct store *st);

#endif
