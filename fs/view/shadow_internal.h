/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SHADOW_INTERNAL_H
#define CONVFS_SHADOW_INTERNAL_H

/*
 * What shadow.c and shadow_diff.c share. Each function here is called with
 * shadow_lock held, on the repository last opened (shadow_repo_get()), and
 * returns 0 or -errno after logging what failed (once: shadow_warn_first()).
 * shadow.c's design comment says why each limit is what it is.
 */

#include <git2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/util.h"

/* An object read whole: a blob (read, readlink), a tree, a commit. */
#define SHADOW_BLOB_MAX ((size_t)16 << 20)
#define SHADOW_TREE_MAX ((size_t)4 << 20)
#define SHADOW_COMMIT_MAX ((size_t)1 << 20)
/* Folders a walk goes down through: git's own core.maxTreeDepth. */
#define SHADOW_DEPTH_MAX 2048

extern pthread_mutex_t shadow_lock;

/* The repository at git_dir, opened if it is not the one open. */
int shadow_repo_get(const char *git_dir, git_repository **ret);
/* The git dir of the repository open ("" if none), for messages. */
const char *shadow_repo_dir(void);

/*
 * Checks object id before libgit2 reads it: its loose file, if there is one,
 * must be a regular file (libgit2 opens it by path: a FIFO would block the
 * worker), and its header (git_odb_read_header(), nothing inflated) must say
 * it is a want (GIT_OBJECT_ANY: any type). what names it in messages (the
 * path of a file of the commit, or a hash). The size goes to *ret_size.
 */
int shadow_object_check(const git_oid *id, git_object_t want, const char *what, size_t *ret_size);
/* The commit hash (a full id or a prefix), its object checked and bounded. */
int shadow_commit_get(const char *hash, git_commit **ret);
/* The tree id (what: the folder's path, "" the root), checked and bounded. */
int shadow_tree_get(const git_oid *id, const char *what, git_tree **ret);

/* Frees the blob kept for the next read (before a request that reads many), and gives its memory back. */
void shadow_blob_drop(void);

/*
 * True the first time it is asked with these strings (of the last 256
 * asked), false after: a problem of the repository's data is logged once,
 * not at every request that meets it.
 */
bool shadow_warn_first(const char *kind, const char *a, const char *b);

/* Appends s to sb quoted for a POSIX shell ('...', a ' as '\''). */
int shadow_sh_quote(struct sb *sb, const char *s);

/* libgit2's error rc as -errno, logged ("cannot <what> '<subject>': ..."); GIT_ENOTFOUND is -ENOENT, not logged. */
int shadow_errno(int rc, const char *what, const char *subject);

#endif
