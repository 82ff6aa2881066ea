/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * open.c: open and create, for every kind of file.
 *
 * A plain file opens its backing file; a doc (by its compat path) opens a
 * handle on its current snapshot, and a writer is the base of its next
 * merge from here on; the view's files open their doc as JSON Lines, a
 * generated text, a checkpoint's file, or a trashed task's last version.
 * What each kind of handle does once open is in file.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/ops/ops_internal.h"
#include "fs/view/view_context.h"
#include "store/store_view.h"
#include "store/util.h"

/*
 * The flags of a client's open that the backing file gets. The kernel passes
 * bits of its own too (__FMODE_EXEC for execve, which openat2 refuses with
 * EINVAL). O_DIRECT stays with the client's file: the kernel already keeps
 * its pages out of the cache, and the daemon's buffers are not aligned as
 * the backing filesystem would require. O_APPEND is applied write by write
 * (op_write), since fcntl(F_SETFL) can turn it on and off after the open.
 */
#define PLAIN_OPEN_FLAGS (O_ACCMODE | O_TRUNC | O_NONBLOCK | O_SYNC | O_DSYNC | O_NOATIME | O_NOFOLLOW | O_DIRECTORY)

/*
 * Opens the doc r reading snap (taken over: freed on failure too), through
 * the page cache if cached (a reader of a version node, nodes.h).
 */
static int doc_open_snap(struct fs *fs, const char *r, struct fuse_file_info *fi, bool created,
			 struct store_snap *snap, bool cached)
{
	int acc = fi->flags & O_ACCMODE;
	struct fs_file *f;
	int res;

