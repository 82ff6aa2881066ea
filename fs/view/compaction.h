/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_COMPACTION_H
#define CONVFS_COMPACTION_H

/*
 * What the model saw of a CLI 3.x session (compaction.c): the CLI keeps what
 * it compacted in sessions/<id>/<id>.compaction.json, with the number of
 * messages it stands for and a SHA-256 of its own serialisation of them, and
 * sends the compacted messages then the rest only while that hash still
 * matches the session's messages. This file reproduces the state's checks,
 * the hash and the message keys exactly; no store, no FUSE.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/util.h"

/* The compaction state, as the client's schema accepts it. */
struct compaction {
	int64_t count;     /* source_message_count */
	char *prefix_hash; /* "sha256:<hex>", or NULL */
	char *last_key;    /* source_last_message_key, or NULL */
	char *text;        /* the compacted messages as JSON Lines, each line ending in "\n" */
	size_t text_len;
};

/*
 * The state in json[0..len): 0 and *ret (free with compaction_free()), or 0
 * and *ret NULL for a file the client would ignore (not JSON, or not the
 * shape its schema accepts); -ENOMEM.
 */
int compaction_parse(const char *json, size_t len, struct compaction **ret);
void compaction_free(struct compaction *c);

/*
 * The client's hash of the first count messages: made with
 * compaction_hash_new() (*ret freed with compaction_hash_free(); -ENOMEM),
 * given each message's bytes in order, then read once with
 * compaction_hash_final().
 */
struct compaction_hash;
int compaction_hash_new(int64_t count, struct compaction_hash **ret);
void compaction_hash_free(struct compaction_hash *h);
/* -EINVAL for a message the client could not serialise (not JSON, a role with ':'), -ENOMEM. */
int compaction_hash_add(struct compaction_hash *h, const char *json, size_t len);
/* "sha256:" and 64 hex digits, NUL-terminated. */
#define COMPACTION_HASH_LEN 71
void compaction_hash_final(struct compaction_hash *h, char out[COMPACTION_HASH_LEN + 1]);

/*
 * The key the client gives a message (its id, else its role and time, else
 * its role and content), into *ret (free()); -EINVAL as compaction_hash_add().
 */
int compaction_message_key(const char *json, size_t len, char **ret);

/* Whether a message is one the client only shows (metadata.displayOnly: true), never sends. */
bool compaction_display_only(const char *json, size_t len);
#define COMPACTION_DISPLAY_ONLY "\"displayOnly\""

/*
 * One pass over a session's messages, in order, each once: which are sent
 * (not display-only), which come after the compacted ones, and at the end
 * whether the state applies (compaction_walk_applies()): then the client
 * sends c->text then the sent messages after the first c->count; else every
 * sent message. c may be NULL (no state: every sent message). The walk
 * borrows c for as long as it lives.
 */
struct compaction_walk;
/* *ret is freed with compaction_walk_free(); -ENOMEM. */
int compaction_walk_new(const struct compaction *c, struct compaction_walk **ret);
void compaction_walk_free(struct compaction_walk *w);
/* Whether the walk must see the next message's bytes, told only whether they hold COMPACTION_DISPLAY_ONLY. */
bool compaction_walk_needs(const struct compaction_walk *w, bool mentions_display_only);
/*
 * The next message: json may be NULL if compaction_walk_needs() said no.
 * *ret_sent: the client sends it; *ret_after: it follows the compacted
 * ones. -EINVAL, -ENOMEM as compaction_hash_add().
 */
int compaction_walk_next(struct compaction_walk *w, const char *json, size_t len, bool mentions_display_only,
			 bool *ret_sent, bool *ret_after);
/* After the last message: whether the state applies (the same answer if asked again). */
bool compaction_walk_applies(struct compaction_walk *w);

/* The text of a user message as the client's formatDisplayUserInput gives it, appended to out. */
int compaction_display_input(const char *s, size_t n, struct sb *out);

#endif
