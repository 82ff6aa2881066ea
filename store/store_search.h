/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_STORE_SEARCH_H
#define CONVFS_STORE_SEARCH_H

/*
 * What `convfs search` (and a view of searches) needs of the store: the
 * messages of every conversation that match a query, ranked, and the state
 * of the index they are found in. Same conventions as store.h.
 *
 * The index holds the text of every current message of the conversation
 * docs (the API and ui streams of classic tasks, CLI 3.x sessions and
 * their subagents), as search.h says which strings of a message are text;
 * a message the trash or a rewrite took away is not found. It is kept in
 * the transaction of each commit. Only a store's first take-in, and the
 * upgrade of a store from before the index, leave messages for a build
 * that runs behind the mount (store_search_build()).
 */

#include "store/store.h"

enum store_search_stream {
	STORE_SEARCH_ANY_STREAM = 0,
	STORE_SEARCH_API, /* api_conversation_history.json, a CLI 3.x session's messages */
	STORE_SEARCH_UI,  /* ui_messages.json */
};

enum store_search_role {
	STORE_SEARCH_ANY_ROLE = 0,
	STORE_SEARCH_USER,
	STORE_SEARCH_ASSISTANT,
};

struct store_search_query {
	const char *text;          /* the query, in `convfs search` syntax (store_search_query_check()) */
	const char *ws_key;        /* only tasks of the workspace with this key; "": of none; NULL: any */
	int64_t since_ms, until_ms; /* only messages of a time in [since_ms, until_ms); 0: no bound */
	enum store_search_role role;
	enum store_search_stream stream;
	int64_t limit;             /* the best this many hits; 0: every hit */
	const char *mark_open, *mark_close; /* around each match in a snippet (NULL: "[", "]") */
	int snippet_tokens;        /* tokens of text in a snippet, at most 64; 0: 12 */
};

/* One message found. Its strings live as long as the callback runs. */
struct store_search_hit {
	double score;          /* bm25: the lower, the better; hits come best first, newest first on ties */
	int64_t elem_id;       /* the message's row (its identity while it is current) */
	const char *task;      /* the task or session id */
	const char *ws_key;    /* the task's workspace; NULL: not known */
	const char *ws_path;   /* its path; NULL with ws_key */
	const char *doc;       /* the compat doc: "tasks/<id>/ui_messages.json", ... */
	int64_t seq;           /* the message's position in it: line seq + 1 of its JSON Lines */
	int64_t time_ms;       /* the message's "ts"; else when it was committed */
	const char *stream;    /* "api" or "ui" */
	const char *role;      /* "user", "assistant", or NULL */
	const char *title;     /* the task's title (history item's "task", a session's title); "" if none */
	const char *snippet;   /* the text around the matches, marked, on one line */
};
typedef int (*store_search_fn)(void *ctx, const struct store_search_hit *hit);

/*
 * Whether text is a query (no store needed): 0, or -EINVAL with one line
 * in err that says what is wrong ("a phrase is not closed: ...").
 */
int store_search_query_check(const char *text, char *err, size_t errlen);

/*
 * Calls fn for each message that matches q, the best first (bm25, then
 * the newest). The hits are found and ranked in one query; fn is called
 * after the store's lock is let go, a few hits at a time, so it may call
 * the store. Returns the number of hits, -EINVAL for a query that is not
 * one (nothing logged), -ENOTSUP for a store without an index, fn's
 * negative return, or -errno.
 */
int store_search(struct store *st, const struct store_search_query *q, store_search_fn fn, void *ctx);

/* One task found, with where it is. Its strings live as long as the callback runs. */
struct store_search_task {
	int64_t rank;        /* from 1: the place of its best hit among the tasks' */
	const char *task;    /* the task or session id */
	const char *ws_key;  /* its workspace; NULL: not known */
	const char *ws_path; /* its path; NULL with ws_key */
};
typedef int (*store_search_task_fn)(void *ctx, const struct store_search_task *t);

/*
 * The tasks that have a message matching q->text (q's filters and marks
 * are not looked at), each once, the task of the best hit first (bm25;
 * among equals the one with the newest message); at most q->limit of them
 * (0: all). One query, no snippets: what a view of searches lists. fn is
 * called after the store's lock is let go. Returns the number of tasks,
 * -EINVAL for a query that is not one, -ENOTSUP for a store without an
 * index, fn's negative return, or -errno.
 */
int store_search_tasks(struct store *st, const struct store_search_query *q, store_search_task_fn fn, void *ctx);

/*
 * When the store last changed (its last revision's time; 0 for none): what
 * any search may find changes only then. The time of a view of searches.
 */
int store_search_last(struct store *st, int64_t *ret_ns);

struct store_search_state {
	bool present;   /* the store has an index (schema 15 on) */
	bool building;  /* it is being built: messages may be missing from it */
	int64_t indexed; /* messages in it (-1: not counted) */
	int64_t to_go;   /* while building: messages it has yet to take in (all of their text, or some) */
	int64_t pieces_to_go; /* of those, the pieces of large messages' text (about a MiB each) */
};
/* With count, the messages in it are counted too (a read of search_docsize, some milliseconds a 100,000). */
int store_search_state(struct store *st, bool count, struct store_search_state *ret);

/*
 * One step of the index's build: takes in up to max_rows messages it does
 * not hold (or about 2 MiB of them), in one transaction, and remembers how
 * far it got, so that a build cut short goes on where it stopped. Once
 * the build is over, a step takes in (or out) a few pieces of the text of
 * large messages that their commits left for later. *ret_done is true once
 * nothing is left. The daemon runs it behind the mount until done
 * (fs/backing/indexer.c), and again when store_search_more() or
 * store_search_waiting() says a commit left more. -EROFS on a read-only store.
 */
int store_search_build(struct store *st, size_t max_rows, bool *ret_done);
/*
 * Whether a commit of this process (on any connection) left pieces for
 * store_search_build() since the last call.
 */
bool store_search_more(void);
/* Whether any are waiting, whoever left them (another daemon, one killed): 1, 0 or -errno. */
int store_search_waiting(struct store *st);

#endif
