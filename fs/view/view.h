/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_H
#define CONVFS_VIEW_H

/*
 * The workspaces view: the history by project, as files.
 *
 *   workspaces/<name>-<key>/workspace.json
 *   workspaces/<name>-<key>/taskHistory.json    its items of state/taskHistory.json
 *   workspaces/<name>-<key>/tasks/<id>/{messages.jsonl,ui_messages.jsonl,task.json,metadata.json}
 *   workspaces/unknown/tasks/<id>/...      tasks with no known workspace
 *   workspaces/.trash/<id>/                tasks removed with rm -r
 *   workspaces/README.md                   what this is
 *   .../tasks/<id>/checkpoints/<NNN>-<short>/{messages.jsonl,ui_messages.jsonl,
 *                                            commit.json,changes.diff,agent.diff,files/}
 *   .../tasks/<id>/versions/<NNNNNN>-<time>/{messages.jsonl,ui_messages.jsonl,metadata.json}
 *   search/<query>/{results.jsonl,<rank>-<taskId>}   at the mount's root: the tasks a query finds
 *   .../tasks/<id>/context.jsonl, and in each checkpoint and version: what the
 *                                          model saw (found by name, not listed)
 *   .../tasks/<session>/subagents/<agent>/{messages.jsonl,spawn.json,subagents/}
 *
 * The client's own entries in workspaces/ (Cline CLI 2.x keeps
 * workspaces/<hash>/workspaceState.json there, 3.x workspaces/chat/) are
 * plain files, made under any name the view is not showing, and always win:
 * a folder of the view whose name a client entry takes (then or later) is
 * shown as "<name>.view" instead, with one log line.
 *
 * Each kind of path of the view is one row (struct path_ops,
 * fs/ops/kinds.h), defined beside its code: view_ws.c (workspaces/, a
 * workspace's folder and files, tasks/, the trash, a name the view does not
 * have), view_task.c (a task's folder and its files, live and in the trash),
 * view_ckpt.c, view_agent_diff.c, view_version.c, view_readme.c,
 * view_context_kind.c, view_subagents.c. A row's shape (struct view_shape) says where
 * its kind is found: view_parse() is a walk of those shapes, one component
 * at a time, so a kind and its parse rule are one place.
 */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "fs/ops/kinds.h"

/* What a view folder's name gets while the client has an entry of that name. */
#define VIEW_CLASH_SUFFIX ".view"

/*
 * The kinds of the view, with their rows. The list makes both enum
 * view_kind and the table of rows (view_rows[], view.c): a kind without a
 * row does not link. A folder's listed names come in this order.
 */
