/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_subagents.c: a CLI 3.x session's subagents in the view, as kinds:
 *
 *   .../tasks/<session>/subagents/<agent>/messages.jsonl  its conversation
 *   .../tasks/<session>/subagents/<agent>/spawn.json      what spawned it
 *   .../subagents/<agent>/subagents/<agent>/...            what it spawned
 *
 * A subagent's conversation is sessions/<session>/<agent>.messages.json
 * (a doc of the session, written by the CLI as it goes; <agent> is
 * agent_<ms>_<random>, and any other name but the session's own is taken
 * for a subagent's too, listed after those); which conversation
 * spawned it is found in the conversations themselves (spawn.c: the
 * spawn_agent call whose task is its first message), so a subagent that
 * spawned its own holds it in its own subagents/. One that no call explains
 * (its parent's conversation lost, or rewritten) is shown under the session.
 *
 * The session's tree is made from every conversation of the session, each
 * read once, a line at a time (lines.c; only a line that holds
 * SPAWN_WORD, and a subagent's first, are parsed), and kept until the next
 * commit (store_generation()): a listing and the lookups of its names make
 * it once. With no store (view_doc_of(), for the commands) a subagent's
 * folder is taken by its name alone; the other way, from a subagent's
 * conversation to its folder (view_subagent_folder(), for a hit of `convfs
 * search`), takes the tree from a store alone, the command's having no
 * mount.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fs/ops/route.h"
#include "fs/view/lines.h"
#include "fs/view/spawn.h"
#include "fs/view/view.h"
#include "store/store_view.h"
#include "store/util.h"

#define SUB_SUFFIX ".messages.json"
#define SUB_FIRST_KEEP (1 << 20) /* a subagent's first message (its task) is read up to this */

/* One subagent of the session. */
struct sub {
	char agent[64];
	int parent;                    /* the subagent that spawned it, by index; -1: the session */
	const struct spawn_call *call; /* the call that did (in its parent's calls); NULL: none found */
	char *first;                   /* its first message's text (NULL: none) */
	int64_t mtime_ns;              /* its conversation's last save */
};

/* The session's tree: its subagents by the time in their ids, and each conversation's calls. */
struct subs {
	int refs;
	char task[72];
	uint64_t gen;
	struct sub *v;
	size_t n, alloc;
	struct spawn_calls *calls; /* [0] the session's, [i + 1] v[i]'s */
};

static void subs_put(struct subs *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].first);
	for (size_t i = 0; s->calls && i <= s->n; i++)
		spawn_calls_release(&s->calls[i]);
	free(s->calls);
	free(s->v);
	free(s);
}

static void subs_putp(struct subs **s)
{
	subs_put(*s);
}
#define _cleanup_subs_ _cleanup_(subs_putp)

/* store_doc_list() of the session's folder: its subagents' conversations. */
static int list_one(void *ctx, const char *name, const struct store_stat *stat)
{
	struct subs *s = ctx;
	size_t n = strlen(name), sl = strlen(SUB_SUFFIX);
	int r;

	if (n <= sl || n - sl >= sizeof(s->v[0].agent) || strcmp(name + n - sl, SUB_SUFFIX) != 0 ||
	    (n - sl == strlen(s->task) && strncmp(name, s->task, n - sl) == 0))
		return 0; /* not a conversation, or the session's own */
	if ((r = ARRAY_GROW(s->v, s->n, s->alloc, 8)) < 0)
		return r;
	s->v[s->n] = (struct sub){ .parent = -1, .mtime_ns = stat->mtime_ns };
	memcpy(s->v[s->n].agent, name, n - sl);
	s->n++;
	return 0;
}

/* Spawned first, listed first: by the time in the id (one without, last), then the id. */
static int by_start(const void *a, const void *b)
{
	const struct sub *x = a, *y = b;
	int64_t tx = spawn_agent_ms(x->agent) ?: INT64_MAX, ty = spawn_agent_ms(y->agent) ?: INT64_MAX;

	return tx != ty ? (tx < ty ? -1 : 1) : strcmp(x->agent, y->agent);
}

struct conv_read {
	struct spawn_calls *calls;
	char **first; /* NULL: the session's own conversation */
};

/* The text of a message: a string content, or its first text block. */
static char *text_of(const char *json, size_t len)
{
	cJSON *m = cJSON_ParseWithLength(json, len), *c = cJSON_GetObjectItemCaseSensitive(m, "content"), *b;
	char *text = NULL;

	if (cJSON_IsString(c)) {
		text = strdup(c->valuestring);
	} else {
		cJSON_ArrayForEach(b, (cJSON_IsArray(c) ? c : NULL)) {
			cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "text");

			if (cJSON_IsString(t)) {
				text = strdup(t->valuestring);
				break;
			}
		}
	}
	cJSON_Delete(m);
	return text;
}

