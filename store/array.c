/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * array.c: the commit of an array doc.
 *
 * An array doc (taskHistory.json, api_conversation_history.json,
 * ui_messages.json, a session's messages) is kept one element a row in
 * `elems`, each with its exact bytes, the bytes before it ("pre": the comma
 * and any white space) and its byte offset in the rendered file. The file is
 * head + (pre + json)... + tail, so any byte range is found with one indexed
 * lookup on (doc_id, off) and nothing is ever rendered whole: a 20 MB
 * conversation streams.
 *
 * Rows are never rewritten in place. A commit keeps the longest prefix of
 * elements whose bytes are unchanged, closes the rest (rev_to = this
 * revision) and inserts the new tail with rev_from = this revision. A reader
 * that took a snapshot at revision R sees exactly the rows with
 * rev_from <= R < rev_to, so it reads the old or the new version, never a
 * mix; and a rewrite that drops messages keeps them as older revisions.
 *
 * A commit reads first (array_read(): the doc's row, the writer's bytes
 * scanned into elements, and of those the prefix already stored), then goes
 * one of two ways: if others committed since the writer's base, a
 * three-way merge (array_commit_merge(), merged.c); else the known prefix
 * stays and the rest is written after it (commit_prefix()). Each byte of a
 * writer's file is read once (src.h: a file another process may change has
 * what is read a second time copied first, src_own_rest()).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/array_internal.h"
#include "store/doc_internal.h"
#include "store/json.h"
#include "store/src.h"
#include "store/util.h"

/*
 * In the doc's transaction, with its row a->d: whether the commit merges,
 * the known prefix, the writer's bytes scanned into a->sv, the bytes before
 * the first element and after the last. 0, or -errno (-EINVAL logged).
 */
static int array_read(struct store *st, struct array_commit *a)
{
	const struct store_commit *c = a->c;
	const char *path = c->path;
	bool is_history = a->lay->ident == IDENT_ITEM_ID;
	struct json_error jerr = { 0 };
	int r;

	if (a->base && a->base->doc_id != a->d.id)
		a->base = NULL; /* the doc was made anew since */
	/*
	 * Merge when someone committed since this writer's base. A doc that was
	 * renamed away (Roo's safeWriteJson moves it to .bak before renaming the
	 * new file in) merges with its last content. History items are removed
	 * only by a writer that read them: a window's reload can race its own
	 * save, so a base that is the writer's own last write does not license
	 * removals, and such a commit always merges.
	 */
	a->merging = c->merge && a->d.format == DOC_ARRAY && (a->d.present ? a->d.nelems > 0 : a->base != NULL) &&
		     (!a->base || a->base->explicit_list || a->base->rev != a->d.rev || (is_history && !a->base->read) ||
		      c->ws_key);
	/* Otherwise what is stored unchanged is kept, and only what follows it is scanned. */
	a->rows = doc_rows_take(st, a->d.id, a->d.rev);
	if (a->merging || a->d.format != DOC_ARRAY || !a->d.present) {
		doc_rows_free(TAKE_PTR(a->rows)); /* this commit makes a new revision of the doc, or none */
	} else if ((r = known_prefix(st, &a->d, &a->src, &a->sv, &a->known, &a->rows)) < 0) {
		if (r != SRC_CUT_SHORT || !a->src.shared)
			return r;
		/* The file ended early: another process cut it. What it holds now is taken whole. */
		a->sv.n = 0;
		a->known = (struct json_known){ 0 };
		doc_rows_free(TAKE_PTR(a->rows));
	}
	/* A file others may change: what is read again from here on is copied first. */
	if (a->src.shared) {
		if ((r = src_own_rest(c, &a->src, a->known.end)) < 0) {
			log_err("cannot read the content to commit to '%s': %s; nothing stored changes", path,
				strerror(-r));
			return r;
		}
		a->len = a->src.len;
		a->size = (int64_t)a->len;
	}
	a->kept = a->sv.n;
	r = src_scan_array(&a->src, a->lay->array_member, &a->known, span_push, &a->sv, &a->head, &a->tail, &jerr);
	if (r == -EINVAL)
		log_warn("refusing to commit '%s': not %s: %s at byte %zu; nothing stored changes", path,
			 a->lay->array_member ? "a JSON object with an array of messages" : "a JSON array", jerr.msg,
			 jerr.offset);
	else if (r < 0)
		log_err("cannot read the content to commit to '%s': %s; nothing stored changes", path, strerror(-r));
	if (r < 0)
		return r;
	/*
	 * What comes before the first element and after the last: small, held.
	 * After a known prefix the head is the stored one, which known_prefix()
	 * found the same (and a shared file's head is read once).
	 */
	if (a->known.end)
		a->hd = a->d.head;
	else if ((r = src_get(&a->src, 0, a->head, &a->hb, &a->hd)) < 0)
		return r;
	return src_get(&a->src, a->tail, a->len - a->tail, &a->tb, &a->tl);
}

