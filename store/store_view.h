/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_VIEW_H
#define CONVFS_STORE_VIEW_H

/*
 * What the workspaces view needs of the store, apart from docs and
 * snapshots (store.h): docs as JSON Lines, the trash, workspaces and their
 * tasks, a task's life cycle, and checkpoints. Same conventions as store.h.
 */

#include "store/store.h"

/*
 * The same doc rendered as JSON Lines: each element of the array on one line,
 * byte-identical to the element (a line break inside a pretty-printed element
 * reads as a space), each followed by "\n". Read with store_snap_read().
 */
int store_snap_open_jsonl(struct store *st, const char *path, struct store_snap **ret);

/*
 * The last version of a removed doc (a task in the trash), as JSON or as
 * JSON Lines; -ENOENT if path is not a removed doc.
 */
int store_snap_open_removed(struct store *st, const char *path, bool jsonl, struct store_snap **ret);

struct store_workspace {
	const char *key;  /* Cline's checkpoint hash of path, decimal */
	const char *path;
	int64_t ntasks;
	int64_t first_ns; /* first activity: a task first seen */
	int64_t last_ns;  /* last activity: a doc of one of its tasks changed */
};
typedef int (*store_workspace_fn)(void *ctx, const struct store_workspace *ws);

/* The path of the workspace with key (free()), -ENOENT if none. */
int store_workspace_path(struct store *st, const char *key, char **ret_path);

/* Calls fn for each workspace with at least one live task, or for the one with key. */
int store_workspace_list(struct store *st, store_workspace_fn fn, void *ctx);
int store_workspace_get(struct store *st, const char *key, store_workspace_fn fn, void *ctx); /* -ENOENT */
/* The latest last_ns of the workspaces store_workspace_list() calls back for (0 if none). */
int store_workspace_last(struct store *st, int64_t *ret_ns);

/*
 * Calls fn for each live task (one that has a doc) of the workspace with key
 * (NULL: tasks with no known workspace); with trashed, the trashed tasks of
 * any workspace instead.
 */
typedef int (*store_task_fn)(void *ctx, const char *task_id, int64_t mtime_ns);
int store_task_list(struct store *st, const char *ws_key, bool trashed, store_task_fn fn, void *ctx);

/*
 * The workspace key of a task (*ret_key NULL if it has none; free()), and
 * whether it is in the trash. -ENOENT if there is no such task with docs.
 */
int store_task_workspace(struct store *st, const char *task_id, char **ret_key, bool *ret_trashed);

/*
 * Creates a task in the workspace with key (NULL: none) with empty
 * conversation files ("[]"), as `mkdir workspaces/<ws>/tasks/<id>` does.
 * -EEXIST if the task has docs already.
 */
int store_task_create(struct store *st, const char *task_id, const char *ws_key, const struct store_who *who);

/*
 * Moves a task to the trash, in one transaction: its docs leave the tree
 * (their content stays, as revisions) and its item leaves taskHistory.json.
 * A task whose docs already left one by one (rm -r in the compat tree
 * removes them before its folder) is trashed all the same. -ENOENT if the
 * store never knew the task.
 */
int store_task_trash(struct store *st, const char *task_id, const struct store_who *who);

/*
 * Brings a task back from the trash, in one transaction: every doc of the
 * task that is not in the tree comes back with its last content, and its
 * history item with it. -ENOENT if the task is not in the trash.
 */
int store_task_restore(struct store *st, const char *task_id, const struct store_who *who);

/*
 * workspaces/<ws>/taskHistory.json: the items of taskHistory.json whose task
 * is in the workspace with ws_key (NULL: tasks with none), as a JSON array
 * (free()), with the history's mtime and revision.
 */
int store_history_render_ws(struct store *st, const char *ws_key, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			    int64_t *ret_rev);

/* A checkpoint of a task: a commit of the shadow repo stamped on a message. */
struct store_checkpoint {
	int64_t seq;       /* position of the first ui message that carries the hash */
	int64_t ts;        /* that message's ts (ms) */
	const char *hash;  /* lastCheckpointHash */
	int64_t api_index; /* its conversationHistoryIndex (-1: none) */
	/* its conversationHistoryDeletedRange, the client's when it goes back there (range_end -1: none) */
	int64_t range_start, range_end;
};
typedef int (*store_checkpoint_fn)(void *ctx, const struct store_checkpoint *c);

/* Calls fn for each checkpoint of the task, in the order of the conversation. */
int store_checkpoints(struct store *st, const char *task_id, store_checkpoint_fn fn, void *ctx);

/* Cuts a snapshot (either rendering) to its first n elements: the conversation at a checkpoint. */
int store_snap_limit(struct store *st, struct store_snap *snap, int64_t n);

/*
 * A saved version of a conversation: one revision of any of its files. A
 * task's versions are the revisions that changed one of the docs it is shown
 * by (the view's messages.jsonl, ui_messages.jsonl, metadata.json), oldest
 * first; a removal (unlink, rename-out) is no version.
 */
struct store_task_version {
	int64_t rev;     /* the revision: every doc of the task as it stood after it */
	int64_t time_ns; /* when it was committed */
};

/*
 * The versions of the docs at paths[0..npaths) (at most
 * STORE_VERSION_DOCS_MAX), oldest first, in one query: *ret_v (free()) gets
 * *ret_n of them, version k at index k - 1 (the numbering of
 * store_history.h); none is not an error.
 */
int store_versions(struct store *st, const char *const *paths, size_t npaths, struct store_task_version **ret_v,
		   size_t *ret_n);

/*
 * The doc at path as it stood after revision rev (either rendering), read
 * with store_snap_read(); its stat's mtime is that of its last change up to
 * rev. -ENOENT if the doc had no version yet at rev; -EINVAL for JSON Lines
 * of a doc that is not an array.
 */
int store_snap_open_at(struct store *st, const char *path, int64_t rev, bool jsonl, struct store_snap **ret);

/* The task's current history item (free()), -ENOENT if taskHistory.json has none. */
int store_history_item(struct store *st, const char *task_id, char **ret_json, size_t *ret_len,
		       int64_t *ret_mtime_ns);

#endif
