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
 * The index reads the first SEARCH_ELEM_BYTES of an element as its first
 * piece, so the walk here takes any bytes: JSON cut anywhere, or not JSON
 * at all. The text of a larger element goes on in pieces (search.h): the
 * same walk over all of its bytes, read a window at a time, whose text is
 * cut where the bytes it comes from cross a piece's start. It recurses
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
#include <stdlib.h>
#include <string.h>

#include "store/json.h"
#include "store/search.h"

/* How deep blocks nest in blocks (tool_result content) before the rest is skipped. */
#define BLOCK_DEPTH 4
/* The bytes before the one asked for that a new window holds too: a backslash's look back, mostly. */
#define WINDOW_BACK 64
/* The most bytes one character of a string takes: an escaped surrogate pair, \\uXXXX\\uXXXX. */
#define CHAR_MAX_BYTES 12
/* How far before a piece's nominal start its real one may be: back to a space or a punctuation mark. */
#define PIECE_BACK 256
/* The longest member name the rules look for ("reasoning"), and more. */
#define KEY_MAX 16

/* The pieces search_text_pieces() cuts the text into, as the walk emits it. */
struct pieces {
	const struct search_bytes *m;
	size_t k;              /* the piece the text is of now */
	size_t cut;            /* where the next one starts: search_piece_start(k + 1) */
	size_t from, to;       /* the pieces asked for */
	search_piece_fn fn;
	void *ctx;
};

struct walk {
	const char *s;         /* the window: bytes [base, base + wn) of the message */
	size_t base, wn;
	size_t n, i;           /* the message's length (cut short where a read failed); where the walk is */
	const struct search_bytes *m; /* NULL: s holds all n bytes */
	char *room;            /* the window's buffer, when m */
	size_t room_len;
	struct sb *out;
	struct pieces *p;      /* NULL: all the text goes to out */
	int r;                 /* the first failure (-errno), or 1: the pieces asked for are made */
};

static inline bool in_window(const struct walk *w, size_t i)
{
	return i - w->base < w->wn; /* i < base wraps around to more than wn */
}

/* Makes the window hold byte i < w->n and what follows; a read that fails ends the walk there. */
static void window_at(struct walk *w, size_t i)
{
	size_t from = i > WINDOW_BACK ? i - WINDOW_BACK : 0;
	size_t len = w->n - from < w->room_len ? w->n - from : w->room_len;
	int r;

	if (!w->m || i >= w->n)
		return;
	r = w->m->read(w->m->ctx, from, w->room, len);
	if (r < 0) {
		if (w->r == 0)
			w->r = r;
		w->n = i; /* nothing goes on past it */
		return;
	}
	w->s = w->room;
	w->base = from;
	w->wn = len;
}

/* byte_at() outside the window: the window moved there first. */
static __attribute__((noinline)) char byte_moved(struct walk *w, size_t i)
{
	window_at(w, i);
	return in_window(w, i) ? w->s[i - w->base] : 0;
}

/*
 * Byte i of the message (0 past its end). Every byte outside string bodies
 * is read here: the test of the window stays inline, its move does not.
 */
static inline char byte_at(struct walk *w, size_t i)
{
	return in_window(w, i) ? w->s[i - w->base] : byte_moved(w, i);
}

/* The byte the walk is at: w->i < w->n. */
static char cur(struct walk *w)
{
	return byte_at(w, w->i);
}

static bool ended(const struct walk *w)
{
	return w->i >= w->n || w->r != 0;
}

