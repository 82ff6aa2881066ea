/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file.c: open files, one table of operations per kind.
 *
 * A plain file is the backing tree's file, and every call goes to it. A doc
 * (its compat rendering), its JSON Lines in the view, and the view's
 * writable text (a workspace's taskHistory.json) read their own snapshot
 * until they are written; the first write gives the handle a private staging
 * file (O_TMPFILE in the backing tree, so a crash leaves nothing behind),
 * and the staged bytes are committed as one transaction at close (flush),
 * merged with what other writers committed since (docs/MERGE.md). Reads by
 * everyone else keep coming from the committed version. A line appended at
 * the end of a JSON Lines file is appended to its doc at once, without
 * staging. A checkpoint's file is read with libgit2 and never written.
 *
 * Each kind's calls are one entry of file_ops[]; op_read() and the others
 * only dispatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/kernel/watch.h"
#include "fs/ops/ops_internal.h"
#include "fs/ops/ops.h"
#include "fs/view/shadow.h"
#include "store/store_changes.h"
#include "store/store_view.h"
#include "store/util.h"

/* ---- handles and staging ---------------------------------------------------------- */

void file_free(struct fs_file *f)
{
	bool big;

	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	shares_fd_put(&f->charge);
	store_snap_free(f->snap);
	free(f->path);
	sb_release(&f->pending);
	big = f->text.alloc >= ((size_t)1 << 20);
	sb_release(&f->text);
	free(f->ws_key);
	free(f->vp);
	pthread_mutex_destroy(&f->lock);
	free(f);
	/* glibc would keep the memory of a large text (a changes.diff of megabytes) for good. */
	if (big)
		malloc_trim(0);
}

struct fs_file *file_new(enum file_kind kind, int fd, const char *path)
{
	struct fs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->kind = kind;
	f->fd = fd;
	if (path && !(f->path = strdup(path))) {
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

int stage_begin(struct fs *fs, struct fs_file *f, bool empty)
{
	_cleanup_(shares_fd_putp) struct fd_charge charge = { 0 };
	_cleanup_free_ char *buf = NULL;
	off_t off = 0;
	int fd;

	fd = shares_fd_take(fs->shares, fs_caller_uid, &charge);
	if (fd < 0)
		return fd;
	fd = fs_private_file(fs);
	if (fd < 0)
		return fd;
	if (!empty && f->snap && store_snap_size(f->snap) > 0) {
		size_t bufsz = 1 << 20;

		buf = malloc(bufsz);
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		for (;;) {
			ssize_t n = store_snap_read(fs->store, f->snap, buf, bufsz, off);
			int r;

			if (n == 0)
				break;
			r = n < 0 ? (int)n : pwrite_all(fd, buf, (size_t)n, (size_t)off);
			if (r < 0) {
				log_err("cannot stage '%s' for writing: %s", f->path, strerror(-r));
				close(fd);
				return r;
			}
			off += n;
		}
	}
	f->fd = fd;
	f->charge = shares_fd_move(&charge);
	return 0;
}

/*
 * Who commits what handle f staged: the process that opened it, as /proc
 * said then, not the one whose request commits it now. A flush comes at every
 * close of a descriptor, also of one a child got at fork() and closes at its
 * execve() (close-on-exec): that child holds its exec lock until the flush
 * returns, and reading /proc/<pid>/stat of it waits for that lock, for good.
 * (A handle made for one call has no opener: its caller's.)
 */
static void file_who(const struct fs_file *f, struct fs_proc *proc, struct store_who *who)
{
	if (!f->opener.tgid) {
		fs_caller(proc, who);
		return;
	}
	*proc = f->opener;
	who->pid = proc->tgid;
	who->comm = proc->comm[0] ? proc->comm : NULL;
}

int stage_commit(struct fs *fs, struct fs_file *f, const char *kind)
{
	struct store_snap *snap = NULL;
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .doc = f->path, .base_path = f->path, .kind = kind, .proc = &proc, .who = &who };
	int r;

	file_who(f, &proc, &who);
	r = commit_fd(fs, &req, f->fd, true);
	if (r < 0) {
		if (r != -EINVAL) /* EINVAL was logged with its reason by the store */
			log_err("cannot commit '%s': %s; the previous version stays", f->path, strerror(-r));
		return r;
	}
	f->dirty = false;
	if (store_snap_open(fs->store, f->path, &snap) == 0) {
		store_snap_free(f->snap);
		f->snap = snap;
	}
	return 0;
}

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

/* Commits the staged JSON Lines as the doc's new content (a merged rewrite). f->lock held. */
static int jsonl_commit(struct fs *fs, struct fs_file *f)
{
	struct commit_bytes b;
	struct store_who who;
	struct fs_proc proc;
	struct commit_req req = { .doc = f->path, .base_path = f->path, .kind = "rewrite", .proc = &proc, .who = &who };
	int r;

	r = jsonl_to_array(fs, f->path, f->require, f->fd, &b);
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

/* ---- what the kinds share -------------------------------------------------------- */

/* A staged or snapshot read of a doc, its JSON Lines or the view's text being written. */
static ssize_t staged_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off)
{
	ssize_t n;

	pthread_mutex_lock(&f->lock);
	if (f->fd >= 0) {
		n = pread(f->fd, buf, size, off);
		if (n < 0)
			n = -errno;
	} else {
		struct store_snap *snap;

		/* JSON Lines grow at the end: a reader at its end sees what was added (tail -f). */
		if (f->kind == FILE_JSONL && !f->fixed && off >= store_snap_size(f->snap) &&
		    store_snap_open_jsonl(fs->store, f->path, &snap) == 0) {
			store_snap_free(f->snap);
			f->snap = snap;
		}
		n = store_snap_read(fs->store, f->snap, buf, size, off);
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

/*
 * Writes the bytes of a write at off in fd: from buf, or (buf NULL) from
 * the loop's pipe that bufv names, by splice(). Returns the count written
 * or -errno.
 */
static ssize_t write_at(int fd, const char *buf, struct fuse_bufvec *bufv, size_t size, off_t off)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	if (buf) {
		n = pwrite(fd, buf, size, off);
		return n < 0 ? -errno : n;
	}
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = fd;
	dst.buf[0].pos = off;
	return fuse_buf_copy(&dst, bufv, 0);
}

/*
 * Stages a write (the first one copies the committed content), its bytes
 * in buf or (buf NULL) in the pipe of bufv. f->lock held.
 */
static ssize_t stage_write(struct fs *fs, struct fs_file *f, const char *buf, struct fuse_bufvec *bufv, size_t size,
			   off_t off)
{
	ssize_t n;
	int r;

	if ((size_t)off > COMMIT_MAX || size > COMMIT_MAX - (size_t)off) {
		/* As a failed write: it could never be committed, nor the rest without it. */
		f->write_err = -EFBIG;
		log_warn("refusing a write to '%s' at byte %lld: past the %zu MiB a conversation file may have; this "
			 "open file will commit nothing, the previous version stays",
			 f->path, (long long)off, COMMIT_MAX >> 20);
		return -EFBIG;
	}
	if (f->fd < 0 && (r = stage_begin(fs, f, false)) < 0) {
		f->write_err = r; /* stage_begin logged it */
		return r;
	}
	if (f->pending.len) {
		/* Bytes appended without their newline belong to the staged file now. */
		if ((r = pwrite_all(f->fd, f->pending.buf, f->pending.len, (size_t)store_snap_size(f->snap))) < 0)
			return r;
		f->pending.len = 0;
	}
	if (f->append) {
		struct stat st;

		if (fstat(f->fd, &st) == 0)
			off = st.st_size;
	}
	n = write_at(f->fd, buf, bufv, size, off);
	if (n < 0) {
		f->write_err = (int)n;
		log_err("cannot stage a write to '%s': %s; this open file will commit nothing, the previous version stays",
			f->path, strerror((int)-n));
	} else {
		f->dirty = f->written = true;
	}
	return n;
}

/* A staged write of a doc, its bytes in buf or (buf NULL) in the pipe of bufv. */
static ssize_t staged_write_from(struct fs *fs, struct fs_file *f, const char *buf, struct fuse_bufvec *bufv,
				 size_t size, off_t off)
{
	ssize_t n;

	if (f->fixed)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	/*
	 * After a write the client was told failed, the kernel may have told it
	 * only of a short count, and it writes the rest. That rest is not whole.
	 */
	n = f->write_err;
	if (n == 0)
		n = stage_write(fs, f, buf, bufv, size, off);
	pthread_mutex_unlock(&f->lock);
	return n;
}

static ssize_t staged_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags)
{
	return staged_write_from(fs, f, buf, NULL, size, off);
}

static int staged_truncate(struct fs *fs, struct fs_file *f, off_t size)
{
	int r;

	if (f->fixed)
		return -EROFS;
	if ((size_t)size > COMMIT_MAX)
		return -EFBIG; /* it could never be committed: better said now */
	pthread_mutex_lock(&f->lock);
	r = f->fd < 0 ? stage_begin(fs, f, size == 0) : 0;
	if (r == 0)
		r = ftruncate(f->fd, size) < 0 ? -errno : 0;
	if (r == 0)
		f->dirty = f->written = true;
	pthread_mutex_unlock(&f->lock);
	return r;
}

/*
 * What every staged flush checks first, f->lock held: 1 to go on and commit,
 * else the result (and the lock is released).
 */
static int flush_check(struct fs_file *f, int empty_err)
{
	if (f->write_err) {
		/*
		 * A write the client was told failed (ENOSPC, most often): what is
		 * staged is not what it meant to write. Nothing is committed, and
		 * every close says why, not "invalid JSON".
		 */
		f->dirty = false;
		f->commit_failed = true;
		pthread_mutex_unlock(&f->lock);
		return f->write_err;
	}
	if (f->dirty && !f->written) {
		/*
		 * Opened with O_TRUNC and not written: empty, which is not JSON. A
		 * shell's `>` closes its first descriptor before the command writes
		 * through the other, so this is not yet final: refuse quietly here,
		 * and let release commit (and log a refusal) if it stays empty. A
		 * view file left empty would empty a conversation: EPERM.
		 */
		pthread_mutex_unlock(&f->lock);
		return empty_err;
	}
	return 1;
}

static int nothing_to_sync(struct fs *fs, struct fs_file *f, int datasync)
{
	return 0;
}

static int no_fallocate(struct fs *fs, struct fs_file *f, int mode, off_t off, off_t len)
{
	return -EOPNOTSUPP;
}

/* ---- plain files -------------------------------------------------------------------- */

static int plain_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	return fstat(f->fd, st) < 0 ? -errno : 0;
}

static ssize_t plain_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off)
{
	ssize_t n = pread(f->fd, buf, size, off);

	return n < 0 ? -errno : n;
}

