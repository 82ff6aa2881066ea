/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd.c: what the commands share (cmd.h): sizes and processes as they
 * print them, and whether a daemon serves a store.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "fs/cmd/cmd.h"

/* How long cmd_flock() waits for a lock held by another: 50 tries 20 ms apart. */
#define FLOCK_TRIES 50
#define FLOCK_PAUSE_US 20000

char *cmd_size(int64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, n, "%" PRId64 " B", bytes);
		return buf;
	}
	for (v /= 1024; v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]); u++)
		v /= 1024;
	snprintf(buf, n, "%.1f %s", v, units[u]);
	return buf;
}

char *cmd_who(pid_t pid, const char *comm, char *buf, size_t n)
{
	if (pid > 0 && comm)
		snprintf(buf, n, "pid %d (%s)", (int)pid, comm);
	else if (pid > 0)
		snprintf(buf, n, "pid %d", (int)pid);
	else
		snprintf(buf, n, "%s", comm ? comm : "convfs");
	return buf;
}

int cmd_json_who(cJSON *o, pid_t pid, const char *comm)
{
	cJSON *p = pid > 0 ? cJSON_AddNumberToObject(o, "pid", pid) : cJSON_AddNullToObject(o, "pid");
	cJSON *c = comm ? cJSON_AddStringToObject(o, "process", comm) : cJSON_AddNullToObject(o, "process");

	return p && c ? 0 : -ENOMEM;
}

int cmd_flock(int fd, int op)
{
	for (int i = 0;; i++) {
		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (i == FLOCK_TRIES)
			return -EWOULDBLOCK;
		usleep(FLOCK_PAUSE_US);
	}
}

/*
 * Every daemon holds LOCK_SH on the store file for as long as it serves it
 * (prepare_store() in fs/mount/prepare.c, kept across its fork): an exclusive lock that
 * cannot be had means one runs (or convfs forget, which holds it
 * exclusively). Taken and let go at once: a command must not keep a mount
 * from starting.
 */
int cmd_store_in_use(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		r = errno == EWOULDBLOCK ? 1 : -errno;
	close(fd);
	return r;
}
