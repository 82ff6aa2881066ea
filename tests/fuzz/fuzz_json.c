/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_json.c: libFuzzer target for the validating scanner (store/json.c)
 * and for json_pretty() (store/merge.c), which lays out task_metadata.json
 * merges and the views' workspace.json and commit.json.
 *
 * The input is the text itself, so the seeds are plain files (the fixtures'
 * conversation files, tests/fuzz/seeds/json/). Every public function of
 * json.c runs on it, and what a caller relies on is checked:
 *
 *   - json_scan_array() accepts exactly the texts json_validate() accepts
 *     whose first byte after white space is '['. Its elements come in order
 *     and tile the array: each begins where the previous one ended (after
 *     white space and one comma), has no white space at either end, and
 *     validates on its own; the head ends at the '[', the tail holds only
 *     white space and the ']'. A callback's refusal stops the scan and is
 *     returned; out-parameters are left alone on every failure.
 *   - json_validate() never accepts what cJSON refuses (except for what
 *     cJSON 1.7 cannot read: lone surrogate escapes, numbers over 63 bytes),
 *     and an accepted array has as many elements for cJSON as for the scan.
 *   - json_object_member() finds exactly the members cJSON finds (the first
 *     of duplicates; texts without escapes), and their values re-validate.
 *   - json_to_int64() answers for exactly an optionally quoted, optionally
 *     negative run of 1 to 18 digits.
 *   - json_validate_read(), json_scan_array_read() (of the top-level array
 *     and of member "messages") and json_object_member_read(), through a
 *     reader with a window of 64 to 80 bytes, give what their twins in
 *     memory give: result, every element's span, head, tail, error and
 *     offset.
 *   - json_scan_array_after() and json_scan_array_read() told that the text
 *     up to the end of an element (one that closes itself) is known report
 *     the spans after it, and the head and tail, that a whole scan reports.
 *   - json_pretty() of cJSON's compact form of an accepted text, and of an
 *     accepted text that is already compact, validates and differs from its
 *     input only by white space outside strings. On arbitrary bytes it must
 *     merely not misbehave.
 *
 * ASan and UBSan (and LeakSanitizer) check everything else.
 */
#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "store/json.h"
#include "tests/fuzz/fuzz.h"
#include "store/util.h"

/* ---- json_scan_array() ------------------------------------------------------ */

struct walk {
	const char *s;
	size_t n;
	size_t count; /* elements seen */
	size_t at;    /* where the next element's leading bytes must begin */
	size_t stop;  /* refuse (-ECANCELED) element number stop; SIZE_MAX: never */
};

static int on_elem(void *ctx, size_t pre, size_t start, size_t end)
{
	struct walk *w = ctx;
	size_t commas = 0;

	CHECK(pre == w->at);
	CHECK(pre <= start && start < end && end <= w->n);
	for (size_t i = pre; i < start; i++) {
		if (w->s[i] == ',')
			commas++;
		else
			CHECK(json_blank(w->s[i]));
	}
	CHECK(commas == (w->count ? 1u : 0u));
	CHECK(!json_blank(w->s[start]) && !json_blank(w->s[end - 1]));
	CHECK(json_validate(w->s + start, end - start, NULL) == 0);
	w->at = end;
	if (w->count++ == w->stop)
		return -ECANCELED;
	return 0;
}

static size_t skip_blanks(const char *s, size_t n, size_t i)
{
	while (i < n && json_blank(s[i]))
		i++;
	return i;
}

