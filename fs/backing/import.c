/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * import.c: taking in the folder underneath the mount.
 *
 * At every mount, before the mount hides it, the folder convfs is mounted over
 * is compared with what the store last saw of it (table `underneath`,
 * store/seen.c), and what was added or changed there since is taken in:
 * conversation files (docs, as store_path_kind() says) are committed as a
 * three-way merge whose base is the version taken in last time, so what was
 * written through the mount meanwhile stays; other files are copied into the
 * backing tree, or, where the store's copy changed too, kept beside it under
 * a new name. The first mount is the case where nothing was seen before.
 * What is missing underneath removes nothing from the store; it is reported.
 * The folder itself is never modified.
 *
 * Workload: with nothing changed, one walk of the folder (readdir and
 * fstatat, no file opened) against one sorted load of the table; only what
 * differs in type, size, mtime or inode number is read. A take-in is
 * idempotent and its commits and rows go in batches, so one cut short is
 * simply run again on the next mount. Files are read with read() into memory
 * of our own, never mapped: a writer underneath may truncate them meanwhile.
 *
 * A conversation file that does not parse (Cline's torn ui_messages.json) is
 * kept byte-for-byte as a raw doc, or beside the store's good version if it
 * has one, and reported; a new task folder that taskHistory.json does not
 * list is kept and reported. docs/ARCHITECTURE.md has the rules.
 *
 * Export (export.c) is the way back out; tree.c walks and copies for both.
 * At most mounts nothing changed, which the quick check (quick.c) proves
 * first, on many threads, while the mount answers (take_in.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "fs/cmd/progress.h"
#include "fs/backing/import_internal.h"
#include "fs/backing/quick.h"
#include "fs/backing/tree.h"
#include "store/store_changes.h"
#include "store/json.h"
#include "store/store_seen.h"
#include "store/util.h"

#define IMPORT_BATCH 256 /* docs per transaction */

/* What a take-in records of an entry underneath: its row in the store. */
static struct store_seen seen_of(const char *rel, const struct stat *st, int64_t rev)
{
	return (struct store_seen){ .path = (char *)rel, .type = st->st_mode & S_IFMT, .size = st->st_size,
				    .mtime_ns = mtime_of(st), .ino = st->st_ino, .rev = rev };
}

#define IMPORT_BATCH_ROWS 8192 /* rows of `underneath` per transaction */

/* Every write of a take-in goes into a batch, begun at the first one. */
static int batch_need(struct import_ctx *c)
{
	int r;

	if (c->in_batch)
		return 0;
	r = store_batch_begin(c->fs->store);
	if (r == 0)
		c->in_batch = true;
	return r;
}

static int batch_end(struct import_ctx *c)
{
	if (!c->in_batch)
		return 0;
	c->in_batch = false;
	c->batch_docs = c->batch_rows = 0;
	return store_batch_end(c->fs->store);
}

/*
 * Ends the batch once it holds enough, so that a take-in cut short keeps
 * most of its work; and, while other daemons serve the store or a writer
 * of one waits, once it has run for STORE_BATCH_NS: their saves wait for
 * it (SQLite's write lock, at most 5 s before they fail), and go first
 * once it ends (store_turns()).
 */
static int batch_tick(struct import_ctx *c, bool doc)
{
	if ((doc ? ++c->batch_docs < IMPORT_BATCH : ++c->batch_rows < IMPORT_BATCH_ROWS) &&
	    !store_batch_due(c->fs->store))
		return 0;
	return batch_end(c);
}

/* Records what was seen of rel (st; rev for a doc) as the store's row for it. */
static int record(struct import_ctx *c, const char *rel, const struct stat *st, int64_t rev)
{
	struct store_seen e = seen_of(rel, st, rev);
	int r;

	if ((r = batch_need(c)) < 0 || (r = store_seen_put(c->fs->store, &e)) < 0)
		return r;
	return batch_tick(c, false);
}

static int count_entry(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	(*(unsigned long *)ctx)++;
	return 0;
}

/* On a terminal, once the take-in has run for half a second, one line of progress (progress.c). */
static void progress(struct import_ctx *c, bool last)
{
	void (*show)(struct progress *, const char *, ...) = last ? progress_end : progress_show;

	if (c->total)
		show(&c->progress, "taking in %lu/%lu entries, %.1f MB", c->rep.files, c->total,
		     (double)c->rep.bytes / 1e6);
	else
		show(&c->progress, "looking for changes underneath: %lu entries, %.1f MB taken in", c->rep.files,
		     (double)c->rep.bytes / 1e6);
}

/* An entry of a store from before `underneath` that its first import took in, unchanged since. */
static bool legacy_taken(const struct import_ctx *c, const struct store_seen *row, const struct stat *st)
{
	return c->legacy && !row && mtime_of(st) <= c->legacy_ns;
}

/* A read-only store takes nothing in: what it would take is counted (pending), and true. */
static bool only_counted(struct import_ctx *c)
{
	if (c->readonly)
		c->rep.pending++;
	return c->readonly;
}

/*
 * Opens the backing folder that holds rel (making it if the store has none:
 * the folder may have been removed through the mount, and something new
 * arrived in it underneath). Returns an fd or -errno.
 */
static int backing_parent(struct import_ctx *c, const char *rel, const char **ret_leaf)
{
	const char *slash = strrchr(rel, '/');
	int dfd = plain_open_parent(c->fs, rel, ret_leaf);

	if (dfd == -ENOENT && slash) {
		_cleanup_free_ char *dir = strndup(rel, (size_t)(slash - rel));
		int r;

		if (!dir)
			return -ENOMEM;
		if ((r = plain_mkdirs(c->fs, dir)) < 0)
			return r;
		dfd = plain_open_parent(c->fs, rel, ret_leaf);
	}
	return dfd;
}

/*
 * Makes leaf in dfd a copy of the regular file or symlink name in dirfd, with
 * its times; owner-only and the store owner's, whatever -o allow_other says
 * (tree.c): the folder underneath may hold what other users made. With
 * replace, an existing leaf is replaced atomically (a copy beside it renamed
 * over it); without, an existing leaf is -EEXIST.
 */
static int place_copy(struct import_ctx *c, int dirfd, const char *name, const struct stat *st, int dfd,
		      const char *leaf, bool replace)
{
	_cleanup_sb_ struct sb tmp = SB_INIT;
	const char *at = leaf;
	int r = 0, fd;

	if (replace) {
		if ((r = sb_addf(&tmp, ".%s.convfs-take-in", leaf)) < 0)
			return r;
		at = tmp.buf;
		if (unlinkat(dfd, at, 0) < 0 && errno != ENOENT)
			return -errno;
	}
	if (S_ISLNK(st->st_mode)) {
		r = copy_symlink(dirfd, name, dfd, at, st, &c->fs->owner);
		if (r == -EEXIST)
			return r; /* not ours to remove */
	} else {
		fd = openat(dfd, at, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		r = copy_file(dirfd, name, fd, st, &c->fs->owner);
		close(fd);
	}
	if (r == 0 && replace && renameat(dfd, at, dfd, leaf) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, at, 0);
	return r;
}

/* "<leaf>.offline-<mtime as YYYYmmddTHHMMSS>": where a version from underneath goes beside the store's. */
static int beside_name(const char *leaf, const struct stat *st, struct sb *ret)
{
	struct tm tm;
	char stamp[32];

	if (!gmtime_r(&st->st_mtim.tv_sec, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm) == 0)
		return -EINVAL;
	return sb_addf(ret, "%s.offline-%s", leaf, stamp);
}

/*
 * Keeps the version underneath beside the store's, as a plain file with a
 * new name. A name taken already holds this same version (the name is its
 * mtime): then there is nothing to do.
 */
static int keep_beside(struct import_ctx *c, int dirfd, const char *name, const char *rel, const struct stat *st,
		       int dfd, const char *leaf, const char *why)
{
	_cleanup_sb_ struct sb beside = SB_INIT;
	int r;

	if ((r = beside_name(leaf, st, &beside)) < 0)
		return r;
	r = place_copy(c, dirfd, name, st, dfd, beside.buf, false);
	if (r == -EEXIST)
		return 0;
	if (r < 0)
		return r;
	c->rep.beside++;
	log_warn("'%s' %s; the store's version is kept, the one underneath is beside it as '%.*s%s'", rel, why,
		 (int)(leaf - rel), rel, beside.buf);
	return 0;
}

/*
 * A plain file or symlink that is new or changed underneath. The backing
 * tree's copy is the store's version; the rules:
 *   - the store has none: copied in;
 *   - the store's equals it already (size and mtime): nothing to copy;
 *   - the store's is what was taken in last time (unchanged through the
 *     mount): replaced by the new version;
 *   - both changed: the store's stays, the version underneath goes beside it.
 */
static int take_plain(struct import_ctx *c, int dirfd, const char *name, const char *rel, const struct stat *st,
		      const struct store_seen *row)
{
	struct stat bst;
	const char *leaf;
	bool has, same_type;
	int dfd, r = 0;

	if (legacy_taken(c, row, st))
		return record(c, rel, st, 0);
	if (only_counted(c))
		return 0;
	dfd = backing_parent(c, rel, &leaf);
	if (dfd < 0)
		return dfd;
	has = fstatat(dfd, leaf, &bst, AT_SYMLINK_NOFOLLOW) == 0;
	if (!has && errno != ENOENT) {
		r = -errno;
		goto out;
	}
	same_type = has && (bst.st_mode & S_IFMT) == (st->st_mode & S_IFMT);
	if (!has) {
		r = place_copy(c, dirfd, name, st, dfd, leaf, false);
		c->rep.plain++;
		c->rep.bytes += (unsigned long long)st->st_size;
	} else if (same_type && bst.st_size == st->st_size && mtime_of(&bst) == mtime_of(st)) {
		r = 0; /* taken in already (a take-in cut short before it recorded it) */
	} else if (same_type && row && bst.st_size == row->size && mtime_of(&bst) == row->mtime_ns) {
		r = place_copy(c, dirfd, name, st, dfd, leaf, true);
		c->rep.plain++;
		c->rep.bytes += (unsigned long long)st->st_size;
	} else {
		r = keep_beside(c, dirfd, name, rel, st, dfd, leaf,
				row ? "changed underneath and in the store" : "is new underneath and differs from the store's");
	}
out:
	close(dfd);
	if (r == 0)
		r = record(c, rel, st, 0);
	return r;
}

/*
 * A doc that is new or changed underneath: committed as a three-way merge
 * whose base is the version taken in last time (none for a new file), so what
 * the store gained since stays and what was written underneath is added.
 */
static int take_doc(struct import_ctx *c, int dirfd, const char *name, const char *rel, const struct stat *st,
		    const struct store_seen *row)
{
	static const struct store_who who = { 0, "convfs-import" };
	struct store *store = c->fs->store;
	_cleanup_close_ int fd = -1;
	struct commit_bytes data = { .mem = SB_INIT, .fd = -1 };
	struct store_commit commit = { .path = rel, .who = &who, .kind = "import", .merge = true };
	struct store_base *base = NULL;
	struct store_stat before, after;
	struct stat fst;
	int64_t base_rev = row ? row->rev : 0, rev;
	bool merged = false, exact, had;
	size_t len = 0;
	int r;

	if (c->legacy && !row) {
		const struct store_seen *imp = store_seen_find(&c->imports, rel);

		base_rev = imp ? imp->rev : 0;
		if (mtime_of(st) <= c->legacy_ns && imp)
			return record(c, rel, st, base_rev);
	}
	if (only_counted(c))
		return 0;
	fd = open_regular(dirfd, name, &fst);
	if (fd < 0)
		return fd;
	/* As a writer's save: a large file is copied, not held (commit.c). */
	r = commit_take(c->fs, fd, TAKE_COPY, rel, &data);
	if (r == -EFBIG || r == -EINVAL) {
		/* Said by commit_size_check(): no conversation, and too much to keep as it is. */
		c->rep.damaged++;
		return record(c, rel, &fst, base_rev);
	}
	if (r < 0)
		return r;
	len = data.len;
	commit.data = data.fd < 0 ? sb_str(&data.mem) : NULL;
	commit.fd = data.fd;
	commit.len = len;
	c->rep.bytes += len;
	rev = base_rev; /* unless the store ends up holding exactly this file */
	if ((r = batch_need(c)) < 0)
		goto out;
	had = store_doc_stat(store, rel, &before) == 0;
	if (base_rev > 0 && (r = store_base_at(store, rel, base_rev, &base)) < 0 && r != -ENOENT)
		goto out;
	commit.base = base;
	r = store_commit(store, &commit, NULL, &merged);
	commit.base = NULL;
	store_base_free(base);
	exact = r == 0 && !merged;
	if (r == -EINVAL && had) {
		/* A torn file must not replace a good version: it goes beside it. */
		const char *leaf;
		int dfd = backing_parent(c, rel, &leaf);

		if (dfd < 0) {
			r = dfd;
			goto out;
		}
		r = keep_beside(c, dirfd, name, rel, &fst, dfd, leaf, "changed underneath but does not parse");
		close(dfd);
		c->rep.damaged++;
	} else if (r == -EINVAL) {
		commit.raw = true;
		commit.kind = "import-damaged";
		r = store_commit(store, &commit, NULL, NULL);
		if (r == 0) {
			c->rep.damaged++;
			exact = true;
			log_warn("'%s' does not parse; kept byte-for-byte as it is", rel);
		}
	}
	if (r == 0 && (r = store_doc_stat(store, rel, &after)) == 0) {
		if (!had || after.rev != before.rev)
			row ? c->rep.changed++ : c->rep.docs++;
		if (merged)
			c->rep.merged++;
		/* The store holds exactly this file: the base of the next merge, and its mtime. */
		if (exact) {
			rev = after.rev;
			if (!had || after.rev != before.rev)
				r = store_doc_set_mtime(store, rel, mtime_of(&fst));
		}
	}
	if (r == 0)
		r = record(c, rel, &fst, rev);
	if (r == 0)
		r = batch_tick(c, true);
out:
	commit_bytes_release(&data);
	return r;
}

/* A folder new underneath: made in the backing tree, unless the store removed it since. */
static int take_dir(struct import_ctx *c, const char *rel, const struct stat *st, const struct store_seen *row)
{
	const char *leaf;
	int dfd, r = 0;

	if (legacy_taken(c, row, st))
		return record(c, rel, st, 0);
	if (only_counted(c))
		return 0;
	if (store_path_kind(rel) == STORE_PATH_DOC_DIR && !row) {
		/* A folder of conversations (tasks/<id>, sessions/<id>); not a top-level one (state). */
		if (strchr(rel, '/'))
			c->rep.folders++;
		/* Cline's rule: a task folder must be listed in taskHistory.json (report_orphans). */
		if (strncmp(rel, "tasks/", 6) == 0) {
			if (ARRAY_GROW(c->task_dirs, c->ntask_dirs, c->task_dirs_alloc, 256) < 0 ||
			    !(c->task_dirs[c->ntask_dirs] = strdup(rel + 6)))
				return -ENOMEM;
			c->ntask_dirs++;
		}
	}
	dfd = backing_parent(c, rel, &leaf);
	if (dfd < 0)
		return dfd;
	r = tree_mkdir(&c->fs->owner, dfd, leaf);
	close(dfd);
	if (r == 0)
		r = record(c, rel, st, 0);
	return r;
}

static int take_entry(void *ctx, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	struct import_ctx *c = ctx;
	enum store_path_kind kind = store_path_kind(rel);
	struct store_seen *row = store_seen_find(&c->seen, rel);
	int r;

	c->rep.files++;
	progress(c, false);
	if (row)
		c->visited[row - c->seen.v] = true;
	if (S_ISDIR(st->st_mode)) {
		/* A folder's own attributes say nothing the walk into it does not. */
		if (row && !row->gone && row->type == S_IFDIR)
			return 0;
		r = take_dir(c, rel, st, row);
	} else if (row && seen_same(row, st)) {
		return 0;
	} else if (S_ISREG(st->st_mode) && (kind == STORE_PATH_ARRAY || kind == STORE_PATH_WHOLE)) {
		r = take_doc(c, dirfd, name, rel, st, row);
	} else if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) {
		r = take_plain(c, dirfd, name, rel, st, row);
	} else {
		log_warn("'%s' is not a file, directory or symlink; not taken in", rel);
		r = c->readonly ? 0 : record(c, rel, st, 0);
	}
	if (r == -ENOENT) {
		/* Gone while the walk looked at it: the next take-in sees what became of it. */
		log_debug("'%s' went away underneath while it was taken in", rel);
		return 0;
	}
	if (r < 0)
		log_err("cannot take in '%s': %s", rel, strerror(-r));
	return r;
}

/* What the store saw underneath before and the walk did not find: reported, kept. */
static int mark_missing(struct import_ctx *c)
{
	int r;

	for (size_t i = 0; i < c->seen.n; i++) {
		const struct store_seen *e = &c->seen.v[i];

		if (c->visited[i] || e->gone)
			continue;
		if (e->type != S_IFDIR)
			c->rep.missing++;
		if (c->readonly)
			continue;
		if ((r = batch_need(c)) < 0 || (r = store_seen_mark_gone(c->fs->store, e->path)) < 0 ||
		    (r = batch_tick(c, false)) < 0)
			return r;
	}
	return 0;
}

/* The ids of the history's items, gathered by a scan that builds no tree. */
struct hist_ids {
	const char *text;
	char **v;
	size_t n, alloc;
};

static int hist_id(void *ctx, size_t pre, size_t start, size_t end)
{
	struct hist_ids *h = ctx;
	char *id;

	(void)pre;
	id = json_member_string(h->text + start, end - start, "id");
	if (!id)
		return 0; /* not an object, no string id: it lists no folder */
	if (ARRAY_GROW(h->v, h->n, h->alloc, 256) < 0) {
		free(id);
		return -ENOMEM;
	}
	h->v[h->n++] = id;
	return 0;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Reports new task folders with content that state/taskHistory.json underneath
 * does not list. The history's ids are sorted once and each folder looked up:
 * a walk of the items per folder cost 10,000 x 10,000 string compares at
 * 10,000 tasks, and a parsed tree of the file 100 MB at 50,000.
 */
static void report_orphans(struct import_ctx *c, int src_fd)
{
	_cleanup_free_ char *data = NULL;
	struct hist_ids ids = { 0 };
	struct stat st;
	size_t len = 0, head, tail;
	int hfd, r = -ENOENT;

	if (!c->ntask_dirs)
		return;
	hfd = openat(src_fd, "state", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hfd >= 0) {
		if (read_file(hfd, "taskHistory.json", &data, &len, &st) == 0) {
			ids.text = data;
			r = json_scan_array(data, len, hist_id, &ids, &head, &tail, &(struct json_error){ 0 });
		}
		close(hfd);
	}
	if (r == -ENOMEM) {
		log_warn("out of memory while reading state/taskHistory.json; task folders it does not list are not reported");
	} else if (r < 0) {
		log_warn("state/taskHistory.json is missing or does not parse; %zu task folders are kept but not listed",
			 c->ntask_dirs);
		c->rep.orphans = c->ntask_dirs;
	} else {
		qsort(ids.v, ids.n, sizeof(*ids.v), cmp_strp);
		for (size_t i = 0; i < c->ntask_dirs; i++) {
			if (bsearch(&c->task_dirs[i], ids.v, ids.n, sizeof(*ids.v), cmp_strp))
				continue;
			c->rep.orphans++;
			log_warn("task folder 'tasks/%s' is not listed in state/taskHistory.json; kept as it is",
				 c->task_dirs[i]);
		}
	}
	for (size_t i = 0; i < ids.n; i++)
		free(ids.v[i]);
	free(ids.v);
}

static void report(const struct import_ctx *c)
{
	const struct import_report *p = &c->rep;

	if (c->readonly) {
		if (p->pending || p->missing)
			log_warn("the store is read-only: %lu entries new or changed in the folder underneath '%s' are "
				 "not taken in; %lu files missing underneath are kept in the store",
				 p->pending, c->src_name, p->missing);
		return;
	}
	if (!p->docs && !p->changed && !p->plain && !p->beside && !p->damaged && !p->missing && !p->folders) {
		log_debug("nothing changed in the folder underneath '%s' (%lu entries, %.1f ms)", c->src_name, p->files,
			  (double)(now_ns() - c->start_ns) / 1e6);
		return;
	}
	log_info("took in from the folder underneath '%s': %lu new conversation folders, %lu new conversation "
		 "files, %lu changed (%lu merged), %lu plain files copied in, %lu kept beside the store's as "
		 "*.offline-*, %.1f MB; "
		 "%lu damaged, %lu unlisted tasks; %lu files missing underneath kept in the store",
		 c->src_name, p->folders, p->docs, p->changed, p->merged, p->plain, p->beside,
		 (double)p->bytes / 1e6, p->damaged, p->orphans, p->missing);
}

/*
 * Makes the folder open at src_fd (mounted over at src_name) the one whose
 * rows the store's take-in calls use; *ret_taken says whether it was taken
 * in before.
 */
int import_folder_use(struct fs *fs, int src_fd, const char *src_name, bool *ret_taken)
{
	struct stat st;
	int64_t born;
	int r;

	if (fstat(src_fd, &st) < 0) {
		log_err("cannot read the folder underneath '%s': %s", src_name, strerror(errno));
		return -errno;
	}
	r = fd_born_ns(src_fd, &born);
	if (r < 0) {
		log_err("cannot read the birth time of the folder underneath '%s': %s", src_name, strerror(-r));
		return r;
	}
	return store_seen_folder(fs->store, src_name, (uint64_t)st.st_dev, (uint64_t)st.st_ino, born, ret_taken);
}

int fs_took_in_before(struct fs *fs, int src_fd, const char *src_name)
{
	bool taken = false;
	int r = import_folder_use(fs, src_fd, src_name, &taken);

	return r < 0 ? r : taken;
}

/* Loads what the store last saw underneath (and, for a store from before that, what its import took in). */
int import_load(struct import_ctx *c, struct store *st)
{
	int r;

	if (c->loaded)
		return 0;
	/* What a load that failed half way left. */
	store_seen_set_release(&c->seen);
	free(c->visited);
	c->visited = NULL;
	r = store_seen_load(st, &c->seen);
	if (r < 0)
		return r;
	c->visited = calloc(c->seen.n ? c->seen.n : 1, sizeof(*c->visited));
	if (!c->visited)
		return -ENOMEM;
	r = store_seen_legacy(st, &c->legacy_ns);
	if (r == 0) {
		c->legacy = true;
		store_seen_set_release(&c->imports);
		r = store_seen_load_imports(st, &c->imports);
	}
	if (r == -ENOENT)
		r = 0;
	c->loaded = r == 0;
	return r;
}

/*
 * Whether the quick check may prove the take-in has nothing to do: a folder
 * taken in before, by a store that records what it saw.
 */
bool import_quick_may(struct import_ctx *c)
{
	int64_t ns;

	return c->taken && store_seen_legacy(c->fs->store, &ns) == -ENOENT;
}

/* The take-in proper: a walk of all of src_fd, doing what each difference needs. */
int import_walk(struct import_ctx *c, int src_fd)
{
	_cleanup_free_ char *imported = NULL;
	int r = 0, r2;

	/* The first take-in of a folder counts it first, for the progress line. */
	if (c->progress.on && !c->seen.n && (r = walk(src_fd, "", count_entry, &c->total)) < 0)
		return r;
	r = walk(src_fd, "", take_entry, c);
	progress(c, true);
	if (r == 0)
		r = mark_missing(c);
	if (r == 0 && c->ntask_dirs)
		report_orphans(c, src_fd);
	if (r == 0 && !c->readonly && store_meta_get(c->fs->store, "imported_from", &imported) == -ENOENT &&
	    (r = batch_need(c)) == 0)
		r = store_meta_set(c->fs->store, "imported_from", c->src_name);
	if (r == 0 && c->legacy && !c->readonly && (r = batch_need(c)) == 0)
		r = store_seen_legacy_done(c->fs->store);
	if (r == 0 && !c->readonly && (r = batch_need(c)) == 0)
		r = store_seen_folder_taken(c->fs->store);
	r2 = batch_end(c);
	return r < 0 ? r : r2;
}

/* Frees what c holds; says what failed (r), or what was taken in. */
int import_done(struct import_ctx *c, int r)
{
	for (size_t i = 0; i < c->ntask_dirs; i++)
		free(c->task_dirs[i]);
	free(c->task_dirs);
	c->task_dirs = NULL;
	c->ntask_dirs = 0;
	free(c->visited);
	c->visited = NULL;
	store_seen_set_release(&c->seen);
	store_seen_set_release(&c->imports);
	if (r < 0) {
		log_err("cannot take in '%s': %s; run convfs again to retry, the folder is untouched", c->src_name,
			strerror(-r));
		return r;
	}
	report(c);
	return 0;
}
