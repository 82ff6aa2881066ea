/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * route.c: what a request's path names, worked out once (route.h).
 */
#include <string.h>

#include "fs/ops/route.h"

void route_resolve(struct fs *fs, const char *path, struct route *ret)
{
	const char *rel = path[0] == '/' ? path + 1 : path;

	ret->rel = rel;
	ret->store = store_path_kind(rel);
	ret->view_err = view_parse(fs, rel, &ret->vp);
	if (ret->store == STORE_PATH_ARRAY || ret->store == STORE_PATH_WHOLE)
		ret->kind = ROUTE_DOC;
	else if (ret->vp.kind != VIEW_NONE)
		ret->kind = ROUTE_VIEW;
	else
		ret->kind = ROUTE_PLAIN;
}

void route_parent(struct fs *fs, const struct route *rt, struct route *ret, char *buf, size_t size)
{
	const char *slash = strrchr(rt->rel, '/');
	size_t len = slash ? (size_t)(slash - rt->rel) : 0;

	if (len >= size)
		len = 0; /* longer than any path of the view or the store: plain, like the root */
	memcpy(buf, rt->rel, len);
	buf[len] = '\0';
	route_resolve(fs, buf, ret);
}
