/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_version.c: a task's saved versions in the view.
 *
 * workspaces/<ws>/tasks/<id>/versions/<NNNNNN>-<time>/ is one folder a save
 * of any of the files the task's folder shows (messages.jsonl,
 * ui_messages.jsonl, metadata.json; a 3.x session has messages.jsonl only),
 * numbered from 1 in the order of the revision log, zero-padded to six
 * digits so that `ls` sorts them, with the save's time in UTC. Each holds
 * those files as they stood after that save, read-only, pinned at its
 * revision (store_snap_open_at()); a file the task did not have yet is not
 * there.
 *
 * Nothing of a version ever changes: its name, inode numbers (a hash of the
 * path, as everywhere in the view), sizes and times (the save's) are the same
 * at every look, so rsync copies a version once. The list of a task's versions
 * is one query (store_versions()), kept for the last task asked about until
 * the next commit (store_generation()), so that resolving each of 10,000
 * folders, or each file in them, is a lookup in memory.
 *
 * Its kinds, one row each (fs/ops/kinds.h): versions/ (found by its name,
 * not listed in the task's folder), a version's folder, and its files.
 *
 * That numbering is also the one `convfs log` and `convfs restore` give a
 * file of the task (messages.jsonl or the compat file behind it, ...): the
 * docs that share it are said here once, version_docs_of(), so that the
 * number a user reads in versions/ is the one restore takes.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/ops/route.h"
#include "fs/view/view_version.h"
#include "store/store_view.h"
#include "store/util.h"

/* The docs behind the files of a version folder (the args of their shapes), into *ret. */
static int task_version_docs(const char *task, struct version_docs *ret)
{
	int r;

	ret->n = 0;
	for (int k = 1; k < VIEW_KIND_COUNT; k++) {
		const struct view_shape *sh = view_rows[k]->shape;

		if (!sh || sh->in != VIEW_VERSION || !sh->arg)
			continue;
		r = view_doc_file_path(sh->arg, task, ret->doc[ret->n], sizeof(ret->doc[0]));
		if (r == -ENOENT)
			continue; /* that kind of conversation has no such file */
		if (r < 0)
			return r;
		ret->paths[ret->n] = ret->doc[ret->n];
		ret->n++;
	}
	return 0;
}

int version_docs_of(const char *doc, struct version_docs *ret)
{
	char task[72];
	int r;

	if (store_path_conversation(doc, task, sizeof(task)) == 0) {
		if ((r = task_version_docs(task, ret)) < 0)
			return r;
		for (size_t i = 0; i < ret->n; i++)
			if (strcmp(ret->paths[i], doc) == 0)
				return 0;
	}
	if (strlen(doc) >= sizeof(ret->doc[0]))
		return -ENAMETOOLONG;
	memcpy(ret->doc[0], doc, strlen(doc) + 1);
	ret->paths[0] = ret->doc[0];
	ret->n = 1;
	return 0;
}

static void version_name(int64_t n, int64_t time_ns, char *buf, size_t size)
{
	time_t s = (time_t)(time_ns / 1000000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, size, "%06" PRId64 "-%04d%02d%02dT%02d%02d%02dZ", n, tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/*
 * The versions of the last task asked about, at one generation of one store
 * (two mounts may serve two stores in one process). A caller copies what it
 * needs out under the lock; the query runs without it.
 */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const struct store *store;
	char task[40];
	uint64_t gen;
	struct store_task_version *v;
	size_t n;
} cache;

/* Makes the cache hold the task's versions at this generation (one query if it does not). */
static int cache_load(struct fs *fs, const char *task, uint64_t gen)
{
	struct store_task_version *v = NULL;
	struct version_docs docs;
	size_t n = 0;
	bool hit;
	int r;

	pthread_mutex_lock(&cache_lock);
	hit = cache.store == fs->store && cache.gen == gen && strcmp(cache.task, task) == 0 && cache.v;
	pthread_mutex_unlock(&cache_lock);
	if (hit)
		return 0;
	r = task_version_docs(task, &docs);
	if (r == 0)
		r = store_versions(fs->store, docs.paths, docs.n, &v, &n);
	if (r < 0)
		return r;
	if (!v && !(v = malloc(sizeof(*v))))
		return -ENOMEM; /* none: still a list, so that the cache holds it */
	pthread_mutex_lock(&cache_lock);
	free(cache.v);
	cache.v = v;
	cache.n = n;
	cache.gen = gen;
	cache.store = fs->store;
	snprintf(cache.task, sizeof(cache.task), "%s", task);
	pthread_mutex_unlock(&cache_lock);
	return 0;
}

/*
 * Calls fn on the task's versions, under the cache's lock (fn copies out
 * what it needs: ls -l of 10,000 folders looks up each, and copies one).
 */
static int with_versions(struct fs *fs, const char *task, int (*fn)(void *ctx, const struct store_task_version *v, size_t n),
			 void *ctx)
{
	uint64_t gen = store_generation(fs->store);
	int r;

	for (int tries = 0; tries < 3; tries++) {
		r = cache_load(fs, task, gen);
		if (r < 0)
			return r;
		pthread_mutex_lock(&cache_lock);
		if (cache.store == fs->store && cache.gen == gen && strcmp(cache.task, task) == 0 && cache.v) {
			r = fn(ctx, cache.v, cache.n);
			pthread_mutex_unlock(&cache_lock);
			return r;
		}
		pthread_mutex_unlock(&cache_lock); /* another task's list came in between: again */
	}
	return -EAGAIN;
}

struct pick {
	size_t k; /* from 1; 0: the last */
	struct store_task_version v;
	struct store_task_version *all; /* k unused: a copy of all of them (free()) */
	size_t n;
};

static int pick_one(void *ctx, const struct store_task_version *v, size_t n)
{
	struct pick *p = ctx;

	if (p->k > n || (p->k == 0 && n == 0))
		return -ENOENT;
	p->v = v[p->k ? p->k - 1 : n - 1];
	return 0;
}

static int pick_all(void *ctx, const struct store_task_version *v, size_t n)
{
	struct pick *p = ctx;

	p->all = malloc((n ? n : 1) * sizeof(*v));
	if (!p->all)
		return -ENOMEM;
	memcpy(p->all, v, n * sizeof(*v));
	p->n = n;
	return 0;
}

/* Version k of the task (from 1; 0: the last) into *ret; -ENOENT if there is none. */
static int version_at(struct fs *fs, const char *task, size_t k, struct store_task_version *ret)
{
	struct pick p = { .k = k };
	int r = with_versions(fs, task, pick_one, &p);

	if (r == 0)
		*ret = p.v;
	return r;
}

/* The task's versions, copied for a listing (free()). */
static int versions_of(struct fs *fs, const char *task, struct store_task_version **ret_v, size_t *ret_n)
{
	struct pick p = { 0 };
	int r = with_versions(fs, task, pick_all, &p);

	if (r == 0) {
		*ret_v = p.all;
		*ret_n = p.n;
	}
	return r;
}

/* A version's folder, <NNNNNN>-<time>: the task after save NNNNNN. */
static int version_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	struct store_task_version v = { 0 };
	char want[64];
	char *end;
	long long k;
	int r;

	errno = 0;
	k = strtoll(at->name, &end, 10);
	if (errno || k < 1 || *end != '-')
		return -ENOENT;
	r = version_at(fs, vp->task, (size_t)k, &v);
	if (r < 0)
		return r;
	version_name(k, v.time_ns, want, sizeof(want));
	if (strcmp(want, at->name) != 0)
		return -ENOENT;
	vp->ver_n = k;
	vp->ver_rev = v.rev;
	vp->ver_time_ns = v.time_ns;
	return 0;
}

/* The content of a version's file, pinned at its revision (free with store_snap_free()). */
static int version_snap(struct fs *fs, const struct view_path *vp, struct store_snap **ret)
{
	return store_snap_open_at(fs->store, vp->doc, vp->ver_rev, vp->lines, ret);
}

/* A file of a version folder: there only if its doc had a version then (a damaged one, kept as found, has no lines). */
static int version_file_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			      const struct view_step *at)
{
	const struct view_doc_file *f = sh->arg;
	struct store_snap *snap = NULL;
	int r;

	if (view_doc_file_path(f, vp->task, vp->doc, sizeof(vp->doc)) < 0)
		return -ENOENT;
	vp->lines = f->lines;
	r = version_snap(fs, vp, &snap);
	store_snap_free(snap);
	return r == -EINVAL ? -ENOENT : r;
}

/* ---- the rows' members ------------------------------------------------------------ */

/* versions/: the time of the last save (it changes with each). */
static int versions_getattr(const struct route *rt, struct stat *st)
{
	struct store_task_version v = { 0 };
	int r = version_at(rt->fs, rt->vp.task, 0, &v);

	if (r < 0 && r != -ENOENT)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0500, r == 0 ? v.time_ns : 0);
	return 0;
}

