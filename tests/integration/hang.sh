#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# hang.sh: nothing a user does makes the daemon wait for good. Each step has
# a time limit (ends_within, lib.sh): a step still running at its end is a
# request the daemon never answers, and the test aborts the FUSE connection
# (never waits: a process stuck in D state cannot be killed) and fails.
#
# On the 2.18.0 fixture, with one worker (-s) and again with two
# (-o max_threads=2), where as many stuck requests as workers hang it all:
#   - a FIFO and a device node in the folder underneath: the take-in at
#     mount neither opens nor copies them, and the mount comes up;
#   - FIFOs renamed over conversation files (mv, as a temp file is): EINVAL
#     at once, the file as it was (the daemon opened the FIFO and waited for
#     a writer); a device node put in the backing tree, renamed over one:
#     EINVAL, never read;
#   - plain files the kernel knows, replaced by FIFOs in the backing tree:
#     opening them through the mount (the kernel, told the file changed,
#     then opens the FIFO itself and its reader waits there, as on any
#     filesystem) leaves the daemon serving; a truncate of one by path gets
#     EINVAL (the daemon waited in open() for a reader);
#   - a 64 MiB file of the client's own directly in workspaces/, read in
#     three loops while 40 tasks are made in the view: each new task has the kernel
#     drop what it keeps of the view's folders and of workspaces/'s entries,
#     attributes only for a file (dropping its pages waited for a read that
#     waited for the one worker that asked);
#   - a FIFO in the backing tree: `convfs export` ends.

. "$(dirname "$0")/lib.sh"

command -v mkfifo >/dev/null || fail "mkfifo is missing"
((EUID == 0)) || fail "needs root (mknod of a device node in the backing tree)"

ID=1795306269021
UI=tasks/$ID/ui_messages.json
BIG_MB=64
[[ ${CONVFS_VALGRIND:-} == 1 ]] && BIG_MB=8

# run_with NAME WORKERS OPTIONS...: every step on a fresh mount of the fixture.
run_with()
{
	local name=$1 workers=$2 mnt store b ws i pids=() r
	shift 2
	say "--- $name"
	mnt=$(fixture_extract 2.18.0 "$T/$name")
	store=$T/$name.db
	b=$store.files
	mkfifo "$mnt/underneath.fifo"
	mknod "$mnt/underneath.zero" c 1 5
	mount_convfs "$mnt" "$store" "$@"
	cp "$mnt/$UI" "$T/$name.ui"
	[[ ! -e $b/underneath.fifo && ! -e $b/underneath.zero ]] || problem "$name: the take-in copied a FIFO or a device node"

	say "$name: FIFOs and a device node renamed over conversation files"
	for ((i = 0; i < workers + 1; i++)); do
		mkfifo "$mnt/$UI.tmp.$i"
		r=0
		ends_within 5 "$name: mv of a FIFO over ui_messages.json" mv "$mnt/$UI.tmp.$i" "$mnt/$UI" || r=$?
		((r != 0)) || problem "$name: a FIFO renamed over ui_messages.json was taken"
		grep -q -e "Invalid argument" -e "subdirectory of itself" "$T/ends_within.err" ||
			problem "$name: the rename of a FIFO failed, but not with EINVAL: $(cat "$T/ends_within.err")"
		rm -f "$mnt/$UI.tmp.$i"
	done
	mknod "$b/tasks/$ID/dev.zero" c 1 5
	r=0
	ends_within 5 "$name: mv of a device node over ui_messages.json" mv "$mnt/tasks/$ID/dev.zero" "$mnt/$UI" || r=$?
	((r != 0)) || problem "$name: a device node renamed over ui_messages.json was taken"
	rm -f "$b/tasks/$ID/dev.zero"
	same "$mnt/$UI" "$T/$name.ui" "$name: ui_messages.json after the refused renames"

	say "$name: plain files replaced by FIFOs behind the kernel's back"
	for ((i = 0; i < workers + 1; i++)); do
		echo hello >"$mnt/settings/p$i.txt"
		stat "$mnt/settings/p$i.txt" >/dev/null # the kernel keeps its entry (600 s)
		rm "$b/settings/p$i.txt"
		mkfifo "$b/settings/p$i.txt"
		timeout 10 cat "$mnt/settings/p$i.txt" >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 0.5
	ends_within 5 "$name: a stat while opens of FIFOs that replaced files wait" stat "$mnt/tasks" >/dev/null
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	echo hello >"$mnt/settings/q.txt"
	stat "$mnt/settings/q.txt" >/dev/null
	rm "$b/settings/q.txt"
	mkfifo "$b/settings/q.txt"
	r=0
	ends_within 5 "$name: truncate of a file replaced by a FIFO" truncate -s 0 "$mnt/settings/q.txt" || r=$?
	((r != 0)) || problem "$name: the truncate of a FIFO by path succeeded"

	say "$name: a large file of the client's in workspaces/ read while tasks are made"
	ws=$(cd "$mnt/workspaces" && ls -d webapp-*)
	head -c "${BIG_MB}M" /dev/urandom >"$mnt/workspaces/big.bin"
	rm -f "$T/stop"
	pids=()
	for ((i = 0; i < 3; i++)); do
		(while [[ ! -e $T/stop ]]; do cat "$mnt/workspaces/big.bin" >/dev/null || break; done) &
		pids+=($!)
	done
	for ((i = 0; i < 40; i++)); do
		ends_within 10 "$name: making a task while workspaces/big.bin is read" mkdir "$mnt/workspaces/$ws/tasks/17953064000$((10 + i))"
	done
	touch "$T/stop"
	for r in "${pids[@]}"; do
		pid_ends_within 20 "$name: a reader of workspaces/big.bin" "$r"
	done
	ends_within 5 "$name: a listing at the end" ls "$mnt/workspaces/$ws/tasks" >/dev/null
	mkfifo "$mnt/settings/export.fifo"

	unmount_convfs "$mnt"
	ends_within 30 "$name: export with a FIFO in the backing tree" run_convfs export "$store" "$T/$name.out" ||
		problem "$name: export failed: $(cat "$T/ends_within.err")"
	check_log "$store.log" "^convfs: warning: ('underneath\\.(fifo|zero)' is not a file, directory or symlink; not taken in|refusing to commit)"
}

run_with single 1 -s
run_with two 2 -o max_threads=2
pass
