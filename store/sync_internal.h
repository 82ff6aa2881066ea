/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SYNC_INTERNAL_H
#define CONVFS_SYNC_INTERNAL_H

/*
 * What the files of the sync share (docs/SYNC.md has the design):
 *
 *   sync_local.c   this store's side: which local revisions are still to
 *                  push, each made an entry (sync_wire.h) against the log's
 *                  last entry of each doc; what was pushed and pulled,
 *                  recorded in the store;
 *   sync_apply.c   a pulled entry applied to the store, as written, and a
 *                  doc changed here meanwhile merged on top again;
 *   sync_pg.c      the log in PostgreSQL (struct sync_log's functions);
 *   sync_crypt.c   the key and what it seals;
 *   sync.c         the rounds (pull, then push) and the thread that runs them.
 *
 * The log is reached only through struct sync_log, so that the unit tests
 * run the whole sync against a log in memory.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_internal.h"
#include "store/store_ops.h"
#include "store/sync.h"
#include "store/sync_wire.h"

/* ---- entries on their way ------------------------------------------------------ */

/* One entry to push: a local revision (or a restatement of one) and its bytes. */
struct sync_out {
	int64_t rev;           /* its local revision; negative: the content of revision -rev restated */
	char *task;            /* the task its revision names (the log's task column), or NULL */
	struct sync_bytes payload;
	int64_t *docs;         /* the docs it changes (their ids): they are at this entry once pushed */
	size_t ndocs;
	bool forget;           /* a forget (sync_forget.c): found by the log until every machine has it */
};

/* A round's entries to push: the local revisions up to `upto` are all in them (or need none). */
struct sync_outbox {
	struct sync_out *v;
	size_t n, alloc;
	int64_t upto;
	size_t bytes;
	bool complete; /* every revision waiting is in (upto is the last revision) */
};
void sync_outbox_release(struct sync_outbox *o);

/* One entry pulled from the log. */
struct sync_in {
	int64_t seq;
	char machine[40];
	int64_t rev;
	struct sync_bytes payload;
};
void sync_in_release(struct sync_in *in);

/* ---- the log ---------------------------------------------------------------------- */

/*
 * The shared log: PostgreSQL (sync_pg.c), or a log in memory (the unit
 * tests). Each function returns 0 or -errno; a failure of the connection
 * is -ENOTCONN (the round ends and the connection is made again), one the
 * log refuses for good is -EPROTO (logged).
 */
struct sync_log_ops {
	/* Connects (or checks the connection): *ret_head, the last entry's sequence number. */
	int (*connect)(void *log, int64_t *ret_head);
	void (*disconnect)(void *log);
	/*
	 * Appends out's entries after head, numbered head + 1, head + 2, ...:
	 * -EAGAIN, with nothing appended, if the log's last entry is not head
	 * any more (another machine pushed: pull first).
	 */
	int (*push)(void *log, int64_t head, const struct sync_out *out, size_t n);
	/*
	 * Entries after `after`, in order: at most max of them, and fewer
	 * once max_bytes are read (at least one). *ret_n 0: none.
	 */
	int (*fetch)(void *log, int64_t after, size_t max, size_t max_bytes, struct sync_in **ret, size_t *ret_n);
	/* Waits up to ms for another machine's push (1), or returns 0; wake_fd readable also ends it (0). */
	int (*wait)(void *log, int ms, int wake_fd);
	/* This machine has every entry up to pulled (for the log's list of machines). */
	int (*seen)(void *log, int64_t pulled);
	/* The log's own id (made with it), once connected: a store follows one log. */
	const char *(*id)(void *log);
};

/*
 * One round on store st (a connection of the caller's) against log: pulls,
 * then pushes unless !push_too (sync.c); what a push records goes through
 * served if it is not NULL (struct store_sync_config's). For the unit
 * tests, whose log is in memory. 0 or -errno.
 */
int sync_round_once(struct store *st, struct store *served, const char *dir, const struct sync_log_ops *ops, void *log,
		    bool push_too, void (*changed)(void *ctx, const char *path), void *ctx);

/* ---- this store's side (sync_local.c) ------------------------------------------------ */

