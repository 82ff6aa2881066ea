/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_TEST_FAULTS_H
#define CONVFS_TEST_FAULTS_H

/*
 * Fault injection for the unit tests, as SQLite's own tests do it: a
 * countdown makes the Nth call of one kind fail, once. The kinds:
 *
 *   FAULT_SQLITE_IO      any I/O SQLite does (read, write, truncate, sync,
 *                        size, locks, the WAL index), through a VFS that
 *                        wraps the default one: SQLITE_IOERR_*, SQLITE_BUSY
 *                        for a lock;
 *   FAULT_SQLITE_MALLOC  an allocation of SQLite's (SQLITE_NOMEM);
 *   FAULT_PREAD, FAULT_PWRITE, FAULT_COPY_RANGE, FAULT_FSYNC
 *                        those system calls made by the code linked into
 *                        the test (convfs's, not SQLite's, which go through
 *                        its VFS): they fail with EIO. The test links with
 *                        -Wl,--wrap for each (tests/unit/meson.build).
 *
 * faults_init() must come before any other use of SQLite in the process.
 * A test arms one kind for its Nth call from now, runs the code under test,
 * and asks whether the fault fired; one that did not fire means the code
 * made fewer than N such calls, and the test has tried them all.
 */
#include <stdbool.h>

enum fault_kind {
	FAULT_SQLITE_IO,
	FAULT_SQLITE_MALLOC,
	FAULT_PREAD,
	FAULT_PWRITE,
	FAULT_COPY_RANGE,
	FAULT_FSYNC,
	FAULT_KINDS,
};

/* Registers the faulty VFS as the default and SQLite's faulty allocator. 0 or -1. */
int faults_init(void);
/* The kind's name, for messages. */
const char *fault_name(enum fault_kind kind);
/* The nth call of kind from now (1: the next) fails; any fault armed before is disarmed. */
void fault_arm(enum fault_kind kind, long nth);
/* Disarms; true if the armed fault fired since fault_arm(). */
bool fault_disarm(void);
/* How many calls of the armed kind were made since fault_arm() (until it fired). */
long fault_calls(void);

#endif
