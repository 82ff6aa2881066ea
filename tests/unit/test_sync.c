/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_sync.c: the sync of stores through a shared log (store/sync_*.c),
 * with the log in memory instead of PostgreSQL: two or three stores in
 * files of a private folder, each a machine, each round a pull and a push
 * of store/sync.c's own. What one machine commits reaches the others byte
 * for byte; an append is pushed as the new message alone (the entry's
 * size); commits made on two machines apart are merged and both kept, and
 * the machines end with the same bytes; removals, a task to the trash and
 * back, whole docs; a store with history before it first synced; a push
 * whose bookkeeping was lost is not pushed twice, and nothing is applied
 * twice (sync_seen holds each entry once); the log refuses a push on top
 * of an old head; a store that syncs commits an append to a long
 * conversation reading no more of itself than one that does not.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/store_internal.h"
#include "store/store_changes.h"
#include "store/store_ops.h"
#include "store/store_view.h"
#include "store/sync.h"
#include "store/sync_internal.h"
#include "store/util.h"

#define UI(id) "tasks/" id "/ui_messages.json"
#define META(id) "tasks/" id "/task_metadata.json"
#define HISTORY "state/taskHistory.json"
#define M(ts, text) "{\"ts\":" #ts ",\"type\":\"say\",\"say\":\"text\",\"text\":\"" text "\"}"
#define ITEM(id) "{\"id\":\"" id "\",\"ts\":" id ",\"task\":\"t" id "\",\"cwdOnTaskInitialization\":\"/w\"}"

static const struct store_who who = { .pid = 4242, .comm = "code" };

/* ---- the log in memory --------------------------------------------------------------- */

struct mem_entry {
	char machine[40];
	int64_t rev;
	char *data;
	size_t len;
};

struct mem_log {
	struct mem_entry *v;
	size_t n, alloc;
	bool down;
};

/* One machine's handle on the log: what a push is made as. */
struct mem_handle {
	struct mem_log *log;
	char machine[40];
};

static int m_connect(void *h, int64_t *ret_head)
{
	struct mem_handle *mh = h;

	if (mh->log->down)
		return -ENOTCONN;
	*ret_head = (int64_t)mh->log->n;
	return 0;
}

static int m_push(void *h, int64_t head, const struct sync_out *out, size_t n)
{
	struct mem_handle *mh = h;
	struct mem_log *l = mh->log;

	if (l->down)
		return -ENOTCONN;
	if (head != (int64_t)l->n)
		return -EAGAIN;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < l->n; j++)
			if (strcmp(l->v[j].machine, mh->machine) == 0 && l->v[j].rev == out[i].rev)
				return -EPROTO; /* unique (machine, rev), as in PostgreSQL */
	for (size_t i = 0; i < n; i++) {
		struct mem_entry *e;

		assert_int_equal(ARRAY_GROW(l->v, l->n, l->alloc, 16), 0);
		e = &l->v[l->n++];
		snprintf(e->machine, sizeof(e->machine), "%s", mh->machine);
		e->rev = out[i].rev;
		e->len = out[i].payload.len;
		e->data = malloc(e->len + 1);
		assert_non_null(e->data);
		assert_int_equal(sync_bytes_read(&out[i].payload, 0, e->data, e->len), 0);
	}
	return 0;
}

static int m_fetch(void *h, int64_t after, size_t max, size_t max_bytes, struct sync_in **ret, size_t *ret_n)
{
	struct mem_handle *mh = h;
	struct mem_log *l = mh->log;
	size_t n = 0;
	struct sync_in *in;

	if (l->down)
		return -ENOTCONN;
	while ((size_t)after + n < l->n && n < max)
		n++;
	*ret_n = n;
	if (!n)
		return 0;
	in = calloc(n, sizeof(*in));
	assert_non_null(in);
	for (size_t i = 0; i < n; i++) {
		const struct mem_entry *e = &l->v[after + (int64_t)i];

		in[i].seq = after + 1 + (int64_t)i;
		snprintf(in[i].machine, sizeof(in[i].machine), "%s", e->machine);
		in[i].rev = e->rev;
		sync_bytes_init(&in[i].payload, NULL);
		assert_int_equal(sync_bytes_add(&in[i].payload, e->data, e->len), 0);
	}
	(void)max_bytes;
	*ret = in;
	return 0;
}

