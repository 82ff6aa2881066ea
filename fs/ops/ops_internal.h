/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_OPS_INTERNAL_H
#define CONVFS_OPS_INTERNAL_H

/*
 * What the files behind ops.h share: ops.c (attributes, folders, the
 * backing tree), compat.c (the compat tree's kinds of path), open.c (open
 * and create), names.c (unlink, rename, links), control.c (restore) and
 * file.c (open files). Each kind of path has one row (kinds.h), each kind
 * of open file one table of operations in file.c: the calls on an open
 * file (read, write, flush, release, fsync, truncate, fallocate, fstat) go
 * to its table, as a driver's file_operations do in the kernel.
 */

#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/fs.h"
#include "fs/ops/kinds.h"
#include "fs/ops/ops.h"
#include "fs/ops/shares.h"
#include "fs/view/view.h"
#include "store/util.h"

enum file_kind {
	FILE_PLAIN, /* a file of the backing tree */
	FILE_DOC,   /* a doc, in its compat rendering */
	FILE_JSONL, /* a doc as JSON Lines (workspaces view) */
	FILE_TEXT,  /* a generated file of the view (workspaces/<ws>/taskHistory.json: writable) */
	FILE_CKPT,  /* a file of a checkpoint's commit, read with libgit2 */
	FILE_CONTEXT, /* a context.jsonl: what the model saw, made when it was opened (view_context.h) */
};

struct fs_file {
	struct fs *fs;           /* the mount it was opened on */
	enum file_kind kind;
	int fd;                 /* plain: the file; doc, jsonl, text: the staging file or -1 */
	struct fd_charge charge; /* fd, counted against its opener's share (shares.h) */
	char *path;             /* doc, jsonl: the doc's compat path; text: its path */
	struct store_snap *snap; /* doc, jsonl: what reads see until this handle stages */
	struct fs_proc opener;  /* the process that opened it (tgid 0: made for one call) */
	bool append;
	bool dirty;             /* staged bytes not yet committed */
	bool written;           /* written or truncated since open (not only O_TRUNC) */
	bool commit_failed;
	int write_err;          /* doc: a staged write failed (-errno); nothing is committed */
	const char *require;    /* jsonl: member each line must have */
	struct sb pending;      /* jsonl: an appended line still without its newline */
	struct sb text;         /* text: the content */
	struct stat text_st;    /* text: its attributes */
	char *ws_key;           /* text of a workspace's taskHistory.json: its workspace ("" unknown) */
	bool fixed;             /* a checkpoint or trash file: never refreshed, never written */
	const struct path_ops *row; /* fixed: the kind it was opened as (its fstat() is its path's stat()) */
	struct view_path *vp;   /* snap: the checkpoint file */
	struct view_context *context; /* context: its text, held until the handle goes */
	pthread_mutex_t lock;
};

struct fs_file *file_new(struct fs *fs, enum file_kind kind, int fd, const char *path);
void file_free(struct fs_file *f);

/*
 * Gives the handle a staging file holding the doc's content (or nothing, if
 * empty is true). Called with f->lock held.
 */
int stage_begin(struct fs *fs, struct fs_file *f, bool empty);
/*
 * Commits the staged bytes of f as one revision of kind ("write",
 * "truncate"). Called with f->lock held. On success the handle's snapshot
 * moves to the new version.
 */
int stage_commit(struct fs *fs, struct fs_file *f, const char *kind);

/* The calls on an open file, by its table. */
int file_getattr(struct fs *fs, struct fs_file *f, struct stat *st);
int file_truncate(struct fs *fs, struct fs_file *f, off_t size);
/*
 * Whose attributes chmod, chown and utimens change through f: -EROFS for a
 * file that is never written, 1 for a plain file (the caller changes them),
 * 0 for a doc or the view's files (none: a doc is always 0600, and its mtime
 * is the time its content last changed).
 */
int file_attr_target(const struct fs_file *f);

/* ---- ops.c --------------------------------------------------------------------- */

/* The calling process: for the revision log and for its merge bases. */
void fs_caller(struct fs_proc *proc, struct store_who *who);
/* store_doc_create() and store_doc_remove() of path, by the calling process. */
int doc_create_by_caller(struct fs *fs, const char *path);
int doc_remove_by_caller(struct fs *fs, const char *path, const char *kind);
/*
 * After a commit of doc r: the kernel drops what it cached of r, and of the
 * view's folders whose times follow the conversation r belongs to.
 */
void fs_invalidate(struct fs *fs, const char *r);
void doc_fill_stat(const struct fs *fs, const struct store_stat *s, struct stat *st);
/* A failed call on the backing tree: logged unless ordinary, then -err. */
int plain_fail(const char *what, const char *r, int err);
/* Makes the backing tree's folders again if something removed them. */
void backing_check(struct fs *fs);
/*
 * mkdir -p of dir (relative, from the store: no "..") in the backing tree,
 * one component at a time and never through a symlink.
 */
int backing_mkdirs(struct fs *fs, const char *dir, size_t len);
/* The same, adding to *made (if not NULL) the folders it made: those that were not there. */
int backing_mkdirs_made(struct fs *fs, const char *dir, size_t len, unsigned *made);
/* What a NULL member answers for a kind that names nothing (rt->err), or dflt (kinds.h). */
int path_default(const struct route *rt, int dflt);
/* Whether the folder of the view rt is in lets the name be made (made_in; 0 outside the view). */
int path_made_in(const struct route *rt, const char *what);
/* True if rt is read-only, or would be made in a read-only folder: -EROFS for what writes there. */
bool path_readonly(const struct route *rt);
/*
 * Makes the folders of every doc again in the backing tree (compat.c); adds
 * to *made (if not NULL) those that were missing.
 */
int heal_all_docs(struct fs *fs, unsigned *made);
/* Group and other bits go unless the mount is shared (-o allow_other). */
mode_t private_mode(const struct fs *fs, mode_t mode);
/*
 * A daemon run by root makes every backing entry as root. On a shared mount
 * (-o allow_other) what another user makes must be that user's, as on any
 * filesystem: default_permissions judges by the owner, so a 0600 file would
 * otherwise be closed to the user who made it. The group is the caller's,
 * unless the folder is setgid (the backing filesystem gave the entry the
 * folder's group). chown clears setuid and setgid, so a new file's own are
 * set again. The new entry (made here, never one that existed) is leaf in
 * dfd, or with dfd -1 the file open as fd at r.
 */
int give_to_caller(const struct fs *fs, const char *r, int dfd, const char *leaf, int fd, mode_t mode);
/*
 * Makes rt in the backing tree for mkdir, symlink and mknod: a folder, a
 * symlink to target, or a node of mode's type, with mode's permissions;
 * refused where the view holds only its own files. Given to the caller, or
 * removed again if it cannot be.
 */
int plain_make(struct fs *fs, const struct route *rt, mode_t mode, const char *target);
/*
 * The backing folder of task id (its plain files) to the trash, or back
 * from it, once the store has moved the task; the kernel told.
 */
void task_folder_trash(struct fs *fs, const char *id);
void task_folder_restore(struct fs *fs, const char *id);

#endif
