/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view.c: names and attributes of the workspaces view (see view.h).
 *
 * Nothing here is stored: the view is computed from the store on each call
 * (the workspaces and tasks tables, the docs), so it can never disagree with
 * the compat tree. A workspace is named after the basename of its path, made
 * safe, and its key (Cline's checkpoint hash of the path): the key makes the
 * name unique and ties it to checkpoints/<key>. Inode numbers of view entries
 * are a hash of their path, so they are the same across remounts.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs/kernel/kcache.h"
#include "fs/view/shadow.h"
#include "fs/view/view.h"
#include "fs/view/view_ckpt.h"
#include "fs/view/view_version.h"
#include "store/json.h"
#include "store/store_view.h"
#include "store/util.h"

#define VIEW_INO_BIT (UINT64_C(1) << 63)

/*
 * The files of a task's folder, and the compat file behind each: for a
 * Cline task in tasks/<id>/, for a CLI 3.x session in sessions/<id>/ after
 * the session's id. A session has no ui stream and no metadata; its task.json
 * is its manifest. Its subagents' conversations, sessions/<id>/<stem>.messages.json,
 * show beside them as <stem>.messages.jsonl.
 */
static const struct {
	const char *name;
	enum view_kind kind;
	const char *doc;         /* in tasks/<id>/; NULL: none (task.json: the history item) */
	const char *session_doc; /* in sessions/<id>/, after "<id>"; NULL: none */
} task_files[] = {
	{ "messages.jsonl", VIEW_MESSAGES, "api_conversation_history.json", ".messages.json" },
	{ "ui_messages.jsonl", VIEW_UI, "ui_messages.json", NULL },
	{ "task.json", VIEW_TASK_JSON, NULL, ".json" },
	{ "metadata.json", VIEW_METADATA, "task_metadata.json", NULL },
};

#define SUBAGENT_SUFFIX ".messages.jsonl"

/*
 * The compat doc behind task file i of conversation task, into buf ("" for
 * a generated file). -ENOENT if that kind of conversation has no such file.
 */
static int task_doc(const char *task, size_t i, char *buf, size_t n)
{
	bool session = store_is_session_id(task);
	const char *doc = session ? task_files[i].session_doc : task_files[i].doc;

	buf[0] = '\0';
	if (session && !doc)
		return -ENOENT;
	if (doc && (size_t)snprintf(buf, n, session ? "sessions/%s/%s%s" : "tasks/%s/%s", task,
				    session ? task : doc, doc) >= n)
		return -ENAMETOOLONG;
	return 0;
}

int view_task_doc(const char *task, enum view_kind kind, char *buf, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(task_files); i++)
		if (task_files[i].kind == kind && task_files[i].doc)
			return task_doc(task, i, buf, n);
	return -ENOENT;
}

/* A subagent's conversation in the view, <stem>.messages.jsonl: its doc into buf, or -ENOENT. */
static int subagent_doc(const char *task, const char *name, char *buf, size_t n)
{
	size_t len = strlen(name), sl = strlen(SUBAGENT_SUFFIX);

	if (!store_is_session_id(task) || len <= sl || strcmp(name + len - sl, SUBAGENT_SUFFIX) != 0 ||
	    (size_t)snprintf(buf, n, "sessions/%s/%.*s.messages.json", task, (int)(len - sl), name) >= n)
		return -ENOENT;
	return store_path_kind(buf) == STORE_PATH_ARRAY ? 0 : -ENOENT;
}

/* basename of path, with anything but [A-Za-z0-9._-] made '_', then "-key". */
static void ws_name(const char *path, const char *key, char *buf, size_t bufsz)
{
	const char *base = strrchr(path, '/');
	size_t n = 0;

	base = base && base[1] ? base + 1 : path;
	for (const char *p = base; *p && n < 48; p++) {
		char c = *p;

		buf[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			    c == '_' || c == '-') ? c : '_';
	}
	if (n == 0 || buf[0] == '.')
		buf[n ? 0 : n++] = '_';
	snprintf(buf + n, bufsz - n, "-%s", key);
}

/* True if the client has an entry of its own at workspaces/<name>. */
static bool client_has(struct fs *fs, const char *name)
{
	char rel[320];
	const char *leaf;
	struct stat st;
	int dfd;
	bool has;

	if (snprintf(rel, sizeof(rel), "workspaces/%s", name) >= (int)sizeof(rel))
		return false;
	dfd = plain_open_parent(fs, rel, &leaf);
	if (dfd < 0)
		return false;
	has = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(dfd);
	return has;
}

