/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * merge.c: three-way merges of whole-file rewrites (the rules, with examples,
 * are in docs/MERGE.md).
 *
 * The inputs are lists of element identities and hashes, not parsed JSON:
 * a merge of a 20 MB conversation touches only the elements that differ, and
 * the stored elements are referenced by row, never loaded. JSON is parsed
 * only to merge one history item field by field, or a task_metadata.json.
 *
 * The invariant every rule serves: an element goes away only when a writer
 * that had seen it removed it; everything else anyone wrote stays.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "store/json.h"
#include "store/merge.h"
#include "store/util.h"

int merge_list_push(struct merge_list *l, const struct merge_elem *e)
{
	if (ARRAY_GROW(l->v, l->n, l->alloc, 64) < 0)
		return -ENOMEM;
	l->v[l->n++] = *e;
	return 0;
}

void merge_list_release(struct merge_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].owned);
	free(l->v);
	l->v = NULL;
	l->n = l->alloc = 0;
}

/* ---- a small map from 64-bit keys to indexes (open addressing) ------------ */

struct map {
	uint64_t *keys;
	size_t *vals;
	bool *used;
	size_t cap;
};

/* Leaves an empty map: map_init() releases what it got on failure, and its callers release again. */
static void map_release(struct map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = (struct map){ 0 };
}

static int map_init(struct map *m, size_t n)
{
	m->cap = 16;
	while (m->cap < n * 2)
		m->cap *= 2;
	m->keys = calloc(m->cap, sizeof(*m->keys));
	m->vals = calloc(m->cap, sizeof(*m->vals));
	m->used = calloc(m->cap, sizeof(*m->used));
	if (!m->keys || !m->vals || !m->used) {
		map_release(m);
		return -ENOMEM;
	}
	return 0;
}

/* Adds key -> val unless key is there already (the first one wins). */
static void map_put(struct map *m, uint64_t key, size_t val)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (m->cap - 1);

	while (m->used[i]) {
		if (m->keys[i] == key)
			return;
		i = (i + 1) & (m->cap - 1);
	}
	m->used[i] = true;
	m->keys[i] = key;
	m->vals[i] = val;
}

static bool map_get(const struct map *m, uint64_t key, size_t *ret)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (m->cap - 1);

	while (m->used[i]) {
		if (m->keys[i] == key) {
			if (ret)
				*ret = m->vals[i];
			return true;
		}
		i = (i + 1) & (m->cap - 1);
	}
	return false;
}

/* The value of key, or NULL; with add, a new entry (valued SIZE_MAX) for a missing key. */
static size_t *map_at(struct map *m, uint64_t key, bool add)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (m->cap - 1);

	while (m->used[i]) {
		if (m->keys[i] == key)
			return &m->vals[i];
		i = (i + 1) & (m->cap - 1);
	}
	if (!add)
		return NULL;
	m->used[i] = true;
	m->keys[i] = key;
	m->vals[i] = SIZE_MAX;
	return &m->vals[i];
}

/*
 * The elements of a list that share a key (or a hash), in order, for taking
 * them one at a time: first maps each key to the first element not taken
 * yet, next links each element to the following one with its key. Taken
 * elements are skipped once for all, so taking everything costs O(n).
 */
struct chain {
	struct map first;
	size_t *next;
};

static void chain_release(struct chain *c)
{
	map_release(&c->first);
	free(c->next);
}

static int chain_init(struct chain *c, const struct merge_list *l, bool by_hash)
{
	int r = map_init(&c->first, l->n);

	if (r < 0)
		return r;
	c->next = malloc((l->n ? l->n : 1) * sizeof(*c->next));
	if (!c->next) {
		map_release(&c->first);
		return -ENOMEM;
	}
	for (size_t i = l->n; i-- > 0;) {
		size_t *first = map_at(&c->first, by_hash ? l->v[i].hash : l->v[i].key, true);

		c->next[i] = *first;
		*first = i;
	}
	return 0;
}

/* The first element of l with key that is still MERGE_FROM_HEAD (not taken), or SIZE_MAX. */
static size_t chain_find(struct chain *c, const struct merge_list *l, uint64_t key)
{
	size_t *at = map_at(&c->first, key, false);

	if (!at)
		return SIZE_MAX;
	while (*at != SIZE_MAX && l->v[*at].origin != MERGE_FROM_HEAD)
		*at = c->next[*at];
	return *at;
}

static int build_map(struct map *m, const struct merge_list *l, size_t from, bool by_hash)
{
	int r = map_init(m, l->n - from);

	if (r < 0)
		return r;
	for (size_t i = from; i < l->n; i++)
		map_put(m, by_hash ? l->v[i].hash : l->v[i].key, i);
	return 0;
}

