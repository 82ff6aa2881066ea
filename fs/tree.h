/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TREE_H
#define CONVFS_TREE_H

/*
 * Walking a folder and copying its files (tree.c), for the take-in and for
 * export: through fds, never following a symlink, never mapping a file.
 */

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Called for each entry below the walked directory, parents before children. */
typedef int (*walk_fn)(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st);

/* Calls fn for each entry below the directory dirfd (left open), parents before children. */
int walk(int dirfd, const char *prefix, walk_fn fn, void *ctx);
/* Copies the regular file name (in src_dirfd) to dst_fd, then its mode and times. */
int copy_file(int src_dirfd, const char *name, int dst_fd, const struct stat *st, mode_t mode);
/*
 * Opens the regular file name (in dirfd) to read it: not through a symlink,
 * not blocking on a FIFO; *ret_st is its fstat(). Returns the fd, -EINVAL
 * if it is not a regular file, or -errno.
 */
int open_regular(int dirfd, const char *name, struct stat *ret_st);
/*
 * Reads the whole regular file name (in dirfd) into memory of our own, with
 * read(): another process may truncate or rewrite it meanwhile, which a
 * mapping would turn into SIGBUS. *ret_st is the fstat() of the fd read, taken
 * before reading: if the file changes while it is read, what is recorded as
 * seen is older than what was read, so the next take-in looks again. The
 * caller frees *ret_data.
 */
int read_file(int dirfd, const char *name, char **ret_data, size_t *ret_len, struct stat *ret_st);

#endif