#define VIEW_KINDS(X)                                                                                            \
	X(VIEW_ROOT, view_root)                   /* workspaces/ */                                              \
	X(VIEW_WS, view_ws)                       /* workspaces/<name>-<key>/, workspaces/unknown/ */            \
	X(VIEW_WS_JSON, view_ws_json)             /* its workspace.json */                                       \
	X(VIEW_WS_HISTORY, view_ws_history)       /* its taskHistory.json: its items, writable, merged */        \
	X(VIEW_TASKS, view_tasks)                 /* its tasks/ */                                               \
	X(VIEW_TASK, view_task)                   /* .../tasks/<id>/ */                                          \
	X(VIEW_TASK_SLOT, view_task_slot)         /* .../tasks/<id> with no task there: mkdir, mv back */       \
	X(VIEW_TRASH, view_trash)                 /* workspaces/.trash/ */                                       \
	X(VIEW_TRASH_TASK, view_trash_task)       /* workspaces/.trash/<id>/ */                                  \
	X(VIEW_README, view_readme)               /* workspaces/README.md: what the view is (view_readme.c) */  \
	X(VIEW_MESSAGES, view_messages)           /* messages.jsonl: the api conversation as lines */            \
	X(VIEW_UI, view_ui)                       /* ui_messages.jsonl: the ui messages as lines */              \
	X(VIEW_TASK_JSON, view_task_json)         /* task.json: the task's history item (a session's manifest) */ \
	X(VIEW_METADATA, view_metadata)           /* metadata.json: task_metadata.json */                        \
	X(VIEW_CONTEXT, view_context_jsonl)       /* context.jsonl: what the model saw (view_context_kind.c) */ \
	X(VIEW_SUBAGENTS, view_subagents)         /* a session's subagents/ (view_subagents.c) */                \
	X(VIEW_SUBAGENT_DIR, view_subagent_dir)   /* subagents/<agent>/: one subagent */                         \
	X(VIEW_SUBAGENT, view_subagent)           /* its messages.jsonl: its conversation, as lines */           \
	X(VIEW_SUBAGENT_SPAWN, view_subagent_spawn) /* its spawn.json: what spawned it, how it ended */         \
	X(VIEW_SUBAGENTS_NESTED, view_subagents_nested) /* its own subagents/ (a VIEW_SUBAGENTS once found) */  \
	X(VIEW_TRASH_MESSAGES, view_trash_messages) /* the trash's: the last version, read-only */              \
	X(VIEW_TRASH_UI, view_trash_ui)                                                                          \
	X(VIEW_TRASH_METADATA, view_trash_metadata)                                                              \
	X(VIEW_TRASH_SUBAGENT, view_trash_subagent) /* found by name, not listed */                             \
	X(VIEW_CKPTS, view_ckpts)                 /* .../tasks/<id>/checkpoints/: found by name, not listed */   \
	X(VIEW_CKPT, view_ckpt)                   /* .../checkpoints/<NNN>-<short hash>/ */                      \
	X(VIEW_CKPT_MESSAGES, view_ckpt_messages) /* the api conversation cut at the checkpoint */               \
	X(VIEW_CKPT_UI, view_ckpt_ui)             /* the ui messages up to the one that carries the hash */      \
	X(VIEW_CKPT_COMMIT, view_ckpt_commit)     /* commit.json */                                              \
	X(VIEW_CKPT_DIFF, view_ckpt_diff)         /* changes.diff: against the previous checkpoint */            \
	X(VIEW_CKPT_FILES, view_ckpt_files)       /* files/ and anything below: the commit's tree */             \
	X(VIEW_CKPT_CONTEXT, view_ckpt_context)   /* context.jsonl there: what the model saw then */             \
	X(VIEW_CKPT_AGENT_DIFF, view_ckpt_agent_diff) /* agent.diff: the agent's edits since (view_agent_diff.c) */ \
	X(VIEW_VERSIONS, view_versions)           /* .../tasks/<id>/versions/: found by name, not listed */      \
	X(VIEW_VERSION, view_version)             /* .../versions/<NNNNNN>-<time>/: the task after one save */   \
	X(VIEW_VERSION_MESSAGES, view_version_messages)                                                          \
	X(VIEW_VERSION_UI, view_version_ui)                                                                      \
	X(VIEW_VERSION_METADATA, view_version_metadata)                                                          \
	X(VIEW_VERSION_CONTEXT, view_version_context) /* context.jsonl there: what the model saw then */         \
	X(VIEW_SEARCH, view_search)               /* search/: a top of its own, found by name (view_search.c) */ \
	X(VIEW_SEARCH_QUERY, view_search_query)   /* search/<query>/: the tasks it finds */                      \
	X(VIEW_SEARCH_RESULTS, view_search_results) /* its results.jsonl: the best hits, as convfs search --json */ \
	X(VIEW_SEARCH_HIT, view_search_hit)       /* its <rank>-<taskId>: a symlink to the task's folder */      \
	X(VIEW_MISSING, view_missing)             /* a name the view does not have */

enum view_kind {
	VIEW_NONE = 0, /* not in the view: a compat or plain path */
#define VIEW_KIND_ENUM(kind, row) kind,
	VIEW_KINDS(VIEW_KIND_ENUM)
#undef VIEW_KIND_ENUM
	VIEW_KIND_COUNT
};

#define VIEW_ROW_DECLARE(kind, row) extern const struct path_ops row;
VIEW_KINDS(VIEW_ROW_DECLARE)

/* The row of each kind of the view, by its enum (VIEW_NONE: NULL). */
extern const struct path_ops *const view_rows[VIEW_KIND_COUNT];

