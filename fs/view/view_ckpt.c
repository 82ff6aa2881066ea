/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_ckpt.c: a task's checkpoints in the view.
 *
 * workspaces/<ws>/tasks/<id>/checkpoints/<NNN>-<short hash>/ is one folder a
 * checkpoint the task's ui messages name, in their order: the conversation
 * cut at it, its commit and diff, and the commit's files, read from the
 * workspace's shadow git repo (shadow.c). The last task's checkpoints and
 * the last checkpoint folder resolved are remembered until the next commit
 * (store_generation()), since `ls -l` resolves a folder once a file.
 *
 * Its kinds, one row each (fs/ops/kinds.h): checkpoints/ (found by its name,
 * not listed in the task's folder), a checkpoint's folder, its
 * messages.jsonl and ui_messages.jsonl, commit.json, changes.diff, and
 * files/ with all below it. Every one is read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/ops/route.h"
#include "fs/view/shadow.h"
#include "fs/view/view_ckpt.h"
#include "store/store_view.h"
#include "store/util.h"

struct ckpt_find {
	struct view_path *vp;
	int want, at;
	const char *name;
	bool found;
	char prev[48];
};

void ckpt_name(int index, const char *hash, char *buf, size_t n)
{
	snprintf(buf, n, "%03d-%.7s", index, hash);
}

static int ckpt_find_one(void *ctx, const struct store_checkpoint *c)
{
	struct ckpt_find *f = ctx;
	char name[32];

	f->at++;
	ckpt_name(f->at, c->hash, name, sizeof(name));
	if (!f->found && strcmp(name, f->name) == 0) {
		f->found = true;
		f->vp->ckpt = f->at;
		snprintf(f->vp->hash, sizeof(f->vp->hash), "%s", c->hash);
		snprintf(f->vp->prev, sizeof(f->vp->prev), "%s", f->prev);
		f->vp->ckpt_seq = c->seq;
		f->vp->ckpt_api = c->api_index;
		f->vp->ckpt_ts = c->ts;
		f->vp->ckpt_range_start = c->range_start;
		f->vp->ckpt_range_end = c->range_end;
	}
	snprintf(f->prev, sizeof(f->prev), "%s", c->hash);
	return 0;
}

/*
 * With -o allow_other, other users reach the backing tree through the mount,
 * and libgit2 follows symlinks inside a repository and opens it by path. So
 * it only opens one that no other user can swap or redirect: checkpoints/,
 * checkpoints/<key>/ and the .git folder itself (rel) must each be owned by
 * the daemon's user and writable by neither group nor others. (A daemon
 * running as root does not open a repository of the users it lets in: it
 * would read, as root, whatever their symlinks inside it point at.) A
 * repository that fails is not opened; its checkpoints show the conversation
 * only, and one warning a repository says why.
 */
static bool git_dir_guarded(struct fs *fs, const char *rel)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char warned[16][64];
	static unsigned nwarned;
	char part[64];
	const char *bad = NULL;
	struct stat st;

	/* Each folder from the top: checkpoints, checkpoints/<key>, rel. */
	for (size_t n = strcspn(rel, "/"); !bad; n += 1 + strcspn(rel + n + 1, "/")) {
		int fd;

		snprintf(part, sizeof(part), "%.*s", (int)n, rel);
		fd = plain_open(fs, part, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
		if (fd < 0 || fstat(fd, &st) < 0)
			bad = "cannot be opened";
		else if (st.st_uid != fs->uid)
			bad = "is owned by another user";
		else if (st.st_mode & (S_IWGRP | S_IWOTH))
			bad = "is writable by group or others";
		if (fd >= 0)
			close(fd);
		if (!rel[n])
			break;
	}
	if (!bad)
		return true;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nwarned; i++)
		if (strcmp(warned[i], rel) == 0)
			goto out;
	if (nwarned < ARRAY_SIZE(warned))
		snprintf(warned[nwarned++], sizeof(warned[0]), "%s", rel);
	log_warn("the shadow repository '%s' is not opened: '%s' %s, and with allow_other another user could "
		 "redirect it; its checkpoints show the conversation only", rel, part, bad);
out:
	pthread_mutex_unlock(&lock);
	return false;
}