static int conv_line(void *ctx, const struct lines_line *l)
{
	struct conv_read *cr = ctx;

	if (cr->first && l->index == 0 && l->bytes)
		*cr->first = text_of(l->bytes, (size_t)l->len); /* none on failure: the call is not found */
	if (!(l->found & 1))
		return 0;
	if (!l->bytes) {
		log_warn("cannot tell what spawned the subagents of a session: a message of %" PRId64
			 " bytes names %s; passed over", l->len, SPAWN_WORD);
		return 0;
	}
	return spawn_calls_add(cr->calls, l->index, l->bytes, (size_t)l->len);
}

/* The calls of one conversation (and a subagent's first message); a conversation gone is none. */
static int conv_read(struct store *st, const char *task, const char *stem, struct spawn_calls *calls, char **first)
{
	static const char *const words[] = { SPAWN_WORD, NULL };
	struct conv_read cr = { calls, first };
	struct store_snap *snap;
	char doc[192];
	int64_t r;

	snprintf(doc, sizeof(doc), "sessions/%s/%s%s", task, stem, SUB_SUFFIX);
	r = store_snap_open_jsonl(st, doc, &snap);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return (int)r;
	r = lines_each(st, snap, SUB_FIRST_KEEP, words, conv_line, &cr);
	store_snap_free(snap);
	return r < 0 ? (int)r : 0;
}

/* Each subagent's call: in the session's conversation or an earlier subagent's, the first its task fits. */
static void subs_link(struct subs *s)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t c = 0; c <= i && !s->v[i].call; c++) {
			s->v[i].call = spawn_calls_take(&s->calls[c], s->v[i].first);
			if (s->v[i].call)
				s->v[i].parent = (int)c - 1;
		}
}

static int subs_make(struct store *st, const char *task, uint64_t gen, struct subs **ret)
{
	_cleanup_subs_ struct subs *s = calloc(1, sizeof(*s));
	char dir[96];
	int r;

	if (!s)
		return -ENOMEM;
	s->refs = 1;
	s->gen = gen;
	snprintf(s->task, sizeof(s->task), "%s", task);
	snprintf(dir, sizeof(dir), "sessions/%s", task);
	if ((r = store_doc_list(st, dir, list_one, s)) < 0)
		return r;
	if (s->n)
		qsort(s->v, s->n, sizeof(s->v[0]), by_start);
	if (!(s->calls = calloc(s->n + 1, sizeof(s->calls[0]))))
		return -ENOMEM;
	r = conv_read(st, task, task, &s->calls[0], NULL);
	for (size_t i = 0; r == 0 && i < s->n; i++)
		r = conv_read(st, task, s->v[i].agent, &s->calls[i + 1], &s->v[i].first);
	if (r < 0)
		return r;
	subs_link(s);
	*ret = TAKE_PTR(s);
	return 0;
}

/* The last session's tree, of one store (two mounts may serve two stores in one process). */
static struct {
	pthread_mutex_t lock;
	const struct store *store;
	struct subs *s;
} kept = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The session's tree, kept until the next commit; subs_put() it. */
static int subs_of_store(struct store *st, const char *task, struct subs **ret)
{
	uint64_t gen = store_generation(st);
	struct subs *s = NULL, *old;
	int r;

	pthread_mutex_lock(&kept.lock);
	if (kept.s && kept.store == st && kept.s->gen == gen && strcmp(kept.s->task, task) == 0) {
		s = kept.s;
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
	}
	pthread_mutex_unlock(&kept.lock);
	if (s) {
		*ret = s;
		return 0;
	}
	if ((r = subs_make(st, task, gen, &s)) < 0)
		return r;
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&kept.lock);
	old = kept.s;
	kept.s = s;
	kept.store = st;
	pthread_mutex_unlock(&kept.lock);
	subs_put(old);
	*ret = s;
	return 0;
}

static int subs_of(struct fs *fs, const char *task, struct subs **ret)
{
	return subs_of_store(fs->store, task, ret);
}

/* The subagent of the folder vp names: its index, or -1 for the session itself ("" agent). */
static int sub_index(const struct subs *s, const char *agent)
{
	for (size_t i = 0; *agent && i < s->n; i++)
		if (strcmp(s->v[i].agent, agent) == 0)
			return (int)i;
	return -1;
}

