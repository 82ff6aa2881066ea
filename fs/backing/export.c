/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * export.c: `convfs export STORE DIR`, the way back out: the backing tree
 * copied, every doc rendered, so that import then export gives the same
 * files. Not their modes: what export writes is owner-only and belongs to
 * the store's owner (tree.c), whatever the backing tree holds, since other
 * users of a shared mount make files there (a setuid one, say) and export
 * may run as root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "fs/cmd/progress.h"
#include "fs/backing/tree.h"
#include "store/util.h"

struct export_ctx {
	struct fs *fs;
	int dst_fd;
	struct tree_owner owner;
	unsigned long files, docs;
	struct progress progress;
};

static int export_plain(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	struct export_ctx *c = ctx;
	int r = 0, fd;

	/* Each mount's own (the client's databases): export_per_mount() picks one. */
	if (strcmp(rel, PLAIN_PER_MOUNT_DIR) == 0)
		return WALK_SKIP;
	progress_show(&c->progress, "exporting: %lu files", ++c->files);
	if (S_ISDIR(st->st_mode)) {
		r = tree_mkdir(&c->owner, c->dst_fd, rel);
	} else if (S_ISREG(st->st_mode)) {
		fd = openat(c->dst_fd, rel, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		r = fd < 0 ? -errno : copy_file(dirfd, name, fd, st, &c->owner);
		if (fd >= 0)
			close(fd);
	} else if (S_ISLNK(st->st_mode)) {
		r = copy_symlink(dirfd, name, c->dst_fd, rel, st, &c->owner);
	}
	if (r < 0)
		log_err("cannot export '%s': %s", rel, strerror(-r));
	return r;
}

static int export_doc(void *ctx, const char *path, const struct store_stat *ss)
{
	struct export_ctx *c = ctx;
	_cleanup_free_ char *buf = NULL;
	struct store_snap *snap = NULL;
	struct timespec times[2];
	off_t off = 0;
	int fd, r;

	progress_show(&c->progress, "exporting: %lu files, %lu conversation files", c->files, ++c->docs);
	r = store_snap_open(c->fs->store, path, &snap);
	if (r < 0)
		return r;
	/* The folder of a doc exists in the backing tree; make sure all the same. */
	for (char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
		_cleanup_free_ char *dir = strndup(path, (size_t)(p - path));

		r = dir ? tree_mkdir(&c->owner, c->dst_fd, dir) : -ENOMEM;
		if (r < 0) {
			store_snap_free(snap);
			return r;
		}
	}
	fd = openat(c->dst_fd, path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	buf = malloc(1 << 20);
	r = fd < 0 ? -errno : buf ? tree_give(&c->owner, fd, NULL) : -ENOMEM;
	while (r == 0) {
		ssize_t n = store_snap_read(c->fs->store, snap, buf, 1 << 20, off);

		if (n <= 0) {
			r = (int)n;
			break;
		}
		r = pwrite_all(fd, buf, (size_t)n, (size_t)off);
		off += n;
	}
	times[0].tv_sec = times[1].tv_sec = ss->mtime_ns / 1000000000;
	times[0].tv_nsec = times[1].tv_nsec = ss->mtime_ns % 1000000000;
	if (r == 0 && futimens(fd, times) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	store_snap_free(snap);
	if (r < 0)
		log_err("cannot export '%s': %s", path, strerror(-r));
	return r;
}

/*
 * The client's databases (the 3.x CLI's db/, the 1.x CLI's locks.db) are
 * kept per mount, in PLAIN_PER_MOUNT_DIR/<folder id>: the export takes those
 * of the mount last used (the folder whose entries changed last), as the
 * folder it was made from had them. 0 if there are none; or -errno.
 */
static int export_per_mount(struct export_ctx *c, int root_fd)
{
	_cleanup_close_ int dfd = openat(root_fd, PLAIN_PER_MOUNT_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int sub = -1;
	char last[32] = "";
	struct timespec last_mtime = { 0 };
	struct dirent *de;
	DIR *d;
	int r;

	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(dup(dfd));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct stat st;

		if (strspn(de->d_name, "0123456789") != strlen(de->d_name) || strlen(de->d_name) >= sizeof(last) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (!*last || st.st_mtim.tv_sec > last_mtime.tv_sec ||
		    (st.st_mtim.tv_sec == last_mtime.tv_sec && st.st_mtim.tv_nsec > last_mtime.tv_nsec)) {
			snprintf(last, sizeof(last), "%s", de->d_name);
			last_mtime = st.st_mtim;
		}
	}
	closedir(d);
	if (!*last)
		return 0;
	sub = openat(dfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return -errno;
	r = walk(sub, "", export_plain, c);
	if (r < 0)
		log_err("cannot export the client's databases of '%s/%s': %s", PLAIN_PER_MOUNT_DIR, last,
			strerror(-r));
	return r;
}

int fs_export(const char *store_path, const char *dir)
{
	struct fs fs = { .root_fd = -1, .lock_fd = -1, .registry = REGISTRY_INIT };
	struct export_ctx c = { .fs = &fs, .dst_fd = -1 };
	struct stat sst;
	bool made;
	int r, src;

	made = mkdir(dir, 0700) == 0;
	if (!made && errno != EEXIST) {
		log_err("cannot create '%s': %s", dir, strerror(errno));
		return -errno;
	}
	c.dst_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dst_fd < 0) {
		log_err("cannot open '%s': %s", dir, strerror(errno));
		return -errno;
	}
	{
		DIR *d = fdopendir(dup(c.dst_fd));
		struct dirent *de;
		bool empty = true;

		while (d && (de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				empty = false;
		if (d)
			closedir(d);
		if (!empty) {
			log_err("cannot export into '%s': it is not empty", dir);
			close(c.dst_fd);
			return -ENOTEMPTY;
		}
	}
	if (stat(store_path, &sst) < 0) {
		log_err("cannot open the store '%s': %s", store_path, strerror(errno));
		close(c.dst_fd);
		return -ENOENT;
	}
	c.owner = tree_owner_of(&sst);
	if (made && (r = tree_give(&c.owner, c.dst_fd, NULL)) < 0) {
		log_err("cannot give '%s' to uid %u: %s", dir, (unsigned)c.owner.uid, strerror(-r));
		close(c.dst_fd);
		return r;
	}
	r = store_open(store_path, 0, &fs.store);
	if (r < 0)
		goto out;
	r = plain_open_root(store_path, &fs.backing_path, &fs.root_fd);
	if (r < 0)
		goto out;
	src = openat(fs.root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0) {
		r = -errno;
		goto out;
	}
	progress_start(&c.progress);
	r = walk(src, "", export_plain, &c);
	close(src);
	if (r == 0)
		r = export_per_mount(&c, fs.root_fd);
	if (r == 0)
		r = store_doc_foreach(fs.store, export_doc, &c);
	progress_end(&c.progress, "exported %lu files and %lu conversation files", c.files, c.docs);
out:
	if (fs.root_fd >= 0)
		close(fs.root_fd);
	free(fs.backing_path);
	store_free(fs.store);
	close(c.dst_fd);
	return r;
}
