/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_task.c: a task's folder in the view and its files, one row each:
 * workspaces/<ws>/tasks/<id>/ (VIEW_TASK), a task id with no task there
 * (VIEW_TASK_SLOT: mkdir makes one, mv from the trash brings one back),
 * workspaces/.trash/<id>/ (VIEW_TRASH_TASK), and the files they show.
 *
 * The files of a task's folder, and the compat file behind each: for a
 * Cline task in tasks/<id>/, for a CLI 3.x session in sessions/<id>/ after
 * the session's id (struct view_doc_file, the arg of each file's shape). A
 * session has no ui stream and no metadata; its task.json is its manifest.
 * Its subagents' conversations, sessions/<id>/<stem>.messages.json, show
 * beside them as <stem>.messages.jsonl. The trash shows a trashed task's
 * files read-only, as they were: a snapshot at the revision before the
 * removal (store_snap_open_removed()); it has no task.json (the history
 * item went with the task).
 *
 * The matches of the files take no store: view_doc_of() runs them for the
 * commands, with no mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fs/ops/route.h"
#include "fs/view/view.h"
#include "store/store_view.h"
#include "store/util.h"

const struct view_doc_file view_messages_file = {
	.doc = "api_conversation_history.json", .session_doc = ".messages.json", .lines = true, .require = "role",
};
const struct view_doc_file view_ui_file = { .doc = "ui_messages.json", .lines = true };
const struct view_doc_file view_metadata_file = { .doc = "task_metadata.json" };
static const struct view_doc_file task_json_file = { .session_doc = ".json" };

#define SUBAGENT_SUFFIX ".messages.jsonl"

/* ---- names -------------------------------------------------------------------------- */

/* A task of this workspace's tasks/, or a free slot for one. */
static int task_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	_cleanup_free_ char *key = NULL;
	bool trashed = false;
	int r;

	if (!store_is_conversation_id(at->name) || strlen(at->name) >= sizeof(vp->task))
		return -ENOENT;
	memcpy(vp->task, at->name, strlen(at->name) + 1);
	r = store_task_workspace(fs->store, at->name, &key, &trashed);
	if (r < 0 && r != -ENOENT)
		return r;
	/* A task that is not, or not here, or in the trash, is a free slot: mkdir, or mv back from the trash. */
	if (r == -ENOENT || trashed || (vp->unknown ? key != NULL : !key || strcmp(key, vp->key) != 0))
		vp->kind = VIEW_TASK_SLOT;
	return 0;
}

static int trash_task_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			    const struct view_step *at)
{
	_cleanup_free_ char *key = NULL;
	bool trashed = false;
	int r;

	if (!store_is_conversation_id(at->name) || strlen(at->name) >= sizeof(vp->task))
		return -ENOENT;
	r = store_task_workspace(fs->store, at->name, &key, &trashed);
	if (r < 0 || !trashed)
		return r < 0 ? r : -ENOENT;
	memcpy(vp->task, at->name, strlen(at->name) + 1);
	return 0;
}

/* A file of a task's folder: the doc behind it (sh->arg), and how it is shown. */
static int doc_file_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			  const struct view_step *at)
{
	const struct view_doc_file *f = sh->arg;

	if (view_doc_file_path(f, vp->task, vp->doc, sizeof(vp->doc)) < 0)
		return -ENOENT;
	vp->lines = f->lines;
	vp->require = f->require;
	return 0;
}

/* A subagent's conversation in a session's folder, <stem>.messages.jsonl: its doc. */
static int subagent_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			  const struct view_step *at)
{
	size_t len = strlen(at->name), sl = strlen(SUBAGENT_SUFFIX);

	if (!store_is_session_id(vp->task) || len <= sl || strcmp(at->name + len - sl, SUBAGENT_SUFFIX) != 0 ||
	    (size_t)snprintf(vp->doc, sizeof(vp->doc), "sessions/%s/%.*s.messages.json", vp->task, (int)(len - sl),
			     at->name) >= sizeof(vp->doc) ||
	    store_path_kind(vp->doc) != STORE_PATH_ARRAY)
		return -ENOENT;
	vp->lines = true;
	vp->require = view_messages_file.require;
	return 0;
}

