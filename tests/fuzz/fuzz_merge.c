/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_merge.c: libFuzzer target for the three-way merges of store/merge.c:
 * merge_lists() for taskHistory.json and the message streams, and
 * merge_metadata() for task_metadata.json.
 *
 * Input: one mode byte, then the texts of base, head and new, separated by
 * NUL bytes (JSON text holds none). The lists are made from the texts as the
 * store makes them (store/array.c): elements from json_scan_array(), a history
 * item's key from its "id", a message's from its "ts", else the hash of its
 * bytes; head elements carry their bytes only for history (load_rows()), base
 * elements only for history and not for a writer's own merged commit (an
 * explicit list, whose bytes are fetched by hash). Only what the store would
 * merge is merged: arrays that json_scan_array() accepts. task_metadata.json
 * texts go in as they are; the checks on the result apply when all three
 * validate, as the store's do.
 *
 * Checked, beyond what ASan, UBSan and LeakSanitizer see:
 *
 *   - every element of the result is a head element unchanged, a new element
 *     unchanged, or a history item merged field by field that is a JSON
 *     object with the item's id; the statistics add up to the result;
 *   - the result, laid out as write_merged() lays it out, is a JSON array
 *     that json_scan_array() splits into exactly those elements;
 *   - docs/MERGE.md's invariant: an element goes away only when the writer
 *     had seen it (it is in base); everything the writer added is there;
 *     without a base, a message stream is what the writer wrote;
 *   - identical ours and theirs (head = new) give head; a writer that changed
 *     nothing (new = base) gives head; unique keys stay unique;
 *   - merge_metadata(): the result is valid JSON laid out as JSON.stringify(x,
 *     null, 2) would (the store stores it without validating it again), and
 *     follows the rules for members and append logs of docs/MERGE.md.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/json.h"
#include "store/layout.h"
#include "store/merge.h"
#include "tests/fuzz/fuzz.h"
#include "store/util.h"

enum {
	MODE_KIND = 0x03,        /* 0: history; 1 and 3: messages; 2: task_metadata.json */
	MODE_BASE = 0x04,        /* the writer has a base */
	MODE_READ = 0x08,        /* ... that it read (history items may be removed) */
	MODE_EXPLICIT = 0x10,    /* ... that is its own merged commit: base bytes fetched by hash */
	MODE_FETCH_FAILS = 0x20, /* ... and the fetch finds nothing */
	MODE_SAME = 0x40,        /* new is head's text: identical ours and theirs */
};

/* Refs tell where an element came from: new's are indexes, as in the store. */
#define HEAD_REF0 ((int64_t)1 << 40)
#define BASE_REF0 ((int64_t)1 << 41)

struct span {
	size_t pre, start, end;
};

/* One of base, head and new: its text, its scan and its list. */
struct side {
	const char *s;
	size_t n, head, tail;
	struct span *sp;
	size_t nsp, alloc;
	struct merge_list l;
};

static int add_span(void *ctx, size_t pre, size_t start, size_t end)
{
	struct side *d = ctx;

	if (d->nsp == d->alloc) {
		size_t na = d->alloc ? d->alloc * 2 : 64;
		struct span *p = realloc(d->sp, na * sizeof(*p));

		CHECK_ALLOC(p);
		d->sp = p;
		d->alloc = na;
	}
	d->sp[d->nsp++] = (struct span){ pre, start, end };
	return 0;
}

static void side_release(struct side *d)
{
	free(d->sp);
	merge_list_release(&d->l);
}

/* ---- identities: the store's own rules (store/layout.c) ------------------------ */

static void identify(struct merge_elem *e, const char *json, size_t len, enum merge_kind kind)
{
	e->ts = 0;
	doc_elem_identity(kind == MERGE_HISTORY ? IDENT_ITEM_ID : IDENT_TS, json, len, e, NULL);
}

/* Scans d's text and makes its list; false if the store would refuse the text. */
static bool side_load(struct side *d, enum merge_kind kind, int64_t ref0, bool with_bytes)
{
	if (json_scan_array(d->s, d->n, add_span, d, &d->head, &d->tail, NULL) < 0)
		return false;
	for (size_t i = 0; i < d->nsp; i++) {
		const char *j = d->s + d->sp[i].start;
		size_t len = d->sp[i].end - d->sp[i].start;
		struct merge_elem e = { 0 };

		identify(&e, j, len, kind);
		e.json = with_bytes ? j : NULL;
		e.len = len;
		e.ref = ref0 + (int64_t)i;
		e.origin = ref0 ? MERGE_FROM_HEAD : MERGE_FROM_NEW;
		CHECK(merge_list_push(&d->l, &e) == 0);
	}
	return true;
}

