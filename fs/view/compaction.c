/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * compaction.c: whether a CLI 3.x session's compaction state applies, and what
 * the model saw then (compaction.h).
 *
 * The CLI checks its state against the messages it sends (those not marked
 * metadata.displayOnly): it applies while source_message_count is at most
 * their number and the SHA-256 of its serialisation of the first
 * source_message_count of them is source_prefix_hash (a state without the
 * hash: while the key of the last of them is source_last_message_key). Its
 * serialisation of a message is JSON.stringify() of [["role", ..],
 * ["content", ..], ["agent", ..], ["sessionId", ..], ["metadata", ..],
 * ["modelInfo", ..], ["metrics", ..]] (a missing member as null), the text of
 * a user message first passed through formatDisplayUserInput (tags of user
 * input, commands and mode notices taken out, a slash command put back as
 * "/name text").
 *
 * So this file writes JSON as JSON.stringify() writes what JSON.parse() read:
 * no white space, strings escaped only where JSON requires (the rest as
 * UTF-8), numbers as JavaScript prints them, an object's members in
 * JavaScript's order (keys that are array indexes first, ascending; then the
 * others in the order first met; a repeated key holds its last value). The
 * messages are those stored; a message the client could not serialise (a
 * role with ':', the text of a user message that is not a string) makes the
 * caller fail rather than guess. A string holding U+0000 is cut there by the
 * parser: the hash then differs and the state is not applied (the client
 * writes none such).
 *
 * A message is parsed only when needed: for the hash (the first
 * source_message_count), for the key, or when it mentions displayOnly.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fs/view/compaction.h"
#include "store/json.h"

/* ---- JavaScript's text of values ---------------------------------------------------- */

static int add_zeros(struct sb *out, int n)
{
	int r = 0;

	for (int i = 0; r == 0 && i < n; i++)
		r = sb_add(out, "0", 1);
	return r;
}

