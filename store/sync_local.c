/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_local.c: what a store that syncs keeps of the shared log
 * (docs/SYNC.md, docs/SCHEMA.md, schema 14).
 *
 *   meta sync_machine    the store's id in the log (a random UUID); its
 *                        presence is what makes the store sync
 *   meta sync_name       the machine's name, for people (its host name)
 *   meta sync_pulled     every log entry up to this sequence number is here
 *   meta sync_pushed     every local revision up to this one was pushed
 *                        (or needs no push: one that applied a pulled entry)
 *   meta sync_state_*    what the daemon last said (connected, times), for
 *                        `convfs status`
 *   sync_touch           the docs each revision changed: written by
 *                        doc_update() and doc_set_present() in the commit's
 *                        own transaction once the store syncs; what was
 *                        committed before that is recorded when the store
 *                        first syncs (store_sync_enable())
 *   sync_docs            each doc's last log entry, and the local revision
 *                        holding exactly its content (the base a pulled
 *                        commit builds on, and what a doc changed here since
 *                        is merged against)
 *   sync_seen            every log entry this store has, once
 *   sync_applied         the local revisions that applied a pulled entry
 *
 * A revision waits to be pushed while it is above sync_pushed and not in
 * sync_applied; so a commit of a request and one of the sync, made on two
 * connections, are told apart by the rows the sync wrote in the same
 * transaction as its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/doc_internal.h"
#include "store/sync_internal.h"
#include "store/util.h"

int sync_touch(struct store *st, int64_t rev, int64_t doc_id, bool present, int64_t nelems)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r, rc;

	if (!st->sync_track)
		return 0;
	r = store_prepare_ints(st, "INSERT OR REPLACE INTO sync_touch(rev, doc_id, present, nelems) VALUES (?1, ?2, ?3, ?4)",
			       STORE_INTS(rev, doc_id, present), &stmt);
	if (r < 0)
		return r;
	if (nelems >= 0)
		sqlite3_bind_int64(stmt, 4, nelems);
	rc = sqlite3_step(stmt);
	return rc == SQLITE_DONE ? 0 : store_fail(st, rc, "cannot record which doc a commit changed");
}

int sync_track_load(struct store *st)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT 1 FROM meta WHERE key = 'sync_machine'", NULL, 0, NULL, 0,
			       "cannot read whether the store syncs", &stmt);

	if (r < 0 && r != -ENOENT)
		return r;
	st->sync_track = r == 0;
	return 0;
}

/* A random UUID (version 4) into out. */
static int uuid_make(char out[37])
{
	unsigned char u[16];
	ssize_t n;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, u, sizeof(u));
	close(fd);
	if (n != (ssize_t)sizeof(u))
		return -EIO;
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
		 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return 0;
}

/*
 * The rows each revision added, which is what a push reads of a doc
 * (sync_outbox.c). rev_from leads: an index that led with doc_id would
 * offer its range on rev_from to every statement that reads a version
 * (rev_from <= R), and SQLite, without statistics, would take it over
 * elems_cur and elems_off and read every row of the doc (schema.c, 15 ->
 * 16).
 */
static const char added_index_sql[] = "CREATE INDEX IF NOT EXISTS elems_added ON elems(rev_from, doc_id)";

/*
 * What the store committed before it synced, recorded as if it had synced
 * all along: a revision of one doc changed that doc (a removal removed
 * it); a task's trip to the trash and back changed each of its docs and the
 * history. Which elements of a doc each changed is in elems itself
 * (rev_from), found through index elems_added, made here too.
 */
static const char *const enable_sql[] = {
	added_index_sql,
	"INSERT OR IGNORE INTO sync_touch(rev, doc_id, present, nelems) "
	"  SELECT r.id, r.doc_id, r.kind NOT IN ('unlink', 'rename-out'), NULL FROM revisions r "
	"  WHERE r.doc_id > 0 AND r.id <= ?1 AND EXISTS (SELECT 1 FROM docs d WHERE d.id = r.doc_id)",
	"INSERT OR IGNORE INTO sync_touch(rev, doc_id, present, nelems) "
	"  SELECT r.id, d.id, r.kind = 'restore', NULL FROM revisions r JOIN docs d "
	"    ON d.task_id = substr(r.path, instr(r.path, '/') + 1) "
	"  WHERE r.doc_id = 0 AND r.kind IN ('trash', 'restore') AND r.id <= ?1",
	"INSERT OR IGNORE INTO sync_touch(rev, doc_id, present, nelems) "
	"  SELECT r.id, d.id, 1, NULL FROM revisions r JOIN docs d ON d.path = 'state/taskHistory.json' "
	"  WHERE r.doc_id = 0 AND r.kind IN ('trash', 'restore') AND r.id <= ?1",
};