static bool has_children(const struct subs *s, int parent)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].parent == parent)
			return true;
	return false;
}

int view_subagent_folder(struct store *st, const char *task, const char *agent, char *buf, size_t n)
{
	_cleanup_subs_ struct subs *s = NULL;
	_cleanup_free_ int *chain = NULL;
	size_t depth = 0, len = 0;
	int i, r;

	if ((r = subs_of_store(st, task, &s)) < 0)
		return r;
	if ((i = sub_index(s, agent)) < 0)
		return -ENOENT;
	if (!(chain = calloc(s->n, sizeof(*chain))))
		return -ENOMEM;
	/* A parent comes before its child in v (subs_link()): the walk up ends, in at most n steps. */
	for (int k = i; k >= 0; k = s->v[k].parent)
		chain[depth++] = k;
	if (n == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	while (depth-- > 0) {
		int w = snprintf(buf + len, n - len, "%ssubagents/%s", len ? "/" : "", s->v[chain[depth]].agent);

		if (w < 0 || (size_t)w >= n - len)
			return -ENAMETOOLONG;
		len += (size_t)w;
	}
	return 0;
}

/* ---- the matches ------------------------------------------------------------------- */

/* subagents/ of the session or of a subagent: there if someone was spawned from there. */
static int subagents_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
			   const struct view_step *at)
{
	_cleanup_subs_ struct subs *s = NULL;
	int r;

	if (!store_is_session_id(vp->task))
		return -ENOENT;
	vp->kind = VIEW_SUBAGENTS; /* a subagent's own subagents/ is the same kind of folder */
	if (!fs)
		return 0;
	if ((r = subs_of(fs, vp->task, &s)) < 0)
		return r;
	return has_children(s, sub_index(s, vp->agent)) ? 0 : -ENOENT;
}

/* subagents/<agent>/: one spawned from the folder this subagents/ is in. */
static int subagent_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp, const struct view_step *at)
{
	_cleanup_subs_ struct subs *s = NULL;
	int i, r;

	if (strlen(at->name) >= sizeof(vp->agent) || strcmp(at->name, vp->task) == 0)
		return -ENOENT;
	if (fs) {
		if ((r = subs_of(fs, vp->task, &s)) < 0)
			return r;
		if ((i = sub_index(s, at->name)) < 0 || s->v[i].parent != sub_index(s, vp->agent))
			return -ENOENT;
	}
	snprintf(vp->agent, sizeof(vp->agent), "%s", at->name);
	return 0;
}

int view_subagent_messages_match(struct fs *fs, const struct view_shape *sh, struct view_path *vp,
				 const struct view_step *at)
{
	if ((size_t)snprintf(vp->doc, sizeof(vp->doc), "sessions/%s/%s%s", vp->task, vp->agent, SUB_SUFFIX) >=
	    sizeof(vp->doc))
		return -ENOENT;
	vp->lines = true;
	vp->require = view_messages_file.require;
	return 0;
}

/* ---- the rows' members ----------------------------------------------------------------- */

static int subagents_getattr(const struct route *rt, struct stat *st)
{
	_cleanup_subs_ struct subs *s = NULL;
	int parent, r = subs_of(rt->fs, rt->vp.task, &s);
	int64_t last = 0;

	if (r < 0)
		return r;
	parent = sub_index(s, rt->vp.agent);
	if (!has_children(s, parent))
		return -ENOENT;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].parent == parent && s->v[i].mtime_ns > last)
			last = s->v[i].mtime_ns;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0700, last);
	return 0;
}

static int subagents_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	_cleanup_subs_ struct subs *s = NULL;
	int parent, r = view_list_dots(fn, ctx);

	if (r == 0)
		r = subs_of(rt->fs, rt->vp.task, &s);
	if (r < 0)
		return r;
	parent = sub_index(s, rt->vp.agent);
	for (size_t i = 0; r == 0 && i < s->n; i++)
		if (s->v[i].parent == parent)
			r = fn(ctx, s->v[i].agent, S_IFDIR, 0);
	return r;
}

static int subagent_getattr(const struct route *rt, struct stat *st)
{
	_cleanup_subs_ struct subs *s = NULL;
	int i, r = subs_of(rt->fs, rt->vp.task, &s);

	if (r < 0)
		return r;
	if ((i = sub_index(s, rt->vp.agent)) < 0)
		return -ENOENT;
	view_stat_init(rt->fs, rt->rel, st);
	view_stat_dir(rt->fs, st, 0700, s->v[i].mtime_ns);
	return 0;
}

