/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_context_kind.c: context.jsonl, what the model saw, as kinds of the
 * view: beside a live task's messages.jsonl, and in each of its checkpoints
 * and versions, with the range and the edits in force there
 * (view_context.c makes the text, context.c holds the client's rules).
 *
 * Found by its name and never listed: it repeats messages.jsonl's messages,
 * and grep -r or rsync of the view must read each message once. Its mode is
 * 0400: the client makes it, nobody writes it (EACCES to a writer of the
 * live one, EROFS under a checkpoint or a version, as everything there).
 *
 * A CLI 3.x session's live context.jsonl comes from its messages and its
 * compaction file (view_context.c). That file is a plain file the CLI
 * writes beside its docs, whose saves the store does not see: the text kept
 * since the last commit is kept under the file's identity (inode, size,
 * time) as well as its path, so that a new state is taken at once.
 *
 * A handle holds the text it was opened with (pieces of a snapshot and the
 * messages the client changed): a reader sees one context.jsonl from its
 * first byte to its last, whatever is saved meanwhile; its pages go direct,
 * since the live one changes with every save of the task.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/backing/tree.h"
#include "fs/ops/route.h"
#include "fs/view/view.h"
#include "fs/view/view_context.h"
#include "store/store_view.h"
#include "store/util.h"

#define COMPACTION_FILE_MAX (64 << 20) /* a compaction file read whole up to this */

/*
 * Where a context.jsonl is: how its input is made. (Not its shape's arg: the
 * args of a version folder's shapes are the docs its files show.)
 */
struct context_where {
	int (*input)(struct fs *fs, const struct view_path *vp, struct context_input *ret);
	int write_err; /* what opening it to write answers */
};

static int live_input(struct fs *fs, const struct view_path *vp, struct context_input *ret)
{
	return context_input_live(fs, vp->task, ret);
}

/* The conversation cut where the checkpoint cuts it (its messages.jsonl), its range, the edits up to its time. */
static int ckpt_input(struct fs *fs, const struct view_path *vp, struct context_input *ret)
{
	struct context_range range = { .set = vp->ckpt_range_end >= 0, .start = vp->ckpt_range_start,
				       .end = vp->ckpt_range_end };
	struct store_snap *api = NULL;
	char path[128];
	int r;

	if (!store_is_task_id(vp->task))
		return -ENOENT;
	snprintf(path, sizeof(path), "tasks/%s/api_conversation_history.json", vp->task);
	r = store_snap_open_jsonl(fs->store, path, &api);
	if (r == 0)
		r = store_snap_limit(fs->store, api, vp->ckpt_api + 1);
	if (r < 0) {
		store_snap_free(api);
		return r;
	}
	return context_input_checkpoint(fs, vp->task, api, &range, vp->ckpt_ts, ret);
}

static int version_input(struct fs *fs, const struct view_path *vp, struct context_input *ret)
{
	return context_input_version(fs, vp->task, vp->ver_rev, vp->ver_time_ns, ret);
}

static const struct context_where live_where = { live_input, -EACCES };
static const struct context_where ckpt_where = { ckpt_input, -EROFS };
static const struct context_where version_where = { version_input, -EROFS };

/*
 * The session's compaction file, open, with its fstat() in *st: -ENOENT if
 * it has none. Its identity (inode, size, time) keys what was made of it,
 * so that it is read only when it changed. Read whole and parsed from those
 * bytes only (the CLI may rewrite it meanwhile); the fstat() comes before
 * the read: a change while it is read gives the file a newer time, so the
 * next look does not take this text.
 */
static int open_compaction(struct fs *fs, const char *session, char *path, size_t n, struct stat *st)
{
	int fd;

	memset(st, 0, sizeof(*st));
	if ((size_t)snprintf(path, n, "sessions/%s/%s.compaction.json", session, session) >= n)
		return -ENAMETOOLONG;
	fd = plain_open_regular(fs, path, O_RDONLY, 0, st);
	if (fd < 0 && fd != -ENOENT)
		log_warn("cannot read '%s': %s", path, strerror(-fd));
	return fd;
}