/* The shadow repo of a task's workspace, if it is a real folder in the backing tree. */
static void ckpt_git_dir(struct fs *fs, struct view_path *vp)
{
	char rel[64];
	const char *leaf;
	struct stat st;
	char *key = NULL;
	bool trashed;
	int dfd;

	vp->git_dir[0] = '\0';
	if (vp->unknown) {
		if (store_task_workspace(fs->store, vp->task, &key, &trashed) < 0 || !key)
			return;
	}
	snprintf(rel, sizeof(rel), "checkpoints/%s/.git", key ? key : vp->key);
	free(key);
	dfd = plain_open_parent(fs, rel, &leaf);
	if (dfd < 0)
		return;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    (!fs->shared || git_dir_guarded(fs, rel)))
		snprintf(vp->git_dir, sizeof(vp->git_dir), "%s/%s", fs->backing_path, rel);
	close(dfd);
}

/*
 * The checkpoints of the task last asked for, for as long as nothing is
 * committed (store_generation()). store_checkpoints() reads every ui message
 * of the task, and `ls -l checkpoints/` looks up each folder it lists: for a
 * long task, a listing read the conversation once a checkpoint.
 */
struct ckpt_entry {
	int64_t seq, ts, api_index, range_start, range_end;
	char hash[48];
};

static struct {
	pthread_mutex_t lock;
	char task[64];
	uint64_t gen;
	struct ckpt_entry *v;
	size_t n;
} ckpt_list = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct ckpt_collect {
	struct ckpt_entry *v;
	size_t n, alloc;
};

static int ckpt_collect(void *ctx, const struct store_checkpoint *c)
{
	struct ckpt_collect *cc = ctx;
	int r = ARRAY_GROW(cc->v, cc->n, cc->alloc, 16);

	if (r < 0)
		return r;
	cc->v[cc->n] = (struct ckpt_entry){ .seq = c->seq, .ts = c->ts, .api_index = c->api_index,
					    .range_start = c->range_start, .range_end = c->range_end };
	snprintf(cc->v[cc->n].hash, sizeof(cc->v[cc->n].hash), "%s", c->hash);
	cc->n++;
	return 0;
}

/* A copy of n entries of v into *ret (NULL for none); 0 or -ENOMEM. */
static int entries_dup(const struct ckpt_entry *v, size_t n, struct ckpt_entry **ret)
{
	*ret = NULL;
	if (!n)
		return 0;
	*ret = malloc(n * sizeof(*v));
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, v, n * sizeof(*v));
	return 0;
}

int ckpt_each(struct fs *fs, const char *task, store_checkpoint_fn fn, void *ctx)
{
	uint64_t gen = store_generation(fs->store);
	struct ckpt_collect cc = { 0 };
	struct ckpt_entry *keep;
	bool hit;
	int r = 0;

	pthread_mutex_lock(&ckpt_list.lock);
	hit = ckpt_list.gen == gen && *ckpt_list.task && strcmp(ckpt_list.task, task) == 0;
	if (hit && (r = entries_dup(ckpt_list.v, ckpt_list.n, &cc.v)) == 0)
		cc.n = ckpt_list.n;
	pthread_mutex_unlock(&ckpt_list.lock);
	if (!hit) {
		r = store_checkpoints(fs->store, task, ckpt_collect, &cc);
		/* Kept under the generation taken before the query: a commit since makes it miss. */
		if (r == 0 && strlen(task) < sizeof(ckpt_list.task) && entries_dup(cc.v, cc.n, &keep) == 0) {
			pthread_mutex_lock(&ckpt_list.lock);
			free(ckpt_list.v);
			ckpt_list.v = keep;
			ckpt_list.n = cc.n;
			ckpt_list.gen = gen;
			snprintf(ckpt_list.task, sizeof(ckpt_list.task), "%s", task);
			pthread_mutex_unlock(&ckpt_list.lock);
		}
	}
	for (size_t i = 0; r == 0 && i < cc.n; i++) {
		struct store_checkpoint c = { cc.v[i].seq, cc.v[i].ts, cc.v[i].hash, cc.v[i].api_index,
					      cc.v[i].range_start, cc.v[i].range_end };

		r = fn(ctx, &c);
	}
	free(cc.v);
	return r;
}

