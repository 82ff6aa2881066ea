/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view.c: the walk that names a path of the workspaces view (view_parse()),
 * the table of the view's rows, and what the rows share (see view.h).
 *
 * Nothing here is stored: the view is computed from the store on each call
 * (the workspaces and tasks tables, the docs), so it can never disagree with
 * the compat tree. A workspace is named after the basename of its path, made
 * safe, and its key (Cline's checkpoint hash of the path): the key makes the
 * name unique and ties it to checkpoints/<key>. Inode numbers of view entries
 * are a hash of their path, so they are the same across remounts.
 *
 * A path is named one component at a time: in the folder the walk has got
 * to, the kinds whose shape says they are found there are tried (view.h,
 * struct view_shape), those with a fixed name first. What no kind takes is
 * VIEW_MISSING, which keeps the folder it would have been in (vp->in), so
 * that what may be made there is that folder's row's to say (made_in).
 * The walk also runs on shapes alone, without the store, for the kernel's
 * cache (view_shape_kind()) and for the commands (view_doc_of()).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs/kernel/kcache.h"
#include "fs/ops/route.h"
#include "fs/view/view.h"
#include "fs/view/view_ckpt.h"
#include "store/store_view.h"
#include "store/util.h"

#define VIEW_INO_BIT (UINT64_C(1) << 63)

/* The table of rows: a kind of VIEW_KINDS without its row is an undefined reference here. */
const struct path_ops *const view_rows[VIEW_KIND_COUNT] = {
#define VIEW_ROW_ENTRY(kind, row) [kind] = &row,
	VIEW_KINDS(VIEW_ROW_ENTRY)
#undef VIEW_ROW_ENTRY
};

/* ---- names of workspaces, and the client's own names ------------------------------ */

void view_ws_name(const char *path, const char *key, char *buf, size_t bufsz)
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

int view_ws_name_of(struct fs *fs, const char *key, char *buf, size_t bufsz)
{
	_cleanup_free_ char *wpath = NULL;
	int r;

	if (!key) {
		snprintf(buf, bufsz, "unknown");
		return 0;
	}
	r = store_workspace_path(fs->store, key, &wpath);
	if (r == 0)
		view_ws_name(wpath, key, buf, bufsz);
	return r;
}

bool view_client_has(struct fs *fs, const char *name)
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

/* Logs a clash of names once per name and mount (the names kept are few): the view's entry of type. */
static void clash_log_once(const char *name, mode_t type)
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
		log_info("the client has its own 'workspaces/%s': the view shows its %s of that name as '%s%s'",
			 name, S_ISDIR(type) ? "folder" : "file", name, VIEW_CLASH_SUFFIX);
}

int view_list_top(struct fs *fs, const char *name, mode_t type, op_list_fn fn, void *ctx)
{
	char alt[NAME_MAX + 1];

	if (!view_client_has(fs, name))
		return fn(ctx, name, type, 0);
	if (snprintf(alt, sizeof(alt), "%s%s", name, VIEW_CLASH_SUFFIX) >= (int)sizeof(alt) ||
	    view_client_has(fs, alt))
		return 0; /* no name left for it: the client's entries are shown, not the view's */
	clash_log_once(name, type);
	return fn(ctx, alt, type, 0);
}

/* What a name in a folder whose names are the client's first is. */
enum top_name {
	TOP_VIEW,   /* the view's, under its own name */
	TOP_ASIDE,  /* the view's, under its other name: name is cut back to its own */
	TOP_CLIENT, /* the client's own entry: the path is plain */
	TOP_NONE,   /* <name>.view while the client has no <name>: nothing */
};

static enum top_name top_name(struct fs *fs, char *name)
{
	size_t n = strlen(name), sl = strlen(VIEW_CLASH_SUFFIX);

	if (view_client_has(fs, name))
		return TOP_CLIENT;
	if (n > sl && strcmp(name + n - sl, VIEW_CLASH_SUFFIX) == 0) {
		name[n - sl] = '\0';
		if (view_client_has(fs, name))
			return TOP_ASIDE;
		name[n - sl] = VIEW_CLASH_SUFFIX[0]; /* the view shows it under its own name */
		return TOP_NONE;
	}
	return TOP_VIEW;
}

/* ---- the walk --------------------------------------------------------------------- */

static const struct view_shape *shape_of(enum view_kind k)
{
	return view_rows[k]->shape;
}

/*
 * The kind folder holds under at->name, into *vp (which holds the folder's
 * path): 0, or -errno with vp untouched (-ENOENT: no kind takes the name).
 * With fs NULL only the matches that take no store may run: those of a
 * task's files (view_doc_of()).
 */
