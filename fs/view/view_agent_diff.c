/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_agent_diff.c: checkpoints/<NNN>-<hash>/agent.diff, what the agent's
 * file tools changed after that checkpoint, as a patch that `git apply -R`
 * in the workspace takes back without touching what the user changed.
 *
 * The client records, in task_metadata.json's files_in_context, when its
 * file tools last edited each file (cline_edit_date) and when it saw the
 * user change one (user_edit_date). A file the agent edited after the
 * checkpoint's time (its checkpoint_created message's ts) and the user did
 * not is the agent's: its diff from the checkpoint's commit to the latest
 * checkpoint's is in the patch. A file both changed after it is left out
 * and named in a header line; so is any other file the shadow repo shows
 * changed, which the file tools do not explain (a command the agent ran, or
 * the user): the client does not track what commands change, the header
 * says so. The header lines begin with '#', which git apply passes over.
 *
 * task_metadata.json is read whole (up to AGENT_META_MAX): it is small, a
 * record a file the task touched.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/ops/route.h"
#include "fs/view/shadow.h"
#include "fs/view/view.h"
#include "fs/view/view_ckpt.h"
#include "store/store_view.h"
#include "store/util.h"

#define AGENT_META_MAX (16 << 20)

/* One file of files_in_context: the latest of each date (ms; 0: none). */
struct touched {
	const char *path; /* in the parsed metadata */
	double agent, user;
};

struct touched_list {
	struct touched *v;
	size_t n, alloc;
};

static int touched_add(struct touched_list *l, const char *path, double agent, double user)
{
	int r;

	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].path, path) == 0) {
			l->v[i].agent = agent > l->v[i].agent ? agent : l->v[i].agent;
			l->v[i].user = user > l->v[i].user ? user : l->v[i].user;
			return 0;
		}
	if ((r = ARRAY_GROW(l->v, l->n, l->alloc, 16)) < 0)
		return r;
	l->v[l->n++] = (struct touched){ path, agent, user };
	return 0;
}

static double date_of(const cJSON *rec, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, name);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* task_metadata.json as it stands now, parsed (cJSON_Delete()); NULL for none or one the client could not read. */
static int metadata_of(struct fs *fs, const char *task, cJSON **ret)
{
	struct store_snap *snap = NULL;
	_cleanup_free_ char *buf = NULL;
	int64_t size, got = 0;
	char doc[128];
	int r;

	*ret = NULL;
	snprintf(doc, sizeof(doc), "tasks/%s/task_metadata.json", task);
	if ((r = store_snap_open(fs->store, doc, &snap)) < 0)
		return r == -ENOENT ? 0 : r;
	size = store_snap_size(snap);
	if (size > AGENT_META_MAX) {
		log_warn("cannot make agent.diff of task '%s': '%s' is %" PRId64 " bytes, over %d MiB", task, doc, size,
			 AGENT_META_MAX >> 20);
		store_snap_free(snap);
		return -EFBIG;
	}
	if (!(buf = malloc((size_t)size + 1))) {
		store_snap_free(snap);
		return -ENOMEM;
	}
	while (got < size) {
		ssize_t k = store_snap_read(fs->store, snap, buf + got, (size_t)(size - got), got);

		if (k <= 0) {
			store_snap_free(snap);
			return k < 0 ? (int)k : -EIO;
		}
		got += k;
	}
	store_snap_free(snap);
	*ret = cJSON_ParseWithLength(buf, (size_t)size);
	return 0;
}

static int last_hash(void *ctx, const struct store_checkpoint *c)
{
	snprintf(ctx, 48, "%s", c->hash);
	return 0;
}

/* The others the shadow repo shows changed, as header lines (those the user changed too are named already). */
struct others {
	struct sb *out;
	const struct touched_list *l;
	double at;
	int err;
};

