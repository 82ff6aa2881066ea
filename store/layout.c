/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * layout.c: which paths of a client's data folder the store manages, and how.
 *
 * Paths are relative to the mount root, without a leading slash. One table,
 * layouts[], holds every kind of managed file of every client generation:
 * its path shape, how it is kept (one element a row, or whole), where its
 * array is, what tells its elements apart for a merge, what a commit of
 * it teaches the store (tasks, sessions, their workspaces), and which
 * stream of a conversation it is (what the search index holds). A new client
 * format is one more row. Everything else (shadow git repos, settings,
 * secrets, locks.db, the 3.x databases, temp files) is a plain file.
 *
 * Two generations are known, and a folder may hold both:
 *   - Cline's classic layout (the VS Code extension, CLI 1.x and 2.x):
 *     state/taskHistory.json and tasks/<id>/..., where <id> is a task id,
 *     Date.now() in decimal, the rule Cline's own history recovery applies;
 *   - the Cline CLI 3.x sessions: sessions/<id>/<id>.json (the manifest) and
 *     sessions/<id>/<stem>.messages.json (the conversation, and those of its
 *     subagents), where <id> is "<ms>_<random>": a session id always has a
 *     character that is not a digit, so the two kinds of id never meet.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/json.h"
#include "store/layout.h"
#include "store/util.h"

#define ID_MAX 64 /* longest task or session id */

bool store_path_per_mount(const char *rel)
{
	return strcmp(rel, "db") == 0 || strncmp(rel, "db/", 3) == 0 ||
	       (strncmp(rel, "locks.db", 8) == 0 && !strchr(rel, '/'));
}