static ssize_t plain_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags)
{
	ssize_t n;

	/* O_APPEND as the client's file has it now (the flags of a write are its current flags) */
	if (flags & O_APPEND) {
		struct iovec iov = { .iov_base = (void *)buf, .iov_len = size };
		struct stat st;

		n = pwritev2(f->fd, &iov, 1, -1, RWF_APPEND);
		if (n < 0 && errno == EOPNOTSUPP && fstat(f->fd, &st) == 0) /* before Linux 4.16 */
			n = pwrite(f->fd, buf, size, st.st_size);
	} else {
		n = pwrite(f->fd, buf, size, off);
	}
	if (n > 0)
		__atomic_store_n(&f->written, true, __ATOMIC_RELAXED);
	return n < 0 ? plain_fail("write", f->path, errno) : n;
}

/*
 * A plain file written since the last close or sync: while other daemons
 * serve the store, they are told, so that their kernels drop its pages
 * (fs/kernel/watch.c). At a close and a sync, not at every write: a reader
 * through another mount sees a write once its writer has closed or synced
 * the file, as an NFS client does.
 */
static int plain_tell_others(struct fs *fs, struct fs_file *f)
{
	int r;

	if (!__atomic_exchange_n(&f->written, false, __ATOMIC_RELAXED) || !watch_peers(fs))
		return 0;
	r = store_plain_changed(fs->store, f->path);
	if (r < 0)
		log_warn("cannot tell the other mounts of the store that '%s' changed: %s; they may show its old "
			 "content for a while", f->path, strerror(-r));
	return 0;
}

