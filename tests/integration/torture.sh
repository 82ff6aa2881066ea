#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torture.sh: several Cline windows at once never lose each other's work.
#
# N node processes (N = 2, 4, 8), each behaving like a Cline window
# (torture/window.js: history read at start, reloaded by a file watcher,
# debounced whole rewrites, temp + rename writes of the history and of its
# tasks' message files, some windows on one shared task), run at once on one
# mount. At the end every task is in taskHistory.json and every message in
# its files, in order, none twice: 0 lost. The same run on a plain folder
# must lose something, or this test could not fail.

. "$(dirname "$0")/lib.sh"

runner=$(dirname "$0")/torture/run.js
tasks=${TORTURE_TASKS:-10}
messages=${TORTURE_MESSAGES:-5}

mkdir -p "$T/plain"
say "plain folder, 4 windows (must lose)"
node "$runner" "$T/plain" 4 "$tasks" "$messages" --expect-loss 2>"$T/plain.err" >&2 ||
	problem "the plain folder lost nothing: the test cannot tell a lossy folder from convfs"

for n in 2 4 8; do
	mnt=$T/mnt$n
	mkdir -p "$mnt"
	mount_convfs "$mnt" "$T/store$n.db"
	say "convfs, $n windows"
	node "$runner" "$mnt" "$n" "$tasks" "$messages" 2>"$T/run$n.err" >&2 ||
		problem "$n windows lost work on convfs:\n$(head -n 20 "$T/run$n.err")\n--- daemon log:\n$(grep -v '^convfs: info' "$T/store$n.db.log" | head -n 60)"
	unmount_convfs "$mnt"
	check_log "$T/store$n.db.log"
	integrity=$(sqlite3 "$T/store$n.db" 'PRAGMA integrity_check')
	[[ $integrity == ok ]] || problem "store after $n windows: $integrity"
done
pass