/* Number.prototype.toString(): the shortest digits that read back, placed as ECMAScript says. */
static int js_number(struct sb *out, double d)
{
	char buf[40], digits[24];
	int k = 0, n, p, r;

	if (!isfinite(d))
		return sb_adds(out, "null"); /* JSON.stringify of Infinity, NaN */
	if (d == 0)
		return sb_adds(out, "0"); /* and of -0 */
	if (d < 0 && sb_adds(out, "-") < 0)
		return -ENOMEM;
	d = fabs(d);
	for (p = 1; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	for (const char *c = buf; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			digits[k++] = *c;
	while (k > 1 && digits[k - 1] == '0')
		k--;
	digits[k] = '\0';
	n = (int)strtol(strchr(buf, 'e') + 1, NULL, 10) + 1; /* the value is 0.digits × 10^n */
	if (k <= n && n <= 21)
		return (r = sb_adds(out, digits)) < 0 ? r : add_zeros(out, n - k);
	if (0 < n && n <= 21)
		return sb_addf(out, "%.*s.%s", n, digits, digits + n);
	if (-6 < n && n <= 0) {
		if ((r = sb_adds(out, "0.")) < 0 || (r = add_zeros(out, -n)) < 0)
			return r;
		return sb_adds(out, digits);
	}
	return sb_addf(out, "%c%s%se%c%d", digits[0], k > 1 ? "." : "", digits + 1, n - 1 >= 0 ? '+' : '-',
		       abs(n - 1));
}

/* JSON.stringify() of a string: '"', '\\' and control characters escaped, the rest as it is. */
static int js_string(struct sb *out, const char *s)
{
	int r = sb_add(out, "\"", 1);

	for (; r == 0 && *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
				: c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;

		if (esc)
			r = sb_adds(out, esc);
		else if (c < 0x20)
			r = sb_addf(out, "\\u%04x", c) < 0 ? -ENOMEM : 0;
		else
			r = sb_add(out, s, 1);
	}
	return r == 0 ? sb_add(out, "\"", 1) : r;
}

/* An array index as JavaScript orders it first: "0", or digits without a leading 0, below 2^32 - 1. */
static bool array_index(const char *k, unsigned long long *ret)
{
	unsigned long long v = 0;
	size_t n = strlen(k);

	if (n == 0 || n > 10 || (k[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (k[i] < '0' || k[i] > '9')
			return false;
		v = v * 10 + (unsigned)(k[i] - '0');
	}
	*ret = v;
	return v < 4294967295ULL;
}

struct member {
	const char *key;
	const cJSON *value;
	bool index;
	unsigned long long at;
};

static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	if (x->index != y->index)
		return x->index ? -1 : 1;
	if (x->index)
		return x->at < y->at ? -1 : x->at > y->at;
	return x->at < y->at ? -1 : x->at > y->at; /* first met first */
}

static int js_value(struct sb *out, const cJSON *v);

/* An object's members in JavaScript's order, a repeated key holding its last value. */
static int js_object(struct sb *out, const cJSON *v)
{
	_cleanup_free_ struct member *m = NULL;
	size_t n = 0, alloc = 0;
	unsigned long long pos = 0;
	const cJSON *c;
	int r = 0;

	cJSON_ArrayForEach(c, v) {
		size_t i;

		for (i = 0; i < n && strcmp(m[i].key, c->string) != 0; i++)
			;
		if (i < n) {
			m[i].value = c;
			continue;
		}
		if ((r = ARRAY_GROW(m, n, alloc, 8)) < 0)
			return r;
		m[n] = (struct member){ c->string, c, false, pos++ };
		if (array_index(c->string, &m[n].at))
			m[n].index = true;
		n++;
	}
	if (n > 1)
		qsort(m, n, sizeof(*m), member_cmp);
	r = sb_add(out, "{", 1);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (i > 0)
			r = sb_add(out, ",", 1);
		if (r == 0)
			r = js_string(out, m[i].key);
		if (r == 0)
			r = sb_add(out, ":", 1);
		if (r == 0)
			r = js_value(out, m[i].value);
	}
	return r == 0 ? sb_add(out, "}", 1) : r;
}

/* JSON.stringify() of what JSON.parse() made of v. */
static int js_value(struct sb *out, const cJSON *v)
{
	const cJSON *c;
	int r;

	if (!v || cJSON_IsNull(v))
		return sb_adds(out, "null");
	if (cJSON_IsTrue(v))
		return sb_adds(out, "true");
	if (cJSON_IsFalse(v))
		return sb_adds(out, "false");
	if (cJSON_IsNumber(v))
		return js_number(out, v->valuedouble);
	if (cJSON_IsString(v))
		return js_string(out, v->valuestring);
	if (cJSON_IsObject(v))
		return js_object(out, v);
	r = sb_add(out, "[", 1);
	cJSON_ArrayForEach(c, v) {
		if (r == 0 && c != v->child)
			r = sb_add(out, ",", 1);
		if (r == 0)
			r = js_value(out, c);
	}
	return r == 0 ? sb_add(out, "]", 1) : r;
}

/* The member of an object JSON.parse() keeps: the last of its name. */
static cJSON *member(const cJSON *o, const char *name)
{
	cJSON *c, *last = NULL;

	if (!cJSON_IsObject(o))
		return NULL;
	cJSON_ArrayForEach(c, o)
		if (strcmp(c->string, name) == 0)
			last = c;
	return last;
}

/* ---- formatDisplayUserInput ----------------------------------------------------------- */

/*
 * The length of the JavaScript white space (String.prototype.trim: ASCII's,
 * U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F, U+205F, U+3000,
 * U+FEFF) that s[0..n) is exactly, or 0.
 */
static size_t js_space(const unsigned char *s, size_t n)
{
	if (n == 1)
		return (s[0] >= 0x09 && s[0] <= 0x0d) || s[0] == ' ';
	if (n == 2)
		return s[0] == 0xc2 && s[1] == 0xa0 ? 2 : 0;
	if (n != 3)
		return 0;
	if ((s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80) ||
	    (s[0] == 0xe2 && s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 ||
					      s[2] == 0xaf)) ||
	    (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f) || (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80) ||
	    (s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf))
		return 3;
	return 0;
}

/* The length of the JavaScript white space at s (n bytes there), or 0. */
static size_t js_space_at(const unsigned char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (js_space(s, k))
			return k;
	return 0;
}

/* The length of the JavaScript white space ending at s + n, or 0. */
static size_t js_space_before(const unsigned char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (js_space(s + n - k, k))
			return k;
	return 0;
}

/* String.prototype.trim() of sb, in place. */
static void js_trim(struct sb *sb)
{
	size_t from = 0, k;

	if (!sb->buf)
		return;
	while ((k = js_space_before((unsigned char *)sb->buf, sb->len)) > 0)
		sb->len -= k;
	while (from < sb->len && (k = js_space_at((unsigned char *)sb->buf + from, sb->len - from)) > 0)
		from += k;
	memmove(sb->buf, sb->buf + from, sb->len - from);
	sb->len -= from;
	sb->buf[sb->len] = '\0';
}

static int sb_set(struct sb *sb, const char *s, size_t n)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
	return sb_add(sb, s, n);
}

