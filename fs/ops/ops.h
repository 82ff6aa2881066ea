/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_OPS_H
#define CONVFS_OPS_H

/*
 * The filesystem's operations (ops.c, open.c, names.c, control.c, file.c),
 * as lowlevel.c calls them once it has turned a node id into a path and the
 * path into a route (route.h): each calls through the row of the route's
 * kind (kinds.h). Those on an open file take its handle only. Each returns
 * 0 (or a byte count) or -errno, like libfuse's high-level API.
 */

#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fs.h"
#include "fs/ops/route.h"

/* The process (and its user) of the request this thread serves. */
extern __thread pid_t fs_caller_pid;
extern __thread uid_t fs_caller_uid;
extern __thread gid_t fs_caller_gid;

int op_getattr(const struct route *rt, struct stat *st, struct fuse_file_info *fi);
/* The attributes of the doc rt names as stored now, and their version. */
int op_getattr_doc(const struct route *rt, struct stat *st, int64_t *ret_rev);
/* fstat() of an open doc by the process that opened it: its own version; else -ENOENT. */
int op_getattr_if_owner(uint64_t fh, pid_t tgid, struct stat *st);
/*
 * Under the node table's lock (nodes_with_open()): true if the handle fh
 * would show a doc's attributes other than those of its version rev: bytes
 * of its own staged, or another version read. With rev NULL, true only for
 * staged bytes (or a handle of another kind).
 */
bool op_handle_shows_other(uint64_t fh, const int64_t *rev);
int op_chmod(const struct route *rt, mode_t mode, struct fuse_file_info *fi);
int op_chown(const struct route *rt, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int op_utimens(const struct route *rt, const struct timespec tv[2], struct fuse_file_info *fi);
int op_truncate(const struct route *rt, off_t size, struct fuse_file_info *fi);
int op_list_dir(const struct route *rt, op_list_fn fn, void *ctx);
int op_mkdir(const struct route *rt, mode_t mode);
int op_rmdir(const struct route *rt);
int op_unlink(const struct route *rt);
int op_rename(const struct route *from, const struct route *to, unsigned int flags);
int op_link(const struct route *from, const struct route *to);
int op_symlink(const char *target, const struct route *rt);
int op_readlink(const struct route *rt, char *buf, size_t size);
int op_mknod(const struct route *rt, mode_t mode, dev_t rdev);
int op_open(const struct route *rt, struct fuse_file_info *fi);
/* A read-only open of a doc's version node (fs/kernel/nodes.h) at revision ver: -ESTALE if the doc has another now. */
int op_open_version(const struct route *rt, int64_t ver, struct fuse_file_info *fi);
/*
 * For nodes_with_open(): if handle fh reads revision ver of its doc, a copy
 * of its snapshot into snap (r: 0 or -ENOMEM), and true. Opened with it, a
 * reader of a version node whose doc changed since reads that version too.
 */
struct op_version_snap {
	int64_t ver;
	struct store_snap *snap;
	int r;
};
bool op_version_snap(uint64_t fh, void *arg);
int op_open_version_snap(const struct route *rt, struct store_snap *snap, struct fuse_file_info *fi);
int op_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi);
int op_read(char *buf, size_t size, off_t off, struct fuse_file_info *fi);
int op_write(const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
/*
 * A write whose bytes may still be in a pipe (bufv from libfuse's
 * write_buf): a plain file's go from the pipe to the file by splice(),
 * never through the daemon's memory; any other kind's are read into memory
 * and written by op_write().
 */
int op_write_buf(struct fuse_bufvec *bufv, off_t off, struct fuse_file_info *fi);
int op_flush(struct fuse_file_info *fi);
int op_release(struct fuse_file_info *fi);
int op_fsync(int datasync, struct fuse_file_info *fi);
int op_statfs(struct fs *fs, struct statvfs *sv);
int op_fallocate(int mode, off_t off, off_t len, struct fuse_file_info *fi);
/* setxattr: FS_XATTR_RESTORE on a conversation file restores a version (control.c); others EOPNOTSUPP. */
int op_setxattr(const struct route *rt, const char *name, const char *value, size_t size);

#endif
