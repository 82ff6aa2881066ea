/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view.c: the queries behind the workspaces view (workspaces, their tasks,
 * a task's history item). The view itself (names, files) is fs/view/view.c's;
 * this file only answers from the tables.
 *
 * A task is live when it has at least one present doc and is not in the
 * trash. A workspace is listed while it has tasks, live or in the trash (so
 * that a task can be moved back into it). Each function runs its query under the lock and calls back without
 * it, like store_doc_list(), so a callback may call the store again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/json.h"
#include "store/store_internal.h"
#include "store/util.h"

#define LIVE_TASK "EXISTS (SELECT 1 FROM docs d WHERE d.task_id = t.id AND d.present)"

struct ws_row {
	char *key, *path;
	int64_t ntasks, first_ns, last_ns;
};

static int ws_query(struct store *st, const char *key, store_workspace_fn fn, void *ctx)
{
	struct ws_row *v = NULL;
	size_t n = 0, alloc = 0;
	int r = 0, rc;

	{
		STORE_LOCK(st);
		_cleanup_stmt_ sqlite3_stmt *stmt = NULL;

		/*
		 * Each task is summed up once (is it live, its last change), then
		 * its workspace: a subquery per task or per workspace row makes a
		 * listing of 10,000 tasks take seconds. The statement for a key
		 * takes only the key's tasks. A Cline task id is its creation time
		 * in ms: the first activity.
		 */
#define WS_QUERY(where_task, where_ws) \
			"SELECT w.key, w.path, sum(x.trashed_ns IS NULL AND x.live), min(x.id) * 1000000, " \
			"  max(CASE WHEN x.trashed_ns IS NULL THEN x.last_ns END) " \
			"FROM workspaces w JOIN (" \
			"  SELECT t.workspace_id, t.trashed_ns, CAST(t.id AS INTEGER) AS id, " \
			"    count(d.id) FILTER (WHERE d.present) > 0 AS live, " \
			"    max(d.mtime_ns) FILTER (WHERE d.present) AS last_ns " \
			"  FROM tasks t LEFT JOIN docs d ON d.task_id = t.id " where_task " GROUP BY t.id" \
			") x ON x.workspace_id = w.id " \
			"WHERE (x.live OR x.trashed_ns IS NOT NULL) " where_ws " " \
			"GROUP BY w.id ORDER BY w.path"
		r = store_prepare(st, key ? WS_QUERY("WHERE t.workspace_id = (SELECT id FROM workspaces WHERE key = ?1)",
						     "AND w.key = ?1")
					  : WS_QUERY("", ""),
				  &stmt);
#undef WS_QUERY
		if (r < 0)
			return r;
		if (key)
			sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			if ((r = ARRAY_GROW(v, n, alloc, 16)) < 0)
				break;
			v[n] = (struct ws_row){
				.key = strdup((const char *)sqlite3_column_text(stmt, 0)),
				.path = strdup((const char *)sqlite3_column_text(stmt, 1)),
				.ntasks = sqlite3_column_int64(stmt, 2),
				.first_ns = sqlite3_column_int64(stmt, 3),
				.last_ns = sqlite3_column_int64(stmt, 4),
			};
			if (!v[n].key || !v[n].path) {
				free(v[n].key);
				free(v[n].path);
				r = -ENOMEM;
				break;
			}
			n++;
		}
		if (r == 0 && rc != SQLITE_DONE)
			r = store_fail(st, rc, "cannot list workspaces");
	}
	if (r == 0 && key && n == 0)
		r = -ENOENT;
	for (size_t i = 0; i < n; i++) {
		struct store_workspace ws = { v[i].key, v[i].path, v[i].ntasks, v[i].first_ns, v[i].last_ns };

		if (r == 0)
			r = fn(ctx, &ws);
		free(v[i].key);
		free(v[i].path);
	}
	free(v);
	return r;
}

int store_workspace_list(struct store *st, store_workspace_fn fn, void *ctx)
{
	return ws_query(st, NULL, fn, ctx);
}

