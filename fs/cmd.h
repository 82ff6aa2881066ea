/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_CMD_H
#define CONVFS_CMD_H

/*
 * The commands other than mounting (main.c's commands[]), one file each
 * (cmd_<name>.c), and what they share (cmd.c). A command gets the whole argv
 * (argv[1] is its name) and returns the exit status.
 */

#include <stdbool.h>

int cmd_check(int argc, char **argv);
int cmd_forget(int argc, char **argv);

/*
 * 1 if a convfs daemon serves the store at path (it holds the store's
 * flock(), fs/main.c), 0 if not, -errno if the store cannot be opened.
 */
int cmd_store_in_use(const char *path);

#endif
