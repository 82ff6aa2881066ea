/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plain.c: the backing tree that holds every path the store does not manage.
 *
 * The daemon must never be led out of its own tree: a symlink that a user (or
 * an attacker sharing the mount) plants in the plain area is data, to be
 * returned by readlink, never followed by the daemon. Every path is resolved
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and leaves are touched
 * with the *at() calls and AT_SYMLINK_NOFOLLOW / O_NOFOLLOW.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fs/fs.h"
#include "store/util.h"

static int openat2_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_CLOEXEC,
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode & 07777) : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	do
		fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : fd;
}

int plain_open(const struct fs *fs, const char *rel, int flags, mode_t mode)
{
	return openat2_beneath(fs->root_fd, *rel ? rel : ".", flags, mode);
}

int plain_open_parent(const struct fs *fs, const char *rel, const char **ret_leaf)
{
	const char *slash = strrchr(rel, '/');
	char buf[4096];
	int fd;

	if (!slash) {
		fd = openat2_beneath(fs->root_fd, ".", O_PATH | O_DIRECTORY, 0);
		if (fd >= 0)
			*ret_leaf = rel;
		return fd;
	}
	if ((size_t)(slash - rel) >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, rel, (size_t)(slash - rel));
	buf[slash - rel] = '\0';
	fd = openat2_beneath(fs->root_fd, buf, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0)
		*ret_leaf = slash + 1;
	return fd;
}

int plain_mkdirs(const struct fs *fs, const char *rel)
{
	char buf[4096];
	size_t n = strlen(rel);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, rel, n + 1);
	for (char *p = buf; ; p++) {
		if (*p == '/' || *p == '\0') {
			char save = *p;
			const char *leaf;
			int dfd, r;

			*p = '\0';
			dfd = plain_open_parent(fs, buf, &leaf);
			if (dfd < 0)
				return dfd;
			r = mkdirat(dfd, leaf, 0700) < 0 && errno != EEXIST ? -errno : 0;
			close(dfd);
			if (r < 0)
				return r;
			*p = save;
			if (!save)
				return 0;
		}
	}
}

int plain_open_root(const char *store_path, char **ret_backing_path, int *ret_fd)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	int fd, r;

	r = sb_addf(&path, "%s.files", store_path);
	if (r < 0)
		return r;
	if (mkdir(path.buf, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		log_err("cannot create the backing tree '%s': %s", path.buf, strerror(errno));
		return r;
	}
	fd = open(path.buf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		log_err("cannot open the backing tree '%s': %s", path.buf, strerror(errno));
		return r;
	}
	*ret_fd = fd;
	*ret_backing_path = sb_detach(&path, NULL);
	return 0;
}
