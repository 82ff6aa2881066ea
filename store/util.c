/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util.c: the growable buffer and logging used across convfs.
 *
 * Logging is called from many FUSE worker threads at once; each message is
 * formatted into one buffer first and written with a single call so that
 * lines never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include "store/util.h"

void sb_release(struct sb *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

int sb_grow(struct sb *sb, size_t extra)
{
	size_t want, n;
	char *p;

	if (extra > SIZE_MAX - sb->len - 1)
		return -ENOMEM;
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	n = sb->alloc ? sb->alloc : 64;
	while (n < want)
		n = n > SIZE_MAX / 2 ? want : n * 2;
	p = realloc(sb->buf, n);
	if (!p)
		return -ENOMEM;
	if (!sb->buf)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = n;
	return 0;
}

int sb_add(struct sb *sb, const void *data, size_t len)
{
	int r = sb_grow(sb, len);

	if (r < 0)
		return r;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int sb_adds(struct sb *sb, const char *s)
{
	return sb_add(sb, s, strlen(s));
}

int sb_addf(struct sb *sb, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = sb_grow(sb, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

int sb_attach(struct sb *sb, char *buf, size_t len)
{
	char *p;

	if (len == SIZE_MAX || !(p = realloc(buf, len + 1)))
		return -ENOMEM;
	p[len] = '\0';
	sb_release(sb);
	*sb = (struct sb){ p, len, len + 1 };
	return 0;
}

char *sb_detach(struct sb *sb, size_t *ret_len)
{
	char *p;

	if (sb_grow(sb, 0) < 0)
		return NULL;
	p = sb->buf;
	if (ret_len)
		*ret_len = sb->len;
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	return p;
}

static bool log_to_syslog;
static enum log_level log_max = LOG_LEVEL_INFO;

void log_set_syslog(bool on)
{
	if (on && !log_to_syslog)
		openlog("convfs", LOG_PID, LOG_DAEMON);
	log_to_syslog = on;
}

void log_set_level(enum log_level max)
{
	log_max = max;
}

static log_sink_fn log_sink;

void log_set_sink(log_sink_fn fn)
{
	log_sink = fn;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = {
		[LOG_LEVEL_ERR] = "error", [LOG_LEVEL_WARN] = "warning",
		[LOG_LEVEL_INFO] = "info", [LOG_LEVEL_DEBUG] = "debug",
	};
	char line[1024];
	va_list ap;
	int n;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/*
	 * One message, one line: a control character in a name a client chose
	 * (a newline, an escape sequence) must not forge a line or drive the
	 * terminal. Shown as '?'.
	 */
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (log_sink && level <= LOG_LEVEL_WARN)
		log_sink(level, line);
	if (log_to_syslog) {
		syslog((int)level, "%s", line);
		return;
	}
	n = snprintf(NULL, 0, "convfs: %s: %s\n", names[level], line);
	if (n > 0) {
		char out[1200];

		snprintf(out, sizeof(out), "convfs: %s: %s\n", names[level], line);
		(void)!write(STDERR_FILENO, out, strlen(out));
	}
}

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int fd_born_ns(int fd, int64_t *ret)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BTIME, &stx) < 0)
		return -errno;
	*ret = (stx.stx_mask & STATX_BTIME) ? (int64_t)stx.stx_btime.tv_sec * 1000000000 + stx.stx_btime.tv_nsec : 0;
	return 0;
}

char *iso_time(int64_t ns, char *buf, size_t n)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((ns / 1000000) % 1000));
	return buf;
}

void hash64_begin(struct hash64 *h, size_t len)
{
	h->h = 0x9e3779b97f4a7c15ULL ^ (len * 0xff51afd7ed558ccdULL);
	h->nbuf = 0;
}

static void hash64_word(struct hash64 *h, uint64_t w)
{
	h->h = (h->h ^ w) * 0xbf58476d1ce4e5b9ULL;
	h->h ^= h->h >> 31;
}

