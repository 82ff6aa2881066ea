/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * compat.c: the kinds of path of the compat tree, one row each (kinds.h),
 * and what only they do: the root, plain files and folders of the backing
 * tree, a plain file in a folder of docs, the folders of conversations
 * (tasks/, sessions/), a folder of docs (state/), a conversation's folder
 * (tasks/<id>/, sessions/<id>/), and the docs, kept one element a row or
 * whole.
 *
 * A folder of the compat tree lives in the backing tree, its docs in the
 * store: a folder of docs lists both, refuses rmdir while it holds a doc,
 * and is made again when something removed it behind the daemon's back
 * (heal_all(), heal_docs()); rmdir of a conversation's folder moves its
 * task to the trash. A plain file's calls go to its backing file, through
 * plain.c (never following a link, never leaving the tree); a doc's go to
 * the store. Where a member is NULL, kinds.h says what it means.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/ops/ops_internal.h"
#include "store/util.h"

/* The table of rows: a kind of COMPAT_KINDS without its row is an undefined reference here. */
const struct path_ops *const path_rows[PATH_KIND_COUNT] = {
#define PATH_ROW_ENTRY(kind, row) [kind] = &row,
	COMPAT_KINDS(PATH_ROW_ENTRY)
#undef PATH_ROW_ENTRY
};

/* ---- attributes --------------------------------------------------------------------- */

/* fstatat() of rel in the backing tree, never following a link. */
static int backing_stat(struct fs *fs, const char *rel, struct stat *st)
{
	const char *leaf;
	int dfd = plain_open_parent(fs, rel, &leaf), r;

	if (dfd < 0)
		return dfd;
	r = fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

int path_plain_getattr(const struct route *rt, struct stat *st)
{
	struct fs *fs = rt->fs;
	int r = backing_stat(fs, rt->rel, st);

	if (r == -ENOENT)
		backing_check(fs); /* the backing folder itself may be what went */
	return r;
}

static int root_getattr(const struct route *rt, struct stat *st)
{
	return plain_root_stat(rt->fs, st);
}

/* store_doc_list: counts docs. */
static int count_doc(void *ctx, const char *name, const struct store_stat *s)
{
	(*(int *)ctx)++;
	return 0;
}

/* What heal_doc() works with. */
struct heal {
	struct fs *fs;
	unsigned *made;
};

/* store_doc_foreach: makes the folders of one doc again. */
static int heal_doc(void *ctx, const char *path, const struct store_stat *stat)
{
	struct heal *h = ctx;
	const char *slash = strrchr(path, '/');
	int r;

	(void)stat;
	if (!slash)
		return 0;
	r = backing_mkdirs_made(h->fs, path, (size_t)(slash - path), h->made);
	if (r < 0)
		log_err("cannot make the folder of '%s' again in the backing tree: %s", path, strerror(-r));
	return 0;
}

/* Makes the folders of every doc again (backing_check() runs after its own repair too). */
int heal_all_docs(struct fs *fs, unsigned *made)
{
	return store_doc_foreach(fs->store, heal_doc, &(struct heal){ .fs = fs, .made = made });
}

/*
 * A folder of the compat tree (tasks/, tasks/<id>/, state/) lives in the
 * backing tree; its conversations live in the store. If the folder was
 * removed behind the daemon's back, its conversations would be out of reach:
 * make the folders of every doc again. Returns how many folders were missing
 * and made.
 *
 * Only those count: a lookup that found no folder may race the first save
 * of a conversation, or a commit pulled from another machine, which makes
 * the folder before it commits the doc. Then nothing was lost and nothing
 * is said.
 */
static int heal_all(struct fs *fs, const char *rel)
{
	unsigned made = 0;
	int r;

	backing_check(fs); /* the backing folder itself first */
	r = heal_all_docs(fs, &made);
	return r < 0 ? r : (int)made;
}

/* The same for a folder of docs, if it holds any (-ENOENT if not). */
static int heal_docs(struct fs *fs, const char *rel)
{
	int n = 0, r;

	backing_check(fs);
	r = store_doc_list(fs->store, rel, count_doc, &n);
	if (r < 0 || n == 0)
		return -ENOENT;
	return heal_all(fs, rel);
}

/* The attributes of a folder of the compat tree, made again (heal) if it went. */
static int folder_getattr(const struct route *rt, struct stat *st, int (*heal)(struct fs *fs, const char *rel))
{
	struct fs *fs = rt->fs;
	int r = backing_stat(fs, rt->rel, st), made;

	if (r == -ENOENT && (made = heal(fs, rt->rel)) >= 0) {
		r = backing_stat(fs, rt->rel, st);
		if (r == 0 && made > 0)
			log_warn("the folder '%s' was missing from the backing tree: made it again for its conversations",
				 rt->rel);
	}
	return r;
}

static int tasks_getattr(const struct route *rt, struct stat *st)
{
	return folder_getattr(rt, st, heal_all);
}

static int docs_getattr(const struct route *rt, struct stat *st)
{
	return folder_getattr(rt, st, heal_docs);
}

int path_doc_getattr(const struct route *rt, struct stat *st)
{
	return op_getattr_doc(rt, st, &(int64_t){ 0 });
}

/* chmod of leaf in dfd: fchmodat cannot refuse to follow a link; open the leaf itself. */
static int chmod_leaf(int dfd, const char *leaf, mode_t mode)
{
	int fd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC), r;
	char proc[64];
	struct stat st;

	r = fd < 0 ? -errno : 0;
	if (!r && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode))
		r = -EOPNOTSUPP;
	if (!r) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		r = chmod(proc, mode) < 0 ? -errno : 0;
	}
	if (fd >= 0)
		close(fd);
	return r;
}

