/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SYNC_H
#define CONVFS_SYNC_H

/*
 * One history across machines: each mount keeps its own store, pushes the
 * commits it makes to a log in PostgreSQL, and takes in the commits other
 * machines pushed there, merged as another writer's save is (docs/SYNC.md).
 * Saves never wait for the network: the sync runs on a thread of its own,
 * with a connection of its own to the store.
 *
 * Same conventions as store.h. Nothing here knows FUSE: the caller is told
 * which docs a pulled commit changed, from the sync's thread.
 */

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_ops.h"

struct store_sync;

struct store_sync_config {
	const char *store_path;
	const char *conninfo;     /* what PQconnectdb() takes: key=value pairs, a URI, a service */
	const unsigned char *key; /* STORE_SYNC_KEY_SIZE bytes (-o sync_key): entries sealed; NULL: not */
	/*
	 * Called on the sync's thread, no lock of the store held, after a
	 * pulled commit is stored: for each doc it changed (path), and once
	 * after a forget was applied (path NULL: anything kept may hold what
	 * went).
	 */
	void (*changed)(void *ctx, const char *path);
	/*
	 * Called on the sync's thread before a pulled commit that makes or
	 * changes the doc at path is stored (may be NULL): what must be there
	 * once it is (the doc's folder in the backing tree).
	 */
	void (*prepare)(void *ctx, const char *path);
	void *ctx;
	/*
	 * The connection that serves the mount's requests (may be NULL): what
	 * a push leaves in the store (which entries are this store's
	 * revisions) is committed through it, unless it is read-only.
	 * SQLite drops a connection's whole page cache when another
	 * connection of the file commits: through the sync's own, every push
	 * would make the next request read its pages again.
	 */
	struct store *served;
};

#define STORE_SYNC_KEY_SIZE 32

/*
 * Makes st a store that syncs: it gets its id in the log (its machine),
 * and from now on records which docs each commit changes (what it had
 * before is recorded now, once; a large store takes a while, and says
 * so). Nothing if it syncs already. 0 or -errno.
 */
int store_sync_enable(struct store *st);

/*
 * Reads a key file: 32 bytes, or 64 hex digits (a newline after them
 * allowed). Refuses a file others may read or write. 0 or -errno, logged.
 */
int store_sync_key_load(const char *path, unsigned char key[STORE_SYNC_KEY_SIZE]);

/*
 * 0 if conninfo (a libpq connection string or URI) holds no password;
 * -EINVAL, logged, if it does: a command line is seen by every user
 * (ps); the password goes in ~/.pgpass, PGPASSFILE or a service file.
 */
int store_sync_conninfo_check(const char *conninfo);

/*
 * Starts the sync of cfg's store on a thread of its own (cfg and what it
 * points to must outlive it). A PostgreSQL that cannot be reached is
 * tried again every few seconds; the store works as usual meanwhile.
 */
int store_sync_start(const struct store_sync_config *cfg, struct store_sync **ret);
/* Pushes what waits (a few seconds at most), stops the thread, frees s. NULL: nothing. */
void store_sync_stop(struct store_sync *s);

/*
 * Takes in every commit the log has that the store has not, on this thread,
 * with progress (may be NULL); what this store has to push stays for the
 * thread. For a mount of a store that never synced, before it is mounted.
 * -ENOTCONN (logged) if PostgreSQL cannot be reached.
 */
int store_sync_catch_up(const struct store_sync_config *cfg, store_progress_fn progress, void *ctx);

/*
 * After store_forget_run() of f on cfg's store, which no daemon serves
 * (`convfs forget`): pushes its commits (the forget's own among them),
 * writes every entry of the log that holds what f forgets again without
 * it, and pushes a forget that each other machine applies to its own store
 * when it pulls it. progress (may be NULL) gets the entries looked at.
 * 0, or -errno (logged; -ENOTCONN: PostgreSQL cannot be reached).
 */
int store_sync_forget(const struct store_sync_config *cfg, const struct store_forget *f, store_progress_fn progress,
		      void *ctx);

/* What `convfs status` shows of the sync. */
struct store_sync_status {
	bool enabled;          /* the store syncs (store_sync_enable()) */
	char *machine, *name;  /* its id in the log, and the machine's name */
	bool connected;        /* as the daemon last said */
	int64_t since_ns;      /* connected or not since then; 0: never said */
	int64_t last_push_ns, last_pull_ns; /* 0: none yet */
	int64_t pulled, head;  /* entries here, and in the log as last seen */
	int64_t waiting;       /* local commits not pushed yet */
	char *error;           /* why not connected, if known */
};
int store_sync_status_get(struct store *st, struct store_sync_status *ret);
void store_sync_status_release(struct store_sync_status *s);

#endif