struct view_path {
	enum view_kind kind;
	enum view_kind in; /* the folder the last name is in, where the walk got to it; VIEW_NONE: none */
	bool unknown;   /* the workspace is "unknown" */
	bool aside;     /* under a top folder shown by its other name (<name>.view) */
	char key[16];   /* the workspace's key */
	char task[72];  /* the task id */
	char agent[64]; /* a session's subagent, under subagents/ ("": the session itself) */
	char doc[96];   /* the compat doc behind a file */
	bool lines;     /* doc is shown as JSON Lines (else whole) */
	const char *require; /* a member each line appended to doc must have */
	int64_t limit;  /* a checkpoint's: how many of doc's elements it shows */
	/* checkpoints */
	int ckpt;           /* position, from 1 */
	char hash[48];      /* its commit */
	char prev[48];      /* the previous checkpoint's commit, "" for the first */
	int64_t ckpt_seq;   /* the ui message that carries the hash */
	int64_t ckpt_api;   /* its conversationHistoryIndex */
	int64_t ckpt_ts;    /* its ts, ms */
	int64_t ckpt_range_start, ckpt_range_end; /* its conversationHistoryDeletedRange (end -1: none) */
	char git_dir[512];  /* the shadow repo of the task's workspace */
	char sub[1024];     /* below files/: the path inside the commit ("" its root) */
	/* versions */
	int64_t ver_n;       /* position among the task's saves, from 1 */
	int64_t ver_rev;     /* the revision of that save */
	int64_t ver_time_ns; /* its time */
	/* search/<query>/ */
	char query[NAME_MAX + 1]; /* the query, its %XX made bytes */
};

/* Whether a folder's listing names a kind it holds (view_list_named()). */
enum view_listed {
	VIEW_UNLISTED,      /* found by its name only */
	VIEW_LISTED,        /* listed whenever its match takes the name */
	VIEW_LISTED_IF_THERE, /* listed if its getattr finds it too (a file whose doc may not exist) */
};

/* One step of the walk: a name looked up in the folder the walk has got to. */
struct view_step {
	const char *name; /* the name */
	const char *rel;  /* the whole path */
	size_t end;       /* rel[0..end) is the path up to and including name */
	const char *rest; /* what follows name ("" for the last name) */
};

/*
 * Where a kind of the view is found: the folder it is in, and its name
 * there or a match that takes names. The walk (view_parse()) tries, in a
 * folder, the kinds named so first, then those with a match alone, in the
 * order of VIEW_KINDS; a match answers 0 (the name is this kind's: it has
 * filled vp, and may have made vp->kind another, such as a free task
 * slot), -ENOENT (not this kind's) or another error (the walk ends).
 */
struct view_shape {
	enum view_kind in;
	const char *name;  /* NULL: any name match takes */
	int (*match)(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at);
	const void *arg;   /* what match and the row's members need of their kind */
	enum view_listed listed;
	mode_t type;       /* S_IFDIR or S_IFREG, as a listing names it */
	bool rest;         /* takes the rest of the path too (a checkpoint's files/...) */
};

/*
 * What a task's file shows (the arg of its shape, and of its versions'):
 * the compat doc behind it, in a Cline task's folder and in a CLI 3.x
 * session's, and how.
 */
struct view_doc_file {
	const char *doc;         /* in tasks/<id>/; NULL: none (task.json: the history item) */
	const char *session_doc; /* in sessions/<id>/, after "<id>"; NULL: none */
	bool lines;              /* shown as JSON Lines */
	const char *require;     /* a member each appended line must have */
};

/*
 * Classifies rel into *ret (its kind, and what the kind needs). Returns 0
 * with kind VIEW_NONE for paths outside the view (and the client's own in
 * workspaces/), 0 with the kind for a view path that names something;
 * -ENOENT (or another -errno) with kind VIEW_MISSING (a name the view does
 * not have) or VIEW_TASK_SLOT (a task id with no task there).
 */
int view_parse(struct fs *fs, const char *rel, struct view_path *ret);

/*
 * The kind of a view path by its shape alone (no store): up[] is its names
 * from the leaf up, the top folder last ("workspaces", or "search").
 */
enum view_kind view_shape_kind(const char *const *up, size_t n);

/* The name at the mount's root of a top kind of the view (VIEW_ROOT, VIEW_SEARCH); NULL for any other. */
const char *view_top_name(enum view_kind kind);

/*
 * The compat doc behind rel (a path from the mount's root), by its shape
 * alone, without the store: rel itself for a conversation file of the
 * client's folder; for a conversation file of the view (messages.jsonl,
 * ui_messages.jsonl, metadata.json, a subagent's, of a task or of the
 * trash) the doc it shows. -ENOENT for anything else (task.json, a
 * checkpoint's files, plain files). Whether rel exists is not looked at.
 */
int view_doc_of(const char *rel, char *buf, size_t n);

