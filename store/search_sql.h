/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SEARCH_SQL_H
#define CONVFS_SEARCH_SQL_H

/*
 * The SQL of the hits of a query, which search.c and search_pieces.c
 * share: FTS5's match and its score (rank, bm25), and the same joined with
 * each hit's row, doc, task and workspace for the query's filters.
 */

#include <stdbool.h>

#include <sqlite3.h>

#include "store/search.h"
#include "store/store_search.h"
#include "store/util.h"

/* The role of a message as its first 64 KiB say it: its row's bytes if that small, else read by convfs_role(). */
#define ROLE_OF_E "convfs_role(e.len, CASE WHEN e.len <= 65536 THEN e.json END, e.id)"
#define TIME_OF_E "coalesce(e.ts, r.time_ns / 1000000)"
#define JOINS                                                                                             \
	"JOIN elems e ON e.id = " SEARCH_ELEM_OF("s.rowid") " JOIN docs d ON d.id = e.doc_id "           \
	"LEFT JOIN tasks k ON k.id = d.task_id LEFT JOIN workspaces w ON w.id = k.workspace_id "

/* The hits and their scores, of a query without filters: FTS5 alone (its index holds only current messages). */
#define HITS_SQL "SELECT rowid, rank FROM search WHERE search MATCH ?1"

/* The same with filters ?2 to ?6 (search_bind_filters()). */
#define FILTERED_HITS_SQL                                                                                 \
	"SELECT s.rowid, s.rank FROM search s " JOINS                                                     \
	"LEFT JOIN revisions r ON r.id = e.rev_from "                                                     \
	"WHERE search MATCH ?1 AND e.rev_to IS NULL "                                                     \
	"  AND (?2 IS NULL OR (?2 = '' AND w.id IS NULL) OR w.key = ?2) "                                 \
	"  AND (?3 IS NULL OR " TIME_OF_E " >= ?3) AND (?4 IS NULL OR " TIME_OF_E " < ?4) "               \
	"  AND (?5 IS NULL OR convfs_stream(d.path) = ?5) "                                               \
	"  AND (?6 IS NULL OR " ROLE_OF_E " IS ?6)"

static inline bool search_filtered(const struct store_search_query *q)
{
	return q->ws_key || q->since_ms || q->until_ms || q->stream > 0 || q->role > 0;
}

/* Binds q's filters to FILTERED_HITS_SQL's ?2 to ?6 (q's strings, which outlive the statement's steps). */
static inline void search_bind_filters(sqlite3_stmt *stmt, const struct store_search_query *q)
{
	static const char *const streams[] = { NULL, "api", "ui" };
	static const char *const roles[] = { NULL, "user", "assistant" };

	if (q->ws_key)
		sqlite3_bind_text(stmt, 2, q->ws_key, -1, SQLITE_STATIC);
	if (q->since_ms)
		sqlite3_bind_int64(stmt, 3, q->since_ms);
	if (q->until_ms)
		sqlite3_bind_int64(stmt, 4, q->until_ms);
	if (q->stream > 0 && (size_t)q->stream < ARRAY_SIZE(streams))
		sqlite3_bind_text(stmt, 5, streams[q->stream], -1, SQLITE_STATIC);
	if (q->role > 0 && (size_t)q->role < ARRAY_SIZE(roles))
		sqlite3_bind_text(stmt, 6, roles[q->role], -1, SQLITE_STATIC);
}

#endif