static int push_as(struct merge_list *ret, const struct merge_elem *e, enum merge_origin origin)
{
	struct merge_elem c = *e;

	c.origin = origin;
	c.owned = NULL;
	return merge_list_push(ret, &c);
}

static size_t common_prefix(const struct merge_list *a, const struct merge_list *b)
{
	size_t i = 0;

	while (i < a->n && i < b->n && a->v[i].hash == b->v[i].hash)
		i++;
	return i;
}

/* ---- message streams ---------------------------------------------------------- */

static int merge_messages(const struct merge_list *base, const struct merge_list *head, const struct merge_list *new,
			  struct merge_list *ret, struct merge_stats *st)
{
	struct map base_hashes = { 0 }, new_keys = { 0 };
	struct chain head_hashes = { 0 }, head_keys = { 0 };
	struct merge_list tail = { 0 }, mine = { 0 };
	size_t p, k, P, i, j;
	int r;

	if (!base) {
		for (i = 0; i < new->n; i++)
			if ((r = push_as(ret, &new->v[i], MERGE_FROM_NEW)) < 0)
				return r;
		st->from_new = new->n;
		return 0;
	}
	p = common_prefix(new, base);
	k = common_prefix(head, base);
	P = p < k ? p : k;
	for (i = 0; i < P; i++)
		if ((r = push_as(ret, &head->v[i], MERGE_FROM_HEAD)) < 0)
			return r;
	st->from_head = P;
	if ((r = build_map(&base_hashes, base, P, true)) < 0 || (r = build_map(&new_keys, new, P, false)) < 0)
		goto out;
	/* Others' tail, less what the writer removed having seen it. */
	for (i = P; i < head->n; i++) {
		const struct merge_elem *h = &head->v[i];
		bool seen = map_get(&base_hashes, h->hash, NULL);

		if (seen && !map_get(&new_keys, h->key, NULL)) {
			st->removed++;
			continue;
		}
		if ((r = push_as(&tail, h, MERGE_FROM_HEAD)) < 0)
			goto out;
	}
	/*
	 * The writer's new or changed elements replace others' with the same
	 * identity, one for one: an identity can repeat (two messages of one
	 * millisecond, two equal messages without ts), and each of the writer's
	 * stands for one of head's. The one with the same bytes first, else the
	 * first one not replaced yet.
	 */
	if ((r = chain_init(&head_hashes, &tail, true)) < 0 || (r = chain_init(&head_keys, &tail, false)) < 0)
		goto out;
	for (i = P; i < new->n; i++) {
		const struct merge_elem *w = &new->v[i];
		size_t at;

		if (map_get(&base_hashes, w->hash, NULL))
			continue; /* unchanged since the base: head has it, or someone removed it */
		at = chain_find(&head_hashes, &tail, w->hash);
		if (at == SIZE_MAX || tail.v[at].key != w->key)
			at = chain_find(&head_keys, &tail, w->key);
		if (at != SIZE_MAX) {
			if (tail.v[at].hash != w->hash) {
				tail.v[at] = *w;
				tail.v[at].origin = MERGE_FROM_NEW;
			} else {
				tail.v[at].origin = MERGE_FROM_NEW; /* the same message from both */
				tail.v[at].json = w->json;
				tail.v[at].len = w->len;
				tail.v[at].ref = w->ref;
			}
			continue;
		}
		if ((r = push_as(&mine, w, MERGE_FROM_NEW)) < 0)
			goto out;
	}
	/* Interleave by ts; without ts, others' elements first. */
	for (i = 0, j = 0; i < tail.n || j < mine.n;) {
		const struct merge_elem *e;

		if (j >= mine.n || (i < tail.n && (!tail.v[i].has_ts || !mine.v[j].has_ts ||
						   tail.v[i].ts <= mine.v[j].ts)))
			e = &tail.v[i++];
		else
			e = &mine.v[j++];
		if (e->origin == MERGE_FROM_NEW)
			st->from_new++;
		else
			st->from_head++, st->others_kept++;
		if ((r = merge_list_push(ret, e)) < 0)
			goto out;
	}
	r = 0;
out:
	map_release(&base_hashes);
	map_release(&new_keys);
	chain_release(&head_hashes);
	chain_release(&head_keys);
	free(tail.v);
	free(mine.v);
	return r;
}

/* ---- task history ----------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * True if cJSON cannot merge v faithfully: v holds a number beyond a double's
 * range (1e400 is valid JSON; cJSON reads inf, finds it unequal to itself,
 * and writes null), or an object with two members of one name (JSON.parse
 * keeps the last, cJSON finds the first, and cJSON_Compare() finds such an
 * object unequal to itself). Also true if memory runs out: not merging is
 * always safe.
 */