/*
 * chmod, chown or utimens of the plain file at rt, by name in its parent
 * folder and never through a link; "" is the mount's root.
 */
int path_plain_setattr(const struct route *rt, const struct attr_change *c)
{
	struct fs *fs = rt->fs;
	const char *path = rt->rel, *leaf;
	int dfd, r;

	if (!*path && c->what == ATTR_MODE)
		return plain_root_chmod(fs, c->mode); /* never the backing root's: it stays 0700 */
	if (!*path && c->what == ATTR_TIMES)
		return utimensat(AT_FDCWD, fs->backing_path, c->tv, 0) < 0 ? -errno : 0;
	dfd = plain_open_parent(fs, path, &leaf);
	if (dfd < 0)
		return dfd;
	switch (c->what) {
	case ATTR_MODE:
		r = chmod_leaf(dfd, leaf, c->mode);
		break;
	case ATTR_OWNER:
		r = fchownat(dfd, *path ? leaf : "", c->uid, c->gid,
			     AT_SYMLINK_NOFOLLOW | (*path ? 0 : AT_EMPTY_PATH)) < 0 ? -errno : 0;
		break;
	default:
		r = utimensat(dfd, leaf, c->tv, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	}
	close(dfd);
	return r;
}

int path_plain_truncate(const struct route *rt, off_t size)
{
	struct fs *fs = rt->fs;
	int fd = plain_open_regular(fs, rt->rel, O_WRONLY, 0, NULL), res;

	if (fd < 0)
		return plain_fail("truncate", rt->rel, -fd);
	res = ftruncate(fd, size) < 0 ? plain_fail("truncate", rt->rel, errno) : 0;
	close(fd);
	return res;
}

int path_doc_truncate_at(struct fs *fs, const char *doc, off_t size)
{
	struct fs_file *t;
	int res;

	/* truncate(2) by path: one commit of the truncated content. */
	if ((size_t)size > COMMIT_MAX)
		return -EFBIG;
	t = file_new(fs, FILE_DOC, -1, doc);
	if (!t)
		return -ENOMEM;
	res = store_snap_open(fs->store, doc, &t->snap);
	if (res == 0)
		res = stage_begin(fs, t, size == 0);
	if (res == 0)
		res = ftruncate(t->fd, size) < 0 ? -errno : 0;
	if (res == 0)
		res = stage_commit(fs, t, "truncate");
	file_free(t);
	if (res == 0)
		fs_invalidate(fs, doc);
	return res;
}

static int doc_truncate(const struct route *rt, off_t size)
{
	return path_doc_truncate_at(rt->fs, rt->rel, size);
}

/* ---- folders ------------------------------------------------------------------------ */

struct doc_list_ctx {
	op_list_fn fn;
	void *ctx;
};

static int list_doc(void *ctx, const char *name, const struct store_stat *s)
{
	struct doc_list_ctx *c = ctx;

	return c->fn(c->ctx, name, S_IFREG, s->ino);
}

/* The root's entries this mount keeps in its own folder (plain_per_mount()), listed with the root's. */
static int list_per_mount(struct fs *fs, op_list_fn fn, void *ctx)
{
	struct dirent *de;
	int fd, res = 0;
	DIR *d;

	if (!fs->per_mount)
		return 0;
	fd = plain_open(fs, fs->per_mount, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	d = fdopendir(fd);
	if (!d) {
		res = -errno;
		close(fd);
		return res;
	}
	while (res == 0 && (errno = 0, de = readdir(d)))
		if (store_path_per_mount(de->d_name))
			res = fn(ctx, de->d_name, (mode_t)DTTOIF(de->d_type), de->d_ino);
	if (res == 0 && errno)
		res = -errno;
	closedir(d);
	return res;
}

/*
 * The entries of the backing folder rel: all of them, or for the root all
 * but convfs's own (.convfs-*) and what this mount keeps in its own folder.
 * heal (NULL: none) makes the folder again if it went, and returns how many
 * folders it made (a warning if any) or -ENOENT. -ENOENT if there is no such
 * folder.
 */
int path_list_backing(struct fs *fs, const char *rel, int (*heal)(struct fs *fs, const char *rel), op_list_fn fn,
		      void *ctx)
{
	struct dirent *de;
	int fd, res = 0, made;
	DIR *d;

	fd = plain_open(fs, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOENT && heal && (made = heal(fs, rel)) >= 0) {
		/* The kernel holds the folder's entry: listing it heals it, as a lookup does (folder_getattr()). */
		fd = plain_open(fs, rel, O_RDONLY | O_DIRECTORY, 0);
		if (fd >= 0 && made > 0)
			log_warn("the folder '%s' was missing from the backing tree: made it again for its conversations", rel);
	}
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		res = -errno;
		close(fd);
		return res;
	}
	while (res == 0 && (errno = 0, de = readdir(d))) {
		if (!*rel && strncmp(de->d_name, ".convfs-", 8) == 0)
			continue; /* convfs's own (the trash's folders, each mount's own) */
		if (!*rel && fs->per_mount && store_path_per_mount(de->d_name))
			continue; /* this mount has its own (list_per_mount()) */
		res = fn(ctx, de->d_name, (mode_t)DTTOIF(de->d_type), de->d_ino);
	}
	if (res == 0 && errno)
		res = -errno;
	closedir(d);
	return res;
}

/* What heal does where nothing is made again: the backing folder itself is looked at. */
static int heal_nothing(struct fs *fs, const char *rel)
{
	backing_check(fs);
	return -ENOENT;
}

int path_plain_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	return path_list_backing(rt->fs, rt->rel, heal_nothing, fn, ctx);
}