/* ---- a task's folder ---------------------------------------------------------------- */

int64_t view_task_time(struct fs *fs, const char *task)
{
	struct store_stat ss;
	char doc[96];

	if ((view_doc_file_path(&view_ui_file, task, doc, sizeof(doc)) == 0 ||
	     view_doc_file_path(&view_messages_file, task, doc, sizeof(doc)) == 0) &&
	    store_doc_stat(fs->store, doc, &ss) == 0)
		return ss.mtime_ns;
	return 0;
}

static int task_getattr(const struct route *rt, struct stat *st)
{
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0700, view_task_time(rt->fs, rt->vp.task));
	return 0;
}

struct trashed_at {
	const char *id;
	int64_t ns;
};

/* store_task_list() of the trash: the time the task went there. */
static int trashed_at(void *ctx, const char *id, int64_t trashed_ns)
{
	struct trashed_at *t = ctx;

	if (strcmp(id, t->id) == 0)
		t->ns = trashed_ns;
	return 0;
}

static int trash_task_getattr(const struct route *rt, struct stat *st)
{
	struct trashed_at t = { rt->vp.task, 0 };
	int r = store_task_list(rt->fs->store, NULL, true, trashed_at, &t);

	if (r < 0 && r != -ENOENT)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0700, t.ns);
	return 0;
}

/*
 * The task's files that are there (a session's subagents/ among them). versions/
 * and checkpoints/ are not listed, only found by their names (as ZFS's
 * .zfs and NetApp's .snapshot): listed, every grep -r, find, du and rsync
 * of the view would read each conversation once a version and once a
 * checkpoint (and the workspace's files once a checkpoint), and rm -r of a
 * task would stop at its first read-only file.
 */
static int task_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : view_list_named(rt->fs, rt, fn, ctx);
}

static int trash_task_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : view_list_named(rt->fs, rt, fn, ctx);
}

/* rm -r of a task in the view (its files go with it: view_unlink_with_folder()): to the trash. */
static int task_rmdir(const struct route *rt)
{
	return task_trash(rt->fs, rt->vp.task);
}

/* mkdir workspaces/<ws>/tasks/<id>: a new task, with empty conversations. */
static int slot_mkdir(const struct route *rt, mode_t mode)
{
	return task_make(rt->fs, rt->vp.task, rt->vp.unknown ? NULL : rt->vp.key);
}

/* No file is made in a task that is not there. */
static int slot_create(const struct route *rt, mode_t mode, struct fuse_file_info *fi)
{
	return rt->err;
}

/* Under a free slot nothing of the view is: what is made there is the backing tree's to refuse. */
static int slot_made_in(const struct route *rt, const char *what)
{
	return 0;
}

/* mv workspaces/.trash/<id> back to a tasks/ folder (a free slot of its id, or its compat folder): it comes back. */
static int trash_task_rename_from(const struct route *rf, const struct route *rt, unsigned int flags)
{
	bool to_view = rt->ops->cls == PATH_CLASS_VIEW_TASK && rt->err == -ENOENT;
	char dir[96];
	bool to_compat = store_conversation_dir(rf->vp.task, dir, sizeof(dir)) == 0 && strcmp(rt->rel, dir) == 0;

	if ((!to_view && !to_compat) || (to_view && strcmp(rt->vp.task, rf->vp.task) != 0))
		return -EINVAL; /* a task comes back under its own id */
	return task_restore(rf->fs, rf->vp.task);
}

/* ---- a live task's files -------------------------------------------------------------- */

