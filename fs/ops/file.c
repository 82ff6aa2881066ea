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
 * Each kind's calls are one row of file_ops[] (the view's JSON Lines, its
 * text and checkpoint files are file_view.c's); op_read() and the others
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
#include "fs/ops/file_internal.h"
#include "fs/ops/ops_internal.h"
#include "fs/ops/ops.h"
#include "fs/view/shadow.h"
#include "fs/view/view_context.h"
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
	view_context_put(f->context);
	pthread_mutex_destroy(&f->lock);
	free(f);
	/* glibc would keep the memory of a large text (a changes.diff of megabytes) for good. */
	if (big)
		malloc_trim(0);
}

struct fs_file *file_new(struct fs *fs, enum file_kind kind, int fd, const char *path)
{
	struct fs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fs = fs;
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
void file_who(const struct fs_file *f, struct fs_proc *proc, struct store_who *who)
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

/* ---- what the kinds share -------------------------------------------------------- */

/* A staged or snapshot read of a doc, its JSON Lines or the view's text being written. */
ssize_t staged_read(struct fs *fs, struct fs_file *f, char *buf, size_t size, off_t off)
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
ssize_t stage_write(struct fs *fs, struct fs_file *f, const char *buf, struct fuse_bufvec *bufv, size_t size,
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

ssize_t staged_write(struct fs *fs, struct fs_file *f, const char *buf, size_t size, off_t off, int flags)
{
	return staged_write_from(fs, f, buf, NULL, size, off);
}

int staged_truncate(struct fs *fs, struct fs_file *f, off_t size)
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
int flush_check(struct fs_file *f, int empty_err)
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

int nothing_to_sync(struct fs *fs, struct fs_file *f, int datasync)
{
	return 0;
}

int no_fallocate(struct fs *fs, struct fs_file *f, int mode, off_t off, off_t len)
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

int plain_flush(struct fs *fs, struct fs_file *f)
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

/* ---- the table ---------------------------------------------------------------------- */

static const struct file_ops plain_ops = {
	.getattr = plain_getattr, .read = plain_read, .write = plain_write, .flush = plain_flush,
	.fsync = plain_fsync, .truncate = plain_truncate, .fallocate = plain_fallocate, .attrs = 1,
};

static const struct file_ops doc_ops = {
	.getattr = doc_getattr, .read = staged_read, .write = staged_write, .flush = doc_flush,
	.release = doc_release, .fsync = nothing_to_sync, .truncate = staged_truncate,
	.fallocate = no_fallocate,
};

/* One row a kind of open file; the view's are file_view.c's. */
static const struct file_ops *const file_ops[] = {
	[FILE_PLAIN] = &plain_ops,
	[FILE_DOC] = &doc_ops,
	[FILE_JSONL] = &file_jsonl_ops,
	[FILE_TEXT] = &file_text_ops,
	[FILE_CKPT] = &file_ckpt_ops,
	[FILE_CONTEXT] = &file_context_ops,
};

static struct fs_file *file_of(const struct fuse_file_info *fi)
{
	return (struct fs_file *)(uintptr_t)fi->fh;
}

int file_getattr(struct fs *fs, struct fs_file *f, struct stat *st)
{
	return file_ops[f->kind]->getattr(fs, f, st);
}

int file_truncate(struct fs *fs, struct fs_file *f, off_t size)
{
	return file_ops[f->kind]->truncate(fs, f, size);
}

int file_attr_target(const struct fs_file *f)
{
	return f->fixed ? -EROFS : file_ops[f->kind]->attrs;
}

int op_getattr_if_owner(uint64_t fh, pid_t tgid, struct stat *st)
{
	struct fs_file *f = (struct fs_file *)(uintptr_t)fh;

	if (f->kind != FILE_DOC || f->opener.tgid != tgid)
		return -ENOENT;
	return file_getattr(f->fs, f, st);
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

	return (int)file_ops[f->kind]->read(f->fs, f, buf, size, off);
}

/* A write of buf, its room already granted (shares_space()). */
static int write_mem(const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	return (int)file_ops[f->kind]->write(f->fs, f, buf, size, off, fi->flags);
}

int op_write(const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	int r = shares_space(file_of(fi)->fs->shares, fs_caller_uid, size);

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
	n = shares_space(f->fs->shares, fs_caller_uid, size);
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
		return (int)staged_write_from(f->fs, f, NULL, bufv, size, off);
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

	return file_ops[f->kind]->flush(f->fs, f);
}

int op_release(struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	if (file_ops[f->kind]->release)
		file_ops[f->kind]->release(f->fs, f);
	file_free(f);
	return 0;
}

int op_fsync(int datasync, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);

	/* A doc is durable once committed, at close; there is nothing to sync before. */
	return file_ops[f->kind]->fsync(f->fs, f, datasync);
}

int op_fallocate(int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct fs_file *f = file_of(fi);
	int r = 0;

	/* Only an allocation takes room; punching or zeroing a range does not. */
	if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE)))
		r = shares_space(f->fs->shares, fs_caller_uid, (uint64_t)len);
	return r < 0 ? r : file_ops[f->kind]->fallocate(f->fs, f, mode, off, len);
}
