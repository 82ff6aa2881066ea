/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_LINES_H
#define CONVFS_LINES_H

/*
 * The lines of a JSON Lines snapshot, one at a time (lines.c): what the view
 * reads of a conversation to make its files (context.jsonl, a subagent's
 * spawn.json) without holding the conversation.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/*
 * One line: its index (from 0), where it lies in the snapshot (without its
 * "\n"), its bytes if it is at most the keep the caller gave (else NULL),
 * and for each of the caller's words (at most LINES_WORDS) whether the line
 * holds it (bit i for words[i]), found as the line streamed past whatever its
 * length. Return 0 to go on, or -errno to stop with it.
 */
#define LINES_WORDS 4
struct lines_line {
	int64_t index, off, len;
	bool nl;           /* a "\n" follows (all but a last line cut short) */
	const char *bytes;
	unsigned found;
};
typedef int (*lines_fn)(void *ctx, const struct lines_line *line);

/*
 * Calls fn for each line of snap in order, reading it a window of 1 MiB at a
 * time. words is NULL-terminated (or NULL). Returns the number of lines, or
 * -errno (what fn stopped with, or a read that failed).
 */
int64_t lines_each(struct store *st, struct store_snap *snap, size_t keep, const char *const *words, lines_fn fn,
		   void *ctx);

#endif