/* Scans s as the store does; returns the number of elements, or SIZE_MAX if refused. */
static size_t check_scan(const char *s, size_t n, bool valid)
{
	struct walk w = { s, n, 0, 0, SIZE_MAX };
	struct json_error err = { 0 };
	size_t head = SIZE_MAX, tail = SIZE_MAX, first = skip_blanks(s, n, 0), i;
	int r;

	w.at = first + 1;
	r = json_scan_array(s, n, on_elem, &w, &head, &tail, &err);
	CHECK(r == 0 || r == -EINVAL);
	CHECK((r == 0) == (valid && first < n && s[first] == '['));
	if (r < 0) {
		CHECK(head == SIZE_MAX && tail == SIZE_MAX);
		CHECK(err.offset <= n);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL && err.msg[0] != '\0');
		return SIZE_MAX;
	}
	CHECK(head == first + 1);
	CHECK(tail == w.at);
	i = skip_blanks(s, n, tail);
	CHECK(i < n && s[i] == ']');
	CHECK(skip_blanks(s, n, i + 1) == n);

	/* A callback's refusal stops the scan and is returned; nothing else is set. */
	if (w.count) {
		struct walk w2 = { s, n, 0, first + 1, n % w.count };
		size_t head2 = SIZE_MAX, tail2 = SIZE_MAX;

		r = json_scan_array(s, n, on_elem, &w2, &head2, &tail2, NULL);
		CHECK(r == -ECANCELED);
		CHECK(w2.count == w2.stop + 1);
		CHECK(head2 == SIZE_MAX && tail2 == SIZE_MAX);
	}
	return w.count;
}

/* ---- json_to_int64() and json_object_member() --------------------------------- */

static void check_int(const char *s, size_t n)
{
	const long long untouched = 0x5a5a5a5a;
	long long got = untouched, want = 0;
	const char *p = s;
	size_t m = n;
	bool neg = false, ok;
	int r = json_to_int64(s, n, &got);

	if (m >= 2 && p[0] == '"' && p[m - 1] == '"')
		p++, m -= 2;
	if (m && p[0] == '-')
		neg = true, p++, m--;
	ok = m >= 1 && m <= 18;
	for (size_t i = 0; ok && i < m; i++) {
		ok = p[i] >= '0' && p[i] <= '9';
		want = want * 10 + (p[i] - '0');
	}
	if (ok) {
		CHECK(r == 0);
		CHECK(got == (neg ? -want : want));
	} else {
		CHECK(r == -EINVAL);
		CHECK(got == untouched);
	}
}

/* Compact text of a cJSON value (duplicate members and their order kept). free() it. */
static char *compact_of(const cJSON *v)
{
	char *s = cJSON_PrintUnformatted(v);

	CHECK_ALLOC(s);
	return s;
}

/*
 * Member key of the object s (valid when v is not NULL: then v is its cJSON
 * parse, and exact says that s has no escapes, so that raw and decoded keys
 * are the same bytes).
 */
static void check_member(const char *s, size_t n, const cJSON *v, bool exact, const char *key)
{
	size_t a = SIZE_MAX, b = SIZE_MAX;
	int r = json_object_member(s, n, key, &a, &b);

	CHECK(r == 0 || r == -ENOENT);
	if (r < 0) {
		CHECK(a == SIZE_MAX && b == SIZE_MAX);
	} else {
		CHECK(a < b && b <= n);
		check_int(s + a, b - a);
	}
	if (!v)
		return; /* unvalidated text: only memory safety and bounds */
	if (r == 0)
		CHECK(json_validate(s + a, b - a, NULL) == 0);
	if (exact) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(v, key);

		CHECK((r == 0) == (item != NULL));
		if (item) {
			cJSON *mine = cJSON_ParseWithLength(s + a, b - a);
			char *x, *y;

			CHECK(mine != NULL);
			x = compact_of(mine);
			y = compact_of(item);
			CHECK(strcmp(x, y) == 0);
			free(x);
			free(y);
			cJSON_Delete(mine);
		}
	}
}

/* The first member's name of the object s, if it has no escapes (so that it can be found). */
static char *first_key(const char *s, size_t n)
{
	size_t i = skip_blanks(s, n, 0), j;

	if (i >= n || s[i] != '{')
		return NULL;
	i = skip_blanks(s, n, i + 1);
	if (i >= n || s[i] != '"')
		return NULL;
	for (j = ++i; j < n && s[j] != '"' && s[j] != '\\'; j++)
		;
	if (j >= n || s[j] != '"')
		return NULL;
	return strndup(s + i, j - i);
}

