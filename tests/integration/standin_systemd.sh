#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# standin_systemd.sh UNIT FOLDER EVENTS: plays systemd's part for one
# instance of convfs@.service on a machine that does not run systemd. It
# reads the unit's [Service] lines and runs them as systemd does for
# Type=forking with Restart=on-failure:
#
#   start:   each ExecStartPre, then ExecStart; the start has succeeded when
#            ExecStart exits 0, and the main process is then the one it left
#            running;
#   running: until the main process is gone;
#   stop:    ExecStop (systemd runs it even when the main process ended on
#            its own: "the stop operation is always performed if the service
#            started successfully"), then each ExecStopPost; after a failed
#            start, ExecStopPost only;
#   restart: after a failure, RestartSec later, from the start again, at
#            most StartLimitBurst starts (5) within StartLimitIntervalSec
#            (10 s), as systemd's defaults allow.
# A command prefixed with '-' may fail; any other prefix is refused. %f is
# the folder (the unescaped instance name, given here as FOLDER); any other
# specifier is refused.
#
# Where it differs from systemd, for want of its means: systemd knows the
# main process through its cgroup and learns its exit status as the user
# manager's subreaper; this script finds it by its command line (the
# ExecStart words exactly: the daemon is the parent forked, and the folder is
# the test's own) and, not being its parent, cannot read its status: a main
# process that is gone while a convfs mount still sits on FOLDER, dead,
# counts as a failure (what a SIGKILL, a crash or an error of the FUSE loop
# leave), one that is gone with the folder unmounted as a clean exit (what
# `fusermount3 -u` leaves), which systemd does not restart.
#
# Conditions (ConditionPathIsDirectory=) are not checked: the folder is one
# here. (systemd checks them at each start, restarts included: a dead mount
# left on the folder would fail it, which ExecStopPost's detach prevents.)
#
# SIGTERM (systemctl stop): ExecStop, then, as KillMode=control-group does,
# SIGTERM to the main process if it is still there, SIGKILL if it is still
# there TimeoutStopSec later, then ExecStopPost, and exit. It also stops so when the process $TEST_PID (the test) is gone.
#
# EVENTS gets one line per step, "<ms since the epoch> <step> [details]":
# start, started pid=N, start-failed, died failure|clean, stopped,
# restarting, start-limit-hit. The commands' output goes to stderr.
set -euo pipefail

if (($# != 3)); then
	echo "usage: standin_systemd.sh UNIT FOLDER EVENTS" >&2
	exit 2
fi
unit=$1 folder=$2 events=$3
me=standin_systemd

die() { printf '%s: %s\n' "$me" "$*" >&2; exit 1; }
event() { printf '%s %s\n' "$(date +%s%3N)" "$*" >>"$events"; }

# ---- the unit ---------------------------------------------------------------

type=simple restart=no restart_sec=0.1 stop_timeout=90
exec_start=
declare -a start_pre=() stop=() stop_post=()
section=
while IFS= read -r line || [[ -n $line ]]; do
	case $line in
	'' | '#'* | ';'*) continue ;;
	'['*']') section=$line; continue ;;
	esac
	[[ $section == '[Service]' ]] || continue
	key=${line%%=*} value=${line#*=}
	case $key in
	Type) type=$value ;;
	Restart) restart=$value ;;
	RestartSec) restart_sec=$value ;;
	TimeoutStopSec) stop_timeout=$value ;;
	ExecStartPre) start_pre+=("$value") ;;
	ExecStart) [[ -z $exec_start ]] || die "more than one ExecStart"; exec_start=$value ;;
	ExecStop) stop+=("$value") ;;
	ExecStopPost) stop_post+=("$value") ;;
	*) ;;
	esac
