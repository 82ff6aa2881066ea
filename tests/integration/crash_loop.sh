#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# crash_loop.sh: kill -9 of the daemon at CRASH_ROUNDS (default 100) random
# moments during mixed writes loses nothing that had returned.
#
# On a mount of the 2.18.0 fixture, clients/crash_writer.js makes compat
# rewrites (temp + rename and in place), appends to a workspaces-view
# messages file, plain files and git commits, recording in a fsynced file
# outside the mount every write that returned. At a random moment (0.05 s to
# 1.2 s into the round) the daemon gets SIGKILL; the dead mount is detached
# and the same store mounted again. After every round:
#   - every recorded write is there (clients/crash_check.js), and the last
#     recorded git commit is in `git log`;
#   - `PRAGMA integrity_check` is ok and `git fsck --full` is clean (stale
#     *.lock files, which a killed git leaves on any filesystem, are removed
#     first, as git tells a user to);
#   - the daemon left no temp state of its own: no .convfs-stage.* or
#     .convfs-rename.* file in the backing tree.
# At the end, after a clean unmount, the store is one file again (no -wal,
# -shm or -journal beside it) and the daemon logged nothing unexpected.
#
# CRASH_ROUNDS=N sets the number of kills; the seed of the random moments is
# printed, and CRASH_SEED=S repeats a run.

. "$(dirname "$0")/lib.sh"

ROUNDS=${CRASH_ROUNDS:-100}
SEED=${CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$SEED
say "$ROUNDS rounds, seed $SEED (CRASH_SEED=$SEED repeats them)"

M=$(fixture_extract 2.18.0 "$T/fx")
STORE=$T/store.db
RECORD=$T/record
REPO=$M/crashrepo
: >"$RECORD"

# The moment of a kill: uniform over 50..1200 ms, as "sleep" wants it.
moment() { printf '%d.%03d' $((r = 50 + RANDOM % 1150, r / 1000)) $((r % 1000)); }

# Stale git locks, as a killed git leaves them, removed as git tells a user to.
unlock_git()
{
	[[ -d $REPO/.git ]] || return 0
	find "$REPO/.git" -name '*.lock' -type f -delete
}

kills=0 mid_write=0
for ((round = 1; round <= ROUNDS; round++)); do
	mount_convfs "$M" "$STORE"
	node "$CLIENTS/crash_writer.js" "$M" 7 "$RECORD" >"$T/writer.out" 2>"$T/writer.err" &
	writer=$!
	sleep "$(moment)"
	if ! kill -0 "$writer" 2>/dev/null; then
		wait "$writer" || true
		fail "round $round: the writer ended before the kill: $(cat "$T/writer.out" "$T/writer.err")"
	fi
	kill_daemon "$M"
	kills=$((kills + 1))
	wait_gone "$writer" 10 || fail "round $round: the writer still runs 10 s after the daemon was killed"
	status=0
	wait "$writer" || status=$?
	((status != 0)) || fail "round $round: the writer was not stopped by the dead mount"
	# ENOTCONN (or ECONNABORTED for a call in flight) from node itself, or
	# ERROR for a git that died of it: the dead mount stopped the writer.
	# Now and then node aborts (status 134, no message) on a close that fails
	# on the dead mount; the data checks below hold for that too. A write of
	# part of a plain file's page gets EIO: the kernel must first read the
	# page, and that read fails on the dead mount.
	((status == 134)) && [[ ! -s $T/writer.out ]] && echo SIGABRT >"$T/writer.out"
	grep -q -x -E 'ENOTCONN|ECONNABORTED|EIO|ERROR|SIGABRT' "$T/writer.out" ||
		fail "round $round: the writer stopped (status $status) with '$(cat "$T/writer.out")', not for the dead mount: $(cat "$T/writer.err")"
	[[ $(cat "$T/writer.out") == ECONNABORTED ]] && mid_write=$((mid_write + 1))
	remove_dead_mount "$M"

	leftovers=$(find "$STORE.files" \( -name '.convfs-stage.*' -o -name '.convfs-rename.*' \) -print)
	[[ -z $leftovers ]] || problem "round $round: the daemon left temp files behind:\n$leftovers"

	mount_convfs "$M" "$STORE"
	node_client crash_check.js "$M" 7 "$RECORD" >"$T/check.out" 2>"$T/check.err" ||
		fail "round $round: a recorded write is missing after the kill:\n$(cat "$T/check.err")"
	[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] ||
		fail "round $round: the store does not check ok after the kill"
	unlock_git
	last_git=$(awk '$1 == "git" { n = $2 } END { print n + 0 }' "$RECORD")
	if ((last_git > 0)); then
		git -C "$REPO" log --format=%s >"$T/log.out" 2>&1 && grep -q -x "c $last_git" "$T/log.out" ||
			fail "round $round: the recorded commit 'c $last_git' is not in git log:\n$(head -5 "$T/log.out")"
		git -C "$REPO" fsck --full --no-progress >"$T/fsck.out" 2>&1 ||
			fail "round $round: git fsck fails after the kill:\n$(cat "$T/fsck.out")"
	fi
	unmount_convfs "$M"
	if ((round % 10 == 0)); then
		say "round $round: $(wc -l <"$RECORD") writes recorded; $(tr '\n' ';' <"$T/check.out")"
	fi
done

say "$kills kills, $mid_write of them with a call in flight; $(wc -l <"$RECORD") writes recorded"
for f in "$STORE-wal" "$STORE-shm" "$STORE-journal"; do
	[[ ! -e $f ]] || problem "$(basename "$f") is left beside the store after a clean unmount"
done
[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] || problem "the store does not check ok at the end"
# A killed daemon logs nothing; recovery is reported as info.
check_log "$STORE.log"
pass
