/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_REQUEST_H
#define CONVFS_REQUEST_H

/*
 * What every request handler shares (request.c): the mount a request asks,
 * the path of a node id, its route. The handlers are in lowlevel.c, but for
 * those of attributes (attrs.c).
 */

#include <fuse_lowlevel.h>

#include "fs/fs.h"
#include "fs/ops/route.h"
#include "store/util.h"

/* A request begins: records who asks, for the operations; returns the mount it asks. */
struct fs *begin(fuse_req_t req);

/* Whether the take-in goes on (fs_take_in_begin()). */
bool taking_in(struct fs *fs);

/*
 * While the take-in goes on (fs_take_in_begin()), a request waits here
 * until what it touches at path was looked at underneath (listing: path's
 * listing). 0, or -EIO: the take-in failed.
 */
int wait_taken_in(struct fs *fs, const char *path, bool listing);

/*
 * The path of ino (plus "/name"), as nodes_path(); names the kernel must not
 * reach refused. Waits for the take-in where it must (wait_taken_in()).
 */
int path_of(struct fs *fs, fuse_ino_t ino, const char *name, struct sb *out, bool *ret_removed);

/* The route of a path path_of() made: resolved into *rt, which it returns. */
const struct route *route_of(struct fs *fs, const struct sb *path, struct route *rt);

/* The path of node ino and its route, resolved into *rt. */
int node_route(struct fs *fs, fuse_ino_t ino, struct sb *path, struct route *rt, bool *ret_removed);

/*
 * A plain path this request changed (made, removed, renamed, its attributes
 * set): while other daemons serve the store, they are told, so that their
 * kernels drop what they keep of it (fs/kernel/watch.c).
 */
void tell_others(struct fs *fs, const struct route *rt);

/* attrs.c: GETATTR and SETATTR. */
void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi);

#endif
