# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# lib.sh: what every integration test shares. Sourced at the top of a test.
#
# Each test gets a private temp dir ($T) and may run in parallel with the
# others. A daemon is started in the foreground (-f) with its stderr going to
# <store>.log, so that check_log can fail the test on any warning or error it
# did not expect. Whatever happens, the EXIT trap unmounts everything the test
# mounted, kills what is left of the daemons, and only then removes $T (never
# through a mount: rm is told to stay on one filesystem).
#
# Environment (set by tests/integration/meson.build):
#   CONVFS    the convfs binary
#   FIXTURES  the folder with the fixture tarballs (tests/fixtures)
# and optionally (`meson test --setup valgrind` sets it):
#   CONVFS_VALGRIND=1  run every daemon (and `convfs export`) under valgrind's
#             memcheck: a memory error or a definite or indirect leak makes it
#             exit with status 99, which unmount_convfs fails on, and the report
#             goes to the daemon log, which check_log fails on. Waits and the
#             watchdog are stretched (VALGRIND_SLOW times, default 10).
# and (set by meson.build for a build with -Dsanitize=true or -Dfuzz=true):
#   CONVFS_SANITIZED=1  the daemon runs under ASan/UBSan: its memory figures
#             (RSS) are the sanitizer's, so big_message.sh does not bound them.

set -euo pipefail

TEST_NAME=$(basename "$0" .sh)
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLIENTS=$TESTS_DIR/clients

declare -A DAEMON_PID=()  # mount point -> pid of its `convfs -f`
declare -A LOGS=()        # every daemon log (as keys), printed when a test fails
T=

say() { printf '%s: %s\n' "$TEST_NAME" "$*" >&2; }

declare -a PROBLEMS=()

# fail MSG: a fatal failure; the test stops here.
fail()
{
	printf '%s: FAIL: %b\n' "$TEST_NAME" "$*" >&2
	exit 1
}

# problem MSG: a failed check; the test goes on and fails at the end.
problem()
{
	printf '%s: FAIL: %b\n' "$TEST_NAME" "$*" >&2
	PROBLEMS+=("$*")
}

