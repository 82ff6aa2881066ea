/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_REGISTRY_H
#define CONVFS_REGISTRY_H

/*
 * The daemons serving a store, registered beside it (registry.c): each one
 * a file <store>.mounts/<id>, which its daemon keeps flock()ed for as long
 * as it serves, so that a daemon killed leaves a file anyone can tell is
 * stale. In any mount namespace: the file is found by the store's path, and
 * says where its daemon mounted as that daemon sees it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define REGISTRY_SUFFIX ".mounts"

/* One daemon serving the store, as its file says. */
struct registry_entry {
	char id[33];        /* its file's name: 32 hex digits */
	pid_t pid;          /* in its own pid namespace */
	char *mountpoint;   /* where it mounted, in its mount namespace */
	char *mntns;        /* that namespace, as /proc/self/ns/mnt names it ("mnt:[4026531840]") */
	int64_t since_ns;   /* when it registered */
};

/* This daemon's registration: its file, held open and locked. */
struct registry {
	int fd;
	int dfd;    /* <store>.mounts, opened as a folder (never through a symlink) */
	char *path; /* the file */
	char *dir;  /* <store>.mounts */
	char id[33];
};
#define REGISTRY_INIT { .fd = -1, .dfd = -1 }

/*
 * Registers this daemon as serving the store at store_path, mounted at
 * mountpoint: makes <store>.mounts/ (0700) if it is missing (a symlink there
 * is refused), and a file of its own in it, flock()ed (inherited at fork: the daemon keeps it). 0 or
 * -errno, with a warning: a daemon that cannot register (a read-only
 * folder) serves all the same, unlisted.
 */
int registry_join(const char *store_path, const char *mountpoint, struct registry *ret);

/* Removes this daemon's file (at unmount). */
void registry_leave(struct registry *r);
/* Lets go of r without removing its file: a process that forked the daemon, which goes on serving. */
void registry_close(struct registry *r);

/*
 * Calls fn with each daemon serving the store at store_path now (its file
 * locked), this one included; removes the files of daemons that are gone
 * (not locked any more), and the temporary files of registrations whose
 * daemon was killed before it renamed them (over a minute old, unlocked).
 * 0, -ENOENT if no daemon ever registered, or -errno.
 */
typedef int (*registry_fn)(void *ctx, const struct registry_entry *e);
int registry_list(const char *store_path, registry_fn fn, void *ctx);

/* How many daemons serve the store at store_path now, or -errno. */
int registry_count(const char *store_path);

#endif
