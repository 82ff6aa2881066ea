/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_FILE_INTERNAL_H
#define CONVFS_FILE_INTERNAL_H

/*
 * What file.c (open files: handles, staging, plain files, docs, the table)
 * and file_view.c (the view's open files) share.
 */

#include <fuse_lowlevel.h>
#include <sys/types.h>

#include "fs/ops/ops_internal.h"

/* The calls of one kind of open file: a row of file.c's table. */
struct file_ops {
	int (*getattr)(struct fs *fs, struct fs_file *f, struct stat *st);
	ssize_t (*read)(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off);
	ssize_t (*write)(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags);
	int (*flush)(struct fs *fs, struct fs_file *f);
	void (*release)(struct fs *fs, struct fs_file *f); /* before the handle is freed; may be NULL */
	int (*fsync)(struct fs *fs, struct fs_file *f, int datasync);
	int (*truncate)(struct fs *fs, struct fs_file *f, off_t size);
	int (*fallocate)(struct fs *fs, struct fs_file *f, int mode, off_t off, off_t len);
	int attrs; /* file_attr_target() of a handle that is not fixed */
};

/* The view's rows (file_view.c). */
extern const struct file_ops file_jsonl_ops, file_text_ops, file_ckpt_ops, file_context_ops;

/* Who wrote f, for the revision log and the merge base: its opener (file.c says why). */
void file_who(const struct fs_file *f, struct fs_proc *proc, struct store_who *who);
/* A staged or snapshot read of a doc, its JSON Lines or the view's text being written. */
ssize_t staged_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off);
/* Stages a write (the first copies the committed content), its bytes in buf or in bufv's pipe; f->lock held. */
ssize_t stage_write(struct fs *fs, struct fs_file *f, const char *buf, struct fuse_bufvec *bufv, size_t size,
		    off_t off);
/* The write and truncate of a staged kind: under f->lock, through stage_write(). */
ssize_t staged_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags);
int staged_truncate(struct fs *fs, struct fs_file *f, off_t size);
/* What every staged flush checks first, f->lock held: 1 to go on and commit, else the result (lock released). */
int flush_check(struct fs_file *f, int empty_err);
/* fsync of what commits at close: 0, nothing to do; fallocate where no file takes the room: EOPNOTSUPP. */
int nothing_to_sync(struct fs *fs, struct fs_file *f, int datasync);
int no_fallocate(struct fs *fs, struct fs_file *f, int mode, off_t off, off_t len);
/* A plain file's flush: the other mounts told, if it was written (a checkpoint's file never is). */
int plain_flush(struct fs *fs, struct fs_file *f);

#endif