/* A conversation file: its doc as stored now, as JSON Lines or whole. */
static int doc_file_getattr(const struct route *rt, struct stat *st)
{
	struct store_stat ss;
	int r = store_doc_stat(rt->fs->store, rt->vp.doc, &ss);

	if (r < 0)
		return r;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, 0600, rt->vp.lines ? ss.lsize : ss.size, ss.mtime_ns);
	return 0;
}

static int metadata_truncate(const struct route *rt, off_t size)
{
	return path_doc_truncate_at(rt->fs, rt->vp.doc, size); /* a doc of the compat tree */
}

/* The whole current content of a small doc (a session's manifest); free() it. */
static int read_whole(struct fs *fs, const char *doc, char **ret, size_t *ret_len, int64_t *ret_mtime_ns)
{
	struct store_snap *snap;
	struct store_stat ss;
	char *buf;
	ssize_t got = 0;
	int64_t size;
	int r;

	r = store_snap_open(fs->store, doc, &snap);
	if (r < 0)
		return r;
	size = store_snap_size(snap);
	buf = malloc((size_t)size + 1);
	while (buf && got < size) {
		ssize_t k = store_snap_read(fs->store, snap, buf + got, (size_t)(size - got), got);

		if (k <= 0) {
			r = k < 0 ? (int)k : -EIO;
			break;
		}
		got += k;
	}
	store_snap_stat(snap, &ss);
	store_snap_free(snap);
	if (!buf)
		return -ENOMEM;
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[size] = '\0';
	*ret = buf;
	*ret_len = (size_t)size;
	*ret_mtime_ns = ss.mtime_ns;
	return 0;
}

/*
 * The last task's history item rendered (its task.json): a walk asks for it
 * at the file's lookup, its open and the reader's fstat(), and each render
 * finds the item among all of taskHistory.json's. Kept until the next
 * commit, as the last task's checkpoints are (view_ckpt.c).
 */
static struct {
	pthread_mutex_t lock;
	uint64_t gen;
	char task[72];
	char *json;
	size_t len;
	int64_t mtime_ns;
} last_item = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A copy of n bytes of p, NUL-terminated (free()), or NULL. */
static char *dup_n(const char *p, size_t n)
{
	char *q = malloc(n + 1);

	if (q) {
		memcpy(q, p, n);
		q[n] = '\0';
	}
	return q;
}

static int history_item(struct fs *fs, const char *task, char **ret, size_t *ret_len, int64_t *ret_mtime_ns)
{
	uint64_t gen = store_generation(fs->store);
	char *keep;
	bool hit;
	int r;

	pthread_mutex_lock(&last_item.lock);
	hit = last_item.json && last_item.gen == gen && strcmp(last_item.task, task) == 0;
	if (hit) {
		*ret = dup_n(last_item.json, last_item.len);
		*ret_len = last_item.len;
		*ret_mtime_ns = last_item.mtime_ns;
	}
	pthread_mutex_unlock(&last_item.lock);
	if (hit)
		return *ret ? 0 : -ENOMEM;
	r = store_history_item(fs->store, task, ret, ret_len, ret_mtime_ns);
	/* Kept under the generation taken before the query: a commit since makes it miss. */
	if (r == 0 && strlen(task) < sizeof(last_item.task) && (keep = dup_n(*ret, *ret_len))) {
		pthread_mutex_lock(&last_item.lock);
		free(last_item.json);
		last_item.json = keep;
		last_item.len = *ret_len;
		last_item.mtime_ns = *ret_mtime_ns;
		last_item.gen = gen;
		snprintf(last_item.task, sizeof(last_item.task), "%s", task);
		pthread_mutex_unlock(&last_item.lock);
	}
	return r;
}

/* task.json: a session's manifest, or a task's item of taskHistory.json. */
static int task_json_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns,
			    int64_t *ret_rev)
{
	if (*rt->vp.doc)
		return read_whole(rt->fs, rt->vp.doc, ret, ret_len, ret_mtime_ns);
	return history_item(rt->fs, rt->vp.task, ret, ret_len, ret_mtime_ns);
}

