/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * search_text.c: the text of a message that the search index holds, and
 * who wrote it.
 *
 * A message is one element of a conversation doc: an API message
 * ({"role", "content": string or blocks}), a CLI 3.x message (the same,
 * with an "id") or a ui message ({"type": "say"|"ask", "say", "text"}).
 * What a person reads of it is some of its strings; the rest (ids, times,
 * token counts, a screenshot in base64, the copy of an API request an
 * api_req_started carries) would only fill the index with words nobody
 * looks for. search.h says which strings are taken.
 *
 * The index reads the first SEARCH_ELEM_BYTES of an element, so the walk
 * here takes any bytes: JSON cut anywhere, or not JSON at all. It recurses
 * only as deep as the rules descend (blocks in a tool result's blocks, at
 * most BLOCK_DEPTH), and skips everything else by counting brackets; every
 * step moves on by at least one byte, so it ends, in time about linear in
 * the input (an object is looked at twice: once for its kind, once for its
 * text). The same function makes the text that is
 * indexed, deleted from the index and shown in a snippet (the view
 * search_text, index.c): the index stays exact only if it gives the same
 * text for the same bytes, always. Changing these rules changes what the
 * index of an existing store holds: that is a migration that builds the
 * index again.
 */
#include <errno.h>
#include <string.h>

#include "store/json.h"
#include "store/search.h"

/* How deep blocks nest in blocks (tool_result content) before the rest is skipped. */
#define BLOCK_DEPTH 4

struct walk {
	const char *s;
	size_t n, i;
	struct sb *out;
	int r; /* the first failure: -ENOMEM */
};

static void skip_ws(struct walk *w)
{
	while (w->i < w->n && (w->s[w->i] == ' ' || w->s[w->i] == '\t' || w->s[w->i] == '\n' || w->s[w->i] == '\r'))
		w->i++;
}

/*
 * At a '"': moves past the string; its body is [*start, *end) (to the end
 * of the text if it is cut). A quote ends it unless an odd number of
 * backslashes comes before it; found with memchr(), which most of the time
 * spent here is.
 */
static void string_span(struct walk *w, size_t *start, size_t *end)
{
	size_t i = w->i + 1;

	*start = i;
	for (;;) {
		const char *q = memchr(w->s + i, '"', w->n - i);
		size_t at, k;

		if (!q) {
			i = w->n;
			break;
		}
		at = (size_t)(q - w->s);
		for (k = at; k > *start && w->s[k - 1] == '\\'; k--)
			;
		if ((at - k) % 2 == 0) {
			i = at;
			break;
		}
		i = at + 1;
	}
	*end = i;
	w->i = i < w->n ? i + 1 : i;
}

static void emit(struct walk *w, size_t start, size_t end);

/*
 * Moves past the nest of brackets at w->i ('{' or '['), whatever it holds;
 * with take, every string in it that is not a key (not followed by ':')
 * goes into the text.
 */
static void walk_nest(struct walk *w, bool take)
{
	size_t s, e, end;
	int depth = 0;

	while (w->i < w->n && w->r == 0) {
		char c = w->s[w->i];

		if (c == '"') {
			string_span(w, &s, &e);
			end = w->i;
			skip_ws(w);
			if (take && !(w->i < w->n && w->s[w->i] == ':'))
				emit(w, s, e);
			w->i = end;
			continue;
		}
		w->i++;
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return;
	}
}

/* Moves past the value at w->i, whatever it is: a string, a nest of brackets, or a scalar. */
static void skip_value(struct walk *w)
{
	size_t start, end;

	skip_ws(w);
	if (w->i >= w->n)
		return;
	if (w->s[w->i] == '"') {
		string_span(w, &start, &end);
	} else if (w->s[w->i] == '{' || w->s[w->i] == '[') {
		walk_nest(w, false);
	} else {
		/* a scalar, or a stray byte: at least one byte goes */
		do
			w->i++;
		while (w->i < w->n && !strchr(",:}] \t\r\n", w->s[w->i]));
	}
}

