/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_search.c: search/<query>/ at the mount's root, the tasks a query
 * finds, as folders a file manager, an editor or `cd` can open.
 *
 *   search/                          found by name, not listed (nor is it
 *                                    in the root's listing): grep -r and
 *                                    rsync never walk into it
 *   search/<query>/                  one per query, made by looking it up
 *       results.jsonl                the best hits, `convfs search --json`
 *       <rank>-<taskId>              a symlink to ../../workspaces/<w>/tasks/<taskId>,
 *                                    one a task, the task of the best hit first
 *
 * A query is the folder's name in `convfs search` syntax; a '/' in it
 * (a path) is written %2F, and a '%' %25: every %XX is the byte XX. A
 * query that is not one answers EINVAL, with one line in the log that
 * says why. A client's own `search` at the root wins: these kinds are then
 * not there (view.c, view_parse()).
 *
 * Nothing is kept but what the last query found (tasks_of()), so that a
 * listing's READDIRPLUS, which looks up each of its names, asks the store
 * once: it holds until the store's next commit (store_generation()). The
 * kernel keeps nothing of these for long: their attributes are asked at
 * every use, and a folder's time is the store's last change, so that the
 * listing the kernel keeps goes with any commit that could change it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fs/ops/route.h"
#include "fs/view/view.h"
#include "fs/view/view_search.h"
#include "store/store_search.h"
#include "store/util.h"

/* The most tasks a folder lists, and hits results.jsonl holds: `convfs search` has them all. */
#define FOLDER_TASKS 10000
#define RESULTS_HITS 1000

/* ---- a hit as `convfs search` shows it (also cmd_search.c's) -------------------------------------------- */

int view_search_clean(struct sb *out, const char *s, const char *open, const char *close, size_t max)
{
	size_t chars = 0;
	int r = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && r == 0; p++) {
		if (max && chars == max)
			return sb_adds(out, "…");
		if ((*p & 0xc0) != 0x80)
			chars++;
		if (*p == VIEW_SEARCH_MARK_OPEN[0])
			r = sb_adds(out, open);
		else if (*p == VIEW_SEARCH_MARK_CLOSE[0])
			r = sb_adds(out, close);
		else if (*p < 0x20 || *p == 0x7f)
			r = sb_add(out, "?", 1);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			r = sb_add(out, "?", 1), p++;
		else
			r = sb_add(out, p, 1);
	}
	return r;
}

void view_search_where(struct store *st, const struct store_search_hit *h, char *path, size_t n, char *folder,
		       size_t fn)
{
	if (view_path_of(st, h->doc, h->ws_path, h->ws_key, path, n) < 0)
		snprintf(path, n, "%s", h->doc);
	view_ws_folder(h->ws_path, h->ws_key, folder, fn);
}

static void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}

int view_search_json(struct store *st, const struct store_search_hit *h, const char *prefix, char **ret)
{
	_cleanup_(json_deletep) cJSON *o = cJSON_CreateObject();
	_cleanup_sb_ struct sb snippet = SB_INIT, full = SB_INIT;
	char t[40], path[PATH_MAX], folder[160];
	bool ok;

	view_search_where(st, h, path, sizeof(path), folder, sizeof(folder));
	if (view_search_clean(&snippet, h->snippet, "[", "]", 0) < 0 || sb_addf(&full, "%s%s", prefix, path) < 0)
		return -ENOMEM;
	ok = o && cJSON_AddStringToObject(o, "task", h->task) && cJSON_AddStringToObject(o, "workspace", folder) &&
	     (h->ws_path ? cJSON_AddStringToObject(o, "workspace_path", h->ws_path)
			 : cJSON_AddNullToObject(o, "workspace_path")) &&
	     cJSON_AddStringToObject(o, "title", h->title) &&
	     cJSON_AddStringToObject(o, "time", iso_time(h->time_ms * 1000000, t, sizeof(t))) &&
	     cJSON_AddStringToObject(o, "path", full.buf) && cJSON_AddNumberToObject(o, "line", (double)(h->seq + 1)) &&
	     cJSON_AddStringToObject(o, "snippet", sb_str(&snippet)) && cJSON_AddStringToObject(o, "stream", h->stream) &&
	     (h->role ? cJSON_AddStringToObject(o, "role", h->role) : cJSON_AddNullToObject(o, "role")) &&
	     cJSON_AddNumberToObject(o, "score", h->score) && cJSON_AddStringToObject(o, "doc", h->doc);
	if (!ok || !(*ret = cJSON_PrintUnformatted(o)))
		return -ENOMEM;
	return 0;
}

/* ---- the query of a folder ---------------------------------------------------------------------------- */