static const char *elem_text(const struct side *d, size_t i)
{
	return d->s + d->sp[i].start;
}

static size_t elem_len(const struct side *d, size_t i)
{
	return d->sp[i].end - d->sp[i].start;
}

/* fetch_by_hash() of array.c: the bytes of a base element, found by hash among the doc's rows. */
struct fetch_ctx {
	const struct side *base;
	bool fails;
	size_t calls;
};

static int fetch(void *ctx, const struct merge_elem *e, char **ret_json, size_t *ret_len)
{
	struct fetch_ctx *f = ctx;

	f->calls++;
	CHECK(e->json == NULL);
	if (f->fails)
		return -ENOENT;
	for (size_t i = 0; i < f->base->l.n; i++)
		if (f->base->l.v[i].hash == e->hash) {
			char *p = strndup(elem_text(f->base, i), elem_len(f->base, i));

			CHECK_ALLOC(p);
			*ret_json = p;
			*ret_len = strlen(p);
			return 0;
		}
	return -ENOENT;
}

/* ---- sets of 64-bit values ---------------------------------------------------- */

struct set {
	uint64_t *v;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The keys (or hashes) of l; *ret_unique tells whether they were all different. */
static struct set set_of(const struct merge_list *l, bool hashes, bool *ret_unique)
{
	struct set s = { malloc((l->n ? l->n : 1) * sizeof(uint64_t)), l->n };