/* A session's live context.jsonl: kept under its path and its compaction file's identity. */
static int session_context_of(const struct route *rt, struct view_context **ret)
{
	_cleanup_free_ char *state = NULL;
	_cleanup_close_ int fd = -1;
	struct context_input in;
	char key[512], path[192];
	size_t len = 0;
	struct stat st;
	int r;

	fd = open_compaction(rt->fs, rt->vp.task, path, sizeof(path), &st);
	if (fd < 0 && fd != -ENOENT)
		return fd;
	snprintf(key, sizeof(key), "%s\n%ju:%jd:%jd.%09ld", rt->rel, (uintmax_t)st.st_ino, (intmax_t)st.st_size,
		 (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if ((*ret = view_context_lookup(rt->fs, key)))
		return 0;
	if (fd >= 0 && (r = read_fd_all(fd, COMPACTION_FILE_MAX, &state, &len)) < 0) {
		if (r == -EFBIG)
			log_warn("cannot show what the model saw of session '%s': '%s' is over %d MiB", rt->vp.task,
				 path, COMPACTION_FILE_MAX >> 20);
		else
			log_warn("cannot read '%s': %s", path, strerror(-r));
		return r;
	}
	r = context_input_session(rt->fs, rt->vp.task, TAKE_PTR(state), len,
				  (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, &in);
	return r < 0 ? r : view_context_get(rt->fs, key, &in, ret);
}

/* The text of the context.jsonl rt names: the one kept since the last commit, or made now. */
static int context_of(const struct route *rt, const struct context_where *w, struct view_context **ret)
{
	struct context_input in;
	int r;

	if (w == &live_where && store_is_session_id(rt->vp.task))
		return session_context_of(rt, ret);
	if ((*ret = view_context_lookup(rt->fs, rt->rel)))
		return 0;
	r = w->input(rt->fs, &rt->vp, &in);
	return r < 0 ? r : view_context_get(rt->fs, rt->rel, &in, ret);
}

static void context_stat(const struct route *rt, const struct view_context *c, struct stat *st)
{
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_file(st, 0400, view_context_size(c), view_context_mtime(c));
}

static int context_getattr(const struct route *rt, const struct context_where *w, struct stat *st)
{
	struct view_context *c;
	int r = context_of(rt, w, &c);

	if (r < 0)
		return r;
	context_stat(rt, c, st);
	view_context_put(c);
	return 0;
}

static int context_open(const struct route *rt, const struct context_where *w, struct fuse_file_info *fi)
{
	struct view_context *c;
	struct stat st;
	int r;

	if (path_open_writes(fi))
		return w->write_err;
	if ((r = context_of(rt, w, &c)) < 0)
		return r;
	context_stat(rt, c, &st);
	return path_open_context(rt, fi, c, &st);
}

#define CONTEXT_MEMBERS(where)                                                                          \
	static int where##_getattr(const struct route *rt, struct stat *st)                             \
	{                                                                                               \
		return context_getattr(rt, &where, st);                                                 \
	}                                                                                               \
	static int where##_open(const struct route *rt, struct fuse_file_info *fi)                      \
	{                                                                                               \
		return context_open(rt, &where, fi);                                                    \
	}
CONTEXT_MEMBERS(live_where)
CONTEXT_MEMBERS(ckpt_where)
CONTEXT_MEMBERS(version_where)

/* ---- the rows ------------------------------------------------------------------------ */

static const struct view_shape live_shape = {
	.in = VIEW_TASK, .name = "context.jsonl", .listed = VIEW_UNLISTED, .type = S_IFREG,
};

/* Any save of the task's conversation, ui messages, edits or history item may change it: never kept. */
const struct path_ops view_context_jsonl = {
	.name = "view-context",
	.getattr = live_where_getattr,
	.open = live_where_open,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_DIRECT },
	.shape = &live_shape,
};

static const struct view_shape ckpt_shape = {
	.in = VIEW_CKPT, .name = "context.jsonl", .listed = VIEW_UNLISTED, .type = S_IFREG,
};

/* Kept as a checkpoint's other files are (a second). */
const struct path_ops view_ckpt_context = {
	.name = "view-checkpoint-context",
	.getattr = ckpt_where_getattr,
	.open = ckpt_where_open,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .handle = true, .pages = PAGES_DIRECT },
	.shape = &ckpt_shape,
};

static const struct view_shape version_shape = {
	.in = VIEW_VERSION, .name = "context.jsonl", .listed = VIEW_UNLISTED,
	.type = S_IFREG,
};

const struct path_ops view_version_context = {
	.name = "view-version-context",
	.getattr = version_where_getattr,
	.open = version_where_open,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_BRIEF, .handle = true, .pages = PAGES_DIRECT },
	.shape = &version_shape,
};
