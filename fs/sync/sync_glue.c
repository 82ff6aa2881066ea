/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_glue.c: the mount's side of one history across machines.
 *
 * The sync itself is the store's (store/sync.h): a thread with a
 * connection of its own to the store, which pushes this mount's commits to
 * PostgreSQL and takes in the other machines'. What it needs from the
 * mount is little: the options, checked before anything is mounted (a
 * password on the command line is refused: every user sees it in ps); the
 * thread, started once the mount serves and stopped before the store is
 * closed; and, after each commit it took in, what a commit through the
 * mount does beside the store (the backing tree's folders). The kernel
 * learns of those commits as of any other connection's: the store's
 * watcher (fs/kernel/watch.c) reads the revision log after them.
 * sync_glue_changed() runs on the sync's thread, which serves no request:
 * no request of the mount waits for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "fs/cmd/progress.h"
#include "fs/kernel/kcache.h"
#include "fs/ops/ops_internal.h"
#include "fs/sync/sync_glue.h"
#include "store/store_changes.h"
#include "store/store_view.h"
#include "store/sync.h"
#include "store/util.h"

struct sync_glue {
	char *conninfo;
	unsigned char key[STORE_SYNC_KEY_SIZE];
	bool has_key;
	struct store_sync_config cfg;
	struct store_sync *sync;
	char *store_path;
	struct fs *fs;
};

void sync_glue_free(struct sync_glue *g)
{
	if (!g)
		return;
	sync_glue_stop(g);
	sodium_memzero(g->key, sizeof(g->key));
	free(g->conninfo);
	free(g->store_path);
	free(g);
}

int sync_glue_prepare(struct fs *fs, const char *conninfo, const char *key_path, struct sync_glue **ret)
{
	struct sync_glue *g;
	int r;

	*ret = NULL;
	if (!conninfo) {
		if (key_path) {
			log_err("sync: -o sync_key needs -o sync=CONNINFO");
			return -EINVAL;
		}
		return 0;
	}
	if (fs->salvage) {
		/* A damaged store is served read-only: nothing to push, and nothing pulled could be stored. */
		log_err("sync: -o sync and -o salvage do not go together: a damaged store is served read-only");
		return -EINVAL;
	}
	if ((r = store_sync_conninfo_check(conninfo)) < 0)
		return r;
	if (!(g = calloc(1, sizeof(*g))) || !(g->conninfo = strdup(conninfo))) {
		free(g);
		return -ENOMEM;
	}
	if (key_path) {
		if ((r = store_sync_key_load(key_path, g->key)) < 0) {
			sync_glue_free(g);
			return r;
		}
		g->has_key = true;
	}
	if ((r = store_sync_enable(fs->store)) < 0) {
		sync_glue_free(g);
		return r;
	}
	*ret = g;
	return 0;
}

static void sync_glue_changed(void *ctx, const char *path);
static void sync_glue_prepare_doc(void *ctx, const char *path);

static void catch_up_progress(void *ctx, int64_t done, int64_t total)
{
	progress_show(ctx, "taking in the shared history: %lld of %lld commits", (long long)done, (long long)total);
}

void sync_glue_catch_up(struct sync_glue *g, struct fs *fs, const char *store_path)
{
	struct store_sync_config cfg = { .store_path = store_path, .conninfo = g->conninfo,
					 .key = g->has_key ? g->key : NULL, .changed = sync_glue_changed,
					 .prepare = sync_glue_prepare_doc, .ctx = g };
	struct store_sync_status s = { 0 };
	struct progress p;
	int r;

	/* Only a store that has never pulled: later ones catch up behind the mount, which answers meanwhile. */
	if (store_open(store_path, 0, &fs->store) < 0)
		return;
	r = store_sync_status_get(fs->store, &s);
	if (r == 0 && s.enabled && s.pulled == 0) {
		/* What it takes in gets its folders in the backing tree as it comes (nothing is mounted to tell). */
		g->fs = fs;
		progress_start(&p);
		r = store_sync_catch_up(&cfg, catch_up_progress, &p);
		progress_end(&p, "taking in the shared history: %s", r < 0 ? "stopped" : "done");
		if (r == -EPROTO)
			log_warn("sync: the shared history was not taken in before mounting (see above)");
		else if (r < 0)
			log_warn("sync: the shared history could not be taken in before mounting (%s); the mount takes it "
				 "in once PostgreSQL can be reached", strerror(-r));
	}
	store_sync_status_release(&s);
	store_free(TAKE_PTR(fs->store));
}

/*
 * A commit pulled from another machine changed the doc at path (NULL: a
 * forget, anything may have changed). The kernel and the view learn of it
 * as of any commit another connection makes (fs/kernel/watch.c reads the
 * revision log after it); what is left here is what a commit through the
 * mount does beside the store: a task's backing folder to or from the
 * trash (a new conversation's folder was made before, by
 * sync_glue_prepare_doc()). The seam where the sync meets the mount.
 */
static void sync_glue_changed(void *ctx, const char *path)
{
	struct sync_glue *g = ctx;
	enum store_path_kind kind = path ? store_path_kind(path) : STORE_PATH_PLAIN;
	char task[72];

	if (!path) {
		/*
		 * Past versions changed too, which no revision says: the
		 * daemon's connection lets go of the snapshot it may hold and
		 * of the docs' bytes it keeps for readers, then the kernel
		 * drops every page it kept. Every daemon's
		 * watcher does the same once it sees the count of forgets move
		 * (this one's too, a moment later); this one's mount drops them
		 * before the sync goes on.
		 */
		store_forgot_elsewhere(g->fs->store);
		kcache_forgot(g->fs);
		kcache_placement_check(g->fs);
		return;
	}
	if (kind == STORE_PATH_DOC_DIR && store_path_conversation(path, task, sizeof(task)) == 0) {
		/* A task went to the trash or came back: its backing folder follows, as through the mount. */
		_cleanup_free_ char *key = NULL;
		bool trashed = false;

		if (store_task_workspace(g->fs->store, task, &key, &trashed) == 0) {
			if (trashed)
				task_folder_trash(g->fs, task);
			else
				task_folder_restore(g->fs, task);
		}
	}
}

/*
 * Before a pulled commit makes or changes the doc at path: its folder in
 * the backing tree, as the first save through the mount makes it, there
 * before any lookup can find the doc.
 */
static void sync_glue_prepare_doc(void *ctx, const char *path)
{
	struct sync_glue *g = ctx;
	const char *slash = strrchr(path, '/');

	if (slash && backing_mkdirs(g->fs, path, (size_t)(slash - path)) < 0)
		log_warn("sync: cannot make the folder of '%s' in the backing tree", path);
}

int sync_glue_start(struct sync_glue *g, struct fs *fs, const char *store_path)
{
	int r;

	if (!(g->store_path = strdup(store_path)))
		return -ENOMEM;
	g->fs = fs;
	g->cfg = (struct store_sync_config){ .store_path = g->store_path, .conninfo = g->conninfo,
					     .key = g->has_key ? g->key : NULL, .changed = sync_glue_changed,
					     .prepare = sync_glue_prepare_doc, .ctx = g, .served = fs->store };
	r = store_sync_start(&g->cfg, &g->sync);
	if (r < 0)
		log_err("sync: the mount goes on without syncing: %s", strerror(-r));
	return r;
}

void sync_glue_stop(struct sync_glue *g)
{
	if (!g)
		return;
	store_sync_stop(g->sync);
	g->sync = NULL;
}