static void check_members(const char *s, size_t n, const cJSON *v, bool exact)
{
	static const char *const keys[] = { "ts", "id", "role", "type", "" };
	char *k;

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		check_member(s, n, v, exact, keys[i]);
	k = first_key(s, n);
	if (k) {
		check_member(s, n, v, exact, k);
		free(k);
	}
}

/* ---- cJSON and json_pretty() ------------------------------------------------- */

/* s without the white space outside strings: what json_pretty() must not change. free() it. */
static char *strip_blanks(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out = malloc(n + 1);
	bool in_string = false;

	CHECK_ALLOC(out);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (in_string) {
			out[o++] = c;
			if (c == '\\' && i + 1 < n)
				out[o++] = s[++i];
			else if (c == '"')
				in_string = false;
		} else if (!json_blank(c)) {
			out[o++] = c;
			in_string = c == '"';
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * json_pretty() of the compact JSON text c. Same tokens in the same order
 * means the same value; parsing it back with cJSON would test cJSON's
 * number printing, which does not round-trip (1.7976931348623157e308 prints
 * as 1.79769313486232e+308, which overflows).
 */
static void check_pretty(const char *c)
{
	char *pretty = json_pretty(c), *back;

	CHECK_ALLOC(pretty);
	CHECK(json_validate(pretty, strlen(pretty), NULL) == 0);
	back = strip_blanks(pretty);
	CHECK(strcmp(back, c) == 0);
	free(back);
	free(pretty);
}

/* ---- the same through a reader ---------------------------------------------- */

struct spans {
	uint64_t sum; /* of every (pre, start, end), in order */
	size_t n;
};

static int on_span(void *ctx, size_t pre, size_t start, size_t end)
{
	struct spans *sp = ctx;

	sp->sum = sp->sum * 1000003u + pre * 31u + start * 7u + end;
	sp->n++;
	return 0;
}

struct mem_reader {
	const char *s;
	size_t n;
};

static int read_mem(void *ctx, size_t off, char *buf, size_t n)
{
	struct mem_reader *m = ctx;

	CHECK(off <= m->n && n <= m->n - off); /* a scan never reads past the end */
	memcpy(buf, m->s + off, n);
	return 0;
}

/* The scan of member (NULL: the top-level array) through a reader equals the scan in memory. */
static void check_read_scan(const char *s, size_t n, const char *member, size_t window)
{
	struct mem_reader m = { s, n };
	struct json_reader rd = { .read = read_mem, .ctx = &m, .len = n, .window = window };
	struct json_error e1 = { 0 }, e2 = { 0 };
	struct spans a = { 0 }, b = { 0 };
	size_t h1 = 1, t1 = 2, h2 = 1, t2 = 2;
	int r1 = json_scan_array_at(s, n, member, on_span, &a, &h1, &t1, &e1);
	int r2 = json_scan_array_read(&rd, member, NULL, on_span, &b, &h2, &t2, &e2);

	CHECK(r1 == r2 && a.n == b.n && a.sum == b.sum && h1 == h2 && t1 == t2);
	if (r1 == -EINVAL)
		CHECK(e1.offset == e2.offset && strcmp(e1.msg, e2.msg) == 0);
}

/* Every span of a scan, in order. */
struct span_list {
	size_t (*v)[3];
	size_t n, alloc;
};

static int on_span_keep(void *ctx, size_t pre, size_t start, size_t end)
{
	struct span_list *l = ctx;

	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 16;
		l->v = realloc(l->v, l->alloc * sizeof(*l->v));
		CHECK_ALLOC(l->v);
	}
	l->v[l->n][0] = pre;
	l->v[l->n][1] = start;
	l->v[l->n++][2] = end;
	return 0;
}

/*
 * A scan that skips the text up to the end of element pick (one that closes
 * itself) sees what the whole scan sees after it, in memory and through a
 * reader.
 */
static void check_scan_after(const char *s, size_t n, const char *member, size_t window, size_t pick)
{
	struct mem_reader m = { s, n };
	struct json_reader rd = { .read = read_mem, .ctx = &m, .len = n, .window = window };
	struct span_list all = { 0 };
	struct spans want = { 0 }, a = { 0 }, b = { 0 };
	size_t h = 0, t = 0, h1 = 1, t1 = 2, h2 = 1, t2 = 2;
	struct json_known known;
	char last;

	if (json_scan_array_at(s, n, member, on_span_keep, &all, &h, &t, NULL) == 0 && all.n > 0) {
		pick %= all.n;
		known = (struct json_known){ h, all.v[pick][2] };
		last = s[known.end - 1];
		if (last == '}' || last == ']' || last == '"') {
			for (size_t i = pick + 1; i < all.n; i++)
				on_span(&want, all.v[i][0], all.v[i][1], all.v[i][2]);
			CHECK(json_scan_array_after(s, n, member, &known, on_span, &a, &h1, &t1, NULL) == 0);
			CHECK(json_scan_array_read(&rd, member, &known, on_span, &b, &h2, &t2, NULL) == 0);
			CHECK(a.n == want.n && a.sum == want.sum && h1 == h && t1 == t);
			CHECK(b.n == want.n && b.sum == want.sum && h2 == h && t2 == t);
		}
	}
	free(all.v);
}

/*
 * Every reader function agrees with its twin in memory, with a window the
 * input picks (64 to 80 bytes: its edges fall anywhere in the tokens).
 */
static void check_reader(const char *s, size_t n)
{
	size_t window = 64 + (n ? (unsigned char)s[0] % 17 : 0), a1 = 0, b1 = 0, a2 = 0, b2 = 0;
	struct mem_reader m = { s, n };
	struct json_reader rd = { .read = read_mem, .ctx = &m, .len = n, .window = window };
	struct json_error e1 = { 0 }, e2 = { 0 };
	int r1 = json_validate(s, n, &e1), r2 = json_validate_read(&rd, &e2);

	CHECK(r1 == r2);
	if (r1 < 0)
		CHECK(e1.offset == e2.offset && strcmp(e1.msg, e2.msg) == 0);
	check_read_scan(s, n, NULL, window);
	check_read_scan(s, n, "messages", window);
	check_scan_after(s, n, NULL, window, n > 1 ? (unsigned char)s[1] : 0);
	check_scan_after(s, n, "messages", window, n > 1 ? (unsigned char)s[1] : 0);
	r1 = json_object_member(s, n, "ts", &a1, &b1);
	r2 = json_object_member_read(&rd, 0, n, "ts", &a2, &b2);
	/* Only on validated text is json_object_member() an answer. */
	if (json_validate(s, n, NULL) == 0)
		CHECK(r1 == r2 && (r1 < 0 || (a1 == a2 && b1 == b2)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct json_error err = { 0 };
	bool valid = json_validate(s, size, &err) == 0;
	size_t nelems = check_scan(s, size, valid);
	char *text = malloc(size + 1), *pretty;
	cJSON *v = NULL;

	CHECK_ALLOC(text);
	memcpy(text, data, size);
	text[size] = '\0';
	if (!valid)
		CHECK(err.offset <= size && err.msg[0] != '\0');

	/* json_pretty() on anything (up to a NUL byte): no overrun, no leak. */
	pretty = json_pretty(text);
	CHECK_ALLOC(pretty);
	free(pretty);

	check_reader(s, size);
	if (size <= 24)
		check_int(s, size);
	if (!valid) {
		check_members(s, size, NULL, false);
		free(text);
		return 0;
	}

	v = cJSON_ParseWithLength(s, size);
	CHECK(v != NULL || cjson_may_refuse(s, size));
	check_members(s, size, v, v && !memchr(s, '\\', size));
	if (v) {
		char *c = compact_of(v), *stripped;

		if (nelems != SIZE_MAX)
			CHECK(cJSON_IsArray(v) && (size_t)cJSON_GetArraySize(v) == nelems);
		check_pretty(c);
		/* The text as written, if it is compact already (escapes as they are). */
		stripped = strip_blanks(text);
		if (strcmp(stripped, text) == 0)
			check_pretty(text);
		free(stripped);
		free(c);
		cJSON_Delete(v);
	}
	free(text);
	return 0;
}