static int hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* name with each %XX made the byte XX, into buf (at least as large as name). */
static void unescape(const char *name, char *buf)
{
	size_t n = 0;

	for (const char *p = name; *p; p++) {
		if (p[0] == '%' && hex(p[1]) >= 0 && hex(p[2]) >= 0) {
			buf[n++] = (char)(hex(p[1]) << 4 | hex(p[2]));
			p += 2;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
}

/* search/<query>: the query, checked. */
static int query_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	char err[160];
	int r;

	(void)fs;
	(void)sh;
	unescape(at->name, vp->query);
	if (!vp->query[0]) {
		log_info("search/%s: not a query: it is empty", at->name);
		return -EINVAL;
	}
	r = store_search_query_check(vp->query, err, sizeof(err));
	if (r == -EINVAL)
		log_info("search/%s: not a query: %s", at->name, err);
	else if (r < 0)
		log_err("search/%s: cannot read the query: %s", at->name, strerror(-r));
	return r < 0 ? r : 0;
}

/* ---- what the last query found ------------------------------------------------------------------------- */

struct found {
	char task[72];
	char key[16];
	bool unknown;
};

static struct {
	pthread_mutex_t lock;
	struct fs *fs;
	uint64_t generation;
	char query[NAME_MAX + 1];
	struct found *v;
	size_t n;
} last = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct collect {
	struct found *v;
	size_t n, alloc;
};

static int collect_task(void *ctx, const struct store_search_task *t)
{
	struct collect *c = ctx;
	struct found *f;
	int r;

	if (strlen(t->task) >= sizeof(f->task) || (t->ws_key && strlen(t->ws_key) >= sizeof(f->key)))
		return 0; /* no view folder shows it */
	if ((r = ARRAY_GROW(c->v, c->n, c->alloc, 64)) < 0)
		return r;
	f = &c->v[c->n++];
	*f = (struct found){ .unknown = !t->ws_key };
	snprintf(f->task, sizeof(f->task), "%s", t->task);
	snprintf(f->key, sizeof(f->key), "%s", t->ws_key ? t->ws_key : "");
	return 0;
}

/*
 * Calls fn for each task query finds, in order, with last's lock held (fn
 * must not call the store): the tasks found again if the store changed
 * since, or the query is another.
 */
static int tasks_of(struct fs *fs, const char *query, int (*fn)(void *ctx, size_t rank, const struct found *f),
		    void *ctx)
{
	uint64_t gen = store_generation(fs->store);
	struct collect c = { 0 };
	int r = 0;

	pthread_mutex_lock(&last.lock);
	if (last.fs != fs || last.generation != gen || strcmp(last.query, query) != 0) {
		struct store_search_query q = { .text = query, .limit = FOLDER_TASKS };

		/* The store's lock is taken with ours held: never the other way round (fn calls no store). */
		r = store_search_tasks(fs->store, &q, collect_task, &c);
		if (r >= 0) {
			free(last.v);
			last.v = TAKE_PTR(c.v);
			last.n = c.n;
			last.fs = fs;
			last.generation = gen;
			snprintf(last.query, sizeof(last.query), "%s", query);
			r = 0;
		}
		free(c.v);
	}
	for (size_t i = 0; i < last.n && r == 0; i++)
		r = fn(ctx, i + 1, &last.v[i]);
	pthread_mutex_unlock(&last.lock);
	return r;
}

/* The name of the link to task f at rank, into buf. */
static void link_name(size_t rank, const struct found *f, char *buf, size_t n)
{
	snprintf(buf, n, "%03zu-%s", rank, f->task);
}

/* ---- search/ -------------------------------------------------------------------------------------------- */

static int search_getattr(const struct route *rt, struct stat *st)
{
	int64_t last_ns = 0;
	int r = store_search_last(rt->fs->store, &last_ns);

	if (r < 0)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0500, last_ns);
	return 0;
}

/* Its queries are found by their names: nothing is listed. */
static int search_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	return view_list_dots(fn, ctx);
}

/* The top folder of its own (view_parse()): no shape. */
const struct path_ops view_search = {
	.name = "view-search",
	.getattr = search_getattr,
	.list = search_list,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .pages = PAGES_OPEN },
};

/* ---- search/<query>/ ------------------------------------------------------------------------------------ */

struct list_ctx {
	op_list_fn fn;
	void *ctx;
};

static int list_link(void *ctx, size_t rank, const struct found *f)
{
	struct list_ctx *c = ctx;
	char name[96];

	link_name(rank, f, name, sizeof(name));
	return c->fn(c->ctx, name, S_IFLNK, 0);
}

static int query_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct list_ctx c = { fn, ctx };
	int r = view_list_dots(fn, ctx);

	if (r == 0)
		r = view_list_named(rt->fs, rt, fn, ctx);
	return r < 0 ? r : tasks_of(rt->fs, rt->vp.query, list_link, &c);
}

