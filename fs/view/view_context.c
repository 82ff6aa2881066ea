/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * view_context.c: context.jsonl, a Cline task's conversation as the model
 * last saw it (view_context.h; the client's rules are in context.c).
 *
 * The conversation is read once, a line (a message) at a time (lines.c),
 * and the text is kept as pieces: a run of
 * messages.jsonl's own lines is kept as where it lies (read again from the
 * store's snapshot when it is read), a message the client changes as its new
 * bytes. A message of more than CONTEXT_LINE_KEEP bytes is never held: it is
 * looked through for tool calls as it streams past, and only if the client
 * would have to change it is it refused (EFBIG, with a log line). So the
 * memory is the window, the changed messages and the list of pieces, not the
 * conversation.
 *
 * Where the range and the edits come from: the live task's range is its
 * history item's (Cline CLI 1.0.10 leaves it out of the item: then the last
 * ui message's, which every ui message carries as it stood when the message
 * was made); a checkpoint's is the one its message carries and its edits
 * those up to its time, as the client restores them when it goes back
 * there; a saved version's are the ui messages' last and the edits file as
 * they stood after that save.
 *
 * A CLI 3.x session has no range and no edits: the 3.x CLI keeps what it
 * compacted in <id>.compaction.json and sends it, then the messages after
 * those it stands for, while it still applies (compaction.c); else every
 * message it sends (all but those only shown). Its compaction file is a
 * plain file, not a doc: the store has no past of it, so a session has its
 * context.jsonl live only, not in its versions.
 *
 * The last text made is kept, with a reference count, until the next commit
 * (store_generation()): a stat, an open and the reads of one file make it
 * once.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/view/compaction.h"
#include "fs/view/lines.h"
#include "fs/view/view_context.h"
#include "store/json.h"
#include "store/store_view.h"
#include "store/util.h"

#define CONTEXT_LINE_KEEP (16 << 20) /* a message the client changes is held whole up to this */
#define CONTEXT_EDITS_MAX (16 << 20) /* context_history.json read whole up to this */

/* A piece of the text: bytes [src, src + len) of the snapshot, or text. */
struct piece {
	int64_t at, src, len;
	char *text;
};

struct view_context {
	int refs;
	struct store_snap *api;
	struct piece *v;
	size_t n, alloc;
	int64_t size, mtime_ns;
};

void context_input_release(struct context_input *in)
{
	store_snap_free(in->api);
	free(in->edits);
	free(in->compaction);
	*in = (struct context_input){ 0 };
}

void view_context_put(struct view_context *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].text);
	free(c->v);
	store_snap_free(c->api);
	free(c);
}

int64_t view_context_size(const struct view_context *c)
{
	return c->size;
}

int64_t view_context_mtime(const struct view_context *c)
{
	return c->mtime_ns;
}

/* Appends len bytes at src of the snapshot (text NULL) or text (taken): 0 or -ENOMEM (text freed). */
static int add_piece(struct view_context *c, int64_t src, int64_t len, char *text)
{
	struct piece *last = c->n ? &c->v[c->n - 1] : NULL;
	int r;

	if (!text && last && !last->text && last->src + last->len == src) {
		last->len += len;
		c->size += len;
		return 0;
	}
	if ((r = ARRAY_GROW(c->v, c->n, c->alloc, 64)) < 0) {
		free(text);
		return r;
	}
	c->v[c->n++] = (struct piece){ c->size, src, len, text };
	c->size += len;
	return 0;
}

/* ---- one pass over the conversation ---------------------------------------------- */

struct pieces_ctx {
	struct view_context *c;
	struct context_walk *w;
	const char *what;
};

static const char *const tool_words[] = { CONTEXT_TOOL_USE, CONTEXT_TOOL_RESULT, NULL };