static bool unmergeable(const cJSON *v)
{
	const cJSON *c;
	bool bad = false;

	if (cJSON_IsNumber(v))
		return !isfinite(v->valuedouble);
	if (cJSON_IsObject(v) && v->child && v->child->next) {
		size_t n = 0, k = 0;
		const char **names;

		cJSON_ArrayForEach(c, v)
			n++;
		names = malloc(n * sizeof(*names));
		if (!names)
			return true;
		cJSON_ArrayForEach(c, v)
			names[k++] = c->string;
		qsort(names, n, sizeof(*names), cmp_names);
		for (k = 1; k < n && !bad; k++)
			bad = strcmp(names[k - 1], names[k]) == 0;
		free(names);
	}
	cJSON_ArrayForEach(c, v)
		if (!bad)
			bad = unmergeable(c);
	return bad;
}

/*
 * Parses s[0, n) as one JSON value with nothing after it but white space,
 * that cJSON can merge faithfully (see unmergeable(); and no \u0000 in a
 * string): what it cannot is not merged, but kept as written.
 */
static cJSON *parse_exact(const char *s, size_t n)
{
	const char *end = NULL;
	cJSON *v;

	if (memmem(s, n, "\\u0000", 6))
		return NULL; /* cJSON ends a string at its \u0000: the rest would be lost */
	v = cJSON_ParseWithLengthOpts(s, n, &end, false);
	if (!v)
		return NULL;
	for (; end && end < s + n; end++)
		if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
			cJSON_Delete(v);
			return NULL;
		}
	if (unmergeable(v)) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* Sets member name of obj to item (case-sensitively), taking it; false on failure (item freed). */
static bool object_set(cJSON *obj, const char *name, cJSON *item)
{
	bool ok = cJSON_GetObjectItemCaseSensitive(obj, name)
			  ? cJSON_ReplaceItemInObjectCaseSensitive(obj, name, item)
			  : cJSON_AddItemToObject(obj, name, item);

	if (!ok)
		cJSON_Delete(item);
	return ok;
}

/* base, head and new versions of one history item, merged field by field. */
static char *merge_fields(const char *b, size_t blen, const char *h, size_t hlen, const char *n, size_t nlen)
{
	_cleanup_json_ cJSON *bj = parse_exact(b, blen);
	_cleanup_json_ cJSON *hj = parse_exact(h, hlen);
	_cleanup_json_ cJSON *nj = parse_exact(n, nlen);
	_cleanup_json_ cJSON *out = NULL;
	const cJSON *m;

	if (!cJSON_IsObject(bj) || !cJSON_IsObject(hj) || !cJSON_IsObject(nj))
		return NULL;
	out = cJSON_Duplicate(hj, true);
	if (!out)
		return NULL;
	cJSON_ArrayForEach(m, nj) {
		const cJSON *bm = cJSON_GetObjectItemCaseSensitive(bj, m->string);
		cJSON *copy;

		if (bm && cJSON_Compare(bm, m, true))
			continue; /* the writer left this field alone */
		copy = cJSON_Duplicate(m, true);
		if (!copy || !object_set(out, m->string, copy))
			return NULL;
	}
	cJSON_ArrayForEach(m, bj)
		if (!cJSON_GetObjectItemCaseSensitive(nj, m->string))
			cJSON_DeleteItemFromObjectCaseSensitive(out, m->string);
	return cJSON_PrintUnformatted(out);
}