/* Whether the new content is the stored one as it is: same head, elements and tail. */
static bool nothing_changed(const struct array_commit *a)
{
	const struct doc_row *d = &a->d;

	return d->format == DOC_ARRAY && d->present && strlen(d->head) == a->head &&
	       memcmp(d->head, a->hd, a->head) == 0 && a->kept == a->sv.n && (int64_t)a->kept == d->nelems &&
	       strlen(d->tail) == a->len - a->tail && memcmp(d->tail, a->tl, a->len - a->tail) == 0;
}

/*
 * Nobody committed since the writer's base: the known prefix stays, the
 * rows after it are closed and the rest of a->sv inserted, as revision
 * a->rev (made here). 1 if nothing changed (no revision), 0, or -errno.
 */
static int commit_prefix(struct store *st, struct array_commit *a)
{
	const struct store_commit *c = a->c;
	const struct doc_row *d = &a->d;
	int64_t k = (int64_t)a->kept;
	int r;

	if (nothing_changed(a)) {
		a->rev = d->rev; /* no revision, no new mtime */
		return 1;
	}
	if ((r = revision_add(st, c->path, c->who, c->kind, a->now, &a->rev)) < 0)
		return r;
	a->lsize = 0;
	if (k > 0 && (r = line_end(st, d->id, k - 1, true, &a->lsize)) < 0)
		return r;
	if (d->format == DOC_ARRAY && (r = elems_close(st, d->id, k, a->rev)) < 0)
		return r;
	r = elems_insert(st, d->id, &a->src, &a->sv, a->kept, a->rev, a->lay, a->now, &a->lsize, a->rows);
	if (r < 0)
		return r;
	r = doc_update(st, d->id, DOC_ARRAY, (int64_t)a->len, a->now, a->rev, a->hd, a->head, a->tl, a->len - a->tail,
		       (int64_t)a->sv.n, a->lsize);
	if (r < 0)
		return r;
	snprintf(a->detail, sizeof(a->detail), "{\"kept\":%zu,\"superseded\":%" PRId64 ",\"added\":%zu,\"size\":%zu}",
		 a->kept, d->format == DOC_ARRAY && d->present ? d->nelems - k : 0, a->sv.n - a->kept, a->len);
	return 0;
}

/*
 * The writer's base from now on: after a merge, what it wrote (its view is
 * that, not what is stored); else the revision made. NULL on allocation
 * failure: the next commit has no base, which is safe.
 */
static struct store_base *new_base(struct array_commit *a)
{
	struct store_base *nb = NULL;

	if (!a->merged) {
		base_at_rev(a->d.id, a->rev, &nb);
		return nb;
	}
	nb = calloc(1, sizeof(*nb));
	if (!nb)
		return NULL;
	nb->doc_id = a->d.id;
	nb->rev = a->rev;
	nb->explicit_list = true;
	nb->list = a->written;
	for (size_t i = 0; i < nb->list.n; i++)
		nb->list.v[i].json = NULL;
	a->written = (struct merge_list){ 0 };
	return nb;
}

static void array_commit_release(struct array_commit *a)
{
	doc_row_release(&a->d);
	merge_list_release(&a->written);
	sb_release(&a->written_bytes);
	doc_rows_free(a->rows);
	free(a->sv.v);
	src_window_release(&a->hb);
	src_window_release(&a->tb);
	src_release(&a->src);
}

int commit_array(struct store *st, const struct store_commit *c, const struct doc_layout *lay,
		 struct store_base **ret_base, bool *ret_merged)
{
	struct array_commit a = { .c = c, .lay = lay, .base = c->base, .hb = SRC_WINDOW_INIT, .tb = SRC_WINDOW_INIT,
				  .written_bytes = SB_INIT, .now = c->time_ns ? c->time_ns : now_ns() };
	int r;

	src_of_commit(c, &a.src);
	a.len = a.src.len;
	a.size = (int64_t)a.len;
	store_lock(st);
	r = doc_begin(st, c->path, DOC_ARRAY, a.now, &a.d);
	if (r < 0)
		goto unlock; /* no transaction */
	r = array_read(st, &a);
	if (r == 0)
		r = a.merging ? array_commit_merge(st, &a) : commit_prefix(st, &a);
	if (r == 1) {
		tx_rollback(st); /* nothing changed */
		r = 0;
	} else if (r == 0) {
		r = revision_end(st, a.rev, a.d.id, a.detail);
	}
	if (r < 0) {
		tx_rollback(st);
		goto unlock;
	}
	/* Committed (or nothing changed): the rows are the doc's at rev; not from inside a batch. */
	if (a.rows && !st->batch_depth) {
		a.rows->rev = a.rev;
		doc_rows_keep(st, TAKE_PTR(a.rows));
	}
	if (ret_base)
		*ret_base = new_base(&a);
	if (ret_merged)
		*ret_merged = a.merged;
unlock:
	store_unlock(st);
	array_commit_release(&a);
	return r;
}