static bool is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The next "<tag" at or after from, or NULL. */
static const char *find_open(const char *from, const char *tag)
{
	size_t tl = strlen(tag);

	for (const char *p = from; (p = strchr(p, '<')); p++)
		if (strncmp(p + 1, tag, tl) == 0)
			return p;
	return NULL;
}

/* s.replace(/<tag\b[^>]*>([\s\S]*?)<\/tag>/g, "$1") into out; *ret_changed if it matched. */
static int strip_pairs(const char *s, const char *tag, struct sb *out, bool *ret_changed)
{
	char close[64];
	const char *pos = s, *p = s;
	size_t tl = strlen(tag);
	int r = 0;

	snprintf(close, sizeof(close), "</%s>", tag);
	*ret_changed = false;
	out->len = 0;
	while (r == 0 && (p = find_open(p, tag))) {
		const char *gt, *end;

		if (is_word(p[1 + tl])) { /* \b: "<tagname" is another tag */
			p++;
			continue;
		}
		if (!(gt = strchr(p + 1 + tl, '>')) || !(end = strstr(gt + 1, close)))
			break; /* no later "<tag" can match either */
		r = sb_add(out, pos, (size_t)(p - pos));
		if (r == 0)
			r = sb_add(out, gt + 1, (size_t)(end - gt - 1));
		pos = p = end + strlen(close);
		*ret_changed = true;
	}
	return r == 0 ? sb_adds(out, pos) : r;
}

/* s.replace(/<tag[^>]*>/g, "") into out. */
static int strip_opens(const char *s, const char *tag, struct sb *out)
{
	const char *pos = s, *p = s, *gt;
	int r = 0;

	out->len = 0;
	while (r == 0 && (p = find_open(p, tag)) && (gt = strchr(p + 1 + strlen(tag), '>'))) {
		r = sb_add(out, pos, (size_t)(p - pos));
		pos = p = gt + 1;
	}
	return r == 0 ? sb_adds(out, pos) : r;
}

/* The tags of user input and commands taken out (the client's hw()), into s, in place. */
static int strip_user_tags(struct sb *s)
{
	static const char *const tags[] = { "user_input", "user_command" };
	_cleanup_sb_ struct sb g = SB_INIT;
	int r = 0;

	js_trim(s);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(tags); i++) {
		bool changed;

		if ((r = strip_pairs(sb_str(s), tags[i], &g, &changed)) == 0 && !changed)
			r = strip_opens(sb_str(s), tags[i], &g);
		if (r == 0)
			r = sb_set(s, sb_str(&g), g.len);
		js_trim(s);
	}
	return r;
}