	f = file_new(fs, FILE_DOC, -1, r);
	if (!f) {
		store_snap_free(snap);
		return -ENOMEM;
	}
	f->snap = snap;
	f->append = fi->flags & O_APPEND;
	{
		struct store_base *base;
		struct store_who who;
		struct fs_proc proc;

		fs_caller(&proc, &who);
		f->opener = proc;
		/* This process may read the doc now: what it sees is its merge base. */
		if (!created && !(fi->flags & O_TRUNC) && store_base_from_snap(f->snap, &base) == 0)
			bases_put(fs->bases, &proc, r, base);
	}
	/*
	 * Each handle reads its own snapshot, so docs bypass the page cache that
	 * all handles of an inode share: no reader can see another version's
	 * pages, or be cut short by another version's size. But for a reader of
	 * a version node: every handle on it reads the one version it stands
	 * for, so its pages are that version's, kept across opens.
	 */
	if (cached)
		fi->keep_cache = 1;
	else
		fi->direct_io = 1;
	if (acc != O_RDONLY) {
		if (created || (fi->flags & O_TRUNC)) {
			res = stage_begin(fs, f, true);
			if (res < 0) {
				file_free(f);
				return res;
			}
			f->dirty = !created;
		}
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

/* ver: the revision a reader of a version node must read (nodes.h), else 0; -ESTALE if the doc has another. */
static int doc_open(struct fs *fs, const char *r, struct fuse_file_info *fi, bool created, int64_t ver)
{
	struct store_snap *snap;
	int res = store_snap_open(fs->store, r, &snap);

	if (res < 0)
		return res;
	if (ver && store_snap_rev(snap) != ver) {
		store_snap_free(snap);
		return -ESTALE;
	}
	return doc_open_snap(fs, r, fi, created, snap, ver != 0);
}

/* ---- the workspaces view: JSON Lines and generated files ----------------------------

 * messages.jsonl and ui_messages.jsonl are a doc one element a line. Written at
 * their end (>>, O_APPEND), each complete line is appended to the doc at once,
 * one revision per write, without reading the doc: the cost does not grow with
 * the conversation. A line must be one JSON object (with "role" for the API
 * stream), or the write fails with EINVAL and none of it is stored. A last
 * line without its newline waits for it, and is refused at close. Written
 * anywhere else (or opened with O_TRUNC), the file is staged whole and
 * committed at close as a rewrite of the doc, merged like the compat files.
 */

static void record_read_base(struct fs *fs, struct fs_file *f, const char *doc, bool reads)
{
	struct store_base *base;
	struct store_who who;
	struct fs_proc proc;

	fs_caller(&proc, &who);
	f->opener = proc;
	if (reads && store_base_from_snap(f->snap, &base) == 0)
		bases_put(fs->bases, &proc, doc, base);
}

int path_open_lines(const struct route *rt, struct fuse_file_info *fi)
{
	struct fs *fs = rt->fs;
	const struct view_path *vp = &rt->vp;
	struct fs_file *f = file_new(rt->fs, FILE_JSONL, -1, vp->doc);
	int r;

	if (!f)
		return -ENOMEM;
	f->require = vp->require;
	r = store_snap_open_jsonl(fs->store, vp->doc, &f->snap);
	if (r < 0) {
		file_free(f);
		return r;
	}
	f->append = fi->flags & O_APPEND;
	record_read_base(fs, f, vp->doc, !(fi->flags & O_TRUNC));
	if ((fi->flags & O_ACCMODE) != O_RDONLY && (fi->flags & O_TRUNC)) {
		r = stage_begin(fs, f, true);
		if (r < 0) {
			file_free(f);
			return r;
		}
		f->dirty = true;
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

int path_open_view_doc(const struct route *rt, struct fuse_file_info *fi)
{
	return doc_open(rt->fs, rt->vp.doc, fi, false, 0);
}

int path_open_text(const struct route *rt, struct fuse_file_info *fi, path_render_fn render, bool history)
{
	struct fs *fs = rt->fs;
	const struct view_path *vp = &rt->vp;
	bool writable = (fi->flags & O_ACCMODE) != O_RDONLY;
	struct fs_file *f;
	char *buf = NULL;
	size_t len = 0;
	int64_t mtime, rev = 0;
	int res;

	if (writable && !history) {
		log_warn("refusing to open '%s' for writing: the view makes it from the store", rt->rel);
		return -EACCES;
	}
	f = file_new(rt->fs, FILE_TEXT, -1, rt->rel);
	if (!f)
		return -ENOMEM;
	res = rt->ops->getattr(rt, &f->text_st);
	if (res == 0)
		res = render(rt, &buf, &len, &mtime, &rev);
	/* The rendered bytes themselves, not a copy: changes.diff may be megabytes. */
	if (res == 0 && (res = sb_attach(&f->text, buf, len)) == 0)
		buf = NULL;
	f->text_st.st_size = (off_t)len;
	free(buf);
	if (res == 0 && history) {
		/* What this process sees of the workspace's items: the base of its rewrite. */
		struct store_base *base;
		struct store_who who;
		struct fs_proc proc;

		if (!(f->ws_key = strdup(vp->unknown ? "" : vp->key)))
			res = -ENOMEM;
		fs_caller(&proc, &who);
		f->opener = proc;
		if (res == 0 && rev && !(fi->flags & O_TRUNC) &&
		    store_base_at(fs->store, "state/taskHistory.json", rev, &base) == 0)
			bases_put(fs->bases, &proc, rt->rel, base);
		if (res == 0 && writable) {
			fi->direct_io = 1;
			res = stage_begin(fs, f, true);
			if (res == 0 && !(fi->flags & O_TRUNC))
				res = pwrite_all(f->fd, f->text.buf, f->text.len, 0);
			f->dirty = res == 0 && (fi->flags & O_TRUNC);
		}
	}
	if (res < 0) {
		file_free(f);
		return res;
	}
	fi->fh = (uintptr_t)f;
	return 0;
}

int path_open_fixed(const struct route *rt, struct fuse_file_info *fi, struct store_snap *snap)
{
	struct fs_file *f = file_new(rt->fs, rt->vp.lines ? FILE_JSONL : FILE_DOC, -1, rt->vp.doc);

	if (!f) {
		store_snap_free(snap);
		return -ENOMEM;
	}
	f->fixed = true;
	f->row = rt->ops;
	f->snap = snap;
	fi->fh = (uintptr_t)f;
	return 0;
}

int path_open_ckpt_file(const struct route *rt, struct fuse_file_info *fi)
{
	struct fs_file *f;
	struct stat st;
	int res;

	res = rt->ops->getattr(rt, &st);
	if (res < 0)
		return res;
	if (!S_ISREG(st.st_mode))
		return -EISDIR;
	f = file_new(rt->fs, FILE_CKPT, -1, NULL);
	if (!f || !(f->vp = malloc(sizeof(*f->vp)))) {
		file_free(f);
		return -ENOMEM;
	}
	*f->vp = rt->vp;
	fi->fh = (uintptr_t)f;
	return 0;
}

int path_open_context(const struct route *rt, struct fuse_file_info *fi, struct view_context *c, const struct stat *st)
{
	struct fs_file *f = file_new(rt->fs, FILE_CONTEXT, -1, NULL);

	if (!f) {
		view_context_put(c);
		return -ENOMEM;
	}
	f->context = c;
	f->text_st = *st;
	fi->fh = (uintptr_t)f;
	return 0;
}

bool path_open_writes(const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
}

/* ---- files ---------------------------------------------------------------------- */

/* A handle of the plain file fd at r, which charge counts (taken over in every case). NULL without memory. */
static struct fs_file *plain_handle(struct fs *fs, int fd, const char *r, struct fd_charge *charge)
{
	struct fs_file *f = file_new(fs, FILE_PLAIN, fd, r);

	if (!f) {
		close(fd);
		shares_fd_put(charge);
		return NULL;
	}
	f->charge = shares_fd_move(charge);
	return f;
}

int path_plain_open(const struct route *rt, struct fuse_file_info *fi)
{
	_cleanup_(shares_fd_putp) struct fd_charge charge = { 0 };
	struct fs *fs = rt->fs;
	const char *r = rt->rel;
	struct fs_file *f;
	int fd;

	/* The handle keeps the backing file open: one of the caller's share. */
	fd = shares_fd_take(fs->shares, fs_caller_uid, &charge);
	if (fd < 0)
		return fd;
	fd = plain_open_regular(fs, r, fi->flags & PLAIN_OPEN_FLAGS, 0, NULL);
	/* The kernel opens FIFOs and devices itself: one here came since its lookup. */
	if (fd == -EINVAL)
		return -ESTALE;
	if (fd < 0)
		return plain_fail("open", r, -fd);
	f = plain_handle(rt->fs, fd, r, &charge);
	if (!f)
		return -ENOMEM;
	fi->fh = (uintptr_t)f;
	return 0;
}

int path_doc_open(const struct route *rt, struct fuse_file_info *fi)
{
	return doc_open(rt->fs, rt->rel, fi, false, 0);
}

/* Opens rt as its row says, and lets the kernel keep its pages as the row says (kinds.h). */
static int open_by_row(const struct route *rt, struct fuse_file_info *fi)
{
	int r = rt->ops->open ? rt->ops->open(rt, fi) : path_default(rt, -EISDIR);

	if (r < 0)
		return r;
	if (rt->ops->cache.pages == PAGES_KEEP)
		fi->keep_cache = 1;
	else if (rt->ops->cache.pages == PAGES_DIRECT)
		fi->direct_io = 1;
	return 0;
}

int op_open(const struct route *rt, struct fuse_file_info *fi)
{
	return open_by_row(rt, fi);
}

int op_open_version(const struct route *rt, int64_t ver, struct fuse_file_info *fi)
{
	if (!rt->ops->versioned || (fi->flags & O_ACCMODE) != O_RDONLY)
		return -ESTALE;
	return doc_open(rt->fs, rt->rel, fi, false, ver);
}

bool op_version_snap(uint64_t fh, void *arg)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fh;
	struct op_version_snap *v = arg;

	if (f->kind != FILE_DOC)
		return false;
	pthread_mutex_lock(&f->lock);
	if (!f->dirty && f->fd < 0 && store_snap_rev(f->snap) == v->ver)
		v->r = store_snap_dup(f->snap, &v->snap);
	else
		v->r = -ESTALE;
	pthread_mutex_unlock(&f->lock);
	return v->r != -ESTALE;
}

int op_open_version_snap(const struct route *rt, struct store_snap *snap, struct fuse_file_info *fi)
{
	return doc_open_snap(rt->fs, rt->rel, fi, false, snap, true);
}

int path_doc_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = rt->fs;
	int res = doc_create_by_caller(fs, rt->rel);

	if (res == -EEXIST && !(fi->flags & O_EXCL))
		return doc_open(fs, rt->rel, fi, false, 0);
	if (res < 0)
		return res;
	return doc_open(fs, rt->rel, fi, true, 0);
}

int path_create_doc_file(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = rt->fs;
	const struct view_path *vp = &rt->vp;
	int res;

	/* A file of the view that exists only once its doc does. */
	if (!*vp->doc)
		return -EACCES;
	res = doc_create_by_caller(fs, vp->doc);
	if (res < 0 && res != -EEXIST)
		return res;
	if (res == -EEXIST && (fi->flags & O_EXCL))
		return -EEXIST;
	if (res == 0)
		fs_invalidate(fs, vp->doc); /* its compat folder lists it now */
	return open_by_row(rt, fi);
}

int path_plain_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	_cleanup_(shares_fd_putp) struct fd_charge charge = { 0 };
	struct fs *fs = rt->fs;
	const char *r = rt->rel;
	struct fs_file *f;
	int fd, res;

	res = path_made_in(rt, "file");
	if (res < 0)
		return res;
	/* Counted before anything is made: a refused create leaves no file behind. */
	res = shares_fd_take(fs->shares, fs_caller_uid, &charge);
	if (res < 0)
		return res;
	/*
	 * O_EXCL even when the caller did not ask for it: a file that appeared
	 * since the kernel's lookup is opened as it is, and only a file made
	 * here is given to the user who made it.
	 */
	fd = plain_open(fs, r, (fi->flags & PLAIN_OPEN_FLAGS) | O_CREAT | O_EXCL, private_mode(fs, mode));
	if (fd == -EEXIST && !(fi->flags & O_EXCL)) {
		fd = plain_open_regular(fs, r, fi->flags & PLAIN_OPEN_FLAGS, 0, NULL);
		if (fd == -EINVAL)
			fd = -ESTALE; /* a FIFO or a device came since the kernel's lookup */
	} else if (fd >= 0 && (res = give_to_caller(fs, r, -1, NULL, fd, private_mode(fs, mode))) < 0) {
		const char *leaf;
		int dfd = plain_open_parent(fs, r, &leaf);

		close(fd);
		if (dfd >= 0) {
			unlinkat(dfd, leaf, 0);
			close(dfd);
		}
		return res;
	}
	if (fd < 0)
		return plain_fail("create", r, -fd);
	f = plain_handle(rt->fs, fd, r, &charge);
	if (!f)
		return -ENOMEM;
	fi->fh = (uintptr_t)f;
	return 0;
}

int op_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = rt->fs;
	int res;

	backing_check(fs);
	if (path_readonly(rt))
		return -EROFS;
	res = shares_space(fs->shares, fs_caller_uid, 0);
	if (res < 0)
		return res;
	return rt->ops->create ? rt->ops->create(rt, mode, fi) : -EACCES;
}
