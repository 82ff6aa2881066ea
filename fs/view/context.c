/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * context.c: a Cline task's conversation as the model saw it (context.h).
 *
 * Before each request the client (ContextManager's getAndAlterTruncatedMessages)
 * sends messages 0 and 1, then those after the end of its deleted range; takes
 * the tool results out of the first message after the cut (their tool calls
 * were cut); applies the latest of its edits to each block
 * (context_history.json: text that replaced a file read, the note that the
 * conversation was cut); and makes each assistant message's tool calls be
 * answered first, in order, by the next message (a missing answer reads
 * "result missing"). This file does the same, in the same order, with the same
 * quirks (only the range's end counts; an edit's block index is taken after
 * the cut's tool results are gone; a conversation of one message is sent as
 * it is), so that what it gives is what the client sent.
 *
 * It works one message at a time, in order: a message is parsed only when the
 * client would change it (its index has an edit, it follows the cut, it
 * answers tool calls, or it makes some), so the view streams every other
 * message from the store as it is, and the memory this takes is one message,
 * whatever the conversation's length.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs/view/context.h"
#include "store/json.h"
#include "store/util.h"

void context_range_parse(const char *s, size_t n, struct context_range *ret)
{
	_cleanup_json_ cJSON *v = s ? cJSON_ParseWithLength(s, n) : NULL;
	cJSON *a = cJSON_GetArrayItem(v, 0), *b = cJSON_GetArrayItem(v, 1);

	*ret = (struct context_range){ 0 };
	if (!cJSON_IsArray(v) || !cJSON_IsNumber(a) || !cJSON_IsNumber(b))
		return;
	ret->set = true;
	ret->start = (int64_t)a->valuedouble;
	ret->end = (int64_t)b->valuedouble;
}

/* ---- the edits ------------------------------------------------------------------ */

/* One block's latest edit: its text, or none at all (the client then drops the member). */
struct edit {
	double msg, block;
	cJSON *text; /* NULL: undefined */
};

struct context_edits {
	struct edit *v; /* by msg, then in the file's order */
	size_t n, alloc;
	size_t nmsgs;
};

void context_edits_free(struct context_edits *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		cJSON_Delete(e->v[i].text);
	free(e->v);
	free(e);
}

size_t context_edits_count(const struct context_edits *e)
{
	return e ? e->nmsgs : 0;
}

static void edits_clear(struct context_edits *e)
{
	for (size_t i = 0; i < e->n; i++)
		cJSON_Delete(e->v[i].text);
	e->n = 0;
	e->nmsgs = 0;
}

/* Drops the edits of msg made so far: a later entry of the same message replaces the earlier one, as in a Map. */
static void edits_forget(struct context_edits *e, double msg)
{
	size_t k = 0;

	for (size_t i = 0; i < e->n; i++) {
		if (e->v[i].msg == msg) {
			cJSON_Delete(e->v[i].text);
			continue;
		}
		e->v[k++] = e->v[i];
	}
	e->n = k;
}

/*
 * The latest of a block's updates ([ts, type, [text], meta] each, oldest
 * first) once those after max_ts are dropped from the end, as
 * truncateContextHistoryAtTimestamp() drops them; NULL for none.
 */
static cJSON *latest_update(cJSON *updates, int64_t max_ts)
{
	int n = cJSON_GetArraySize(updates);

	if (!cJSON_IsArray(updates))
		return NULL;
	while (n > 0) {
		cJSON *ts = cJSON_GetArrayItem(cJSON_GetArrayItem(updates, n - 1), 0);

		if (!cJSON_IsNumber(ts) || ts->valuedouble <= (double)max_ts)
			break;
		n--;
	}
	return n > 0 ? cJSON_GetArrayItem(updates, n - 1) : NULL;
}

/* Adds the edit of one block of message msg; 1 if the file is not one the client could load. */
static int edits_add_block(struct context_edits *e, double msg, cJSON *entry, int64_t max_ts)
{
	cJSON *block = cJSON_GetArrayItem(entry, 0), *latest, *type, *texts, *text;
	int r;

	if (!cJSON_IsArray(entry))
		return cJSON_IsObject(entry) ? 0 : 1; /* an object is an entry with no key; anything else throws */
	latest = latest_update(cJSON_GetArrayItem(entry, 1), max_ts);
	type = cJSON_GetArrayItem(latest, 1);
	texts = cJSON_GetArrayItem(latest, 2);
	/* Only text is ever edited; the block's index must be one an array has. */
	if (!latest || !cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsArray(texts) ||
	    !cJSON_IsNumber(block))
		return 0;
	for (size_t i = 0; i < e->n; i++) {
		if (e->v[i].msg == msg && e->v[i].block == block->valuedouble) { /* a Map keeps the last */
			cJSON_Delete(e->v[i].text);
			memmove(&e->v[i], &e->v[i + 1], (e->n - i - 1) * sizeof(e->v[0]));
			e->n--;
			break;
		}
	}
	text = cJSON_GetArrayItem(texts, 0);
	if ((r = ARRAY_GROW(e->v, e->n, e->alloc, 16)) < 0)
		return r;
	e->v[e->n] = (struct edit){ msg, block->valuedouble, NULL };
	if (text && !(e->v[e->n].text = cJSON_Duplicate(text, true)))
		return -ENOMEM;
	e->n++;
	return 0;
}

static int edit_cmp(const void *a, const void *b)
{
	const struct edit *x = a, *y = b;

	return x->msg < y->msg ? -1 : x->msg > y->msg;
}

int context_edits_parse(const char *json, size_t len, int64_t max_ts, struct context_edits **ret)
{
	_cleanup_json_ cJSON *root = json ? cJSON_ParseWithLength(json, len) : NULL;
	struct context_edits *e = calloc(1, sizeof(*e));
	cJSON *msgs = cJSON_IsArray(root) ? root : NULL, *m;
	int r = 0;

	if (!e)
		return -ENOMEM;
	/* [[messageIndex, [editType, [[blockIndex, updates], ...]]], ...] */
	cJSON_ArrayForEach(m, msgs) {
		cJSON *idx = cJSON_GetArrayItem(m, 0), *inner = cJSON_GetArrayItem(m, 1), *blocks, *b;

		blocks = cJSON_GetArrayItem(inner, 1);
		if (!cJSON_IsArray(m) || !cJSON_IsArray(inner) || (blocks && !cJSON_IsArray(blocks) && !cJSON_IsNull(blocks))) {
			r = 1;
			break;
		}
		if (!cJSON_IsNumber(idx))
			continue; /* a key no message index equals */
		edits_forget(e, idx->valuedouble);
		if (!cJSON_IsArray(blocks))
			continue;
		cJSON_ArrayForEach(b, blocks) {
			if ((r = edits_add_block(e, idx->valuedouble, b, max_ts)) != 0)
				break;
		}
		if (r != 0)
			break;
	}
	if (r < 0) {
		context_edits_free(e);
		return r;
	}
	if (r > 0) /* the client's load failed: it has no edits */
		edits_clear(e);
	/* Stable: the blocks of a message stay in the file's order. */
	for (size_t i = 1; i < e->n; i++) {
		struct edit x = e->v[i];
		size_t j = i;

		while (j > 0 && edit_cmp(&e->v[j - 1], &x) > 0) {
			e->v[j] = e->v[j - 1];
			j--;
		}
		e->v[j] = x;
	}
	for (size_t i = 0; i < e->n; i++)
		e->nmsgs += i == 0 || e->v[i].msg != e->v[i - 1].msg;
	*ret = e;
	return 0;
}

/* The edits of message index: [*ret_from, *ret_to) of e->v. */
static void edits_of(const struct context_edits *e, int64_t index, size_t *ret_from, size_t *ret_to)
{
	size_t lo = 0, hi = e ? e->n : 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e->v[mid].msg < (double)index)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_from = lo;
	while (hi < (e ? e->n : 0) && e->v[hi].msg == (double)index)
		hi++;
	*ret_to = hi;
}