/* Every "<mode_notice>...</mode_notice>" taken out, as the client's loop of indexOf() does, then trimmed. */
static int strip_mode_notices(struct sb *s)
{
	static const char open[] = "<mode_notice>", close[] = "</mode_notice>";
	char *i = s->buf ? strstr(s->buf, open) : NULL;

	while (i) {
		char *end = strstr(i + strlen(open), close);

		if (!end)
			break;
		end += strlen(close);
		memmove(i, end, s->len - (size_t)(end - s->buf) + 1);
		s->len -= (size_t)(end - i);
		i = strstr(i, open);
	}
	js_trim(s);
	return 0;
}

/*
 * The slash of a message that is only a command (the client's tw():
 * /^<user_command\b([^>]*)>([\s\S]*?)<\/user_command>$/i on the trimmed
 * text, then /slash="([^"]+)"/i in its attributes, trimmed), into slash;
 * false if it is not one.
 */
static int command_slash(const char *s, size_t n, struct sb *slash, bool *ret_found)
{
	static const char open[] = "<user_command", close[] = "</user_command>";
	_cleanup_sb_ struct sb t = SB_INIT;
	const char *gt, *a, *attrs_end;
	size_t ol = strlen(open), cl = strlen(close);
	int r;

	*ret_found = false;
	if ((r = sb_set(&t, s, n)) < 0)
		return r;
	js_trim(&t);
	if (t.len < ol + 1 + cl || strncasecmp(t.buf, open, ol) != 0 || is_word(t.buf[ol]) ||
	    strcasecmp(t.buf + t.len - cl, close) != 0 || !(gt = strchr(t.buf + ol, '>')) || gt >= t.buf + t.len - cl)
		return 0;
	attrs_end = gt;
	for (a = t.buf + ol; a + 7 <= attrs_end; a++) {
		const char *q;

		if (strncasecmp(a, "slash=\"", 7) != 0 || a[7] == '"')
			continue;
		if (!(q = memchr(a + 7, '"', (size_t)(attrs_end - a - 7))))
			continue;
		if ((r = sb_set(slash, a + 7, (size_t)(q - a - 7))) < 0)
			return r;
		js_trim(slash);
		*ret_found = slash->len > 0;
		return 0;
	}
	return 0;
}

int compaction_display_input(const char *s, size_t n, struct sb *out)
{
	static const char team_task[] = "spawn a team of agents for the following task:";
	_cleanup_sb_ struct sb text = SB_INIT, slash = SB_INIT;
	bool command;
	int r;

	if ((r = sb_set(&text, s, n)) < 0 || (r = strip_user_tags(&text)) < 0 || (r = strip_mode_notices(&text)) < 0 ||
	    (r = command_slash(s, n, &slash, &command)) < 0)
		return r;
	if (!command)
		return sb_add(out, sb_str(&text), text.len);
	if (strcasecmp(sb_str(&slash), "team") == 0) {
		if (strncasecmp(sb_str(&text), team_task, strlen(team_task)) == 0) {
			memmove(text.buf, text.buf + strlen(team_task), text.len - strlen(team_task) + 1);
			text.len -= strlen(team_task);
			js_trim(&text);
		}
		return text.len ? sb_addf(out, "/team %s", text.buf) : sb_adds(out, "/team");
	}
	return text.len ? sb_addf(out, "/%s %s", slash.buf, text.buf) : sb_addf(out, "/%s", slash.buf);
}

/* ---- a message as the client serialises it ------------------------------------------ */

/* The client's message role: a string without ':' (it throws on anything else). */
static const char *role_of(const cJSON *msg)
{
	const cJSON *role = member(msg, "role");

	if (!cJSON_IsString(role) || strchr(role->valuestring, ':'))
		return NULL;
	return role->valuestring;
}

/*
 * The text s (a member "text" of holder, NULL if it has none) replaced by
 * formatDisplayUserInput(s), in place; -EINVAL for a value other than a
 * string or null (the client throws).
 */
