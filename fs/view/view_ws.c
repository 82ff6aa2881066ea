/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_ws.c: the view's kinds down to a task's folder, one row each:
 * workspaces/ (VIEW_ROOT), a workspace's folder (VIEW_WS, "unknown" for
 * the tasks of none), its workspace.json and taskHistory.json, its tasks/,
 * the trash (workspaces/.trash/), and a name the view does not have
 * (VIEW_MISSING).
 *
 * workspaces/ lends its names to the client: Cline CLI 2.x keeps
 * workspaces/<hash>/ there, 3.x workspaces/chat/. What the view does not
 * show there is the client's, made in the backing tree's workspaces/
 * (client_names, made_in); the client's own entry of a name the view shows
 * wins, and the view's then answers to <name>.view (view.c). A name any
 * other folder of the view does not have is refused (-EPERM, or -EINVAL
 * for a folder in tasks/ whose name is no task id: only tasks are made
 * there, by mkdir of a free task slot, view_task.c).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "fs/ops/route.h"
#include "fs/view/view.h"
#include "store/json.h"
#include "store/store_view.h"
#include "store/util.h"

struct last_ctx {
	int64_t last;
};

static int ws_last(void *ctx, const struct store_workspace *ws)
{
	((struct last_ctx *)ctx)->last = ws->last_ns;
	return 0;
}

static int task_last(void *ctx, const char *id, int64_t mtime)
{
	struct last_ctx *c = ctx;

	if (mtime > c->last)
		c->last = mtime;
	return 0;
}

/* ---- workspaces/ -------------------------------------------------------------------- */

static int root_getattr(const struct route *rt, struct stat *st)
{
	struct fs *fs = rt->fs;
	struct last_ctx lc = { 0 };
	const char *leaf;
	int dfd, r;

	/* The client's own workspaces/ folder, if it has one, lends its attributes. */
	dfd = plain_open_parent(fs, rt->rel, &leaf);
	if (dfd >= 0) {
		r = fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW);
		close(dfd);
		if (r == 0)
			return 0;
	}
	/* the last change of what it lists: stable while nothing changes */
	r = store_workspace_last(fs->store, &lc.last);
	if (r < 0)
		return r;
	view_stat_init(fs, rt->rel, st);
	view_stat_dir(fs, st, 0700, lc.last);
	return 0;
}

struct list_ctx {
	struct fs *fs;
	op_list_fn fn;
	void *ctx;
};

static int list_ws(void *ctx, const struct store_workspace *ws)
{
	struct list_ctx *c = ctx;
	char name[80];

	view_ws_name(ws->path, ws->key, name, sizeof(name));
	return view_list_top(c->fs, name, S_IFDIR, c->fn, c->ctx);
}

static int count_task(void *ctx, const char *id, int64_t mtime)
{
	(*(int *)ctx)++;
	return 0;
}

/* The client's entries of its own workspaces/ (or "." and ".."), then the view's. */
static int root_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct fs *fs = rt->fs;
	struct list_ctx c = { fs, fn, ctx };
	int r = path_list_backing(rt->fs, rt->rel, NULL, fn, ctx), n = 0;

	if (r == -ENOENT)
		r = view_list_dots(fn, ctx);
	if (r == 0)
		r = store_workspace_list(fs->store, list_ws, &c);
	if (r == 0 && store_task_list(fs->store, NULL, false, count_task, &n) == 0 && n > 0)
		r = view_list_top(fs, "unknown", S_IFDIR, fn, ctx);
	return r < 0 ? r : view_list_named(fs, rt, fn, ctx);
}

/* What the client makes in workspaces/ is its own: in the backing tree's workspaces/, made first. */
static int root_made_in(const struct route *rt, const char *what)
{
	return path_client_folder(rt);
}

/* ---- a workspace's folder and its tasks/ ---------------------------------------------- */

