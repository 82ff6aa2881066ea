/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_ARRAY_INTERNAL_H
#define CONVFS_ARRAY_INTERNAL_H

/*
 * What the commit of an array doc is made of, between array.c (the commit,
 * and which way it goes), rows.c (the rows read and written a row at a
 * time, appends) and merged.c (three-way merges and the bases).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/doc_internal.h"
#include "store/json.h"
#include "store/src.h"

/* An element of the new content: its bytes before it (pre), and itself [start, end). */
struct span {
	size_t pre, start, end;
};

struct span_vec {
	struct span *v;
	size_t n, alloc;
};

/* Appends an element to the span_vec ctx (a scan's callback). 0 or -ENOMEM. */
int span_push(void *ctx, size_t pre, size_t start, size_t end);

/*
 * The rows of one of the last large docs committed, kept for its next
 * commit (rows.c): a doc of fewer than ROWS_MIN elements is not kept, and
 * all lists together hold at most ROWS_TOTAL rows.
 */
#define ROWS_MIN 1024
#define ROWS_TOTAL ((size_t)1 << 17)

struct row_kept {
	int64_t id;
	uint64_t len;
	uint32_t pre_at, pre_len; /* in doc_rows.pre */
	unsigned char dg[DIGEST_SIZE];
	bool has_dg;
};

struct doc_rows {
	int64_t doc_id, rev;
	struct row_kept *v;
	size_t n, alloc;
	struct sb pre;
	bool broken; /* a row could not be added: not to be kept */
};

void doc_rows_free(struct doc_rows *l);
/* The list kept of doc doc_id, taken out (the caller owns it), if it is of revision rev; else NULL. */
struct doc_rows *doc_rows_take(struct store *st, int64_t doc_id, int64_t rev);
/* Keeps l (taken over) as the current rows of its doc at its revision, the oldest list making room. */
void doc_rows_keep(struct store *st, struct doc_rows *l);

/*
 * The doc's current elements that the new content of src goes on with,
 * byte for byte (rows.c, where the rules are): their spans onto sv, and
 * *known where they end. *rows: the list kept of the doc, or NULL; on
 * return the list of the rows found, which the caller frees.
 */
int known_prefix(struct store *st, const struct doc_row *d, const struct src *src, struct span_vec *sv,
		 struct json_known *known, struct doc_rows **rows);

/*
 * Whether row id holds pre[0, pre_len) and the bytes of element e of src,
 * read through w (rows.c).
 */
int row_holds(struct store *st, int64_t id, const char *pre, size_t pre_len, const struct src *src,
	      const struct span *e, struct src_window *w, bool *ret);

/*
 * Where the JSONL line after a current element starts: its loff + len + 1.
 * by_seq: the element is the current one at position seq of doc; else row id.
 */
int line_end(struct store *st, int64_t doc_id, int64_t seq_or_id, bool by_seq, int64_t *ret);

/*
 * A new row of elems: the element of doc doc_id at json[0, len), or (json
 * NULL) at bytes [at, at + len) of src, after pre[0, pre_len).
 */
struct elem_new {
	int64_t doc_id, seq, off, rev, loff; /* rev: its rev_from; loff: where its JSONL line starts */
	const char *pre, *json;
	size_t pre_len, len;
	const struct src *src;
	size_t at;
	struct doc_rows *rows; /* if not NULL, the row goes onto it too */
};

/* The statement elem_insert() runs. */
extern const char elem_insert_sql[];

/* Inserts e with stmt, prepared from elem_insert_sql; what names a failure to store it (rows.c). */
int elem_insert(struct store *st, sqlite3_stmt *stmt, const struct elem_new *e, const struct doc_layout *lay,
		int64_t now, struct src_window *w, const char *what);

/*
 * Inserts elements from..n-1 of sv; *loff is where the first one's line
 * starts, and is moved on. Each row goes onto rows too, if not NULL.
 */
int elems_insert(struct store *st, int64_t doc_id, const struct src *src, const struct span_vec *sv, size_t from,
		 int64_t rev, const struct doc_layout *lay, int64_t now, int64_t *loff, struct doc_rows *rows);

/*
 * One commit of an array doc (array.c): what it reads before it writes, and
 * what it has made. array_read() fills it in the doc's transaction; then
 * the commit goes one of two ways, each short: keeping the known prefix
 * and writing the rest after it (array.c), or merging three ways
 * (array_commit_merge(), merged.c).
 */
struct array_commit {
	const struct store_commit *c;
	const struct doc_layout *lay;
	const struct store_base *base; /* the writer's, if of this doc */
	struct doc_row d;              /* the doc's row, in the transaction */
	struct src src;                /* the writer's bytes */
	struct span_vec sv;            /* their elements */
	struct json_known known;       /* where the known prefix ends */
	size_t kept;                   /* elements of the known prefix */
	size_t head, tail, len;        /* the bytes before the first element and from the end of the last */
	const char *hd, *tl;           /* those bytes */
	struct src_window hb, tb;      /* where hd and tl are held */
	struct doc_rows *rows;         /* the doc's current rows, kept for its next commit */
	bool merging, merged;          /* a three-way merge; whose result is not what was written */
	struct merge_list written;     /* merging: what the writer wrote, as identities */
	struct sb written_bytes;       /* their bytes where they were needed */
	int64_t now, rev, size, lsize;
	char detail[320];              /* the revision's detail */
};

/*
 * Merges a->src with what is stored and the writer's base, as revision
 * a->rev (made here), and writes the result (merged.c). In the doc's
 * transaction; the caller ends it. 0 or -errno.
 */
int array_commit_merge(struct store *st, struct array_commit *a);

#endif