int store_workspace_last(struct store *st, int64_t *ret_ns)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	/*
	 * Through docs_mtime from the latest down: the first doc of a live
	 * task in a known workspace ends it, most often the first one read.
	 * The same as the latest last_ns of store_workspace_list(), which sums
	 * every task (100 ms at 10,000 tasks).
	 */
	r = store_row_args(st, "SELECT d.mtime_ns FROM docs d WHERE d.present AND EXISTS ("
			       "  SELECT 1 FROM tasks t WHERE t.id = d.task_id AND t.trashed_ns IS NULL"
			       "  AND t.workspace_id IS NOT NULL) "
			       "ORDER BY d.mtime_ns DESC LIMIT 1",
			   NULL, 0, NULL, 0, "cannot find the last change of a workspace", &stmt);
	if (r == -ENOENT) {
		*ret_ns = 0;
		return 0;
	}
	if (r < 0)
		return r;
	*ret_ns = sqlite3_column_int64(stmt, 0);
	return 0;
}

/* Keeps ws as the last workspace summed up at generation gen. Under the lock. */
static int ws_keep(struct store *st, uint64_t gen, const struct store_workspace *ws)
{
	char *key = strdup(ws->key), *path = strdup(ws->path);

	if (!key || !path) {
		free(key);
		free(path);
		return -ENOMEM;
	}
	free(st->ws_last.key);
	free(st->ws_last.path);
	st->ws_last = (struct store_ws_cache){ gen, key, path, ws->ntasks, ws->first_ns, ws->last_ns };
	return 0;
}

/*
 * A commit (generation before -> after) that moved no task: what it did to
 * the workspace kept, if that was current before it. A commit that changed
 * no doc's content, or one of a doc that is not in that workspace, leaves the
 * workspace as it was; one that changed a doc of it leaves its tasks and
 * their first activity, and makes the commit's time its last activity (the
 * latest of all: if it is not, that doc's own time may have been the latest,
 * and the workspace is asked again).
 */
void ws_carry(struct store *st, uint64_t before, uint64_t after)
{
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	if (!st->ws_last.key || st->ws_last.generation != before || st->touch_n > 1)
		return;
	if (st->touch_n == 1) {
		r = store_row_args(st, "SELECT w.key FROM docs d JOIN tasks t ON t.id = d.task_id "
				       "JOIN workspaces w ON w.id = t.workspace_id WHERE d.id = ?1 AND t.trashed_ns IS NULL",
				   NULL, 0, STORE_INTS(st->touch_doc), "cannot look up a doc's workspace", &stmt);
		if (r < 0 && r != -ENOENT)
			return;
		if (r == 0 && strcmp((const char *)sqlite3_column_text(stmt, 0), st->ws_last.key) == 0) {
			if (st->touch_ns < st->ws_last.last_ns)
				return;
			st->ws_last.last_ns = st->touch_ns;
		}
	}
	st->ws_last.generation = after;
}

struct ws_copy {
	struct store *st;
	uint64_t gen;
	store_workspace_fn fn;
	void *ctx;
};

static int ws_copy_then_call(void *ctx, const struct store_workspace *ws)
{
	struct ws_copy *c = ctx;

	{
		STORE_LOCK(c->st);

		if (c->st->batch_depth == 0)
			(void)ws_keep(c->st, c->gen, ws); /* without memory for the copy, the next call asks again */
	}
	return c->fn(c->ctx, ws);
}

int store_workspace_get(struct store *st, const char *key, store_workspace_fn fn, void *ctx)
{
	/* Taken before the query: a commit during it leaves the copy stale, never trusted. */
	struct ws_copy c = { st, store_generation(st), fn, ctx };
	struct store_workspace ws = { 0 };
	_cleanup_free_ char *ckey = NULL, *cpath = NULL;

	{
		STORE_LOCK(st);

		if (st->ws_last.key && st->ws_last.generation == c.gen && strcmp(st->ws_last.key, key) == 0) {
			ckey = strdup(st->ws_last.key);
			cpath = strdup(st->ws_last.path);
			if (!ckey || !cpath)
				return -ENOMEM;
			ws = (struct store_workspace){ ckey, cpath, st->ws_last.ntasks, st->ws_last.first_ns,
						       st->ws_last.last_ns };
		}
	}
	if (ws.key)
		return fn(ctx, &ws);
	return ws_query(st, key, ws_copy_then_call, &c);
}

