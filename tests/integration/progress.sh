#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# progress.sh: long work shows one progress line on a terminal, and nothing
# in a pipe or under systemd (fs/cmd/progress.c).
#
# Over a folder of 20,000 files (a take-in of half a second or so):
#   - the take-in at mount, on a terminal (script(1)): "\rconvfs: taking in
#     N/20001 entries" lines, ended by a newline;
#   - the same with INVOCATION_ID set (as systemd sets it for a unit): none;
#   - export on a terminal: "exporting"; export, check and forget with
#     stderr in a pipe: no carriage return, nothing but their own messages;
#   - CONVFS_PROGRESS=always shows check's line in a pipe, CONVFS_PROGRESS=never
#     hides the take-in's on a terminal.
# Each with CONVFS_PROGRESS=now (where it shows, at once), so that none
# passes or fails by the machine's speed; without it, an export within half
# a second shows nothing on a terminal.
# (Every other integration test runs its daemons with stderr to a file and
# check_log fails on a progress line there.)

. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || fail "script(1) is missing (util-linux)"
dir=$T/folder
mkdir -p "$dir/cache"
(cd "$dir/cache" && seq 1 20000 | xargs touch)

# on_tty LOG CMD...: runs CMD on a terminal of script(1)'s, its output into LOG.
on_tty()
{
	local log=$1
	shift
	script -q -e -c "$(printf '%q ' "$@")" /dev/null >"$log" 2>&1 </dev/null
}

# mount_on_tty STORE [ENV...]: convfs mounts $dir from a terminal (it forks once mounted).
mount_on_tty()
{
	local store=$1
	shift
	on_tty "$T/tty.log" env "$@" "$CONVFS" -o "store=$store" "$dir" || fail "mounting on a terminal failed:\n$(cat "$T/tty.log")"
	mountpoint -q "$dir" || fail "'$dir' is not mounted"
	fusermount3 -u "$dir"
	for ((i = 0; i < 50; i++)); do
		"$CONVFS" check "$store" 2>&1 | grep -q "is mounted" || break
		sleep 0.1
	done
}

# CONVFS_PROGRESS=now: shown where it would be, at once. The take-in of 20,000
# files can end within the half second that shows nothing on a fast machine
# (it did, in a full run), which would make the checks of where it shows,
# and of where it does not, pass or fail by the machine's speed.
mount_on_tty "$T/s1.db" CONVFS_PROGRESS=now
grep -q $'\rconvfs: taking in [0-9]*/20001 entries' "$T/tty.log" || problem "no progress line of the take-in on a terminal:\n$(cat -v "$T/tty.log")"
grep -q $'\rconvfs: taking in 20001/20001 entries.*\r$' "$T/tty.log" || problem "the take-in's progress line does not end with its last state:\n$(cat -v "$T/tty.log" | tail -3)"

mount_on_tty "$T/s2.db" CONVFS_PROGRESS=now INVOCATION_ID=0123abcd
! grep -q "taking in" "$T/tty.log" || problem "progress under systemd (INVOCATION_ID):\n$(cat -v "$T/tty.log")"
mount_on_tty "$T/s3.db" CONVFS_PROGRESS=never
! grep -q "taking in" "$T/tty.log" || problem "progress with CONVFS_PROGRESS=never:\n$(cat -v "$T/tty.log")"

# Export on a terminal (20,000 files export in a fifth of a second on a fast
# machine): its line, at once, and the end line closes it.
on_tty "$T/tty.log" env CONVFS_PROGRESS=now "$CONVFS" export "$T/s1.db" "$T/out1" || problem "export on a terminal failed:\n$(cat "$T/tty.log")"
grep -q $'\rconvfs: exporting: ' "$T/tty.log" || problem "no progress line of export on a terminal:\n$(cat -v "$T/tty.log" | head -c 400)"
grep -q $'\rconvfs: exported 20001 files and 0 conversation files.*$' "$T/tty.log" || problem "export's progress line does not end with its total:\n$(cat -v "$T/tty.log" | tail -c 400)"
diff -r "$dir" "$T/out1" >/dev/null || problem "the export differs from the folder"
# Without it, an export within the half second shows nothing on a terminal either.
start=$(date +%s%N)
on_tty "$T/tty.log" "$CONVFS" export "$T/s1.db" "$T/out3" || problem "export on a terminal failed:\n$(cat "$T/tty.log")"
if (($(date +%s%N) - start < 400000000)); then
	! grep -q "exporting" "$T/tty.log" || problem "a progress line of an export shorter than half a second:\n$(cat -v "$T/tty.log")"
fi

# In a pipe: nothing but the commands' own lines.
CONVFS_PROGRESS=now "$CONVFS" export "$T/s1.db" "$T/out2" 2>&1 | cat >"$T/pipe.log"
CONVFS_PROGRESS=now "$CONVFS" check "$T/s1.db" 2>&1 | cat >>"$T/pipe.log"
CONVFS_PROGRESS=now "$CONVFS" forget "$T/s1.db" --match nothing-holds-this --yes 2>&1 | cat >>"$T/pipe.log"
! grep -q $'\r' "$T/pipe.log" || problem "a progress line in a pipe:\n$(cat -v "$T/pipe.log")"
! grep -q -E "exporting|checking|looking in" "$T/pipe.log" || problem "progress in a pipe:\n$(cat "$T/pipe.log")"
CONVFS_PROGRESS=always "$CONVFS" check "$T/s1.db" 2>"$T/always.log" >/dev/null
grep -q $'\rconvfs: check' "$T/always.log" || problem "CONVFS_PROGRESS=always shows nothing in a pipe:\n$(cat -v "$T/always.log")"
pass