static void other_line(void *ctx, const char *path)
{
	struct others *o = ctx;

	for (size_t i = 0; i < o->l->n; i++)
		if (strcmp(o->l->v[i].path, path) == 0 && o->l->v[i].agent > o->at)
			return;
	if (o->err == 0)
		o->err = sb_addf(o->out, "# convfs: left out, changed but not by the agent's file tools: %s\n", path);
}

static int agent_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns, int64_t *ret_rev)
{
	const struct view_path *vp = &rt->vp;
	double at = (double)vp->ckpt_ts;
	struct touched_list l = { 0 };
	_cleanup_sb_ struct sb out = SB_INIT;
	struct others o = { &out, &l, at, 0 };
	const char **paths = NULL;
	size_t npaths = 0;
	char last[48] = "";
	cJSON *meta = NULL, *files, *rec;
	_cleanup_free_ char *diff = NULL;
	size_t diff_len = 0;
	int r;

	*ret_mtime_ns = vp->ckpt_ts * 1000000;
	if ((r = ckpt_each(rt->fs, vp->task, last_hash, last)) < 0 || (r = metadata_of(rt->fs, vp->task, &meta)) < 0)
		return r;
	files = cJSON_GetObjectItemCaseSensitive(meta, "files_in_context");
	cJSON_ArrayForEach(rec, (cJSON_IsArray(files) ? files : NULL)) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(rec, "path");

		if (cJSON_IsString(path) && (r = touched_add(&l, path->valuestring, date_of(rec, "cline_edit_date"),
							     date_of(rec, "user_edit_date"))) < 0)
			break;
	}
	if (r == 0 && !(paths = calloc(l.n + 1, sizeof(*paths))))
		r = -ENOMEM;
	r = r ?: sb_addf(&out, "# convfs: agent.diff: what the agent's file tools changed after checkpoint %d (%.7s) up "
			       "to the latest checkpoint (%.7s); `git apply -R agent.diff` in the workspace takes it "
			       "back.\n# convfs: what commands the agent ran changed is not tracked by the client, "
			       "and not here.\n", vp->ckpt, vp->hash, last);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		if (l.v[i].agent <= at)
			continue;
		if (l.v[i].user > at)
			r = sb_addf(&out, "# convfs: left out, changed by the user too: %s\n", l.v[i].path);
		else
			paths[npaths++] = l.v[i].path;
	}
	if (r == 0 && strcmp(last, vp->hash) != 0)
		r = shadow_diff_only(vp->git_dir, vp->hash, last, paths, npaths, other_line, &o, &diff, &diff_len);
	r = r ?: o.err;
	if (r == 0 && diff_len)
		r = sb_add(&out, diff, diff_len);
	free(paths);
	free(l.v);
	cJSON_Delete(meta);
	if (r < 0)
		return r;
	*ret = sb_detach(&out, ret_len);
	return *ret ? 0 : -ENOMEM;
}

/* There where the repo has the checkpoint's commit and the latest's (shadow.c logs why not). */
static int agent_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	char last[48] = "";

	if (!*vp->git_dir || !store_is_task_id(vp->task) || shadow_has_commit(vp->git_dir, vp->hash) < 0 ||
	    ckpt_each(fs, vp->task, last_hash, last) < 0 || !*last || shadow_has_commit(vp->git_dir, last) < 0)
		return -ENOENT;
	return 0;
}

static int agent_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, agent_render, 0400);
}

static int agent_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_writes(fi) ? -EROFS : path_open_text(rt, fi, agent_render, false);
}

static const struct view_shape agent_shape = {
	.in = VIEW_CKPT, .name = "agent.diff", .match = agent_match, .listed = VIEW_LISTED, .type = S_IFREG,
};

/* It follows the latest checkpoint and the metadata: never kept. */
const struct path_ops view_ckpt_agent_diff = {
	.name = "view-checkpoint-agent-diff",
	.getattr = agent_getattr,
	.open = agent_open,
	.cls = PATH_CLASS_VIEW,
	.readonly = true,
	.whole_store = true,
	.cache = { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_OPEN },
	.shape = &agent_shape,
};
