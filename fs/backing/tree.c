/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree.c: walking a folder and copying its files, for the take-in and for
 * export. Every entry is reached through its folder's fd with O_NOFOLLOW or
 * AT_SYMLINK_NOFOLLOW; a file is read with read() into memory of our own,
 * never mapped: a writer may truncate it meanwhile.
 *
 * What is copied out of a folder other users could write (the folder
 * underneath a shared mount, the backing tree of one) must not carry their
 * modes: a file another user made 6755 would come out setuid, owned by
 * whoever copies it, root included. So every copy made here is owner-only
 * (0700 for a folder, the owner's bits of the original for a file) and
 * belongs to the store's owner (struct tree_owner): the owner shares it
 * again with chmod if that is wanted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs/backing/tree.h"
#include "store/util.h"

/*
 * Walks the open directory d (closing it): per folder one open, a readdir and
 * one fstatat per entry, no more, since at every mount this walks the whole
 * folder underneath.
 */
static int walk_dir(DIR *d, const char *prefix, walk_fn fn, void *ctx)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	int dfd = dirfd(d), r = 0;
	struct dirent *de;

	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		path.len = 0;
		if ((*prefix && ((r = sb_adds(&path, prefix)) < 0 || (r = sb_add(&path, "/", 1)) < 0)) ||
		    (r = sb_adds(&path, de->d_name)) < 0)
			break;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed since readdir: a writer is at work */
			r = -errno;
			log_err("cannot read '%s': %s", path.buf, strerror(errno));
			break;
		}
		r = fn(ctx, dfd, de->d_name, path.buf, &st);
		if (r == WALK_SKIP) {
			r = 0;
			continue;
		}
		if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			DIR *sd;

			if (sub < 0 && errno == ENOENT)
				continue;
			if (sub < 0 || !(sd = fdopendir(sub))) {
				r = -errno;
				log_err("cannot open '%s': %s", path.buf, strerror(errno));
				if (sub >= 0)
					close(sub);
				break;
			}
			r = walk_dir(sd, path.buf, fn, ctx);
		}
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r;
}

/* Calls fn for each entry below the directory dirfd (left open), parents before children. */
int walk(int dirfd, const char *prefix, walk_fn fn, void *ctx)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	return walk_dir(d, prefix, fn, ctx);
}

struct tree_owner tree_owner_of(const struct stat *store_st)
{
	uid_t euid = geteuid();

	return (struct tree_owner){ .uid = store_st->st_uid, .gid = store_st->st_gid,
				    .give = euid == 0 && (store_st->st_uid != euid || store_st->st_gid != getegid()) };
}

int tree_give(const struct tree_owner *o, int dirfd, const char *name)
{
	if (!o->give)
		return 0;
	if (name ? fchownat(dirfd, name, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0 : fchown(dirfd, o->uid, o->gid) < 0)
		return -errno;
	return 0;
}

int tree_mkdir(const struct tree_owner *o, int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) < 0)
		return errno == EEXIST ? 0 : -errno;
	return tree_give(o, dirfd, name);
}

/*
 * Copies the regular file name (in src_dirfd) to dst_fd, then its times;
 * owner-only and o's (tree.h).
 */
int copy_file(int src_dirfd, const char *name, int dst_fd, const struct stat *st, const struct tree_owner *o)
{
	char buf[1 << 16];
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	struct stat now;
	int src, r;
	ssize_t n;

	/* Whatever was walked, a FIFO or a device may stand there by now. */
	src = open_regular(src_dirfd, name, &now);
	if (src < 0)
		return src;
	while ((n = read(src, buf, sizeof(buf))) > 0) {
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(dst_fd, buf + done, (size_t)(n - done));

			if (w < 0) {
				int e = errno;

				close(src);
				return -e;
			}
			done += w;
		}
	}
	close(src);
	if (n < 0)
		return -errno;
	/* Given first: a chown by root clears setuid and setgid, but the mode set after has none anyway. */
	if ((r = tree_give(o, dst_fd, NULL)) < 0)
		return r;
	if (fchmod(dst_fd, st->st_mode & 0700) < 0 || futimens(dst_fd, times) < 0)
		return -errno;
	return 0;
}

int copy_symlink(int src_dirfd, const char *name, int dst_dirfd, const char *dst_name, const struct stat *st,
		 const struct tree_owner *o)
{
	char target[4096];
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	ssize_t n = readlinkat(src_dirfd, name, target, sizeof(target) - 1);
	int r;

	if (n < 0)
		return -errno;
	target[n] = '\0';
	if (symlinkat(target, dst_dirfd, dst_name) < 0)
		return -errno;
	if ((r = tree_give(o, dst_dirfd, dst_name)) < 0)
		return r;
	/* Its times, as a copied file's: what tells the take-in later whether the store changed it. */
	return utimensat(dst_dirfd, dst_name, times, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int open_regular(int dirfd, const char *name, struct stat *ret_st)
{
	int fd, r;

	/* O_NONBLOCK: a FIFO put in the file's place must not block the mount. */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, ret_st) < 0)
		r = -errno;
	else if (!S_ISREG(ret_st->st_mode))
		r = -EINVAL;
	else
		return fd;
	close(fd);
	return r;
}

int read_fd_all(int fd, size_t max, char **ret_data, size_t *ret_len)
{
	_cleanup_sb_ struct sb sb = SB_INIT;
	struct stat st;
	int r;

	/* What fstat() says is only where to start: the file may grow or shrink while it is read. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size < max &&
	    (r = sb_grow(&sb, (size_t)st.st_size + 1)) < 0)
		return r;
	for (;;) {
		ssize_t n;

		if (sb.alloc - sb.len < 2 && (r = sb_grow(&sb, sb.alloc ? sb.alloc : 65536)) < 0)
			return r;
		n = read(fd, sb.buf + sb.len, sb.alloc - sb.len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		sb.len += (size_t)n;
		if (sb.len > max)
			return -EFBIG;
	}
	sb.buf[sb.len] = '\0';
	*ret_len = sb.len;
	*ret_data = sb_detach(&sb, NULL);
	return 0;
}

/*
 * Reads the whole regular file name (in dirfd) into memory of our own, with
 * read(): another process may truncate or rewrite it meanwhile, which a
 * mapping would turn into SIGBUS. *ret_st is the fstat() of the fd read, taken
 * before reading: if the file changes while it is read, what is recorded as
 * seen is older than what was read, so the next take-in looks again. The
 * caller frees *ret_data.
 */
int read_file(int dirfd, const char *name, char **ret_data, size_t *ret_len, struct stat *ret_st)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = open_regular(dirfd, name, &st);
	if (fd < 0)
		return fd;
	if ((r = read_fd_all(fd, SIZE_MAX, ret_data, ret_len)) < 0)
		return r;
	*ret_st = st;
	return 0;
}