	CHECK_ALLOC(s.v);
	for (size_t i = 0; i < l->n; i++)
		s.v[i] = hashes ? l->v[i].hash : l->v[i].key;
	qsort(s.v, s.n, sizeof(*s.v), cmp_u64);
	if (ret_unique) {
		*ret_unique = true;
		for (size_t i = 1; i < s.n; i++)
			if (s.v[i] == s.v[i - 1])
				*ret_unique = false;
	}
	return s;
}

static bool set_has(const struct set *s, uint64_t x)
{
	return s->n && bsearch(&x, s->v, s->n, sizeof(x), cmp_u64) != NULL;
}

/* Keys to the first element that has each, as the merge's maps answer (the first one wins). */
struct key_at {
	uint64_t key;
	size_t at;
};

struct index {
	struct key_at *v;
	size_t n;
};

static int cmp_key_at(const void *a, const void *b)
{
	const struct key_at *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static struct index index_of(const struct merge_list *l)
{
	struct index ix = { malloc((l->n ? l->n : 1) * sizeof(struct key_at)), l->n };

	CHECK_ALLOC(ix.v);
	for (size_t i = 0; i < l->n; i++)
		ix.v[i] = (struct key_at){ l->v[i].key, i };
	qsort(ix.v, ix.n, sizeof(*ix.v), cmp_key_at);
	return ix;
}

/* The position of the first element with key, or SIZE_MAX. */
static size_t index_first(const struct index *ix, uint64_t key)
{
	size_t lo = 0, hi = ix->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->n && ix->v[lo].key == key ? ix->v[lo].at : SIZE_MAX;
}

/* ---- merge_lists() ------------------------------------------------------------- */

/* The bytes a result element stands for. */
static const char *result_text(const struct side *head, const struct merge_elem *e, size_t *ret_len)
{
	if (e->origin == MERGE_FROM_HEAD) {
		size_t i = (size_t)(e->ref - HEAD_REF0);

		*ret_len = elem_len(head, i);
		return elem_text(head, i);
	}
	*ret_len = e->len;
	return e->json;
}

static void check_elements(enum merge_kind kind, const struct side *head, const struct side *new,
			   const struct merge_list *ret)
{
	for (size_t i = 0; i < ret->n; i++) {
		const struct merge_elem *e = &ret->v[i];

		switch (e->origin) {
		case MERGE_FROM_HEAD: {
			const struct merge_elem *h;

			CHECK(e->ref >= HEAD_REF0 && e->ref - HEAD_REF0 < (int64_t)head->l.n);
			h = &head->l.v[e->ref - HEAD_REF0];
			CHECK(e->key == h->key && e->hash == h->hash && e->len == h->len && e->json == h->json);
			CHECK(e->has_ts == h->has_ts && e->ts == h->ts && e->owned == NULL);
			break;
		}
		case MERGE_FROM_NEW: {
			const struct merge_elem *n;

			CHECK(e->ref >= 0 && e->ref < (int64_t)new->l.n);
			n = &new->l.v[e->ref];
			CHECK(e->key == n->key && e->hash == n->hash && e->len == n->len && e->json == n->json);
			CHECK(e->has_ts == n->has_ts && e->ts == n->ts && e->owned == NULL);
			break;
		}
		case MERGE_FROM_FIELDS: {
			struct merge_elem m = { 0 };

			CHECK(kind == MERGE_HISTORY);
			CHECK(e->owned != NULL && e->json == e->owned && e->len == strlen(e->owned));
			CHECK(e->hash == hash64(e->owned, e->len));
			CHECK(json_validate(e->owned, e->len, NULL) == 0 && e->owned[0] == '{');
			identify(&m, e->owned, e->len, kind);
			CHECK(m.key == e->key); /* still the same item */
			CHECK(e->ref >= 0 && e->ref < (int64_t)new->l.n && new->l.v[e->ref].key == e->key);
			break;
		}
		default:
			CHECK(!"an element of unknown origin");
		}
	}
}

/* Lays out the result as write_merged() does, and checks that the store could read it back. */
static void check_rendering(const struct side *head, const struct side *new, const struct merge_list *ret)
{
	_cleanup_sb_ struct sb out = SB_INIT;
	const char *first_pre = new->nsp ? new->s + new->sp[0].pre : "", *sep = ",";
	size_t first_pre_len = new->nsp ? new->sp[0].start - new->sp[0].pre : 0, sep_len = 1;
	struct side back = { 0 };

	if (new->nsp >= 2) {
		sep = new->s + new->sp[1].pre;
		sep_len = new->sp[1].start - new->sp[1].pre;
	}
	CHECK(sb_add(&out, new->s, new->head) == 0);
	for (size_t i = 0; i < ret->n; i++) {
		size_t len;
		const char *t = result_text(head, &ret->v[i], &len);

		CHECK(sb_add(&out, i ? sep : first_pre, i ? sep_len : first_pre_len) == 0);
		CHECK(sb_add(&out, t, len) == 0);
	}
	CHECK(sb_add(&out, new->s + new->tail, new->n - new->tail) == 0);

	back.s = out.buf;
	back.n = out.len;
	CHECK(json_scan_array(back.s, back.n, add_span, &back, &back.head, &back.tail, NULL) == 0);
	CHECK(back.nsp == ret->n);
	for (size_t i = 0; i < ret->n; i++) {
		size_t len;
		const char *t = result_text(head, &ret->v[i], &len);

		CHECK(elem_len(&back, i) == len && memcmp(elem_text(&back, i), t, len) == 0);
	}
	side_release(&back);
}

/* The result is list l's elements, in order, text for text. */
static bool result_is(const struct side *head, const struct merge_list *ret, const struct side *l)
{
	if (ret->n != l->nsp)
		return false;
	for (size_t i = 0; i < ret->n; i++) {
		size_t len;
		const char *t = result_text(head, &ret->v[i], &len);

		if (len != elem_len(l, i) || memcmp(t, elem_text(l, i), len) != 0)
			return false;
	}
	return true;
}

static bool same_text(const struct side *a, const struct side *b)
{
	return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
}

static void check_rules(enum merge_kind kind, const struct side *base, bool base_read, const struct side *head,
			const struct side *new, const struct merge_list *ret)
{
	bool head_unique, new_unique, ret_unique;
	struct set hk = set_of(&head->l, false, &head_unique), nk = set_of(&new->l, false, &new_unique);
	struct set rk = set_of(ret, false, &ret_unique), rh = set_of(ret, true, NULL);
	struct set bh = base ? set_of(&base->l, true, NULL) : (struct set){ 0 };
	struct set bk = base ? set_of(&base->l, false, NULL) : (struct set){ 0 };
	struct set rk_new = { malloc((ret->n ? ret->n : 1) * sizeof(uint64_t)), 0 };

	CHECK_ALLOC(rk_new.v);
	for (size_t i = 0; i < ret->n; i++)
		if (ret->v[i].origin != MERGE_FROM_HEAD)
			rk_new.v[rk_new.n++] = ret->v[i].key;
	qsort(rk_new.v, rk_new.n, sizeof(*rk_new.v), cmp_u64);

	if (kind == MERGE_MESSAGES) {
		if (!base) {
			/* No base: a plain overwrite. */
			CHECK(ret->n == new->l.n);
			for (size_t i = 0; i < ret->n; i++)
				CHECK(ret->v[i].origin == MERGE_FROM_NEW && ret->v[i].ref == (int64_t)i);
		}
		/* What the writer added is there. */
		for (size_t i = 0; i < new->l.n; i++)
			if (!set_has(&bh, new->l.v[i].hash))
				CHECK(set_has(&rh, new->l.v[i].hash));
		/* Others' messages stay, or the writer's version of them, unless the writer had seen them. */
		for (size_t i = 0; base && i < head->l.n; i++) {
			const struct merge_elem *h = &head->l.v[i];

			CHECK(set_has(&rh, h->hash) || set_has(&bh, h->hash) || set_has(&rk_new, h->key));
		}
	} else {
		struct index bx = base ? index_of(&base->l) : (struct index){ 0 };

		for (size_t i = 0; i < head->l.n; i++) {
			const struct merge_elem *h = &head->l.v[i];
			bool removable = base && base_read && set_has(&bk, h->key) && !set_has(&nk, h->key);

			CHECK(removable || set_has(&rk, h->key));
		}
		for (size_t i = 0; i < new->l.n; i++) {
			const struct merge_elem *n = &new->l.v[i];
			size_t j = index_first(&bx, n->key);
			/* Removed by another writer, and this one left it as it was: stays removed. */
			bool unchanged_deleted = j != SIZE_MAX && base->l.v[j].hash == n->hash && !set_has(&hk, n->key);

			CHECK(unchanged_deleted || set_has(&rk, n->key));
		}
		free(bx.v);
	}
	if (head_unique && new_unique)
		CHECK(ret_unique);
	/* Identical ours and theirs; a writer that changed nothing. */
	if (same_text(head, new) && (kind == MERGE_MESSAGES || new_unique))
		CHECK(result_is(head, ret, head));
	if (base && same_text(base, new) && (kind == MERGE_MESSAGES || new_unique))
		CHECK(result_is(head, ret, head));

	free(hk.v);
	free(nk.v);
	free(rk.v);
	free(rh.v);
	free(bh.v);
	free(bk.v);
	free(rk_new.v);
}

static void fuzz_lists(enum merge_kind kind, unsigned mode, struct side *base, struct side *head, struct side *new)
{
	bool history = kind == MERGE_HISTORY, has_base = mode & MODE_BASE;
	struct fetch_ctx fc = { base, mode & MODE_FETCH_FAILS, 0 };
	struct merge_list ret = { 0 };
	struct merge_stats st;
	int r;

	if ((has_base && !side_load(base, kind, BASE_REF0, history && !(mode & MODE_EXPLICIT))) ||
	    !side_load(head, kind, HEAD_REF0, history) || !side_load(new, kind, 0, true))
		return;
	memset(&st, 0xa5, sizeof(st)); /* merge_lists() must set every count */
	r = merge_lists(kind, has_base ? &base->l : NULL, mode & MODE_READ, &head->l, &new->l, fetch, &fc, &ret, &st);
	CHECK(r == 0);
	CHECK(st.from_head + st.from_new + st.fields == ret.n);
	CHECK(st.others_kept <= st.from_head && st.removed <= head->l.n);
	if (!history || !(mode & MODE_EXPLICIT))
		CHECK(fc.calls == 0);
	check_elements(kind, head, new, &ret);
	check_rendering(head, new, &ret);
	check_rules(kind, has_base ? base : NULL, mode & MODE_READ, head, new, &ret);
	merge_list_release(&ret);
}

/* ---- merge_metadata() ----------------------------------------------------------- */

static bool is_log(const char *name)
{
	return strcmp(name, "files_in_context") == 0 || strcmp(name, "model_usage") == 0 ||
	       strcmp(name, "environment_history") == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* True if some object in v has two members of one name (JSON.parse keeps the last, cJSON the first). */
static bool has_duplicate_names(const cJSON *v)
{
	const cJSON *m;
	bool dup = false;

	if (cJSON_IsObject(v)) {
		size_t n = (size_t)cJSON_GetArraySize(v), k = 0;
		const char **names = malloc((n ? n : 1) * sizeof(*names));

		CHECK_ALLOC(names);
		cJSON_ArrayForEach(m, v)
			names[k++] = m->string;
		qsort(names, k, sizeof(*names), cmp_str);
		for (size_t i = 1; i < k && !dup; i++)
			dup = strcmp(names[i], names[i - 1]) == 0;
		free(names);
	}
	cJSON_ArrayForEach(m, v)
		if (!dup)
			dup = has_duplicate_names(m);
	return dup;
}

static bool same_json(const cJSON *a, const cJSON *b)
{
	char *x, *y;
	bool same;

	if (!a || !b)
		return !a && !b;
	x = cJSON_PrintUnformatted(a);
	y = cJSON_PrintUnformatted(b);
	CHECK_ALLOC(x);
	CHECK_ALLOC(y);
	same = strcmp(x, y) == 0;
	free(x);
	free(y);
	return same;
}

static bool array_has(const cJSON *arr, const cJSON *e)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, arr)
		if (same_json(x, e))
			return true;
	return false;
}

/* docs/MERGE.md's rules for task_metadata.json. */
static void check_metadata_rules(const cJSON *b, const cJSON *h, const cJSON *n, const cJSON *r)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, n) {
		const cJSON *bm = b ? cJSON_GetObjectItemCaseSensitive(b, m->string) : NULL;
		const cJSON *hm = cJSON_GetObjectItemCaseSensitive(h, m->string);
		const cJSON *rm = cJSON_GetObjectItemCaseSensitive(r, m->string);

		if (is_log(m->string) && cJSON_IsArray(m) && cJSON_IsArray(hm)) {
			const cJSON *e, *x = rm ? rm->child : NULL;

			/* An append log: head's entries first, as they were, then the writer's additions. */
			CHECK(cJSON_IsArray(rm));
			cJSON_ArrayForEach(e, hm) {
				CHECK(x && same_json(x, e));
				x = x->next;
			}
			cJSON_ArrayForEach(e, m)
				if (!cJSON_IsArray(bm) || !array_has(bm, e))
					CHECK(array_has(rm, e));
		} else if (bm && cJSON_Compare(bm, m, true)) {
			CHECK(same_json(rm, hm)); /* the writer left it alone */
		} else {
			CHECK(same_json(rm, m)); /* the writer changed it */
		}
	}
	cJSON_ArrayForEach(m, h)
		if (!cJSON_GetObjectItemCaseSensitive(n, m->string)) {
			const cJSON *rm = cJSON_GetObjectItemCaseSensitive(r, m->string);

			if (b && !is_log(m->string) && cJSON_GetObjectItemCaseSensitive(b, m->string))
				CHECK(!rm); /* the writer removed it */
			else
				CHECK(same_json(rm, m)); /* others' member, or a log */
		}
}

