/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_H
#define CONVFS_VIEW_H

/*
 * The workspaces view (view.c): the history by project, as files.
 *
 *   workspaces/<name>-<key>/workspace.json
 *   workspaces/<name>-<key>/taskHistory.json    its items of state/taskHistory.json
 *   workspaces/<name>-<key>/tasks/<id>/{messages.jsonl,ui_messages.jsonl,task.json,metadata.json}
 *   workspaces/unknown/tasks/<id>/...      tasks with no known workspace
 *   workspaces/.trash/<id>/                tasks removed with rm -r
 *   .../tasks/<id>/checkpoints/<NNN>-<short>/{messages.jsonl,ui_messages.jsonl,
 *                                            commit.json,changes.diff,files/}
 *   .../tasks/<id>/versions/<NNNNNN>-<time>/{messages.jsonl,ui_messages.jsonl,metadata.json}
 *
 * The client's own entries in workspaces/ (Cline CLI 2.x keeps
 * workspaces/<hash>/workspaceState.json there, 3.x workspaces/chat/) are
 * plain files, made under any name the view is not showing, and always win:
 * a folder of the view whose name a client entry takes (then or later) is
 * shown as "<name>.view" instead, with one log line.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs/fs.h"

/* What a view folder's name gets while the client has an entry of that name. */
#define VIEW_CLASH_SUFFIX ".view"

enum view_kind {
	VIEW_NONE = 0,  /* not in the view: a compat or plain path */
	VIEW_ROOT,      /* workspaces/ */
	VIEW_WS,        /* workspaces/<ws>/ */
	VIEW_WS_JSON,   /* workspaces/<ws>/workspace.json */
	VIEW_WS_HISTORY, /* workspaces/<ws>/taskHistory.json: its items, writable, merged */
	VIEW_TASKS,     /* workspaces/<ws>/tasks/ */
	VIEW_TASK,      /* workspaces/<ws>/tasks/<id>/, workspaces/.trash/<id>/ */
	VIEW_TRASH,     /* workspaces/.trash/ */
	VIEW_MESSAGES,  /* messages.jsonl: tasks/<id>/api_conversation_history.json as lines */
	VIEW_UI,        /* ui_messages.jsonl: tasks/<id>/ui_messages.json as lines */
	VIEW_TASK_JSON, /* task.json: the task's history item */
	VIEW_METADATA,  /* metadata.json: tasks/<id>/task_metadata.json */
	/* read-only from here on: versions and checkpoints; up to VIEW_CKPTS never cached (lowlevel.c) */
	VIEW_VERSIONS,  /* .../tasks/<id>/versions/: one folder a save */
	VIEW_CKPTS,     /* .../tasks/<id>/checkpoints/ */
	VIEW_CKPT,      /* .../checkpoints/<NNN>-<short hash>/ */
	VIEW_CKPT_MESSAGES, /* its messages.jsonl: the api stream cut at the checkpoint */
	VIEW_CKPT_UI,   /* its ui_messages.jsonl: up to the message that carries the hash */
	VIEW_CKPT_COMMIT, /* its commit.json */
	VIEW_CKPT_DIFF, /* its changes.diff: against the previous checkpoint */
	VIEW_CKPT_FILES, /* its files/ and anything below: the commit's tree */
	/* a version never changes: cached by the kernel like a checkpoint's files */
	VIEW_VERSION,   /* .../versions/<NNNNNN>-<time>/: the task after one save */
	VIEW_VERSION_MESSAGES, /* its messages.jsonl */
	VIEW_VERSION_UI, /* its ui_messages.jsonl */
	VIEW_VERSION_METADATA, /* its metadata.json */
};

