/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_OPS_H
#define CONVFS_OPS_H

/*
 * The filesystem's operations, by path (ops.c), as lowlevel.c calls them
 * once it has turned a node id into a path. Paths start with '/'. Each
 * returns 0 (or a byte count) or -errno, like libfuse's high-level API.
 */

#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fs.h"

/* The mounted filesystem, and the process (and its user) of the request this thread serves. */
extern struct fs *fs_current;
extern __thread pid_t fs_caller_pid;
extern __thread uid_t fs_caller_uid;
extern __thread gid_t fs_caller_gid;

/* Drops the kernel's cached pages and attributes of the file at rel (lowlevel.c). */
void ll_invalidate(struct fs *fs, const char *rel);
/* If a task may have moved since the last call, drops the kernel's attributes of the view's task folders. */
void ll_placement_check(struct fs *fs);

typedef int (*op_list_fn)(void *ctx, const char *name, mode_t type, uint64_t ino);

int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
/* fstat() of an open doc by the process that opened it: its own version; else -ENOENT. */
int op_getattr_if_owner(uint64_t fh, pid_t tgid, struct stat *st);
int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);
int op_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int op_list_dir(const char *path, op_list_fn fn, void *ctx);
int op_mkdir(const char *path, mode_t mode);
int op_rmdir(const char *path);
int op_unlink(const char *path);
int op_rename(const char *from, const char *to, unsigned int flags);
int op_link(const char *from, const char *to);
int op_symlink(const char *target, const char *path);
int op_readlink(const char *path, char *buf, size_t size);
int op_mknod(const char *path, mode_t mode, dev_t rdev);
int op_open(const char *path, struct fuse_file_info *fi);
int op_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi);
int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
int op_flush(const char *path, struct fuse_file_info *fi);
int op_release(const char *path, struct fuse_file_info *fi);
int op_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int op_statfs(const char *path, struct statvfs *sv);
int op_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi);

#endif
