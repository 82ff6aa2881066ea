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
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int ckpt_match(void *ctx, const struct store_checkpoint *c)
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
	int64_t seq, ts, api_index;
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
	cc->v[cc->n] = (struct ckpt_entry){ .seq = c->seq, .ts = c->ts, .api_index = c->api_index };
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
		struct store_checkpoint c = { cc.v[i].seq, cc.v[i].ts, cc.v[i].hash, cc.v[i].api_index };

		r = fn(ctx, &c);
	}
	free(cc.v);
	return r;
}

/* Fills vp's checkpoint from its folder name "<NNN>-<short hash>". */
static int ckpt_parse(struct fs *fs, struct view_path *vp, const char *name)
{
	struct ckpt_find f = { .vp = vp, .name = name };
	int r = ckpt_each(fs, vp->task, ckpt_match, &f);

	if (r < 0)
		return r;
	if (!f.found)
		return -ENOENT;
	vp->kind = VIEW_CKPT;
	ckpt_git_dir(fs, vp);
	return 0;
}

/*
 * The checkpoint folder last resolved, for as long as nothing is committed:
 * ls -l of a snapshot's files/ resolves the same folder once a file.
 */
static pthread_mutex_t ckpt_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct view_path ckpt_cache;
static char ckpt_cache_prefix[1024];
static uint64_t ckpt_cache_gen;

int ckpt_parse_cached(struct fs *fs, struct view_path *vp, const char *rel, const char *name)
{
	const char *at = strstr(rel, name);
	size_t plen = at ? (size_t)(at - rel) + strlen(name) : 0;
	uint64_t gen = store_generation(fs->store);
	bool hit;
	int r;

	if (!at || plen >= sizeof(ckpt_cache_prefix))
		return ckpt_parse(fs, vp, name);
	pthread_mutex_lock(&ckpt_cache_lock);
	hit = ckpt_cache_gen == gen && strlen(ckpt_cache_prefix) == plen && strncmp(ckpt_cache_prefix, rel, plen) == 0;
	if (hit)
		*vp = ckpt_cache;
	pthread_mutex_unlock(&ckpt_cache_lock);
	if (hit)
		return 0;
	r = ckpt_parse(fs, vp, name);
	if (r == 0) {
		pthread_mutex_lock(&ckpt_cache_lock);
		ckpt_cache = *vp;
		memcpy(ckpt_cache_prefix, rel, plen);
		ckpt_cache_prefix[plen] = '\0';
		ckpt_cache_gen = gen;
		pthread_mutex_unlock(&ckpt_cache_lock);
	}
	return r;
}

/* A file of a checkpoint folder: name, and below files/ the path rest. */
int ckpt_file_parse(struct view_path *vp, const char *name, const char *rest)
{
	static const struct {
		const char *name;
		enum view_kind kind;
	} files[] = {
		{ "messages.jsonl", VIEW_CKPT_MESSAGES }, { "ui_messages.jsonl", VIEW_CKPT_UI },
		{ "commit.json", VIEW_CKPT_COMMIT }, { "changes.diff", VIEW_CKPT_DIFF },
		{ "files", VIEW_CKPT_FILES },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files) && strcmp(name, files[i].name) != 0; i++)
		;
	if (i == ARRAY_SIZE(files) || (*rest && files[i].kind != VIEW_CKPT_FILES))
		return -ENOENT;
	vp->kind = files[i].kind;
	if (vp->kind == VIEW_CKPT_MESSAGES || vp->kind == VIEW_CKPT_UI)
		snprintf(vp->doc, sizeof(vp->doc), "tasks/%s/%s", vp->task,
			 vp->kind == VIEW_CKPT_UI ? "ui_messages.json" : "api_conversation_history.json");
	if (vp->kind == VIEW_CKPT_FILES)
		memcpy(vp->sub, rest, strlen(rest) + 1);
	/* no repo, or not this commit: no files/, commit.json, changes.diff */
	if ((vp->kind == VIEW_CKPT_FILES || vp->kind == VIEW_CKPT_COMMIT || vp->kind == VIEW_CKPT_DIFF) &&
	    (!*vp->git_dir || shadow_has_commit(vp->git_dir, vp->hash) < 0))
		return -ENOENT;
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
 * message's conversationHistoryIndex (elements 0..index).
 */
int view_ckpt_snap(struct fs *fs, const struct view_path *vp, struct store_snap **ret)
{
	struct store_snap *snap;
	int64_t n = vp->kind == VIEW_CKPT_UI ? vp->ckpt_seq + 1 : vp->ckpt_api + 1;
	int r;

	r = store_snap_open_jsonl(fs->store, vp->doc, &snap);
	if (r < 0)
		return r;
	r = store_snap_limit(fs->store, snap, n);
	if (r < 0) {
		store_snap_free(snap);
		return r;
	}
	*ret = snap;
	return 0;
}
