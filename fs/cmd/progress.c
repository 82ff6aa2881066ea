/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * progress.c: the one progress line of long work.
 *
 * A line rewritten with "\r" on stderr, as rsync and restic show theirs, only
 * where somebody watches: stderr is a terminal and the process does not run
 * under systemd (which sets INVOCATION_ID for a unit's processes, and
 * JOURNAL_STREAM when stderr goes to the journal, even through a pty). In a
 * pipe, a log file or the journal, nothing: carriage returns there are noise.
 * CONVFS_PROGRESS=always shows it anyway (and at once: tests, curious users),
 * never hides it, now shows it where it would show, but at once. Work that
 * ends within half a second shows nothing otherwise.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/cmd/progress.h"
#include "store/util.h"

#define PROGRESS_DELAY_NS 500000000
#define PROGRESS_EVERY_NS 100000000

/* Whether CONVFS_PROGRESS says value. */
static bool says(const char *value)
{
	const char *e = getenv("CONVFS_PROGRESS");

	return e && strcmp(e, value) == 0;
}

bool progress_wanted(void)
{
	if (says("never"))
		return false;
	if (says("always"))
		return true;
	if (getenv("INVOCATION_ID") || getenv("JOURNAL_STREAM"))
		return false;
	return isatty(STDERR_FILENO) == 1;
}

void progress_start(struct progress *p)
{
	*p = (struct progress){ .on = progress_wanted(), .start_ns = now_ns() };
	if (p->on && (says("always") || says("now")))
		p->start_ns -= PROGRESS_DELAY_NS; /* at once */
}

static _printf_(1, 0) void print_line(const char *fmt, va_list ap, bool last)
{
	fputs("\rconvfs: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(last ? "\033[K\n" : "\033[K", stderr); /* clear what a longer line left */
	fflush(stderr);
}

void progress_show(struct progress *p, const char *fmt, ...)
{
	int64_t now;
	va_list ap;

	if (!p->on)
		return;
	now = now_ns();
	if (now - p->start_ns < PROGRESS_DELAY_NS || (p->shown && now - p->last_ns < PROGRESS_EVERY_NS))
		return;
	p->last_ns = now;
	p->shown = true;
	va_start(ap, fmt);
	print_line(fmt, ap, false);
	va_end(ap);
}

void progress_end(struct progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->on || !p->shown)
		return;
	va_start(ap, fmt);
	print_line(fmt, ap, true);
	va_end(ap);
	p->shown = false;
}
