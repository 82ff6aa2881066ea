/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * search_query.c: the query syntax of `convfs search`, made an FTS5
 * expression.
 *
 *   query   := term+                 every term must match
 *   term    := '-' item              what must not match
 *            | item ('OR' item)*     any of them
 *   item    := word '*'? | '"' phrase '"' '*'?
 *
 * Terms are separated by white space; OR is the word "OR" in capitals
 * (lower-case "or" is a word like any other). A trailing '*' makes the last
 * token a prefix. A word is taken as a phrase of its tokens (the tokenizer,
 * tokenize.c, decides what they are: `snake_case` is "snake case",
 * `src/a.ts` is "src a ts"), so punctuation needs no quoting.
 *
 * What the user typed never reaches FTS5's own syntax: every item goes out
 * as an FTS5 string ("..." with '"' doubled), and the operators are ours.
 * So a query is either refused here, with one line that says why, or an
 * expression FTS5 accepts (tests/fuzz/fuzz_search.c checks that). The
 * structure goes out with parentheses, whatever FTS5's precedence:
 * ((a) AND (b OR c)) NOT (d) NOT (e).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/json.h"
#include "store/search.h"

struct item {
	const char *s;
	size_t n;
	bool neg, prefix, or_next; /* or_next: joined by OR to the item after it */
};

/* Says why in err (one line: a control character of the query quoted in it is shown as '?'); -EINVAL. */
static int refuse(char *err, size_t errlen, const char *fmt, ...) _printf_(3, 4);
static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
		for (char *c = err; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	return -EINVAL;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Something a token can be made of: an ASCII letter or digit, or any character beyond ASCII. */
static bool has_token_char(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
			return true;
	}
	return false;
}

static bool valid_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = json_utf8_len((const unsigned char *)s + i, n - i);

		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/*
 * Reads the item at q[*at] (not white space) into *it; *at moves past it.
 * OR alone is returned as an item with s NULL.
 */
static int read_item(const char *q, size_t len, size_t *at, struct item *it, char *err, size_t errlen)
{
	size_t i = *at, start, end;

	*it = (struct item){ 0 };
	if (q[i] == '-') {
		it->neg = true;
		if (++i == len || is_space(q[i]))
			return refuse(err, errlen, "'-' excludes the word right after it; there is none");
	}
	if (q[i] == '"') {
		start = ++i;
		while (i < len && q[i] != '"')
			i++;
		if (i == len)
			return refuse(err, errlen, "a phrase is not closed: '%.40s'", q + start - 1);
		end = i++;
		while (i < len && q[i] == '*') {
			it->prefix = true;
			i++;
		}
		if (i < len && !is_space(q[i]))
			return refuse(err, errlen, "a phrase must end at a space: '%.40s'", q + start - 1);
		if (!has_token_char(q + start, end - start))
			return refuse(err, errlen, "the phrase '%.*s' has no letter or digit to look for",
				      (int)(end - start < 40 ? end - start : 40), q + start);
	} else {
		start = i;
		while (i < len && !is_space(q[i])) {
			if (q[i] == '"')
				return refuse(err, errlen, "a quote inside a word: '%.40s' (a phrase begins with one)",
					      q + start);
			i++;
		}
		end = i;
		if (!it->neg && end - start == 2 && memcmp(q + start, "OR", 2) == 0) {
			*at = i;
			return 0; /* the operator */
		}
		while (end > start && q[end - 1] == '*') {
			it->prefix = true;
			end--;
		}
		if (!has_token_char(q + start, end - start))
			return refuse(err, errlen, "'%.*s' has no letter or digit to look for",
				      (int)(i - start < 40 ? i - start : 40), q + start);
	}
	it->s = q + start;
	it->n = end - start;
	*at = i;
	return 0;
}

