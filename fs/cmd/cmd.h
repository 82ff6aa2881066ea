/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_CMD_H
#define CONVFS_CMD_H

/*
 * The commands other than mounting (main.c's commands[]), one file each
 * (cmd_<name>.c), and what they share (cmd.c). A command gets the whole argv
 * (argv[1] is its name) and returns the exit status: 0 done, 1 failed (or,
 * for status and check, not mounted or problems found), 2 wrong usage.
 */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store/json.h"

/* Commands that look inside a mount. */
int cmd_status(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_restore(int argc, char **argv);
/* Messages of any conversation that match a query: on a mount, or a store (--store). */
int cmd_search(int argc, char **argv);
/* The agent's edits after a checkpoint taken back in the workspace, through a mount's view. */
int cmd_undo(int argc, char **argv);
/* Commands that work on a store that is not mounted. */
int cmd_check(int argc, char **argv);
int cmd_forget(int argc, char **argv);

/* "12.3 MiB" (or "512 B") into buf; returns buf. */
char *cmd_size(int64_t bytes, char *buf, size_t n);
/* "pid 123 (node)", "pid 123", or "convfs" for what the store did itself, into buf; returns buf. */
char *cmd_who(pid_t pid, const char *comm, char *buf, size_t n);
/* Adds "pid" and "process" (null where not recorded) to o; 0 or -ENOMEM. */
int cmd_json_who(cJSON *o, pid_t pid, const char *comm);

/*
 * 1 if a convfs daemon serves the store at path (it holds the store's
 * flock(), fs/mount/prepare.c), 0 if not, -errno if the store cannot be opened.
 */
int cmd_store_in_use(const char *path);

/*
 * flock(fd, op) without blocking, tried again for about a second while
 * another holds the lock: cmd_store_in_use() holds the store's exclusively
 * for an instant, and a daemon or convfs forget starting then must not be
 * refused for it. 0, -EWOULDBLOCK if it is still held, or -errno.
 */
int cmd_flock(int fd, int op);

#endif
