/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmd.c: what the commands that work on a store (check, forget) share.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "fs/cmd.h"

/*
 * A daemon holds LOCK_EX on the store file for as long as it serves it
 * (prepare_store() in main.c, kept across its fork): a shared lock that
 * cannot be had means one runs. Taken and let go at once: a command must not
 * keep a mount from starting.
 */
int cmd_store_in_use(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		r = errno == EWOULDBLOCK ? 1 : -errno;
	close(fd);
	return r;
}