void hash64_add(struct hash64 *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	/* Bytes are taken 8 at a time, wherever the pieces they come in end. */
	if (h->nbuf) {
		size_t k = 8 - h->nbuf < len ? 8 - h->nbuf : len;

		memcpy(h->buf + h->nbuf, p, k);
		h->nbuf += k;
		p += k;
		len -= k;
		if (h->nbuf < 8)
			return;
		{
			uint64_t w;

			memcpy(&w, h->buf, 8);
			hash64_word(h, w);
		}
		h->nbuf = 0;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		hash64_word(h, w);
		p += 8;
		len -= 8;
	}
	memcpy(h->buf, p, len);
	h->nbuf = len;
}

uint64_t hash64_end(struct hash64 *h)
{
	uint64_t x = h->h;

	if (h->nbuf) {
		uint64_t w = 0;

		memcpy(&w, h->buf, h->nbuf);
		x = (x ^ w) * 0x94d049bb133111ebULL;
	}
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

uint64_t hash64(const void *data, size_t len)
{
	struct hash64 h;

	hash64_begin(&h, len);
	hash64_add(&h, data, len);
	return hash64_end(&h);
}

/* ---- digest128() ------------------------------------------------------------ */

#define P61 (((uint64_t)1 << 61) - 1)

/* x modulo 2^61 - 1, for x < 2^125. */
static inline uint64_t mod61(unsigned __int128 x)
{
	uint64_t hi = (uint64_t)(x >> 61), s = ((uint64_t)x & P61) + (hi & P61) + (hi >> 61);

	s = (s & P61) + (s >> 61);
	return s >= P61 ? s - P61 : s;
}

void digest_key_init(struct digest_key *k, const unsigned char seed[DIGEST_SEED_SIZE])
{
	memcpy(k->nh, seed, sizeof(k->nh));
	for (int h = 0; h < 2; h++) {
		uint64_t r;

		memcpy(&r, seed + sizeof(k->nh) + 8 * h, 8);
		k->point[h] = r % (P61 - 1) + 1; /* a point of the field, not 0 */
	}
}

/* NH of one block of DIGEST_NH_WORDS words at p, under key words k. */
static inline uint64_t digest_nh(const uint32_t *k, const unsigned char *p)
{
	uint64_t y = 0;

	for (int i = 0; i < DIGEST_NH_WORDS; i += 2) {
		uint32_t a, b;

		memcpy(&a, p + 4 * i, 4);
		memcpy(&b, p + 4 * i + 4, 4);
		y += (uint64_t)(uint32_t)(a + k[i]) * (uint32_t)(b + k[i + 1]);
	}
	return y;
}

/* One step of Horner's rule: (acc + c) times the point, modulo 2^61 - 1. */
static inline uint64_t digest_step(uint64_t point, uint64_t acc, uint32_t c)
{
	return mod61((unsigned __int128)(acc + c) * point);
}

void digest128(const struct digest_key *k, const void *data, size_t len, unsigned char out[DIGEST_SIZE])
{
	enum { BLOCK = 4 * DIGEST_NH_WORDS };
	const unsigned char *p = data;
	uint64_t acc[2] = { 1, 1 }; /* a leading coefficient 1: nothing digests to 0 whatever the key */
	unsigned char last[BLOCK];

	for (size_t i = 0; i < len; i += BLOCK) {
		const unsigned char *block = p + i;

		if (len - i < BLOCK) {
			/* The last block, zero-padded: the length, digested last, tells the zeros from bytes. */
			memset(last, 0, sizeof(last));
			memcpy(last, block, len - i);
			block = last;
		}
		for (int h = 0; h < 2; h++) {
			uint64_t y = digest_nh(k->nh + DIGEST_NH_SHIFT * h, block);

			acc[h] = digest_step(k->point[h], acc[h], (uint32_t)y);
			acc[h] = digest_step(k->point[h], acc[h], (uint32_t)(y >> 32));
		}
	}
	for (int h = 0; h < 2; h++) {
		acc[h] = digest_step(k->point[h], acc[h], (uint32_t)len);
		acc[h] = digest_step(k->point[h], acc[h], (uint32_t)((uint64_t)len >> 32));
		memcpy(out + 8 * h, &acc[h], 8);
	}
}