/*
 * cJSON prints v so that it parses back to the same value. Not always: it
 * prints 1.7976931348623157e308 as 1.79769313486232e+308, which overflows.
 * The checks that compare values need it.
 */
static bool round_trips(const cJSON *v)
{
	char *a = cJSON_PrintUnformatted(v), *b;
	cJSON *p;
	bool same;

	CHECK_ALLOC(a);
	p = cJSON_Parse(a);
	CHECK(p != NULL);
	b = cJSON_PrintUnformatted(p);
	CHECK_ALLOC(b);
	same = strcmp(a, b) == 0;
	free(a);
	free(b);
	cJSON_Delete(p);
	return same;
}

static bool has_inf(const cJSON *v)
{
	const cJSON *c;

	if (cJSON_IsNumber(v))
		return !isfinite(v->valuedouble);
	cJSON_ArrayForEach(c, v)
		if (has_inf(c))
			return true;
	return false;
}

static bool has_duplicate_names(const cJSON *v);

/*
 * A text that merge_metadata() refuses although it is a valid object: one
 * that cJSON cannot merge faithfully (a number beyond a double's range, two
 * members of one name, a \u0000 in a string).
 */
static bool unmergeable(const struct side *d)
{
	cJSON *v;
	bool bad;

	if (memmem(d->s, d->n, "\\u0000", 6))
		return true;
	v = cJSON_ParseWithLength(d->s, d->n);
	bad = v && (has_inf(v) || has_duplicate_names(v));
	cJSON_Delete(v);
	return bad;
}