static int display_text(cJSON *holder, cJSON *s)
{
	_cleanup_sb_ struct sb out = SB_INIT;
	cJSON *text;
	char *dup;
	int r;

	if (s && !cJSON_IsString(s) && !cJSON_IsNull(s))
		return -EINVAL;
	if (s && cJSON_IsString(s) && (r = compaction_display_input(s->valuestring, strlen(s->valuestring), &out)) < 0)
		return r;
	if (!s) { /* {...block, text}: a new member goes last */
		if (!(text = cJSON_CreateString(sb_str(&out))))
			return -ENOMEM;
		if (!cJSON_AddItemToObject(holder, "text", text)) {
			cJSON_Delete(text);
			return -ENOMEM;
		}
		return 0;
	}
	if (!(dup = strdup(sb_str(&out))))
		return -ENOMEM;
	if (cJSON_IsString(s))
		free(s->valuestring);
	s->type = (s->type & ~0xFF) | cJSON_String; /* in its place: a repeated key keeps its first place */
	s->valuestring = dup;
	return 0;
}

/* The client's x_(): a user message's text as it shows it. msg is changed in place. */
static int display_message(cJSON *msg, const char *role)
{
	cJSON *content = member(msg, "content"), *b;
	int r;

	if (strcmp(role, "user") != 0)
		return 0;
	if (cJSON_IsString(content))
		return display_text(msg, content);
	if (!cJSON_IsArray(content))
		return -EINVAL; /* content.map() throws */
	cJSON_ArrayForEach(b, content) {
		const cJSON *type;

		if (cJSON_IsNull(b))
			return -EINVAL; /* null.type throws */
		type = member(b, "type");
		if (cJSON_IsString(type) && strcmp(type->valuestring, "text") == 0 &&
		    (r = display_text(b, member(b, "text"))) < 0)
			return r;
	}
	return 0;
}

/* JSON.stringify() of the client's fg(msg), appended to out. */
static int serialise(const cJSON *msg, const char *role, struct sb *out)
{
	static const char *const names[] = { "content", "agent", "sessionId", "metadata", "modelInfo", "metrics" };
	int r = sb_adds(out, "[[\"role\",");

	if (r == 0)
		r = js_string(out, role);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(names); i++) {
		if ((r = sb_addf(out, "],[\"%s\",", names[i])) == 0)
			r = js_value(out, member(msg, names[i]));
	}
	return r == 0 ? sb_adds(out, "]]") : r;
}

/* The message at json parsed and shown as the client shows it, with its role. */
static int message_parse(const char *json, size_t len, cJSON **ret, const char **ret_role)
{
	_cleanup_json_ cJSON *msg = cJSON_ParseWithLength(json, len);
	int r;

	if (!msg || !(*ret_role = role_of(msg)))
		return -EINVAL;
	if ((r = display_message(msg, *ret_role)) < 0)
		return r;
	*ret = TAKE_PTR(msg);
	return 0;
}

struct compaction_hash {
	crypto_hash_sha256_state st;
};

int compaction_hash_new(int64_t count, struct compaction_hash **ret)
{
	struct compaction_hash *h = malloc(sizeof(*h));
	char line[32];

	if (!h)
		return -ENOMEM;
	crypto_hash_sha256_init(&h->st);
	crypto_hash_sha256_update(&h->st, (const unsigned char *)"cline-session-compaction-source-v2\n", 35);
	snprintf(line, sizeof(line), "%lld\n", (long long)count);
	crypto_hash_sha256_update(&h->st, (const unsigned char *)line, strlen(line));
	*ret = h;
	return 0;
}

void compaction_hash_free(struct compaction_hash *h)
{
	free(h);
}

int compaction_hash_add(struct compaction_hash *h, const char *json, size_t len)
{
	_cleanup_json_ cJSON *msg = NULL;
	_cleanup_sb_ struct sb out = SB_INIT;
	const char *role;
	int r;

	if ((r = message_parse(json, len, &msg, &role)) < 0 || (r = serialise(msg, role, &out)) < 0 ||
	    (r = sb_add(&out, "\n", 1)) < 0)
		return r;
	crypto_hash_sha256_update(&h->st, (const unsigned char *)out.buf, out.len);
	return 0;
}