static int task_json_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, task_json_render, 0400);
}

static int task_json_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_text(rt, fi, task_json_render, false);
}

/* ---- a trashed task's files ----------------------------------------------------------------- */

/* Its last version, read-only: the snapshot's own rendering. */
static int trash_file_getattr(const struct route *rt, struct stat *st)
{
	struct store_snap *snap = NULL;
	struct store_stat ss;
	int r = store_snap_open_removed(rt->fs->store, rt->vp.doc, rt->vp.lines, &snap);

	if (r < 0)
		return r;
	store_snap_stat(snap, &ss);
	store_snap_free(snap);
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, 0400, ss.size, ss.mtime_ns);
	return 0;
}

static int trash_file_open(const struct route *rt, struct fuse_file_info *fi)
{
	struct store_snap *snap = NULL;
	int r;

	if (path_open_writes(fi))
		return -EROFS;
	r = store_snap_open_removed(rt->fs->store, rt->vp.doc, rt->vp.lines, &snap);
	return r < 0 ? r : path_open_fixed(rt, fi, snap);
}

/* ---- the rows ---------------------------------------------------------------------------------- */

#define TASK_FOLDER_CACHE { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .pages = PAGES_OPEN, .volatile_list = true }

static const struct view_shape task_shape = { .in = VIEW_TASKS, .match = task_match, .type = S_IFDIR };

const struct path_ops view_task = {
	.name = "view-task",
	.getattr = task_getattr,
	.list = task_list,
	.rmdir = task_rmdir,
	.cls = PATH_CLASS_VIEW_TASK,
	.whole_store = true,
	.cache = TASK_FOLDER_CACHE,
	.shape = &task_shape,
};

/* No shape: task_match() makes a task id with no task here this kind. */
const struct path_ops view_task_slot = {
	.name = "view-task-slot",
	.readlink = path_plain_readlink,
	.setattr = path_plain_setattr,
	.create = slot_create,
	.mkdir = slot_mkdir,
	.made_in = slot_made_in,
	.cls = PATH_CLASS_VIEW_TASK,
	.whole_store = true,
	.cache = { .entry = KEEP_NEVER, .attr = KEEP_NEVER, .pages = PAGES_OPEN },
};

static const struct view_shape trash_task_shape = { .in = VIEW_TRASH, .match = trash_task_match, .type = S_IFDIR };

const struct path_ops view_trash_task = {
	.name = "view-trash-task",
	.getattr = trash_task_getattr,
	.list = trash_task_list,
	.rename_from = trash_task_rename_from,
	.cls = PATH_CLASS_VIEW_TASK,
	.whole_store = true,
	.cache = TASK_FOLDER_CACHE,
	.shape = &trash_task_shape,
};

/*
 * A live conversation file: its attributes kept a second where every commit
 * of its doc tells the kernel (cache.told, view_invalidate_conversation());
 * answered through a handle with what that handle shows (a writer's staged
 * bytes): never kept then. Removing it does nothing: it goes with its
 * folder.
 */
#define LINES_MEMBERS                                                                                    \
	.getattr = doc_file_getattr, .open = path_open_lines, .setxattr = path_restore_view_setxattr,      \
	.create = path_create_doc_file, .unlink = view_unlink_with_folder, .cls = PATH_CLASS_VIEW,         \
	.whole_store = true

static const struct view_shape messages_shape = {
	.in = VIEW_TASK, .name = "messages.jsonl", .match = doc_file_match, .arg = &view_messages_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

const struct path_ops view_messages = {
	.name = "view-messages",
	LINES_MEMBERS,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NAMED, .pages = PAGES_DIRECT, .told = true },
	.shape = &messages_shape,
};

static const struct view_shape ui_shape = {
	.in = VIEW_TASK, .name = "ui_messages.jsonl", .match = doc_file_match, .arg = &view_ui_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

const struct path_ops view_ui = {
	.name = "view-ui-messages",
	LINES_MEMBERS,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NAMED, .pages = PAGES_DIRECT, .told = true },
	.shape = &ui_shape,
};