static int plain_flush(struct fs *fs, struct fs_file *f)
{
	return plain_tell_others(fs, f);
}

static int plain_fsync(struct fs *fs, struct fs_file *f, int datasync)
{
	if ((datasync ? fdatasync(f->fd) : fsync(f->fd)) < 0)
		return plain_fail("sync", f->path, errno);
	return plain_tell_others(fs, f);
}

static int plain_truncate(struct fs *fs, struct fs_file *f, off_t size)
{
	if (ftruncate(f->fd, size) < 0)
		return -errno;
	__atomic_store_n(&f->written, true, __ATOMIC_RELAXED);
	return 0;
}

static int plain_fallocate(struct fs *fs, struct fs_file *f, int mode, off_t off, off_t len)
{
	if (fallocate(f->fd, mode, off, len) < 0)
		return -errno;
	__atomic_store_n(&f->written, true, __ATOMIC_RELAXED);
	return 0;
}

/* ---- docs --------------------------------------------------------------------------- */

/* An open doc shows the version it reads: its snapshot, or what it staged. */
static int doc_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	struct store_stat ss;

	pthread_mutex_lock(&f->lock);
	store_snap_stat(f->snap, &ss);
	if (f->fd >= 0) {
		struct stat sst;

		if (fstat(f->fd, &sst) == 0)
			ss.size = sst.st_size;
	}
	pthread_mutex_unlock(&f->lock);
	doc_fill_stat(fs, &ss, st);
	return 0;
}