/* Fills vp's checkpoint from its folder name "<NNN>-<short hash>". */
static int ckpt_parse(struct fs *fs, struct view_path *vp, const char *name)
{
	struct ckpt_find f = { .vp = vp, .name = name };
	int r = ckpt_each(fs, vp->task, ckpt_find_one, &f);

	if (r < 0)
		return r;
	if (!f.found)
		return -ENOENT;
	ckpt_git_dir(fs, vp);
	return 0;
}

/*
 * The checkpoint folder last resolved, for as long as nothing is committed:
 * ls -l of a snapshot's files/ resolves the same folder once a file. Of one
 * store: the mount's (ckpt_cache_store), as two mounts may serve two stores
 * in one process.
 */
static pthread_mutex_t ckpt_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct store *ckpt_cache_store;
static struct view_path ckpt_cache;
static char ckpt_cache_prefix[1024];
static uint64_t ckpt_cache_gen;

/* A checkpoint's folder, <NNN>-<short hash>: resolved, or as the last one resolved was. */
static int ckpt_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	uint64_t gen = store_generation(fs->store);
	size_t plen = at->end;
	bool hit;
	int r;

	if (plen >= sizeof(ckpt_cache_prefix))
		return ckpt_parse(fs, vp, at->name);
	pthread_mutex_lock(&ckpt_cache_lock);
	hit = ckpt_cache_store == fs->store && ckpt_cache_gen == gen && strlen(ckpt_cache_prefix) == plen && strncmp(ckpt_cache_prefix, at->rel, plen) == 0;
	if (hit)
		*vp = ckpt_cache;
	pthread_mutex_unlock(&ckpt_cache_lock);
	if (hit)
		return 0;
	r = ckpt_parse(fs, vp, at->name);
	if (r == 0) {
		pthread_mutex_lock(&ckpt_cache_lock);
		ckpt_cache = *vp;
		memcpy(ckpt_cache_prefix, at->rel, plen);
		ckpt_cache_prefix[plen] = '\0';
		ckpt_cache_gen = gen;
		ckpt_cache_store = fs->store;
		pthread_mutex_unlock(&ckpt_cache_lock);
	}
	return r;
}

/* What a checkpoint's conversation file shows: its doc in tasks/<id>/, cut at the checkpoint. */
struct ckpt_doc {
	const char *doc;
	bool ui; /* the ui stream, up to the message that carries the hash; else the api stream, to its index */
};

static const struct ckpt_doc ckpt_messages_doc = { "api_conversation_history.json", false };
static const struct ckpt_doc ckpt_ui_doc = { "ui_messages.json", true };

static int ckpt_lines_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			    const struct view_step *at)
{
	const struct ckpt_doc *d = sh->arg;

	snprintf(vp->doc, sizeof(vp->doc), "tasks/%s/%s", vp->task, d->doc);
	vp->lines = true;
	vp->limit = d->ui ? vp->ckpt_seq + 1 : vp->ckpt_api + 1;
	return 0;
}

/* commit.json, changes.diff and files/: only where the repo has the commit (shadow.c logs why not). */
static int ckpt_commit_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			     const struct view_step *at)
{
	if (!*vp->git_dir || shadow_has_commit(vp->git_dir, vp->hash) < 0)
		return -ENOENT;
	if (sh->rest) {
		if (strlen(at->rest) >= sizeof(vp->sub))
			return -ENAMETOOLONG;
		memcpy(vp->sub, at->rest, strlen(at->rest) + 1);
	}
	return 0;
}

/* A path inside a checkpoint folder resolved before: no query at all. */
bool ckpt_cache_hit(struct fs *fs, const char *rel, struct view_path *vp, const char **ret_rest)
{
	uint64_t gen = store_generation(fs->store);
	size_t plen;
	bool hit;

	pthread_mutex_lock(&ckpt_cache_lock);
	plen = strlen(ckpt_cache_prefix);
	hit = plen && ckpt_cache_gen == gen && strncmp(rel, ckpt_cache_prefix, plen) == 0 && rel[plen] == '/';
	if (hit) {
		*vp = ckpt_cache;
		*ret_rest = rel + plen + 1;
	}
	pthread_mutex_unlock(&ckpt_cache_lock);
	return hit;
}

