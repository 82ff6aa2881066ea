/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_forget.c: `convfs forget` of a store that syncs. What is forgotten
 * leaves the shared log and every machine's store, not only this one's:
 *
 *   1. this store forgets it (store_forget_run(), as without the sync);
 *   2. its commits, the forget's own (each conversation without it) among
 *      them, are pushed;
 *   3. every entry of the log that holds it is written again without it:
 *      a message that holds the text becomes {"forgotten":true} and spaces,
 *      at its length (as in the store's older versions, so that what later
 *      entries keep of it lines up); a whole file's version is masked with
 *      '*', or made a removal where that is no valid JSON; a forgotten
 *      task's files leave the entries, and its history item is blanked;
 *   4. a forget entry is pushed: each other machine, when it pulls it,
 *      forgets the same in its own store, mounted (sync_forget_apply()),
 *      and tells the kernel to drop every page it kept.
 *
 * The forget entry carries the text (sealed, with a key), which the other
 * machines need to find it; once every machine the log knows has pulled
 * past it, the first to see that writes it again without the text
 * (sync_pg_tidy()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/array_internal.h"
#include "store/doc_internal.h"
#include "store/sync_internal.h"
#include "store/util.h"

/* An element blanked at its length, as the store blanks a forgotten message in its older versions. */
static void blank(char *e, size_t len)
{
	static const char forgotten[] = "{\"forgotten\":true}";
	size_t fl = sizeof(forgotten) - 1;

	if (len >= fl) {
		memcpy(e, forgotten, fl);
		memset(e + fl, ' ', len - fl);
	} else {
		memcpy(e, "{}", 2);
		memset(e + 2, ' ', len - 2);
	}
}

/* The text an array effect's elements are scanned in: head, "0" (its kept elements, one), the rest. */
struct virt {
	const char *head, *rest;
	size_t head_len, rest_len;
	bool kept; /* keep > 0: the "0" stands for what it keeps */
};

static int virt_read(void *ctx, size_t off, char *buf, size_t n)
{
	const struct virt *v = ctx;
	size_t before = v->kept ? v->head_len + 1 : 0;

	while (n > 0) {
		if (off < before) {
			*buf = off < v->head_len ? v->head[off] : '0';
			buf++, off++, n--;
			continue;
		}
		if (off - before + n > v->rest_len)
			return -EIO;
		memcpy(buf, v->rest + (off - before), n);
		return 0;
	}
	return 0;
}

/* Whether element json[0, len) of doc lay is forgotten by f. */
static bool hit(const struct store_forget *f, const struct doc_layout *lay, const char *json, size_t len)
{
	if (f->match && memmem(json, len, f->match, strlen(f->match)))
		return true;
	if (f->task && lay->ident == IDENT_ITEM_ID) {
		_cleanup_free_ char *id = json_member_string(json, len, "id");

		return id && strcmp(id, f->task) == 0;
	}
	return false;
}

/*
 * The elements of an array effect (head, rest in memory) that f forgets,
 * blanked in rest; the head and the tail masked. true if anything changed.
 */
static int array_forget(const struct store_forget *f, const char *path, char *head, size_t head_len, char *rest,
			size_t rest_len, bool kept, bool *ret)
{
	struct doc_layout lay = { 0 };
	struct virt v = { head, rest, head_len, rest_len, kept };
	struct json_reader rd = { .read = virt_read, .ctx = &v, .len = (kept ? head_len + 1 : 0) + rest_len };
	struct json_known known = { .head = head_len, .end = head_len + 1 };
	struct span_vec sv = { 0 };
	struct json_error jerr = { 0 };
	size_t base = kept ? head_len + 1 : 0, h = 0, t = 0;
	int r;

	if (doc_layout_of(path, &lay) < 0)
		return -EPROTO;
	r = json_scan_array_read(&rd, lay.array_member, kept ? &known : NULL, span_push, &sv, &h, &t, &jerr);
	if (r < 0) {
		free(sv.v);
		log_err("sync: an entry of '%s' in the log is not an array's (%s at byte %zu); left as it is", path,
			jerr.msg, jerr.offset);
		return r == -EINVAL ? 0 : r;
	}
	*ret = forget_mask(head, head_len, f->match);
	for (size_t i = 0; i < sv.n; i++) {
		char *e = rest + (sv.v[i].start - base);
		size_t len = sv.v[i].end - sv.v[i].start;

		if (hit(f, &lay, e, len)) {
			blank(e, len);
			*ret = true;
		}
	}
	/* The bytes around the elements (a session's fields), masked: the rest's tail, and its head when sent whole. */
	if (t >= base && forget_mask(rest + (t - base), rest_len - (t - base), f->match))
		*ret = true;
	if (!kept && sv.n && forget_mask(rest, sv.v[0].start, f->match))
		*ret = true;
	free(sv.v);
	return 0;
}

/* Reads bytes [at, at + n) of b into a buffer of its own (free()). */
static int slurp(const struct sync_bytes *b, size_t at, size_t n, char **ret)
{
	char *p = malloc(n + 1);
	int r;

	if (!p)
		return -ENOMEM;
	if ((r = sync_bytes_read(b, at, p, n)) < 0) {
		free(p);
		return r;
	}
	p[n] = '\0';
	*ret = p;
	return 0;
}

/* Whether path is a file of task (tasks/<task>/..., sessions/<task>/...). */
static bool of_task(const char *path, const char *task)
{
	char id[72];

	return task && store_path_conversation(path, id, sizeof(id)) == 0 && strcmp(id, task) == 0;
}

/* Writes effect e of p, changed by f, to out; *ret_changed if it was. */
static int effect_forget(const struct store_forget *f, const struct sync_bytes *p, const struct sync_effect *e,
			 struct sync_bytes *out, bool *ret_changed)
{
	_cleanup_free_ char *head = NULL, *rest = NULL;
	struct json_error jerr = { 0 };
	bool changed = false;
	int fmt = e->fmt, r;

	if ((r = slurp(p, e->head_at, e->head_len, &head)) < 0 || (r = slurp(p, e->rest_at, e->rest_len, &rest)) < 0)
		return r;
	if (fmt == SYNC_FMT_ARRAY)
		r = array_forget(f, e->path, head, e->head_len, rest, e->rest_len, e->keep > 0, &changed);
	else if (fmt != SYNC_FMT_REMOVED)
		changed = forget_mask(rest, e->rest_len, f->match);
	if (r < 0)
		return r;
	if (changed && fmt == SYNC_FMT_WHOLE && json_validate(rest, e->rest_len, &jerr) < 0)
		fmt = SYNC_FMT_REMOVED; /* masked, it is no JSON: the version goes, as the store's own does */
	sync_put_effect(out, e->path, fmt, e->prev, fmt == SYNC_FMT_ARRAY ? e->keep : 0, head,
			fmt == SYNC_FMT_ARRAY ? e->head_len : 0);
	sync_put_rest_len(out, fmt == SYNC_FMT_REMOVED ? 0 : e->rest_len);
	if (fmt != SYNC_FMT_REMOVED)
		sync_bytes_add(out, rest, e->rest_len);
	*ret_changed |= changed || fmt != e->fmt;
	return out->err;
}

int sync_forget_entry(const struct store_forget *f, const struct sync_bytes *p, struct sync_bytes *out,
		      bool *ret_changed)
{
	struct sync_entry en;
	struct sync_header h;
	uint32_t n = 0;
	int r;

	*ret_changed = false;
	if ((r = sync_decode(p, &en)) < 0)
		return r;
	for (size_t i = 0; i < en.neffects; i++)
		n += !(f->task && !f->match && of_task(en.effects[i].path, f->task));
	h = (struct sync_header){ .kind = en.kind, .path = en.path, .comm = en.comm, .time_ns = en.time_ns,
				  .pid = en.pid, .task_op = en.task_op, .task = en.task,
				  .forget_match = en.forget_match, .forget_task = en.forget_task, .neffects = n };
	*ret_changed = n != en.neffects;
	r = sync_put_header(out, &h);
	for (size_t i = 0; r == 0 && i < en.neffects; i++) {
		const struct sync_effect *e = &en.effects[i];

		if (f->task && !f->match && of_task(e->path, f->task))
			continue; /* a forgotten task's file: out of the log */
		r = effect_forget(f, p, e, out, ret_changed);
	}
	sync_entry_release(&en);
	return r;
}

int sync_forget_record_erase(const struct sync_bytes *p, struct sync_bytes *out)
{
	struct sync_entry en;
	struct sync_header h;
	int r = sync_decode(p, &en);

	if (r < 0)
		return r;
	h = (struct sync_header){ .kind = en.kind, .path = en.path, .comm = en.comm, .time_ns = en.time_ns,
				  .pid = en.pid, .forget_task = en.forget_task };
	r = sync_put_header(out, &h);
	sync_entry_release(&en);
	return r;
}

/* ---- a forget pulled from another machine ------------------------------------------------ */

int sync_forget_apply(struct store *st, const struct sync_in *in, const struct sync_entry *en)
{
	struct store_who who = { .pid = 0, .comm = "convfs-forget" };
	struct store_forget f = { .match = en->forget_match, .task = en->forget_task };
	int r = 0;

	if (f.match || f.task) {
		log_info("sync: another machine forgot %s: forgetting it here too", f.task && !f.match ? "a task" : "a text");
		r = store_forget_synced(st, &f, &who);
	}
	if (r == 0) {
		STORE_LOCK(st);
		char seq[24];

		snprintf(seq, sizeof(seq), "%" PRId64, in->seq);
		if ((r = tx_begin(st)) < 0)
			return r;
		if (store_run(st, "INSERT OR REPLACE INTO sync_seen(seq, rev, mine) VALUES (?1, 0, 0)", STORE_INTS(in->seq),
			      "cannot record a pulled forget") < 0 ||
		    store_run_args(st, "UPDATE meta SET value = ?1 WHERE key = 'sync_pulled'", STORE_TEXTS(seq), NULL, 0,
				   "cannot record a pulled forget") < 0) {
			tx_rollback(st);
			return -EIO;
		}
		r = tx_commit(st);
		if (r < 0)
			tx_rollback(st);
	}
	return r;
}
