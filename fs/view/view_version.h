/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_VERSION_H
#define CONVFS_VIEW_VERSION_H

/*
 * A task's saved versions in the view (view_version.c), for view.c and
 * open.c; and the docs that share their numbering, for the commands that
 * number a file's versions as versions/ does (`convfs log`, `convfs
 * restore`: mounts.c, and the daemon's side of restore, control.c).
 */

#include "fs/view/view.h"
#include "store/store.h"

/*
 * The docs whose saves share one numbering of versions (store_history.h):
 * what versions/ numbers, `convfs log` lists and `convfs restore` takes.
 * paths[] points into doc[]: fill it in place, do not copy it.
 */
struct version_docs {
	size_t n;
	const char *paths[STORE_VERSION_DOCS_MAX];
	char doc[STORE_VERSION_DOCS_MAX][256];
};

/*
 * The docs that share the numbering of the doc at path doc (a compat path,
 * as view_doc_of() gives): for a file a task's folder shows (messages.jsonl,
 * ui_messages.jsonl, metadata.json; a 3.x session's messages.jsonl) the docs
 * behind all of them, the task's versions/; for any other (taskHistory.json,
 * a subagent's conversation, context_history.json) the doc alone.
 */
int version_docs_of(const char *doc, struct version_docs *ret);

/* Fills vp (a task's, kind VIEW_VERSIONS) with version folder name; -ENOENT if there is none. */
int version_parse(struct fs *fs, struct view_path *vp, const char *name);
/* A file of a version folder: its kind and doc; -ENOENT if the version has no such file. */
int version_file_parse(struct fs *fs, struct view_path *vp, const char *name);
/* The time of the task's last version (0: none); -errno. */
int version_last(struct fs *fs, const struct view_path *vp, int64_t *ret_time_ns);
/* Lists versions/ (one folder a version, oldest first) or a version folder. */
int version_list(struct fs *fs, const struct view_path *vp, op_list_fn fn, void *ctx);
/* The content of a version's file, pinned at its revision (free with store_snap_free()). */
int view_version_snap(struct fs *fs, const struct view_path *vp, struct store_snap **ret);

#endif
