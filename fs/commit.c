/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * commit.c: the one way the bytes a writer wrote become a commit.
 *
 * A writer's bytes are in a file: its temp file renamed over a doc, or the
 * staging file of an in-place write. Another process may reach that file by
 * another name (a hard link to the temp file) and truncate or grow it while
 * the daemon commits it. So the file is never mapped (a mapping whose file
 * shrinks kills the daemon with SIGBUS) and its size is never trusted: it is
 * read with pread(), COMMIT_CHUNK bytes a call, to its end, into memory the
 * daemon owns, and what was read is what is committed: one version the
 * writer wrote, or a mix the other process made of it, which is still valid
 * JSON or refused like any invalid save.
 *
 * Then the writer's base changes hands: taken out of the table of bases, the
 * commit made against it, the new base put back (bases.c). Every commit of
 * bytes a writer wrote (a rename over a doc, an in-place save, a rewrite of a
 * view file) goes through commit_fd().
 */
#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "store/util.h"

#define COMMIT_CHUNK ((size_t)1 << 20)

int commit_read_fd(int fd, struct sb *ret)
{
	for (;;) {
		ssize_t n;

		if (sb_grow(ret, COMMIT_CHUNK) < 0)
			return -ENOMEM;
		n = pread(fd, ret->buf + ret->len, COMMIT_CHUNK, (off_t)ret->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		ret->len += (size_t)n;
		ret->buf[ret->len] = '\0';
	}
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

static int commit_as_writer(struct fs *fs, const struct commit_req *req, const char *data, size_t len)
{
	struct store_base *base, *nb = NULL;
	int r;

	struct store_commit c = { .path = req->ws_key ? "state/taskHistory.json" : req->doc, .data = data, .len = len,
				  .who = req->who, .kind = req->ws_key ? "merge" : req->kind, .merge = true,
				  .ws_key = req->ws_key };

	c.base = base = bases_take(fs->bases, req->proc, req->base_path);
	r = store_commit(fs->store, &c, &nb, NULL);
	store_base_free(base);
	bases_put(fs->bases, req->proc, req->base_path, nb);
	return r;
}

int commit_bytes(struct fs *fs, const struct commit_req *req, const char *data, size_t len)
{
	int r = commit_as_writer(fs, req, data, len);

	trim_after(len);
	return r;
}

int commit_fd(struct fs *fs, const struct commit_req *req, int fd)
{
	_cleanup_sb_ struct sb data = SB_INIT;
	size_t len;
	int r;

	r = commit_read_fd(fd, &data);
	if (r < 0) {
		log_err("cannot read what was written to '%s': %s; the previous version stays", req->base_path,
			strerror(-r));
		return r;
	}
	r = commit_as_writer(fs, req, sb_str(&data), len = data.len);
	sb_release(&data);
	trim_after(len);
	return r;
}
