/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_merge.c: the three-way merges of lists in store/merge.c (history
 * items, message streams), without SQLite. The merge of task_metadata.json
 * and its pretty printing are in test_merge_metadata.c.
 *
 * Lists are built from JSON text by the store's own identity rules,
 * doc_elem_identity() (store/layout.c): hash = hash64() of the bytes; a
 * history item's key is its id, a message's its ts where it has one, else
 * its hash. Head elements carry row ids (1000 + index), base elements 500 + index,
 * new elements their index. A result is checked as the sequence of texts it
 * stands for (a head element's bytes, a new element's bytes, or the merged
 * bytes it owns), with where each came from and the merge's statistics.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "store/layout.h"
#include "store/merge.h"
#include "store/util.h"

#define BASE_REF0 500
#define HEAD_REF0 1000
#define NEW_REF0 0

/* ---- fixture: three lists, a result, and the strings the test made ---------- */

struct fx {
	struct merge_list base, head, new, ret;
	struct merge_stats st;
	char **strs;
	size_t nstrs;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	merge_list_release(&f->base);
	merge_list_release(&f->head);
	merge_list_release(&f->new);
	merge_list_release(&f->ret);
	for (size_t i = 0; i < f->nstrs; i++)
		free(f->strs[i]);
	free(f->strs);
	free(f);
	return 0;
}

/* Keeps a string the test allocated until teardown. */
static const char *keep(struct fx *f, char *s)
{
	char **v = realloc(f->strs, (f->nstrs + 1) * sizeof(*v));

	assert_non_null(s);
	assert_non_null(v);
	f->strs = v;
	f->strs[f->nstrs++] = s;
	return s;
}

/* An element for json, identified by the store's own rules (store/layout.c). */
static struct merge_elem elem(enum merge_kind kind, const char *json, int64_t ref)
{
	struct merge_elem e = { 0 };

	e.json = json;
	e.len = strlen(json);
	e.ref = ref;
	doc_elem_identity(kind == MERGE_HISTORY ? IDENT_ITEM_ID : IDENT_TS, json, e.len, &e, NULL);
	return e;
}

static void fill(struct merge_list *l, enum merge_kind kind, int64_t ref0, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct merge_elem e = elem(kind, v[i], ref0 + (int64_t)i);

		assert_int_equal(merge_list_push(l, &e), 0);
	}
}

#define STRS(...) ((const char *const[]){ __VA_ARGS__ })
#define NSTRS(...) (sizeof(STRS(__VA_ARGS__)) / sizeof(const char *))
#define BASE(f, kind, ...) fill(&(f)->base, kind, BASE_REF0, STRS(__VA_ARGS__), NSTRS(__VA_ARGS__))
#define HEAD(f, kind, ...) fill(&(f)->head, kind, HEAD_REF0, STRS(__VA_ARGS__), NSTRS(__VA_ARGS__))
#define NEW(f, kind, ...) fill(&(f)->new, kind, NEW_REF0, STRS(__VA_ARGS__), NSTRS(__VA_ARGS__))

static void run(struct fx *f, enum merge_kind kind, bool with_base, bool base_read)
{
	memset(&f->st, 0xa5, sizeof(f->st)); /* merge_lists must set every count */
	merge_list_release(&f->ret);
	assert_int_equal(merge_lists(kind, with_base ? &f->base : NULL, base_read, &f->head, &f->new, NULL, NULL,
				     &f->ret, &f->st), 0);
}

