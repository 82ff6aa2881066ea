/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_ROUTE_H
#define CONVFS_ROUTE_H

/*
 * Where a request goes, worked out once where it comes in (lowlevel.c) and
 * handed to the operation (ops.c, open.c, names.c), which never looks at the
 * path's shape again:
 *
 *   ROUTE_DOC    a conversation file of the compat tree: the store has it
 *                (tasks/<id>/ui_messages.json, state/taskHistory.json, ...);
 *   ROUTE_VIEW   a path of the workspaces view, computed from the store;
 *                vp says which (view_parse());
 *   ROUTE_PLAIN  anything else, the root and the client's own entries in
 *                workspaces/ included: the backing tree (plain.c).
 *
 * A view path that names nothing (a task folder not made yet, a file that
 * is not there) is still ROUTE_VIEW when view_parse() could tell its kind,
 * with view_err -ENOENT: mkdir of a task folder needs exactly that.
 */

#include "fs/fs.h"
#include "fs/view/view.h"

enum route_kind {
	ROUTE_PLAIN,
	ROUTE_DOC,
	ROUTE_VIEW,
};

struct route {
	const char *rel;            /* from the mount's root, no leading '/': "" is the root */
	enum route_kind kind;
	enum store_path_kind store; /* what the compat tree makes of rel (store_path_kind()) */
	int view_err;               /* 0, or -errno: why the view has nothing at rel */
	struct view_path vp;        /* VIEW_NONE unless ROUTE_VIEW */
};

/*
 * Resolves path ("/a/b", or "a/b") into *ret, which keeps a pointer into
 * path: path must outlive it. Returns 0; the view's verdict on the path is
 * in ret->view_err, for the operation to weigh.
 */
void route_resolve(struct fs *fs, const char *path, struct route *ret);

/* Resolves rt's parent folder (rt not the root): for what a create may make there. */
void route_parent(struct fs *fs, const struct route *rt, struct route *ret, char *buf, size_t size);

#endif