/* One message of the conversation: what the client does with it. */
static int piece_of_line(void *ctx, const struct lines_line *l)
{
	struct pieces_ctx *pc = ctx;
	enum context_need need = context_walk_need(pc->w, l->index, l->found & 1, l->found & 2);
	char *json = NULL;
	size_t len;
	bool kept;
	int r;

	if (need == CONTEXT_LEFT_OUT)
		return 0;
	if (need == CONTEXT_AS_IS)
		return add_piece(pc->c, l->off, l->len + l->nl, NULL);
	if (!l->bytes) {
		log_warn("cannot show what the model saw of '%s': message %" PRId64 " (%" PRId64
			 " bytes) is over %d MiB and the client changes it", pc->what, l->index, l->len,
			 CONTEXT_LINE_KEEP >> 20);
		return -EFBIG;
	}
	r = context_walk_next(pc->w, l->index, l->bytes, (size_t)l->len, &kept, &json, &len);
	if (r == -EINVAL)
		log_warn("cannot show what the model saw of '%s': message %" PRId64 " is not JSON", pc->what, l->index);
	if (r < 0 || !kept)
		return r;
	if (!json)
		return add_piece(pc->c, l->off, l->len + l->nl, NULL);
	json[len] = '\n'; /* cJSON's text ends in its NUL: room for the line break */
	return add_piece(pc->c, -1, (int64_t)len + 1, json);
}

/* Reads the whole snapshot once, each line through the walk. */
static int make_pieces(struct fs *fs, struct view_context *c, struct context_walk *w, const char *what)
{
	struct pieces_ctx pc = { c, w, what };
	int64_t n = lines_each(fs->store, c->api, CONTEXT_LINE_KEEP, tool_words, piece_of_line, &pc);

	if (n < 0)
		return (int)n;
	/* The client sends a conversation of one message as it is (the walk could not know). */
	if (n <= 1) {
		int64_t size = store_snap_size(c->api);

		for (size_t i = 0; i < c->n; i++)
			free(c->v[i].text);
		c->n = 0;
		c->size = 0;
		if (size > 0)
			return add_piece(c, 0, size, NULL);
	}
	return 0;
}

/* ---- a CLI 3.x session ------------------------------------------------------------ */

struct session_ctx {
	struct view_context *c, *after; /* every message sent; those after the compacted ones */
	struct compaction_walk *w;
	const char *what;
};

static const char *const session_words[] = { COMPACTION_DISPLAY_ONLY, NULL };

/* One message of a session: whether the client sends it, and whether it follows the compacted ones. */
static int session_piece_of_line(void *ctx, const struct lines_line *l)
{
	struct session_ctx *sc = ctx;
	bool mentions = l->found & 1, needs = compaction_walk_needs(sc->w, mentions), sent, after;
	int r;

	if (needs && !l->bytes) {
		log_warn("cannot show what the model saw of '%s': message %" PRId64 " (%" PRId64
			 " bytes) is over %d MiB and the client reads it", sc->what, l->index, l->len,
			 CONTEXT_LINE_KEEP >> 20);
		return -EFBIG;
	}
	r = compaction_walk_next(sc->w, needs ? l->bytes : NULL, needs ? (size_t)l->len : 0, mentions, &sent, &after);
	if (r == -EINVAL)
		log_warn("cannot show what the model saw of '%s': message %" PRId64 " is not one the client can read",
			 sc->what, l->index);
	if (r < 0 || !sent)
		return r;
	if ((r = add_piece(sc->c, l->off, l->len + l->nl, NULL)) < 0)
		return r;
	return after ? add_piece(sc->after, l->off, l->len + l->nl, NULL) : 0;
}

/* Frees the pieces of c, leaving it empty. */
static void pieces_clear(struct view_context *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].text);
	free(c->v);
	c->v = NULL;
	c->n = c->alloc = 0;
	c->size = 0;
}

/* Reads the session's conversation once: the compacted messages then the rest if the state applies, else all. */
static int make_session_pieces(struct fs *fs, struct view_context *c, const struct compaction *cp, const char *what)
{
	struct view_context after = { 0 };
	struct session_ctx sc = { c, &after, NULL, what };
	char *text;
	int64_t n;
	int r;

	if ((r = compaction_walk_new(cp, &sc.w)) < 0)
		return r;
	n = lines_each(fs->store, c->api, CONTEXT_LINE_KEEP, session_words, session_piece_of_line, &sc);
	r = n < 0 ? (int)n : 0;
	if (r == 0 && compaction_walk_applies(sc.w)) {
		pieces_clear(c);
		if (cp->text_len > 0) {
			if (!(text = strdup(cp->text)))
				r = -ENOMEM;
			else
				r = add_piece(c, -1, (int64_t)cp->text_len, text);
		}
		for (size_t i = 0; r == 0 && i < after.n; i++)
			r = add_piece(c, after.v[i].src, after.v[i].len, NULL);
	}
	pieces_clear(&after);
	compaction_walk_free(sc.w);
	return r;
}

