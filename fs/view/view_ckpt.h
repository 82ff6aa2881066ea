/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_CKPT_H
#define CONVFS_VIEW_CKPT_H

/* A task's checkpoints in the view (view_ckpt.c), for view.c and file.c. */

#include <stdbool.h>
#include <stddef.h>

#include "fs/view/view.h"
#include "store/store_view.h"

void ckpt_name(int index, const char *hash, char *buf, size_t n);
/* store_checkpoints() of a task, remembered for the last task until the next commit. */
int ckpt_each(struct fs *fs, const char *task, store_checkpoint_fn fn, void *ctx);
/* A path inside a checkpoint folder resolved before: its folder into *vp, the rest of rel into *ret_rest. */
bool ckpt_cache_hit(struct fs *fs, const char *rel, struct view_path *vp, const char **ret_rest);
/* The attributes of a file of a checkpoint's commit (vp: VIEW_CKPT_FILES), as stat() of its path gives them. */
int view_ckpt_file_stat(struct fs *fs, const struct view_path *vp, struct stat *st);

#endif
