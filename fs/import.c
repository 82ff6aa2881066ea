/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * import.c: taking over an existing globalStorage folder, and writing one out.
 *
 * On the first mount over a folder, its content is taken in before the mount
 * hides it: conversation files into the store, everything else copied into
 * the backing tree as it is (modes, times, symlinks). The original folder is
 * never modified; it stays under the mount, so nothing can be lost by taking
 * it in. Import is idempotent: a commit of unchanged content is a no-op, so
 * an import cut short is simply run again on the next mount (the store
 * records "imported" only at the end).
 *
 * A conversation file that does not parse (Cline's torn ui_messages.json) is
 * kept byte-for-byte as a raw doc and reported; a task folder that
 * taskHistory.json does not list is kept and reported.
 *
 * Export is the way back out: the backing tree copied, every doc rendered,
 * so that import then export gives the same files.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "store/util.h"

#define IMPORT_BATCH 256 /* docs per transaction */

/* Called for each entry below the walked directory, parents before children. */
typedef int (*walk_fn)(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st);

static int walk(int dirfd, const char *prefix, walk_fn fn, void *ctx)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		path.len = 0;
		if ((r = sb_addf(&path, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name)) < 0)
			break;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			log_err("cannot read '%s': %s", path.buf, strerror(errno));
			break;
		}
		r = fn(ctx, dirfd, de->d_name, path.buf, &st);
		if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0) {
				r = -errno;
				log_err("cannot open '%s': %s", path.buf, strerror(errno));
				break;
			}
			r = walk(sub, path.buf, fn, ctx);
			close(sub);
		}
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r;
}

/* Copies the regular file name (in src_dirfd) to dst_fd, then its mode and times. */
static int copy_file(int src_dirfd, const char *name, int dst_fd, const struct stat *st, mode_t mode)
{
	char buf[1 << 16];
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	int src;
	ssize_t n;

	src = openat(src_dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return -errno;
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
	if (fchmod(dst_fd, mode) < 0 || futimens(dst_fd, times) < 0)
		return -errno;
	return 0;
}

/* Reads a whole (small enough to map) file; *ret_data is munmap()ed by the caller. */
static int map_file(int dirfd, const char *name, void **ret_data, size_t *ret_len)
{
	struct stat st;
	void *p = NULL;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	if (st.st_size > 0) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			close(fd);
			return -errno;
		}
	}
	close(fd);
	*ret_data = p;
	*ret_len = (size_t)st.st_size;
	return 0;
}

struct import_ctx {
	struct fs *fs;
	struct import_report rep;
	unsigned long total;
	unsigned long in_batch;
	int64_t last_progress;
	bool tty;
	/* task folders seen, to find the ones taskHistory.json does not list */
	char **task_dirs;
	size_t ntask_dirs;
};

static int count_entry(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	(*(unsigned long *)ctx)++;
	return 0;
}

static void progress(struct import_ctx *c, bool last)
{
	int64_t now = now_ns();

	if (!c->tty || (!last && now - c->last_progress < 100000000))
		return;
	c->last_progress = now;
	fprintf(stderr, "\rconvfs: importing %lu/%lu entries, %.1f MB%s", c->rep.files, c->total,
		(double)c->rep.bytes / 1e6, last ? "\n" : "");
}