static int enable_locked(struct store *st, int64_t *ret_revs)
{
	_cleanup_stmt_ sqlite3_stmt *max = NULL;
	char machine[37], host[256] = "";
	int64_t upto;
	int r, rc;

	if ((r = uuid_make(machine)) < 0)
		return r;
	if (gethostname(host, sizeof(host) - 1) < 0 || !*host)
		snprintf(host, sizeof(host), "%s", "unknown");
	if ((r = tx_begin(st)) < 0)
		return r;
	r = store_row_args(st, "SELECT coalesce(max(id), 0) FROM revisions", NULL, 0, NULL, 0,
			   "cannot read the revision log", &max);
	if (r < 0)
		goto rollback;
	upto = sqlite3_column_int64(max, 0);
	store_stmt_release(TAKE_PTR(max));
	for (size_t i = 0; i < ARRAY_SIZE(enable_sql); i++) {
		_cleanup_stmt_ sqlite3_stmt *stmt = NULL;

		if ((r = store_prepare_ints(st, enable_sql[i], STORE_INTS(upto), &stmt)) < 0)
			goto rollback;
		if ((rc = sqlite3_step(stmt)) != SQLITE_DONE) {
			r = store_fail(st, rc, "cannot record which docs the commits so far changed");
			goto rollback;
		}
	}
	r = store_run_args(st, "INSERT INTO meta(key, value) VALUES ('sync_machine', ?1), ('sync_name', ?2), "
			       "('sync_pulled', '0'), ('sync_pushed', '0')",
			   STORE_TEXTS(machine, host), NULL, 0, "cannot make the store one that syncs");
	if (r < 0 || (r = tx_commit(st)) < 0)
		goto rollback;
	st->sync_track = true;
	*ret_revs = upto;
	return 0;
rollback:
	tx_rollback(st);
	return r;
}

/*
 * A store that synced before schema 16 lost its index of the rows each
 * revision added (schema.c): made again, once, at its first mount that
 * syncs. Store lock held.
 */
static int added_index(struct store *st)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'elems_added'", NULL,
			       0, NULL, 0, "cannot look for the sync's index", &stmt);

	if (r != -ENOENT)
		return r;
	log_info("sync: indexing the rows each commit added (once)");
	return store_run(st, added_index_sql, NULL, 0, "cannot index the rows each commit added");
}

int store_sync_enable(struct store *st)
{
	STORE_LOCK(st);
	int64_t revs = 0;
	int r;

	if (st->readonly) {
		log_err("sync: the store is read-only: it cannot take in other machines' commits");
		return -EROFS;
	}
	if ((r = sync_track_load(st)) < 0)
		return r;
	if (st->sync_track)
		return added_index(st);
	log_info("sync: making the store one that syncs: recording which files each commit so far changed");
	if ((r = enable_locked(st, &revs)) < 0) {
		log_err("sync: cannot make the store one that syncs: %s", strerror(-r));
		return r;
	}
	log_info("sync: the store syncs from now on (%" PRId64 " revisions so far, to push)", revs);
	return 0;
}

/* ---- the state kept in meta ----------------------------------------------------------- */

/* The integer value of meta key (0 if unset). Store lock held. */
static int meta_int(struct store *st, const char *key, int64_t *ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1", STORE_TEXTS(key), NULL, 0,
			       "cannot read the sync's state", &stmt);

	if (r == -ENOENT) {
		*ret = 0;
		return 0;
	}
	if (r == 0)
		*ret = sqlite3_column_int64(stmt, 0);
	return r;
}

static int meta_text(struct store *st, const char *key, char **ret)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r = store_row_args(st, "SELECT value FROM meta WHERE key = ?1", STORE_TEXTS(key), NULL, 0,
			       "cannot read the sync's state", &stmt);

	if (r < 0)
		return r;
	*ret = dup_text(stmt, 0);
	return *ret ? 0 : -ENOMEM;
}

/* Sets meta key to the integer v. Store lock held, in the caller's transaction. */
static int meta_set_int(struct store *st, const char *key, int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return store_run_args(st, "INSERT INTO meta(key, value) VALUES (?1, ?2) "
				  "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
			      STORE_TEXTS(key, text), NULL, 0, "cannot write the sync's state") < 0 ? -EIO : 0;
}

