/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_MERGE_H
#define CONVFS_MERGE_H

/*
 * Three-way merges of the files several Cline windows rewrite whole: base
 * (what the writer last saw), head (what is stored now) and new (what the
 * writer wrote). Pure functions, no SQLite: see docs/MERGE.md for the rules.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum merge_origin {
	MERGE_FROM_HEAD = 0, /* the stored element, unchanged (ref = its row) */
	MERGE_FROM_NEW,      /* the writer's element (ref = its index in new) */
	MERGE_FROM_FIELDS,   /* a history item merged field by field (json owned) */
};

struct merge_elem {
	uint64_t key;   /* identity: a history item's id, a message's ts, else the hash */
	uint64_t hash;  /* of the bytes */
	int64_t ts;
	bool has_ts;
	const char *json; /* the bytes, where known (needed for new, and for field merges) */
	size_t len;
	int64_t ref;    /* head: row id; new: index */
	enum merge_origin origin;
	char *owned;    /* MERGE_FROM_FIELDS: the merged bytes, freed with the list */
};

struct merge_list {
	struct merge_elem *v;
	size_t n, alloc;
};

int merge_list_push(struct merge_list *l, const struct merge_elem *e);
void merge_list_release(struct merge_list *l);

enum merge_kind {
	MERGE_HISTORY,  /* taskHistory.json: items keyed by id */
	MERGE_MESSAGES, /* ui_messages.json, api_conversation_history.json: append-merge */
};

struct merge_stats {
	size_t from_head;   /* elements kept as stored (others' work included) */
	size_t from_new;    /* elements taken from the writer */
	size_t removed;     /* elements the writer removed, having seen them */
	size_t fields;      /* items merged field by field */
	size_t others_kept; /* elements the writer had not seen, kept */
};

/*
 * Fetches the bytes of a base element whose json is NULL (history field
 * merges need them). Returns 0 and sets *ret_json (freed with free()), or
 * -ENOENT.
 */
typedef int (*merge_fetch_fn)(void *ctx, const struct merge_elem *e, char **ret_json, size_t *ret_len);

/*
 * Merges into *ret (empty on entry). base may be NULL: the writer's base is
 * not known (history: nothing is removed; messages: the writer's version
 * wins, as a plain overwrite). base_read tells that the base is a version
 * the writer read, not only wrote: only then may history items be removed. Elements of *ret point into head and new, so
 * those must outlive it. Returns 0 or -ENOMEM.
 */
int merge_lists(enum merge_kind kind, const struct merge_list *base, bool base_read, const struct merge_list *head,
		const struct merge_list *new, merge_fetch_fn fetch, void *fetch_ctx,
		struct merge_list *ret, struct merge_stats *stats);

/*
 * Merges task_metadata.json: its arrays (files_in_context, model_usage,
 * environment_history) are append logs; other members follow the writer
 * where it changed them. base may be NULL. Returns 0 and sets *ret_json
 * (pretty-printed as JSON.stringify(x, null, 2) does; free()), or -EINVAL if
 * one of the three does not parse as an object (or holds what cJSON cannot
 * merge faithfully: a number beyond a double's range, two members of one
 * name, a \u0000 in a string), or -ENOMEM.
 */
int merge_metadata(const char *base, size_t base_len, const char *head, size_t head_len, const char *new,
		   size_t new_len, char **ret_json, size_t *ret_len);


#endif
