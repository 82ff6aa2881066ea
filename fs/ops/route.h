/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_ROUTE_H
#define CONVFS_ROUTE_H

/*
 * Where a request goes, worked out once where it comes in (lowlevel.c):
 * the row of its path's kind (fs/ops/kinds.h), which the operations (ops.c,
 * open.c, names.c, control.c) and what the kernel may keep (kcache.c) call
 * through or read, and never look at the path's shape again. A doc of the
 * compat tree (tasks/<id>/ui_messages.json, state/taskHistory.json, ...) is
 * the store's; a path of the workspaces view is computed from the store (vp
 * says which, view_parse()); anything else, the root and the client's own
 * entries in workspaces/ included, is the backing tree's (plain.c).
 *
 * A path that names nothing keeps the kind it would have (a task id in a
 * workspace's tasks/ with no task there: mkdir makes one) or VIEW_MISSING
 * (a name the view does not have), with err -ENOENT (or why the view could
 * not say): the rows of those answer with it.
 */

#include "fs/fs.h"
#include "fs/ops/kinds.h"
#include "fs/view/view.h"

struct route {
	struct fs *fs;              /* the mount it is a path of */
	const char *rel;            /* from the mount's root, no leading '/': "" is the root */
	const struct path_ops *ops; /* the row of rel's kind */
	const struct path_ops *in;  /* the row of the folder of the view rel is in (the view's only; else NULL) */
	int err;                    /* 0, or -errno: why nothing is at rel (the kinds that name nothing) */
	struct view_path vp;        /* VIEW_NONE unless a path of the view */
};

/*
 * Resolves path ("/a/b", or "a/b") into *ret, which keeps a pointer into
 * path: path must outlive it.
 */
void route_resolve(struct fs *fs, const char *path, struct route *ret);

#endif