struct view_path {
	enum view_kind kind;
	bool unknown;   /* the workspace is "unknown" */
	bool trash;     /* under workspaces/.trash */
	char key[16];   /* the workspace's key */
	char task[40];  /* the task id */
	char doc[96];   /* the compat doc behind a file */
	/* checkpoints */
	int ckpt;           /* position, from 1 */
	char hash[48];      /* its commit */
	char prev[48];      /* the previous checkpoint's commit, "" for the first */
	int64_t ckpt_seq;   /* the ui message that carries the hash */
	int64_t ckpt_api;   /* its conversationHistoryIndex */
	int64_t ckpt_ts;    /* its ts, ms */
	char git_dir[512];  /* the shadow repo of the task's workspace */
	char sub[1024];     /* below files/: the path inside the commit ("" its root) */
	/* versions */
	int64_t ver_n;       /* position among the task's saves, from 1 */
	int64_t ver_rev;     /* the revision of that save */
	int64_t ver_time_ns; /* its time */
};

/*
 * The compat doc behind rel (a path from the mount's root), by its shape
 * alone, without the store: rel itself for a conversation file of the
 * client's folder; for a conversation file of the view (messages.jsonl,
 * ui_messages.jsonl, metadata.json, a subagent's, of a task or of the
 * trash) the doc it shows. -ENOENT for anything else (task.json, a
 * checkpoint's files, plain files). Whether rel exists is not looked at.
 */
int view_doc_of(const char *rel, char *buf, size_t n);

/* True for the read-only kinds (versions, checkpoints): every write-like call gets EROFS. */
static inline bool view_readonly(const struct view_path *vp)
{
	return vp->kind >= VIEW_VERSIONS ||
	       (vp->trash && (vp->kind == VIEW_MESSAGES || vp->kind == VIEW_UI || vp->kind == VIEW_METADATA));
}

/*
 * Classifies rel. Returns 0 with kind VIEW_NONE for paths outside the view,
 * 0 with the kind for an existing view path, -ENOENT for a view path that
 * names nothing (or -errno).
 */
int view_parse(struct fs *fs, const char *rel, struct view_path *ret);

int view_getattr(struct fs *fs, const char *rel, const struct view_path *vp, struct stat *st);
int view_list(struct fs *fs, const struct view_path *vp, op_list_fn fn, void *ctx);

/*
 * The content of a generated file (workspace.json, task.json, a workspace's
 * taskHistory.json); free() it. *ret_rev (may be NULL) is the history's
 * revision it shows (taskHistory.json only).
 */
int view_render(struct fs *fs, const struct view_path *vp, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
		int64_t *ret_rev);

/* The conversation at a checkpoint (VIEW_CKPT_MESSAGES, VIEW_CKPT_UI), as JSON Lines. */
int view_ckpt_snap(struct fs *fs, const struct view_path *vp, struct store_snap **ret);

/* True for a folder directly in workspaces/: a workspace, unknown, .trash. */
static inline bool view_is_top(const struct view_path *vp)
{
	return vp->kind == VIEW_WS || (vp->kind == VIEW_TRASH && vp->trash);
}

/*
 * Tells the kernel that the folders showing conversation task_id changed
 * (their times follow its last activity, their listings its files, its
 * checkpoints and its versions): workspaces/, its workspace's folder, tasks/,
 * the task's folder, its checkpoints/ and versions/; and so did its files
 * whose attributes the kernel keeps (view_task_file_named()). Their
 * attributes and listings are dropped (notify_inval_inode), which takes no
 * folder lock in the kernel: safe from inside a request.
 */
void view_invalidate_conversation(struct fs *fs, const char *task_id);

/*
 * True for the names of a live task's files whose attributes the kernel may
 * keep: messages.jsonl, ui_messages.jsonl, metadata.json (every commit of
 * the doc behind one tells it: view_invalidate_conversation()).
 */
bool view_task_file_named(const char *name);

/*
 * The compat doc behind the task file of kind (VIEW_MESSAGES, VIEW_UI,
 * VIEW_METADATA) of conversation task, into buf; -ENOENT if that kind of
 * conversation has no such file.
 */
int view_task_doc(const char *task, enum view_kind kind, char *buf, size_t n);

/* True if rel is a view path that can hold a task: workspaces/<ws>/tasks/<id>. */
bool view_is_task_slot(const struct view_path *vp);

#endif