static int m_wait(void *h, int ms, int fd)
{
	return 0;
}

static int m_seen(void *h, int64_t pulled)
{
	return 0;
}

static const struct sync_log_ops mem_ops = { .connect = m_connect, .push = m_push, .fetch = m_fetch, .wait = m_wait,
					     .seen = m_seen };

static void mem_log_release(struct mem_log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].data);
	free(l->v);
}

/* ---- machines ---------------------------------------------------------------------------- */

struct machine {
	char path[300];
	struct store *st;
	struct mem_handle h;
	size_t changed; /* docs the last rounds said changed */
};

struct world {
	char dir[256];
	struct mem_log log;
	struct machine m[3];
};

static void on_changed(void *ctx, const char *path)
{
	struct machine *m = ctx;

	m->changed++;
}

static void machine_open(struct world *w, int i, bool enable)
{
	struct machine *m = &w->m[i];
	struct sync_local l;

	char path[sizeof(m->path)];

	snprintf(path, sizeof(path), "%s/m%d.db", w->dir, i);
	memcpy(m->path, path, sizeof(path));
	assert_int_equal(store_open(m->path, 0, &m->st), 0);
	m->h.log = &w->log;
	if (!enable)
		return;
	assert_int_equal(store_sync_enable(m->st), 0);
	assert_int_equal(sync_local_load(m->st, &l), 0);
	snprintf(m->h.machine, sizeof(m->h.machine), "%s", l.machine);
	sync_local_release(&l);
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	snprintf(w->dir, sizeof(w->dir), "%s/convfs-test-sync.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(w->dir));
	for (int i = 0; i < 3; i++)
		machine_open(w, i, true);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	char cmd[300];

	for (int i = 0; i < 3; i++)
		store_free(w->m[i].st);
	mem_log_release(&w->log);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", w->dir);
	assert_int_equal(system(cmd), 0);
	free(w);
	return 0;
}

static int round_of(struct world *w, int i)
{
	return sync_round_once(w->m[i].st, NULL, w->dir, &mem_ops, &w->m[i].h, true, on_changed, &w->m[i]);
}

/* Rounds on every machine until nothing moves: each has everything, the log has everything. */
static void settle(struct world *w, int machines)
{
	for (int pass = 0; pass < 4; pass++)
		for (int i = 0; i < machines; i++)
			assert_int_equal(round_of(w, i), 0);
}

static char *doc_read(struct store *st, const char *path)
{
	struct store_snap *snap = NULL;
	char *buf;
	int r = store_snap_open(st, path, &snap);

	if (r == -ENOENT)
		return NULL;
	assert_int_equal(r, 0);
	buf = calloc(1, (size_t)store_snap_size(snap) + 1);
	assert_non_null(buf);
	assert_int_equal(store_snap_read(st, snap, buf, (size_t)store_snap_size(snap), 0), store_snap_size(snap));
	store_snap_free(snap);
	return buf;
}

static void assert_doc(struct store *st, const char *path, const char *want)
{
	char *got = doc_read(st, path);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* A writer's save, merged against its base (as the mount commits): base_rev 0, none. */
static void save(struct store *st, const char *path, const char *json)
{
	assert_int_equal(store_doc_commit(st, path, json, strlen(json), &who, "write"), 0);
}

struct listing {
	char *text;
	size_t len;
};

static int list_one(void *ctx, const char *name, const struct store_stat *s)
{
	struct listing *l = ctx;
	size_t n = strlen(name);

	l->text = realloc(l->text, l->len + n + 2);
	assert_non_null(l->text);
	memcpy(l->text + l->len, name, n);
	l->len += n;
	l->text[l->len++] = '\n';
	l->text[l->len] = '\0';
	return 0;
}

/* Every doc of machine a is in b, byte for byte, and no other. */
static void assert_same_docs(struct world *w, int a, int b)
{
	struct listing la = { 0 }, lb = { 0 };

	assert_int_equal(store_doc_foreach(w->m[a].st, list_one, &la), 0);
	assert_int_equal(store_doc_foreach(w->m[b].st, list_one, &lb), 0);
	assert_string_equal(la.text ? la.text : "", lb.text ? lb.text : "");
	for (char *p = la.text, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		char *ta, *tb;

		*nl = '\0';
		ta = doc_read(w->m[a].st, p);
		tb = doc_read(w->m[b].st, p);
		assert_non_null(ta);
		assert_non_null(tb);
		assert_string_equal(ta, tb);
		free(ta);
		free(tb);
	}
	free(la.text);
	free(lb.text);
}

/* An integer from machine i's store file, through a connection of the test's own. */
static int64_t db_int(struct world *w, int i, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(w->m[i].path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
	v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

static void db_exec(struct world *w, int i, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open_v2(w->m[i].path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* ---- the tests ---------------------------------------------------------------------------- */

/* A conversation made on one machine reaches the others whole; an append as one message. */
static void test_reaches_others(void **state)
{
	struct world *w = *state;
	const char *v1 = "[" M(1, "a") "," M(2, "b") "]";
	const char *v2 = "[" M(1, "a") "," M(2, "b") "," M(3, "a long conversation goes on") "]";

	save(w->m[0].st, UI("1"), v1);
	assert_int_equal(round_of(w, 0), 0);
	assert_int_equal(w->log.n, 1);
	assert_int_equal(round_of(w, 1), 0);
	assert_doc(w->m[1].st, UI("1"), v1);
	assert_true(w->m[1].changed >= 1);
	save(w->m[0].st, UI("1"), v2);
	assert_int_equal(round_of(w, 0), 0);
	assert_int_equal(w->log.n, 2);
	/* The second entry holds the new message and not the two before it. */
	assert_non_null(memmem(w->log.v[1].data, w->log.v[1].len, "a long conversation goes on", 27));
	assert_null(memmem(w->log.v[1].data, w->log.v[1].len, "\"text\":\"b\"", 10));
	settle(w, 3);
	for (int i = 1; i < 3; i++)
		assert_doc(w->m[i].st, UI("1"), v2);
	/* Each entry applied once on each machine, and the appended row written once. */
	for (int i = 1; i < 3; i++) {
		assert_int_equal(db_int(w, i, "SELECT count(*) FROM sync_seen"), 2);
		assert_int_equal(db_int(w, i, "SELECT count(*) FROM elems WHERE json LIKE '%goes on%'"), 1);
	}
	assert_int_equal(w->log.n, 2); /* nobody pushed what it pulled */
}

/* Pages a connection asked its cache for since the last call (hits and misses): what its statements read. */
static int64_t pages_read(struct store *st)
{
	int cur = 0, hi = 0;
	int64_t total;

	assert_int_equal(sqlite3_db_status(st->db, SQLITE_DBSTATUS_CACHE_HIT, &cur, &hi, 1), SQLITE_OK);
	total = cur;
	assert_int_equal(sqlite3_db_status(st->db, SQLITE_DBSTATUS_CACHE_MISS, &cur, &hi, 1), SQLITE_OK);
	return total + cur;
}

/* A conversation of n messages, each about 200 bytes (free()). */
static char *long_conversation(int n)
{
	size_t cap = (size_t)n * 256 + 16, len = 0;
	char *b = malloc(cap);

	assert_non_null(b);
	b[len++] = '[';
	for (int i = 1; i <= n; i++)
		len += (size_t)snprintf(b + len, cap - len, "%s" M(%d, "message %d of a long task: the handler now "
			"invalidates the cache when the configuration changes, and the tests say so"), i > 1 ? "," : "", i, i);
	b[len++] = ']';
	b[len] = '\0';
	return b;
}

/*
 * An append to a long conversation, in a store that syncs and in one that
 * does not: the one that syncs reads about as many pages (its sync_touch
 * row and its index of added rows besides), not the conversation's every
 * row, whatever index the sync added.
 */
static void test_append_cost(void **state)
{
	struct world *w = *state;
	struct store *plain = NULL, *stores[2];
	char path[300];
	int64_t pages[2];
	const int n = 3000;

	snprintf(path, sizeof(path), "%s/plain.db", w->dir);
	assert_int_equal(store_open(path, 0, &plain), 0);
	stores[0] = plain;
	stores[1] = w->m[0].st;
	for (int k = 0; k < 2; k++) {
		/* Its rows made in a few commits, as a task's steps make them. */
		for (int step = 1; step <= 4; step++) {
			char *c = long_conversation(n * step / 4);

			save(stores[k], UI("7"), c);
			free(c);
		}
		char *c = long_conversation(n + 1);

		pages_read(stores[k]);
		save(stores[k], UI("7"), c);
		pages[k] = pages_read(stores[k]);
		free(c);
	}
	print_message("an append to %d messages read %" PRId64 " pages without the sync, %" PRId64 " with it\n", n,
		      pages[0], pages[1]);
	assert_true(pages[1] <= pages[0] + pages[0] / 2 + 20);
	store_free(plain);
}

/*
 * The daemon's sync has a connection of its own; what a push records goes
 * through the one serving requests, so that the latter does not see
 * another connection's commit after each push (SQLite would drop its
 * whole page cache: the next save would read every page again).
 */
static void test_push_served(void **state)
{
	struct world *w = *state;
	struct store *own = NULL;
	char *got;

	assert_int_equal(store_open(w->m[0].path, 0, &own), 0);
	save(w->m[0].st, UI("7"), "[{\"ts\":1,\"type\":\"say\",\"text\":\"one\"}]");
	assert_true(store_changed_elsewhere(w->m[0].st) >= 0);
	assert_int_equal(sync_round_once(own, w->m[0].st, w->dir, &mem_ops, &w->m[0].h, true, NULL, NULL), 0);
	assert_int_equal(store_changed_elsewhere(w->m[0].st), 0);
	/* Pushed, and recorded: the next round pushes nothing again. */
	assert_int_equal(w->log.n, 1);
	assert_int_equal(sync_round_once(own, w->m[0].st, w->dir, &mem_ops, &w->m[0].h, true, NULL, NULL), 0);
	assert_int_equal(w->log.n, 1);
	settle(w, 2);
	got = doc_read(w->m[1].st, UI("7"));
	assert_string_equal(got, "[{\"ts\":1,\"type\":\"say\",\"text\":\"one\"}]");
	free(got);
	store_free(own);
}

/* A store that synced before schema 16 has the old index: the migration drops it, its next sync makes the new one. */
static void test_old_index(void **state)
{
	struct world *w = *state;

	store_free(w->m[1].st);
	w->m[1].st = NULL;
	db_exec(w, 1, "DROP INDEX IF EXISTS elems_added; CREATE INDEX elems_from ON elems(doc_id, rev_from); "
		      "PRAGMA user_version = 15");
	machine_open(w, 1, true);
	assert_int_equal(db_int(w, 1, "SELECT count(*) FROM sqlite_master WHERE name = 'elems_from'"), 0);
	assert_int_equal(db_int(w, 1, "SELECT count(*) FROM sqlite_master WHERE name = 'elems_added'"), 1);
}

/* The same conversation changed on two machines apart: both messages kept, and the same bytes everywhere. */
static void test_apart(void **state)
{
	struct world *w = *state;
	const char *base = "[" M(1, "a") "]";

	save(w->m[0].st, UI("1"), base);
	settle(w, 2);
	save(w->m[0].st, UI("1"), "[" M(1, "a") "," M(2, "from the laptop") "]");
	save(w->m[1].st, UI("1"), "[" M(1, "a") "," M(3, "from the desktop") "]");
	settle(w, 2);
	assert_doc(w->m[0].st, UI("1"), "[" M(1, "a") "," M(2, "from the laptop") "," M(3, "from the desktop") "]");
	assert_same_docs(w, 0, 1);
	/* Tasks made apart: both in the history, everywhere. */
	save(w->m[0].st, HISTORY, "[" ITEM("10") "]");
	settle(w, 2);
	save(w->m[0].st, HISTORY, "[" ITEM("10") "," ITEM("11") "]");
	save(w->m[1].st, HISTORY, "[" ITEM("10") "," ITEM("12") "]");
	settle(w, 3);
	for (int i = 0; i < 3; i++) {
		char *h = doc_read(w->m[i].st, HISTORY);

		assert_non_null(strstr(h, "\"id\":\"11\""));
		assert_non_null(strstr(h, "\"id\":\"12\""));
		free(h);
	}
	assert_same_docs(w, 0, 1);
	assert_same_docs(w, 0, 2);
}

/* Whole docs, removals, a task to the trash and back. */
static void test_whole_and_trash(void **state)
{
	struct world *w = *state;
	bool trashed = false;
	char *key = NULL;

	save(w->m[0].st, META("5"), "{\"files_in_context\":[]}");
	save(w->m[0].st, UI("5"), "[" M(1, "a") "]");
	save(w->m[0].st, HISTORY, "[" ITEM("5") "]");
	settle(w, 2);
	assert_doc(w->m[1].st, META("5"), "{\"files_in_context\":[]}");
	assert_int_equal(store_task_trash(w->m[1].st, "5", &who), 0);
	settle(w, 2);
	assert_doc(w->m[0].st, UI("5"), NULL);
	assert_doc(w->m[0].st, HISTORY, "[]");
	assert_int_equal(store_task_workspace(w->m[0].st, "5", &key, &trashed), 0);
	assert_true(trashed);
	free(key);
	key = NULL;
	assert_int_equal(store_task_restore(w->m[0].st, "5", &who), 0);
	settle(w, 3);
	for (int i = 0; i < 3; i++) {
		assert_doc(w->m[i].st, UI("5"), "[" M(1, "a") "]");
		assert_doc(w->m[i].st, META("5"), "{\"files_in_context\":[]}");
		assert_int_equal(store_task_workspace(w->m[i].st, "5", &key, &trashed), 0);
		assert_false(trashed);
		free(key);
		key = NULL;
	}
	assert_int_equal(store_doc_remove(w->m[2].st, META("5"), &who, "unlink"), 0);
	settle(w, 3);
	assert_doc(w->m[0].st, META("5"), NULL);
	assert_same_docs(w, 0, 1);
	assert_same_docs(w, 1, 2);
}

/* A store with history before it first synced pushes all of it; another store starts empty. */
static void test_history_before(void **state)
{
	struct world *w = *state;
	struct machine *m = &w->m[0];

	store_free(m->st);
	unlink(m->path);
	machine_open(w, 0, false);
	save(m->st, UI("7"), "[" M(1, "a") "]");
	save(m->st, UI("7"), "[" M(1, "a") "," M(2, "b") "]");
	save(m->st, HISTORY, "[" ITEM("7") "]");
	assert_int_equal(store_task_trash(m->st, "7", &who), 0);
	assert_int_equal(store_task_restore(m->st, "7", &who), 0);
	store_free(m->st);
	machine_open(w, 0, true);
	settle(w, 2);
	assert_doc(w->m[1].st, UI("7"), "[" M(1, "a") "," M(2, "b") "]");
	assert_doc(w->m[1].st, HISTORY, "[" ITEM("7") "]");
	assert_same_docs(w, 0, 1);
	/* Every version: the two saves of the conversation, its trip to the trash and back. */
	assert_int_equal(db_int(w, 1, "SELECT count(*) FROM sync_touch t JOIN docs d ON d.id = t.doc_id "
				      "WHERE d.path = 'tasks/7/ui_messages.json'"),
			 db_int(w, 0, "SELECT count(*) FROM sync_touch t JOIN docs d ON d.id = t.doc_id "
				      "WHERE d.path = 'tasks/7/ui_messages.json'"));
}

/* A push whose record was lost (the daemon killed after PostgreSQL took it): not pushed twice. */
static void test_lost_record(void **state)
{
	struct world *w = *state;

	save(w->m[0].st, UI("1"), "[" M(1, "a") "]");
	assert_int_equal(round_of(w, 0), 0);
	save(w->m[0].st, UI("1"), "[" M(1, "a") "," M(2, "b") "]");
	assert_int_equal(round_of(w, 0), 0);
	assert_int_equal(w->log.n, 2);
	/* As if the last push's bookkeeping never happened. */
	db_exec(w, 0, "DELETE FROM sync_seen WHERE seq = 2; UPDATE meta SET value = '1' WHERE key = 'sync_pulled';"
		      "UPDATE meta SET value = (SELECT min(rev) FROM sync_touch) WHERE key = 'sync_pushed';"
		      "UPDATE sync_docs SET seq = 1, rev = (SELECT min(rev) FROM sync_touch)");
	assert_int_equal(round_of(w, 0), 0);
	assert_int_equal(w->log.n, 2);
	assert_int_equal(db_int(w, 0, "SELECT count(*) FROM sync_seen"), 2);
	settle(w, 2);
	assert_int_equal(w->log.n, 2);
	assert_same_docs(w, 0, 1);
}

/* A push on top of an old head is refused by the log: the machine pulls, merges, pushes again. */
static void test_push_after_pull(void **state)
{
	struct world *w = *state;

	save(w->m[0].st, UI("1"), "[" M(1, "a") "]");
	save(w->m[1].st, UI("2"), "[" M(1, "b") "]");
	assert_int_equal(round_of(w, 0), 0);
	assert_int_equal(round_of(w, 1), 0); /* pulls 1's first, then pushes */
	assert_int_equal(w->log.n, 2);
	assert_int_equal(round_of(w, 0), 0);
	assert_same_docs(w, 0, 1);
	/* Offline: nothing is pushed, nothing lost; back: everything goes. */
	w->log.down = true;
	save(w->m[0].st, UI("1"), "[" M(1, "a") "," M(5, "offline") "]");
	assert_int_equal(round_of(w, 0), -ENOTCONN);
	w->log.down = false;
	settle(w, 2);
	assert_doc(w->m[1].st, UI("1"), "[" M(1, "a") "," M(5, "offline") "]");
}

/* The entry's bytes: what is written is what is read; damaged bytes are refused. */
static void test_wire(void **state)
{
	struct sync_bytes b;
	struct sync_entry e;
	struct sync_header h = { .kind = "write", .path = UI("1"), .comm = "node", .time_ns = 123, .pid = 7,
				 .neffects = 1 };
	char got[16];

	sync_bytes_init(&b, NULL);
	assert_int_equal(sync_put_header(&b, &h), 0);
	assert_int_equal(sync_put_effect(&b, UI("1"), SYNC_FMT_ARRAY, 41, 2, "[", 1), 0);
	assert_int_equal(sync_put_rest_len(&b, 3), 0);
	assert_int_equal(sync_bytes_add(&b, ",1]", 3), 0);
	assert_int_equal(sync_decode(&b, &e), 0);
	assert_string_equal(e.kind, "write");
	assert_string_equal(e.comm, "node");
	assert_int_equal(e.time_ns, 123);
	assert_int_equal(e.neffects, 1);
	assert_int_equal(e.effects[0].prev, 41);
	assert_int_equal(e.effects[0].keep, 2);
	assert_int_equal(e.effects[0].rest_len, 3);
	assert_int_equal(sync_bytes_read(&b, e.effects[0].rest_at, got, 3), 0);
	assert_memory_equal(got, ",1]", 3);
	sync_entry_release(&e);
	/* Cut short, one byte more, or a path that is no doc's: refused. */
	b.len--;
	assert_int_equal(sync_decode(&b, &e), -EPROTO);
	b.len++;
	assert_int_equal(sync_bytes_add(&b, "x", 1), 0);
	assert_int_equal(sync_decode(&b, &e), -EPROTO);
	sync_bytes_release(&b);
	sync_bytes_init(&b, NULL);
	sync_put_header(&b, &h);
	sync_put_effect(&b, "../../etc/passwd", SYNC_FMT_WHOLE, 0, 0, "", 0);
	sync_put_rest_len(&b, 0);
	assert_int_equal(sync_decode(&b, &e), -EPROTO);
	sync_bytes_release(&b);
	/* Past the inline size, the bytes go to a file and read back the same. */
	sync_bytes_init(&b, NULL);
	b.inline_max = 8;
	assert_int_equal(sync_bytes_add(&b, "0123456789abcdef", 16), 0);
	assert_true(b.fd >= 0);
	assert_int_equal(sync_bytes_read(&b, 10, got, 6), 0);
	assert_memory_equal(got, "abcdef", 6);
	sync_bytes_release(&b);
	(void)state;
}

/* An entry written again without what a forget forgets: the message blanked at its length, nothing else moved. */
static void test_forget_entry(void **state)
{
	const char *rest = "," M(2, "the key is sk-SECRET") "," M(3, "fine") "]";
	struct sync_header h = { .kind = "write", .path = UI("1"), .comm = "node", .neffects = 1 };
	struct store_forget f = { .match = "sk-SECRET" };
	struct sync_bytes b, out;
	struct sync_entry e;
	char got[256];
	bool changed = false;

	sync_bytes_init(&b, NULL);
	sync_bytes_init(&out, NULL);
	sync_put_header(&b, &h);
	sync_put_effect(&b, UI("1"), SYNC_FMT_ARRAY, 7, 1, "[", 1);
	sync_put_rest_len(&b, strlen(rest));
	assert_int_equal(sync_bytes_add(&b, rest, strlen(rest)), 0);
	assert_int_equal(sync_forget_entry(&f, &b, &out, &changed), 0);
	assert_true(changed);
	assert_int_equal(out.len, b.len);
	assert_int_equal(sync_decode(&out, &e), 0);
	assert_int_equal(e.effects[0].keep, 1);
	assert_int_equal(e.effects[0].rest_len, strlen(rest));
	assert_int_equal(sync_bytes_read(&out, e.effects[0].rest_at, got, strlen(rest)), 0);
	got[strlen(rest)] = '\0';
	assert_null(strstr(got, "SECRET"));
	assert_non_null(strstr(got, "{\"forgotten\":true}"));
	assert_non_null(strstr(got, M(3, "fine")));
	sync_entry_release(&e);
	sync_bytes_release(&out);
	/* A forgotten task's files leave the entry. */
	sync_bytes_init(&out, NULL);
	f = (struct store_forget){ .task = "1" };
	assert_int_equal(sync_forget_entry(&f, &b, &out, &changed), 0);
	assert_true(changed);
	assert_int_equal(sync_decode(&out, &e), 0);
	assert_int_equal(e.neffects, 0);
	sync_entry_release(&e);
	sync_bytes_release(&out);
	sync_bytes_release(&b);
	(void)state;
}

/* A forget that deletes the last revisions does not give their numbers out again: the next commit is pushed. */
static void test_forget_numbering(void **state)
{
	struct world *w = *state;
	struct store_forget f = { .task = "9" };
	int64_t before;

	save(w->m[0].st, UI("1"), "[" M(1, "a") "]");
	save(w->m[0].st, UI("9"), "[" M(1, "secret") "]");
	assert_int_equal(round_of(w, 0), 0);
	before = db_int(w, 0, "SELECT max(id) FROM revisions");
	assert_int_equal(store_forget_run(w->m[0].st, &f, &who, NULL, NULL), 0);
	save(w->m[0].st, UI("1"), "[" M(1, "a") "," M(2, "after the forget") "]");
	assert_true(db_int(w, 0, "SELECT max(id) FROM revisions WHERE kind = 'write'") > before);
	assert_int_equal(round_of(w, 0), 0);
	settle(w, 2);
	assert_doc(w->m[1].st, UI("1"), "[" M(1, "a") "," M(2, "after the forget") "]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire),
		cmocka_unit_test_setup_teardown(test_reaches_others, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append_cost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_push_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_and_trash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_before, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_push_after_pull, setup, teardown),
		cmocka_unit_test(test_forget_entry),
		cmocka_unit_test_setup_teardown(test_forget_numbering, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