static int merge_history(const struct merge_list *base, bool may_remove, const struct merge_list *head,
			 const struct merge_list *new,
			 merge_fetch_fn fetch, void *ctx, struct merge_list *ret, struct merge_stats *st)
{
	struct map bmap = { 0 }, nmap = { 0 }, hmap = { 0 };
	struct merge_list empty = { 0 };
	int r;

	if (!base)
		base = &empty;
	if ((r = build_map(&bmap, base, 0, false)) < 0 || (r = build_map(&nmap, new, 0, false)) < 0)
		goto out;
	/* hmap also takes the new items added below: room for both. */
	if ((r = map_init(&hmap, head->n + new->n)) < 0)
		goto out;
	for (size_t i = 0; i < head->n; i++)
		map_put(&hmap, head->v[i].key, i);
	for (size_t i = 0; i < head->n; i++) {
		const struct merge_elem *h = &head->v[i];
		size_t bi, ni;
		bool in_base = map_get(&bmap, h->key, &bi);

		if (!map_get(&nmap, h->key, &ni)) {
			if (in_base && may_remove) {
				st->removed++;
				continue;
			}
			st->others_kept++;
			st->from_head++;
			if ((r = push_as(ret, h, MERGE_FROM_HEAD)) < 0)
				goto out;
			continue;
		}
		const struct merge_elem *n = &new->v[ni];
		const struct merge_elem *b = in_base ? &base->v[bi] : NULL;
		bool writer_changed = !b || n->hash != b->hash;
		bool head_changed = !b || h->hash != b->hash;

		if (!writer_changed || h->hash == n->hash) {
			st->from_head++;
			r = push_as(ret, h, MERGE_FROM_HEAD);
		} else if (!head_changed || !b) {
			st->from_new++;
			r = push_as(ret, n, MERGE_FROM_NEW);
		} else {
			/* Both changed the item: field by field, the writer winning a tie. */
			_cleanup_free_ char *bjson = NULL;
			const char *bj = b->json;
			size_t blen = b->len;
			char *merged = NULL;

			if (!bj && fetch && fetch(ctx, b, &bjson, &blen) == 0)
				bj = bjson;
			if (bj && h->json)
				merged = merge_fields(bj, blen, h->json, h->len, n->json, n->len);
			if (merged) {
				struct merge_elem e = *n;

				e.origin = MERGE_FROM_FIELDS;
				e.json = e.owned = merged;
				e.len = strlen(merged);
				e.hash = hash64(merged, e.len);
				st->fields++;
				r = merge_list_push(ret, &e);
				if (r < 0)
					free(merged);
			} else {
				st->from_new++;
				r = push_as(ret, n, MERGE_FROM_NEW);
			}
		}
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < new->n; i++) {
		const struct merge_elem *n = &new->v[i];
		size_t bi;

		if (map_get(&hmap, n->key, NULL))
			continue;
		/* Removed by another writer meanwhile: back only if this writer changed it. */
		if (map_get(&bmap, n->key, &bi) && base->v[bi].hash == n->hash)
			continue;
		st->from_new++;
		if ((r = push_as(ret, n, MERGE_FROM_NEW)) < 0)
			goto out;
		map_put(&hmap, n->key, SIZE_MAX); /* one item per id */
	}
	r = 0;
out:
	map_release(&bmap);
	map_release(&nmap);
	map_release(&hmap);
	return r;
}

int merge_lists(enum merge_kind kind, const struct merge_list *base, bool base_read, const struct merge_list *head,
		const struct merge_list *new, merge_fetch_fn fetch, void *fetch_ctx,
		struct merge_list *ret, struct merge_stats *stats)
{
	struct merge_stats st = { 0 };
	int r;

	r = kind == MERGE_HISTORY ? merge_history(base, base_read, head, new, fetch, fetch_ctx, ret, &st)
				  : merge_messages(base, head, new, ret, &st);
	if (r < 0) {
		merge_list_release(ret);
		return r;
	}
	if (stats)
		*stats = st;
	return 0;
}

/* ---- task_metadata.json ----------------------------------------------------------- */

static const char *const metadata_logs[] = { "files_in_context", "model_usage", "environment_history" };

static bool in_array(const cJSON *arr, const cJSON *item)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr)
		if (cJSON_Compare(e, item, true))
			return true;
	return false;
}

static bool is_log(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(metadata_logs); i++)
		if (strcmp(name, metadata_logs[i]) == 0)
			return true;
	return false;
}

int merge_metadata(const char *base, size_t base_len, const char *head, size_t head_len, const char *new,
		   size_t new_len, char **ret_json, size_t *ret_len)
{
	_cleanup_json_ cJSON *bj = base ? parse_exact(base, base_len) : NULL;
	_cleanup_json_ cJSON *hj = parse_exact(head, head_len);
	_cleanup_json_ cJSON *nj = parse_exact(new, new_len);
	const cJSON *m;

	if (!cJSON_IsObject(hj) || !cJSON_IsObject(nj) || (base && !cJSON_IsObject(bj)))
		return -EINVAL;
	cJSON_ArrayForEach(m, nj) {
		const cJSON *bm = bj ? cJSON_GetObjectItemCaseSensitive(bj, m->string) : NULL;
		cJSON *hm = cJSON_GetObjectItemCaseSensitive(hj, m->string);
		const cJSON *e;

		if (is_log(m->string) && cJSON_IsArray(m) && cJSON_IsArray(hm)) {
			/* An append log: add what the writer added, unless head has it. */
			cJSON_ArrayForEach(e, m) {
				cJSON *copy;

				if ((bm && cJSON_IsArray(bm) && in_array(bm, e)) || in_array(hm, e))
					continue;
				copy = cJSON_Duplicate(e, true);
				if (!copy || !cJSON_AddItemToArray(hm, copy))
					return -ENOMEM;
			}
			continue;
		}
		if (bm && cJSON_Compare(bm, m, true))
			continue;
		{
			cJSON *copy = cJSON_Duplicate(m, true);

			if (!copy || !object_set(hj, m->string, copy))
				return -ENOMEM;
		}
	}
	if (bj)
		cJSON_ArrayForEach(m, bj)
			if (!is_log(m->string) && !cJSON_GetObjectItemCaseSensitive(nj, m->string))
				cJSON_DeleteItemFromObjectCaseSensitive(hj, m->string);
	return json_print_pretty(hj, ret_json, ret_len);
}
