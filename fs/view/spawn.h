/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SPAWN_H
#define CONVFS_SPAWN_H

/*
 * What spawned a CLI 3.x subagent (spawn.c), from the session's
 * conversations alone: the spawn_agent tool calls of each conversation (the
 * session's own and its subagents'), matched to a subagent by its first
 * message, which is the call's task; and spawn.json, what the view shows of
 * it. No store, no FUSE: the caller feeds the messages one at a time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One spawn_agent call, and its result once the next message brings it. */
struct spawn_call {
	int64_t line;        /* the message that makes it, from 1: its line in messages.jsonl */
	char *id;            /* the tool call's id */
	char *task;          /* input.task: the subagent's first message */
	char *system_prompt; /* input.systemPrompt (NULL: none) */
	char *finish;        /* the result's finishReason ("completed", ...); NULL: no result yet */
	char *text;          /* the result's text (NULL: none) */
	int64_t iterations;  /* the result's iterations (-1: none) */
	bool taken;          /* matched to a subagent already */
};

/* The calls of one conversation, in order. */
struct spawn_calls {
	struct spawn_call *v;
	size_t n, alloc;
};
void spawn_calls_release(struct spawn_calls *c);

/* The word a message that makes or answers a call holds (a caller that streams looks for it first). */
#define SPAWN_WORD "spawn_agent"

/*
 * Message index (from 0) of the conversation, as JSON: its spawn_agent calls
 * are added, and the results it carries filled in. A message that is not
 * JSON or not a message is passed over (the client wrote it; nothing here
 * depends on it). -ENOMEM.
 */
int spawn_calls_add(struct spawn_calls *c, int64_t index, const char *json, size_t len);

/*
 * The first call not yet taken whose task is task (a subagent's first
 * message): marked taken and returned; NULL if none. Two subagents given the
 * same task are matched to the calls in order.
 */
struct spawn_call *spawn_calls_take(struct spawn_calls *c, const char *task);

/* What spawn.json says of one subagent. */
struct spawn_info {
	const char *agent;      /* agent_<ms>_<random> */
	const char *session_id; /* its sessionId, <root>__<agent> (NULL: none) */
	const char *parent;     /* the conversation that spawned it: the session's id, or an agent's */
	const char *spawned_by; /* where the call is: "<path>:<line>" (NULL: not found) */
	const struct spawn_call *call; /* NULL: not found */
	const char *first;      /* its first message, when no call was found (NULL: none) */
	int64_t started_ms;     /* from its id (0: none) */
	int64_t updated_ms;     /* its conversation's last save (0: none) */
};

/*
 * spawn.json's text (pretty JSON, ending in "\n"; free()): agent,
 * sessionId, parent, spawnedBy, task, systemPrompt, status ("running" while
 * the call has no result: still running, or stopped before it ended; else its
 * finishReason), result, iterations, startedAt, updatedAt (UTC, ISO 8601, ms).
 * -ENOMEM.
 */
int spawn_json(const struct spawn_info *in, char **ret, size_t *ret_len);

/* The time in a subagent's id, agent_<ms>_<random> (0 if it has none). */
int64_t spawn_agent_ms(const char *agent);

#endif