static const struct view_shape task_json_shape = {
	.in = VIEW_TASK, .name = "task.json", .match = doc_file_match, .arg = &task_json_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

/* Never kept: any save of taskHistory.json may change it, and no commit of its own tells. */
const struct path_ops view_task_json = {
	.name = "view-task-json",
	.getattr = task_json_getattr,
	.open = task_json_open,
	.unlink = view_unlink_with_folder,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_OPEN },
	.shape = &task_json_shape,
};

static const struct view_shape metadata_shape = {
	.in = VIEW_TASK, .name = "metadata.json", .match = doc_file_match, .arg = &view_metadata_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

/* task_metadata.json as it is: opened as the doc itself, truncated by path as the doc. */
const struct path_ops view_metadata = {
	.name = "view-metadata",
	.getattr = doc_file_getattr,
	.open = path_open_view_doc,
	.truncate = metadata_truncate,
	.setxattr = path_restore_view_setxattr,
	.create = path_create_doc_file,
	.unlink = view_unlink_with_folder,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NAMED, .pages = PAGES_OPEN, .told = true },
	.shape = &metadata_shape,
};

static const struct view_shape subagent_shape = {
	.in = VIEW_SUBAGENT_DIR, .name = "messages.jsonl", .match = view_subagent_messages_match, .listed = VIEW_LISTED,
	.type = S_IFREG,
};

/* A subagent's conversation (subagents/<agent>/, view_subagents.c); commits do not tell at its name. */
const struct path_ops view_subagent = {
	.name = "view-subagent",
	LINES_MEMBERS,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_DIRECT },
	.shape = &subagent_shape,
};

/*
 * A trashed task's file: the last version, read-only (but its removal,
 * which does nothing here either). A create where the trashed doc has no
 * version yet makes the doc as a live file's create does.
 */
#define TRASH_FILE_MEMBERS                                                                                 \
	.getattr = trash_file_getattr, .open = trash_file_open, .setattr = view_readonly_setattr,           \
	.truncate = view_readonly_truncate, .setxattr = view_readonly_setxattr,                              \
	.create = path_create_doc_file, .unlink = view_unlink_with_folder, .cls = PATH_CLASS_VIEW,           \
	.whole_store = true, .cache = { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_DIRECT }

static const struct view_shape trash_messages_shape = {
	.in = VIEW_TRASH_TASK, .name = "messages.jsonl", .match = doc_file_match, .arg = &view_messages_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

const struct path_ops view_trash_messages = {
	.name = "view-trash-messages",
	TRASH_FILE_MEMBERS,
	.shape = &trash_messages_shape,
};

static const struct view_shape trash_ui_shape = {
	.in = VIEW_TRASH_TASK, .name = "ui_messages.jsonl", .match = doc_file_match, .arg = &view_ui_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

const struct path_ops view_trash_ui = {
	.name = "view-trash-ui-messages",
	TRASH_FILE_MEMBERS,
	.shape = &trash_ui_shape,
};

static const struct view_shape trash_metadata_shape = {
	.in = VIEW_TRASH_TASK, .name = "metadata.json", .match = doc_file_match, .arg = &view_metadata_file,
	.listed = VIEW_LISTED_IF_THERE, .type = S_IFREG,
};

const struct path_ops view_trash_metadata = {
	.name = "view-trash-metadata",
	TRASH_FILE_MEMBERS,
	.shape = &trash_metadata_shape,
};

static const struct view_shape trash_subagent_shape = {
	.in = VIEW_TRASH_TASK, .match = subagent_match, .type = S_IFREG,
};

const struct path_ops view_trash_subagent = {
	.name = "view-trash-subagent",
	TRASH_FILE_MEMBERS,
	.shape = &trash_subagent_shape,
};