static int root_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct fs *fs = rt->fs;
	int res = path_list_backing(rt->fs, "", heal_nothing, fn, ctx);

	if (res == 0)
		res = list_per_mount(fs, fn, ctx);
	if (res == 0) {
		/* The view's workspaces/, when the client has none of its own. */
		const char *leaf;
		struct stat st;
		int dfd = plain_open_parent(fs, "workspaces", &leaf);

		if (dfd >= 0 && fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
			res = fn(ctx, "workspaces", S_IFDIR, 0);
		if (dfd >= 0)
			close(dfd);
	}
	return res;
}

static int tasks_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	return path_list_backing(rt->fs, rt->rel, heal_all, fn, ctx);
}

/* A folder of docs lists its backing folder's entries, then its docs. */
static int docs_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	struct doc_list_ctx c = { fn, ctx };
	int res = path_list_backing(rt->fs, rt->rel, heal_docs, fn, ctx);

	return res < 0 ? res : store_doc_list(rt->fs->store, rt->rel, list_doc, &c);
}

int path_plain_mkdir(const struct route *rt, mode_t mode)
{
	return plain_make(rt->fs, rt, S_IFDIR | (mode & 07777), NULL);
}

int path_plain_rmdir(const struct route *rt)
{
	struct fs *fs = rt->fs;
	const char *leaf;
	int dfd = plain_open_parent(fs, rt->rel, &leaf), res;

	if (dfd < 0)
		return dfd;
	res = unlinkat(dfd, leaf, AT_REMOVEDIR) < 0 ? plain_fail("remove directory", rt->rel, errno) : 0;
	close(dfd);
	return res;
}

/* rmdir of a folder of docs: only once its docs are gone (each by its unlink). */
static int docs_rmdir(const struct route *rt)
{
	int n = 0, res = store_doc_list(rt->fs->store, rt->rel, count_doc, &n);

	if (res < 0)
		return res;
	return n > 0 ? -ENOTEMPTY : path_plain_rmdir(rt);
}

/* rm -r tasks/<id> (sessions/<id>): its docs are gone one by one; the task goes to the trash. */
static int conversation_rmdir(const struct route *rt)
{
	int res = docs_rmdir(rt), t;

	if (res < 0)
		return res;
	t = task_trash(rt->fs, strchr(rt->rel, '/') + 1); /* rel is <tasks or sessions>/<id> */
	if (t < 0 && t != -ENOENT)
		log_warn("removed '%s' but cannot put the task in the trash: %s", rt->rel, strerror(-t));
	return 0;
}

