/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_CONTEXT_H
#define CONVFS_CONTEXT_H

/*
 * What the model saw (context.c): a Cline task's API conversation as the
 * client rebuilds it before each request, from the whole conversation
 * (api_conversation_history.json), the range it dropped to stay within the
 * context window (conversationHistoryDeletedRange) and its edits of earlier
 * messages (context_history.json). No store, no FUSE: the view feeds it the
 * elements one at a time and serves what it answers.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* conversationHistoryDeletedRange: [start, end], inclusive; set false for none. */
struct context_range {
	bool set;
	int64_t start, end;
};

/*
 * The range in the JSON value s[0..n) (an array of two integers; null or
 * anything else: none) into *ret.
 */
void context_range_parse(const char *s, size_t n, struct context_range *ret);

/*
 * The edits of context_history.json in force: for each message and block,
 * the latest edit, once those made after max_ts (ms; INT64_MAX for none)
 * are dropped, as the client drops them when it goes back to a checkpoint.
 * A file the client could not load gives no edits, as it gives the client
 * none. json may be NULL (no file). *ret is freed with context_edits_free();
 * -ENOMEM.
 */
struct context_edits;
int context_edits_parse(const char *json, size_t len, int64_t max_ts, struct context_edits **ret);
void context_edits_free(struct context_edits *e);
/* How many messages have an edit in force (for tests and logs). */
size_t context_edits_count(const struct context_edits *e);

/*
 * One pass over a conversation of total messages, in order, each once:
 * context_walk_next() says whether message index is in what the model saw,
 * and if it is, either that it is sent as stored (*ret_json NULL) or what is
 * sent instead (*ret_json, *ret_len: one line of compact JSON, free()).
 * The walk borrows edits (may be NULL) for as long as it lives.
 */
struct context_walk;
int context_walk_new(const struct context_edits *edits, const struct context_range *range, int64_t total,
		     struct context_walk **ret);
void context_walk_free(struct context_walk *w);

/*
 * What the walk needs of message index, told only whether its bytes hold
 * CONTEXT_TOOL_USE and CONTEXT_TOOL_RESULT (a caller that streams a long
 * message looks for them as it goes): that it is left out, or sent as stored
 * (the walk moves past it), or that context_walk_next() must see its bytes.
 */
#define CONTEXT_TOOL_USE "\"tool_use\""
#define CONTEXT_TOOL_RESULT "\"tool_result\""
enum context_need { CONTEXT_LEFT_OUT, CONTEXT_AS_IS, CONTEXT_PARSE };
enum context_need context_walk_need(struct context_walk *w, int64_t index, bool mentions_use, bool mentions_result);
/*
 * -EINVAL for a message that is not JSON where the client would have to
 * read it (it could not have sent it either), -ENOMEM.
 */
int context_walk_next(struct context_walk *w, int64_t index, const char *json, size_t len, bool *ret_kept,
		      char **ret_json, size_t *ret_len);

#endif
