/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SHADOW_H
#define CONVFS_SHADOW_H

/*
 * Checkpoints (shadow.c): the files of a commit of a shadow git repo,
 * read with libgit2 straight from the repository, lazily, nothing checked
 * out or copied. Paths inside the commit are relative ("" is its root).
 * Every function returns 0 (or a count) or -errno; libgit2's errors become
 * errnos in shadow_errno() and are logged once.
 */

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/ops/ops.h"

int shadow_init(void);
void shadow_shutdown(void);

/* Attributes of path in commit hash of the repo at git_dir (read-only modes). */
int shadow_stat(const char *git_dir, const char *hash, const char *path, struct stat *st);
/* Lists the tree at path in the commit. */
int shadow_list(const char *git_dir, const char *hash, const char *path, op_list_fn fn, void *ctx);
/* Reads the blob at path. */
ssize_t shadow_read(const char *git_dir, const char *hash, const char *path, char *buf, size_t size, off_t off);
/* The target of the symlink at path. */
int shadow_readlink(const char *git_dir, const char *hash, const char *path, char *buf, size_t size);
/* commit.json: hash, time, message, parent (free()). */
int shadow_commit_json(const char *git_dir, const char *hash, char **ret, size_t *ret_len, int64_t *ret_time_ns);
/* changes.diff: the diff from prev (NULL: the commit's parent) to hash, as git diff prints it (free()). */
int shadow_diff(const char *git_dir, const char *prev, const char *hash, char **ret, size_t *ret_len);
/*
 * The same from commit from to commit to, of paths[0..n) alone (exact paths
 * of the workspace); each other file that changed between them is handed to
 * other (may be NULL). The text is free()d by the caller.
 */
int shadow_diff_only(const char *git_dir, const char *from, const char *to, const char *const *paths, size_t n,
		     void (*other)(void *ctx, const char *path), void *ctx, char **ret, size_t *ret_len);
/* True if hash names a commit of the repo. */
int shadow_has_commit(const char *git_dir, const char *hash);

#endif