/* What this store knows of the log, from its meta table. */
struct sync_local {
	char machine[40]; /* this store's id in the log (a UUID) */
	char *name;       /* the machine's name, for people */
	int64_t pulled;   /* every entry up to this sequence number is here */
	int64_t pushed;   /* every local revision up to this one was pushed, or needs no push */
};
int sync_local_load(struct store *st, struct sync_local *ret);
void sync_local_release(struct sync_local *l);

/*
 * The entries for the local revisions waiting to be pushed, the log's last
 * entry being head: at most max_entries, and no more once max_bytes are
 * made (a revision's entry is never split). Read in one snapshot of st.
 */
int sync_outbox_make(struct store *st, const char *dir, int64_t head, size_t max_entries, size_t max_bytes,
		     struct sync_outbox *ret);
/*
 * Records that o's entries are the log's head + 1 ... head + n: through
 * served if it is not NULL and not read-only, else through st (sync.h,
 * struct store_sync_config's served). 0 or -errno.
 */
int sync_outbox_done(struct store *st, struct store *served, const struct sync_outbox *o, int64_t head);
/* How many local revisions wait to be pushed, and when the oldest was made (may be NULL; 0: none). */
int sync_waiting(struct store *st, int64_t *ret, int64_t *ret_oldest_ns);
/*
 * The store follows the log log_id: if it followed another (its database
 * was changed for a new one), what it knew of that one is let go: it
 * pushes all of its history to this one and takes in what this one has.
 * 1 if it was reset, 0 if it follows that log already, or -errno.
 */
int sync_local_follow(struct store *st, const char *log_id);
/* Sets (value NULL: removes) a key of the sync's state in meta, in its own transaction. */
int sync_state_set(struct store *st, const char *key, const char *value);

/* ---- applying (sync_apply.c) --------------------------------------------------------- */

/* What a batch of pulled entries changed, for the caller to tell (docs by path). */
struct sync_changed {
	char **paths;
	size_t n, alloc;
	bool forgot; /* a forget was applied: anything cached may hold what went */
	/* Told at once, before a forget is applied (path NULL): readers of the store let go first. May be NULL. */
	void (*tell)(void *ctx, const char *path);
	/* Told before an effect makes or changes the doc at path (store_sync_config.prepare). May be NULL. */
	void (*prepare)(void *ctx, const char *path);
	void *ctx;
};
void sync_changed_release(struct sync_changed *c);

/*
 * Applies entries in[0..n) (the log's, in order, following what this store
 * has) in one transaction of st, with the bookkeeping: a commit is applied
 * once. Entries of this machine are only recorded. What changed goes onto
 * *changed. 0, -EPROTO if an entry does not follow what this store has
 * (logged: the sync stops), or -errno.
 */
int sync_apply(struct store *st, const char *machine, const struct sync_in *in, size_t n,
	       struct sync_changed *changed);

/* ---- forgetting (sync_forget.c) ----------------------------------------------------- */

/*
 * Entry p written again into out without what f forgets (*ret_changed:
 * whether anything was): a forgotten message blanked at its length, a
 * whole file's version masked (or made a removal), a forgotten task's
 * files dropped.
 */
int sync_forget_entry(const struct store_forget *f, const struct sync_bytes *p, struct sync_bytes *out,
		      bool *ret_changed);
/* A forget's entry p written again into out without its text: every machine has applied it. */
int sync_forget_record_erase(const struct sync_bytes *p, struct sync_bytes *out);
/* A forget pulled from another machine (entry en, pulled as in): forgotten here too, and recorded. */
int sync_forget_apply(struct store *st, const struct sync_in *in, const struct sync_entry *en);

/* ---- the key (sync_crypt.c) -------------------------------------------------------- */

#define SYNC_KEY_SIZE 32

/*
 * Seals n bytes of p into out (n + SYNC_SEAL_EXTRA bytes), bound to ad
 * (what names the bytes: machine, revision, part), with a fresh nonce.
 */
#define SYNC_SEAL_EXTRA (24 + 16)
int sync_seal(const unsigned char *key, const void *p, size_t n, const void *ad, size_t ad_len, unsigned char *out);
/* Opens what sync_seal() made (n bytes) into out (n - SYNC_SEAL_EXTRA): -EBADMSG if it does not open. */
int sync_open(const unsigned char *key, const unsigned char *p, size_t n, const void *ad, size_t ad_len, void *out);
/* A tag of text under key (hex, 32 characters) into out: the log's task column with a key. */
void sync_tag(const unsigned char *key, const char *text, char out[33]);

#endif