bool store_is_task_id(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

/* [A-Za-z0-9_-]+, at most max bytes: safe as a name, never "." or "..". */
static bool is_word(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

bool store_is_session_id(const char *name)
{
	return is_word(name, strlen(name), ID_MAX) && !store_is_task_id(name);
}

bool store_is_conversation_id(const char *name)
{
	return store_is_task_id(name) || store_is_session_id(name);
}

int store_conversation_dir(const char *id, char *buf, size_t n)
{
	const char *top = store_is_task_id(id) ? "tasks" : store_is_session_id(id) ? "sessions" : NULL;

	if (!top || (size_t)snprintf(buf, n, "%s/%s", top, id) >= n)
		return -EINVAL;
	return 0;
}

/*
 * The table. In a pattern, a component may hold one placeholder between a
 * literal prefix and suffix: {task} a task id, {session} a session id (the
 * same one wherever it appears in a path), {name} any word. The first row
 * that matches decides.
 */
static const struct layout_row {
	const char *pattern;
	enum store_path_kind kind;
	enum doc_ident ident;
	const char *array_member; /* NULL: the file is the array */
	enum doc_learn learn;
	enum doc_whole_merge whole_merge;
	enum doc_stream stream;
} layouts[] = {
#define DIR(p, k) { .pattern = p, .kind = k }
#define ARRAY(p, i, m, l, s) \
	{ .pattern = p, .kind = STORE_PATH_ARRAY, .ident = i, .array_member = m, .learn = l, .stream = s }
#define WHOLE(p, l, w) { .pattern = p, .kind = STORE_PATH_WHOLE, .learn = l, .whole_merge = w }
	DIR("state", STORE_PATH_DOC_DIR),
	ARRAY("state/taskHistory.json", IDENT_ITEM_ID, NULL, LEARN_HISTORY, STREAM_NONE),
	DIR("tasks", STORE_PATH_TASKS_DIR),
	DIR("tasks/{task}", STORE_PATH_DOC_DIR),
	ARRAY("tasks/{task}/api_conversation_history.json", IDENT_TS, NULL, LEARN_NOTHING, STREAM_API),
	ARRAY("tasks/{task}/ui_messages.json", IDENT_TS, NULL, LEARN_NOTHING, STREAM_UI),
	WHOLE("tasks/{task}/task_metadata.json", LEARN_NOTHING, WHOLE_MERGE_METADATA),
	WHOLE("tasks/{task}/context_history.json", LEARN_NOTHING, WHOLE_MERGE_NONE),
	WHOLE("tasks/{task}/settings.json", LEARN_NOTHING, WHOLE_MERGE_NONE),
	DIR("sessions", STORE_PATH_TASKS_DIR),
	DIR("sessions/{session}", STORE_PATH_DOC_DIR),
	WHOLE("sessions/{session}/{session}.json", LEARN_MANIFEST, WHOLE_MERGE_NONE),
	ARRAY("sessions/{session}/{session}.messages.json", IDENT_MESSAGE_ID, "messages", LEARN_NOTHING, STREAM_API),
	/* a subagent's conversation, in the folder of the session that started it */
	ARRAY("sessions/{session}/{name}.messages.json", IDENT_MESSAGE_ID, "messages", LEARN_NOTHING, STREAM_API),
#undef DIR
#undef ARRAY
#undef WHOLE
};

/* Matches one path component against one pattern component; fills id for {task} and {session}. */
static bool match_component(const char *pat, size_t plen, const char *s, size_t n, char *id)
{
	const char *open = memchr(pat, '{', plen), *close;
	size_t pre, suf, vlen;
	const char *v;

	if (!open)
		return plen == n && memcmp(pat, s, n) == 0;
	close = memchr(open, '}', plen - (size_t)(open - pat));
	pre = (size_t)(open - pat);
	suf = plen - (size_t)(close - pat) - 1;
	if (n < pre + suf + 1 || memcmp(s, pat, pre) != 0 || memcmp(s + n - suf, close + 1, suf) != 0)
		return false;
	v = s + pre;
	vlen = n - pre - suf;
	if (strncmp(open, "{name}", 6) == 0)
		return is_word(v, vlen, NAME_WORD_MAX);
	if (vlen > ID_MAX)
		return false;
	if (*id)
		return strlen(id) == vlen && memcmp(id, v, vlen) == 0; /* the same id again */
	memcpy(id, v, vlen);
	id[vlen] = '\0';
	if (strncmp(open, "{task}", 6) == 0 ? store_is_task_id(id) : store_is_session_id(id))
		return true;
	id[0] = '\0';
	return false;
}

static bool match(const char *pattern, const char *path, char *id)
{
	const char *p = pattern, *s = path;

	id[0] = '\0';
	for (;;) {
		size_t plen = strcspn(p, "/"), n = strcspn(s, "/");

		if (!match_component(p, plen, s, n, id))
			return false;
		p += plen;
		s += n;
		if (!*p || !*s)
			return !*p && !*s;
		p++;
		s++;
	}
}

int doc_layout_of(const char *path, struct doc_layout *ret)
{
	char id[ID_MAX + 1];

	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++) {
		const struct layout_row *l = &layouts[i];

		if (!match(l->pattern, path, id))
			continue;
		*ret = (struct doc_layout){
			.kind = l->kind,
			.ident = l->ident,
			.array_member = l->array_member,
			.learn = l->learn,
			.whole_merge = l->whole_merge,
			.stream = l->stream,
		};
		memcpy(ret->task_id, id, strlen(id) + 1);
		return 0;
	}
	return -ENOENT;
}

uint64_t doc_key_of_text(const char *s, size_t n)
{
	return hash64(s, n) | 1; /* never 0, to tell it from a missing key */
}

/*
 * What doc_elem_identity() makes of an element's hash and the raw values of
 * its "ts" and "id" members (NULL: none, or longer than IDENT_VALUE_MAX).
 */
static void identity_of(enum doc_ident ident, uint64_t hash, const char *ts, size_t ts_len, const char *id,
			size_t id_len, struct merge_elem *e, char **ret_key_text)
{
	char *text = NULL;
	long long v;

	e->hash = hash;
	e->key = e->hash;
	e->has_ts = false;
	if (ts && json_to_int64(ts, ts_len, &v) == 0) {
		e->ts = v;
		e->has_ts = true;
		if (ident == IDENT_TS)
			e->key = (uint64_t)v;
	}
	if (id && (ident == IDENT_ITEM_ID || ident == IDENT_MESSAGE_ID)) {
		cJSON *val = cJSON_ParseWithLength(id, id_len);

		if (val && cJSON_IsString(val) && val->valuestring)
			text = strdup(val->valuestring);
		cJSON_Delete(val);
		if (text)
			e->key = doc_key_of_text(text, strlen(text));
	}
	if (ret_key_text)
		*ret_key_text = text;
	else
		free(text);
}

static bool wants_id(enum doc_ident ident)
{
	return ident == IDENT_ITEM_ID || ident == IDENT_MESSAGE_ID;
}

void doc_elem_identity(enum doc_ident ident, const char *json, size_t len, struct merge_elem *e,
		       char **ret_key_text)
{
	size_t a = 0, b = 0, c = 0, d = 0;
	bool ts = json_object_member(json, len, "ts", &a, &b) == 0 && b - a <= IDENT_VALUE_MAX;
	bool id = wants_id(ident) && json_object_member(json, len, "id", &c, &d) == 0 && d - c <= IDENT_VALUE_MAX;

	identity_of(ident, hash64(json, len), ts ? json + a : NULL, b - a, id ? json + c : NULL, d - c, e,
		    ret_key_text);
}

/* The raw value of member key of the object at [start, end) of rd's text into buf (IDENT_VALUE_MAX + 1). */
static int member_value_read(const struct json_reader *rd, size_t start, size_t end, const char *key, char *buf,
			     size_t *ret_len)
{
	size_t a, b;
	int r = json_object_member_read(rd, start, end, key, &a, &b);

	if (r < 0)
		return r;
	if (b - a > IDENT_VALUE_MAX)
		return -ENOENT;
	if ((r = rd->read(rd->ctx, a, buf, b - a)) < 0)
		return r;
	buf[b - a] = '\0';
	*ret_len = b - a;
	return 0;
}

int doc_elem_identity_read(enum doc_ident ident, const struct json_reader *rd, size_t start, size_t end,
			   struct merge_elem *e, char **ret_key_text)
{
	_cleanup_free_ char *chunk = malloc(IDENT_CHUNK);
	char ts[IDENT_VALUE_MAX + 1], id[IDENT_VALUE_MAX + 1];
	size_t ts_len = 0, id_len = 0;
	struct hash64 h;
	int r, rts, rid = -ENOENT;

	if (!chunk)
		return -ENOMEM;
	hash64_begin(&h, end - start);
	for (size_t at = start; at < end;) {
		size_t n = end - at < IDENT_CHUNK ? end - at : IDENT_CHUNK;

		if ((r = rd->read(rd->ctx, at, chunk, n)) < 0)
			return r;
		hash64_add(&h, chunk, n);
		at += n;
	}
	rts = member_value_read(rd, start, end, "ts", ts, &ts_len);
	if (rts < 0 && rts != -ENOENT)
		return rts;
	if (wants_id(ident) && (rid = member_value_read(rd, start, end, "id", id, &id_len)) < 0 && rid != -ENOENT)
		return rid;
	identity_of(ident, hash64_end(&h), rts == 0 ? ts : NULL, ts_len, rid == 0 ? id : NULL, id_len, e,
		    ret_key_text);
	return 0;
}

int store_path_conversation(const char *path, char *buf, size_t n)
{
	struct doc_layout l;

	if (doc_layout_of(path, &l) < 0 || !l.task_id[0] || strlen(l.task_id) >= n)
		return -ENOENT;
	memcpy(buf, l.task_id, strlen(l.task_id) + 1);
	return 0;
}

enum store_path_kind store_path_kind(const char *path)
{
	struct doc_layout l;

	return doc_layout_of(path, &l) == 0 ? l.kind : STORE_PATH_PLAIN;
}

uint32_t store_workspace_key(const char *utf8_path)
{
	const unsigned char *p = (const unsigned char *)utf8_path;
	uint32_t h = 0;

	while (*p) {
		uint32_t cp;
		int len;

		if (p[0] < 0x80)
			cp = p[0], len = 1;
		else if ((p[0] & 0xe0) == 0xc0 && p[1])
			cp = ((p[0] & 0x1fu) << 6) | (p[1] & 0x3fu), len = 2;
		else if ((p[0] & 0xf0) == 0xe0 && p[1] && p[2])
			cp = ((p[0] & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu), len = 3;
		else if ((p[0] & 0xf8) == 0xf0 && p[1] && p[2] && p[3])
			cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) | (p[3] & 0x3fu), len = 4;
		else
			cp = 0xfffd, len = 1; /* what a JS string holds for a bad byte */
		if (cp >= 0x10000) {
			cp -= 0x10000;
			h = h * 31 + (0xd800 + (cp >> 10));
			h = h * 31 + (0xdc00 + (cp & 0x3ff));
		} else {
			h = h * 31 + cp;
		}
		p += len;
	}
	return h;
}
