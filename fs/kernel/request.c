/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request.c: what every request handler shares (request.h): the mount a
 * request asks (fuse_req_userdata(): the struct fs the session was made
 * with, so that nothing a request does reaches the mount through a global),
 * who asks, and the path and route of a node id.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "fs/kernel/nodes.h"
#include "fs/kernel/request.h"
#include "fs/kernel/watch.h"
#include "fs/ops/ops.h"
#include "store/store_changes.h"

__thread pid_t fs_caller_pid;
__thread uid_t fs_caller_uid;
__thread gid_t fs_caller_gid;

bool taking_in(struct fs *fs)
{
	struct take_in *t = fs->take_in;

	return t && !fs_take_in_done(t);
}

int wait_taken_in(struct fs *fs, const char *path, bool listing)
{
	struct route rt;

	if (!taking_in(fs))
		return 0;
	route_resolve(fs, path, &rt);
	return fs_take_in_wait(fs->take_in, rt.rel, rt.ops->whole_store, listing);
}

int path_of(struct fs *fs, fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed)
{
	int r;

	if (name && (strlen(name) > NAME_MAX))
		return -ENAMETOOLONG;
	/* The root's .convfs-* entries are convfs's own (the trash's folders). */
	if (name && ino == FUSE_ROOT_ID && strncmp(name, ".convfs-", 8) == 0)
		return -ENOENT;
	r = nodes_path(fs->nodes, ino, name, out, ret_removed);
	return r < 0 ? r : wait_taken_in(fs, out->buf, false);
}

const struct route *route_of(struct fs *fs, const struct sb *path, struct route *rt)
{
	route_resolve(fs, path->buf, rt);
	return rt;
}

int node_route(struct fs *fs, fuse_ino_t ino, struct sb *path, struct route *rt, bool *ret_removed)
{
	int r = path_of(fs, ino, NULL, path, ret_removed);

	if (r == 0)
		route_resolve(fs, path->buf, rt);
	return r;
}

void tell_others(struct fs *fs, const struct route *rt)
{
	int r;

	if (!rt->ops->backing || !watch_peers(fs))
		return;
	r = store_plain_changed(fs->store, rt->rel);
	if (r < 0)
		log_warn("cannot tell the other mounts of the store that '%s' changed: %s; they may show it as it was "
			 "for a while", rt->rel, strerror(-r));
}

struct fs *begin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	fs_caller_pid = ctx->pid;
	fs_caller_uid = ctx->uid;
	fs_caller_gid = ctx->gid;
	return fuse_req_userdata(req);
}