/* ---- the pass over the messages ------------------------------------------------- */

struct context_walk {
	const struct context_edits *edits;
	int64_t total, from; /* kept: 0, 1, and from on */
	cJSON *calls;        /* the tool_use ids of the last kept message, if it is an assistant's */
};

int context_walk_new(const struct context_edits *edits, const struct context_range *range, int64_t total,
		     struct context_walk **ret)
{
	struct context_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->edits = edits;
	w->total = total;
	/*
	 * The client keeps slice(0, 2) and slice(end + 1). An end below 1
	 * would send message 1 twice; the client never makes one (its ranges
	 * end on an assistant's message, the first being message 1).
	 */
	w->from = range && range->set && range->end >= 1 ? range->end + 1 : 2;
	*ret = w;
	return 0;
}

void context_walk_free(struct context_walk *w)
{
	if (!w)
		return;
	cJSON_Delete(w->calls);
	free(w);
}

static bool is_type(const cJSON *block, const char *type)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(block, "type");

	return cJSON_IsString(t) && strcmp(t->valuestring, type) == 0;
}

static bool has_role(const cJSON *msg, const char *role)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(msg, "role");

	return cJSON_IsString(r) && strcmp(r->valuestring, role) == 0;
}

/* JavaScript's truthiness of a JSON value. */
static bool truthy(const cJSON *v)
{
	if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return false;
	if (cJSON_IsString(v))
		return v->valuestring[0] != '\0';
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0 && !isnan(v->valuedouble);
	return true;
}

