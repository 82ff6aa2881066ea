/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_MOUNTS_H
#define CONVFS_MOUNTS_H

/*
 * What the commands that look inside a mount (`convfs status`, `log`,
 * `restore`) need to find it: the convfs mounts of the mount table, each
 * naming its store as its source (the daemon mounts with fsname=<store>, as
 * sshfs names its remote), and the doc a path on one of them shows.
 */

#include <limits.h>
#include <stdbool.h>

#include "fs/view/view_version.h"

/* The type convfs mounts with (subtype=convfs). */
#define FS_MOUNT_TYPE "fuse.convfs"

struct fs_mount {
	char *mountpoint;
	char *store; /* NULL: the mount does not name its store (an older convfs) */
};

/*
 * Finds the convfs mount at path (absolute), or with containing the deepest
 * one path is on. -ENOENT if none. Release with fs_mount_release().
 */
int fs_mount_find(const char *path, bool containing, struct fs_mount *ret);
void fs_mount_release(struct fs_mount *m);

/* path made absolute without touching it (a dead mount answers nothing): free(). */
char *fs_abs_path(const char *path);

/* A file named on the command line: its mount, the doc it shows, and the docs that share its numbering. */
struct fs_target {
	struct fs_mount mount;
	char *abs;             /* the file's absolute path */
	const char *rel;       /* abs from the mount's root */
	char doc[PATH_MAX];    /* the compat doc behind it (view_doc_of()) */
	struct version_docs docs; /* version_docs_of(doc): its versions' numbers are the task's */
};

/*
 * Resolves file for command cmd ("log", "restore"): on a convfs mount that
 * names its store, and a conversation file there. On failure says why on
 * stderr and returns -errno. Release with fs_target_release(); *ret is
 * filled in place (docs points into itself): do not copy it.
 */
int fs_target_resolve(const char *cmd, const char *file, struct fs_target *ret);
void fs_target_release(struct fs_target *t);

#endif