static int find_child(struct fs *fs, struct view_path *vp, const struct view_step *at, bool *ret_rest)
{
	for (int named = 1; named >= 0; named--) {
		for (int k = 1; k < VIEW_KIND_COUNT; k++) {
			const struct view_shape *sh = shape_of(k);
			struct view_path next;
			int r;

			if (!sh || sh->in != vp->kind || !sh->name != !named ||
			    (named && strcmp(sh->name, at->name) != 0))
				continue;
			next = *vp;
			next.kind = k;
			next.in = vp->kind;
			r = sh->match ? sh->match(fs, sh, &next, at) : 0;
			if (r == -ENOENT)
				continue;
			if (r < 0)
				return r;
			if (sh->rest && *at->rest)
				next.in = next.kind; /* files/a/b is in files/a */
			*vp = next;
			if (ret_rest)
				*ret_rest = sh->rest;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * The folders at the mount's root the view's walks start from: workspaces/
 * (whose names the client shares), and search/, which a client's own entry
 * of that name takes whole.
 */
static const struct {
	const char *name;
	enum view_kind kind;
} tops[] = {
	{ "workspaces", VIEW_ROOT },
	{ "search", VIEW_SEARCH },
};

const char *view_top_name(enum view_kind kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(tops); i++)
		if (tops[i].kind == kind)
			return tops[i].name;
	return NULL;
}

/* Whether the client has an entry of its own named name at the mount's root. */
static bool client_has_at_root(struct fs *fs, const char *name)
{
	const char *leaf;
	struct stat st;
	int dfd = plain_open_parent(fs, name, &leaf);
	bool has;

	if (dfd < 0)
		return false;
	has = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(dfd);
	return has;
}

/* The top rel begins with, and where its rest begins (*ret_p); VIEW_NONE: none. */
static enum view_kind top_of(struct fs *fs, const char *rel, const char **ret_p)
{
	for (size_t i = 0; i < ARRAY_SIZE(tops); i++) {
		size_t n = strlen(tops[i].name);

		if (strncmp(rel, tops[i].name, n) != 0 || (rel[n] != '\0' && rel[n] != '/'))
			continue;
		if (tops[i].kind == VIEW_SEARCH && client_has_at_root(fs, tops[i].name))
			return VIEW_NONE; /* the client's own: plain */
		*ret_p = rel[n] ? rel + n + 1 : "";
		return tops[i].kind;
	}
	return VIEW_NONE;
}

int view_parse(struct fs *fs, const char *rel, struct view_path *ret)
{
	struct view_path vp = { 0 };
	const char *p = "";
	int r = 0;

	*ret = vp;
	vp.kind = top_of(fs, rel, &p);
	if (vp.kind == VIEW_NONE)
		return 0;
	/* ls -l of a checkpoint's files/ resolves the same folder once a file: from where it was last. */
	if (vp.kind == VIEW_ROOT)
		(void)ckpt_cache_hit(fs, rel, &vp, &p);
	while (*p) {
		size_t len = strcspn(p, "/");
		char name[NAME_MAX + 1];
		struct view_step at;
		bool took_rest;

		if (len > NAME_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		at = (struct view_step){ .name = name, .rel = rel, .end = (size_t)(p + len - rel),
					 .rest = p + len + (p[len] == '/') };
		if (view_rows[vp.kind]->client_names) {
			switch (top_name(fs, name)) {
			case TOP_CLIENT:
				return 0; /* the client's own: plain */
			case TOP_NONE:
				r = -ENOENT;
				break;
			case TOP_ASIDE:
				vp.aside = true;
				/* fall through */
			case TOP_VIEW:
				break;
			}
			if (r < 0)
				break;
		}
		r = find_child(fs, &vp, &at, &took_rest);
		if (r < 0)
			break;
		p = took_rest ? "" : at.rest;
	}
	if (r < 0) {
		/* What would be at rel is made in the folder the walk got to, if rel is the next name there. */
		vp.in = strchr(p, '/') ? VIEW_NONE : vp.kind;
		vp.kind = VIEW_MISSING;
	} else if (!view_rows[vp.kind]->getattr) {
		r = -ENOENT; /* a kind that names nothing: a free task slot */
	}
	*ret = vp;
	return r;
}

enum view_kind view_shape_kind(const char *const *up, size_t n)
{
	enum view_kind kind = VIEW_NONE;

	for (size_t i = 0; n > 0 && i < ARRAY_SIZE(tops) && kind == VIEW_NONE; i++)
		if (strcmp(up[n - 1], tops[i].name) == 0)
			kind = tops[i].kind;
	if (kind == VIEW_NONE)
		return VIEW_NONE;
	for (size_t i = n - 1; i-- > 0 && kind != VIEW_NONE;) {
		enum view_kind found = VIEW_NONE;

		for (int named = 1; named >= 0 && found == VIEW_NONE; named--)
			for (int k = 1; k < VIEW_KIND_COUNT && found == VIEW_NONE; k++) {
				const struct view_shape *sh = shape_of(k);

				if (sh && sh->in == kind && !sh->name == !named &&
				    (!named || strcmp(sh->name, up[i]) == 0))
					found = k;
			}
		kind = found;
		if (kind != VIEW_NONE && shape_of(kind)->rest)
			break; /* everything below is the same kind */
	}
	return kind;
}

int view_doc_file_path(const struct view_doc_file *f, const char *task, char *buf, size_t n)
{
	bool session = store_is_session_id(task);
	const char *doc = session ? f->session_doc : f->doc;

	buf[0] = '\0';
	if (session && !doc)
		return -ENOENT;
	if (doc && (size_t)snprintf(buf, n, session ? "sessions/%s/%s%s" : "tasks/%s/%s", task,
				    session ? task : doc, doc) >= n)
		return -ENAMETOOLONG;
	return 0;
}

int view_doc_of(const char *rel, char *buf, size_t n)
{
	struct view_path vp = { 0 };
	char comp[16][NAME_MAX + 1];
	struct view_step at;
	size_t nc = 0, first;
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
	/*
	 * workspaces/.trash/<id>/<file>, workspaces/<ws>/tasks/<id>/<file>, and a
	 * session's subagents/<agent>/... down to a file: by shape, taking no store.
	 */
	if (nc == 3 && strcmp(comp[0], ".trash") == 0)
		vp.kind = VIEW_TRASH_TASK;
	else if (nc >= 4 && nc % 2 == 0 && strcmp(comp[1], "tasks") == 0)
		vp.kind = VIEW_TASK;
	else
		return -ENOENT;
	first = vp.kind == VIEW_TASK ? 2 : 1;
	for (size_t i = first + 1; i + 1 < nc; i += 2)
		if (strcmp(comp[i], "subagents") != 0)
			return -ENOENT;
	if (!store_is_conversation_id(comp[first]) || strlen(comp[first]) >= sizeof(vp.task))
		return -ENOENT;
	memcpy(vp.task, comp[first], strlen(comp[first]) + 1);
	for (size_t i = first + 1; i < nc; i++) {
		at = (struct view_step){ .name = comp[i], .rel = rel, .end = strlen(rel), .rest = "" };
		if (find_child(NULL, &vp, &at, NULL) < 0)
			return -ENOENT;
	}
	if (!vp.doc[0])
		return -ENOENT;
	return (size_t)snprintf(buf, n, "%s", vp.doc) < n ? 0 : -ENAMETOOLONG;
}

void view_ws_folder(const char *ws_path, const char *ws_key, char *buf, size_t n)
{
	if (ws_key && ws_path)
		view_ws_name(ws_path, ws_key, buf, n);
	else
		snprintf(buf, n, "unknown");
}

/* The name of the file of a task's folder that shows doc (of task), by the rows found there by name; NULL: none. */
static const char *task_file_of(const char *doc, const char *task)
{
	char own[160];

	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct view_shape *sh = shape_of(k);

		/* a task's files that show a doc have their struct view_doc_file as arg */
		if (sh && sh->in == VIEW_TASK && sh->name && sh->arg &&
		    view_doc_file_path(sh->arg, task, own, sizeof(own)) == 0 && own[0] && strcmp(own, doc) == 0)
			return sh->name;
	}
	return NULL;
}

int view_path_of(struct store *st, const char *doc, const char *ws_path, const char *ws_key, char *buf, size_t n)
{
	char task[80], ws[96], agent[80], sub[PATH_MAX];
	const char *name, *base = strrchr(doc, '/');
	size_t len;
	int r;

	if (store_path_conversation(doc, task, sizeof(task)) < 0 || !base)
		return -ENOENT;
	name = task_file_of(doc, task);
	len = strlen(++base);
	if (name)
		len = strlen(name);
	else if (store_is_session_id(task) && len > 14 && strcmp(base + len - 14, ".messages.json") == 0)
		len -= 14; /* a subagent's <stem>.messages.json shows as subagents/<stem>/messages.jsonl */
	else
		return -ENOENT;
	view_ws_folder(ws_path, ws_key, ws, sizeof(ws));
	if (name) {
		if ((size_t)snprintf(buf, n, "workspaces/%s/tasks/%s/%s", ws, task, name) >= n)
			return -ENAMETOOLONG;
		return 0;
	}
	/*
	 * A subagent's folder is in the subagents/ of whoever spawned it (the
	 * session, or another subagent), which only the session's conversations
	 * tell (view_subagents.c); without the store, or if they do not name
	 * it, as one the session spawned.
	 */
	if ((size_t)snprintf(agent, sizeof(agent), "%.*s", (int)len, base) >= sizeof(agent))
		return -ENAMETOOLONG;
	r = st ? view_subagent_folder(st, task, agent, sub, sizeof(sub)) : -ENOENT;
	if (r == -ENOENT)
		r = snprintf(sub, sizeof(sub), "subagents/%s", agent) < 0 ? -EIO : 0;
	if (r < 0)
		return r;
	if ((size_t)snprintf(buf, n, "workspaces/%s/tasks/%s/%s/messages.jsonl", ws, task, sub) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- what the rows share ---------------------------------------------------------- */

static void set_time(struct timespec *t, int64_t ns)
{
	t->tv_sec = ns / 1000000000;
	t->tv_nsec = ns % 1000000000;
}

void view_stat_init(struct fs *fs, const char *rel, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = VIEW_INO_BIT | (hash64(rel, strlen(rel)) >> 2);
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
}

void view_stat_dir(struct fs *fs, struct stat *st, mode_t mode, int64_t ns)
{
	st->st_mode = S_IFDIR | mode;
	st->st_nlink = 2;
	set_time(&st->st_mtim, ns);
	/* A folder with nothing in it yet (an empty view, an empty trash) has the mount root's time, not 1970's. */
	if (ns == 0) {
		struct stat root;

		if (fstat(fs->root_fd, &root) == 0)
			st->st_mtim = root.st_mtim;
	}
	st->st_ctim = st->st_atim = st->st_mtim;
}

void view_stat_file(struct stat *st, mode_t mode, off_t size, int64_t ns)
{
	st->st_mode = S_IFREG | mode;
	st->st_nlink = 1;
	st->st_size = size;
	st->st_blocks = (size + 511) / 512;
	set_time(&st->st_mtim, ns);
	st->st_ctim = st->st_atim = st->st_mtim;
}

int view_text_stat(const struct route *rt, struct stat *st, path_render_fn render, mode_t mode)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int64_t mtime = 0;
	int r = render(rt, &buf, &len, &mtime, NULL);

	if (r < 0)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, mode, (off_t)len, mtime);
	return 0;
}

int view_list_dots(op_list_fn fn, void *ctx)
{
	int r = fn(ctx, ".", S_IFDIR, 0);

	return r < 0 ? r : fn(ctx, "..", S_IFDIR, 0);
}

int view_list_named(struct fs *fs, const struct route *rt, op_list_fn fn, void *ctx)
{
	int r;

	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct view_shape *sh = shape_of(k);
		struct view_step at;
		struct route child;
		struct stat st;

		if (!sh || sh->in != rt->vp.kind || !sh->name || sh->listed == VIEW_UNLISTED)
			continue;
		child = (struct route){ .fs = fs, .rel = sh->name, .ops = view_rows[k], .in = rt->ops, .vp = rt->vp };
		child.vp.kind = k;
		child.vp.in = rt->vp.kind;
		at = (struct view_step){ .name = sh->name, .rel = sh->name, .end = strlen(sh->name), .rest = "" };
		if ((sh->match && sh->match(fs, sh, &child.vp, &at) < 0) ||
		    (sh->listed == VIEW_LISTED_IF_THERE && child.ops->getattr(&child, &st) < 0))
			continue;
		r = rt->ops->client_names ? view_list_top(fs, sh->name, sh->type, fn, ctx)
					  : fn(ctx, sh->name, sh->type, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

int view_readonly_setattr(const struct route *rt, const struct attr_change *c)
{
	return -EROFS;
}

int view_readonly_truncate(const struct route *rt, off_t size)
{
	return -EROFS;
}

int view_readonly_setxattr(const struct route *rt, const char *name, const char *value, size_t size)
{
	return -EROFS;
}

int view_unlink_with_folder(const struct route *rt)
{
	return 0;
}

void view_invalidate_conversation(struct fs *fs, const char *task_id)
{
	_cleanup_free_ char *key = NULL;
	char name[80], rel[256];
	bool trashed;

	kcache_invalidate(fs, "workspaces");
	if (store_task_workspace(fs->store, task_id, &key, &trashed) < 0)
		return;
	if (view_ws_name_of(fs, key, name, sizeof(name)) < 0)
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
	/* The task's files whose attributes the kernel keeps because this tells it (cache.told). */
	for (int k = 1; !trashed && k < VIEW_KIND_COUNT; k++) {
		const struct view_shape *sh = shape_of(k);

		if (!sh || sh->in != VIEW_TASK || !sh->name || !view_rows[k]->cache.told)
			continue;
		snprintf(rel, sizeof(rel), "workspaces/%s/tasks/%s/%s", name, task_id, sh->name);
		kcache_invalidate(fs, rel);
	}
}
