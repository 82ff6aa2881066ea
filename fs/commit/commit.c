/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * commit.c: the one way the bytes a writer wrote become a commit.
 *
 * A writer's bytes are in a file: its temp file renamed over a doc, or the
 * staging file of an in-place write. Another process may reach that file by
 * another name (a hard link to the temp file) and truncate or grow it while
 * the daemon commits it. So the file is never mapped (a mapping whose file
 * shrinks kills the daemon with SIGBUS), its size is never trusted, and each
 * of its bytes is read once, to its end: what was read is what is
 * committed, one version the writer wrote, or a mix the other process made
 * of it, which is still valid JSON or refused like any invalid save.
 *
 * Up to COMMIT_INLINE bytes are read into memory. A larger file is copied
 * into a file of the daemon's own, unnamed (O_TMPFILE) in the backing tree
 * (fs_private_file()), which the store then reads a piece at a time
 * (store_commit.fd): the daemon's memory stays bounded whatever the size of
 * the file. A staging file is already the daemon's own, and is not copied.
 * A writer's larger file committed by commit_fd() (a temp file renamed over
 * a doc) is not copied whole either: the store reads from it, once, the
 * bytes it compares with the elements it keeps, and has only the rest
 * copied (store_commit.fd_shared, copy_tail()).
 *
 * Then the writer's base changes hands: taken out of the table of bases, the
 * commit made against it, the new base put back (bases.c). Every commit of
 * bytes a writer wrote goes through commit_taken(): a rename over a doc and
 * an in-place save by way of commit_fd(), a rewrite of the view's JSON Lines
 * after its conversion to an array (file.c). The take-in of the folder
 * underneath reads its files with commit_take() too (import.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/ops/ops_internal.h"
#include "store/util.h"

#define COMMIT_CHUNK ((size_t)1 << 20)

ssize_t pread_retry(int fd, void *buf, size_t n, size_t off)
{
	ssize_t k;

	do
		k = pread(fd, buf, n, (off_t)off);
	while (k < 0 && errno == EINTR);
	return k < 0 ? -errno : k;
}

/* Reads fd on from offset ret->len into ret, COMMIT_CHUNK bytes a call, to its end or past limit bytes. */
static int read_upto(int fd, struct sb *ret, size_t limit, bool *ret_eof)
{
	*ret_eof = false;
	while (ret->len <= limit) {
		ssize_t n;

		if (sb_grow(ret, COMMIT_CHUNK) < 0)
			return -ENOMEM;
		n = pread_retry(fd, ret->buf + ret->len, COMMIT_CHUNK, ret->len);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			*ret_eof = true;
			return 0;
		}
		ret->len += (size_t)n;
		ret->buf[ret->len] = '\0';
	}
	return 0;
}