int store_task_list(struct store *st, const char *ws_key, bool trashed, store_task_fn fn, void *ctx)
{
	struct {
		char *id;
		int64_t mtime;
	} *v = NULL;
	size_t n = 0, alloc = 0;
	int r = 0, rc;

	{
		STORE_LOCK(st);
		_cleanup_stmt_ sqlite3_stmt *stmt = NULL;

		/*
		 * One statement for a key and one for no workspace, each through
		 * the index of tasks by workspace: a condition that allowed both
		 * (?1 IS NULL OR ...) made SQLite scan every task, 20 ms at
		 * 10,000 tasks for a listing of 7. (A workspace's row is never
		 * removed, so a task's workspace_id names one or is NULL.)
		 */
#define TASK_LIST(where) \
			"SELECT t.id, (SELECT max(d.mtime_ns) FROM docs d WHERE d.task_id = t.id AND d.present) " \
			"FROM tasks t WHERE " where " AND t.trashed_ns IS NULL AND " LIVE_TASK " ORDER BY t.id"
		r = store_prepare(st, trashed ? "SELECT t.id, t.trashed_ns FROM tasks t WHERE t.trashed_ns IS NOT NULL ORDER BY t.id"
				    : ws_key ? TASK_LIST("t.workspace_id = (SELECT id FROM workspaces WHERE key = ?1)")
					     : TASK_LIST("t.workspace_id IS NULL"),
				  &stmt);
#undef TASK_LIST
		if (r < 0)
			return r;
		if (ws_key)
			sqlite3_bind_text(stmt, 1, ws_key, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			if ((r = ARRAY_GROW(v, n, alloc, 64)) < 0)
				break;
			v[n].id = strdup((const char *)sqlite3_column_text(stmt, 0));
			v[n].mtime = sqlite3_column_int64(stmt, 1);
			if (!v[n].id) {
				r = -ENOMEM;
				break;
			}
			n++;
		}
		if (r == 0 && rc != SQLITE_DONE)
			r = store_fail(st, rc, "cannot list tasks");
	}
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = fn(ctx, v[i].id, v[i].mtime);
		free(v[i].id);
	}
	free(v);
	return r;
}

/* Keeps the answer for task_id at placement generation gen. Under the lock. */
static void task_keep(struct store *st, uint64_t gen, const char *task_id, const char *key, bool trashed, int r)
{
	struct store_task_cache c = { gen, strdup(task_id), key ? strdup(key) : NULL, trashed, r };

	if (st->batch_depth > 0 || !c.task_id || (key && !c.key)) { /* not kept: the next call asks again */
		free(c.task_id);
		free(c.key);
		return;
	}
	free(st->task_last.task_id);
	free(st->task_last.key);
	st->task_last = c;
}

int store_task_workspace(struct store *st, const char *task_id, char **ret_key, bool *ret_trashed)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	uint64_t gen = store_placement_generation(st);
	const struct store_task_cache *c = &st->task_last;
	char *key = NULL;
	bool trashed;
	int r;

	if (c->task_id && c->placement == gen && strcmp(c->task_id, task_id) == 0) {
		if (c->r < 0)
			return c->r;
		if (c->key && !(key = strdup(c->key)))
			return -ENOMEM;
		trashed = c->trashed;
	} else {
		r = store_row_args(st, "SELECT w.key, t.trashed_ns IS NOT NULL FROM tasks t "
				       "LEFT JOIN workspaces w ON w.id = t.workspace_id "
				       "WHERE t.id = ?1 AND (" LIVE_TASK " OR t.trashed_ns IS NOT NULL)",
				   STORE_TEXTS(task_id), NULL, 0, "cannot look up a task", &stmt);
		if (r == -ENOENT)
			task_keep(st, gen, task_id, NULL, false, r);
		if (r < 0)
			return r;
		if (sqlite3_column_type(stmt, 0) != SQLITE_NULL &&
		    !(key = strdup((const char *)sqlite3_column_text(stmt, 0))))
			return -ENOMEM;
		trashed = sqlite3_column_int(stmt, 1);
		task_keep(st, gen, task_id, key, trashed, 0);
	}
	*ret_key = key;
	if (ret_trashed)
		*ret_trashed = trashed;
	return 0;
}

int store_history_item(struct store *st, const char *task_id, char **ret_json, size_t *ret_len,
		       int64_t *ret_mtime_ns)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	int r;

	/*
	 * "+e.seq": ordered by the index of current elements, SQLite would walk
	 * every history item to find the key's; by the key's index it finds it
	 * (or the few of a key written twice) at once.
	 */
	r = store_row_args(st, "SELECT e.json, d.mtime_ns FROM elems e JOIN docs d ON d.id = e.doc_id "
			       "WHERE d.path = 'state/taskHistory.json' AND e.key = ?1 AND e.rev_to IS NULL "
			       "ORDER BY +e.seq LIMIT 1",
			   STORE_TEXTS(task_id), NULL, 0, "cannot read a history item", &stmt);
	if (r < 0 || (r = dup_bytes(stmt, 0, ret_json, ret_len)) < 0)
		return r;
	if (ret_mtime_ns)
		*ret_mtime_ns = sqlite3_column_int64(stmt, 1);
	return 0;
}