static void skip_ws(struct walk *w)
{
	char c;

	while (w->i < w->n && ((c = cur(w)) == ' ' || c == '\t' || c == '\n' || c == '\r'))
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
		const char *q;
		size_t at, k, wend;

		if (i >= w->n) {
			i = w->n;
			break;
		}
		if (!in_window(w, i)) {
			window_at(w, i);
			continue; /* or, if the read failed, the end */
		}
		wend = w->base + w->wn;
		q = memchr(w->s + (i - w->base), '"', wend - i);
		if (!q) {
			i = wend;
			continue;
		}
		at = w->base + (size_t)(q - w->s);
		for (k = at; k > *start && byte_at(w, k - 1) == '\\'; k--)
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

	while (!ended(w)) {
		char c = cur(w);

		if (c == '"') {
			string_span(w, &s, &e);
			end = w->i;
			skip_ws(w);
			if (take && !(w->i < w->n && cur(w) == ':'))
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
	if (cur(w) == '"') {
		string_span(w, &start, &end);
	} else if (cur(w) == '{' || cur(w) == '[') {
		walk_nest(w, false);
	} else {
		/* a scalar, or a stray byte: at least one byte goes */
		do
			w->i++;
		while (w->i < w->n && !strchr(",:}] \t\r\n", cur(w)));
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
 * Decodes into out the characters of the JSON string body [.., end) that
 * begin in [i, lim); returns where it stopped: lim, or past it by one that
 * crosses it. Each is decoded as if the whole body were at hand, whatever
 * the window holds: one whose bytes the window ends in the middle of is
 * read again from a window that holds it. Room in out is made for each
 * window's worth: a byte of the body gives at most three of the text (a
 * lone '\\' at the end is U+FFFD).
 */
static size_t decode(struct walk *w, size_t i, size_t lim, size_t end)
{
	while (i < lim && w->r == 0) {
		size_t b, avail, stop;
		char *o;

		if (!in_window(w, i) || (w->base + w->wn < end && w->base + w->wn - i < CHAR_MAX_BYTES)) {
			window_at(w, i);
			if (!in_window(w, i))
				break;
		}
		b = w->base;
		avail = end < b + w->wn ? end : b + w->wn;
		stop = lim < avail ? lim : avail;
		if ((w->r = sb_grow(w->out, 3 * (stop - i + CHAR_MAX_BYTES) + 1)) < 0)
			break;
		o = w->out->buf + w->out->len;
		while (i < stop) {
			const unsigned char *s = (const unsigned char *)w->s + (i - b);
			unsigned char c = *s;
			size_t k;

			if (c >= 0x20 && c < 0x7f && c != '\\') {
				*o++ = (char)c; /* most of any text */
				i++;
			} else if (c < 0x80 && c != '\\') {
				o += put_code(o, c);
				i++;
			} else if (avail < end && avail - i < CHAR_MAX_BYTES) {
				break; /* the rest of it is past the window */
			} else if (c == '\\') {
				o += put_code(o, unescape((const char *)s, avail - i, &k));
				i += k;
			} else if ((k = json_utf8_len(s, avail - i)) > 0) {
				/* A valid sequence: its code point, for the check of formatting characters. */
				uint32_t cp = k == 2 ? (uint32_t)(c & 0x1f) : k == 3 ? (uint32_t)(c & 0x0f) : (uint32_t)(c & 0x07);

				for (size_t j = 1; j < k; j++)
					cp = (cp << 6) | (s[j] & 0x3f);
				o += put_code(o, cp);
				i += k;
			} else {
				*o++ = '?';
				i++;
			}
		}
		w->out->len = (size_t)(o - w->out->buf);
		w->out->buf[w->out->len] = '\0';
	}
	return i;
}

static void newline(struct walk *w)
{
	int r = sb_add(w->out, "\n", 1);

	if (r < 0 && w->r == 0)
		w->r = r;
}

/* The text of piece p->k is made: handed on if it is one asked for, and the next one begun. */
static void piece_done(struct walk *w)
{
	struct pieces *p = w->p;
	int r = 0;

	if (p->k >= p->from)
		r = p->fn(p->ctx, p->k, sb_str(w->out), w->out->len);
	w->out->len = 0;
	if (w->out->buf)
		w->out->buf[0] = '\0';
	p->k++;
	if (r == 0 && p->k >= p->to)
		r = 1;
	if (r == 0)
		r = search_piece_start(p->m, p->k + 1, &p->cut);
	if (r != 0)
		w->r = r;
}

/*
 * The JSON string body [start, end) goes into the text, then "\n". Cut
 * into pieces (w->p), each piece k has the characters that begin in
 * [search_piece_start(k), search_piece_start(k + 1)), and the "\n" goes
 * with the piece the body ends in: so that the text of a piece is the same
 * whether the pieces before it were made or not (they are not decoded
 * unless asked for).
 */
static void emit(struct walk *w, size_t start, size_t end)
{
	struct pieces *p = w->p;
	size_t i = start, lim;

	if (w->r != 0 || start >= end)
		return;
	if (!p) {
		decode(w, start, end, end);
		newline(w);
		return;
	}
	for (;;) {
		if (i >= p->cut) {
			size_t here = p->cut;

			piece_done(w);
			if (w->r != 0)
				return;
			i = start > here ? start : here;
			continue;
		}
		lim = end < p->cut ? end : p->cut;
		i = p->k >= p->from ? decode(w, i, lim, end) : lim;
		if (w->r != 0)
			return;
		if (lim == end)
			break;
	}
	if (p->k >= p->from)
		newline(w);
}

/*
 * Walks the object at w->i ('{'), calling fn for each member with w->i at
 * its value; fn takes the value (or leaves it, and it is skipped). w->i
 * ends after the object, or where it stops making sense.
 */
typedef void (*member_fn)(struct walk *w, const char *key, size_t klen, void *ctx);

static void members(struct walk *w, member_fn fn, void *ctx)
{
	char key[KEY_MAX];
	size_t ks, ke, at;

	w->i++; /* the '{' */
	for (;;) {
		skip_ws(w);
		if (ended(w))
			return;
		if (cur(w) == '}') {
			w->i++;
			return;
		}
		if (cur(w) == ',') {
			w->i++;
			continue;
		}
		if (cur(w) != '"') {
			skip_value(w); /* not an object after all: move on */
			continue;
		}
		string_span(w, &ks, &ke);
		/* A key is compared with names of a few letters: a longer one is none of them. */
		for (size_t j = 0; j < ke - ks && j < KEY_MAX; j++)
			key[j] = byte_at(w, ks + j);
		skip_ws(w);
		if (w->i < w->n && cur(w) == ':')
			w->i++;
		skip_ws(w);
		at = w->i;
		if (!ended(w))
			fn(w, key, ke - ks, ctx);
		if (w->i == at)
			skip_value(w);
	}
}

static bool key_is(const char *key, size_t klen, const char *name)
{
	return klen == strlen(name) && klen <= KEY_MAX && memcmp(key, name, klen) == 0;
}

static bool at(struct walk *w, char c)
{
	return w->i < w->n && cur(w) == c;
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

/* Whether the bytes [s, s + strlen(prefix)) of the message, s + strlen(prefix) <= e, are prefix's. */
static bool raw_begins(struct walk *w, size_t s, size_t e, const char *prefix)
{
	size_t n = strlen(prefix);

	if (e - s < n)
		return false;
	for (size_t j = 0; j < n; j++)
		if (byte_at(w, s + j) != prefix[j])
			return false;
	return true;
}

static bool raw_is(struct walk *w, size_t s, size_t e, const char *word)
{
	return e - s == strlen(word) && raw_begins(w, s, e, word);
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
		if (ended(w))
			return;
		if (cur(w) == ']') {
			w->i++;
			return;
		}
		if (cur(w) == ',') {
			w->i++;
		} else if (cur(w) == '{') {
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

/* The walk of a message, from its first byte. */
static void walk_message(struct walk *w)
{
	struct kinds k;

	skip_ws(w);
	if (!at(w, '{'))
		return;
	k = kinds_of(w);
	members(w, message_member, &k);
}

int search_text(const char *json, size_t len, struct sb *out)
{
	struct walk w = { .s = json, .wn = len, .n = len, .out = out };

	walk_message(&w);
	return w.r;
}

/*
 * Whether a piece may begin after byte c: an ASCII byte that is neither a
 * letter, a digit nor '_' (words are not cut), nor a backslash (an escape
 * is not).
 */
static bool separator(unsigned char c)
{
	return c < 0x80 && !(c >= '0' && c <= '9') && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && c != '_' &&
	       c != '\\';
}

size_t search_piece_count(size_t len)
{
	size_t n = len <= SEARCH_PIECE_BYTES ? 1 : (len - 1) / SEARCH_PIECE_BYTES + 1;

	return n < SEARCH_PIECES_MAX ? n : SEARCH_PIECES_MAX;
}

int search_piece_start(const struct search_bytes *m, size_t k, size_t *ret)
{
	unsigned char buf[PIECE_BACK];
	size_t at = k * SEARCH_PIECE_BYTES, from, q;
	int r;

	if (k == 0 || at >= m->len) {
		*ret = k == 0 ? 0 : m->len;
		return 0;
	}
	from = at - PIECE_BACK;
	if ((r = m->read(m->ctx, from, buf, PIECE_BACK)) < 0)
		return r;
	/* Just after the last space before it; else after the last punctuation mark; else where it is. */
	for (q = PIECE_BACK; q > 0 && buf[q - 1] != ' '; q--)
		;
	if (q == 0)
		for (q = PIECE_BACK; q > 0 && !separator(buf[q - 1]); q--)
			;
	*ret = q > 0 ? from + q : at;
	return 0;
}

int search_text_pieces(const struct search_bytes *m, size_t from, size_t to, search_piece_fn fn, void *ctx)
{
	_cleanup_sb_ struct sb text = SB_INIT;
	_cleanup_free_ char *room = NULL;
	size_t window = m->window > 2 * WINDOW_BACK + CHAR_MAX_BYTES ? m->window : SEARCH_PIECE_BYTES;
	struct pieces p = { .m = m, .from = from > 1 ? from : 1, .to = to, .fn = fn, .ctx = ctx };
	struct walk w = { .n = m->len, .m = m, .room_len = window, .out = &text, .p = &p };

	if (p.to > search_piece_count(m->len))
		p.to = search_piece_count(m->len);
	if (p.from >= p.to)
		return 0;
	if (!(room = malloc(window)))
		return -ENOMEM;
	w.room = room;
	w.r = search_piece_start(m, 1, &p.cut);
	if (w.r == 0)
		walk_message(&w);
	/* The pieces past the last text: empty. */
	while (w.r == 0)
		piece_done(&w);
	return w.r < 0 ? w.r : 0;
}

enum search_role search_role(const char *json, size_t len)
{
	struct walk w = { .s = json, .wn = len, .n = len };
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
