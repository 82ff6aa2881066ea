/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_PROGRESS_H
#define CONVFS_PROGRESS_H

/*
 * One line of progress on stderr for long work (progress.c): the take-in at
 * mount, check, forget, export. Shown only on a terminal, never in a pipe
 * or under systemd; CONVFS_PROGRESS=always or never overrides, and now shows
 * it at once where it would show.
 */

#include <stdbool.h>
#include <stdint.h>

struct progress {
	bool on;      /* this run shows progress at all */
	bool shown;   /* a line is on the terminal: the last one ends it */
	int64_t start_ns, last_ns;
};

/* True if progress goes to stderr in this run. */
bool progress_wanted(void);
/* Starts timing one piece of long work. */
void progress_start(struct progress *p);
/*
 * Rewrites the line with "convfs: " and the text, once the work has run half
 * a second and at most ten times a second (at once with CONVFS_PROGRESS=always
 * or now).
 */
void progress_show(struct progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last state, ending the line, if a line was shown. */
void progress_end(struct progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
