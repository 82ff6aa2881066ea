/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_LOOP_H
#define CONVFS_LOOP_H

#include <fuse_lowlevel.h>

/* The most workers loop_run() starts (-o max_threads). */
#define LOOP_WORKERS_MAX 64

/*
 * Serves se's requests on up to max_workers threads until the mount ends
 * or a signal set by loop_signals_set() stops it. Returns 0 when the kernel
 * ended the connection (an unmount), the signal's number when one stopped
 * it, or a negative errno when reading the device failed. With
 * max_workers 1 (-s), one thread reads and serves every request in turn.
 */
int loop_run(struct fuse_session *se, unsigned max_workers);

/* The largest write the kernel may send: one that a worker's pipe holds whole. */
size_t loop_max_write(void);

/*
 * Closes fd once the request this thread serves has been answered, or at
 * once on a thread that serves no request. For a descriptor whose last
 * close may take long, that no reply needs to wait for.
 */
void loop_close_after_reply(int fd);

/* SIGHUP, SIGINT and SIGTERM end se's loop; SIGPIPE is ignored. 0 or a negative errno. */
int loop_signals_set(struct fuse_session *se);
void loop_signals_remove(void);

#endif
