/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_SYNC_WIRE_H
#define CONVFS_SYNC_WIRE_H

/*
 * The bytes of one entry of the shared log (docs/SYNC.md): one local
 * revision of one machine, as other machines apply it. No SQLite, no
 * PostgreSQL: what sync_local.c writes and sync_apply.c reads, tested alone
 * (tests/unit/test_sync_wire.c).
 *
 * An entry is a header (who, when, what kind, the revision's path, a task
 * sent to or back from the trash, a forget) and its effects, one per doc
 * the revision changed:
 *
 *   - an array doc: the entry it builds on (prev, a log sequence number;
 *     0: none), how many of that version's elements it keeps (keep), the
 *     bytes before the array's elements (head), and the rest of the file
 *     after the kept elements (rest: each new element with the bytes
 *     before it, then the tail). With keep 0 the rest is the whole file
 *     and the head is not sent. So an append to a 20 MB conversation is
 *     the new message and a few bytes;
 *   - a whole doc, or one kept as found (raw): its bytes, in rest;
 *   - a removal: nothing more.
 *
 * All integers are little-endian of fixed width, strings and byte blocks
 * are preceded by their length: nothing is parsed twice, and the bytes of
 * an effect are found by their offset without copying them. An entry
 * larger than SYNC_INLINE is written to and read from an unnamed file (the
 * store's folder), so that the daemon's memory does not grow with it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/util.h"

#define SYNC_WIRE_MAGIC "cvfs"
#define SYNC_WIRE_VERSION 1
/* Payloads up to this size are held in memory, larger ones in a file. */
#define SYNC_INLINE ((size_t)16 << 20)

enum sync_fmt {
	SYNC_FMT_ARRAY = 0,   /* an array doc: prev, keep, head, rest */
	SYNC_FMT_WHOLE = 1,   /* a whole JSON doc: rest is its bytes */
	SYNC_FMT_RAW = 2,     /* bytes kept as found, unparsed */
	SYNC_FMT_REMOVED = 3, /* the doc left the tree */
};

enum sync_task_op {
	SYNC_TASK_NONE = 0,
	SYNC_TASK_TRASH = 1,   /* the task (header.task) went to the trash */
	SYNC_TASK_RESTORE = 2, /* it came back */
};

/*
 * Bytes that go to a file past SYNC_INLINE: a payload as it is written or
 * read. sync_bytes_init(); every add after a failure fails the same way
 * (err), so a writer checks once at the end. Release with
 * sync_bytes_release().
 */
struct sync_bytes {
	struct sb mem;
	int fd; /* >= 0: the bytes are in this unnamed file, not in mem */
	size_t len;
	int err;
	const char *dir; /* where the file is made; NULL: $TMPDIR or /tmp */
	size_t inline_max;
};
void sync_bytes_init(struct sync_bytes *b, const char *dir);
void sync_bytes_release(struct sync_bytes *b);
int sync_bytes_add(struct sync_bytes *b, const void *p, size_t n);
/* Bytes [off, off + n) into buf: 0, or -EIO if they are not all there, or -errno. */
int sync_bytes_read(const struct sync_bytes *b, size_t off, void *buf, size_t n);
/*
 * Bytes [off, off + n) as a commit's content (store_commit.data or .fd, from
 * offset 0): *ret_data points into memory, or *ret_fd is a copy in a file of
 * its own (the caller closes it). 0 or -errno.
 */
int sync_bytes_slice(const struct sync_bytes *b, size_t off, size_t n, const char **ret_data, int *ret_fd);

/* ---- writing an entry ---------------------------------------------------------- */

struct sync_header {
	const char *kind, *path, *comm; /* comm NULL: not recorded */
	int64_t time_ns, pid;
	int task_op;
	const char *task;               /* the task of task_op, else NULL */
	const char *forget_match, *forget_task; /* a forget (kind "forget"); NULL: not that */
	uint32_t neffects;
};

int sync_put_header(struct sync_bytes *b, const struct sync_header *h);
/*
 * An effect's fixed part; then exactly head_len bytes of head, a u64 of the
 * rest's length, and the rest (sync_put_rest_len(), then the bytes).
 */
int sync_put_effect(struct sync_bytes *b, const char *path, int fmt, int64_t prev, uint64_t keep, const void *head,
		    size_t head_len);
int sync_put_rest_len(struct sync_bytes *b, uint64_t len);

/* ---- reading one --------------------------------------------------------------- */

/* One doc's change, its bytes found by offset in the payload. */
struct sync_effect {
	char *path;
	int fmt;
	int64_t prev;
	uint64_t keep;
	size_t head_at, head_len, rest_at, rest_len;
};

/* A decoded entry: its header (strings owned) and effects. Release with sync_entry_release(). */
struct sync_entry {
	char *kind, *path, *comm, *task, *forget_match, *forget_task;
	int64_t time_ns, pid;
	int task_op;
	struct sync_effect *effects;
	size_t neffects;
};

/*
 * Decodes the payload b into *ret. -EPROTO, with one log line naming what
 * is wrong, for bytes that are not an entry (damaged, cut short, of another
 * version, an effect's bytes past the end, a path that is not a doc's).
 */
int sync_decode(const struct sync_bytes *b, struct sync_entry *ret);
void sync_entry_release(struct sync_entry *e);

#endif
