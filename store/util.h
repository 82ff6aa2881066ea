/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_UTIL_H
#define CONVFS_UTIL_H

/*
 * Small helpers shared by store/ and fs/: cleanup attributes in the style of
 * systemd's cleanup-fundamental.h, a growable NUL-terminated buffer in the
 * style of git's strbuf, and the logging functions.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Hand a value out of a _cleanup_ variable: returns it and leaves NULL behind. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

/*
 * Makes room in the array v, which has room for alloc elements, for
 * element n: when n == alloc, doubles it (to first elements at first), as
 * git's ALLOC_GROW. 0, or -ENOMEM with v and alloc untouched.
 */
#define ARRAY_GROW(v, n, alloc, first)                                           \
	({                                                                       \
		int _r = 0;                                                      \
		if ((n) >= (alloc)) {                                            \
			size_t _na = (alloc) ? 2 * (alloc) : (first);            \
			__typeof__(v) _p = reallocarray((v), _na, sizeof(*(v))); \
			if (_p) {                                                \
				(v) = _p;                                        \
				(alloc) = _na;                                   \
			} else {                                                 \
				_r = -ENOMEM;                                    \
			}                                                        \
		}                                                                \
		_r;                                                              \
	})

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/*
 * A growable buffer, always NUL-terminated. sb_init() gives an empty one that
 * owns nothing; sb_release() frees the memory and leaves an empty buffer.
 * Functions that grow it return 0 or -ENOMEM and leave it valid either way.
 */
struct sb {
	char *buf;
	size_t len;
	size_t alloc;
};
#define SB_INIT { NULL, 0, 0 }

void sb_release(struct sb *sb);
int sb_grow(struct sb *sb, size_t extra);
int sb_add(struct sb *sb, const void *data, size_t len);
int sb_adds(struct sb *sb, const char *s);
int sb_addf(struct sb *sb, const char *fmt, ...) _printf_(2, 3);
/*
 * Makes sb own buf, len bytes from malloc(), instead of copying them: buf
 * is cut to len + 1 bytes (what a buffer that grew by doubling has over
 * goes back) and NUL-terminated. 0, or -ENOMEM with buf still the caller's.
 */
int sb_attach(struct sb *sb, char *buf, size_t len);
/* Hands the buffer to the caller, who frees it with free(); sb is left empty. */
char *sb_detach(struct sb *sb, size_t *ret_len);
static inline const char *sb_str(const struct sb *sb) { return sb->buf ? sb->buf : ""; }
static inline void sb_releasep(struct sb *sb) { sb_release(sb); }
#define _cleanup_sb_ _cleanup_(sb_releasep)

/*
 * Logging. Messages are lowercase, without a final full stop, and name what
 * failed: "cannot commit 'tasks/1/ui_messages.json': disk is full". Before the
 * daemon detaches they go to stderr, afterwards to syslog.
 */
enum log_level { LOG_LEVEL_ERR = 3, LOG_LEVEL_WARN = 4, LOG_LEVEL_INFO = 6, LOG_LEVEL_DEBUG = 7 };
void log_set_syslog(bool on);
void log_set_level(enum log_level max);
void log_msg(enum log_level level, const char *fmt, ...) _printf_(2, 3);
/*
 * Also hands every warning and error, as its one line without "\n", to
 * fn (NULL: none), wherever the line goes: the daemon keeps them where
 * `convfs status` reads them (fs/cmd/warnings.c). fn must take no lock but its
 * own: it is called under any of the locks.
 */
typedef void (*log_sink_fn)(enum log_level level, const char *line);
void log_set_sink(log_sink_fn fn);
#define log_err(...) log_msg(LOG_LEVEL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

/* Nanoseconds since the epoch, from CLOCK_REALTIME. */
int64_t now_ns(void);
/* Nanoseconds from CLOCK_MONOTONIC: for intervals, which a change of the clock must not stretch. */
int64_t mono_ns(void);
/*
 * The birth time of the file open at fd (statx's btime) in ns since the
 * epoch into *ret, 0 there if its filesystem keeps none; 0 or -errno.
 */
int fd_born_ns(int fd, int64_t *ret);
/* ns as ISO 8601 in UTC with milliseconds ("2026-11-24T10:00:00.000Z") into buf; returns buf. */
char *iso_time(int64_t ns, char *buf, size_t n);

#include "store/banned.h"

/* A 64-bit hash of bytes (not cryptographic; equal bytes, equal hash). */
uint64_t hash64(const void *data, size_t len);

/*
 * The same hash of len bytes that come in pieces: hash64_begin(), then
 * hash64_add() for each piece in order (len bytes in all), then hash64_end().
 */
struct hash64 {
	uint64_t h;
	unsigned char buf[8];
	size_t nbuf;
};
void hash64_begin(struct hash64 *h, size_t len);
void hash64_add(struct hash64 *h, const void *data, size_t len);
uint64_t hash64_end(struct hash64 *h);

/*
 * A keyed digest of bytes, to tell that they equal bytes digested before
 * without reading those again (a commit's known prefix). As UMAC does, each
 * block of 256 bytes is first made one 64-bit value by NH (the sum of the
 * products of its 32-bit words, each pair plus key words, modulo 2^64), under
 * two keys (the same key words, shifted by four); each half of the digest is
 * then a polynomial, in a secret point of the field of integers modulo
 * 2^61 - 1, whose coefficients are one key's block values, 32 bits at a
 * time, and the length. Two texts of the same length n that differ, chosen
 * without the key (which never leaves the store), get the same digest with
 * a chance of at most 2^-64 + ((n/128 + 3) / (2^61 - 1))^2: about 2^-64
 * whatever their size. Not a hash for anything else.
 */
#define DIGEST_SIZE 16
#define DIGEST_NH_WORDS 64 /* a block: 256 bytes */
#define DIGEST_NH_SHIFT 4
struct digest_key {
	uint32_t nh[DIGEST_NH_WORDS + DIGEST_NH_SHIFT];
	uint64_t point[2];
};
/* How many random bytes make a key. */
#define DIGEST_SEED_SIZE (4 * (DIGEST_NH_WORDS + DIGEST_NH_SHIFT) + 16)
void digest_key_init(struct digest_key *k, const unsigned char seed[DIGEST_SEED_SIZE]);
void digest128(const struct digest_key *k, const void *data, size_t len, unsigned char out[DIGEST_SIZE]);

#endif