/* The items of the query, OR folded into or_next. 0 or -EINVAL. */
static int read_items(const char *q, struct item *v, size_t *ret_n, char *err, size_t errlen)
{
	size_t len = strlen(q), at = 0, n = 0, positive = 0;
	bool or_pending = false;
	struct item it;
	int r;

	if (len > SEARCH_QUERY_MAX)
		return refuse(err, errlen, "the query is longer than %d bytes", SEARCH_QUERY_MAX);
	if (!valid_utf8(q, len))
		return refuse(err, errlen, "the query is not valid UTF-8");
	for (;;) {
		while (at < len && is_space(q[at]))
			at++;
		if (at == len)
			break;
		if ((r = read_item(q, len, &at, &it, err, errlen)) < 0)
			return r;
		if (!it.s) {
			if (or_pending || n == 0 || v[n - 1].neg)
				return refuse(err, errlen, "'OR' goes between two words (or phrases), neither excluded with '-'");
			or_pending = true;
			continue;
		}
		if (or_pending && it.neg)
			return refuse(err, errlen, "'OR' goes between two words (or phrases), neither excluded with '-'");
		if (n == SEARCH_QUERY_TERMS)
			return refuse(err, errlen, "the query has more than %d words", SEARCH_QUERY_TERMS);
		if (or_pending)
			v[n - 1].or_next = true;
		or_pending = false;
		positive += !it.neg;
		v[n++] = it;
	}
	if (or_pending)
		return refuse(err, errlen, "'OR' goes between two words (or phrases), neither excluded with '-'");
	if (n == 0)
		return refuse(err, errlen, "the query is empty");
	if (positive == 0)
		return refuse(err, errlen, "a query needs a word to look for, not only words excluded with '-'");
	*ret_n = n;
	return 0;
}

/* Appends item it as an FTS5 string (its quotes doubled), and its '*'. */
static int put_item(struct sb *out, const struct item *it)
{
	int r = sb_add(out, "\"", 1);

	for (size_t i = 0; r == 0 && i < it->n; i++)
		r = it->s[i] == '"' ? sb_add(out, "\"\"", 2) : sb_add(out, it->s + i, 1);
	if (r == 0)
		r = sb_add(out, "\"", 1);
	if (r == 0 && it->prefix)
		r = sb_add(out, "*", 1);
	return r;
}

/* Appends the term of items v[*i, ...] (joined by OR) in parentheses; *i left at its last item. */
static int put_term(struct sb *out, const struct item *v, size_t *i)
{
	int r = sb_adds(out, "(");

	for (; r == 0; ++*i) {
		r = put_item(out, &v[*i]);
		if (r < 0 || !v[*i].or_next)
			break;
		r = sb_adds(out, " OR ");
	}
	return r < 0 ? r : sb_adds(out, ")");
}

int search_query_parse(const char *query, struct sb *out, char *err, size_t errlen)
{
	struct item v[SEARCH_QUERY_TERMS];
	_cleanup_sb_ struct sb e = SB_INIT;
	size_t n = 0, neg = 0;
	bool first = true;
	int r;

	if (errlen)
		err[0] = '\0';
	if ((r = read_items(query, v, &n, err, errlen)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		neg += v[i].neg;
	/* ((a) AND (b OR c)) ... */
	if (neg)
		r = sb_adds(&e, "(");
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (v[i].neg)
			continue;
		if (!first)
			r = sb_adds(&e, " AND ");
		first = false;
		if (r == 0)
			r = put_term(&e, v, &i);
	}
	if (r == 0 && neg)
		r = sb_adds(&e, ")");
	/* ... NOT (d) */
	for (size_t i = 0; r == 0 && i < n; i++)
		if (v[i].neg && (r = sb_adds(&e, " NOT (")) == 0 && (r = put_item(&e, &v[i])) == 0)
			r = sb_adds(&e, ")");
	if (r == 0)
		r = sb_add(out, e.buf, e.len);
	return r;
}

void search_parts_release(struct search_parts *p)
{
	for (size_t i = 0; i < p->npos; i++)
		sb_release(&p->pos[i]);
	p->npos = 0;
	sb_release(&p->any);
	sb_release(&p->neg);
}

int search_query_split(const char *query, struct search_parts *p, char *err, size_t errlen)
{
	struct item v[SEARCH_QUERY_TERMS];
	size_t n = 0;
	int r;

	*p = (struct search_parts){ .any = SB_INIT, .neg = SB_INIT };
	if (errlen)
		err[0] = '\0';
	if ((r = read_items(query, v, &n, err, errlen)) < 0)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (v[i].neg) {
			if ((r = sb_adds(&p->neg, p->neg.len ? " OR (" : "(")) == 0 && (r = put_item(&p->neg, &v[i])) == 0)
				r = sb_adds(&p->neg, ")");
			continue;
		}
		p->pos[p->npos] = (struct sb)SB_INIT;
		if ((r = put_term(&p->pos[p->npos++], v, &i)) == 0 && (r = sb_adds(&p->any, p->any.len ? " OR " : "")) == 0)
			r = sb_add(&p->any, p->pos[p->npos - 1].buf, p->pos[p->npos - 1].len);
	}
	if (r < 0)
		search_parts_release(p);
	return r;
}