/*
 * The other way: the file of the view that shows conversation doc doc, from
 * the mount's root (workspaces/<name>-<key>/tasks/<id>/messages.jsonl, ...),
 * the task's workspace being ws_path and ws_key (NULL: unknown). Its line
 * seq + 1 is the doc's element seq. -ENOENT for a doc no task's folder
 * shows. A subagent's conversation is in the subagents/ of whoever spawned
 * it, which the store st's conversations of the session tell (st NULL: as
 * one the session spawned). (A client entry of the workspace's name, which
 * moves the view's folder to <name>.view, is not looked for.)
 */
int view_path_of(struct store *st, const char *doc, const char *ws_path, const char *ws_key, char *buf, size_t n);
/*
 * The folder of subagent agent of session task, from the task's folder:
 * subagents/<agent>, or subagents/<parent>/subagents/<agent> and so on, as
 * the session's conversations in st tell who spawned whom (into buf). 0,
 * -ENOENT if the session has no such subagent, -ENAMETOOLONG, or an error of
 * the store's.
 */
int view_subagent_folder(struct store *st, const char *task, const char *agent, char *buf, size_t n);
/* The name of a workspace's folder in the view, <name>-<key> ("unknown" for NULL), into buf. */
void view_ws_folder(const char *ws_path, const char *ws_key, char *buf, size_t n);

/* The compat doc of file f of conversation task into buf; -ENOENT if that kind of conversation has none. */
int view_doc_file_path(const struct view_doc_file *f, const char *task, char *buf, size_t n);

/*
 * Tells the kernel that the folders showing conversation task_id changed
 * (their times follow its last activity, their listings its files, its
 * checkpoints and its versions): workspaces/, its workspace's folder, tasks/,
 * the task's folder, its checkpoints/ and versions/; and so did its files
 * whose attributes the kernel keeps (the rows that say cache.told). Their
 * attributes and listings are dropped (notify_inval_inode), which takes no
 * folder lock in the kernel: safe from inside a request.
 */
void view_invalidate_conversation(struct fs *fs, const char *task_id);

/* ---- what the rows share (view.c) ------------------------------------------------ */

/* The attributes every entry of the view has: its inode number (a hash of rel), owner, block size. */
void view_stat_init(struct fs *fs, const char *rel, struct stat *st);
/* A folder (mode) or a file (mode, size) of the view whose time is ns. */
void view_stat_dir(struct fs *fs, struct stat *st, mode_t mode, int64_t ns);
void view_stat_file(struct stat *st, mode_t mode, off_t size, int64_t ns);
/* A generated file's attributes (mode): its rendering's size, the time render says. */
int view_text_stat(const struct route *rt, struct stat *st, path_render_fn render, mode_t mode);
/*
 * Lists the kinds of folder rt names that its shapes name and list
 * (VIEW_KINDS order), each as the walk would find it; for a folder whose
 * names are the client's first (client_names), under the name it has now.
 */
int view_list_named(struct fs *fs, const struct route *rt, op_list_fn fn, void *ctx);
/* ".", then ".." */
int view_list_dots(op_list_fn fn, void *ctx);
/* True if the client has an entry of its own at workspaces/<name>. */
bool view_client_has(struct fs *fs, const char *name);
/* Lists a top-level folder of the view (type) under the name it has now: its own, or with the suffix. */
int view_list_top(struct fs *fs, const char *name, mode_t type, op_list_fn fn, void *ctx);
/* The folder name of the workspace at path with key: its basename made safe, then "-key". */
void view_ws_name(const char *path, const char *key, char *buf, size_t bufsz);
/* The folder name of the workspace with key, or "unknown" for NULL or none; -errno. */
int view_ws_name_of(struct fs *fs, const char *key, char *buf, size_t bufsz);

/* The members of read-only kinds: -EROFS. */
int view_readonly_setattr(const struct route *rt, const struct attr_change *c);
int view_readonly_truncate(const struct route *rt, off_t size);
int view_readonly_setxattr(const struct route *rt, const char *name, const char *value, size_t size);
/* unlink of a task's file: nothing; it goes with its folder (rm -r moves the task to the trash). */
int view_unlink_with_folder(const struct route *rt);

/* ---- view_task.c ------------------------------------------------------------------ */

/* A subagent's messages.jsonl (view_subagents.c): its doc, sessions/<id>/<agent>.messages.json. */
int view_subagent_messages_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
				 const struct view_step *at);

/* A live task's time: its ui stream's, or its session's conversation's; 0 if it has neither. */
int64_t view_task_time(struct fs *fs, const char *task);
/* The files a task's folder shows, live (for versions and restores): their docs. */
extern const struct view_doc_file view_messages_file, view_ui_file, view_metadata_file;

#endif