/* One folder a version, oldest first. */
static int versions_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct store_task_version *v = NULL;
	size_t n = 0;
	int r;

	if ((r = view_list_dots(fn, ctx)) < 0)
		return r;
	r = versions_of(rt->fs, rt->vp.task, &v, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char name[64];

		version_name((int64_t)i + 1, v[i].time_ns, name, sizeof(name));
		r = fn(ctx, name, S_IFDIR, 0);
	}
	free(v);
	return r;
}

/* A version never changes: its folder and files have the save's time. */
static int version_getattr(const struct route *rt, struct stat *st)
{
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0500, rt->vp.ver_time_ns);
	return 0;
}

static int version_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : view_list_named(rt->fs, rt, fn, ctx);
}

static int version_file_getattr(const struct route *rt, struct stat *st)
{
	struct store_snap *snap;
	int r = version_snap(rt->fs, &rt->vp, &snap);

	if (r < 0)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, 0400, store_snap_size(snap), rt->vp.ver_time_ns);
	store_snap_free(snap);
	return 0;
}

/* A file of a saved version: pinned at its revision, read-only, never changing. */
static int version_file_open(const struct route *rt, struct fuse_file_info *fi)
{
	struct store_snap *snap = NULL;
	int r;

	if (path_open_writes(fi))
		return -EROFS;
	r = version_snap(rt->fs, &rt->vp, &snap);
	return r < 0 ? r : path_open_fixed(rt, fi, snap);
}