/* workspaces/<name>-<key>, or workspaces/unknown. */
static int ws_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	const char *dash = strrchr(at->name, '-');
	_cleanup_free_ char *wpath = NULL;
	char name[80];
	int r;

	if (strcmp(at->name, "unknown") == 0) {
		vp->unknown = true;
		return 0;
	}
	if (!dash || !store_is_task_id(dash + 1) || strlen(dash + 1) >= sizeof(vp->key))
		return -ENOENT;
	memcpy(vp->key, dash + 1, strlen(dash + 1) + 1);
	r = store_workspace_path(fs->store, vp->key, &wpath);
	if (r < 0)
		return r;
	view_ws_name(wpath, vp->key, name, sizeof(name));
	return strcmp(name, at->name) == 0 ? 0 : -ENOENT;
}

/* The last activity of a workspace's tasks (or of those of none): its folder's and tasks/'s time. */
static int ws_getattr(const struct route *rt, struct stat *st)
{
	struct fs *fs = rt->fs;
	struct last_ctx lc = { 0 };
	int r;

	if (rt->vp.unknown)
		r = store_task_list(fs->store, NULL, false, task_last, &lc);
	else
		r = store_workspace_get(fs->store, rt->vp.key, ws_last, &lc);
	if (r < 0 && r != -ENOENT)
		return r;
	view_stat_init(fs, rt->rel, st);
	view_stat_dir(fs, st, 0700, lc.last);
	return 0;
}

static int ws_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : view_list_named(rt->fs, rt, fn, ctx);
}

static int list_task(void *ctx, const char *id, int64_t mtime)
{
	struct list_ctx *c = ctx;

	return c->fn(c->ctx, id, S_IFDIR, 0);
}

static int tasks_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct fs *fs = rt->fs;
	struct list_ctx c = { fs, fn, ctx };
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : store_task_list(fs->store, rt->vp.unknown ? NULL : rt->vp.key, false, list_task, &c);
}

/* Only tasks are made in tasks/, by mkdir of a free task id (view_task.c). */
static int tasks_made_in(const struct route *rt, const char *what)
{
	if (strcmp(what, "folder") != 0)
		return path_made_in_refused(rt, what);
	log_warn("refusing to make the task '%s': '%s' is not a task id (digits)", rt->rel, strrchr(rt->rel, '/') + 1);
	return -EINVAL;
}

/* ---- a workspace's files -------------------------------------------------------------- */

static int render_ws(void *ctx, const struct store_workspace *ws)
{
	cJSON *o = ctx;
	char t1[64], t2[64];

	if (!cJSON_AddStringToObject(o, "path", ws->path) || !cJSON_AddStringToObject(o, "key", ws->key) ||
	    !cJSON_AddNumberToObject(o, "tasks", (double)ws->ntasks) ||
	    !cJSON_AddStringToObject(o, "first_activity", iso_time(ws->first_ns, t1, sizeof(t1))) ||
	    !cJSON_AddStringToObject(o, "last_activity", iso_time(ws->last_ns, t2, sizeof(t2))))
		return -ENOMEM;
	return 0;
}

/* workspace.json: path, key, task count, first and last activity. */
static int ws_json_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns, int64_t *ret_rev)
{
	struct fs *fs = rt->fs;
	cJSON *o = cJSON_CreateObject();
	struct last_ctx lc = { 0 };
	int r;

	if (!o)
		return -ENOMEM;
	r = store_workspace_get(fs->store, rt->vp.key, render_ws, o);
	if (r == 0)
		r = store_workspace_get(fs->store, rt->vp.key, ws_last, &lc);
	if (r == 0)
		r = json_print_pretty(o, ret, ret_len);
	cJSON_Delete(o);
	if (r == 0)
		*ret_mtime_ns = lc.last;
	return r;
}

/* The workspace's items of state/taskHistory.json. */
static int history_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			  int64_t *ret_rev)
{
	return store_history_render_ws(rt->fs->store, rt->vp.unknown ? NULL : rt->vp.key, ret, ret_len,
				       ret_mtime_ns, ret_rev);
}

static int ws_json_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	return vp->unknown ? -ENOENT : 0; /* the tasks of no workspace have no workspace.json */
}

static int ws_json_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, ws_json_render, 0400);
}

static int ws_json_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_text(rt, fi, ws_json_render, false);
}

static int history_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, history_render, 0600);
}

