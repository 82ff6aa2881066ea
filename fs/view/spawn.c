/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spawn.c: what spawned a CLI 3.x subagent (spawn.h).
 *
 * The 3.x CLI's spawn_agent tool starts a subagent in the same session
 * folder: its conversation is sessions/<root>/<agent>.messages.json, whose
 * first message is the call's task. Its file names the session
 * (origin.parentThreadId) but not the conversation that spawned it: a
 * subagent's own subagent names the session too. Only db/sessions.db
 * (parent_agent_id) says which, and the store keeps that per mount beside the
 * backing tree, not as a doc. So the call is found where it is: the first
 * spawn_agent call, in any of the session's conversations, whose task is the
 * subagent's first message and that no other subagent took. Its result (the
 * tool_result that answers it, in the next message) says how it ended.
 *
 * A message is parsed only if it holds SPAWN_WORD (the caller streams the
 * rest past); one message at a time, so the memory is one message and the
 * calls.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/view/spawn.h"
#include "store/util.h"

static void call_release(struct spawn_call *k)
{
	free(k->id);
	free(k->task);
	free(k->system_prompt);
	free(k->finish);
	free(k->text);
}

void spawn_calls_release(struct spawn_calls *c)
{
	for (size_t i = 0; i < c->n; i++)
		call_release(&c->v[i]);
	free(c->v);
	*c = (struct spawn_calls){ 0 };
}

/* strdup of a JSON string's value, NULL for anything else; *oom set if it was a string and memory ran out. */
static char *string_of(const cJSON *v, bool *oom)
{
	char *s;

	if (!cJSON_IsString(v))
		return NULL;
	if (!(s = strdup(v->valuestring)))
		*oom = true;
	return s;
}

static int add_call(struct spawn_calls *c, int64_t index, const cJSON *block)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(block, "input");
	struct spawn_call k = { .line = index + 1, .iterations = -1 };
	bool oom = false;
	int r;

	k.id = string_of(cJSON_GetObjectItemCaseSensitive(block, "id"), &oom);
	k.task = string_of(cJSON_GetObjectItemCaseSensitive(input, "task"), &oom);
	k.system_prompt = string_of(cJSON_GetObjectItemCaseSensitive(input, "systemPrompt"), &oom);
	if (oom || (r = ARRAY_GROW(c->v, c->n, c->alloc, 8)) < 0) {
		call_release(&k);
		return -ENOMEM;
	}
	c->v[c->n++] = k;
	return 0;
}

/* The result of call k: its content is the JSON of {text, iterations, finishReason}, or an error's text. */
static int add_result(struct spawn_call *k, const cJSON *block)
{
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(block, "content");
	cJSON *res = cJSON_IsString(content) ? cJSON_Parse(content->valuestring) : NULL;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(res, "iterations");
	bool oom = false;

	free(k->finish);
	free(k->text);
	k->finish = k->text = NULL;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(block, "is_error")) || !cJSON_IsObject(res)) {
		k->finish = strdup(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(block, "is_error")) ? "error" : "unknown");
		oom = !k->finish;
		k->text = string_of(content, &oom);
	} else {
		k->finish = string_of(cJSON_GetObjectItemCaseSensitive(res, "finishReason"), &oom);
		if (!k->finish && !oom && !(k->finish = strdup("unknown")))
			oom = true;
		k->text = string_of(cJSON_GetObjectItemCaseSensitive(res, "text"), &oom);
		if (cJSON_IsNumber(it))
			k->iterations = (int64_t)it->valuedouble;
	}
	cJSON_Delete(res);
	return oom ? -ENOMEM : 0;
}

int spawn_calls_add(struct spawn_calls *c, int64_t index, const char *json, size_t len)
{
	cJSON *msg = cJSON_ParseWithLength(json, len);
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content"), *block;
	int r = 0;

	cJSON_ArrayForEach(block, (cJSON_IsArray(content) ? content : NULL)) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(block, "name");

		if (!cJSON_IsString(type))
			continue;
		if (strcmp(type->valuestring, "tool_use") == 0 && cJSON_IsString(name) &&
		    strcmp(name->valuestring, SPAWN_WORD) == 0) {
			r = add_call(c, index, block);
		} else if (strcmp(type->valuestring, "tool_result") == 0) {
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(block, "tool_use_id");

			for (size_t i = c->n; cJSON_IsString(id) && i-- > 0;)
				if (c->v[i].id && strcmp(c->v[i].id, id->valuestring) == 0) {
					r = add_result(&c->v[i], block);
					break;
				}
		}
		if (r < 0)
			break;
	}
	cJSON_Delete(msg);
	return r;
}

struct spawn_call *spawn_calls_take(struct spawn_calls *c, const char *task)
{
	for (size_t i = 0; task && i < c->n; i++)
		if (!c->v[i].taken && c->v[i].task && strcmp(c->v[i].task, task) == 0) {
			c->v[i].taken = true;
			return &c->v[i];
		}
	return NULL;
}

int64_t spawn_agent_ms(const char *agent)
{
	char *end;
	long long ms;

	if (!agent || strncmp(agent, "agent_", 6) != 0)
		return 0;
	ms = strtoll(agent + 6, &end, 10);
	return end != agent + 6 && *end == '_' && ms > 0 ? (int64_t)ms : 0;
}

/* A time as the 3.x CLI writes its own (2026-12-06T04:33:43.242Z); NULL member for none. */
static bool add_time(cJSON *o, const char *name, int64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	char buf[40], full[48];
	struct tm tm;

	if (ms <= 0)
		return cJSON_AddNullToObject(o, name) != NULL;
	if (!gmtime_r(&s, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		return cJSON_AddNullToObject(o, name) != NULL;
	snprintf(full, sizeof(full), "%s.%03dZ", buf, (int)(ms % 1000));
	return cJSON_AddStringToObject(o, name, full) != NULL;
}

/* A string member, or null. */
static bool add_str(cJSON *o, const char *name, const char *s)
{
	return (s ? cJSON_AddStringToObject(o, name, s) : cJSON_AddNullToObject(o, name)) != NULL;
}

int spawn_json(const struct spawn_info *in, char **ret, size_t *ret_len)
{
	const struct spawn_call *k = in->call;
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	char *text;
	size_t len;

	ok = ok && add_str(o, "agent", in->agent) && add_str(o, "sessionId", in->session_id) &&
	     add_str(o, "parent", in->parent) && add_str(o, "spawnedBy", in->spawned_by) &&
	     add_str(o, "task", k ? k->task : in->first) && add_str(o, "systemPrompt", k ? k->system_prompt : NULL) &&
	     add_str(o, "status", k && k->finish ? k->finish : k ? "running" : NULL) &&
	     add_str(o, "result", k ? k->text : NULL);
	if (ok)
		ok = (k && k->iterations >= 0 ? cJSON_AddNumberToObject(o, "iterations", (double)k->iterations)
					      : cJSON_AddNullToObject(o, "iterations")) != NULL;
	ok = ok && add_time(o, "startedAt", in->started_ms) && add_time(o, "updatedAt", in->updated_ms);
	text = ok ? cJSON_Print(o) : NULL;
	cJSON_Delete(o);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	/* cJSON's text ends in its NUL: one byte more for the line break. */
	if (!(*ret = realloc(text, len + 2))) {
		free(text);
		return -ENOMEM;
	}
	(*ret)[len] = '\n';
	(*ret)[len + 1] = '\0';
	*ret_len = len + 1;
	return 0;
}