/* Two ids equal as JavaScript's === and a Map's keys see them (strings and numbers). */
static bool same_id(const cJSON *a, const cJSON *b)
{
	if (cJSON_IsString(a) && cJSON_IsString(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
		return a->valuedouble == b->valuedouble;
	return a == b;
}

/* Takes the tool results out of the first message after the cut; true if there were any. */
static bool drop_orphans(cJSON *msg)
{
	cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content"), *b, *next;
	bool any = false;

	if (!has_role(msg, "user") || !cJSON_IsArray(content))
		return false;
	for (b = content->child; b; b = next) {
		next = b->next;
		if (is_type(b, "tool_result")) {
			cJSON_Delete(cJSON_DetachItemViaPointer(content, b));
			any = true;
		}
	}
	return any;
}

/* setTextInBlock(): a text block's text, or that of a tool result's first part. true if it changed. */
static int set_text(cJSON *block, const cJSON *text, bool *changed)
{
	cJSON *target = NULL, *old, *dup;

	if (is_type(block, "text")) {
		target = block;
	} else if (is_type(block, "tool_result")) {
		cJSON *content = cJSON_GetObjectItemCaseSensitive(block, "content");
		cJSON *inner = cJSON_IsArray(content) ? cJSON_GetArrayItem(content, 0) : NULL;

		if (cJSON_IsObject(inner) && is_type(inner, "text"))
			target = inner;
	}
	if (!target)
		return 0;
	old = cJSON_GetObjectItemCaseSensitive(target, "text");
	if (!text) { /* undefined: JSON.stringify leaves the member out */
		if (old) {
			cJSON_Delete(cJSON_DetachItemViaPointer(target, old));
			*changed = true;
		}
		return 0;
	}
	if (old && cJSON_Compare(old, text, true))
		return 0;
	if (!(dup = cJSON_Duplicate(text, true)))
		return -ENOMEM;
	if (old ? !cJSON_ReplaceItemInObjectCaseSensitive(target, "text", dup) : !cJSON_AddItemToObject(target, "text", dup)) {
		cJSON_Delete(dup);
		return -ENOMEM;
	}
	*changed = true;
	return 0;
}

static int apply_edits(const struct context_walk *w, int64_t index, cJSON *msg, bool *changed)
{
	cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	size_t from, to;
	int r = 0;

	edits_of(w->edits, index, &from, &to);
	for (size_t i = from; r == 0 && i < to && cJSON_IsArray(content); i++) {
		double b = w->edits->v[i].block;
		cJSON *block;

		if (b < 0 || b != floor(b) || b >= cJSON_GetArraySize(content))
			continue;
		block = cJSON_GetArrayItem(content, (int)b);
		if (cJSON_IsObject(block))
			r = set_text(block, w->edits->v[i].text, changed);
	}
	return r;
}

/* The ids of an assistant message's tool calls, in order (NULL: none, or not an assistant's). */
static int tool_calls_of(const cJSON *msg, cJSON **ret)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content"), *b;
	cJSON *ids = NULL;

	*ret = NULL;
	if (!has_role(msg, "assistant") || !cJSON_IsArray(content))
		return 0;
	cJSON_ArrayForEach(b, content) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
		cJSON *dup;

		if (!is_type(b, "tool_use") || !truthy(id))
			continue;
		if ((!ids && !(ids = cJSON_CreateArray())) || !(dup = cJSON_Duplicate(id, true))) {
			cJSON_Delete(ids);
			return -ENOMEM;
		}
		cJSON_AddItemToArray(ids, dup);
	}
	*ret = ids;
	return 0;
}