/*
 * The conversation at a checkpoint as JSON Lines: the ui stream up to and
 * including the message that carries the hash, the api stream cut at that
 * message's conversationHistoryIndex (elements 0..index): vp->limit rows.
 */
static int ckpt_snap(struct fs *fs, const struct view_path *vp, struct store_snap **ret)
{
	struct store_snap *snap;
	int r;

	r = store_snap_open_jsonl(fs->store, vp->doc, &snap);
	if (r < 0)
		return r;
	r = store_snap_limit(fs->store, snap, vp->limit);
	if (r < 0) {
		store_snap_free(snap);
		return r;
	}
	*ret = snap;
	return 0;
}

/* ---- the rows' members ------------------------------------------------------------ */

/* The time of a task's last checkpoint: its checkpoints/ folder's. */
static int last_ckpt(void *ctx, const struct store_checkpoint *c)
{
	int64_t ns = c->ts * 1000000;

	if (ns > *(int64_t *)ctx)
		*(int64_t *)ctx = ns;
	return 0;
}

static int ckpts_getattr(const struct route *rt, struct stat *st)
{
	int64_t last = 0;
	int r = ckpt_each(rt->fs, rt->vp.task, last_ckpt, &last);

	if (r < 0)
		return r;
	if (!last) /* none yet: the task's own */
		last = view_task_time(rt->fs, rt->vp.task);
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0500, last);
	return 0;
}

struct ckpt_lister {
	op_list_fn fn;
	void *ctx;
	int at;
};

static int list_ckpt(void *ctx, const struct store_checkpoint *c)
{
	struct ckpt_lister *cl = ctx;
	char name[32];

	ckpt_name(++cl->at, c->hash, name, sizeof(name));
	return cl->fn(cl->ctx, name, S_IFDIR, 0);
}

static int ckpts_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct ckpt_lister cl = { fn, ctx, 0 };
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : ckpt_each(rt->fs, rt->vp.task, list_ckpt, &cl);
}

/* A checkpoint's folder and files never change: they have the time of the message that carries it. */
static int ckpt_getattr(const struct route *rt, struct stat *st)
{
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0500, rt->vp.ckpt_ts * 1000000);
	return 0;
}

static int ckpt_folder_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : view_list_named(rt->fs, rt, fn, ctx);
}

static int ckpt_lines_getattr(const struct route *rt, struct stat *st)
{
	struct store_snap *snap;
	int r = ckpt_snap(rt->fs, &rt->vp, &snap);

	if (r < 0)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, 0400, store_snap_size(snap), rt->vp.ckpt_ts * 1000000);
	store_snap_free(snap);
	return 0;
}

static int ckpt_lines_open(const struct route *rt, struct fuse_file_info *fi)
{
	struct store_snap *snap = NULL;
	int r;

	if (path_open_writes(fi))
		return -EROFS;
	r = ckpt_snap(rt->fs, &rt->vp, &snap);
	return r < 0 ? r : path_open_fixed(rt, fi, snap);
}

static int commit_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns, int64_t *ret_rev)
{
	int64_t t;

	*ret_mtime_ns = rt->vp.ckpt_ts * 1000000;
	return shadow_commit_json(rt->vp.git_dir, rt->vp.hash, ret, ret_len, &t);
}

static int diff_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns, int64_t *ret_rev)
{
	*ret_mtime_ns = rt->vp.ckpt_ts * 1000000;
	return shadow_diff(rt->vp.git_dir, *rt->vp.prev ? rt->vp.prev : NULL, rt->vp.hash, ret, ret_len);
}

static int commit_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, commit_render, 0400);
}

static int diff_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, diff_render, 0400);
}

static int commit_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_writes(fi) ? -EROFS : path_open_text(rt, fi, commit_render, false);
}

static int diff_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_writes(fi) ? -EROFS : path_open_text(rt, fi, diff_render, false);
}

int view_ckpt_file_stat(struct fs *fs, const struct view_path *vp, struct stat *st)
{
	uint64_t ino;
	int r = shadow_stat(vp->git_dir, vp->hash, vp->sub, st);

	if (r < 0)
		return r;
	ino = st->st_ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_mtim.tv_sec = vp->ckpt_ts / 1000;
	st->st_mtim.tv_nsec = (vp->ckpt_ts % 1000) * 1000000;
	st->st_ctim = st->st_atim = st->st_mtim;
	st->st_ino = ino;
	return 0;
}

