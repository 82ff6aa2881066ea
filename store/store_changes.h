/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_CHANGES_H
#define CONVFS_STORE_CHANGES_H

/*
 * What other connections committed to the store (changes.c): the commits
 * of other daemons serving the same store, and of the sync's own
 * connection. Same conventions as store.h.
 *
 * A reader keeps a mark in the log: the last revision and the last plain
 * change it has seen. store_changed_elsewhere() says, without reading the
 * log, whether another connection committed since its last call;
 * store_changes_since() then reads what changed past the mark: the paths
 * of the docs committed (a revision each) and of the plain files another
 * daemon changed while this one served the store too (store_plain_changed()),
 * and whether a forget blanked rows in place, which no revision says.
 */

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

struct store_mark {
	int64_t rev;     /* the last revision seen */
	int64_t plain;   /* the last plain change seen */
	int64_t forgets; /* the count of forgets seen */
};

/* The end of the log now: a mark past every change so far. */
int store_mark_end(struct store *st, struct store_mark *ret);

/*
 * 1 if another connection committed since the last call (SQLite's
 * PRAGMA data_version; the first call says 0), 0 if not, or -errno. It lets
 * go of what holds this connection's snapshot (the blob kept open for
 * reads), which would hide commits made meanwhile.
 */
int store_changed_elsewhere(struct store *st);

/*
 * Lets go of what holds this connection's snapshot (the blob kept open for
 * reads), without asking whether others committed: for a change the log
 * does not show (a forget another connection applied), so that the next
 * read sees it. store_changed_elsewhere() still says what it would have.
 */
void store_read_anew(struct store *st);

/*
 * A forget another connection applied (the sync's, pulled from another
 * machine): store_read_anew(), and what this connection keeps of docs'
 * bytes for their readers goes too, since it may hold what the forget
 * blanked. (store_changes_since() drops it as well once it sees the count
 * of forgets move; this is for a caller that cannot wait for that.)
 */
void store_forgot_elsewhere(struct store *st);

enum store_change_kind {
	STORE_CHANGE_DOC,   /* a doc committed: its path */
	STORE_CHANGE_PLAIN, /* a plain file, folder or link of the backing tree changed: its path */
	/*
	 * One forget or more (a daemon's sync applied one pulled from another
	 * machine) blanked rows of any doc and version in place, path "":
	 * whatever keeps their bytes (a kernel's pages of versions) must drop
	 * them.
	 */
	STORE_CHANGE_FORGET,
	/*
	 * Changes of plain files went by unread, path "": they were pruned
	 * (store_plain_changed()) before this reader came to them (its
	 * daemon stopped for a minute: a container paused). Which files
	 * changed is not known: whatever is kept of any must go.
	 */
	STORE_CHANGE_LOST,
};

/*
 * Calls fn with each change past *mark, in the log's order (a path may come
 * more than once), and moves *mark past them. If there were any, the
 * store's generations move on too, as after a commit of this connection's:
 * what callers keep by them (the view's lists) is asked for again. Returns
 * the number of changes, or -errno; fn's negative result stops it.
 */
typedef int (*store_change_fn)(void *ctx, enum store_change_kind kind, const char *path);
int store_changes_since(struct store *st, struct store_mark *mark, store_change_fn fn, void *ctx);

/*
 * Records that the plain path (of the backing tree) changed through this
 * daemon, for the other daemons serving the store: call it only while there
 * are others (it costs a write). Old rows go as new ones come.
 */
int store_plain_changed(struct store *st, const char *path);

/*
 * Whether other daemons serve the store too: then the store's own
 * transactions are kept short for them (the take-in's batches end within
 * STORE_BATCH_NS of their start, store_batch_due()), and closing it does
 * not wait for their readers to fold its WAL back.
 */
void store_set_shared(struct store *st, bool shared);
bool store_is_shared(const struct store *st);
#define STORE_BATCH_NS (100LL * 1000000)
/*
 * True if the batch open now has run past STORE_BATCH_NS while others share
 * the store, or while a writer of another daemon waits for it: end it.
 */
bool store_batch_due(struct store *st);

/*
 * Writers of the daemons of one store take turns through the folder dir
 * (where they register). SQLite's lock is no queue: a writer that waits
 * for it looks again now and then, and a batch that ends and begins again
 * at once would take it back every time: a save through another mount
 * would wait out its 5 s behind a take-in, and fail. So a writer that
 * waits says so (a shared flock() of dir, held until it is done), and a
 * batch that ends waits until no one says so, up to STORE_TURN_NS, before
 * it goes on; a batch that is due (store_batch_due()) ends when someone
 * waits. Without turns (dir cannot be opened, or is a symlink: -errno) a writer waits as
 * before, and may wait in vain.
 */
int store_turns(struct store *st, const char *dir);
#define STORE_TURN_NS (2000LL * 1000000)

#endif