/* The result in results (tool_use_id → block, the last of each id) for id, or NULL. */
static cJSON *result_for(cJSON *results, const cJSON *id)
{
	cJSON *r;

	cJSON_ArrayForEach(r, results)
		if (same_id(cJSON_GetObjectItemCaseSensitive(r, "tool_use_id"), id))
			return r;
	return NULL;
}

/*
 * ensureToolResultsFollowToolUse() for one user message after an assistant
 * message that made the tool calls calls: their results first, in the calls'
 * order (a missing one made up), then the other blocks; results of other
 * calls are dropped. Done only if the message is not so already.
 */
static int answer_calls(const cJSON *calls, cJSON *msg, bool *changed)
{
	cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content"), *b, *id, *out = NULL;
	_cleanup_json_ cJSON *results = cJSON_CreateArray(), *others = cJSON_CreateArray();
	int nresults = 0, expected = 0, ncalls = cJSON_GetArraySize(calls);
	bool update = false;

	if (!results || !others)
		return -ENOMEM;
	if (!cJSON_IsArray(content)) { /* the client makes it [] first */
		cJSON *empty = cJSON_CreateArray();

		if (!empty)
			return -ENOMEM;
		if (content ? !cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", empty)
			    : !cJSON_AddItemToObject(msg, "content", empty)) {
			cJSON_Delete(empty);
			return -ENOMEM;
		}
		content = empty;
		*changed = true;
	}
	cJSON_ArrayForEach(b, content) {
		cJSON *rid = cJSON_GetObjectItemCaseSensitive(b, "tool_use_id"), *old;

		if (is_type(b, "tool_result") && truthy(rid)) {
			old = result_for(results, rid);
			if (old) /* a Map keeps the last block of an id */
				cJSON_Delete(cJSON_DetachItemViaPointer(results, old));
			else
				nresults++;
			if (!cJSON_AddItemReferenceToArray(results, b))
				return -ENOMEM;
		} else if (!cJSON_AddItemReferenceToArray(others, b)) {
			return -ENOMEM;
		}
	}
	if (nresults > 0) {
		cJSON_ArrayForEach(b, content) {
			if (expected >= ncalls)
				break;
			if (is_type(b, "tool_result") &&
			    same_id(cJSON_GetObjectItemCaseSensitive(b, "tool_use_id"), cJSON_GetArrayItem(calls, expected))) {
				expected++;
			} else {
				update = true;
				break;
			}
		}
		if (!update && expected < nresults)
			update = true;
	}
	cJSON_ArrayForEach(id, calls)
		if (!result_for(results, id))
			update = true;
	if (!update)
		return 0;
	if (!(out = cJSON_CreateArray()))
		return -ENOMEM;
	cJSON_ArrayForEach(id, calls) {
		cJSON *r = result_for(results, id), *dup;

		if (r)
			dup = cJSON_Duplicate(r, true);
		else if ((dup = cJSON_CreateObject()) &&
			 (!cJSON_AddStringToObject(dup, "type", "tool_result") ||
			  !cJSON_AddItemToObject(dup, "tool_use_id", cJSON_Duplicate(id, true)) ||
			  !cJSON_AddStringToObject(dup, "content", "result missing"))) {
			cJSON_Delete(dup);
			dup = NULL;
		}
		if (!dup) {
			cJSON_Delete(out);
			return -ENOMEM;
		}
		if (!r) /* a made-up result counts as one from then on */
			cJSON_AddItemReferenceToArray(results, dup);
		cJSON_AddItemToArray(out, dup);
	}
	cJSON_ArrayForEach(b, others) {
		cJSON *dup = cJSON_Duplicate(b, true);

		if (!dup) {
			cJSON_Delete(out);
			return -ENOMEM;
		}
		cJSON_AddItemToArray(out, dup);
	}
	if (!cJSON_Compare(content, out, true))
		*changed = true;
	if (!cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", out)) {
		cJSON_Delete(out);
		return -ENOMEM;
	}
	return 0;
}

