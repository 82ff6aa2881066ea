/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file_view.c: the view's open files: its JSON Lines (messages.jsonl,
 * ui_messages.jsonl), its writable and generated text (a workspace's
 * taskHistory.json, workspace.json, task.json), and a checkpoint's files,
 * read with libgit2 and never written. Their rows of file.c's table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/ops/file_internal.h"
#include "fs/ops/ops_internal.h"
#include "fs/ops/ops.h"
#include "fs/view/shadow.h"
#include "fs/view/view_context.h"
#include "fs/view/view_ckpt.h"
#include "store/store_view.h"
#include "store/util.h"

/* ---- the view's JSON Lines and text -----------------------------------------------

 * messages.jsonl and ui_messages.jsonl are a doc one element a line. Written at
 * their end (>>, O_APPEND), each complete line is appended to the doc at once,
 * one revision per write, without reading the doc: the cost does not grow with
 * the conversation. A line must be one JSON object (with "role" for the API
 * stream), or the write fails with EINVAL and none of it is stored. A last
 * line without its newline waits for it, and is refused at close. Written
 * anywhere else (or opened with O_TRUNC), the file is staged whole and
 * committed at close as a rewrite of the doc, merged like the compat files.
 */

/*
 * A rewrite through the view that leaves nothing (`: > messages.jsonl`)
 * would empty a conversation: refused, with a word on how to remove it.
 */
static int refuse_emptying(const char *doc)
{
	log_warn("refusing to empty '%s' through the view; nothing changes. To remove a task, remove its folder "
		 "(rm -r workspaces/<ws>/tasks/<id>): it goes to workspaces/.trash", doc);
	return -EPERM;
}

/* The staged content of a text handle (a workspace's taskHistory.json), committed. f->lock held. */
static int text_commit(struct fs *fs, struct fs_file *f)
{
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .ws_key = f->ws_key, .base_path = f->path, .proc = &proc, .who = &who };
	struct stat st;
	int res;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (st.st_size == 0)
		return refuse_emptying(f->path);
	file_who(f, &proc, &who);
	res = commit_fd(fs, &req, f->fd, true);
	if (res == 0)
		f->dirty = false;
	return res;
}

/*
 * Splits the complete lines off f->pending (plus buf) and appends them;
 * *ret_appended says if any went in. f->lock held.
 */
static int jsonl_append(struct fs *fs, struct fs_file *f, const char *buf, size_t size, bool *ret_appended)
{
	_cleanup_free_ struct store_line *lines = NULL;
	struct store_snap *snap = NULL;
	size_t old = f->pending.len, n = 0, done = 0;
	struct store_who who;
	struct fs_proc proc;
	int r;

	r = sb_add(&f->pending, buf, size);
	if (r < 0)
		return r;
	if (!memchr(buf, '\n', size))
		return (int)size; /* a line still without its newline: it waits */
	for (size_t i = 0; i < f->pending.len; i++)
		n += f->pending.buf[i] == '\n';
	lines = calloc(n, sizeof(*lines));
	if (!lines) {
		f->pending.len = old;
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < f->pending.len; i++)
		if (f->pending.buf[i] == '\n') {
			size_t len = i - done;

			if (len && f->pending.buf[i - 1] == '\r')
				len--;
			lines[n++] = (struct store_line){ f->pending.buf + done, len };
			done = i + 1;
		}
	file_who(f, &proc, &who);
	r = store_doc_append(fs->store, f->path, lines, n, f->require, &who);
	if (r == -EINVAL) {
		f->pending.len = old; /* none of this write is kept */
		f->pending.buf[old] = '\0';
		return r;
	}
	if (r < 0) {
		/* The store failed (ENOSPC, EBUSY, EROFS): the line's start goes too. */
		log_err("cannot append to '%s': %s; nothing of this open file's last line is stored", f->path,
			strerror(-r));
		f->pending.len = 0;
		f->pending.buf[0] = '\0';
		f->write_err = r;
		return r;
	}
	memmove(f->pending.buf, f->pending.buf + done, f->pending.len - done);
	f->pending.len -= done;
	f->pending.buf[f->pending.len] = '\0';
	if (store_snap_open_jsonl(fs->store, f->path, &snap) == 0) {
		store_snap_free(f->snap);
		f->snap = snap;
	}
	*ret_appended = true;
	return (int)size;
}

