/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_VERSION_H
#define CONVFS_VIEW_VERSION_H

/*
 * The docs that share the numbering of a task's saved versions
 * (view_version.c), for the commands that number a file's versions as
 * versions/ does (`convfs log`, `convfs restore`: mounts.c, and the
 * daemon's side of restore, control.c).
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

#endif