/* The text a result element stands for, checking its origin and reference. */
static const char *text_of(const struct fx *f, const struct merge_elem *e)
{
	const struct merge_elem *src;

	switch (e->origin) {
	case MERGE_FROM_HEAD:
		assert_in_range(e->ref, HEAD_REF0, HEAD_REF0 + (int64_t)f->head.n - 1);
		src = &f->head.v[e->ref - HEAD_REF0];
		assert_int_equal(e->hash, src->hash);
		assert_int_equal(e->key, src->key);
		assert_null(e->owned);
		return src->json;
	case MERGE_FROM_NEW:
		assert_in_range(e->ref, NEW_REF0, NEW_REF0 + (int64_t)f->new.n - 1);
		src = &f->new.v[e->ref - NEW_REF0];
		assert_ptr_equal(e->json, src->json);
		assert_int_equal(e->len, src->len);
		assert_int_equal(e->hash, src->hash);
		assert_int_equal(e->key, src->key);
		assert_null(e->owned);
		return src->json;
	case MERGE_FROM_FIELDS:
		assert_non_null(e->owned);
		assert_ptr_equal(e->json, e->owned);
		assert_int_equal(e->len, strlen(e->owned));
		assert_int_equal(e->hash, hash64(e->owned, e->len));
		return e->owned;
	}
	fail_msg("unknown origin %d", (int)e->origin);
	return NULL;
}

/* The result is exactly these texts, in this order. */
static void expect_texts(const struct fx *f, const char *const *v, size_t n)
{
	for (size_t i = 0; i < f->ret.n && i < n; i++)
		if (strcmp(text_of(f, &f->ret.v[i]), v[i]) != 0)
			fail_msg("element %zu: got %s, want %s", i, text_of(f, &f->ret.v[i]), v[i]);
	assert_int_equal(f->ret.n, n);
}
#define EXPECT(f, ...) expect_texts(f, STRS(__VA_ARGS__), NSTRS(__VA_ARGS__))

/* Origins, one letter each: H(ead), N(ew), F(ields). */
static void expect_origins(const struct fx *f, const char *origins)
{
	assert_int_equal(f->ret.n, strlen(origins));
	for (size_t i = 0; i < f->ret.n; i++) {
		char c = "HNF"[f->ret.v[i].origin];

		if (c != origins[i])
			fail_msg("element %zu: origin %c, want %c (all: %s)", i, c, origins[i], origins);
	}
}

static void expect_stats(const struct fx *f, size_t from_head, size_t from_new, size_t removed, size_t fields,
			 size_t others_kept)
{
	assert_int_equal(f->st.from_head, from_head);
	assert_int_equal(f->st.from_new, from_new);
	assert_int_equal(f->st.removed, removed);
	assert_int_equal(f->st.fields, fields);
	assert_int_equal(f->st.others_kept, others_kept);
}

/* ---- history items ---------------------------------------------------------------- */

#define HA "{\"id\":\"a\",\"task\":\"first\",\"tokensIn\":1}"
#define HA2 "{\"id\":\"a\",\"task\":\"first\",\"tokensIn\":7}"
#define HB "{\"id\":\"b\",\"task\":\"second\",\"tokensIn\":2}"
#define HC "{\"id\":\"c\",\"task\":\"third\",\"tokensIn\":3}"
#define HC2 "{\"id\":\"c\",\"task\":\"third, renamed\",\"tokensIn\":3}"

static void test_merge_hash(void **state)
{
	(void)state;
	assert_int_equal(hash64("abc", 3), hash64("abc", 3));
	assert_int_not_equal(hash64("abc", 3), hash64("abd", 3));
	assert_int_not_equal(hash64("", 0), hash64("\0", 1));
	assert_int_not_equal(hash64("12345678", 8), hash64("123456789", 9));
	/* The bytes, not the pointer. */
	char a[] = "{\"ts\":1}", b[] = "{\"ts\":1}";
	assert_int_equal(hash64(a, sizeof(a) - 1), hash64(b, sizeof(b) - 1));
}

/* 1. Both writers added an item: both stay, others' first. */
static void test_history_add_add(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA);
	HEAD(f, MERGE_HISTORY, HA, HB);
	NEW(f, MERGE_HISTORY, HA, HC);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA, HB, HC);
	expect_origins(f, "HHN");
	expect_stats(f, 2, 1, 0, 0, 1);
}

/* 2. The writer deleted B, which it had seen; another writer added C. */
static void test_history_add_delete(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA, HB);
	HEAD(f, MERGE_HISTORY, HA, HB, HC);
	NEW(f, MERGE_HISTORY, HA);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA, HC);
	expect_origins(f, "HH");
	expect_stats(f, 2, 0, 1, 0, 1);
}

