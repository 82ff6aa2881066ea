/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_CMD_H
#define CONVFS_CMD_H

/*
 * The commands other than mounting (main.c's table) that look inside a
 * mount, each in its own file, and what they share (cmd.c). Each takes the
 * whole argv (argv[1] is its name) and returns the exit status.
 */

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int cmd_status(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_restore(int argc, char **argv);

static inline void cjson_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}

/* "12.3 MiB" (or "512 B") into buf; returns buf. */
char *cmd_size(int64_t bytes, char *buf, size_t n);
/* "pid 123 (node)", "pid 123", or "convfs" for what the store did itself, into buf; returns buf. */
char *cmd_who(pid_t pid, const char *comm, char *buf, size_t n);
/* Adds "pid" and "process" (null where not recorded) to o; 0 or -ENOMEM. */
int cmd_json_who(cJSON *o, pid_t pid, const char *comm);

#endif