enum context_need context_walk_need(struct context_walk *w, int64_t index, bool mentions_use, bool mentions_result)
{
	size_t from, to;

	if (w->total <= 1) /* the client sends a conversation of one message as it is */
		return CONTEXT_AS_IS;
	if (index >= 2 && index < w->from)
		return CONTEXT_LEFT_OUT;
	edits_of(w->edits, index, &from, &to);
	if (from < to || w->calls || mentions_use || (index == w->from && w->from > 2 && mentions_result))
		return CONTEXT_PARSE;
	return CONTEXT_AS_IS;
}

/* True if bytes may hold what the client changes: a tool call or its result. */
static bool mentions(const char *json, size_t len, const char *word)
{
	return memmem(json, len, word, strlen(word)) != NULL;
}

int context_walk_next(struct context_walk *w, int64_t index, const char *json, size_t len, bool *ret_kept,
		      char **ret_json, size_t *ret_len)
{
	_cleanup_json_ cJSON *msg = NULL;
	enum context_need need = context_walk_need(w, index, mentions(json, len, CONTEXT_TOOL_USE),
						   mentions(json, len, CONTEXT_TOOL_RESULT));
	cJSON *calls = NULL;
	bool changed = false;
	int r;

	*ret_json = NULL;
	*ret_len = 0;
	*ret_kept = need != CONTEXT_LEFT_OUT;
	if (need != CONTEXT_PARSE) {
		if (need == CONTEXT_AS_IS) { /* it makes no tool calls */
			cJSON_Delete(w->calls);
			w->calls = NULL;
		}
		return 0;
	}
	msg = cJSON_ParseWithLength(json, len);
	if (!msg)
		return -EINVAL;
	if (index == w->from && w->from > 2)
		changed |= drop_orphans(msg);
	if ((r = apply_edits(w, index, msg, &changed)) < 0)
		return r;
	if (w->calls && has_role(msg, "user") && (r = answer_calls(w->calls, msg, &changed)) < 0)
		return r;
	if ((r = tool_calls_of(msg, &calls)) < 0)
		return r;
	cJSON_Delete(w->calls);
	w->calls = calls;
	if (!changed)
		return 0;
	*ret_json = cJSON_PrintUnformatted(msg);
	if (!*ret_json)
		return -ENOMEM;
	*ret_len = strlen(*ret_json);
	return 0;
}