/* Logs a clash of names once per name and mount (the names kept are few). */
static void clash_log_once(const char *name)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t said[64];
	static size_t nsaid;
	uint64_t h = hash64(name, strlen(name));
	bool seen = false;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nsaid && !seen; i++)
		seen = said[i] == h;
	if (!seen && nsaid < ARRAY_SIZE(said))
		said[nsaid++] = h;
	pthread_mutex_unlock(&lock);
	if (!seen)
		log_info("the client has its own 'workspaces/%s': the view shows its folder of that name as '%s%s'",
			 name, name, VIEW_CLASH_SUFFIX);
}

/*
 * Lists a top-level folder of the view under the name it has now: its own,
 * or with VIEW_CLASH_SUFFIX while the client has an entry of that name.
 */
static int list_top(struct fs *fs, const char *name, op_list_fn fn, void *ctx)
{
	char alt[NAME_MAX + 1];

	if (!client_has(fs, name))
		return fn(ctx, name, S_IFDIR, 0);
	if (snprintf(alt, sizeof(alt), "%s%s", name, VIEW_CLASH_SUFFIX) >= (int)sizeof(alt) || client_has(fs, alt))
		return 0; /* no name left for it: the client's entries are shown, not the view's */
	clash_log_once(name);
	return fn(ctx, alt, S_IFDIR, 0);
}

/*
 * The view's own name of the top-level entry name: name itself unless the
 * client has it (then it is the client's: -ENOENT here), or name without
 * VIEW_CLASH_SUFFIX where the client has taken the plain name.
 */
static int top_name(struct fs *fs, char *name)
{
	size_t n = strlen(name), sl = strlen(VIEW_CLASH_SUFFIX);

	if (client_has(fs, name))
		return -ENOENT;
	if (n > sl && strcmp(name + n - sl, VIEW_CLASH_SUFFIX) == 0) {
		name[n - sl] = '\0';
		if (client_has(fs, name))
			return 0;
		name[n - sl] = VIEW_CLASH_SUFFIX[0]; /* the view shows it under its own name */
		return -ENOENT;
	}
	return 0;
}

/*
 * A file of a task's folder (vp->task, vp->trash set): its kind and doc.
 * The trash has no task.json: the history item went with the task.
 */
static int task_file_parse(struct view_path *vp, const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(task_files); i++)
		if (strcmp(name, task_files[i].name) == 0 && !(vp->trash && task_files[i].kind == VIEW_TASK_JSON))
			break;
	if (i == ARRAY_SIZE(task_files)) {
		if (subagent_doc(vp->task, name, vp->doc, sizeof(vp->doc)) < 0)
			return -ENOENT;
		vp->kind = VIEW_MESSAGES;
		return 0;
	}
	vp->kind = task_files[i].kind;
	return task_doc(vp->task, i, vp->doc, sizeof(vp->doc));
}

int view_doc_of(const char *rel, char *buf, size_t n)
{
	struct view_path vp = { 0 };
	char comp[4][256];
	size_t nc = 0;
	const char *p;

	if (store_path_kind(rel) == STORE_PATH_ARRAY || store_path_kind(rel) == STORE_PATH_WHOLE)
		return (size_t)snprintf(buf, n, "%s", rel) < n ? 0 : -ENAMETOOLONG;
	if (strncmp(rel, "workspaces/", 11) != 0)
		return -ENOENT;
	for (p = rel + 11; *p && nc < ARRAY_SIZE(comp); nc++) {
		size_t len = strcspn(p, "/");

		if (len >= sizeof(comp[0]))
			return -ENOENT;
		memcpy(comp[nc], p, len);
		comp[nc][len] = '\0';
		p += len + (p[len] == '/');
	}
	if (*p)
		return -ENOENT;
	if (nc == 3 && strcmp(comp[0], ".trash") == 0)
		vp.trash = true;
	else if (nc != 4 || strcmp(comp[1], "tasks") != 0)
		return -ENOENT;
	if (!store_is_conversation_id(comp[nc - 2]) || strlen(comp[nc - 2]) >= sizeof(vp.task))
		return -ENOENT;
	memcpy(vp.task, comp[nc - 2], strlen(comp[nc - 2]) + 1);
	if (task_file_parse(&vp, comp[nc - 1]) < 0 || !vp.doc[0])
		return -ENOENT;
	return (size_t)snprintf(buf, n, "%s", vp.doc) < n ? 0 : -ENAMETOOLONG;
}

bool view_is_task_slot(const struct view_path *vp)
{
	return vp->kind == VIEW_TASK || vp->kind == VIEW_TASKS;
}