done <"$unit"
[[ $type == forking ]] || die "Type=$type: only Type=forking is played here"
[[ -n $exec_start ]] || die "the unit has no ExecStart"
[[ $restart_sec =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "RestartSec=$restart_sec: only seconds are understood here"
[[ $stop_timeout =~ ^[0-9]+$ ]] || die "TimeoutStopSec=$stop_timeout: only whole seconds are understood here"

# words LINE: the command's words, %f expanded (after splitting, as systemd
# does: a folder with spaces stays one word), into the array `argv`.
declare -a argv=()
words()
{
	local w
	read -r -a argv <<<"$1"
	for ((w = 0; w < ${#argv[@]}; w++)); do
		argv[w]=${argv[w]//%f/$folder}
		[[ ${argv[w]} != *%* ]] || die "a specifier other than %f in '$1'"
	done
}

# run LINE: runs one Exec line; its status, or 0 if it may fail ('-').
run()
{
	local line=$1 may_fail=0 rc=0
	if [[ $line == -* ]]; then
		may_fail=1
		line=${line#-}
	fi
	[[ $line != [@+!:]* ]] || die "the prefix of '$line' is not played here"
	words "$line"
	printf '%s: running %s\n' "$me" "${argv[*]}" >&2
	"${argv[@]}" </dev/null >&2 || rc=$?
	((rc == 0 || may_fail)) || { printf '%s: %s failed with status %d\n' "$me" "${argv[0]}" "$rc" >&2; return "$rc"; }
	return 0
}

# main_pid: the process ExecStart left running (see the top).
main_pid()
{
	local p args want
	words "${exec_start#-}"
	want=$(printf '%s\n' "${argv[@]}")
	for p in /proc/[0-9]*; do
		args=$({ tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null) || continue
		[[ $args == "$want" ]] || continue
		echo "${p#/proc/}"
		return 0
	done
	return 1
}

# dead_mount: a convfs mount sits on the folder and does not answer.
dead_mount()
{
	[[ $(findmnt -n -o FSTYPE --mountpoint "$folder" 2>/dev/null | tail -n 1) == fuse.convfs ]] || return 1
	# A listing, not stat: the kernel may answer stat from its cache.
	! timeout 5 ls -f -- "$folder" >/dev/null 2>&1
}

# alive PID: the process runs. A zombie is gone for this purpose: systemd,
# the subreaper, reaps its main process at once; here an orphan's zombie
# waits for PID 1, which may take its time.
alive()
{
	local stat
	stat=$({ cat "/proc/$1/stat"; } 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}

stopping=0
trap 'stopping=1' TERM INT
test_gone() { [[ -n ${TEST_PID:-} ]] && ! kill -0 "$TEST_PID" 2>/dev/null; }

run_all() { local l; for l in "$@"; do run "$l" || return 1; done; }

# stop_service PID: ExecStop, what is left of the main process ended,
# ExecStopPost.
stop_service()
{
	local pid=$1 i
	run_all "${stop[@]}" || true
	if alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < stop_timeout * 10; i++)); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			event "stop-sigkill pid=$pid"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	run_all "${stop_post[@]}" || true
	event stopped
}

declare -a starts=()
while :; do
	# The start limit: StartLimitBurst=5 within StartLimitIntervalSec=10.
	now=$(date +%s)
	recent=()
	for s in "${starts[@]}"; do
		if ((now - s < 10)); then recent+=("$s"); fi
	done
	starts=("${recent[@]}")
	if ((${#starts[@]} >= 5)); then
		event start-limit-hit
		exit 1
	fi
	starts+=("$now")

	event start
	pid=
	if run_all "${start_pre[@]}" && run "$exec_start"; then
		for ((i = 0; i < 50; i++)); do
			pid=$(main_pid) && break
			sleep 0.1
		done
	fi
	if [[ -z $pid ]]; then
		event start-failed
		run_all "${stop_post[@]}" || true
		result=failure
	else
		event "started pid=$pid"
		while alive "$pid"; do
			if ((stopping)) || test_gone; then
				stop_service "$pid"
				exit 0
			fi
			sleep 0.05
		done
		result=clean
		if dead_mount; then result=failure; fi
		event "died $result"
		run_all "${stop[@]}" || true
		run_all "${stop_post[@]}" || true
	fi
	if ((stopping)) || test_gone || [[ $result == clean ]] || [[ $restart != on-failure && $restart != always ]]; then
		event stopped
		exit 0
	fi
	event restarting
	sleep "$restart_sec"
done