/* ---- names that hold conversations ------------------------------------------------- */

/* tasks, sessions, state, their conversation folders and docs are never links. */
static int refuse_symlink(const struct route *rt, const char *target)
{
	log_warn("refusing to create the symlink '%s': that name holds conversations", rt->rel);
	return -EPERM;
}

static int refuse_mknod(const struct route *rt, mode_t mode)
{
	return -EPERM;
}

/* ---- the rows ------------------------------------------------------------------------ */

#define PLAIN_MEMBERS                                                                                   \
	.open = path_plain_open, .readlink = path_plain_readlink, .setattr = path_plain_setattr,        \
	.truncate = path_plain_truncate, .create = path_plain_create, .mkdir = path_plain_mkdir,        \
	.unlink = path_plain_unlink, .cls = PATH_CLASS_PLAIN, .backing = true

const struct path_ops path_root = {
	.name = "root",
	.getattr = root_getattr,
	.list = root_list,
	.rmdir = path_plain_rmdir,
	PLAIN_MEMBERS,
	.cache = { .entry = KEEP_LONG, .attr = KEEP_BRIEF, .handle = true, .pages = PAGES_KEEP },
};

const struct path_ops path_plain = {
	.name = "plain",
	.getattr = path_plain_getattr,
	.list = path_plain_list,
	.rmdir = path_plain_rmdir,
	PLAIN_MEMBERS,
	.cache = { .entry = KEEP_LONG, .attr = KEEP_LONG, .handle = true, .pages = PAGES_KEEP },
};

/*
 * Its entry is kept briefly: it is most often a temp file about to be
 * renamed over a doc, and a rename keeps the entry's time; kept long on a
 * kernel without epochs, the doc's name would stay on the temp file's
 * node, which is read with direct I/O, for as long. (With epochs, the
 * commit of the rename begins a new one, which ends that entry anyway.)
 */
const struct path_ops path_beside_docs = {
	.name = "beside-docs",
	.getattr = path_plain_getattr,
	.list = path_plain_list,
	.rmdir = path_plain_rmdir,
	PLAIN_MEMBERS,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_LONG, .handle = true, .pages = PAGES_KEEP },
};

#define FOLDER_MEMBERS                                                                                  \
	.open = path_plain_open, .readlink = path_plain_readlink, .setattr = path_plain_setattr,        \
	.truncate = path_plain_truncate, .create = path_plain_create, .mkdir = path_plain_mkdir,        \
	.symlink = refuse_symlink, .unlink = path_plain_unlink, .cls = PATH_CLASS_DOC_FOLDER,           \
	.backing = true, .cache = { .entry = KEEP_LONG, .attr = KEEP_LONG, .handle = true, .pages = PAGES_KEEP }

const struct path_ops path_tasks = {
	.name = "tasks",
	.getattr = tasks_getattr,
	.list = tasks_list,
	.rmdir = path_plain_rmdir,
	FOLDER_MEMBERS,
};

const struct path_ops path_doc_folder = {
	.name = "doc-folder",
	.getattr = docs_getattr,
	.list = docs_list,
	.rmdir = docs_rmdir,
	FOLDER_MEMBERS,
};

const struct path_ops path_conversation = {
	.name = "conversation",
	.getattr = docs_getattr,
	.list = docs_list,
	.rmdir = conversation_rmdir,
	FOLDER_MEMBERS,
};

/*
 * A doc's lookups give version nodes (lowlevel.c, kcache_doc_entry()): its
 * entry here is a created doc's, its attributes those of an ordinary doc
 * node, which change under merges.
 */
#define DOC_MEMBERS                                                                                     \
	.getattr = path_doc_getattr, .open = path_doc_open, .truncate = doc_truncate,                    \
	.setxattr = path_restore_setxattr, .create = path_doc_create, .mknod = refuse_mknod,            \
	.symlink = refuse_symlink, .unlink = path_doc_unlink, .rmdir = path_plain_rmdir,                \
	.cls = PATH_CLASS_DOC, .versioned = true,                                                        \
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .handle = true, .pages = PAGES_OPEN }

const struct path_ops path_doc_array = {
	.name = "doc-array",
	DOC_MEMBERS,
};

const struct path_ops path_doc_whole = {
	.name = "doc-whole",
	DOC_MEMBERS,
};