/* 3. B is missing from the writer's list because it never saw it: kept. */
static void test_history_unseen_kept(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA);
	HEAD(f, MERGE_HISTORY, HA, HB);
	NEW(f, MERGE_HISTORY, HA);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA, HB);
	expect_origins(f, "HH");
	expect_stats(f, 2, 0, 0, 0, 1);
}

/*
 * 4. A base the writer only wrote (never read back) removes nothing: an item
 * in base and head but not in new is kept unless base_read. The same lists
 * with base_read remove it.
 */
static void test_history_base_not_read(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA, HB);
	HEAD(f, MERGE_HISTORY, HA, HB);
	NEW(f, MERGE_HISTORY, HA);
	run(f, MERGE_HISTORY, true, false);
	EXPECT(f, HA, HB);
	expect_origins(f, "HH");
	expect_stats(f, 2, 0, 0, 0, 1);

	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA);
	expect_stats(f, 1, 0, 1, 0, 0);
}

/* 5. Both changed the same field: the writer (the later commit) wins. */
static void test_history_same_field(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, "{\"id\":\"1\",\"tokensIn\":1}");
	HEAD(f, MERGE_HISTORY, "{\"id\":\"1\",\"tokensIn\":2}");
	NEW(f, MERGE_HISTORY, "{\"id\":\"1\",\"tokensIn\":3}");
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, "{\"id\":\"1\",\"tokensIn\":3}");
	expect_origins(f, "F");
	assert_int_equal(f->ret.v[0].key, doc_key_of_text("1", 1));
	expect_stats(f, 0, 0, 0, 1, 0);
}

/* 6. Each changed a different field: both changes are kept. */
static void test_history_different_fields(void **state)
{
	struct fx *f = *state;
	cJSON *j;

	BASE(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":1,\"b\":1}");
	HEAD(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":2,\"b\":1}");
	NEW(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":1,\"b\":2}");
	run(f, MERGE_HISTORY, true, true);
	assert_int_equal(f->ret.n, 1);
	expect_origins(f, "F");
	expect_stats(f, 0, 0, 0, 1, 0);

	j = cJSON_ParseWithLength(text_of(f, &f->ret.v[0]), f->ret.v[0].len);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "id")->valuestring, "1");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "a")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "b")->valueint, 2);
	assert_int_equal(cJSON_GetArraySize(j), 3);
	cJSON_Delete(j);
	/* Head's member order, compact. */
	EXPECT(f, "{\"id\":\"1\",\"a\":2,\"b\":2}");
}

/* Field merges: a field the writer added or removed, while head changed another. */
static void test_history_fields_added_removed(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":1,\"gone\":true}");
	HEAD(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":2,\"gone\":true,\"theirs\":[1]}");
	NEW(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":1,\"mine\":{\"x\":1}}");
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, "{\"id\":\"1\",\"a\":2,\"theirs\":[1],\"mine\":{\"x\":1}}");
	expect_origins(f, "F");
	expect_stats(f, 0, 0, 0, 1, 0);
}

/* 7. No base known: nothing is removed; the writer's changed item wins. */
static void test_history_no_base(void **state)
{
	struct fx *f = *state;

	HEAD(f, MERGE_HISTORY, HA, HB);
	NEW(f, MERGE_HISTORY, HA2);
	run(f, MERGE_HISTORY, false, true);
	EXPECT(f, HA2, HB);
	expect_origins(f, "NH");
	expect_stats(f, 1, 1, 0, 0, 1);

	/* Nor with base_read false. */
	run(f, MERGE_HISTORY, false, false);
	EXPECT(f, HA2, HB);
}

/*
 * 8. Another writer deleted B and C. This writer left B as it was: B stays
 * deleted. It changed C: C comes back, as the writer wrote it.
 */
static void test_history_deleted_by_other(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA, HB, HC);
	HEAD(f, MERGE_HISTORY, HA);
	NEW(f, MERGE_HISTORY, HA, HB, HC2);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA, HC2);
	expect_origins(f, "HN");
	expect_stats(f, 1, 1, 0, 0, 0);
}