static int doc_flush(struct fs *fs, struct fs_file *f)
{
	bool committed = false;
	int r = 0;

	pthread_mutex_lock(&f->lock);
	if ((r = flush_check(f, -EINVAL)) != 1)
		return r;
	r = 0;
	if (f->dirty) {
		r = stage_commit(fs, f, "write");
		f->commit_failed = r < 0;
		committed = r == 0;
	}
	pthread_mutex_unlock(&f->lock);
	if (committed)
		fs_invalidate(fs, f->path);
	return r;
}

static void doc_release(struct fs *fs, struct fs_file *f)
{
	if (f->dirty && !f->commit_failed) {
		/* Written through a mapping after the last close: commit now. */
		if (stage_commit(fs, f, "write") == 0)
			fs_invalidate(fs, f->path);
	}
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
	return view_getattr(fs, "", f->vp, st);
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

/* ---- the table ---------------------------------------------------------------------- */

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

static const struct file_ops file_ops[] = {
	[FILE_PLAIN] = {
		.getattr = plain_getattr, .read = plain_read, .write = plain_write, .flush = plain_flush,
		.fsync = plain_fsync, .truncate = plain_truncate, .fallocate = plain_fallocate, .attrs = 1,
	},
	[FILE_DOC] = {
		.getattr = doc_getattr, .read = staged_read, .write = staged_write, .flush = doc_flush,
		.release = doc_release, .fsync = nothing_to_sync, .truncate = staged_truncate,
		.fallocate = no_fallocate,
	},
	[FILE_JSONL] = {
		.getattr = jsonl_getattr, .read = staged_read, .write = jsonl_write, .flush = jsonl_flush,
		.release = view_release, .fsync = nothing_to_sync, .truncate = staged_truncate,
		.fallocate = no_fallocate,
	},
	[FILE_TEXT] = {
		.getattr = text_getattr, .read = text_read, .write = text_write, .flush = text_flush,
		.release = view_release, .fsync = nothing_to_sync, .truncate = text_truncate,
		.fallocate = no_fallocate,
	},
	[FILE_CKPT] = {
		.getattr = ckpt_getattr, .read = ckpt_read, .write = ckpt_write, .flush = plain_flush,
		.fsync = nothing_to_sync, .truncate = ckpt_truncate, .fallocate = no_fallocate, .attrs = -EROFS,
	},
};

static struct fs_file *file_of(const struct fuse_file_info *fi)
{
	return (struct fs_file *)(uintptr_t)fi->fh;
}

int file_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	return file_ops[f->kind].getattr(fs, f, st);
}

