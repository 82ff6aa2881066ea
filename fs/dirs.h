/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_DIRS_H
#define CONVFS_DIRS_H

/* Open folders (dirs.c), for lowlevel.c's opendir, readdir and releasedir. */

#include <fuse_lowlevel.h>

struct dir_handle;
struct route;

/* Lists the folder rt names (as op_list_dir() does) into a new handle. 0 or -errno. */
int dir_open(const struct route *rt, struct dir_handle **ret);
/* Replies to a readdir of the handle from offset off. */
void dir_reply(fuse_req_t req, struct dir_handle *d, size_t size, off_t off);
void dir_release(struct dir_handle *d);
/* At unmount: frees the handles the kernel never released. */
void dir_release_all(void);

#endif