/* Only the writer changed an item: the writer's bytes; only head changed: head's. */
static void test_history_one_side_changed(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA, HB);
	HEAD(f, MERGE_HISTORY, HA2, HB);
	NEW(f, MERGE_HISTORY, HA, "{\"id\":\"b\",\"task\":\"second\",\"tokensIn\":9}");
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA2, "{\"id\":\"b\",\"task\":\"second\",\"tokensIn\":9}");
	expect_origins(f, "HN");
	expect_stats(f, 1, 1, 0, 0, 0);
}

/* A writer rewriting what it read, unchanged, takes nothing from others. */
static void test_history_stale_rewrite(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA, HB);
	HEAD(f, MERGE_HISTORY, HA2, HB, HC);
	NEW(f, MERGE_HISTORY, HA, HB);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA2, HB, HC);
	expect_origins(f, "HHH");
	expect_stats(f, 3, 0, 0, 0, 1);
}

/* A new list naming one id twice yields one item. */
static void test_history_duplicate_new_id(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, HA);
	HEAD(f, MERGE_HISTORY, HA);
	NEW(f, MERGE_HISTORY, HA, HC, HC2);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA, HC);
	expect_stats(f, 1, 1, 0, 0, 0);
}

/* A base element without bytes: fetched through the callback for a field merge. */
struct fetch_ctx {
	const char *json;
	int calls;
	int64_t ref;
};

static int fetch_base(void *ctx, const struct merge_elem *e, char **ret_json, size_t *ret_len)
{
	struct fetch_ctx *c = ctx;

	c->calls++;
	c->ref = e->ref;
	if (!c->json)
		return -ENOENT;
	*ret_json = strdup(c->json);
	*ret_len = strlen(c->json);
	return *ret_json ? 0 : -ENOMEM;
}

static void test_history_fetch(void **state)
{
	struct fx *f = *state;
	struct fetch_ctx c = { .json = "{\"id\":\"1\",\"a\":1,\"b\":1}" };

	BASE(f, MERGE_HISTORY, HA, "{\"id\":\"1\",\"a\":1,\"b\":1}");
	f->base.v[1].json = NULL; /* loaded as identity and hash only */
	HEAD(f, MERGE_HISTORY, HA, "{\"id\":\"1\",\"a\":2,\"b\":1}");
	NEW(f, MERGE_HISTORY, HA, "{\"id\":\"1\",\"a\":1,\"b\":2}");
	assert_int_equal(merge_lists(MERGE_HISTORY, &f->base, true, &f->head, &f->new, fetch_base, &c, &f->ret,
				     &f->st), 0);
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.ref, BASE_REF0 + 1);
	EXPECT(f, HA, "{\"id\":\"1\",\"a\":2,\"b\":2}");
	expect_origins(f, "HF");
	expect_stats(f, 1, 0, 0, 1, 0);

	/* The base bytes cannot be had: the writer's version, whole. */
	merge_list_release(&f->ret);
	c.json = NULL;
	c.calls = 0;
	assert_int_equal(merge_lists(MERGE_HISTORY, &f->base, true, &f->head, &f->new, fetch_base, &c, &f->ret,
				     &f->st), 0);
	assert_int_equal(c.calls, 1);
	EXPECT(f, HA, "{\"id\":\"1\",\"a\":1,\"b\":2}");
	expect_origins(f, "HN");
	expect_stats(f, 1, 1, 0, 0, 0);

	/* No callback at all: the same. */
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, HA, "{\"id\":\"1\",\"a\":1,\"b\":2}");
	expect_origins(f, "HN");
}

/*
 * Member names are case-sensitive in JSON: a writer adding "size" next to
 * another writer's changed "Size" must get both.
 */
static void test_history_fields_case_sensitive_add(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, "{\"id\":\"1\",\"Size\":1}");
	HEAD(f, MERGE_HISTORY, "{\"id\":\"1\",\"Size\":2}");
	NEW(f, MERGE_HISTORY, "{\"id\":\"1\",\"Size\":1,\"size\":5}");
	run(f, MERGE_HISTORY, true, true);
	expect_origins(f, "F");
	EXPECT(f, "{\"id\":\"1\",\"Size\":2,\"size\":5}");
}