int file_truncate(struct fs *fs, struct fs_file *f, off_t size)
{
	return file_ops[f->kind].truncate(fs, f, size);
}

int file_attr_target(const struct fs_file *f)
{
	return f->fixed ? -EROFS : file_ops[f->kind].attrs;
}

int op_getattr_if_owner(uint64_t fh, pid_t tgid, struct stat *st)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fh;

	if (f->kind != FILE_DOC || f->opener.tgid != tgid)
		return -ENOENT;
	return file_getattr(fs_get(), f, st);
}

bool op_handle_shows_other(uint64_t fh, const int64_t *rev)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fh;
	bool other = true;

	if (f->kind == FILE_DOC && !f->fixed) {
		pthread_mutex_lock(&f->lock);
		other = f->fd >= 0 || (rev && store_snap_rev(f->snap) != *rev);
		pthread_mutex_unlock(&f->lock);
	}
	return other;
}

int op_read(char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	return (int)file_ops[f->kind].read(fs_get(), f, buf, size, off);
}

/* A write of buf, its room already granted (shares_space()). */
static int write_mem(const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	return (int)file_ops[f->kind].write(fs_get(), f, buf, size, off, fi->flags);
}

int op_write(const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	int r = shares_space(fs_get()->shares, fs_caller_uid, size);

	return r < 0 ? r : write_mem(buf, size, off, fi);
}

int op_write_buf(struct fuse_bufvec *bufv, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	size_t size = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	_cleanup_free_ char *mem = NULL;
	ssize_t n;

	/* Whatever kind of file: another user's bytes stop where root's reserve begins. */
	n = shares_space(fs_get()->shares, fs_caller_uid, size);
	if (n < 0)
		return (int)n;
	if (bufv->count == 1 && bufv->idx == 0 && bufv->off == 0 && !(bufv->buf[0].flags & FUSE_BUF_IS_FD))
		return write_mem(bufv->buf[0].mem, size, off, fi);
	/* O_APPEND is the client's flag of the moment, which the backing fd does not have (plain_write()). */
	if (f->kind == FILE_PLAIN && !(fi->flags & O_APPEND)) {
		n = write_at(f->fd, NULL, bufv, size, off);
		if (n > 0)
			__atomic_store_n(&f->written, true, __ATOMIC_RELAXED);
		return n < 0 ? plain_fail("write", f->path, (int)-n) : (int)n;
	}
	if (f->kind == FILE_DOC)
		return (int)staged_write_from(fs_get(), f, NULL, bufv, size, off);
	mem = malloc(size ? size : 1);
	if (!mem)
		return -ENOMEM;
	dst.buf[0].mem = mem;
	n = fuse_buf_copy(&dst, bufv, 0);
	if (n < 0) {
		log_err("cannot take the bytes of a write to '%s': %s", f->path, strerror((int)-n));
		return (int)n;
	}
	if ((size_t)n != size) {
		log_err("a write to '%s' brought %zd of its %zu bytes", f->path, n, size);
		return -EIO;
	}
	return write_mem(mem, size, off, fi);
}

int op_flush(struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	return file_ops[f->kind].flush(fs_get(), f);
}

int op_release(struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	if (file_ops[f->kind].release)
		file_ops[f->kind].release(fs_get(), f);
	file_free(f);
	return 0;
}

int op_fsync(int datasync, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	/* A doc is durable once committed, at close; there is nothing to sync before. */
	return file_ops[f->kind].fsync(fs_get(), f, datasync);
}

int op_fallocate(int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	int r = 0;

	/* Only an allocation takes room; punching or zeroing a range does not. */
	if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE)))
		r = shares_space(fs_get()->shares, fs_caller_uid, (uint64_t)len);
	return r < 0 ? r : file_ops[f->kind].fallocate(fs_get(), f, mode, off, len);
}