static int import_doc(struct import_ctx *c, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	static const struct store_who who = { 0, "convfs-import" };
	void *data = NULL;
	size_t len = 0;
	int r;

	r = map_file(dirfd, name, &data, &len);
	if (r < 0) {
		log_err("cannot read '%s': %s", rel, strerror(-r));
		return r;
	}
	r = store_doc_commit(c->fs->store, rel, data ? data : "", len, &who, "import");
	if (r == -EINVAL) {
		r = store_doc_commit_raw(c->fs->store, rel, data ? data : "", len, &who, "import-damaged");
		if (r == 0) {
			c->rep.damaged++;
			log_warn("'%s' does not parse; kept byte-for-byte as it is", rel);
		}
	}
	if (data)
		munmap(data, len);
	if (r == 0)
		r = store_doc_set_mtime(c->fs->store, rel, (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec);
	if (r < 0) {
		log_err("cannot import '%s': %s", rel, strerror(-r));
		return r;
	}
	c->rep.docs++;
	if (++c->in_batch >= IMPORT_BATCH) {
		c->in_batch = 0;
		if ((r = store_batch_end(c->fs->store)) < 0 || (r = store_batch_begin(c->fs->store)) < 0)
			return r;
	}
	return 0;
}

static int import_entry(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	struct import_ctx *c = ctx;
	struct fs *fs = c->fs;
	enum store_path_kind kind = store_path_kind(rel);
	mode_t mode = fs->shared ? (st->st_mode & 07777) : (st->st_mode & 07700);
	const char *leaf;
	int r = 0, dfd, fd;

	c->rep.files++;
	progress(c, false);
	if (S_ISREG(st->st_mode) && (kind == STORE_PATH_ARRAY || kind == STORE_PATH_WHOLE)) {
		c->rep.bytes += (unsigned long long)st->st_size;
		return import_doc(c, dirfd, name, rel, st);
	}
	if (S_ISDIR(st->st_mode) && kind == STORE_PATH_DOC_DIR && strncmp(rel, "tasks/", 6) == 0) {
		char **v = realloc(c->task_dirs, (c->ntask_dirs + 1) * sizeof(*v));

		if (!v || !(v[c->ntask_dirs] = strdup(rel + 6)))
			return -ENOMEM;
		c->task_dirs = v;
		c->ntask_dirs++;
	}
	dfd = plain_open_parent(fs, rel, &leaf);
	if (dfd < 0)
		return dfd;
	if (S_ISDIR(st->st_mode)) {
		if (mkdirat(dfd, leaf, mode | 0700) < 0 && errno != EEXIST)
			r = -errno;
	} else if (S_ISREG(st->st_mode)) {
		c->rep.bytes += (unsigned long long)st->st_size;
		fd = openat(dfd, leaf, O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		r = fd < 0 ? -errno : copy_file(dirfd, name, fd, st, mode);
		if (fd >= 0)
			close(fd);
		c->rep.plain++;
	} else if (S_ISLNK(st->st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

		if (n < 0) {
			r = -errno;
		} else {
			target[n] = '\0';
			unlinkat(dfd, leaf, 0);
			r = symlinkat(target, dfd, leaf) < 0 ? -errno : 0;
		}
		c->rep.plain++;
	} else {
		log_warn("'%s' is not a file, directory or symlink; not taken in", rel);
	}
	close(dfd);
	if (r < 0)
		log_err("cannot take in '%s': %s", rel, strerror(-r));
	return r;
}

/* Reports task folders with content that state/taskHistory.json does not list. */
static void report_orphans(struct import_ctx *c, int src_fd)
{
	void *data = NULL;
	size_t len = 0;
	cJSON *hist = NULL;
	int hfd;

	hfd = openat(src_fd, "state", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hfd >= 0) {
		if (map_file(hfd, "taskHistory.json", &data, &len) == 0 && data) {
			hist = cJSON_ParseWithLength(data, len);
			munmap(data, len);
		}
		close(hfd);
	}
	if (c->ntask_dirs && !cJSON_IsArray(hist)) {
		log_warn("state/taskHistory.json is missing or does not parse; %zu task folders are kept but not listed",
			 c->ntask_dirs);
		c->rep.orphans = c->ntask_dirs;
	} else {
		for (size_t i = 0; i < c->ntask_dirs; i++) {
			bool listed = false;
			const cJSON *item;

			cJSON_ArrayForEach(item, hist) {
				const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");

				if (cJSON_IsString(id) && strcmp(id->valuestring, c->task_dirs[i]) == 0) {
					listed = true;
					break;
				}
			}
			if (!listed) {
				c->rep.orphans++;
				log_warn("task folder 'tasks/%s' is not listed in state/taskHistory.json; kept as it is",
					 c->task_dirs[i]);
			}
		}
	}
	cJSON_Delete(hist);
}

int fs_import(struct fs *fs, int src_fd, const char *src_name, struct import_report *ret)
{
	struct import_ctx c = { .fs = fs, .tty = isatty(STDERR_FILENO) };
	int r;

	if (c.tty) {
		r = walk(src_fd, "", count_entry, &c.total);
		if (r < 0)
			return r;
	}
	r = store_batch_begin(fs->store);
	if (r < 0)
		return r;
	r = walk(src_fd, "", import_entry, &c);
	progress(&c, true);
	if (r == 0)
		report_orphans(&c, src_fd);
	if (r == 0)
		r = store_meta_set(fs->store, "imported_from", src_name);
	{
		int r2 = store_batch_end(fs->store);

		if (r == 0)
			r = r2;
	}
	for (size_t i = 0; i < c.ntask_dirs; i++)
		free(c.task_dirs[i]);
	free(c.task_dirs);
	if (r < 0) {
		log_err("cannot take in '%s': %s; run convfs again to retry, the folder is untouched", src_name,
			strerror(-r));
		return r;
	}
	if (c.rep.files)
		log_info("took in '%s': %lu conversation files, %lu other files, %.1f MB; %lu damaged, %lu unlisted tasks",
			 src_name, c.rep.docs, c.rep.plain, (double)c.rep.bytes / 1e6, c.rep.damaged, c.rep.orphans);
	if (ret)
		*ret = c.rep;
	return 0;
}

/* ---- export ----------------------------------------------------------------------- */

struct export_ctx {
	struct fs *fs;
	int dst_fd;
};

static int export_plain(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	struct export_ctx *c = ctx;
	int r = 0, fd;

	if (S_ISDIR(st->st_mode)) {
		if (mkdirat(c->dst_fd, rel, st->st_mode & 07777) < 0 && errno != EEXIST)
			r = -errno;
	} else if (S_ISREG(st->st_mode)) {
		fd = openat(c->dst_fd, rel, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		r = fd < 0 ? -errno : copy_file(dirfd, name, fd, st, st->st_mode & 07777);
		if (fd >= 0)
			close(fd);
	} else if (S_ISLNK(st->st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

		if (n < 0)
			r = -errno;
		else {
			target[n] = '\0';
			r = symlinkat(target, c->dst_fd, rel) < 0 ? -errno : 0;
		}
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

	r = store_snap_open(c->fs->store, path, &snap);
	if (r < 0)
		return r;
	/* The folder of a doc exists in the backing tree; make sure all the same. */
	for (char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
		_cleanup_free_ char *dir = strndup(path, (size_t)(p - path));

		if (!dir || (mkdirat(c->dst_fd, dir, 0700) < 0 && errno != EEXIST)) {
			store_snap_free(snap);
			return dir ? -errno : -ENOMEM;
		}
	}
	fd = openat(c->dst_fd, path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	buf = malloc(1 << 20);
	r = fd < 0 ? -errno : buf ? 0 : -ENOMEM;
	while (r == 0) {
		ssize_t n = store_snap_read(c->fs->store, snap, buf, 1 << 20, off);

		if (n <= 0) {
			r = (int)n;
			break;
		}
		if (write(fd, buf, (size_t)n) != n)
			r = -errno;
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

int fs_export(const char *store_path, const char *dir)
{
	struct fs fs = { .root_fd = -1, .lock_fd = -1 };
	struct export_ctx c = { &fs, -1 };
	int r, src;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
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
	if (access(store_path, F_OK) < 0) {
		log_err("cannot open the store '%s': %s", store_path, strerror(errno));
		close(c.dst_fd);
		return -ENOENT;
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
	r = walk(src, "", export_plain, &c);
	close(src);
	if (r == 0)
		r = store_doc_foreach(fs.store, export_doc, &c);
out:
	if (fs.root_fd >= 0)
		close(fs.root_fd);
	free(fs.backing_path);
	store_free(fs.store);
	close(c.dst_fd);
	return r;
}