/* ... and a writer removing "B" while keeping "b" must remove "B". */
static void test_history_fields_case_sensitive_remove(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":1,\"b\":1,\"B\":1}");
	HEAD(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":2,\"b\":1,\"B\":1}");
	NEW(f, MERGE_HISTORY, "{\"id\":\"1\",\"a\":1,\"b\":1}");
	run(f, MERGE_HISTORY, true, true);
	expect_origins(f, "F");
	EXPECT(f, "{\"id\":\"1\",\"a\":2,\"b\":1}");
}

/* ---- message streams ---------------------------------------------------------------- */

#define M1 "{\"ts\":1,\"type\":\"say\",\"say\":\"task\",\"text\":\"one\"}"
#define M2 "{\"ts\":2,\"type\":\"say\",\"say\":\"text\",\"text\":\"two\"}"
#define M3 "{\"ts\":3,\"type\":\"say\",\"say\":\"text\",\"text\":\"three\"}"
#define M3P "{\"ts\":3,\"type\":\"say\",\"say\":\"text\",\"text\":\"thr\",\"partial\":true}"
#define M3C "{\"ts\":3,\"type\":\"say\",\"say\":\"text\",\"text\":\"three, complete\"}"
#define M4 "{\"ts\":4,\"type\":\"ask\",\"ask\":\"followup\",\"text\":\"four\"}"
#define M5 "{\"ts\":5,\"type\":\"say\",\"say\":\"text\",\"text\":\"five\"}"

/* 9. Both appended: interleaved by ts. */
static void test_messages_append_append(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2);
	HEAD(f, MERGE_MESSAGES, M1, M2, M4);
	NEW(f, MERGE_MESSAGES, M1, M2, M3);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M2, M3, M4);
	expect_origins(f, "HHNH");
	expect_stats(f, 3, 1, 0, 0, 1);
}

/* 10. The writer truncated what it had seen while another appended. */
static void test_messages_truncate_vs_append(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2, M3, M4);
	HEAD(f, MERGE_MESSAGES, M1, M2, M3, M4, M5);
	NEW(f, MERGE_MESSAGES, M1, M2);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M2, M5);
	expect_origins(f, "HHH");
	expect_stats(f, 3, 0, 2, 0, 1);
}

/* 11. The writer appended while another truncated: the truncation holds. */
static void test_messages_append_vs_truncate(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2, M3, M4);
	HEAD(f, MERGE_MESSAGES, M1, M2);
	NEW(f, MERGE_MESSAGES, M1, M2, M3, M4, M5);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M2, M5);
	expect_origins(f, "HHN");
	expect_stats(f, 2, 1, 0, 0, 0);
}

/* 12. The writer completed its partial last message while another appended. */
static void test_messages_update_last(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2, M3P);
	HEAD(f, MERGE_MESSAGES, M1, M2, M3P, M4);
	NEW(f, MERGE_MESSAGES, M1, M2, M3C);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M2, M3C, M4);
	expect_origins(f, "HHNH");
	expect_stats(f, 3, 1, 0, 0, 1);
}

/* 13. Both wrote the same message: once. */
static void test_messages_same_message(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2);
	HEAD(f, MERGE_MESSAGES, M1, M2, M3);
	NEW(f, MERGE_MESSAGES, M1, M2, M3);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M2, M3);
	expect_origins(f, "HHN");
	expect_stats(f, 2, 1, 0, 0, 0);
}

/* 14. No base known: the writer's version, as a plain overwrite. */
static void test_messages_no_base(void **state)
{
	struct fx *f = *state;

	HEAD(f, MERGE_MESSAGES, M1, M2, M4, M5);
	NEW(f, MERGE_MESSAGES, M1, M3);
	run(f, MERGE_MESSAGES, false, true);
	EXPECT(f, M1, M3);
	expect_origins(f, "NN");
	expect_stats(f, 0, 2, 0, 0, 0);
	for (size_t i = 0; i < f->ret.n; i++)
		assert_int_equal(f->ret.v[i].ref, (int64_t)i);
}

