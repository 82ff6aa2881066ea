#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kill_daemon.sh: kill -9 of the daemon in the middle of a burst of writes
# loses no completed write, and the store opens cleanly afterwards.
#
# On a mount of the Cline 2.18.0 fixture, clients/burst.js saves a task over
# and over (ui_messages.json by temp + rename, api_conversation_history.json
# by fs.writeFile, plus plain files), recording every save that returned in
# a fsynced file outside the mount. The daemon is killed with SIGKILL in the
# middle, the burst stops on the dead mount, the mount is cleaned up with
# fusermount3 -uz, and the same store mounted again. It proves that
#   - every recorded save is there: each conversation file reads back as its
#     last recorded version or the one written after it, never anything else,
#     and every recorded plain file has its content (clients/check_burst.js);
#   - the store is sound: PRAGMA integrity_check prints ok, while mounted and
#     after unmounting; and right after the kill, convfs check finds the
#     tables and the search index as one commit after another left them
#     (the index is kept in each commit's transaction);
#   - the burst was really cut short by the kill, with an error, not finished.
# It does this twice, so that the second run starts from a recovered store.
# Last, an unmount right after a process closed 5,000 files ends the daemon
# cleanly (status 0, nothing but info logged), though the kernel tears the
# connection down while the daemon reads their releases; also with -s.

. "$(dirname "$0")/lib.sh"

M=$(fixture_extract 2.18.0 "$T/fx")
STORE=$T/store.db
TASK=1795306269021

for round in 1 2; do
	say "round $round"
	record=$T/record.$round
	: >"$record"
	mount_convfs "$M" "$STORE"

	node "$CLIENTS/burst.js" "$M" "$TASK" "$round" "$record" >"$T/burst.out" 2>"$T/burst.err" &
	burst=$!
	# Kill once the burst is well under way: 40 saves of ui_messages.json.
	rc=0
	wait_records "$record" 'ui ' 40 "$burst" 30 || rc=$?
	((rc != 1)) || fail "the burst ended before the kill: $(cat "$T/burst.err")"
	((rc == 0)) || fail "the burst made fewer than 40 saves in 30 s"
	kill_daemon "$M"

	# The dead mount stops the burst (ENOTCONN, or ECONNABORTED for a call in
	# flight) before it is detached: no save may fall through to the folder below.
	# A write to a plain file through the page cache gets EIO when the kernel's
	# own read or write of the page meets the dead mount (as in crash_loop.sh);
	# the daemon, dead, cannot have answered it.
	status=0
	wait_gone "$burst" 10 || fail "the burst still runs 10 s after the daemon was killed"
	wait "$burst" || status=$?
	((status == 1)) || fail "the burst was not stopped by an error (exit status $status)"
	grep -q -x -E 'ENOTCONN|ECONNABORTED|EIO' "$T/burst.out" ||
		fail "the burst stopped with $(cat "$T/burst.out"), not for the dead mount: $(cat "$T/burst.err")"
	say "the burst stopped with $(cat "$T/burst.out") after $(wc -l <"$record") recorded saves"
	remove_dead_mount "$M"
	"$CONVFS" check "$STORE" >"$T/check.txt" 2>&1 ||
		problem "round $round: after the kill, convfs check finds problems:\n$(cat "$T/check.txt")"

	mount_convfs "$M" "$STORE"
	node_client check_burst.js "$M" "$TASK" "$round" "$record" >"$T/check.out" 2>"$T/check.err" ||
		problem "round $round: a recorded write is missing after the kill:\n$(cat "$T/check.err")"
	say "$(tr "\n" ";" <"$T/check.out")"
	[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] || problem "round $round: the store does not check ok while mounted"
	unmount_convfs "$M"
	[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] || problem "round $round: the store does not check ok after unmounting"
done

# An unmount while the kernel still sends the releases of files a process
# closed as it exited: it tears the connection down while the daemon reads
# one, and that read fails with ECONNABORTED, not ENODEV. The daemon must
# end as at any unmount: status 0 and nothing but info in its log. With the
# default loop, then with one thread (-s). (Under valgrind, whose own table
# of descriptors is smaller, 500 files.)
nopens=5000
[[ ${CONVFS_VALGRIND:-} == 1 ]] && nopens=500
for opts in "" -s; do
	say "an unmount while the releases of $nopens closed files are under way${opts:+ ($opts)}"
	mount_convfs "$M" "$STORE" ${opts:+"$opts"}
	echo '{}' >"$M/settings/opened.json"
	bash -c 'ulimit -n 6000 && for ((i = 0; i < $2; i++)); do exec {fd}<"$1" || exit 1; done' \
		_ "$M/settings/opened.json" "$nopens" || fail "could not open a file $nopens times"
	unmount_convfs "$M"
done

check_log "$STORE.log"
pass