int sync_local_load(struct store *st, struct sync_local *ret)
{
	STORE_LOCK(st);
	_cleanup_free_ char *machine = NULL;
	struct sync_local l = { 0 };
	int r;

	if ((r = meta_text(st, "sync_machine", &machine)) < 0)
		return r == -ENOENT ? -ENOTSUP : r;
	if (strlen(machine) != 36)
		return -EPROTO;
	memcpy(l.machine, machine, 37);
	if (meta_text(st, "sync_name", &l.name) < 0 && !(l.name = strdup("unknown")))
		return -ENOMEM;
	if ((r = meta_int(st, "sync_pulled", &l.pulled)) < 0 || (r = meta_int(st, "sync_pushed", &l.pushed)) < 0) {
		free(l.name);
		return r;
	}
	*ret = l;
	return 0;
}

void sync_local_release(struct sync_local *l)
{
	free(l->name);
	l->name = NULL;
}

int sync_local_follow(struct store *st, const char *log_id)
{
	STORE_LOCK(st);
	_cleanup_free_ char *was = NULL;
	static const char *const reset_sql[] = {
		"DELETE FROM sync_docs", "DELETE FROM sync_seen", "DELETE FROM sync_applied",
		"UPDATE meta SET value = '0' WHERE key IN ('sync_pulled', 'sync_pushed')",
		"DELETE FROM meta WHERE key IN ('sync_state_last_push_ns', 'sync_state_last_pull_ns', 'sync_state_head')",
	};
	int r = meta_text(st, "sync_log", &was);

	if (r < 0 && r != -ENOENT)
		return r;
	if (was && strcmp(was, log_id) == 0)
		return 0;
	if ((r = tx_begin(st)) < 0)
		return r;
	for (size_t i = 0; was && r == 0 && i < ARRAY_SIZE(reset_sql); i++)
		r = store_exec(st, reset_sql[i]);
	if (r == 0)
		r = store_run_args(st, "INSERT INTO meta(key, value) VALUES ('sync_log', ?1) "
				       "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
				   STORE_TEXTS(log_id), NULL, 0, "cannot write the sync's state") < 0 ? -EIO : 0;
	if (r == 0 && (r = tx_commit(st)) == 0) {
		if (was)
			log_info("sync: this store followed another log (%s); it follows log %s from now on: it pushes "
				 "its history there and takes in what that log has", was, log_id);
		return was ? 1 : 0;
	}
	tx_rollback(st);
	return r;
}

int sync_state_set(struct store *st, const char *key, const char *value)
{
	STORE_LOCK(st);
	int r;

	if (value)
		r = store_run_args(st, "INSERT INTO meta(key, value) VALUES (?1, ?2) "
				       "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
				   STORE_TEXTS(key, value), NULL, 0, "cannot write the sync's state");
	else
		r = store_run_args(st, "DELETE FROM meta WHERE key = ?1", STORE_TEXTS(key), NULL, 0,
				   "cannot write the sync's state");
	return r < 0 ? r : 0;
}

/* The local revisions waiting: above sync_pushed, changing a doc, not applying a pulled entry. */
#define WAITING_SQL                                                                                              \
	"SELECT count(DISTINCT t.rev) FROM sync_touch t WHERE t.rev > ?1 "                                        \
	"AND NOT EXISTS (SELECT 1 FROM sync_applied a WHERE a.rev = t.rev)"

int sync_waiting(struct store *st, int64_t *ret, int64_t *ret_oldest_ns)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL, *oldest = NULL;
	int64_t pushed;
	int r = meta_int(st, "sync_pushed", &pushed);

	if (r < 0)
		return r;
	r = store_row_args(st, WAITING_SQL, NULL, 0, STORE_INTS(pushed), "cannot count the commits to push", &stmt);
	if (r < 0)
		return r;
	*ret = sqlite3_column_int64(stmt, 0);
	if (!ret_oldest_ns)
		return 0;
	r = store_row_args(st, "SELECT coalesce(min(time_ns), 0) FROM revisions WHERE id = (SELECT min(t.rev) FROM "
			       "sync_touch t WHERE t.rev > ?1 AND NOT EXISTS (SELECT 1 FROM sync_applied a WHERE a.rev = t.rev))",
			   NULL, 0, STORE_INTS(pushed), "cannot count the commits to push", &oldest);
	if (r == 0)
		*ret_oldest_ns = sqlite3_column_int64(oldest, 0);
	return r;
}