/*
 * The doc's own bytes around its array as the writer opened it: "[" and "]"
 * for Cline's files, an object's other members too for a CLI 3.x session's
 * "messages", which so stay as they were. NULL for a doc opened new.
 */
static const struct jsonl_frame *jsonl_frame_of(const struct fs_file *f, struct jsonl_frame *frame)
{
	if (!f->snap || store_snap_frame(f->snap, &frame->head, &frame->head_len, &frame->tail, &frame->tail_len) < 0)
		return NULL;
	return frame;
}

/* Commits the staged JSON Lines as the doc's new content (a merged rewrite). f->lock held. */
static int jsonl_commit(struct fs *fs, struct fs_file *f)
{
	struct jsonl_frame frame;
	struct commit_bytes b;
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .doc = f->path, .base_path = f->path, .kind = "rewrite", .proc = &proc, .who = &who };
	int r;

	r = jsonl_to_array(fs, f->path, f->require, jsonl_frame_of(f, &frame), f->fd, &b);
	if (r == -ENODATA)
		return refuse_emptying(f->path);
	if (r < 0)
		return r;
	file_who(f, &proc, &who);
	r = commit_taken(fs, &req, &b);
	if (r == 0)
		f->dirty = false;
	commit_bytes_release(&b);
	return r;
}

/* ---- JSON Lines of the view ------------------------------------------------------- */

/* JSON Lines only grow for their readers (tail -f): the size now. */
static int jsonl_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	struct store_stat ss;

	if (store_doc_stat(fs->store, f->path, &ss) < 0) {
		pthread_mutex_lock(&f->lock);
		store_snap_stat(f->snap, &ss);
		pthread_mutex_unlock(&f->lock);
	}
	doc_fill_stat(fs, &ss, st);
	st->st_size = ss.lsize;
	st->st_ino = ss.ino | (UINT64_C(1) << 61);
	return 0;
}

/*
 * The bytes of a line appended without its newline that an open file keeps
 * in memory. A longer one (a message of megabytes written in pieces) makes
 * the file staged instead: its bytes go to the staging file, and the whole
 * is committed at close as a rewrite. So the daemon's memory for an append
 * is bounded by this and one write, whatever the line's length.
 */
#define JSONL_PENDING_MAX ((size_t)1 << 20)

/* What f->pending would hold after buf is appended: the bytes after its last newline. */
static size_t pending_after(const struct fs_file *f, const char *buf, size_t size)
{
	const char *nl = memrchr(buf, '\n', size);

	return nl ? size - (size_t)(nl + 1 - buf) : f->pending.len + size;
}

static ssize_t jsonl_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags)
{
	bool appended = false;
	ssize_t n;

	if (f->fixed)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	n = f->write_err; /* see staged_write() */
	if (n == 0 && f->fd < 0 && (f->append || off == store_snap_size(f->snap) + (off_t)f->pending.len) &&
	    pending_after(f, buf, size) <= JSONL_PENDING_MAX)
		n = jsonl_append(fs, f, buf, size, &appended);
	else if (n == 0)
		n = stage_write(fs, f, buf, NULL, size, off);
	pthread_mutex_unlock(&f->lock);
	/* Outside f->lock: getattr holds the node table's lock, then a file's (docs/ARCHITECTURE.md). */
	if (appended)
		fs_invalidate(fs, f->path);
	return n;
}

static int jsonl_flush(struct fs *fs, struct fs_file *f)
{
	bool committed = false;
	int r;

	pthread_mutex_lock(&f->lock);
	if ((r = flush_check(f, -EPERM)) != 1)
		return r;
	r = 0;
	if (f->pending.len) {
		log_warn("refusing the last line written to '%s': it has no newline; nothing of it stored", f->path);
		f->pending.len = 0;
		r = -EINVAL;
	} else if (f->dirty) {
		r = jsonl_commit(fs, f);
		f->commit_failed = r < 0;
		committed = r == 0;
	}
	pthread_mutex_unlock(&f->lock);
	if (committed)
		fs_invalidate(fs, f->path); /* outside f->lock, as in jsonl_write() */
	return r;
}

