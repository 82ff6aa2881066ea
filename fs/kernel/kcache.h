/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_KCACHE_H
#define CONVFS_KCACHE_H

/*
 * What the kernel may keep of what the mount shows (entries, attributes,
 * pages, listings), for how long, and telling it when that changes
 * (kcache.c). lowlevel.c asks it how long each reply may be kept; the
 * operations tell it what a change made stale, with no lock of theirs held
 * (docs/ARCHITECTURE.md, "Threads and locks").
 */

#include <stdbool.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "fs/fs.h"
#include "fs/ops/route.h"

/* A version node's attributes (fs/kernel/nodes.h): they never change. */
#define KCACHE_VERSION_TIMEOUT 86400.0

/*
 * The session the kernel is told through, from its making to its end (NULL
 * then: nothing is told, as outside a mount: the export, the tests).
 */
void kcache_session_set(struct fs *fs, struct fuse_session *se);
/*
 * Nothing is told to the kernel from now on: before the session's device
 * closes (fuse_session_unmount()), once any word under way was written, or
 * after 2 s without it. Threads that tell the kernel (the watcher, the
 * sync's) may run on; what they tell is dropped.
 */
void kcache_session_end(struct fs *fs);

/* At the session's start: whether the kernel counts epochs (docs' entries kept). */
void kcache_init(struct fs *fs, const struct fuse_conn_info *conn);

/* Drops the kernel's attributes of the node at rel, and a folder's listing (never a file's pages). */
void kcache_invalidate(struct fs *fs, const char *rel);
/*
 * The same, and a file's pages too: a plain file another daemon of the
 * store changed. Only from a thread that serves no request (the watcher,
 * fs/kernel/watch.c): the kernel drops a page once the read that fills it
 * ends, which may wait for a worker.
 */
void kcache_invalidate_pages(struct fs *fs, const char *rel);
/* A doc changed: the kernel looks every name up again before it uses its entry (a new epoch). */
void kcache_new_epoch(struct fs *fs);
/* If a task may have moved since the last call, drops the kernel's attributes of the view's task folders. */
void kcache_placement_check(struct fs *fs);
/* Drops the kernel's attributes of node ino (not its pages): its link count or its version changed. */
void kcache_drop_attrs(struct fs *fs, fuse_ino_t ino);
/*
 * A forget pulled from another machine changed docs' past versions: the
 * kernel drops every page and attribute it keeps of any node, version
 * nodes' included. Only from a thread that serves no request (the sync's):
 * the kernel drops a page once the read filling it ends, which may wait
 * for a request's thread.
 */
void kcache_forgot(struct fs *fs);
/* The take-in changed the store while the mount answered: drops what the kernel may keep of the folders holding it. */
void kcache_taken_in(struct fs *fs);

/* How long the kernel may keep the attributes st of rt (st's own links weighed). */
double kcache_attr_timeout(const struct route *rt, const struct stat *st);
/* How long it may keep the attributes st of a file that would be kept timeout, weighing st's links. */
double kcache_links_timeout(const struct stat *st, double timeout);
/*
 * How long the kernel may keep attributes of rt answered through a handle,
 * were they kept timeout otherwise: a live file of the view answers with what
 * that handle shows (its writer's staged bytes), not for everyone: 0.
 */
double kcache_handle_timeout(const struct route *rt, double timeout);
/* How long the kernel may keep the entry e of rt (not a doc's version node): e's timeouts set. */
void kcache_entry(const struct route *rt, struct fuse_entry_param *e);
/* How long it may keep the entry e of a doc's node, a version node or not: e's timeouts set. */
void kcache_doc_entry(struct fs *fs, struct fuse_entry_param *e, bool version);

#endif