int view_parse(struct fs *fs, const char *rel, struct view_path *ret)
{
	char comp[6][256];
	size_t n = 0;
	const char *p = rel;
	struct view_path vp = { 0 };
	int r;

	*ret = vp;
	if (strncmp(rel, "workspaces", 10) != 0 || (rel[10] != '\0' && rel[10] != '/'))
		return 0;
	{
		const char *rest, *slash;
		char name[256];

		if (ckpt_cache_hit(fs, rel, &vp, &rest)) {
			slash = strchr(rest, '/');
			if ((size_t)(slash ? slash - rest : (ptrdiff_t)strlen(rest)) >= sizeof(name))
				return -ENAMETOOLONG;
			memcpy(name, rest, slash ? (size_t)(slash - rest) : strlen(rest));
			name[slash ? (size_t)(slash - rest) : strlen(rest)] = '\0';
			r = ckpt_file_parse(&vp, name, slash ? slash + 1 : "");
			if (r == 0)
				*ret = vp;
			return r;
		}
	}
	if (rel[10] == '\0') {
		ret->kind = VIEW_ROOT;
		return 0;
	}
	for (p = rel + 11; *p && n < ARRAY_SIZE(comp); n++) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len >= sizeof(comp[0]))
			return -ENAMETOOLONG;
		memcpy(comp[n], p, len);
		comp[n][len] = '\0';
		p = slash ? slash + 1 : p + len;
	}
	if (*p && !(n == 6 && strcmp(comp[3], "checkpoints") == 0 && strcmp(comp[5], "files") == 0))
		return -ENOENT; /* deeper than any view path */
	if (*p && strlen(p) >= sizeof(vp.sub))
		return -ENAMETOOLONG;
	if (top_name(fs, comp[0]) < 0)
		return client_has(fs, comp[0]) ? 0 : -ENOENT; /* the client's own: plain */
	if (strcmp(comp[0], ".trash") == 0) {
		vp.trash = true;
		vp.kind = VIEW_TRASH;
		if (n >= 2) {
			bool trashed = false;
			char *key = NULL;

			if (n > 3 || !store_is_conversation_id(comp[1]))
				return -ENOENT;
			r = store_task_workspace(fs->store, comp[1], &key, &trashed);
			free(key);
			if (r < 0 || !trashed)
				return r < 0 ? r : -ENOENT;
			memcpy(vp.task, comp[1], strlen(comp[1]) + 1); /* a task id: at most 32 digits */
			vp.kind = VIEW_TASK;
		}
		/* A trashed task's conversation, read-only: the last version of each doc. */
		if (n == 3 && (r = task_file_parse(&vp, comp[2])) < 0)
			return r;
		*ret = vp;
		return 0;
	}
	if (strcmp(comp[0], "unknown") == 0) {
		vp.unknown = true;
	} else {
		const char *dash = strrchr(comp[0], '-');
		_cleanup_free_ char *wpath = NULL;
		char name[80];

		if (!dash || !store_is_task_id(dash + 1) || strlen(dash + 1) >= sizeof(vp.key))
			return -ENOENT;
		memcpy(vp.key, dash + 1, strlen(dash + 1) + 1);
		r = store_workspace_path(fs->store, vp.key, &wpath);
		if (r < 0)
			return r;
		ws_name(wpath, vp.key, name, sizeof(name));
		if (strcmp(name, comp[0]) != 0)
			return -ENOENT;
	}
	vp.kind = VIEW_WS;
	if (n >= 2) {
		if (strcmp(comp[1], "workspace.json") == 0 && n == 2 && !vp.unknown)
			vp.kind = VIEW_WS_JSON;
		else if (strcmp(comp[1], "taskHistory.json") == 0 && n == 2)
			vp.kind = VIEW_WS_HISTORY;
		else if (strcmp(comp[1], "tasks") == 0)
			vp.kind = VIEW_TASKS;
		else
			return -ENOENT;
	}
	if (n >= 3) {
		char *key = NULL;
		bool trashed = false;

		if (!store_is_conversation_id(comp[2]))
			return -ENOENT;
		memcpy(vp.task, comp[2], strlen(comp[2]) + 1);
		vp.kind = VIEW_TASK;
		r = store_task_workspace(fs->store, comp[2], &key, &trashed);
		if (r < 0 && r != -ENOENT)
			return r;
		/* A task that is not (or not here) is a free slot: mkdir, or mv back from the trash. */
		if (r == 0 && !trashed && (vp.unknown ? key != NULL : !key || strcmp(key, vp.key) != 0)) {
			free(key);
			*ret = vp;
			ret->kind = VIEW_TASK;
			return -ENOENT;
		}
		free(key);
		if (r == -ENOENT || trashed) {
			*ret = vp;
			return -ENOENT;
		}
	}
	if (n >= 4 && strcmp(comp[3], "checkpoints") == 0) {
		vp.kind = VIEW_CKPTS;
		if (n >= 5 && (r = ckpt_parse_cached(fs, &vp, rel, comp[4])) < 0)
			return r;
		if (n >= 6 && (r = ckpt_file_parse(&vp, comp[5], p)) < 0)
			return r;
		*ret = vp;
		return 0;
	}
	if (n >= 4 && strcmp(comp[3], "versions") == 0) {
		vp.kind = VIEW_VERSIONS;
		if (n >= 5 && (r = version_parse(fs, &vp, comp[4])) < 0)
			return r;
		if (n >= 6 && (*p || (r = version_file_parse(fs, &vp, comp[5])) < 0))
			return *p ? -ENOENT : r;
		*ret = vp;
		return 0;
	}
	if (n >= 5)
		return -ENOENT;
	if (n == 4 && (r = task_file_parse(&vp, comp[3])) < 0)
		return r;
	*ret = vp;
	return 0;
}