/* ---- the rows ------------------------------------------------------------------------ */

/*
 * Every write-like call under versions/ gets EROFS (readonly). Nothing of a
 * version ever changes: names, inode numbers, sizes and times are the same
 * at every look, kept as long as the view's (a second). versions/ itself
 * changes with each save (told: view_invalidate_conversation()).
 */
static const struct view_shape versions_shape = { .in = VIEW_TASK, .name = "versions", .type = S_IFDIR };

const struct path_ops view_versions = {
	.name = "view-versions",
	.getattr = versions_getattr,
	.list = versions_list,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .handle = true, .pages = PAGES_OPEN },
	.shape = &versions_shape,
};

static const struct view_shape version_shape = { .in = VIEW_VERSIONS, .match = version_match, .type = S_IFDIR };

const struct path_ops view_version = {
	.name = "view-version",
	.getattr = version_getattr,
	.list = version_list,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .handle = true, .pages = PAGES_OPEN },
	.shape = &version_shape,
};

#define VERSION_FILE_MEMBERS                                                                                   	.getattr = version_file_getattr, .open = version_file_open, .cls = PATH_CLASS_VIEW, .readonly = true,    	.whole_store = true, .cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .handle = true, .pages = PAGES_DIRECT }

static const struct view_shape version_messages_shape = {
	.in = VIEW_VERSION, .name = "messages.jsonl", .match = version_file_match, .arg = &view_messages_file,
	.listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_version_messages = {
	.name = "view-version-messages",
	VERSION_FILE_MEMBERS,
	.shape = &version_messages_shape,
};

static const struct view_shape version_ui_shape = {
	.in = VIEW_VERSION, .name = "ui_messages.jsonl", .match = version_file_match, .arg = &view_ui_file,
	.listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_version_ui = {
	.name = "view-version-ui-messages",
	VERSION_FILE_MEMBERS,
	.shape = &version_ui_shape,
};

static const struct view_shape version_metadata_shape = {
	.in = VIEW_VERSION, .name = "metadata.json", .match = version_file_match, .arg = &view_metadata_file,
	.listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_version_metadata = {
	.name = "view-version-metadata",
	VERSION_FILE_MEMBERS,
	.shape = &version_metadata_shape,
};
