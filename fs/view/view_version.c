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

#include "fs/view/view_version.h"
#include "store/store_view.h"
#include "store/util.h"

static const struct {
	const char *name;
	enum view_kind kind;     /* in a version folder */
	enum view_kind task_kind; /* the live file of the task that it is a version of */
} version_files[] = {
	{ "messages.jsonl", VIEW_VERSION_MESSAGES, VIEW_MESSAGES },
	{ "ui_messages.jsonl", VIEW_VERSION_UI, VIEW_UI },
	{ "metadata.json", VIEW_VERSION_METADATA, VIEW_METADATA },
};

/* The docs behind the task's files of version_files[], into *ret. */
static int task_version_docs(const char *task, struct version_docs *ret)
{
	int r;

	ret->n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(version_files); i++) {
		r = view_task_doc(task, version_files[i].task_kind, ret->doc[ret->n], sizeof(ret->doc[0]));
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
 * The versions of the last task asked about, at one generation of the store.
 * A caller copies what it needs out under the lock; the query runs without it.
 */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
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
	hit = cache.gen == gen && strcmp(cache.task, task) == 0 && cache.v;
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
		if (cache.gen == gen && strcmp(cache.task, task) == 0 && cache.v) {
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

int version_parse(struct fs *fs, struct view_path *vp, const char *name)
{
	struct store_task_version v = { 0 };
	char want[64];
	char *end;
	long long k;
	int r;

	errno = 0;
	k = strtoll(name, &end, 10);
	if (errno || k < 1 || *end != '-')
		return -ENOENT;
	r = version_at(fs, vp->task, (size_t)k, &v);
	if (r < 0)
		return r;
	version_name(k, v.time_ns, want, sizeof(want));
	if (strcmp(want, name) != 0)
		return -ENOENT;
	vp->kind = VIEW_VERSION;
	vp->ver_n = k;
	vp->ver_rev = v.rev;
	vp->ver_time_ns = v.time_ns;
	return 0;
}

int version_last(struct fs *fs, const struct view_path *vp, int64_t *ret_time_ns)
{
	struct store_task_version v = { 0 };
	int r = version_at(fs, vp->task, 0, &v);

	if (r < 0 && r != -ENOENT)
		return r;
	*ret_time_ns = r == 0 ? v.time_ns : 0;
	return 0;
}

int view_version_snap(struct fs *fs, const struct view_path *vp, struct store_snap **ret)
{
	return store_snap_open_at(fs->store, vp->doc, vp->ver_rev, vp->kind != VIEW_VERSION_METADATA, ret);
}

int version_file_parse(struct fs *fs, struct view_path *vp, const char *name)
{
	struct store_snap *snap = NULL;
	size_t i;
	int r;

	for (i = 0; i < ARRAY_SIZE(version_files) && strcmp(name, version_files[i].name) != 0; i++)
		;
	if (i == ARRAY_SIZE(version_files) ||
	    view_task_doc(vp->task, version_files[i].task_kind, vp->doc, sizeof(vp->doc)) < 0)
		return -ENOENT;
	vp->kind = version_files[i].kind;
	/* there only if the doc had a version then (a damaged one, kept as found, has no lines) */
	r = view_version_snap(fs, vp, &snap);
	store_snap_free(snap);
	return r == -EINVAL ? -ENOENT : r;
}

int version_list(struct fs *fs, const struct view_path *vp, op_list_fn fn, void *ctx)
{
	struct store_task_version *v = NULL;
	size_t n = 0;
	int r;

	if ((r = fn(ctx, ".", S_IFDIR, 0)) < 0 || (r = fn(ctx, "..", S_IFDIR, 0)) < 0)
		return r;
	if (vp->kind == VIEW_VERSION) {
		for (size_t i = 0; i < ARRAY_SIZE(version_files); i++) {
			struct view_path f = *vp;

			if (version_file_parse(fs, &f, version_files[i].name) == 0 &&
			    (r = fn(ctx, version_files[i].name, S_IFREG, 0)) < 0)
				return r;
		}
		return 0;
	}
	r = versions_of(fs, vp->task, &v, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char name[64];

		version_name((int64_t)i + 1, v[i].time_ns, name, sizeof(name));
		r = fn(ctx, name, S_IFDIR, 0);
	}
	free(v);
	return r;
}