static const struct view_shape query_shape = { .in = VIEW_SEARCH, .match = query_match, .type = S_IFDIR };

/* Its time is the store's last change: the kernel drops the listing it keeps when it moves. */
const struct path_ops view_search_query = {
	.name = "view-search-query",
	.getattr = search_getattr,
	.list = query_list,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_NEVER, .attr = KEEP_NEVER, .pages = PAGES_OPEN },
	.shape = &query_shape,
};

/* ---- results.jsonl -------------------------------------------------------------------------------------- */

struct results {
	struct store *st;
	struct sb out;
};

static int add_hit(void *ctx, const struct store_search_hit *h)
{
	struct results *res = ctx;
	_cleanup_free_ char *line = NULL;
	int r = view_search_json(res->st, h, "", &line);

	return r < 0 ? r : sb_addf(&res->out, "%s\n", line);
}

static int results_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			  int64_t *ret_rev)
{
	struct store_search_query q = { .text = rt->vp.query, .limit = RESULTS_HITS,
					.mark_open = VIEW_SEARCH_MARK_OPEN, .mark_close = VIEW_SEARCH_MARK_CLOSE };
	struct results res = { .st = rt->fs->store, .out = SB_INIT };
	int r;

	(void)ret_rev;
	r = store_search_last(rt->fs->store, ret_mtime_ns);
	if (r == 0)
		r = store_search(rt->fs->store, &q, add_hit, &res);
	if (r >= 0)
		r = sb_grow(&res.out, 1); /* a buffer even with no hit */
	if (r < 0 || !(*ret = sb_detach(&res.out, ret_len))) {
		sb_release(&res.out);
		return r < 0 ? r : -ENOMEM;
	}
	return 0;
}

static int results_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, results_render, 0400);
}

static int results_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_text(rt, fi, results_render, false);
}

static const struct view_shape results_shape = {
	.in = VIEW_SEARCH_QUERY, .name = "results.jsonl", .listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_search_results = {
	.name = "view-search-results",
	.getattr = results_getattr,
	.open = results_open,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_NEVER, .attr = KEEP_NEVER, .pages = PAGES_DIRECT },
	.shape = &results_shape,
};

/* ---- <rank>-<taskId> ------------------------------------------------------------------------------------ */

struct hit_find {
	size_t rank;
	const char *task;
	struct view_path *vp;
};

static int hit_is(void *ctx, size_t rank, const struct found *f)
{
	struct hit_find *h = ctx;

	if (rank != h->rank || strcmp(f->task, h->task) != 0)
		return 0;
	snprintf(h->vp->task, sizeof(h->vp->task), "%s", f->task);
	snprintf(h->vp->key, sizeof(h->vp->key), "%s", f->key);
	h->vp->unknown = f->unknown;
	return 1;
}

/* <rank>-<taskId>: the task at that rank of the query's. */
static int hit_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	struct hit_find h = { .vp = vp };
	char *end;
	unsigned long rank;

	(void)sh;
	if (at->name[0] < '0' || at->name[0] > '9')
		return -ENOENT;
	rank = strtoul(at->name, &end, 10);
	if (*end != '-' || rank == 0 || !store_is_conversation_id(end + 1))
		return -ENOENT;
	h.rank = rank;
	h.task = end + 1;
	return tasks_of(fs, vp->query, hit_is, &h) > 0 ? 0 : -ENOENT;
}

/* ../../workspaces/<w>/tasks/<taskId>, relative: it holds wherever the mount is. */
static int hit_target(const struct route *rt, char *buf, size_t n)
{
	char ws[96];
	int r = view_ws_name_of(rt->fs, rt->vp.unknown ? NULL : rt->vp.key, ws, sizeof(ws));

	if (r < 0)
		return r;
	return (size_t)snprintf(buf, n, "../../workspaces/%s/tasks/%s", ws, rt->vp.task) < n ? 0 : -ENAMETOOLONG;
}

static int hit_getattr(const struct route *rt, struct stat *st)
{
	char target[PATH_MAX];
	int64_t last_ns = 0;
	int r = hit_target(rt, target, sizeof(target));

	if (r == 0)
		r = store_search_last(rt->fs->store, &last_ns);
	if (r < 0)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, 0777, (off_t)strlen(target), last_ns);
	st->st_mode = S_IFLNK | 0777;
	return 0;
}

static int hit_readlink(const struct route *rt, char *buf, size_t size)
{
	return hit_target(rt, buf, size);
}

static const struct view_shape hit_shape = { .in = VIEW_SEARCH_QUERY, .match = hit_match, .type = S_IFLNK };

const struct path_ops view_search_hit = {
	.name = "view-search-hit",
	.getattr = hit_getattr,
	.readlink = hit_readlink,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_NEVER, .attr = KEEP_NEVER, .pages = PAGES_OPEN },
	.shape = &hit_shape,
};