static int history_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_text(rt, fi, history_render, true);
}

/* ---- the trash ------------------------------------------------------------------------- */

/* The last time a task went to the trash: its folder's time. */
static int trash_getattr(const struct route *rt, struct stat *st)
{
	struct fs *fs = rt->fs;
	struct last_ctx lc = { 0 };
	int r = store_task_list(fs->store, NULL, true, task_last, &lc);

	if (r < 0)
		return r;
	view_stat_init(fs, rt->rel, st);
	view_stat_dir(fs, st, 0700, lc.last);
	return 0;
}

static int trash_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct fs *fs = rt->fs;
	struct list_ctx c = { fs, fn, ctx };
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : store_task_list(fs->store, NULL, true, list_task, &c);
}

/* ---- the rows ---------------------------------------------------------------------------- */

/* The view's folders: kept a second (every path walk checks their permissions); no handles. */
#define FOLDER_CACHE(keep, listing)                                                                     \
	{ .entry = keep, .attr = keep, .pages = PAGES_OPEN, .volatile_list = listing }
/* A generated file of a workspace: asked at every stat, as any save of the history may change it. */
#define TEXT_CACHE { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_OPEN }

const struct path_ops view_root = {
	.name = "view-root",
	.getattr = root_getattr,
	.list = root_list,
	.setattr = path_plain_setattr, /* the client's own workspaces/, if it has one */
	.made_in = root_made_in,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.client_names = true,
	.cache = FOLDER_CACHE(KEEP_BRIEF, true),
};

static const struct view_shape ws_shape = { .in = VIEW_ROOT, .match = ws_match, .type = S_IFDIR };

const struct path_ops view_ws = {
	.name = "view-workspace",
	.getattr = ws_getattr,
	.list = ws_list,
	.rename_to = path_top_rename_to,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = FOLDER_CACHE(KEEP_NAMED, true),
	.shape = &ws_shape,
};

static const struct view_shape ws_json_shape = {
	.in = VIEW_WS, .name = "workspace.json", .match = ws_json_match, .listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_ws_json = {
	.name = "view-workspace-json",
	.getattr = ws_json_getattr,
	.open = ws_json_open,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = TEXT_CACHE,
	.shape = &ws_json_shape,
};

static const struct view_shape history_shape = {
	.in = VIEW_WS, .name = "taskHistory.json", .listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_ws_history = {
	.name = "view-workspace-history",
	.getattr = history_getattr,
	.open = history_open,
	.rename_to = path_history_rename_to,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = TEXT_CACHE,
	.shape = &history_shape,
};

static const struct view_shape tasks_shape = {
	.in = VIEW_WS, .name = "tasks", .listed = VIEW_LISTED, .type = S_IFDIR,
};

const struct path_ops view_tasks = {
	.name = "view-tasks",
	.getattr = ws_getattr,
	.list = tasks_list,
	.made_in = tasks_made_in,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = FOLDER_CACHE(KEEP_BRIEF, true),
	.shape = &tasks_shape,
};

static const struct view_shape trash_shape = {
	.in = VIEW_ROOT, .name = ".trash", .listed = VIEW_LISTED, .type = S_IFDIR,
};

const struct path_ops view_trash = {
	.name = "view-trash",
	.getattr = trash_getattr,
	.list = trash_list,
	.rename_to = path_top_rename_to,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = FOLDER_CACHE(KEEP_NAMED, true),
	.shape = &trash_shape,
};

/*
 * A name the view does not have (route->err says why): plain for what the
 * client makes there, if the folder it would be in lets it (route->in,
 * made_in); the rest answers the error (kinds.h).
 */
const struct path_ops view_missing = {
	.name = "view-missing",
	.readlink = path_plain_readlink,
	.setattr = path_plain_setattr,
	.create = path_plain_create,
	.mkdir = path_plain_mkdir,
	.rename_from = path_missing_rename_from,
	.rename_to = path_missing_rename_to,
	.cls = PATH_CLASS_PLAIN,
	.backing = true,
	.cache = { .entry = KEEP_NEVER, .attr = KEEP_NEVER, .pages = PAGES_OPEN },
};