static int session_make(struct fs *fs, struct view_context *c, struct context_input *in, const char *what)
{
	struct compaction *cp = NULL;
	int r = compaction_parse(in->compaction, in->compaction_len, &cp);

	if (r == 0)
		r = make_session_pieces(fs, c, cp, what);
	compaction_free(cp);
	return r;
}

static int context_make(struct fs *fs, struct context_input *in, const char *what, struct view_context **ret)
{
	struct context_edits *edits = NULL;
	struct context_walk *w = NULL;
	struct view_context *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->api = TAKE_PTR(in->api);
	c->mtime_ns = in->mtime_ns;
	if (in->session) {
		r = session_make(fs, c, in, what);
	} else {
		r = context_edits_parse(in->edits, in->edits_len, in->max_ts, &edits);
		if (r == 0)
			r = context_walk_new(edits, &in->range, INT64_MAX, &w);
		if (r == 0)
			r = make_pieces(fs, c, w, what);
		context_walk_free(w);
		context_edits_free(edits);
	}
	if (r < 0) {
		view_context_put(c);
		return r;
	}
	*ret = c;
	return 0;
}

ssize_t view_context_read(struct fs *fs, struct view_context *c, char *buf, size_t size, off_t off)
{
	size_t lo = 0, hi = c->n, done = 0;

	if (off < 0)
		return -EINVAL;
	while (lo < hi) { /* the last piece that begins at or before off */
		size_t mid = (lo + hi) / 2;

		if (c->v[mid].at <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo ? lo - 1 : 0; i < c->n && done < size; i++) {
		const struct piece *p = &c->v[i];
		int64_t from = off + (int64_t)done - p->at;
		size_t n;

		if (from < 0 || from >= p->len)
			continue;
		n = (size_t)(p->len - from) < size - done ? (size_t)(p->len - from) : size - done;
		if (p->text) {
			memcpy(buf + done, p->text + from, n);
		} else {
			ssize_t got = store_snap_read(fs->store, c->api, buf + done, n, p->src + from);

			if (got < 0)
				return got;
			if ((size_t)got != n)
				return -EIO; /* the snapshot is fixed: its bytes cannot go */
		}
		done += n;
	}
	return (ssize_t)done;
}

/* ---- the last one made ----------------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	char key[512];
	uint64_t gen;
	struct view_context *c;
} kept = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct view_context *view_context_lookup(struct fs *fs, const char *key)
{
	uint64_t gen = store_generation(fs->store);
	struct view_context *c = NULL;

	pthread_mutex_lock(&kept.lock);
	if (kept.c && kept.gen == gen && strcmp(kept.key, key) == 0) {
		c = kept.c;
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	}
	pthread_mutex_unlock(&kept.lock);
	return c;
}

int view_context_get(struct fs *fs, const char *key, struct context_input *in, struct view_context **ret)
{
	uint64_t gen = store_generation(fs->store);
	struct view_context *c = view_context_lookup(fs, key), *old = NULL;
	char what[PATH_MAX];
	int r;

	if (c) {
		context_input_release(in);
		*ret = c;
		return 0;
	}
	/* The key's first line names the file; what follows tells apart versions of what it is made from. */
	snprintf(what, sizeof(what), "%.*s", (int)strcspn(key, "\n"), key);
	r = context_make(fs, in, what, &c);
	context_input_release(in);
	if (r < 0)
		return r;
	/* Kept under the generation taken before it was made: a commit since makes it miss. */
	if (strlen(key) < sizeof(kept.key)) {
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
		pthread_mutex_lock(&kept.lock);
		old = kept.c;
		kept.c = c;
		kept.gen = gen;
		memcpy(kept.key, key, strlen(key) + 1);
		pthread_mutex_unlock(&kept.lock);
		view_context_put(old);
	}
	*ret = c;
	return 0;
}

/* ---- where the range and the edits come from -------------------------------------- */

