/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_VIEW_SEARCH_H
#define CONVFS_VIEW_SEARCH_H

/*
 * A hit of the search index as convfs shows it, in `convfs search`
 * (fs/cmd/cmd_search.c) and in the view's search/<query>/results.jsonl
 * (view_search.c): one JSON object, or text with its marks.
 */

#include <stddef.h>

#include "store/store_search.h"
#include "store/util.h"

/* The marks a snippet is asked with (store_search_query's mark_open, mark_close): made colours or brackets. */
#define VIEW_SEARCH_MARK_OPEN "\x01"
#define VIEW_SEARCH_MARK_CLOSE "\x02"

/*
 * Appends s to out, each control character made '?' (C0, DEL, and the C1
 * range a terminal may take for an escape), and the marks turned into
 * open and close; at most max characters (0: all), then "…". 0 or -ENOMEM.
 */
int view_search_clean(struct sb *out, const char *s, const char *open, const char *close, size_t max);

/*
 * The hit's view path (from the mount's root) and its workspace's folder;
 * the doc and "unknown" if none shows it. st, the store of the hit, says
 * where a subagent's subagent is (view_path_of()); it is called without
 * the store's lock held (a callback of store_search()).
 */
void view_search_where(struct store *st, const struct store_search_hit *h, char *path, size_t n, char *folder,
		       size_t fn);

/*
 * The JSON object of a hit of store st, on one line (*ret, free()): task,
 * workspace, workspace_path, title, time, path (after prefix), line,
 * snippet (matches in brackets), stream, role, score, doc. 0 or -ENOMEM.
 */
int view_search_json(struct store *st, const struct store_search_hit *h, const char *prefix, char **ret);

#endif