/* Writes one code point as UTF-8 at o, control and invisible formatting characters as a space; its length. */
static size_t put_code(char *o, uint32_t c)
{
	if (c < 0x20 || (c >= 0x7f && c < 0xa0) || (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
	    (c >= 0x2060 && c <= 0x2069) || c == 0xfeff)
		c = ' ';
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

static int hex4(const char *s, size_t n, uint32_t *ret)
{
	uint32_t v = 0;

	if (n < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		char c = s[k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*ret = v;
	return 0;
}

/* The code point of the escape at s[0] == '\\' (s[0, n)); *used: its bytes. A bad one is U+FFFD. */
static uint32_t unescape(const char *s, size_t n, size_t *used)
{
	uint32_t hi, lo;

	*used = n < 2 ? n : 2;
	if (n < 2)
		return 0xfffd;
	switch (s[1]) {
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'u':
		if (hex4(s + 2, n - 2, &hi) < 0)
			return 0xfffd;
		*used = 6;
		if (hi < 0xd800 || hi > 0xdfff)
			return hi;
		if (hi >= 0xdc00 || n < 12 || s[6] != '\\' || s[7] != 'u' || hex4(s + 8, n - 8, &lo) < 0 ||
		    lo < 0xdc00 || lo > 0xdfff)
			return 0xfffd; /* a lone surrogate */
		*used = 12;
		return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
	default:
		return (unsigned char)s[1] < 0x80 ? (unsigned char)s[1] : 0xfffd;
	}
}

/*
 * Appends the JSON string body s[start, end) decoded, then "\n". Written
 * straight into out, whose room is made first: a byte of the body gives at
 * most three of the text (a lone '\\' at the end is U+FFFD).
 */
static void emit(struct walk *w, size_t start, size_t end)
{
	const char *s = w->s;
	size_t i = start;
	char *o;

	if (w->r < 0 || start >= end || (w->r = sb_grow(w->out, 3 * (end - start) + 1)) < 0)
		return;
	o = w->out->buf + w->out->len;
	while (i < end) {
		unsigned char c = (unsigned char)s[i];
		size_t k;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			*o++ = (char)c; /* most of any text */
			i++;
		} else if (c == '\\') {
			o += put_code(o, unescape(s + i, end - i, &k));
			i += k;
		} else if (c < 0x80) {
			o += put_code(o, c);
			i++;
		} else if ((k = json_utf8_len((const unsigned char *)s + i, end - i)) > 0) {
			/* A valid sequence: its code point, for the check of formatting characters. */
			uint32_t cp = k == 2 ? (uint32_t)(c & 0x1f) : k == 3 ? (uint32_t)(c & 0x0f) : (uint32_t)(c & 0x07);

			for (size_t j = 1; j < k; j++)
				cp = (cp << 6) | ((unsigned char)s[i + j] & 0x3f);
			o += put_code(o, cp);
			i += k;
		} else {
			*o++ = '?';
			i++;
		}
	}
	*o++ = '\n';
	w->out->len = (size_t)(o - w->out->buf);
	w->out->buf[w->out->len] = '\0';
}

/*
 * Walks the object at w->i ('{'), calling fn for each member with w->i at
 * its value; fn takes the value (or leaves it, and it is skipped). w->i
 * ends after the object, or where it stops making sense.
 */
typedef void (*member_fn)(struct walk *w, const char *key, size_t klen, void *ctx);

static void members(struct walk *w, member_fn fn, void *ctx)
{
	size_t ks, ke, at;

	w->i++; /* the '{' */
	for (;;) {
		skip_ws(w);
		if (w->i >= w->n)
			return;
		if (w->s[w->i] == '}') {
			w->i++;
			return;
		}
		if (w->s[w->i] == ',') {
			w->i++;
			continue;
		}
		if (w->s[w->i] != '"') {
			skip_value(w); /* not an object after all: move on */
			continue;
		}
		string_span(w, &ks, &ke);
		skip_ws(w);
		if (w->i < w->n && w->s[w->i] == ':')
			w->i++;
		skip_ws(w);
		at = w->i;
		if (w->i < w->n)
			fn(w, w->s + ks, ke - ks, ctx);
		if (w->i == at)
			skip_value(w);
	}
}

static bool key_is(const char *key, size_t klen, const char *name)
{
	return klen == strlen(name) && memcmp(key, name, klen) == 0;
}

static bool at(const struct walk *w, char c)
{
	return w->i < w->n && w->s[w->i] == c;
}

/* Takes the string value at w->i into the text (anything else is skipped). */
static void take_string(struct walk *w)
{
	size_t s, e;

	if (!at(w, '"'))
		return;
	string_span(w, &s, &e);
	emit(w, s, e);
}

/* The members a first look at an object finds: its "type", "say" and "role", raw. */
struct kinds {
	size_t type_s, type_e, say_s, say_e, role_s, role_e;
	bool ask;
};

static void kinds_member(struct walk *w, const char *key, size_t klen, void *ctx)
{
	struct kinds *k = ctx;
	size_t s, e;

	if (key_is(key, klen, "ask"))
		k->ask = true;
	if (!at(w, '"'))
		return;
	string_span(w, &s, &e);
	if (key_is(key, klen, "type")) {
		k->type_s = s;
		k->type_e = e;
	} else if (key_is(key, klen, "say")) {
		k->say_s = s;
		k->say_e = e;
	} else if (key_is(key, klen, "role")) {
		k->role_s = s;
		k->role_e = e;
	}
}

/* A first look at the object at w->i, which stays where it is. */
static struct kinds kinds_of(struct walk *w)
{
	struct kinds k = { 0 };
	size_t i = w->i;

	members(w, kinds_member, &k);
	w->i = i;
	return k;
}

static bool raw_is(const struct walk *w, size_t s, size_t e, const char *word)
{
	return e - s == strlen(word) && memcmp(w->s + s, word, e - s) == 0;
}

static bool raw_begins(const struct walk *w, size_t s, size_t e, const char *prefix)
{
	return e - s >= strlen(prefix) && memcmp(w->s + s, prefix, strlen(prefix)) == 0;
}

/* Every string of the value at w->i, at any depth (a tool's input). Keys are not text. */
static void take_all_strings(struct walk *w)
{
	skip_ws(w);
	if (at(w, '"'))
		take_string(w);
	else if (at(w, '{') || at(w, '['))
		walk_nest(w, true);
	else
		skip_value(w);
}

static void take_blocks(struct walk *w, int depth);

/* The value of "content": a string, or blocks. */
static void take_content(struct walk *w, int depth)
{
	if (at(w, '"'))
		take_string(w);
	else if (at(w, '['))
		take_blocks(w, depth);
}

struct block_ctx {
	const struct kinds *k;
	int depth;
};

static void block_member(struct walk *w, const char *key, size_t klen, void *ctx)
{
	const struct block_ctx *b = ctx;
	const struct kinds *k = b->k;
	bool tool_use = raw_is(w, k->type_s, k->type_e, "tool_use") || raw_is(w, k->type_s, k->type_e, "server_tool_use");

	if (raw_is(w, k->type_s, k->type_e, "thinking")) {
		if (key_is(key, klen, "thinking"))
			take_string(w);
	} else if (tool_use) {
		if (key_is(key, klen, "name"))
			take_string(w);
		else if (key_is(key, klen, "input"))
			take_all_strings(w);
	} else if (raw_is(w, k->type_s, k->type_e, "tool_result")) {
		if (key_is(key, klen, "content"))
			take_content(w, b->depth + 1);
	} else if (raw_is(w, k->type_s, k->type_e, "image") || raw_is(w, k->type_s, k->type_e, "document") ||
		   raw_is(w, k->type_s, k->type_e, "redacted_thinking")) {
		/* not text */
	} else if (key_is(key, klen, "text")) {
		take_string(w); /* a text block, or one of a kind not known here */
	}
}

/* The blocks of the array at w->i ('['). */
static void take_blocks(struct walk *w, int depth)
{
	if (depth > BLOCK_DEPTH) {
		skip_value(w);
		return;
	}
	w->i++; /* the '[' */
	for (;;) {
		skip_ws(w);
		if (w->i >= w->n || w->r < 0)
			return;
		if (w->s[w->i] == ']') {
			w->i++;
			return;
		}
		if (w->s[w->i] == ',') {
			w->i++;
		} else if (w->s[w->i] == '{') {
			struct kinds k = kinds_of(w);
			struct block_ctx b = { &k, depth };

			members(w, block_member, &b);
		} else {
			skip_value(w);
		}
	}
}

static void message_member(struct walk *w, const char *key, size_t klen, void *ctx)
{
	const struct kinds *k = ctx;
	/* ui messages whose text is a copy of the API request, bookkeeping, or a screenshot */
	bool copy = raw_begins(w, k->say_s, k->say_e, "api_req_") || raw_is(w, k->say_s, k->say_e, "deleted_api_reqs") ||
		    raw_is(w, k->say_s, k->say_e, "browser_action_result");

	if (key_is(key, klen, "content"))
		take_content(w, 0);
	else if ((key_is(key, klen, "text") && !copy) || key_is(key, klen, "reasoning"))
		take_string(w);
}

int search_text(const char *json, size_t len, struct sb *out)
{
	struct walk w = { .s = json, .n = len, .out = out };
	struct kinds k;

	skip_ws(&w);
	if (!at(&w, '{'))
		return 0;
	k = kinds_of(&w);
	members(&w, message_member, &k);
	return w.r;
}

enum search_role search_role(const char *json, size_t len)
{
	struct walk w = { .s = json, .n = len };
	struct kinds k;

	skip_ws(&w);
	if (!at(&w, '{'))
		return SEARCH_ROLE_NONE;
	k = kinds_of(&w);
	if (raw_is(&w, k.role_s, k.role_e, "user"))
		return SEARCH_ROLE_USER;
	if (raw_is(&w, k.role_s, k.role_e, "assistant"))
		return SEARCH_ROLE_ASSISTANT;
	if (raw_is(&w, k.say_s, k.say_e, "task") || raw_is(&w, k.say_s, k.say_e, "user_feedback") ||
	    raw_is(&w, k.say_s, k.say_e, "user_feedback_diff"))
		return SEARCH_ROLE_USER;
	if (k.say_e > k.say_s || k.ask)
		return SEARCH_ROLE_ASSISTANT;
	return SEARCH_ROLE_NONE;
}

const char *search_role_name(enum search_role r)
{
	return r == SEARCH_ROLE_USER ? "user" : r == SEARCH_ROLE_ASSISTANT ? "assistant" : NULL;
}