/* 15. Messages without ts (api_conversation_history): others' first. */
#define AA "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}"
#define AB "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"b\"}]}"
#define AC "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"c (other)\"}]}"
#define AD "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"d (writer)\"}]}"

static void test_messages_without_ts(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, AA, AB);
	HEAD(f, MERGE_MESSAGES, AA, AB, AC);
	NEW(f, MERGE_MESSAGES, AA, AB, AD);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, AA, AB, AC, AD);
	expect_origins(f, "HHHN");
	expect_stats(f, 3, 1, 0, 0, 1);
}

/* A writer rewriting what it read, unchanged, takes nothing from others. */
static void test_messages_stale_rewrite(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2, M3P);
	HEAD(f, MERGE_MESSAGES, M1, M2, M3C, M4);
	NEW(f, MERGE_MESSAGES, M1, M2, M3P);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M2, M3C, M4);
	expect_origins(f, "HHHH");
	expect_stats(f, 4, 0, 0, 0, 2);
}

/* The writer removed one message from the middle; another appended. */
static void test_messages_remove_middle(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1, M2, M3);
	HEAD(f, MERGE_MESSAGES, M1, M2, M3, M4);
	NEW(f, MERGE_MESSAGES, M1, M3);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M3, M4);
	assert_int_equal(f->st.removed, 1);
	assert_int_equal(f->st.from_new, 0);
}

/*
 * Identities that repeat (found by tests/fuzz/fuzz_merge): two messages of one
 * millisecond, or two equal messages without ts. Each of the writer's stands
 * for one of head's: the second one used to match the first again, and was
 * added besides (or replaced a message the writer had never seen).
 */
#define M5A "{\"ts\":5,\"type\":\"say\",\"say\":\"text\",\"text\":\"five a\"}"
#define M5B "{\"ts\":5,\"type\":\"say\",\"say\":\"text\",\"text\":\"five b\"}"

/* Both wrote the same two messages of one ts: each once. */
static void test_messages_same_ts_from_both(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1);
	HEAD(f, MERGE_MESSAGES, M1, M5A, M5B);
	NEW(f, MERGE_MESSAGES, M1, M5A, M5B);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M5A, M5B);
	expect_origins(f, "HNN");
	expect_stats(f, 1, 2, 0, 0, 0);
}

/* Both wrote the same equal messages without ts: as many as each wrote, not one more. */
static void test_messages_equal_without_ts_from_both(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, AA);
	HEAD(f, MERGE_MESSAGES, AA, AC, AB, AC);
	NEW(f, MERGE_MESSAGES, AA, AC, AB, AC);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, AA, AC, AB, AC);
	expect_origins(f, "HNNN");
	expect_stats(f, 1, 3, 0, 0, 0);
}

/* The writer has the second of two messages of one ts: it stands for that one, not the first. */
static void test_messages_same_ts_matches_bytes(void **state)
{
	struct fx *f = *state;

	BASE(f, MERGE_MESSAGES, M1);
	HEAD(f, MERGE_MESSAGES, M1, M5A, M5B);
	NEW(f, MERGE_MESSAGES, M1, M5B);
	run(f, MERGE_MESSAGES, true, true);
	EXPECT(f, M1, M5A, M5B);
	expect_origins(f, "HHN");
	expect_stats(f, 2, 1, 0, 0, 1);
}

/* A history item both changed, holding a number cJSON cannot hold: the writer's, as written, not merged. */
static void test_history_fields_number_out_of_range(void **state)
{
	struct fx *f = *state;
	static const char b[] = "{\"id\":\"a\",\"size\":1e400,\"x\":1,\"y\":1}";
	static const char h[] = "{\"id\":\"a\",\"size\":1e400,\"x\":2,\"y\":1}";
	static const char n[] = "{\"id\":\"a\",\"size\":1e400,\"x\":1,\"y\":2}";

	BASE(f, MERGE_HISTORY, b);
	HEAD(f, MERGE_HISTORY, h);
	NEW(f, MERGE_HISTORY, n);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, n);
	expect_origins(f, "N");
}

/*
 * A history item both changed whose new version has two "id" members (found by
 * tests/fuzz/fuzz_merge): the field merge took the second id into the first's
 * place, so the merged item became another task's. Not merged: the writer's.
 */