void compaction_hash_final(struct compaction_hash *h, char out[COMPACTION_HASH_LEN + 1])
{
	unsigned char d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256_final(&h->st, d);
	memcpy(out, "sha256:", 7);
	sodium_bin2hex(out + 7, COMPACTION_HASH_LEN + 1 - 7, d, sizeof(d));
}

int compaction_message_key(const char *json, size_t len, char **ret)
{
	_cleanup_json_ cJSON *msg = NULL;
	_cleanup_sb_ struct sb out = SB_INIT, trimmed = SB_INIT;
	const cJSON *id, *ts, *content;
	const char *role;
	int r;

	if ((r = message_parse(json, len, &msg, &role)) < 0)
		return r;
	id = member(msg, "id");
	ts = member(msg, "ts");
	if (cJSON_IsString(id)) { /* id.trim() */
		if ((r = sb_adds(&trimmed, id->valuestring)) < 0)
			return r;
		js_trim(&trimmed);
	}
	if (trimmed.len > 0) {
		r = sb_addf(&out, "id:%s", trimmed.buf);
	} else if (cJSON_IsNumber(ts) && isfinite(ts->valuedouble)) {
		if ((r = sb_addf(&out, "ts:%s:", role)) == 0)
			r = js_number(&out, ts->valuedouble);
	} else {
		content = member(msg, "content");
		if ((r = sb_addf(&out, "content:%s:", role)) == 0)
			r = content ? js_value(&out, content) : sb_adds(&out, "undefined");
	}
	if (r < 0)
		return r;
	*ret = sb_detach(&out, NULL);
	return *ret ? 0 : -ENOMEM;
}

bool compaction_display_only(const char *json, size_t len)
{
	_cleanup_json_ cJSON *msg = cJSON_ParseWithLength(json, len);

	return cJSON_IsTrue(member(member(msg, "metadata"), "displayOnly"));
}

/* ---- the state --------------------------------------------------------------------- */

void compaction_free(struct compaction *c)
{
	if (!c)
		return;
	free(c->prefix_hash);
	free(c->last_key);
	free(c->text);
	free(c);
}

/* zod's datetime(): YYYY-MM-DDTHH:MM:SS[.digits]Z, a day the calendar has. */
static bool is_datetime(const char *s)
{
	static const int days[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, n = 0;
	const char *p;

	for (size_t i = 0; i < 19; i++)
		if (!s[i] || ((i == 4 || i == 7) ? s[i] != '-' : i == 10 ? s[i] != 'T' : (i == 13 || i == 16) ? s[i] != ':'
			      : (s[i] < '0' || s[i] > '9')))
			return false;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > days[mo - 1] || h > 23 || mi > 59 || sec > 59)
		return false;
	if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return false;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return false;
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	}
	return strcmp(p, "Z") == 0;
}

/* An optional string member of at least one character: true if absent or such; *ret a copy (or NULL). */
static bool opt_string(const cJSON *root, const char *name, char **ret, bool *ret_nomem)
{
	const cJSON *v = member(root, name);

	*ret = NULL;
	if (!v)
		return true;
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return false;
	*ret_nomem = !(*ret = strdup(v->valuestring));
	return true;
}

/* A message of the state as the schema takes it: an object, role user or assistant, content a string or array. */
static bool state_message(const cJSON *m)
{
	const cJSON *role = member(m, "role"), *content = member(m, "content");

	return cJSON_IsObject(m) && cJSON_IsString(role) &&
	       (strcmp(role->valuestring, "user") == 0 || strcmp(role->valuestring, "assistant") == 0) &&
	       (cJSON_IsString(content) || cJSON_IsArray(content));
}