/* ---- after a push ---------------------------------------------------------------------- */

void sync_outbox_release(struct sync_outbox *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].task);
		free(o->v[i].docs);
		sync_bytes_release(&o->v[i].payload);
	}
	free(o->v);
	*o = (struct sync_outbox){ 0 };
}

/* Each doc of o->v[i] is at entry seq, with the content of local revision rev. */
static int outbox_entry_done(struct store *st, const struct sync_out *out, int64_t seq)
{
	int64_t rev = out->rev < 0 ? -out->rev : out->rev;
	int r;

	r = store_run(st, "INSERT OR REPLACE INTO sync_seen(seq, rev, mine) VALUES (?1, ?2, 1)", STORE_INTS(seq, rev),
		      "cannot record a pushed commit");
	for (size_t j = 0; r == 0 && j < out->ndocs; j++)
		r = store_run(st, "INSERT INTO sync_docs(doc_id, seq, rev) VALUES (?1, ?2, ?3) "
				  "ON CONFLICT(doc_id) DO UPDATE SET seq = excluded.seq, rev = excluded.rev",
			      STORE_INTS(out->docs[j], seq, rev), "cannot record a pushed commit");
	return r;
}

/* What a push leaves in the store, in the transaction open on st. */
static int outbox_record(struct store *st, const struct sync_outbox *o, int64_t head)
{
	int64_t pushed;
	int r = 0;

	for (size_t i = 0; r == 0 && i < o->n; i++)
		r = outbox_entry_done(st, &o->v[i], head + 1 + (int64_t)i);
	if (r == 0)
		r = meta_int(st, "sync_pushed", &pushed);
	if (r == 0 && o->upto > pushed)
		r = meta_set_int(st, "sync_pushed", o->upto);
	if (r == 0)
		r = meta_set_int(st, "sync_pulled", head + (int64_t)o->n);
	if (r == 0 && o->n > 0)
		r = meta_set_int(st, "sync_state_last_push_ns", now_ns());
	/* The log's head for convfs status, in the same commit (the round writes nothing more). */
	if (r == 0 && o->n > 0)
		r = meta_set_int(st, "sync_state_head", head + (int64_t)o->n);
	return r;
}

int sync_outbox_done(struct store *st, struct store *served, const struct sync_outbox *o, int64_t head)
{
	/* A push changes no doc: a transaction aside, on served unless it cannot write. */
	struct store *via = served && !served->readonly ? served : st;
	STORE_LOCK(via);
	int r = store_tx_aside_begin(via);

	return r < 0 ? r : store_tx_aside_end(via, outbox_record(via, o, head));
}

/* ---- status ------------------------------------------------------------------------------- */

int store_sync_status_get(struct store *st, struct store_sync_status *ret)
{
	struct store_sync_status s = { 0 };
	int64_t connected = 0;
	int r;

	{
		STORE_LOCK(st);
		r = meta_text(st, "sync_machine", &s.machine);
		if (r == -ENOENT) {
			*ret = s;
			return 0;
		}
		if (r < 0)
			return r;
		s.enabled = true;
		if ((r = meta_text(st, "sync_name", &s.name)) < 0 && r != -ENOENT)
			goto fail;
		if ((r = meta_text(st, "sync_state_error", &s.error)) < 0 && r != -ENOENT)
			goto fail;
		if ((r = meta_int(st, "sync_state_connected", &connected)) < 0 ||
		    (r = meta_int(st, "sync_state_since_ns", &s.since_ns)) < 0 ||
		    (r = meta_int(st, "sync_state_last_push_ns", &s.last_push_ns)) < 0 ||
		    (r = meta_int(st, "sync_state_last_pull_ns", &s.last_pull_ns)) < 0 ||
		    (r = meta_int(st, "sync_state_head", &s.head)) < 0 || (r = meta_int(st, "sync_pulled", &s.pulled)) < 0)
			goto fail;
	}
	s.connected = connected != 0;
	if (s.head < s.pulled)
		s.head = s.pulled;
	if ((r = sync_waiting(st, &s.waiting, NULL)) < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	store_sync_status_release(&s);
	return r;
}

void store_sync_status_release(struct store_sync_status *s)
{
	free(s->machine);
	free(s->name);
	free(s->error);
	*s = (struct store_sync_status){ 0 };
}
