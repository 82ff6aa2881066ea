/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd_check.c: `convfs check STORE`, is the store sound?
 *
 * Two halves. The store itself (store_check(): SQLite's integrity check, the
 * schema version, the tables against each other), then the store against
 * its plain-file folder STORE.files/: the folder of every conversation file
 * the store has must be there, nothing there may stand where the store has a
 * conversation file (the store's would hide it), no symlink may lead out of
 * the tree or stand where conversations are kept, nothing may be a device,
 * and every mode must be owner-only: no bit for group or others, no setuid,
 * setgid or sticky bit (docs/SECURITY.md; a mount with -o allow_other keeps
 * the modes its users ask for, so there it may be meant), and everything
 * the store's owner's (on a shared mount run by root, what another user
 * made is that user's). The folder itself is 0700 and the owner's, shared
 * or not: the mount root's own mode is a row of the store, which must be a
 * mode.
 *
 * Each problem is one line on stdout, "<where>: <what>", for scripts and
 * for people; the exit status is 0 for none, 1 for problems found, 2 for a
 * wrong command line or a store that cannot be opened. Nothing is written:
 * the store is opened read-only and the folder only read. A store a daemon
 * serves is checked all the same, with a warning: what it writes meanwhile
 * is not seen, or seen half (the backing tree is not a snapshot).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs/cmd/cmd.h"
#include "fs/fs.h"
#include "fs/cmd/progress.h"
#include "fs/backing/tree.h"
#include "store/store_ops.h"
#include "store/util.h"

struct check_ctx {
	struct store *st;
	int root_fd;
	uid_t owner; /* the store file's */
	const char *files; /* STORE.files, for messages */
	int problems;
	unsigned long entries;
	struct progress progress;
};

static int say(void *ctx, const char *line)
{
	struct check_ctx *c = ctx;

	if (c->progress.shown)
		fputs("\r\033[K", stderr); /* the progress line is redrawn under it */
	printf("%s\n", line);
	c->problems++;
	return 0;
}

static int sayf(struct check_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sayf(struct check_ctx *c, const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return say(c, line);
}

static void store_progress(void *ctx, int64_t done, int64_t total)
{
	struct check_ctx *c = ctx;

	progress_show(&c->progress, "checking the store: step %lld of %lld", (long long)done, (long long)total);
}

/* A symlink's target leaves the tree if it is absolute or climbs above the root from rel's folder. */
static bool link_leaves(const char *rel, const char *target)
{
	int depth = 0;

	if (target[0] == '/')
		return true;
	for (const char *p = rel; (p = strchr(p, '/')); p++)
		depth++;
	for (const char *p = target; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && strncmp(p, "..", 2) == 0)
			depth--;
		else if (n && !(n == 1 && *p == '.'))
			depth++;
		if (depth < 0)
			return true;
		p += n + (p[n] == '/');
	}
	return false;
}

/* Owner-only (no group, other, setuid, setgid or sticky bit) and the store owner's: else one line each. */
static void owner_only(struct check_ctx *c, const char *rel, const struct stat *st)
{
	if (st->st_mode & 07077)
		sayf(c, "files: '%s' has mode %04o, not owner-only", rel, (unsigned)(st->st_mode & 07777));
	if (st->st_uid != c->owner)
		sayf(c, "files: '%s' belongs to uid %u, not to the store's owner (uid %u)", rel, (unsigned)st->st_uid,
		     (unsigned)c->owner);
}

static int check_entry(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	struct check_ctx *c = ctx;
	enum store_path_kind kind = store_path_kind(rel);
	struct store_stat ss;

	c->entries++;
	progress_show(&c->progress, "checking '%s': %lu entries", c->files, c->entries);
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

		if (n < 0)
			return sayf(c, "files: '%s': cannot read the symlink: %s", rel, strerror(errno));
		target[n] = '\0';
		if (kind != STORE_PATH_PLAIN)
			return sayf(c, "files: '%s' is a symlink (to '%s') where conversations are kept", rel, target);
		if (link_leaves(rel, target))
			return sayf(c, "files: '%s' is a symlink out of the folder (to '%s')", rel, target);
		return 0;
	}
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		sayf(c, "files: '%s' is a device", rel);
	owner_only(c, rel, st);
	if ((kind == STORE_PATH_ARRAY || kind == STORE_PATH_WHOLE) && store_doc_stat(c->st, rel, &ss) == 0)
		sayf(c, "files: '%s' is a plain file where the store has that conversation file (hidden by it)", rel);
	return 0;
}

/* The folder of each conversation file the store has must be in the backing tree. */
static int check_doc(void *ctx, const char *path, const struct store_stat *ss)
{
	struct check_ctx *c = ctx;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (!slash)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (fstatat(c->root_fd, dir, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sayf(c, "files: '%s' is missing: the folder of '%s' (made again at the next mount)", dir, path);
	if (!S_ISDIR(st.st_mode))
		return sayf(c, "files: '%s' is not a folder: it holds '%s'", dir, path);
	return 0;
}

static int check_files(struct check_ctx *c)
{
	_cleanup_free_ char *root_mode = NULL;
	struct stat st;
	mode_t m;
	int r;

	r = store_meta_get(c->st, PLAIN_ROOT_MODE_KEY, &root_mode);
	if (r == 0 && plain_root_mode_parse(root_mode, &m) < 0)
		sayf(c, "store: the mount root's mode '%s' is not a mode (it shows 0700)", root_mode);
	else if (r < 0 && r != -ENOENT)
		return r;

	c->root_fd = open(c->files, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->root_fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return sayf(c, "files: '%s' is not a folder (a symlink, or a file)", c->files);
		if (errno == ENOENT)
			return sayf(c, "files: '%s' is missing (made again at the next mount; plain files are lost)",
				    c->files);
		fprintf(stderr, "convfs: cannot open '%s': %s\n", c->files, strerror(errno));
		return -errno;
	}
	if (fstat(c->root_fd, &st) < 0)
		return -errno;
	owner_only(c, c->files, &st);
	r = walk(c->root_fd, "", check_entry, c);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot read '%s': %s\n", c->files, strerror(-r));
		return r;
	}
	return store_doc_foreach(c->st, check_doc, c);
}

int cmd_check(int argc, char **argv)
{
	_cleanup_free_ char *files = NULL;
	struct check_ctx c = { .root_fd = -1 };
	const char *path;
	struct stat sst;
	int r;

	if (argc != 3 || argv[2][0] == '-') {
		fprintf(stderr, "usage: %s check STORE\n", argv[0]);
		return 2;
	}
	path = argv[2];
	r = cmd_store_in_use(path);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot open the store '%s': %s\n", path, strerror(-r));
		return 2;
	}
	if (r == 1)
		fprintf(stderr, "convfs: warning: the store '%s' is mounted (a convfs daemon serves it): checking it as "
				"it is now; what the daemon writes meanwhile may show as problems\n", path);
	r = store_open(path, STORE_OPEN_READONLY | STORE_OPEN_AS_IS, &c.st);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot open the store '%s': %s\n", path, strerror(-r));
		return 2;
	}
	if (stat(path, &sst) < 0) {
		fprintf(stderr, "convfs: cannot stat the store '%s': %s\n", path, strerror(errno));
		store_free(c.st);
		return 2;
	}
	c.owner = sst.st_uid;
	r = store_schema_of(c.st);
	if (r >= 0 && r < store_schema_version())
		fprintf(stderr, "convfs: note: the store has schema version %d; the next mount migrates it to %d\n", r,
			store_schema_version());
	if (asprintf(&files, "%s.files", path) < 0) {
		files = NULL;
		store_free(c.st);
		return 2;
	}
	c.files = files;
	progress_start(&c.progress);
	r = store_check(c.st, say, store_progress, &c);
	if (r >= 0)
		r = check_files(&c);
	progress_end(&c.progress, "checked the store and %lu entries of '%s'", c.entries, c.files);
	if (c.root_fd >= 0)
		close(c.root_fd);
	store_free(c.st);
	if (r < 0) {
		fprintf(stderr, "convfs: cannot check the store '%s': %s\n", path, strerror(-r));
		return 2;
	}
	if (c.problems) {
		fprintf(stderr, "convfs: %d problem%s in the store '%s'\n", c.problems, c.problems == 1 ? "" : "s", path);
		return 1;
	}
	return 0;
}