/* Whether the state root is one the client's schema accepts (its other members ignored). */
static bool state_valid(const cJSON *root)
{
	const cJSON *v = member(root, "version"), *at = member(root, "updated_at"), *n = member(root, "source_message_count");
	const cJSON *msgs = member(root, "messages"), *m, *opt;

	if (!cJSON_IsObject(root) || !cJSON_IsNumber(v) || v->valuedouble != 1 || !cJSON_IsString(at) ||
	    !is_datetime(at->valuestring) || !cJSON_IsNumber(n) || n->valuedouble < 0 ||
	    n->valuedouble > 9007199254740991.0 || n->valuedouble != floor(n->valuedouble) || !cJSON_IsArray(msgs))
		return false;
	cJSON_ArrayForEach(m, msgs)
		if (!state_message(m))
			return false;
	if ((opt = member(root, "conversation_id")) && (!cJSON_IsString(opt) || !opt->valuestring[0]))
		return false;
	return !(opt = member(root, "system_prompt")) || cJSON_IsString(opt);
}

int compaction_parse(const char *json, size_t len, struct compaction **ret)
{
	_cleanup_json_ cJSON *root = json ? cJSON_ParseWithLength(json, len) : NULL;
	_cleanup_sb_ struct sb text = SB_INIT;
	struct compaction *c;
	const cJSON *m;
	bool nomem = false, ok;
	int r = 0;

	*ret = NULL;
	if (!state_valid(root))
		return 0;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->count = (int64_t)member(root, "source_message_count")->valuedouble;
	ok = opt_string(root, "source_prefix_hash", &c->prefix_hash, &nomem) &&
	     opt_string(root, "source_last_message_key", &c->last_key, &nomem);
	cJSON_ArrayForEach(m, member(root, "messages")) {
		if (r == 0)
			r = js_value(&text, m);
		if (r == 0)
			r = sb_add(&text, "\n", 1);
	}
	if (nomem || r < 0 || !ok) {
		compaction_free(c);
		return nomem || r < 0 ? -ENOMEM : 0;
	}
	c->text = sb_detach(&text, &c->text_len);
	if (!c->text && !(c->text = strdup(""))) {
		compaction_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

/* ---- the pass over the messages --------------------------------------------------- */

struct compaction_walk {
	const struct compaction *c;
	struct compaction_hash *h;
	int64_t sent; /* messages sent so far */
	bool key_matches, decided, applies;
};

int compaction_walk_new(const struct compaction *c, struct compaction_walk **ret)
{
	struct compaction_walk *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->c = c;
	if (c && c->prefix_hash && (r = compaction_hash_new(c->count, &w->h)) < 0) {
		free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void compaction_walk_free(struct compaction_walk *w)
{
	if (!w)
		return;
	compaction_hash_free(w->h);
	free(w);
}

bool compaction_walk_needs(const struct compaction_walk *w, bool mentions_display_only)
{
	if (mentions_display_only)
		return true;
	if (!w->c || w->sent >= w->c->count)
		return false;
	return w->h || (w->c->last_key && w->sent == w->c->count - 1);
}

int compaction_walk_next(struct compaction_walk *w, const char *json, size_t len, bool mentions_display_only,
			 bool *ret_sent, bool *ret_after)
{
	const struct compaction *c = w->c;
	int r;

	*ret_sent = !(mentions_display_only && compaction_display_only(json, len));
	*ret_after = false;
	if (!*ret_sent)
		return 0;
	if (c && w->sent < c->count && w->h && (r = compaction_hash_add(w->h, json, len)) < 0)
		return r;
	if (c && !w->h && c->last_key && w->sent == c->count - 1) {
		_cleanup_free_ char *key = NULL;

		if ((r = compaction_message_key(json, len, &key)) < 0)
			return r;
		w->key_matches = strcmp(key, c->last_key) == 0;
	}
	*ret_after = c && w->sent >= c->count;
	w->sent++;
	return 0;
}

bool compaction_walk_applies(struct compaction_walk *w)
{
	char hash[COMPACTION_HASH_LEN + 1];

	if (w->decided)
		return w->applies;
	w->decided = true;
	if (!w->c || w->c->count > w->sent)
		return w->applies = false;
	if (w->h) {
		compaction_hash_final(w->h, hash);
		return w->applies = strcmp(hash, w->c->prefix_hash) == 0;
	}
	return w->applies = w->c->count > 0 && w->key_matches;
}