int store_history_render_ws(struct store *st, const char *ws_key, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			    int64_t *ret_rev)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL, *doc = NULL;
	_cleanup_sb_ struct sb out = SB_INIT;
	int64_t mtime = 0, rev = 0;
	size_t n = 0;
	int r, rc;

	r = store_prepare(st, "SELECT mtime_ns, rev FROM docs WHERE path = 'state/taskHistory.json' AND present", &doc);
	if (r < 0)
		return r;
	if ((rc = sqlite3_step(doc)) == SQLITE_ROW) {
		mtime = sqlite3_column_int64(doc, 0);
		rev = sqlite3_column_int64(doc, 1);
	} else if (rc != SQLITE_DONE) {
		return store_fail(st, rc, "cannot find taskHistory.json");
	}
	/*
	 * A workspace's items: from its tasks (tasks_workspace) to their items
	 * by key (elems_key), in this order (CROSS JOIN), then sorted. In the
	 * order of the history's items, SQLite would walk all of them: a
	 * `stat` in a workspace's folder cost time that grew with the history
	 * (4× at 50,000 tasks against 10,000). The tasks of no workspace have no
	 * index to start from: those walk the history.
	 */
	r = store_prepare(st,
			  ws_key ? "SELECT e.json FROM workspaces w CROSS JOIN tasks t CROSS JOIN elems e "
				   "WHERE w.key = ?1 AND t.workspace_id = w.id AND t.trashed_ns IS NULL "
				   "AND e.doc_id = (SELECT id FROM docs WHERE path = 'state/taskHistory.json') "
				   "AND e.key = t.id AND e.rev_to IS NULL ORDER BY e.seq"
				 : "SELECT e.json FROM elems e JOIN docs d ON d.id = e.doc_id JOIN tasks t ON t.id = e.key "
				   "LEFT JOIN workspaces w ON w.id = t.workspace_id "
				   "WHERE d.path = 'state/taskHistory.json' AND e.rev_to IS NULL AND t.trashed_ns IS NULL "
				   "AND w.id IS NULL ORDER BY e.seq",
			  &stmt);
	if (r < 0)
		return r;
	if (ws_key)
		sqlite3_bind_text(stmt, 1, ws_key, -1, SQLITE_STATIC);
	r = sb_add(&out, "[", 1);
	while (r == 0 && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (n++ && (r = sb_add(&out, ",", 1)) < 0)
			break;
		r = sb_add(&out, sqlite3_column_blob(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0));
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = store_fail(st, rc, "cannot read history items");
	if (r == 0)
		r = sb_add(&out, "]", 1);
	if (r < 0)
		return r;
	*ret = sb_detach(&out, ret_len);
	if (ret_mtime_ns)
		*ret_mtime_ns = mtime;
	if (ret_rev)
		*ret_rev = rev;
	return *ret ? 0 : -ENOMEM;
}

struct ckpt_row {
	int64_t seq, ts, api_index, range_start, range_end;
	char hash[48];
};

/* A conversationHistoryDeletedRange, [start, end] with end >= 0, from the JSON at j[a..b); false if none. */
static bool deleted_range(const char *j, size_t a, size_t b, int64_t *ret_start, int64_t *ret_end)
{
	char buf[64];
	long long x, y;
	char close;

	if (b - a >= sizeof(buf) || j[a] != '[')
		return false;
	memcpy(buf, j + a, b - a);
	buf[b - a] = '\0';
	if (sscanf(buf, "[ %lld , %lld %c", &x, &y, &close) != 3 || close != ']' || y < 0)
		return false;
	*ret_start = x;
	*ret_end = y;
	return true;
}