/* A valid text whose value is an object. */
static bool is_object(const struct side *d)
{
	size_t i = 0;

	while (i < d->n && json_blank(d->s[i]))
		i++;
	return i < d->n && d->s[i] == '{';
}

static void fuzz_metadata(const struct side *base, bool has_base, const struct side *head, const struct side *new)
{
	char *const untouched = (char *)"untouched";
	char *out = untouched;
	size_t len = 424242;
	bool valid = json_validate(head->s, head->n, NULL) == 0 && json_validate(new->s, new->n, NULL) == 0 &&
		     (!has_base || json_validate(base->s, base->n, NULL) == 0);
	cJSON *b, *h, *n, *r;
	int rc;

	rc = merge_metadata(has_base ? base->s : NULL, base->n, head->s, head->n, new->s, new->n, &out, &len);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc < 0) {
		CHECK(out == untouched && len == 424242);
		/* Three valid objects are merged, unless cJSON cannot read one, or merge it faithfully. */
		CHECK(!valid || !is_object(head) || !is_object(new) || (has_base && !is_object(base)) ||
		      cjson_may_refuse(head->s, head->n) || cjson_may_refuse(new->s, new->n) ||
		      (has_base && cjson_may_refuse(base->s, base->n)) || unmergeable(head) || unmergeable(new) ||
		      (has_base && unmergeable(base)));
		return;
	}
	CHECK(out != untouched && out != NULL && len == strlen(out));
	if (!valid) {
		free(out);
		return;
	}
	/* Valid JSON (the store keeps it as is), and an object. */
	CHECK(json_validate(out, len, NULL) == 0 && out[0] == '{');
	r = cJSON_Parse(out);
	CHECK(r != NULL);
	b = has_base ? cJSON_ParseWithLength(base->s, base->n) : NULL;
	h = cJSON_ParseWithLength(head->s, head->n);
	n = cJSON_ParseWithLength(new->s, new->n);
	CHECK(h && n && (!has_base || b)); /* merge_metadata() parsed them */
	CHECK(!has_duplicate_names(h) && !has_duplicate_names(n) && !(b && has_duplicate_names(b)));
	if (round_trips(h) && round_trips(n) && (!b || round_trips(b))) {
		/* Laid out as JSON.stringify(x, null, 2) would. */
		char *c = cJSON_PrintUnformatted(r), *p;

		CHECK_ALLOC(c);
		p = json_pretty(c);
		CHECK_ALLOC(p);
		CHECK(strcmp(p, out) == 0);
		free(p);
		free(c);
		check_metadata_rules(b, h, n, r);
		if (same_text(head, new) || (has_base && same_text(base, new)))
			CHECK(same_json(r, h));
	}
	cJSON_Delete(b);
	cJSON_Delete(h);
	cJSON_Delete(n);
	cJSON_Delete(r);
	free(out);
}

/* ---- the input ------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct side sides[3] = { { 0 } }, *base = &sides[0], *head = &sides[1], *new = &sides[2];
	const char *p, *end = (const char *)data + size;
	unsigned mode;

	if (size < 1)
		return 0;
	mode = data[0];
	p = (const char *)data + 1;
	for (int i = 0; i < 3; i++) {
		const char *z = i < 2 ? memchr(p, '\0', (size_t)(end - p)) : NULL;

		sides[i].s = p;
		sides[i].n = (size_t)((z ? z : end) - p);
		p = z ? z + 1 : end;
	}
	if (mode & MODE_SAME)
		*new = *head;

	switch (mode & MODE_KIND) {
	case 0:
		fuzz_lists(MERGE_HISTORY, mode, base, head, new);
		break;
	case 2:
		fuzz_metadata(base, mode & MODE_BASE, head, new);
		break;
	default:
		fuzz_lists(MERGE_MESSAGES, mode, base, head, new);
	}
	for (int i = 0; i < 3; i++)
		side_release(&sides[i]);
	return 0;
}
