/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_UNDO_H
#define CONVFS_UNDO_H

/*
 * What `convfs undo` (cmd_undo.c) reads of the view, through the mount
 * (undo_find.c): the task's checkpoints and workspace, and the paths and
 * notes of a checkpoint's agent.diff.
 */

#include <stddef.h>

/* The paths agent.diff changes (both sides of a rename), each once, and its "# convfs:" lines. */
struct undo_diff {
	char **paths;
	size_t n, alloc;
	char **notes;
	size_t nnotes, notes_alloc;
};

/*
 * Finds, for the view's task folder task and the checkpoint n (a number or
 * a folder's name), the checkpoint's folder name (ckpt), the latest
 * checkpoint's (last), both NAME_MAX + 1 bytes, the workspace's path
 * (PATH_MAX bytes: workspace made absolute, or, if NULL, the path in
 * ../../workspace.json) and the task folder's real
 * path (*ret_task, free()). Says what is wrong on stderr and returns -1.
 */
int undo_find(const char *task, const char *n, const char *workspace, char *ckpt, char *last, char *ws_path, char **ret_task);
/* Reads task/checkpoints/ckpt/agent.diff into d (undo_diff_release()); says what is wrong and returns -1. */
int undo_diff_read(const char *task, const char *ckpt, struct undo_diff *d);
/* The same from the text of a diff (d zeroed first); 0 or -ENOMEM. */
int undo_diff_parse(struct undo_diff *d, const char *text, size_t size);
void undo_diff_release(struct undo_diff *d);
/* Turns git's quoted path ("a/r\303\251sum\303\251") in s[0..len) into bytes (free()); NULL if not one. */
char *undo_unquote(const char *s, size_t len, size_t *ret_used);

#endif