int store_checkpoints(struct store *st, const char *task_id, store_checkpoint_fn fn, void *ctx)
{
	struct ckpt_row *v = NULL;
	size_t n = 0, alloc = 0;
	char path[96];
	int r = 0, rc;

	snprintf(path, sizeof(path), "tasks/%s/ui_messages.json", task_id);
	{
		STORE_LOCK(st);
		_cleanup_stmt_ sqlite3_stmt *stmt = NULL;

		r = store_prepare(st, "SELECT e.seq, e.json FROM elems e JOIN docs d ON d.id = e.doc_id "
				      "WHERE d.path = ?1 AND d.present AND e.rev_to IS NULL "
				      "AND instr(e.json, '\"lastCheckpointHash\"') > 0 ORDER BY e.seq", &stmt);
		if (r < 0)
			return r;
		sqlite3_bind_text(stmt, 1, path, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			const char *j = (const char *)sqlite3_column_text(stmt, 1);
			size_t jlen = (size_t)sqlite3_column_bytes(stmt, 1), a, b;
			struct ckpt_row c = { .seq = sqlite3_column_int64(stmt, 0), .api_index = -1, .range_end = -1 };
			long long x;
			bool seen = false;

			if (json_object_member(j, jlen, "lastCheckpointHash", &a, &b) < 0 || b - a < 3 || j[a] != '"' ||
			    b - a - 2 >= sizeof(c.hash))
				continue;
			memcpy(c.hash, j + a + 1, b - a - 2);
			c.hash[b - a - 2] = '\0';
			if (strspn(c.hash, "0123456789abcdef") != strlen(c.hash))
				continue; /* not a commit hash */
			for (size_t i = 0; i < n && !seen; i++)
				seen = strcmp(v[i].hash, c.hash) == 0;
			if (seen)
				continue;
			if (json_object_member(j, jlen, "ts", &a, &b) == 0 && json_to_int64(j + a, b - a, &x) == 0)
				c.ts = x;
			if (json_object_member(j, jlen, "conversationHistoryIndex", &a, &b) == 0 &&
			    json_to_int64(j + a, b - a, &x) == 0)
				c.api_index = x;
			if (json_object_member(j, jlen, "conversationHistoryDeletedRange", &a, &b) == 0 &&
			    !deleted_range(j, a, b, &c.range_start, &c.range_end))
				c.range_end = -1;
			if ((r = ARRAY_GROW(v, n, alloc, 16)) < 0)
				break;
			v[n++] = c;
		}
		if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
			r = store_fail(st, rc, "cannot read checkpoints");
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct store_checkpoint c = { v[i].seq, v[i].ts, v[i].hash, v[i].api_index, v[i].range_start,
					      v[i].range_end };

		r = fn(ctx, &c);
	}
	free(v);
	return r;
}

int store_workspace_path(struct store *st, const char *key, char **ret_path)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	char *k, *path;
	int r;

	if (st->ws_path_key && strcmp(st->ws_path_key, key) == 0) {
		*ret_path = strdup(st->ws_path);
		return *ret_path ? 0 : -ENOMEM;
	}
	r = store_row_args(st, "SELECT path FROM workspaces WHERE key = ?1", STORE_TEXTS(key), NULL, 0,
			   "cannot look up a workspace", &stmt);
	if (r < 0)
		return r;
	*ret_path = strdup((const char *)sqlite3_column_text(stmt, 0));
	if (!*ret_path)
		return -ENOMEM;
	if (st->batch_depth > 0) /* the row may yet roll back */
		return 0;
	k = strdup(key);
	path = strdup(*ret_path);
	if (!k || !path) { /* only the copy is lost */
		free(k);
		free(path);
		return 0;
	}
	free(st->ws_path_key);
	free(st->ws_path);
	st->ws_path_key = k;
	st->ws_path = path;
	return 0;
}

/* One query for a task's versions, however many: the one numbering (STORE_NUMBERED_VERSIONS). */
int store_versions(struct store *st, const char *const *paths, size_t npaths, struct store_task_version **ret_v,
		   size_t *ret_n)
{
	STORE_LOCK(st);
	_cleanup_stmt_ sqlite3_stmt *stmt = NULL;
	struct store_task_version *v = NULL;
	size_t n = 0, alloc = 0;
	int r, rc;

	r = store_prepare(st, "WITH " STORE_NUMBERED_VERSIONS " SELECT id, time_ns FROM numbered ORDER BY n", &stmt);
	if (r < 0)
		return r;
	if ((r = store_bind_version_docs(stmt, paths, npaths)) < 0)
		return r;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (ARRAY_GROW(v, n, alloc, 64) < 0) {
			free(v);
			return -ENOMEM;
		}
		v[n].rev = sqlite3_column_int64(stmt, 0);
		v[n].time_ns = sqlite3_column_int64(stmt, 1);
		n++;
	}
	if (rc != SQLITE_DONE) {
		free(v);
		return store_fail(st, rc, "cannot list a task's versions");
	}
	*ret_v = v;
	*ret_n = n;
	return 0;
}