static void test_history_fields_duplicate_names(void **state)
{
	struct fx *f = *state;
	static const char b[] = "{\"id\":\"a\",\"x\":1}";
	static const char h[] = "{\"id\":\"a\",\"x\":2}";
	static const char n[] = "{\"id\":\"a\",\"x\":1,\"id\":\"b\"}";

	BASE(f, MERGE_HISTORY, b);
	HEAD(f, MERGE_HISTORY, h);
	NEW(f, MERGE_HISTORY, n);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, n);
	expect_origins(f, "N");
}

/* A \u0000 in a string: cJSON would cut the string there. Not merged: the writer's, whole. */
static void test_history_fields_nul_escape(void **state)
{
	struct fx *f = *state;
	static const char b[] = "{\"id\":\"a\",\"task\":\"x\\u0000y\",\"x\":1,\"y\":1}";
	static const char h[] = "{\"id\":\"a\",\"task\":\"x\\u0000y\",\"x\":2,\"y\":1}";
	static const char n[] = "{\"id\":\"a\",\"task\":\"x\\u0000y\",\"x\":1,\"y\":2}";

	BASE(f, MERGE_HISTORY, b);
	HEAD(f, MERGE_HISTORY, h);
	NEW(f, MERGE_HISTORY, n);
	run(f, MERGE_HISTORY, true, true);
	EXPECT(f, n);
	expect_origins(f, "N");
}

/* 16. 10,000 messages, the writer appends one: the stored ones are referenced. */
static void test_messages_large(void **state)
{
	struct fx *f = *state;
	enum { N = 10000 };

	for (int i = 0; i < N; i++) {
		char *s;
		struct merge_elem e;

		assert_true(asprintf(&s, "{\"ts\":%d,\"type\":\"say\",\"say\":\"text\",\"text\":\"m%d\"}", 1000 + i, i) > 0);
		keep(f, s);
		e = elem(MERGE_MESSAGES, s, BASE_REF0 + i);
		assert_int_equal(merge_list_push(&f->base, &e), 0);
		e.ref = HEAD_REF0 + i;
		assert_int_equal(merge_list_push(&f->head, &e), 0);
		e.ref = NEW_REF0 + i;
		assert_int_equal(merge_list_push(&f->new, &e), 0);
	}
	{
		char *s;
		struct merge_elem e;

		assert_true(asprintf(&s, "{\"ts\":%d,\"type\":\"say\",\"say\":\"text\",\"text\":\"last\"}", 1000 + N) > 0);
		keep(f, s);
		e = elem(MERGE_MESSAGES, s, NEW_REF0 + N);
		assert_int_equal(merge_list_push(&f->new, &e), 0);
	}
	run(f, MERGE_MESSAGES, true, true);
	assert_int_equal(f->ret.n, N + 1);
	for (int i = 0; i < N; i++) {
		assert_int_equal(f->ret.v[i].origin, MERGE_FROM_HEAD);
		assert_int_equal(f->ret.v[i].ref, HEAD_REF0 + i);
	}
	assert_int_equal(f->ret.v[N].origin, MERGE_FROM_NEW);
	assert_int_equal(f->ret.v[N].ref, NEW_REF0 + N);
	assert_string_equal(text_of(f, &f->ret.v[N]), f->new.v[N].json);
	expect_stats(f, N, 1, 0, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_hash),
		cmocka_unit_test_setup_teardown(test_history_add_add, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_add_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_unseen_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_base_not_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_same_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_different_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fields_added_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_no_base, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_deleted_by_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_one_side_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_stale_rewrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_duplicate_new_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fetch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fields_case_sensitive_add, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fields_case_sensitive_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_append_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_truncate_vs_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_append_vs_truncate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_update_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_same_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_no_base, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_without_ts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_stale_rewrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_remove_middle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_same_ts_from_both, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_equal_without_ts_from_both, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_same_ts_matches_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fields_number_out_of_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fields_duplicate_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_fields_nul_escape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages_large, setup, teardown),
	};

	return cmocka_run_group_tests_name("merge", tests, NULL, NULL);
}