static int subagent_list(const struct route *rt, op_list_fn fn, void *ctx)
{
	int r = view_list_dots(fn, ctx);

	return r < 0 ? r : view_list_named(rt->fs, rt, fn, ctx);
}

static int spawn_render(const struct route *rt, char **ret, size_t *ret_len, int64_t *ret_mtime_ns, int64_t *ret_rev)
{
	_cleanup_subs_ struct subs *s = NULL;
	struct spawn_info in = { .agent = rt->vp.agent, .parent = rt->vp.task };
	char session_id[160], where[64];
	const struct sub *sub;
	int i, r = subs_of(rt->fs, rt->vp.task, &s);

	if (r < 0)
		return r;
	if ((i = sub_index(s, rt->vp.agent)) < 0)
		return -ENOENT;
	sub = &s->v[i];
	snprintf(session_id, sizeof(session_id), "%s__%s", rt->vp.task, sub->agent);
	in.session_id = session_id;
	if (sub->parent >= 0)
		in.parent = s->v[sub->parent].agent;
	in.call = sub->call;
	if (sub->call) {
		/* The parent's messages.jsonl is two folders up: the session's, or the parent subagent's. */
		snprintf(where, sizeof(where), "../../messages.jsonl:%" PRId64, sub->call->line);
		in.spawned_by = where;
	}
	in.first = sub->first;
	in.started_ms = spawn_agent_ms(sub->agent);
	in.updated_ms = sub->mtime_ns / 1000000;
	*ret_mtime_ns = sub->mtime_ns;
	return spawn_json(&in, ret, ret_len);
}

static int spawn_getattr(const struct route *rt, struct stat *st)
{
	return view_text_stat(rt, st, spawn_render, 0400);
}

static int spawn_open(const struct route *rt, struct fuse_file_info *fi)
{
	return path_open_text(rt, fi, spawn_render, false);
}

/* rm -r of the task: its subagents' folders go with it (the task's folder goes to the trash). */
static int goes_with_task(const struct route *rt)
{
	return 0;
}

/* ---- the rows ------------------------------------------------------------------------ */

/*
 * Their listings and attributes follow the session's saves, which tell the
 * kernel only at the task's own paths: never kept.
 */
#define SUB_CACHE { .entry = KEEP_BRIEF, .attr = KEEP_NEVER, .pages = PAGES_OPEN }

static const struct view_shape subagents_shape = {
	.in = VIEW_TASK, .name = "subagents", .match = subagents_match, .listed = VIEW_LISTED_IF_THERE, .type = S_IFDIR,
};

const struct path_ops view_subagents = {
	.name = "view-subagents",
	.getattr = subagents_getattr,
	.list = subagents_list,
	.rmdir = goes_with_task,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = SUB_CACHE,
	.shape = &subagents_shape,
};

static const struct view_shape subagent_dir_shape = { .in = VIEW_SUBAGENTS, .match = subagent_match, .type = S_IFDIR };

const struct path_ops view_subagent_dir = {
	.name = "view-subagent-folder",
	.getattr = subagent_getattr,
	.list = subagent_list,
	.rmdir = goes_with_task,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = SUB_CACHE,
	.shape = &subagent_dir_shape,
};

static const struct view_shape spawn_shape = {
	.in = VIEW_SUBAGENT_DIR, .name = "spawn.json", .listed = VIEW_LISTED, .type = S_IFREG,
};

const struct path_ops view_subagent_spawn = {
	.name = "view-subagent-spawn",
	.getattr = spawn_getattr,
	.open = spawn_open,
	.unlink = view_unlink_with_folder,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = SUB_CACHE,
	.shape = &spawn_shape,
};

/* A subagent's own subagents/: its match makes it a VIEW_SUBAGENTS, whose row serves it. */
static const struct view_shape nested_shape = {
	.in = VIEW_SUBAGENT_DIR, .name = "subagents", .match = subagents_match, .listed = VIEW_LISTED_IF_THERE,
	.type = S_IFDIR,
};

const struct path_ops view_subagents_nested = {
	.name = "view-subagents-nested",
	.getattr = subagents_getattr,
	.list = subagents_list,
	.rmdir = goes_with_task,
	.cls = PATH_CLASS_VIEW,
	.whole_store = true,
	.cache = SUB_CACHE,
	.shape = &nested_shape,
};