/* Opened with O_TRUNC and never written: said once, here. */
static void view_release(struct fs *fs, struct fs_file *f)
{
	if (f->dirty && !f->written)
		refuse_emptying(f->path);
}

/*
 * The view's generated text: in memory, read-only, unless it is a
 * workspace's taskHistory.json opened for writing, which stages (fd >= 0).
 */
static int text_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	*st = f->text_st;
	pthread_mutex_lock(&f->lock);
	if (f->fd >= 0) {
		struct stat sst;

		if (fstat(f->fd, &sst) == 0)
			st->st_size = sst.st_size;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static ssize_t text_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off)
{
	size_t n;

	if (f->fd >= 0)
		return staged_read(fs, f, buf, size, off);
	if (off >= (off_t)f->text.len)
		return 0;
	n = f->text.len - (size_t)off < size ? f->text.len - (size_t)off : size;
	memcpy(buf, f->text.buf + off, n);
	return (ssize_t)n;
}

static ssize_t text_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags)
{
	return f->fd < 0 ? -EBADF : staged_write(fs, f, buf, size, off, flags);
}

static int text_flush(struct fs *fs, struct fs_file *f)
{
	bool committed = false;
	int r;

	if (f->fd < 0)
		return 0;
	pthread_mutex_lock(&f->lock);
	if ((r = flush_check(f, -EPERM)) != 1)
		return r;
	r = 0;
	if (f->dirty) {
		r = text_commit(fs, f);
		f->commit_failed = r < 0;
		committed = r == 0;
	}
	pthread_mutex_unlock(&f->lock);
	if (committed) /* the one text file a writer may commit: a workspace's taskHistory.json */
		fs_invalidate(fs, "state/taskHistory.json");
	return r;
}

static int text_truncate(struct fs *fs, struct fs_file *f, off_t size)
{
	return f->fd < 0 ? -EBADF : staged_truncate(fs, f, size);
}

/* ---- checkpoint files ------------------------------------------------------------ */

static int ckpt_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	return view_ckpt_file_stat(fs, f->vp, st);
}

static ssize_t ckpt_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off)
{
	return shadow_read(f->vp->git_dir, f->vp->hash, f->vp->sub, buf, size, off);
}

static ssize_t ckpt_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags)
{
	return -EBADF;
}

static int ckpt_truncate(struct fs *fs, struct fs_file *f, off_t size)
{
	return -EROFS;
}

/* ---- context.jsonl ----------------------------------------------------------------- */

/* Its attributes are those it had when opened: the handle reads that text to the end. */
static int context_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	*st = f->text_st;
	return 0;
}

static ssize_t context_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off)
{
	return view_context_read(fs, f->context, buf, size, off);
}

/* ---- the rows ---------------------------------------------------------------------- */

const struct file_ops file_jsonl_ops = {
	.getattr = jsonl_getattr, .read = staged_read, .write = jsonl_write, .flush = jsonl_flush,
	.release = view_release, .fsync = nothing_to_sync, .truncate = staged_truncate,
	.fallocate = no_fallocate,
};

const struct file_ops file_text_ops = {
	.getattr = text_getattr, .read = text_read, .write = text_write, .flush = text_flush,
	.release = view_release, .fsync = nothing_to_sync, .truncate = text_truncate,
	.fallocate = no_fallocate,
};

/* Opened for reading only: its flush and sync have nothing to do. */
const struct file_ops file_context_ops = {
	.getattr = context_getattr, .read = context_read, .write = ckpt_write, .flush = plain_flush,
	.fsync = nothing_to_sync, .truncate = ckpt_truncate, .fallocate = no_fallocate, .attrs = -EROFS,
};

const struct file_ops file_ckpt_ops = {
	.getattr = ckpt_getattr, .read = ckpt_read, .write = ckpt_write, .flush = plain_flush,
	.fsync = nothing_to_sync, .truncate = ckpt_truncate, .fallocate = no_fallocate, .attrs = -EROFS,
};
