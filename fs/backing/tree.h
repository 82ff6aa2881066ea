/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TREE_H
#define CONVFS_TREE_H

/*
 * Walking a folder and copying its files (tree.c), for the take-in and for
 * export: through fds, never following a symlink, never mapping a file.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Called for each entry below the walked directory, parents before children:
 * 0 goes on (into a folder too), WALK_SKIP goes on but not into this
 * folder, a negative errno stops the walk.
 */
typedef int (*walk_fn)(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st);
#define WALK_SKIP 1

/* Calls fn for each entry below the directory dirfd (left open), parents before children. */
int walk(int dirfd, const char *prefix, walk_fn fn, void *ctx);
/*
 * Whom export and the take-in write for: the owner of the store. Run by root
 * on a store another user owns, what they make is given to that user (give);
 * anyone else can only write as themselves, and does.
 */
struct tree_owner {
	uid_t uid;
	gid_t gid;
	bool give;
};

/* The tree_owner for a store whose file has the attributes store_st. */
struct tree_owner tree_owner_of(const struct stat *store_st);
/*
 * Gives name in dirfd (a symlink itself, never followed), or with name NULL
 * the open file dirfd, to o. 0 or -errno.
 */
int tree_give(const struct tree_owner *o, int dirfd, const char *name);
/*
 * Makes the folder name in dirfd, 0700 and o's; one that exists already is
 * left as it is. 0 or -errno.
 */
int tree_mkdir(const struct tree_owner *o, int dirfd, const char *name);
/*
 * Copies the regular file name (in src_dirfd) to dst_fd, then its times; the
 * copy is o's and owner-only: of st's mode only the owner's bits are kept,
 * never setuid, setgid, sticky or a bit for group or others.
 */
int copy_file(int src_dirfd, const char *name, int dst_fd, const struct stat *st, const struct tree_owner *o);
/*
 * Makes dst_name in dst_dirfd a symlink with the target of the symlink name
 * in src_dirfd (never followed), with its times, and o's. 0 or -errno.
 */
int copy_symlink(int src_dirfd, const char *name, int dst_dirfd, const char *dst_name, const struct stat *st,
		 const struct tree_owner *o);
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
/*
 * Reads fd from where it is to its end into memory of our own (free()),
 * NUL-terminated, whatever its size said when it began: at most max bytes,
 * -EFBIG past them.
 */
int read_fd_all(int fd, size_t max, char **ret_data, size_t *ret_len);

#endif
