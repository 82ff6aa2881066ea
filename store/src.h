/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SRC_H
#define CONVFS_SRC_H

/*
 * The bytes of a commit (store_commit.data, or .fd): in memory, or in a file
 * only the daemon can change, read a piece at a time. A commit of a file of
 * any size holds at most a window of it, plus one element of at most
 * ELEM_INLINE bytes; larger elements go between the file and SQLite in
 * SRC_CHUNK pieces (src_to_blob(), src_equals_blob()).
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/json.h"
#include "store/layout.h"
#include "store/store_internal.h"
#include "store/util.h"

/* Elements larger than this are written and compared a piece at a time, never held whole. */
#define ELEM_INLINE ((size_t)1 << 20)
#define SRC_CHUNK ((size_t)1 << 16)

struct src {
	const char *mem; /* NULL: the bytes are in fd */
	int fd;
	size_t len;
	bool shared; /* fd may change while read: each byte is read once (store_commit.fd_shared) */
	/*
	 * has_tail: the bytes from split on are in tail_fd (from its start), a
	 * copy only the store reads, owned (src_release()); fd holds those
	 * before split, which were read once already. (A flag, so that a src
	 * made with a designated initializer has no tail.)
	 */
	bool has_tail;
	int tail_fd;
	size_t split;
};

void src_of_commit(const struct store_commit *c, struct src *ret);
/*
 * Of a shared src: has the bytes from `from` to the end of the file copied
 * (store_commit.copy_rest) and read from the copy from then on; len becomes
 * from + what was copied. 0 or -errno.
 */
int src_own_rest(const struct store_commit *c, struct src *s, size_t from);
/* Closes the copy src_own_rest() made, if any. */
void src_release(struct src *s);

/*
 * What a src read returns when its bytes end before its length: a shared
 * file that another process cut meanwhile. Its own code, so that a caller
 * never takes the store's failures (-EIO from SQLite) for it.
 */
#define SRC_CUT_SHORT (-ENODATA)

/* Reads exactly n bytes at off into buf: 0, or SRC_CUT_SHORT if the bytes end before, or -errno. */
int src_read(const struct src *s, size_t off, char *buf, size_t n);

/*
 * What src_get() reads a file into: SRC_WINDOW bytes at a time (or the bytes
 * asked for, if more), so that elements read in order cost one read a window.
 */
struct src_window {
	struct sb buf;
	size_t off; /* of buf's first byte in the src */
};
#define SRC_WINDOW ((size_t)1 << 18)
#define SRC_WINDOW_INIT { SB_INIT, 0 }
static inline void src_window_release(struct src_window *w)
{
	sb_release(&w->buf);
}
#define _cleanup_src_window_ __attribute__((cleanup(src_window_release)))

/*
 * Bytes [off, off + n): *ret points into memory, or into w, valid until w's
 * next use.
 */
int src_get(const struct src *s, size_t off, size_t n, struct src_window *w, const char **ret);

/* json_scan_array_after() and json_validate() of the bytes. */
int src_scan_array(const struct src *s, const char *member, const struct json_known *known, json_elem_fn fn,
		   void *ctx, size_t *ret_head, size_t *ret_tail, struct json_error *err);
int src_validate(const struct src *s, struct json_error *err);

/* doc_elem_identity() of the element at [start, end). */
int src_identity(const struct src *s, enum doc_ident ident, size_t start, size_t end, struct merge_elem *e,
		 char **ret_key_text);

/*
 * Writes bytes [off, off + n) into the value of table.column at rowid, which
 * holds n bytes (a zeroblob). Called with the store's lock held.
 */
int src_to_blob(struct store *st, const struct src *s, size_t off, size_t n, const char *table,
		const char *column, int64_t rowid);

/* Whether bytes [off, off + n) equal the n stored bytes of table.column at rowid. */
int src_equals_blob(struct store *st, const struct src *s, size_t off, size_t n, const char *table,
		    const char *column, int64_t rowid, bool *ret);

#endif
