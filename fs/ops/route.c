/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * route.c: what a request's path names, worked out once (route.h): the one
 * place that tells the kinds apart. The store's table of managed paths
 * (store_path_kind()) says which paths are docs and folders of docs; the
 * view's walk (view_parse()) says which kind of the view a path is; what
 * neither claims is plain.
 */
#include <string.h>

#include "fs/ops/route.h"

/* The kind of a plain path rel (not the root): by the folder it is in. */
static enum path_kind plain_kind(const char *rel)
{
	const char *slash = strrchr(rel, '/');
	char dir[256];
	size_t len = slash ? (size_t)(slash - rel) : 0;

	/* Longer than any folder of docs (a conversation's: tasks/<id>, sessions/<id>): plain. */
	if (!slash || len >= sizeof(dir))
		return PATH_PLAIN;
	memcpy(dir, rel, len);
	dir[len] = '\0';
	return store_path_kind(dir) == STORE_PATH_DOC_DIR ? PATH_BESIDE_DOCS : PATH_PLAIN;
}

/* The kind rel has in the compat tree. */
static enum path_kind compat_kind(const char *rel, enum store_path_kind store)
{
	char id[72];

	if (!*rel)
		return PATH_ROOT;
	switch (store) {
	case STORE_PATH_ARRAY:
		return PATH_DOC_ARRAY;
	case STORE_PATH_WHOLE:
		return PATH_DOC_WHOLE;
	case STORE_PATH_TASKS_DIR:
		return PATH_TASKS;
	case STORE_PATH_DOC_DIR:
		return store_path_conversation(rel, id, sizeof(id)) == 0 ? PATH_CONVERSATION : PATH_DOC_FOLDER;
	default:
		return plain_kind(rel);
	}
}

void route_resolve(struct fs *fs, const char *path, struct route *ret)
{
	const char *rel = path[0] == '/' ? path + 1 : path;
	enum store_path_kind store = store_path_kind(rel);

	ret->fs = fs;
	ret->rel = rel;
	ret->in = NULL;
	ret->err = 0;
	ret->vp.kind = ret->vp.in = VIEW_NONE;
	ret->vp.aside = false;
	/* A doc is the store's wherever it is; the view's names begin with workspaces/, which holds none. */
	if (store != STORE_PATH_ARRAY && store != STORE_PATH_WHOLE)
		ret->err = view_parse(fs, rel, &ret->vp);
	if (ret->vp.kind != VIEW_NONE) {
		ret->ops = view_rows[ret->vp.kind];
		if (ret->vp.in != VIEW_NONE)
			ret->in = view_rows[ret->vp.in];
		return;
	}
	ret->ops = path_rows[compat_kind(rel, store)];
	ret->err = 0;
}
