/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_LAYOUT_H
#define CONVFS_LAYOUT_H

/*
 * The kinds of managed file (layout.c), as the store's own code needs them:
 * how a file is kept, merged and learnt from. fs/ sees only
 * store_path_kind() and the id rules of store.h.
 */

#include <stdbool.h>
#include <stddef.h>

#include "store/json.h"
#include "store/merge.h"
#include "store/store.h"

#define NAME_WORD_MAX 128 /* longest {name} in a pattern */

/* What tells the elements of an array doc apart in a merge (docs/MERGE.md). */
enum doc_ident {
	IDENT_NONE = 0,   /* not an array doc */
	IDENT_ITEM_ID,    /* taskHistory.json: a history item's "id" (kept in elems.key) */
	IDENT_TS,         /* Cline's message streams: a message's "ts" */
	IDENT_MESSAGE_ID, /* 3.x sessions: a message's "id" (kept in elems.key) */
};

/* What a commit of the doc teaches the store. */
enum doc_learn {
	LEARN_NOTHING = 0,
	LEARN_HISTORY,  /* history items: tasks and their workspaces */
	LEARN_MANIFEST, /* a 3.x session's manifest: the session's workspace */
};

/* Which stream of a conversation an array doc is, for the search index (store/index.c). */
enum doc_stream {
	STREAM_NONE = 0, /* not messages: not indexed (taskHistory.json) */
	STREAM_API,      /* what the model saw: api_conversation_history.json, a CLI 3.x session's messages */
	STREAM_UI,       /* what the user saw: ui_messages.json */
};

/* How a whole doc is merged when others committed since the writer's base. */
enum doc_whole_merge {
	WHOLE_MERGE_NONE = 0,     /* the writer's version wins (every version is kept) */
	WHOLE_MERGE_METADATA, /* task_metadata.json: merge_metadata() */
};

struct doc_layout {
	enum store_path_kind kind;
	enum doc_ident ident;
	const char *array_member; /* the member of the top-level object that holds the array; NULL: top level */
	enum doc_learn learn;
	enum doc_whole_merge whole_merge;
	enum doc_stream stream;
	char task_id[65];         /* the task or session the path belongs to; "" none */
};

/* The layout of path, or -ENOENT for a plain file. */
int doc_layout_of(const char *path, struct doc_layout *ret);

/*
 * The identity of element json[0, len) of a doc whose elements are told
 * apart by ident: fills e->key, e->hash, e->ts and e->has_ts. The one place
 * these rules live: the store, the unit tests and the fuzzers call it.
 * *ret_key_text (may be NULL) gets the text kept in elems.key, or NULL
 * (free() it).
 */
void doc_elem_identity(enum doc_ident ident, const char *json, size_t len, struct merge_elem *e,
		       char **ret_key_text);

/*
 * The same of the element at bytes [start, end) of the text rd reads, in
 * memory bounded whatever its size. Returns 0, -ENOMEM or the reader's error.
 */
int doc_elem_identity_read(enum doc_ident ident, const struct json_reader *rd, size_t start, size_t end,
			   struct merge_elem *e, char **ret_key_text);

/* A "ts" or "id" whose raw value is longer than this is not an identity. */
#define IDENT_VALUE_MAX 4096
#define IDENT_CHUNK ((size_t)1 << 16)

/* The key of an element whose elems.key text is known (loaded rows). */
uint64_t doc_key_of_text(const char *s, size_t n);

#endif