# pass: the end of a test; it passes only if no check failed.
pass()
{
	if ((${#PROBLEMS[@]} > 0)); then
		printf '%s: %d check(s) failed:\n' "$TEST_NAME" "${#PROBLEMS[@]}" >&2
		printf '  - %b\n' "${PROBLEMS[@]}" >&2
		exit 1
	fi
	printf '%s: PASS\n' "$TEST_NAME" >&2
	exit 0
}

# A command that fails where the test did not expect it stops the test.
on_error()
{
	local status=$1 line=$2 cmd=$3
	if [[ -n $T && -e $T/timed-out ]]; then
		fail "timed out after $TEST_TIMEOUT s (the watchdog killed the daemons: $(cat "$T/timed-out"))\n$(head -n 400 "$T/stuck" 2>/dev/null)"
	fi
	fail "line $line: command failed (status $status): $cmd"
}
set -E
trap 'on_error $? $LINENO "$BASH_COMMAND"' ERR

# ---- cleanup -----------------------------------------------------------------

# Every FUSE mount below $T, deepest first, from /proc/self/mountinfo.
mounts_below_tmp()
{
	[[ -n $T ]] || return 0
	awk -v t="$T" '$5 == t || index($5, t "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# detach_fuse_copies: for a test that runs in a mount namespace of its own.
# A new mount namespace starts with a copy of every mount there is, the FUSE
# mounts of other tests (this run's and other runs') included, and holds
# them: the daemon of such a mount does not end at its `fusermount3 -u`
# while the namespace keeps the copy (its test then fails: "still runs 10 s
# after unmounting"). So each is detached at once, deepest first (-c: no
# stat of a mount point whose daemon may not answer).
detach_fuse_copies()
{
	local mp
	while read -r mp; do
		umount -l -c "$(printf '%b' "$mp")" || echo "cannot detach the FUSE mount '$mp'" >&2
	done < <(awk '{ for (i = 7; $i != "-"; i++); if ($(i + 1) ~ /^fuse(blk)?(\.|$)/) print $5 }' \
		/proc/self/mountinfo | sort -r)
}

cleanup()
{
	local status=$? mp pid log
	trap - EXIT ERR
	trap '' INT TERM HUP
	set +e
	# A dead daemon's mount fails `mountpoint`; mountinfo still lists it.
	for mp in $(mounts_below_tmp); do
		timeout 10 fusermount3 -u "$mp" 2>/dev/null || timeout 10 fusermount3 -uz "$mp" 2>/dev/null
	done
	for pid in "${DAEMON_PID[@]}"; do
		wait_gone "$pid" 5 || kill -9 "$pid" 2>/dev/null
	done
	# Other mounts a test made (a tmpfs, a bind mount), once no daemon uses them.
	for mp in $(mounts_below_tmp); do
		umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null
	done
	if ((status != 0)); then
		for log in "${!LOGS[@]}"; do
			[[ -s $log ]] || continue
			printf -- '--- daemon log %s (last 40 lines) ---\n' "$log" >&2
			tail -n 40 "$log" >&2
		done
	fi
	if [[ -n $T && -d $T ]]; then
		if [[ -n $(mounts_below_tmp) ]]; then
			printf '%s: still mounted below %s; not removing it\n' "$TEST_NAME" "$T" >&2
		else
			rm -rf --one-file-system "$T"
		fi
	fi
	exit "$status"
}
trap cleanup EXIT

on_signal()
{
	on_error "$?" "$LINENO" "(interrupted by a signal)"
}
trap on_signal INT TERM HUP

# The watchdog: a test stuck in a FUSE call (a daemon that hangs) would hold
# until meson's SIGKILL, which leaves its mounts behind. Well before that, it
# kills the test's daemons (which frees the stuck call) and then the test,
# whose EXIT trap cleans up.
VALGRIND=()
SLOW=1
if [[ ${CONVFS_VALGRIND:-} == 1 ]]; then
	VALGRIND=(valgrind --quiet --error-exitcode=99 --leak-check=full
		--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
		--track-fds=no --suppressions="$TESTS_DIR/../valgrind.supp")
	SLOW=${VALGRIND_SLOW:-10}
	# valgrind 3.19 does not know openat2: the daemon would find it out
	# (ENOSYS) and walk paths by hand, but valgrind also prints a warning
	# about the call into the log, so the daemon is told at once.
	export CONVFS_NO_OPENAT2=1
fi
# (meson's own timeout is stretched by the valgrind setup's timeout_multiplier.)
TEST_TIMEOUT=$((${TEST_TIMEOUT:-240} * SLOW))

# What was stuck, into $T/stuck before the watchdog kills anything: the
# processes in uninterruptible sleep (D: a FUSE call the daemon has not
# answered, or a lock held by one) with their kernel stacks, and each
# daemon's threads: their kernel stacks, and with `gdb` as the argument
# (if installed; not under valgrind) their own stacks too. A process is
# named by /proc/PID/comm: reading the cmdline of one stuck on the mount may
# hang the reader too. gdb waits for good to attach to a daemon whose
# thread waits in the kernel (a notification the kernel cannot finish): it
# is killed after 20 s.
dump_stuck()
{
	local f pid state t
	for f in /proc/[0-9]*/stat; do
		pid=${f#/proc/}
		pid=${pid%/stat}
		# (A read of a process's stat waits while it is in execve(): bounded.)
		state=$(timeout -s KILL 2 sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "$f" 2>/dev/null) || continue
		[[ $state == D ]] || continue
		echo "--- pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) in D, waiting in $(cat "/proc/$pid/wchan" 2>/dev/null):"
		cat "/proc/$pid/stack" 2>/dev/null
	done
	while read -r pid; do
		kill -0 "$pid" 2>/dev/null || continue
		echo "--- daemon $pid, its threads in the kernel:"
		for t in /proc/"$pid"/task/*; do
			echo "thread ${t##*/} ($(awk '{ print $3 }' "$t/stat" 2>/dev/null)), waiting in $(cat "$t/wchan" 2>/dev/null):"
			cat "$t/stack" 2>/dev/null
		done
		[[ ${1:-} == gdb ]] && ((${#VALGRIND[@]} == 0)) && command -v gdb >/dev/null || continue
		echo "--- daemon $pid, its threads:"
		timeout -k 2 20 gdb -batch -p "$pid" -ex 'thread apply all bt' </dev/null 2>&1 | grep -E '^(Thread|#)'
	done <"$T/daemons"
}

# It counts the clock's seconds, not its own rounds (each of which takes a
# little more than one), so that it acts before meson's timeout. (Its
# abort_connections comes later in this file: it runs long after.)
watchdog()
{
	local main=$1 end
	trap - ERR
	set +e
	end=$(($(date +%s) + TEST_TIMEOUT))
	while (($(date +%s) < end)); do
		sleep 1
		kill -0 "$main" 2>/dev/null || exit 0
	done
	dump_stuck gdb >"$T/stuck" 2>&1
	echo "daemon pids: $(tr '\n' ' ' <"$T/daemons" 2>/dev/null)" >"$T/timed-out"
	# A daemon whose thread waits in the kernel cannot die: its connections go first.
	abort_connections
	while read -r pid; do kill -9 "$pid"; done <"$T/daemons"
	kill -TERM "$main"
}

# ---- preconditions -----------------------------------------------------------

[[ -n ${CONVFS:-} && -x $CONVFS ]] || fail "CONVFS must name the convfs binary (got '${CONVFS:-}')"
[[ -n ${FIXTURES:-} && -d $FIXTURES ]] || fail "the fixtures folder is missing (FIXTURES='${FIXTURES:-}')"
[[ -c /dev/fuse ]] || fail "/dev/fuse is missing: these tests need FUSE"
((${#VALGRIND[@]} == 0)) || command -v valgrind >/dev/null || fail "CONVFS_VALGRIND=1, but valgrind is missing"
command -v fusermount3 >/dev/null || fail "fusermount3 is missing"

T=$(mktemp -d "${TMPDIR:-/tmp}/convfs-$TEST_NAME.XXXXXX")
: >"$T/daemons"
(watchdog $$ </dev/null >/dev/null 2>&1 &)
# Files the test creates outside the mount keep the usual modes.
umask 022

# ---- mounting ----------------------------------------------------------------

# run_convfs ARGS...: runs convfs in the foreground (under valgrind with
# CONVFS_VALGRIND=1).
run_convfs()
{
	"${VALGRIND[@]}" "$CONVFS" "$@"
}

# no_valgrind_report FILE WHAT: the stderr of a convfs run that was meant to
# fail (so its status says nothing) holds no valgrind report.
no_valgrind_report()
{
	! grep -a -q -E '^==[0-9]+==' "$1" || problem "$2: valgrind reports errors:\n$(grep -a -E '^==[0-9]+==' "$1")"
}

# mount_convfs DIR STORE [convfs options...]
# Starts `convfs -f -o store=STORE DIR` in the background, its stderr appended
# to STORE.log (also in $CONVFS_LOG), and waits until DIR is a mount point.
mount_convfs()
{
	local dir=$1 store=$2
	shift 2
	mount_convfs_log "$dir" "$store.log" -o "store=$store" "$@"
}

# mount_convfs_log DIR LOG [convfs options...]: the same with any options.
# (MOUNT_SECS, default 10: how long the mount may take; a first take-in of a
# large folder comes before it.)
mount_convfs_log()
{
	local dir=$1 pid i secs=${MOUNT_SECS:-10}
	CONVFS_LOG=$2
	shift 2
	LOGS[$CONVFS_LOG]=1
	"${VALGRIND[@]}" "$CONVFS" -f "$@" "$dir" 2>>"$CONVFS_LOG" &
	pid=$!
	echo "$pid" >>"$T/daemons"
	for ((i = 0; i < secs * 10 * SLOW; i++)); do
		mountpoint -q "$dir" && break
		kill -0 "$pid" 2>/dev/null || fail "convfs exited before mounting '$dir':\n$(cat "$CONVFS_LOG")"
		sleep 0.1
	done
	mountpoint -q "$dir" || fail "'$dir' is not mounted after $((secs * SLOW)) s"
	DAEMON_PID[$dir]=$pid
}

# wait_gone PID [SECONDS]: waits (default 10 s) for a process to exit.
wait_gone()
{
	local pid=$1 secs=${2:-10} i
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# unmount_convfs DIR: fusermount3 -u, then the daemon must exit with status 0.
unmount_convfs()
{
	local dir=$1 pid=${DAEMON_PID[$1]:-} i rc=0
	for ((i = 0; ; i++)); do
		fusermount3 -u "$dir" 2>"$T/fusermount.err" && break
		((i < 20 * SLOW)) || fail "fusermount3 -u '$dir' failed: $(cat "$T/fusermount.err")"
		sleep 0.25 # EBUSY while a client closes its last file
	done
	[[ -n $pid ]] || return 0
	if ! wait_gone "$pid" $((10 * SLOW)); then
		dump_stuck gdb >"$T/stuck" 2>&1
		fail "convfs (pid $pid) still runs $((10 * SLOW)) s after unmounting '$dir':\n$(cat "$T/stuck")"
	fi
	wait "$pid" || rc=$?
	unset 'DAEMON_PID[$dir]'
	((rc == 0)) || fail "convfs serving '$dir' exited with status $rc"
}

# kill_daemon DIR: kill -9 the daemon. Its mount stays, dead: every call on it
# fails with ENOTCONN until remove_dead_mount. (Detaching it at once would let
# a client still running fall through to the folder underneath.)
kill_daemon()
{
	local dir=$1 pid=${DAEMON_PID[$1]}
	kill -9 "$pid"
	{ wait "$pid"; } 2>/dev/null || true
	unset 'DAEMON_PID[$dir]'
}

# remove_dead_mount DIR: what a user does after the daemon died.
remove_dead_mount()
{
	fusermount3 -uz "$1" 2>/dev/null || true
	! mountpoint -q "$1" || fail "'$1' is still mounted after fusermount3 -uz"
}

# ---- a mount that hangs ------------------------------------------------------

# abort_connections: aborts the FUSE connection of every mount below $T, as a
# user does for a mount that hangs (/sys/fs/fuse/connections/N/abort): every
# request waiting on it fails, and so does the daemon's device. Never wait
# for a hung request instead: a process in D state cannot be killed. The
# connection's number is the mount's device number, read from mountinfo (a
# stat of a hung mount may hang too).
abort_connections()
{
	local n
	[[ -n $T ]] || return 0
	while read -r n; do
		[[ -w /sys/fs/fuse/connections/$n/abort ]] && echo 1 >"/sys/fs/fuse/connections/$n/abort"
	done < <(awk -v t="$T" '($5 == t || index($5, t "/") == 1) && $0 ~ / - fuse/ {
		split($3, d, ":"); print d[1] * 1048576 + d[2] }' /proc/self/mountinfo)
}

# ends_within SECS WHAT CMD...: runs CMD (its status is ends_within's), its
# stderr into $T/ends_within.err. If it still runs after SECS (times SLOW),
# the mount hangs: the connections are aborted (which ends CMD: its requests
# fail) and the test fails.
ends_within()
{
	local secs=$1 what=$2 rc=0
	shift 2
	"$@" 2>"$T/ends_within.err" &
	pid_ends_within "$secs" "$what" $!
	wait $! || rc=$?
	return "$rc"
}

# pid_ends_within SECS WHAT PID: the same for a process of this shell's
# already running (its status is not taken).
pid_ends_within()
{
	local secs=$1 what=$2 pid=$3 i
	for ((i = 0; i < secs * SLOW * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		[[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) != Z ]] || return 0
		sleep 0.1
	done
	dump_stuck >"$T/stuck" 2>&1
	abort_connections
	wait "$pid" 2>/dev/null || true
	fail "$what: still waiting after $((secs * SLOW)) s: the mount hangs (its connection was aborted)\n$(cat "$T/stuck")"
}

# ---- checks ------------------------------------------------------------------

# check_log LOG [ALLOWED-ERE]
# Fails if the daemon log holds any line but `convfs: info: ...` and lines
# matching ALLOWED-ERE: every warning, error, sanitizer report or stray
# message must be expected by the test.
check_log()
{
	local log=$1 allowed=${2:-} bad
	[[ -f $log ]] || fail "no daemon log '$log'"
	# -a: a name with bytes that are not UTF-8, once logged, would make grep
	# take the whole log for binary and print no line of it.
	bad=$(grep -a -v -E '^convfs: info: ' "$log" || true)
	if [[ -n $allowed && -n $bad ]]; then
		bad=$(grep -a -v -E -e "$allowed" <<<"$bad" || true)
	fi
	[[ -z $bad ]] || problem "unexpected lines in the daemon log $log:\n$bad"
}

# log_has LOG ERE WHAT: the daemon log must have a line matching ERE.
log_has()
{
	grep -a -q -E -e "$2" "$1" || problem "the daemon log does not report $3 (no line matches /$2/)"
}

# same FILE1 FILE2 WHAT: byte-for-byte equal.
same()
{
	local out
	out=$(cmp -- "$1" "$2" 2>&1) && return 0
	[[ -n $out ]] || out="'$1' differs from '$2'"
	problem "$3: $out"
}

# expect_errno CODE CMD...: a client script must fail and print CODE (e.g. EINVAL).
expect_errno()
{
	local want=$1 out rc=0
	shift
	out=$("$@" 2>"$T/client.err") || rc=$?
	if ((rc == 0)); then
		problem "'$*' succeeded; expected $want"
	elif [[ $out != "$want" ]]; then
		problem "'$*' failed with '$out'; expected $want ($(cat "$T/client.err"))"
	fi
}

# wait_for FILE [SECONDS]: waits (default 10 s) until FILE exists.
wait_for()
{
	local i
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		[[ -e $1 ]] && return 0
		sleep 0.05
	done
	return 1
}

# wait_records FILE PREFIX N PID SECONDS: waits until FILE has N lines that
# start with PREFIX, written by process PID. 0 once they are there; 1 if PID
# ended first; 2 after SECONDS.
wait_records()
{
	local i
	for ((i = 0; i < $5 * 20; i++)); do
		(($(grep -c "^$2" "$1" || true) >= $3)) && return 0
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.05
	done
	(($(grep -c "^$2" "$1" || true) >= $3)) && return 0
	return 2
}

# ---- fixtures ----------------------------------------------------------------

# fixture_tarball NAME: NAME is 2.18.0, 1.0.10 or damaged.
fixture_tarball()
{
	case $1 in
	damaged) echo "$FIXTURES/cline-damaged-globalStorage.tar.gz" ;;
	3.*) echo "$FIXTURES/cline-cli-$1-data.tar.gz" ;; # the 3.x layout: mount its data/
	*) echo "$FIXTURES/cline-cli-$1-globalStorage.tar.gz" ;;
	esac
}

# fixture_extract NAME DEST: extracts into DEST (created) and prints the folder.
fixture_extract()
{
	local tarball
	tarball=$(fixture_tarball "$1")
	[[ -f $tarball ]] || fail "fixture '$tarball' is missing"
	mkdir -p "$2"
	tar -xzf "$tarball" -C "$2"
	echo "$2/cline-$1"
}

# node_client SCRIPT ARGS...: runs one of clients/*.js in the foreground.
# (In the background, start `node "$CLIENTS/SCRIPT"` itself, so that $! is
# node's pid and not a subshell's.)
node_client()
{
	local script=$1
	shift
	node "$CLIENTS/$script" "$@"
}

command -v node >/dev/null || fail "node is missing"