int pwrite_all(int fd, const char *p, size_t n, size_t off)
{
	while (n > 0) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		off += (size_t)k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Copies the rest of fd, from off on, to out, where byte off goes at
 * out_off: by copy_file_range() where the kernel can, else through buf.
 * *ret_end is where fd ended. -EFBIG past COMMIT_MAX: another process may
 * grow the file while it is copied.
 */
static int copy_rest(int fd, size_t off, int out, size_t out_off, size_t *ret_end, struct sb *buf)
{
	bool by_kernel = true;

	for (;;) {
		ssize_t n;

		if (off > COMMIT_MAX)
			return -EFBIG;
		if (by_kernel) {
			loff_t in_at = (loff_t)off, out_at = (loff_t)out_off;

			n = copy_file_range(fd, &in_at, out, &out_at, COMMIT_CHUNK, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
				by_kernel = false;
				continue;
			}
		} else {
			buf->len = 0;
			if (sb_grow(buf, COMMIT_CHUNK) < 0)
				return -ENOMEM;
			n = pread(fd, buf->buf, COMMIT_CHUNK, (off_t)off);
			if (n > 0) {
				int r = pwrite_all(out, buf->buf, (size_t)n, out_off);

				if (r < 0)
					return r;
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (size_t)n;
		out_off += (size_t)n;
	}
	*ret_end = off;
	return 0;
}

/* store_commit.copy_rest: bytes from `from` to the end of fd, into a private file. */
static int copy_tail(void *ctx, int fd, size_t from, int *ret_fd, size_t *ret_len)
{
	_cleanup_sb_ struct sb buf = SB_INIT;
	int out = fs_private_file(ctx), r;
	size_t end = from;

	if (out < 0)
		return out;
	r = copy_rest(fd, from, out, 0, &end, &buf);
	if (r < 0) {
		close(out);
		return r;
	}
	*ret_fd = out;
	*ret_len = end - from;
	return 0;
}

int fs_private_file(struct fs *fs)
{
	int fd;

	backing_check(fs);
	fd = plain_open(fs, "", O_TMPFILE | O_RDWR, 0600);
	if (fd == -EOPNOTSUPP || fd == -EISDIR) {
		/* A filesystem without unnamed files: a name, removed at once. */
		char name[64];
		const char *leaf;
		int dfd;

		snprintf(name, sizeof(name), ".convfs-stage.%d.%lld", (int)getpid(), (long long)now_ns());
		fd = plain_open(fs, name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0 && (dfd = plain_open_parent(fs, name, &leaf)) >= 0) {
			unlinkat(dfd, leaf, 0);
			close(dfd);
		}
	}
	if (fd < 0)
		log_err("cannot create a private file in '%s': %s", fs->backing_path, strerror(-fd));
	return fd;
}

int commit_size_check(int fd, const struct stat *st, const char *path)
{
	off_t hole;

	if ((size_t)st->st_size > COMMIT_MAX) {
		log_warn("refusing to commit '%s': it is %lld bytes, more than the %zu MiB a conversation file may "
			 "have; nothing stored changes",
			 path, (long long)st->st_size, COMMIT_MAX >> 20);
		return -EFBIG;
	}
	/* Where the filesystem cannot tell (an error), the scan finds the NUL bytes. */
	hole = lseek(fd, 0, SEEK_HOLE);
	if (hole >= 0 && hole < st->st_size) {
		log_warn("refusing to commit '%s': it has a hole at byte %lld (read as NUL bytes, which are not "
			 "JSON); nothing stored changes",
			 path, (long long)hole);
		return -EINVAL;
	}
	return 0;
}

int commit_take(struct fs *fs, int fd, enum commit_take_how how, const char *path, struct commit_bytes *ret)
{
	_cleanup_close_ int out = -1;
	_cleanup_sb_ struct sb mem = SB_INIT;
	struct stat st;
	bool eof = false, large;
	size_t len = 0;
	int r;

	/* The daemon's own file's size holds; another's only picks the way: each byte is read to the end. */
	if (fstat(fd, &st) < 0) {
		if (how == TAKE_OWN)
			return -errno;
		st.st_size = 0;
	} else if ((r = commit_size_check(fd, &st, path)) < 0) {
		return r;
	}
	large = (size_t)st.st_size > COMMIT_INLINE;
	if (large && how != TAKE_COPY) {
		*ret = (struct commit_bytes){ .mem = SB_INIT, .fd = fd, .len = (size_t)st.st_size,
					      .shared = how == TAKE_SHARED };
		return 0;
	}
	/* A larger file is copied whole by the kernel rather than read into memory first. */
	if (!large) {
		r = read_upto(fd, &mem, COMMIT_INLINE, &eof);
		if (r < 0)
			return r;
		if (eof) {
			*ret = (struct commit_bytes){ .fd = -1, .len = mem.len };
			ret->mem = mem;
			mem = (struct sb)SB_INIT;
			return 0;
		}
	}
	out = fs_private_file(fs);
	if (out < 0)
		return out;
	r = pwrite_all(out, mem.buf, mem.len, 0);
	if (r == 0)
		r = copy_rest(fd, mem.len, out, mem.len, &len, &mem);
	if (r == -EFBIG)
		log_warn("refusing to commit '%s': it grew past the %zu MiB a conversation file may have while it "
			 "was read; nothing stored changes",
			 path, COMMIT_MAX >> 20);
	if (r < 0)
		return r;
	*ret = (struct commit_bytes){ .mem = SB_INIT, .fd = TAKE_FD(out), .own_fd = true, .len = len };
	return 0;
}

void commit_bytes_release(struct commit_bytes *b)
{
	sb_release(&b->mem);
	if (b->own_fd)
		close(b->fd);
	b->fd = -1;
	b->own_fd = false;
}

/*
 * Gives memory back after a big commit: glibc keeps freed memory of large
 * allocations in its arenas, and a daemon that committed one 100 MB save
 * would otherwise hold that much for good.
 */
static void trim_after(size_t committed)
{
	if (committed >= ((size_t)4 << 20))
		malloc_trim(0);
}

int commit_taken(struct fs *fs, const struct commit_req *req, const struct commit_bytes *b)
{
	_cleanup_base_lease_ struct base_lease lease = { 0 };
	struct store_base *nb = NULL;
	int r;

	struct store_commit c = { .path = req->ws_key ? "state/taskHistory.json" : req->doc,
				  .data = b->fd < 0 ? sb_str(&b->mem) : NULL, .len = b->len, .fd = b->fd,
				  .who = req->who, .kind = req->ws_key ? "merge" : req->kind, .merge = true,
				  .ws_key = req->ws_key, .fd_shared = b->shared, .copy_rest = copy_tail,
				  .copy_ctx = fs };

	bases_lease(fs->bases, req->proc, req->base_path, &lease);
	c.base = lease.base;
	r = store_commit(fs->store, &c, &nb, NULL);
	if (r == 0)
		base_lease_renew(&lease, nb);
	trim_after(b->len);
	return r;
}

int commit_bytes(struct fs *fs, const struct commit_req *req, const char *data, size_t len)
{
	/* Not copied: the bytes are only read (a const view of the caller's). */
	struct commit_bytes b = { .mem = { .buf = (char *)data, .len = len }, .fd = -1, .len = len };

	return commit_taken(fs, req, &b);
}

int commit_fd(struct fs *fs, const struct commit_req *req, int fd, bool private_fd)
{
	struct commit_bytes b;
	int r;

	r = commit_take(fs, fd, private_fd ? TAKE_OWN : TAKE_SHARED, req->base_path, &b);
	if (r == -EFBIG || r == -EINVAL) /* said by commit_size_check() or copy_rest() */
		return r;
	if (r < 0) {
		log_err("cannot read what was written to '%s': %s; the previous version stays", req->base_path,
			strerror(-r));
		return r;
	}
	r = commit_taken(fs, req, &b);
	commit_bytes_release(&b);
	return r;
}
