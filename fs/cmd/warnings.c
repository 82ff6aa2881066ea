/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * warnings.c: the warnings and errors since the mount, in <store>.warnings.
 *
 * Why a file and not a table of the store: the warnings that matter most
 * are the store's own failures (a full disk, a lock held by another
 * process, a read-only file), when a write to the store fails too; and a
 * warning is logged under the store's lock, which a write to the store
 * would need again. A file beside the store is written with one pwrite()
 * under a lock of its own (a leaf: it takes no other), fails alone, and is
 * readable by the store's owner only (0600, as the store).
 *
 * The file is a header line with the count, fixed in width so that it is
 * rewritten in place, then the lines, each with its time:
 *
 *   convfs-warnings since_ns=0001764040000000000000 count=00000000000000000002
 *   2026-11-25T04:13:16.123Z warning: cannot ...
 *
 * It is bounded: past WARNINGS_MAX bytes it is cut back to its header and
 * goes on, so it keeps the latest lines and the exact count.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/cmd/warnings.h"
#include "store/util.h"

#define WARNINGS_MAX (256 * 1024)
#define HEADER_FMT "convfs-warnings since_ns=%022" PRId64 " count=%020" PRIu64 "\n"
#define DROPPED "(earlier lines dropped)\n"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int wfd = -1;
static off_t wend;
static size_t header_len;
static int64_t since_ns;
static uint64_t count;

/* Under lock. Failures are not logged: that would call back here. */
static void header_write(void)
{
	char h[128];
	int n = snprintf(h, sizeof(h), HEADER_FMT, since_ns, count);

	if (n > 0 && pwrite(wfd, h, (size_t)n, 0) == n)
		header_len = (size_t)n;
}

static void sink(enum log_level level, const char *line)
{
	char ts[40], buf[1200];
	int n = snprintf(buf, sizeof(buf), "%s %s: %s\n", iso_time(now_ns(), ts, sizeof(ts)),
			 level == LOG_LEVEL_ERR ? "error" : "warning", line);

	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	pthread_mutex_lock(&lock);
	if (wfd >= 0) {
		if (wend + n > WARNINGS_MAX && ftruncate(wfd, (off_t)header_len) == 0 &&
		    pwrite(wfd, DROPPED, strlen(DROPPED), (off_t)header_len) == (ssize_t)strlen(DROPPED))
			wend = (off_t)(header_len + strlen(DROPPED));
		if (pwrite(wfd, buf, (size_t)n, wend) == n)
			wend += n;
		count++;
		header_write();
	}
	pthread_mutex_unlock(&lock);
}

static int file_path(const char *store_path, struct sb *ret)
{
	return sb_addf(ret, "%s%s", store_path, WARNINGS_SUFFIX);
}

/*
 * The file name in dirfd (path: how it is named in messages), made anew:
 * the one of the last mount removed, then a new one made, never opened as
 * it is: what stands at the name (a symlink, a FIFO, a hard link to
 * another file, put there by whoever can write the folder) is never
 * followed, truncated or waited on.
 */
static int start_at(int dirfd, const char *name, const char *path)
{
	int r, fd;

	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT) {
		r = -errno;
		log_info("cannot keep the warnings in '%s': %s (removing the last one's); convfs status will not "
			 "show them", path, strerror(-r));
		return r;
	}
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		log_info("cannot keep the warnings in '%s': %s; convfs status will not show them", path,
			 strerror(-r));
		return r;
	}
	pthread_mutex_lock(&lock);
	if (wfd >= 0)
		close(wfd);
	wfd = fd;
	since_ns = now_ns();
	count = 0;
	header_write();
	wend = (off_t)header_len;
	pthread_mutex_unlock(&lock);
	log_set_sink(sink);
	return 0;
}

int warnings_start(const char *store_path)
{
	_cleanup_sb_ struct sb path = SB_INIT;
	int r;

	if ((r = file_path(store_path, &path)) < 0)
		return r;
	return start_at(AT_FDCWD, path.buf, path.buf);
}

int warnings_start_at(int dirfd, const char *prefix, const char *path_prefix)
{
	_cleanup_sb_ struct sb name = SB_INIT, path = SB_INIT;
	int r;

	if ((r = file_path(prefix, &name)) < 0 || (r = file_path(path_prefix, &path)) < 0)
		return r;
	return start_at(dirfd, name.buf, path.buf);
}

int warnings_read(const char *store_path, size_t max_last, struct warnings *ret)
{
	_cleanup_sb_ struct sb path = SB_INIT, text = SB_INIT;
	_cleanup_close_ int fd = -1;
	struct warnings w = { 0 };
	struct stat st;
	size_t start, nlines = 0;
	char *p;
	int r;

	if ((r = file_path(store_path, &path)) < 0)
		return r;
	fd = open(path.buf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL; /* a FIFO would hang the read */
	for (;;) {
		ssize_t n;

		if ((r = sb_grow(&text, 65536)) < 0)
			return r;
		n = read(fd, text.buf + text.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		text.len += (size_t)n;
		text.buf[text.len] = '\0';
		if (text.len > 2 * WARNINGS_MAX)
			break; /* not ours: no more than that */
	}
	if (!text.buf || sscanf(text.buf, "convfs-warnings since_ns=%" SCNd64 " count=%" SCNu64, &w.since_ns,
				&w.count) != 2)
		return -EINVAL;
	/* The lines after the header, the last max_last of them. */
	p = strchr(text.buf, '\n');
	start = p ? (size_t)(p - text.buf) + 1 : text.len;
	for (size_t i = start; i < text.len; i++)
		nlines += text.buf[i] == '\n';
	w.last = calloc(max_last ? max_last : 1, sizeof(*w.last));
	if (!w.last)
		return -ENOMEM;
	for (size_t i = start, line = 0; i < text.len; line++) {
		char *nl = memchr(text.buf + i, '\n', text.len - i);
		size_t len = nl ? (size_t)(nl - text.buf) - i : text.len - i;

		if (line + max_last >= nlines && w.nlast < max_last) {
			w.last[w.nlast] = strndup(text.buf + i, len);
			if (!w.last[w.nlast]) {
				warnings_release(&w);
				return -ENOMEM;
			}
			w.nlast++;
		}
		i += len + 1;
	}
	*ret = w;
	return 0;
}

void warnings_release(struct warnings *w)
{
	for (size_t i = 0; i < w->nlast; i++)
		free(w->last[i]);
	free(w->last);
	w->last = NULL;
	w->nlast = 0;
}