/* The whole of a small doc (free()); -EFBIG over max, with a log line. */
static int read_small(struct fs *fs, struct store_snap *snap, const char *what, size_t max, char **ret,
		      size_t *ret_len)
{
	int64_t size = store_snap_size(snap);
	_cleanup_free_ char *buf = NULL;
	int64_t got = 0;

	if (size > (int64_t)max) {
		log_warn("cannot show what the model saw: '%s' is %" PRId64 " bytes, over %zu MiB", what, size, max >> 20);
		return -EFBIG;
	}
	if (!(buf = malloc((size_t)size + 1)))
		return -ENOMEM;
	while (got < size) {
		ssize_t k = store_snap_read(fs->store, snap, buf + got, (size_t)(size - got), got);

		if (k <= 0)
			return k < 0 ? (int)k : -EIO;
		got += k;
	}
	buf[size] = '\0';
	*ret_len = (size_t)size;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* The last line of a JSON Lines snapshot, without its "\n" (free()); -ENOENT for none. */
static int last_line(struct fs *fs, struct store_snap *snap, char **ret, size_t *ret_len)
{
	int64_t end = store_snap_size(snap) - 1, from; /* the last line's "\n" is not read */
	_cleanup_sb_ struct sb tail = SB_INIT;         /* bytes [from, end) */
	const char *nl = NULL;

	if (end < 0)
		return -ENOENT;
	for (from = end; from > 0 && !nl;) {
		int64_t want = from < (64 << 10) ? from : (64 << 10);
		ssize_t got;
		int r;

		if (tail.len >= CONTEXT_LINE_KEEP)
			return -EFBIG;
		if ((r = sb_grow(&tail, (size_t)want)) < 0)
			return r;
		from -= want;
		memmove(tail.buf + want, tail.buf, tail.len);
		got = store_snap_read(fs->store, snap, tail.buf, (size_t)want, from);
		if (got != want)
			return got < 0 ? (int)got : -EIO;
		tail.len += (size_t)want;
		tail.buf[tail.len] = '\0';
		nl = memrchr(tail.buf, '\n', tail.len);
	}
	{
		size_t start = nl ? (size_t)(nl + 1 - tail.buf) : 0;

		*ret_len = tail.len - start;
		*ret = strndup(tail.buf ? tail.buf + start : "", *ret_len);
	}
	return *ret ? 0 : -ENOMEM;
}

/* The conversationHistoryDeletedRange member of a JSON object, into *ret (none if it has none). */
static void range_of(const char *json, size_t len, struct context_range *ret)
{
	size_t a, b;

	*ret = (struct context_range){ 0 };
	if (json && json_object_member(json, len, "conversationHistoryDeletedRange", &a, &b) == 0)
		context_range_parse(json + a, b - a, ret);
}

/* The doc at path as it stood after rev (0: now), as JSON Lines or as it is, and its time; -ENOENT if none. */
static int snap_at(struct fs *fs, const char *path, int64_t rev, bool jsonl, struct store_snap **ret,
		   int64_t *ret_mtime)
{
	struct store_stat ss;
	int r;

	if (rev)
		r = store_snap_open_at(fs->store, path, rev, jsonl, ret);
	else
		r = jsonl ? store_snap_open_jsonl(fs->store, path, ret) : store_snap_open(fs->store, path, ret);
	if (r < 0)
		return r;
	store_snap_stat(*ret, &ss);
	if (ret_mtime)
		*ret_mtime = ss.mtime_ns;
	return 0;
}

/* The range the last ui message carries (in the doc at path, at rev; 0: now); none is no error. */
static int ui_range(struct fs *fs, const char *path, int64_t rev, struct context_range *ret, int64_t *ret_mtime)
{
	struct store_snap *snap = NULL;
	_cleanup_free_ char *line = NULL;
	size_t len = 0;
	int r;

	*ret = (struct context_range){ 0 };
	r = snap_at(fs, path, rev, true, &snap, ret_mtime);
	if (r == 0) {
		r = last_line(fs, snap, &line, &len);
		store_snap_free(snap);
	}
	if (r == 0)
		range_of(line, len, ret);
	return r == -ENOENT ? 0 : r;
}

/* context_history.json (at rev; 0: now) into in; none is no error. */
static int edits_of_task(struct fs *fs, const char *task, int64_t rev, struct context_input *in, int64_t *ret_mtime)
{
	struct store_snap *snap = NULL;
	char path[96];
	int r;

	snprintf(path, sizeof(path), "tasks/%s/context_history.json", task);
	r = snap_at(fs, path, rev, false, &snap, ret_mtime);
	if (r == 0) {
		r = read_small(fs, snap, path, CONTEXT_EDITS_MAX, &in->edits, &in->edits_len);
		store_snap_free(snap);
	}
	return r == -ENOENT ? 0 : r;
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

int context_input_live(struct fs *fs, const char *task, struct context_input *ret)
{
	struct context_input in = { .max_ts = INT64_MAX };
	_cleanup_free_ char *item = NULL;
	struct store_stat ss;
	int64_t t = 0, item_mtime;
	size_t item_len;
	char path[96];
	int r;

	if (!store_is_task_id(task))
		return -ENOENT; /* a 3.x session: context_input_session() */
	snprintf(path, sizeof(path), "tasks/%s/api_conversation_history.json", task);
	if ((r = store_snap_open_jsonl(fs->store, path, &in.api)) < 0)
		return r;
	store_snap_stat(in.api, &ss);
	in.mtime_ns = ss.mtime_ns;
	r = store_history_item(fs->store, task, &item, &item_len, &item_mtime);
	if (r == 0)
		range_of(item, item_len, &in.range);
	if (r == 0 || r == -ENOENT) {
		struct context_range ui;

		snprintf(path, sizeof(path), "tasks/%s/ui_messages.json", task);
		r = ui_range(fs, path, 0, &ui, &t);
		if (r == 0 && !in.range.set)
			in.range = ui;
	}
	in.mtime_ns = later(in.mtime_ns, t);
	if (r == 0 && (r = edits_of_task(fs, task, 0, &in, &t)) == 0)
		in.mtime_ns = later(in.mtime_ns, t);
	if (r < 0) {
		context_input_release(&in);
		return r;
	}
	*ret = in;
	return 0;
}

int context_input_session(struct fs *fs, const char *session, char *compaction, size_t compaction_len,
			  int64_t mtime_ns, struct context_input *ret)
{
	struct context_input in = { .session = true, .compaction = compaction, .compaction_len = compaction_len };
	struct store_stat ss;
	char path[192];
	int r;

	if (!store_is_session_id(session) ||
	    (size_t)snprintf(path, sizeof(path), "sessions/%s/%s.messages.json", session, session) >= sizeof(path))
		r = -ENOENT;
	else
		r = store_snap_open_jsonl(fs->store, path, &in.api);
	if (r < 0) {
		context_input_release(&in);
		return r;
	}
	store_snap_stat(in.api, &ss);
	in.mtime_ns = later(ss.mtime_ns, mtime_ns);
	*ret = in;
	return 0;
}

int context_input_version(struct fs *fs, const char *task, int64_t rev, int64_t time_ns, struct context_input *ret)
{
	struct context_input in = { .max_ts = INT64_MAX, .mtime_ns = time_ns };
	char path[96];
	int r;

	if (!store_is_task_id(task))
		return -ENOENT;
	snprintf(path, sizeof(path), "tasks/%s/api_conversation_history.json", task);
	if ((r = store_snap_open_at(fs->store, path, rev, true, &in.api)) < 0)
		return r;
	snprintf(path, sizeof(path), "tasks/%s/ui_messages.json", task);
	r = ui_range(fs, path, rev, &in.range, NULL);
	if (r == 0)
		r = edits_of_task(fs, task, rev, &in, NULL);
	if (r < 0) {
		context_input_release(&in);
		return r;
	}
	*ret = in;
	return 0;
}

int context_input_checkpoint(struct fs *fs, const char *task, struct store_snap *api, const struct context_range *range,
			     int64_t ts_ms, struct context_input *ret)
{
	struct context_input in = { .api = api, .range = *range, .max_ts = ts_ms, .mtime_ns = ts_ms * 1000000 };
	int r = edits_of_task(fs, task, 0, &in, NULL);

	if (r < 0) {
		context_input_release(&in);
		return r;
	}
	*ret = in;
	return 0;
}
