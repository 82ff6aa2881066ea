/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_CKPT_H
#define CONVFS_VIEW_CKPT_H

/* A task's checkpoints in the view (view_ckpt.c), for view.c. */

#include <stdbool.h>
#include <stddef.h>

#include "fs/view/view.h"
#include "store/store_view.h"

void ckpt_name(int index, const char *hash, char *buf, size_t n);
/* store_checkpoints() of a task, remembered for the last task until the next commit. */
int ckpt_each(struct fs *fs, const char *task, store_checkpoint_fn fn, void *ctx);
int ckpt_parse_cached(struct fs *fs, struct view_path *vp, const char *rel, const char *name);
/* A file of a checkpoint folder: name, and below files/ the path rest. */
int ckpt_file_parse(struct view_path *vp, const char *name, const char *rest);
/* A path inside a checkpoint folder resolved before: no query at all. */
bool ckpt_cache_hit(struct fs *fs, const char *rel, struct view_path *vp, const char **ret_rest);

#endif