static int files_getattr(const struct route *rt, struct stat *st)
{
	return view_ckpt_file_stat(rt->fs, &rt->vp, st);
}

static int files_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	return shadow_list(rt->vp.git_dir, rt->vp.hash, rt->vp.sub, fn, ctx);
}

static int files_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_writes(fi) ? -EROFS : path_open_ckpt_file(rt, fi);
}

static int files_readlink(const struct route *rt, char *buf, size_t size)
{
	return shadow_readlink(rt->vp.git_dir, rt->vp.hash, rt->vp.sub, buf, size);
}

/* ---- the rows ------------------------------------------------------------------------ */

/*
 * Every write-like call under checkpoints/ gets EROFS (readonly). A
 * checkpoint never changes once it is there: its files keep their
 * attributes a second and their pages across opens (a commit's tree); the
 * folders a second, as every folder of the view.
 */
#define CKPT_CACHE(keep_pages) { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .handle = true, .pages = keep_pages }

static const struct view_shape ckpts_shape = { .in = VIEW_TASK, .name = "checkpoints", .type = S_IFDIR };

const struct path_ops view_ckpts = {
	.name = "view-checkpoints",
	.getattr = ckpts_getattr,
	.list = ckpts_list,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .pages = PAGES_OPEN },
	.shape = &ckpts_shape,
};

static const struct view_shape ckpt_shape = { .in = VIEW_CKPTS, .match = ckpt_match, .type = S_IFDIR };

const struct path_ops view_ckpt = {
	.name = "view-checkpoint",
	.getattr = ckpt_getattr,
	.list = ckpt_folder_list,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = CKPT_CACHE(PAGES_OPEN),
	.shape = &ckpt_shape,
};

#define CKPT_LINES_MEMBERS                                                                                  	.getattr = ckpt_lines_getattr, .open = ckpt_lines_open, .cls = PATH_CLASS_VIEW, .readonly = true,     	.whole_store = true, .cache = CKPT_CACHE(PAGES_DIRECT)

static const struct view_shape ckpt_messages_shape = {
	.in = VIEW_CKPT, .name = "messages.jsonl", .match = ckpt_lines_match, .arg = &ckpt_messages_doc,
	.listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_ckpt_messages = {
	.name = "view-checkpoint-messages",
	CKPT_LINES_MEMBERS,
	.shape = &ckpt_messages_shape,
};

static const struct view_shape ckpt_ui_shape = {
	.in = VIEW_CKPT, .name = "ui_messages.jsonl", .match = ckpt_lines_match, .arg = &ckpt_ui_doc,
	.listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_ckpt_ui = {
	.name = "view-checkpoint-ui-messages",
	CKPT_LINES_MEMBERS,
	.shape = &ckpt_ui_shape,
};

static const struct view_shape commit_shape = {
	.in = VIEW_CKPT, .name = "commit.json", .match = ckpt_commit_match, .listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_ckpt_commit = {
	.name = "view-checkpoint-commit",
	.getattr = commit_getattr,
	.open = commit_open,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = CKPT_CACHE(PAGES_OPEN),
	.shape = &commit_shape,
};

static const struct view_shape diff_shape = {
	.in = VIEW_CKPT, .name = "changes.diff", .match = ckpt_commit_match, .listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_ckpt_diff = {
	.name = "view-checkpoint-diff",
	.getattr = diff_getattr,
	.open = diff_open,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = CKPT_CACHE(PAGES_OPEN),
	.shape = &diff_shape,
};

static const struct view_shape files_shape = {
	.in = VIEW_CKPT, .name = "files", .match = ckpt_commit_match, .listed = VIEW_LISTED, .type = S_IFDIR,
	.rest = true,
};

/* files/ and everything below it: the commit's tree, read lazily with libgit2 (shadow.c). */
const struct path_ops view_ckpt_files = {
	.name = "view-checkpoint-files",
	.getattr = files_getattr,
	.list = files_list,
	.open = files_open,
	.readlink = files_readlink,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = CKPT_CACHE(PAGES_KEEP),
	.shape = &files_shape,
};