static uint64_t view_ino(const char *rel)
{
	return VIEW_INO_BIT | (hash64(rel, strlen(rel)) >> 2);
}

static void set_time(struct timespec *t, int64_t ns)
{
	t->tv_sec = ns / 1000000000;
	t->tv_nsec = ns % 1000000000;
}

struct last_ctx {
	int64_t last;
	const char *id; /* trashed_at(): the task */
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

/* store_task_list() of the trash: the time the task lc->id went there. */
static int trashed_at(void *ctx, const char *id, int64_t trashed_ns)
{
	struct last_ctx *c = ctx;

	if (strcmp(id, c->id) == 0)
		c->last = trashed_ns;
	return 0;
}

/* The time of the task's last checkpoint: its checkpoints/ folder's. */
static int last_ckpt(void *ctx, const struct store_checkpoint *c)
{
	int64_t ns = c->ts * 1000000;

	if (ns > *(int64_t *)ctx)
		*(int64_t *)ctx = ns;
	return 0;
}

/* A live task's time: its ui stream's, or its session's conversation's; 0 if it has neither. */
static int64_t task_time(struct fs *fs, const char *task)
{
	struct store_stat ss;
	char doc[96];

	if ((task_doc(task, 1, doc, sizeof(doc)) == 0 || task_doc(task, 0, doc, sizeof(doc)) == 0) &&
	    store_doc_stat(fs->store, doc, &ss) == 0)
		return ss.mtime_ns;
	return 0;
}

/* The time of a checkpoint's or a version's folder and files: fixed, whatever comes after. */
static int64_t fixed_time(const struct view_path *vp)
{
	return vp->kind >= VIEW_VERSION ? vp->ver_time_ns : vp->ckpt_ts * 1000000;
}

int view_getattr(struct fs *fs, const char *rel, const struct view_path *vp, struct stat *st)
{
	struct last_ctx lc = { 0 };
	struct store_stat ss;
	int r = 0;

	memset(st, 0, sizeof(*st));
	st->st_ino = view_ino(rel);
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	switch (vp->kind) {
	case VIEW_ROOT:
	case VIEW_TRASH:
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
		/* the last change of what it lists: stable while nothing changes */
		r = vp->kind == VIEW_TRASH ? store_task_list(fs->store, NULL, true, task_last, &lc)
					   : store_workspace_last(fs->store, &lc.last);
		if (r < 0)
			return r;
		set_time(&st->st_mtim, lc.last);
		break;
	case VIEW_WS:
	case VIEW_TASKS:
	case VIEW_TASK:
		st->st_mode = S_IFDIR | 0700;
		st->st_nlink = 2;
		if (vp->kind == VIEW_WS || vp->kind == VIEW_TASKS) {
			if (vp->unknown)
				r = store_task_list(fs->store, NULL, false, task_last, &lc);
			else
				r = store_workspace_get(fs->store, vp->key, ws_last, &lc);
		} else if (vp->kind == VIEW_TASK && !vp->trash) {
			lc.last = task_time(fs, vp->task);
		} else if (vp->kind == VIEW_TASK) {
			lc.id = vp->task;
			r = store_task_list(fs->store, NULL, true, trashed_at, &lc);
		}
		if (r < 0 && r != -ENOENT)
			return r;
		set_time(&st->st_mtim, lc.last);
		break;
	case VIEW_MESSAGES:
	case VIEW_UI:
	case VIEW_METADATA:
		if (vp->trash) {
			struct store_snap *snap = NULL;

			r = store_snap_open_removed(fs->store, vp->doc, vp->kind != VIEW_METADATA, &snap);
			if (r < 0)
				return r;
			store_snap_stat(snap, &ss);
			store_snap_free(snap);
			st->st_mode = S_IFREG | 0400;
			st->st_nlink = 1;
			st->st_size = ss.size; /* the snapshot's own rendering */
			set_time(&st->st_mtim, ss.mtime_ns);
			break;
		}
		r = store_doc_stat(fs->store, vp->doc, &ss);
		if (r < 0)
			return r;
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = vp->kind == VIEW_METADATA ? ss.size : ss.lsize;
		set_time(&st->st_mtim, ss.mtime_ns);
		break;
	case VIEW_WS_JSON:
	case VIEW_WS_HISTORY:
	case VIEW_TASK_JSON: {
		_cleanup_free_ char *buf = NULL;
		size_t len;

		r = view_render(fs, vp, &buf, &len, &lc.last, NULL);
		if (r < 0)
			return r;
		st->st_mode = S_IFREG | (vp->kind == VIEW_WS_HISTORY ? 0600 : 0400);
		st->st_nlink = 1;
		st->st_size = (off_t)len;
		set_time(&st->st_mtim, lc.last);
		break;
	}
	case VIEW_CKPTS:
		st->st_mode = S_IFDIR | 0500;
		st->st_nlink = 2;
		r = ckpt_each(fs, vp->task, last_ckpt, &lc.last);
		if (r < 0)
			return r;
		if (!lc.last) /* none yet: the task's own */
			lc.last = task_time(fs, vp->task);
		set_time(&st->st_mtim, lc.last);
		break;
	case VIEW_VERSIONS:
		st->st_mode = S_IFDIR | 0500;
		st->st_nlink = 2;
		r = version_last(fs, vp, &lc.last); /* changes with each save: never cached */
		if (r < 0)
			return r;
		set_time(&st->st_mtim, lc.last);
		break;
	case VIEW_VERSION:
	case VIEW_CKPT:
		st->st_mode = S_IFDIR | 0500;
		st->st_nlink = 2;
		set_time(&st->st_mtim, fixed_time(vp));
		break;
	case VIEW_VERSION_MESSAGES:
	case VIEW_VERSION_UI:
	case VIEW_VERSION_METADATA:
	case VIEW_CKPT_MESSAGES:
	case VIEW_CKPT_UI: {
		struct store_snap *snap;

		r = vp->kind >= VIEW_VERSION ? view_version_snap(fs, vp, &snap) : view_ckpt_snap(fs, vp, &snap);
		if (r < 0)
			return r;
		st->st_mode = S_IFREG | 0400;
		st->st_nlink = 1;
		st->st_size = store_snap_size(snap);
		store_snap_free(snap);
		set_time(&st->st_mtim, fixed_time(vp));
		break;
	}
	case VIEW_CKPT_COMMIT:
	case VIEW_CKPT_DIFF: {
		_cleanup_free_ char *buf = NULL;
		size_t len;

		r = view_render(fs, vp, &buf, &len, &lc.last, NULL);
		if (r < 0)
			return r;
		st->st_mode = S_IFREG | 0400;
		st->st_nlink = 1;
		st->st_size = (off_t)len;
		set_time(&st->st_mtim, vp->ckpt_ts * 1000000);
		break;
	}
	case VIEW_CKPT_FILES: {
		uint64_t ino;

		r = shadow_stat(vp->git_dir, vp->hash, vp->sub, st);
		if (r < 0)
			return r;
		ino = st->st_ino;
		st->st_uid = fs->uid;
		st->st_gid = fs->gid;
		set_time(&st->st_mtim, vp->ckpt_ts * 1000000);
		st->st_ctim = st->st_atim = st->st_mtim;
		st->st_ino = ino;
		return 0;
	}
	default:
		return -ENOENT;
	}
	/* A folder with nothing in it yet (an empty view, an empty trash) has the mount root's time, not 1970's. */
	if (st->st_mtim.tv_sec == 0 && st->st_mtim.tv_nsec == 0 && S_ISDIR(st->st_mode)) {
		struct stat root;

		if (fstat(fs->root_fd, &root) == 0)
			st->st_mtim = root.st_mtim;
	}
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

struct list_ctx {
	struct fs *fs;
	op_list_fn fn;
	void *ctx;
	int r;
};

static int list_ws(void *ctx, const struct store_workspace *ws)
{
	struct list_ctx *c = ctx;
	char name[80];

	ws_name(ws->path, ws->key, name, sizeof(name));
	return list_top(c->fs, name, c->fn, c->ctx);
}

static int list_task(void *ctx, const char *id, int64_t mtime)
{
	struct list_ctx *c = ctx;

	return c->fn(c->ctx, id, S_IFDIR, 0);
}

struct ckpt_list {
	op_list_fn fn;
	void *ctx;
	int at;
};

static int list_ckpt(void *ctx, const struct store_checkpoint *c)
{
	struct ckpt_list *cl = ctx;
	char name[32];

	ckpt_name(++cl->at, c->hash, name, sizeof(name));
	return cl->fn(cl->ctx, name, S_IFDIR, 0);
}

struct subagent_list {
	const char *task;
	op_list_fn fn;
	void *ctx;
};

/* store_doc_list() of a session's folder: its subagents' conversations, as <stem>.messages.jsonl. */
static int list_subagent(void *ctx, const char *name, const struct store_stat *stat)
{
	struct subagent_list *sl = ctx;
	size_t n = strlen(name), tl = strlen(sl->task), sfx = strlen(".messages.json");
	char view_name[NAME_MAX + 1];

	if (n <= sfx || strcmp(name + n - sfx, ".messages.json") != 0 ||
	    (n == tl + sfx && strncmp(name, sl->task, tl) == 0))
		return 0; /* not a conversation, or the session's own */
	if (snprintf(view_name, sizeof(view_name), "%.*s%s", (int)(n - sfx), name, SUBAGENT_SUFFIX) >=
	    (int)sizeof(view_name))
		return 0;
	return sl->fn(sl->ctx, view_name, S_IFREG, 0);
}

static int count_task(void *ctx, const char *id, int64_t mtime)
{
	(*(int *)ctx)++;
	return 0;
}

int view_list(struct fs *fs, const struct view_path *vp, op_list_fn fn, void *ctx)
{
	struct list_ctx c = { fs, fn, ctx, 0 };
	int r = 0, n = 0;

	switch (vp->kind) {
	case VIEW_ROOT:
		r = store_workspace_list(fs->store, list_ws, &c);
		if (r == 0 && store_task_list(fs->store, NULL, false, count_task, &n) == 0 && n > 0)
			r = list_top(fs, "unknown", fn, ctx);
		if (r == 0)
			r = list_top(fs, ".trash", fn, ctx);
		return r;
	case VIEW_TRASH:
		if ((r = fn(ctx, ".", S_IFDIR, 0)) == 0 && (r = fn(ctx, "..", S_IFDIR, 0)) == 0)
			r = store_task_list(fs->store, NULL, true, list_task, &c);
		return r;
	case VIEW_WS:
		if ((r = fn(ctx, ".", S_IFDIR, 0)) == 0 && (r = fn(ctx, "..", S_IFDIR, 0)) == 0 && !vp->unknown)
			r = fn(ctx, "workspace.json", S_IFREG, 0);
		if (r == 0)
			r = fn(ctx, "taskHistory.json", S_IFREG, 0);
		return r == 0 ? fn(ctx, "tasks", S_IFDIR, 0) : r;
	case VIEW_TASKS:
		if ((r = fn(ctx, ".", S_IFDIR, 0)) == 0 && (r = fn(ctx, "..", S_IFDIR, 0)) == 0)
			r = store_task_list(fs->store, vp->unknown ? NULL : vp->key, false, list_task, &c);
		return r;
	case VIEW_TASK:
		if ((r = fn(ctx, ".", S_IFDIR, 0)) < 0 || (r = fn(ctx, "..", S_IFDIR, 0)) < 0)
			return r;
		for (size_t i = 0; i < ARRAY_SIZE(task_files); i++) {
			struct view_path f = *vp;
			struct stat st;
			char rel[160];

			if (vp->trash && task_files[i].kind == VIEW_TASK_JSON)
				continue; /* the history item went with the task */
			if (task_doc(vp->task, i, f.doc, sizeof(f.doc)) < 0)
				continue;
			f.kind = task_files[i].kind;
			snprintf(rel, sizeof(rel), "x/%s", task_files[i].name);
			if (view_getattr(fs, rel, &f, &st) == 0 && (r = fn(ctx, task_files[i].name, S_IFREG, 0)) < 0)
				return r;
		}
		if (!vp->trash && store_is_session_id(vp->task)) {
			struct subagent_list sl = { vp->task, fn, ctx };
			char dir[96];

			snprintf(dir, sizeof(dir), "sessions/%s", vp->task);
			if ((r = store_doc_list(fs->store, dir, list_subagent, &sl)) < 0)
				return r;
		}
		/*
		 * versions/ and checkpoints/ are not listed, only found by their
		 * names (as ZFS's .zfs and NetApp's .snapshot): listed, every grep -r,
		 * find, du and rsync of the view would read each conversation once a
		 * version and once a checkpoint (and the workspace's files once a
		 * checkpoint), and rm -r of a task would stop at its first read-only
		 * file.
		 */
		return r;
	case VIEW_CKPTS: {
		struct ckpt_list cl = { fn, ctx, 0 };

		if ((r = fn(ctx, ".", S_IFDIR, 0)) < 0 || (r = fn(ctx, "..", S_IFDIR, 0)) < 0)
			return r;
		return ckpt_each(fs, vp->task, list_ckpt, &cl);
	}
	case VIEW_CKPT: {
		static const char *const names[] = { "messages.jsonl", "ui_messages.jsonl", "commit.json", "changes.diff" };

		if ((r = fn(ctx, ".", S_IFDIR, 0)) < 0 || (r = fn(ctx, "..", S_IFDIR, 0)) < 0)
			return r;
		/* commit.json, changes.diff and files/ only when the repo has the commit (shadow.c logs why not) */
		bool has = *vp->git_dir && shadow_has_commit(vp->git_dir, vp->hash) == 0;

		for (size_t i = 0; i < ARRAY_SIZE(names) && (i < 2 || has); i++)
			if ((r = fn(ctx, names[i], S_IFREG, 0)) < 0)
				return r;
		return has ? fn(ctx, "files", S_IFDIR, 0) : r;
	}
	case VIEW_CKPT_FILES:
		return shadow_list(vp->git_dir, vp->hash, vp->sub, fn, ctx);
	case VIEW_VERSIONS:
	case VIEW_VERSION:
		return version_list(fs, vp, fn, ctx);
	default:
		return -ENOTDIR;
	}
}

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

/* The whole current content of a small doc (a session's manifest); free() it. */
static int read_whole(struct fs *fs, const char *doc, char **ret, size_t *ret_len, int64_t *ret_mtime_ns)
{
	struct store_snap *snap;
	struct store_stat ss;
	char *buf;
	ssize_t got = 0;
	int64_t size;
	int r;

	r = store_snap_open(fs->store, doc, &snap);
	if (r < 0)
		return r;
	size = store_snap_size(snap);
	buf = malloc((size_t)size + 1);
	while (buf && got < size) {
		ssize_t k = store_snap_read(fs->store, snap, buf + got, (size_t)(size - got), got);

		if (k <= 0) {
			r = k < 0 ? (int)k : -EIO;
			break;
		}
		got += k;
	}
	store_snap_stat(snap, &ss);
	store_snap_free(snap);
	if (!buf)
		return -ENOMEM;
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[size] = '\0';
	*ret = buf;
	*ret_len = (size_t)size;
	*ret_mtime_ns = ss.mtime_ns;
	return 0;
}

/* The task files whose attributes the kernel may keep: all but task.json, which no commit of its own changes. */
static bool told_of_commits(size_t i)
{
	return task_files[i].kind != VIEW_TASK_JSON;
}

bool view_task_file_named(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(task_files); i++)
		if (told_of_commits(i) && strcmp(name, task_files[i].name) == 0)
			return true;
	return false;
}

void view_invalidate_conversation(struct fs *fs, const char *task_id)
{
	_cleanup_free_ char *key = NULL, *wpath = NULL;
	char name[80], rel[256];
	bool trashed;

	kcache_invalidate(fs, "workspaces");
	if (store_task_workspace(fs->store, task_id, &key, &trashed) < 0)
		return;
	if (key && store_workspace_path(fs->store, key, &wpath) == 0)
		ws_name(wpath, key, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "unknown");
	snprintf(rel, sizeof(rel), "workspaces/%s", name);
	kcache_invalidate(fs, rel);
	snprintf(rel, sizeof(rel), "workspaces/%s/tasks", name);
	kcache_invalidate(fs, rel);
	if (trashed)
		snprintf(rel, sizeof(rel), "workspaces/.trash/%s", task_id);
	else
		snprintf(rel, sizeof(rel), "workspaces/%s/tasks/%s", name, task_id);
	kcache_invalidate(fs, rel);
	/* Their listings too: a commit of the ui messages may add a checkpoint; each commit is a version. */
	snprintf(rel, sizeof(rel), "workspaces/%s/tasks/%s/checkpoints", name, task_id);
	kcache_invalidate(fs, rel);
	snprintf(rel, sizeof(rel), "workspaces/%s/tasks/%s/versions", name, task_id);
	kcache_invalidate(fs, rel);
	/* The files whose attributes the kernel keeps (kcache.c, view_file_told()). */
	for (size_t i = 0; !trashed && i < ARRAY_SIZE(task_files); i++) {
		if (!told_of_commits(i))
			continue;
		snprintf(rel, sizeof(rel), "workspaces/%s/tasks/%s/%s", name, task_id, task_files[i].name);
		kcache_invalidate(fs, rel);
	}
}

/*
 * The last task's history item rendered (its task.json): a walk asks for it
 * at the file's lookup, its open and the reader's fstat(), and each render
 * finds the item among all of taskHistory.json's. Kept until the next
 * commit, as the last task's checkpoints are (view_ckpt.c).
 */
static struct {
	pthread_mutex_t lock;
	uint64_t gen;
	char task[64];
	char *json;
	size_t len;
	int64_t mtime_ns;
} last_item = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A copy of n bytes of p, NUL-terminated (free()), or NULL. */
static char *dup_n(const char *p, size_t n)
{
	char *q = malloc(n + 1);

	if (q) {
		memcpy(q, p, n);
		q[n] = '\0';
	}
	return q;
}

static int history_item(struct fs *fs, const char *task, char **ret, size_t *ret_len, int64_t *ret_mtime_ns)
{
	uint64_t gen = store_generation(fs->store);
	char *keep;
	bool hit;
	int r;

	pthread_mutex_lock(&last_item.lock);
	hit = last_item.json && last_item.gen == gen && strcmp(last_item.task, task) == 0;
	if (hit) {
		*ret = dup_n(last_item.json, last_item.len);
		*ret_len = last_item.len;
		*ret_mtime_ns = last_item.mtime_ns;
	}
	pthread_mutex_unlock(&last_item.lock);
	if (hit)
		return *ret ? 0 : -ENOMEM;
	r = store_history_item(fs->store, task, ret, ret_len, ret_mtime_ns);
	/* Kept under the generation taken before the query: a commit since makes it miss. */
	if (r == 0 && strlen(task) < sizeof(last_item.task) && (keep = dup_n(*ret, *ret_len))) {
		pthread_mutex_lock(&last_item.lock);
		free(last_item.json);
		last_item.json = keep;
		last_item.len = *ret_len;
		last_item.mtime_ns = *ret_mtime_ns;
		last_item.gen = gen;
		snprintf(last_item.task, sizeof(last_item.task), "%s", task);
		pthread_mutex_unlock(&last_item.lock);
	}
	return r;
}

int view_render(struct fs *fs, const struct view_path *vp, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
		int64_t *ret_rev)
{
	if (vp->kind == VIEW_WS_HISTORY)
		return store_history_render_ws(fs->store, vp->unknown ? NULL : vp->key, ret, ret_len, ret_mtime_ns,
					       ret_rev);
	if (vp->kind == VIEW_TASK_JSON && *vp->doc)
		return read_whole(fs, vp->doc, ret, ret_len, ret_mtime_ns);
	if (vp->kind == VIEW_TASK_JSON)
		return history_item(fs, vp->task, ret, ret_len, ret_mtime_ns);
	if (vp->kind == VIEW_CKPT_COMMIT || vp->kind == VIEW_CKPT_DIFF) {
		int64_t t;

		if (!*vp->git_dir)
			return -ENOENT;
		*ret_mtime_ns = vp->ckpt_ts * 1000000;
		if (vp->kind == VIEW_CKPT_COMMIT)
			return shadow_commit_json(vp->git_dir, vp->hash, ret, ret_len, &t);
		return shadow_diff(vp->git_dir, *vp->prev ? vp->prev : NULL, vp->hash, ret, ret_len);
	}
	if (vp->kind == VIEW_WS_JSON) {
		cJSON *o = cJSON_CreateObject();
		struct last_ctx lc = { 0 };
		int r;

		if (!o)
			return -ENOMEM;
		r = store_workspace_get(fs->store, vp->key, render_ws, o);
		if (r == 0)
			r = store_workspace_get(fs->store, vp->key, ws_last, &lc);
		if (r == 0)
			r = json_print_pretty(o, ret, ret_len);
		cJSON_Delete(o);
		if (r == 0)
			*ret_mtime_ns = lc.last;
		return r;
	}
	return -EINVAL;
}
