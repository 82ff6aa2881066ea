#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# real_clients.sh: the real Cline CLIs from npm run unchanged on the mount
# (not imitations of them), driven headless against a stand-in model server of our own
# (real_clients/model_server.js, on 127.0.0.1; no network, no key).
#
# For each CLI generation (1.0.10, 2.18.0, 3.0.65; installed once into
# ${CONVFS_CLIENT_CACHE:-~/.cache/convfs/clients}/<version>), with HOME in the
# test's temp dir:
#   - on a plain folder (the control): one task, then 4 at once against the
#     same data folder. What the client lost there is REPORTED, not asserted
#     (e.g. "2.18.0 kept 2 of 4 concurrent tasks in state/taskHistory.json");
#   - with convfs mounted over exactly the client's data folder, the same
#     run, and it must lose nothing: every task ends (exit 0, hello.txt
#     written, the completion in the client's own record), its files are
#     valid JSON, it is in the client's own history (state/taskHistory.json
#     for 1.x/2.x, `cline history --json` for 3.x) and in the view
#     (workspaces/*/tasks/<id>); 1.0.10's shadow checkpoint repos pass
#     `git fsck`; the daemon logs nothing unexpected; after a remount the
#     history and the view still hold every task.
# Then, for each of 2.x and 3.x:
#   - mounts: two mounts of one store (a daemon each, as the host's editor and
#     a container's), each the data folder of a client HOME of its own; two
#     tasks at once through each, all four at once: every task ends well, and
#     each mount's own history (state/taskHistory.json; `cline history
#     --json`, made from the session files, as each mount keeps its own
#     db/) lists all four.
# Then, with 3.0.65 on the mount:
#   - kill: the daemon is killed (-9) in the middle of a session save (strace
#     delays every ftruncate; the kill lands when the client has written the
#     new content of <id>.messages.json and not yet truncated it); after a
#     remount the file must be whole, valid JSON, and the version the client
#     was writing or the one before it (taken from strace's record of every
#     write), never torn, never older;
#   - unmount while a client runs: a 3.x task in hub mode (its background hub
#     keeps files in the data folder open) and a writer holding a file open:
#     `fusermount3 -u` answers EBUSY; `fusermount3 -uz` detaches the mount,
#     the writer goes on through its open descriptor, the daemon exits once the
#     last one closes; after a remount everything written before, and every
#     write that returned through a descriptor opened before, is there.
# And with 2.x, two machines (two mounts with stores of their own, -o sync
# through a PostgreSQL cluster of the test's own, pg.sh): two tasks at once
# on each, four in all: every task completes, all four are in each
# machine's state/taskHistory.json, and both hold the same bytes.
# Client processes left behind (1.0.10's cline-core/cline-host, 3.x's hub) are
# reported and killed before each unmount.
#
# Environment (besides lib.sh's):
#   CONVFS_CLIENT_CACHE  where the CLIs are installed (default ~/.cache/convfs/clients)
#   REAL_CLIENTS         the versions to run (default "1.0.10 2.18.0 3.0.65")
#   REAL_CLIENT_TIMEOUT  seconds one client run may take (default 240)
#   REAL_CLIENT_GAP      seconds between the starts of 1.x tasks run at once (default 8)
#   REAL_CLIENT_PARTS    which parts run (default "plain mount mounts kill unmount sync")
#   CI=true              a reason to skip (no npm registry, node < 20) fails
# Outside CI it skips (exit 77) without node >= 20 or, when a CLI is not yet
# in the cache, without the npm registry.

# lib.sh's watchdog: meson gives 1440 s (see meson.build); run alone, as long.
: "${TEST_TIMEOUT:=1440}"
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/real_clients/drive.sh"

read -r -a VERSIONS <<<"${REAL_CLIENTS:-1.0.10 2.18.0 3.0.65}"
N=4 # tasks at once
PARTS=" ${REAL_CLIENT_PARTS:-plain mount mounts kill unmount sync} "

# ---- preconditions -------------------------------------------------------------

clients_preconditions
if ! command -v strace >/dev/null; then
	say "strace is missing; installing it"
	sudo=
	[[ $(id -u) == 0 ]] || sudo=sudo
	{ DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq strace ||
		{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq strace; }; } >/dev/null 2>&1 || true
fi
HAVE_STRACE=1
command -v strace >/dev/null || HAVE_STRACE=0

# ---- the model server and the clients ---------------------------------------

clients_ready "${VERSIONS[@]}"

# pids_of_home HOME: processes running with HOME=HOME (a client and all its
# children, background ones included).
pids_of_home()
{
	timeout -s KILL 20 grep -l -s -z -x -F "HOME=$1" /proc/[0-9]*/environ | awk -F/ -v me=$$ '$3 != me { print $3 }' || true
}

# pids_on DIR: processes with their cwd or an open file at or below DIR.
# (Reading the links of a process in execve() waits for its exec lock, for
# good if the process waits on the mount: bounded, as sweep_all()'s reads.)
pids_on()
{
	{
		timeout -s KILL 20 find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( -lname "$1" -o -lname "$1/*" \) -printf '%h\n'
		timeout -s KILL 20 find /proc/[0-9]*/cwd -maxdepth 0 \( -lname "$1" -o -lname "$1/*" \) -printf '%p\n'
	} 2>/dev/null | awk -F/ -v me=$$ '$3 != me { print $3 }' | sort -un || true
}

# describe PID [DIR]: its command line and the files it holds below DIR.
describe()
{
	local pid=$1 dir=${2:-} cmd files=
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-160) || true
	if [[ -n $dir ]]; then
		files=$(for f in /proc/"$pid"/fd/*; do readlink "$f"; done 2>/dev/null |
			awk -v d="$dir/" 'index($0, d) == 1 { print substr($0, length(d) + 1) }' | sort | uniq -c |
			awk '{ printf "%s%s(x%d)", sep, $2, $1; sep = ", " }')
	fi
	echo "pid $pid: ${cmd:-?}${files:+; open: $files}"
}

# stop_pids WHAT PIDS...: TERM, then KILL after 5 s.
stop_pids()
{
	local p i
	(($# > 0)) || return 0
	kill -TERM "$@" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		for p in "$@"; do
			kill -0 "$p" 2>/dev/null && [[ $(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) != Z ]] && break
			p=
		done
		[[ -z $p ]] && return 0
		sleep 0.1
	done
	kill -KILL "$@" 2>/dev/null || true
}

# sweep HOME DIR WHAT: reports and stops every client process still running
# with HOME, and every process holding files below DIR.
sweep()
{
	local home=$1 dir=$2 what=$3 pids p
	mapfile -t pids < <({ pids_of_home "$home"; pids_on "$dir"; } | sort -un)
	for p in "${pids[@]}"; do
		note "$what: left running: $(describe "$p" "$dir")"
	done
	stop_pids "${pids[@]}"
}

# Whatever happens, no client of ours is left behind. (Reading the environ of
# a process waits for its memory map's lock, which one stuck in a request to
# a daemon that does not answer holds: each read is bounded.)
sweep_all()
{
	local p
	for p in /proc/[0-9]*; do
		[[ ${p#/proc/} == "$$" ]] && continue
		timeout -s KILL 5 grep -q -z "^HOME=$T/" "$p/environ" 2>/dev/null && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	kill "$MODEL_PID" 2>/dev/null
	return 0
}
. "$TESTS_DIR/pg.sh"
at_exit 'sweep_all; pg_teardown'

# The layout of one run: $B (its folder), $HOME_ (the client's HOME), $CFG
# (2.x's --config), $DATA (the client's data folder, where convfs mounts).
layout()
{
	local v=$1
	B=$2
	HOME_=$B/home
	CFG=$B/config
	case $v in
	2.*) DATA=$CFG/data ;;
	*) DATA=$HOME_/.cline/data ;;
	esac
	mkdir -p "$HOME_" "$DATA"
}

# ---- one generation on a plain folder or on the mount ------------------------

declare -A IDS=() # "V mode i" -> task id

# check_run V MODE: what became of tasks 0..N (0 alone, 1..N at once).
# MODE plain: reported; mount: asserted.
check_run()
{
	local v=$1 mode=$2 i id why hist view lost_hist=() lost_view=() bad=() kept=0 done_n=0 g found=0 f
	hist=$(history_ids "$v")
	view=
	if [[ $mode == mount ]]; then
		view=$(view_ids)
	fi
	for ((i = 0; i <= N; i++)); do
		id=$(task_id "$v" "$i")
		IDS["$v $mode $i"]=$id
		why=$(task_problems "$v" "$i" "$id")
		if [[ -n $why ]]; then
			bad+=("task $i${id:+ ($id)}: $why")
		else
			done_n=$((done_n + 1))
		fi
		[[ -n $id ]] || continue
		found=$((found + 1))
		if has_line "$hist" "$id"; then
			((i == 0)) || kept=$((kept + 1))
		else
			lost_hist+=("$id")
		fi
		if [[ $mode == mount ]] && ! has_line "$view" "$id"; then
			lost_view+=("$id")
		fi
	done
	if [[ $mode == plain ]]; then
		note "plain folder: $v completed $done_n of $((N + 1)) tasks; kept $kept of $N concurrent tasks in $(history_name "$v")$( ((${#lost_hist[@]} == 0)) || echo " (missing: ${lost_hist[*]})")$(retries)"
		for why in "${bad[@]}"; do note "plain folder: $v $why"; done
		return 0
	fi
	note "mount: $v completed $done_n of $((N + 1)) tasks; kept $kept of $N concurrent tasks in $(history_name "$v"); $((found - ${#lost_view[@]})) of the $found tasks found are in the view$(retries)"
	for why in "${bad[@]}"; do problem "mount: $v $why"; done
	for f in "$B"/stuck-*; do
		[[ -s $f ]] && grep -q -x -E '124|137' "$B"/task-*.rc || continue
		say "what was stuck shortly before a client's timeout ($(basename "$f")):"
		head -n 200 "$f" >&2
	done
	((${#lost_hist[@]} == 0)) || problem "mount: $v: $(history_name "$v") lacks ${lost_hist[*]}"
	((${#lost_view[@]} == 0)) || problem "mount: $v: the view (workspaces/*/tasks/) lacks ${lost_view[*]}; it holds: $(tr "\n" " " <<<"$view")"
	if [[ $v == 1.* ]]; then
		[[ -n $(compgen -G "$DATA/checkpoints/*/.git") ]] || problem "mount: $v made no shadow checkpoint repo"
		for g in "$DATA"/checkpoints/*/.git; do
			[[ -d $g ]] || continue
			git --git-dir="$g" fsck --full >"$B/fsck.out" 2>&1 ||
				problem "mount: $v: git fsck of ${g#"$DATA"/} fails:\n$(head -n 5 "$B/fsck.out")"
		done
	fi
}

# generation V MODE: auth, one task, then N at once, in a fresh HOME.
generation()
{
	local v=$1 mode=$2 rc=0 i id hist view missing=() missing_view=()
	step "$v on a $([[ $mode == mount ]] && echo "convfs mount" || echo "plain folder")"
	layout "$v" "$T/$v-$mode"
	if [[ $mode == mount ]]; then
		mount_convfs "$DATA" "$B/store.db"
	fi
	auth "$v" || rc=$?
	if ((rc != 0)); then
		if [[ $mode == mount ]]; then
			problem "mount: $v: \`cline auth\` failed (status $rc): $(err_text "$B/auth.out" "$B/auth.err")"
		else
			note "plain folder: $v: \`cline auth\` failed (status $rc): $(err_text "$B/auth.out" "$B/auth.err")"
		fi
	fi
	run_tasks "$v" 0 0
	run_tasks "$v" 1 "$N"
	check_run "$v" "$mode"
	sweep "$HOME_" "$DATA" "$mode: $v"
	[[ $mode == mount ]] || return 0
	unmount_convfs "$DATA"
	check_log "$B/store.db.log"
	# Everything is still there after a remount.
	mount_convfs "$DATA" "$B/store.db"
	hist=$(history_ids "$v")
	view=$(view_ids)
	for ((i = 0; i <= N; i++)); do
		id=${IDS["$v $mode $i"]}
		[[ -n $id ]] || continue
		has_line "$hist" "$id" || missing+=("$id")
		has_line "$view" "$id" || missing_view+=("$id")
	done
	((${#missing[@]} == 0)) || problem "mount: $v: after a remount, $(history_name "$v") lacks ${missing[*]}"
	((${#missing_view[@]} == 0)) || problem "mount: $v: after a remount, the view lacks ${missing_view[*]}"
	sweep "$HOME_" "$DATA" "mount: $v (history after the remount)"
	unmount_convfs "$DATA"
	check_log "$B/store.db.log"
}

for v in "${VERSIONS[@]}"; do
	[[ $PARTS != *" plain "* ]] || generation "$v" plain
	[[ $PARTS != *" mount "* ]] || generation "$v" mount
done

# ---- two mounts of one store, two tasks at once through each -------------------

# mounts_lost V STORE: what the store and the clients say of a task lost
# from the history, for the failure's report: each commit of the history (who
# made it; a merge's counts: "removed" is what a writer removed, having read
# it), and what the clients said of their writes of it. A copy of the store
# is kept in $T.
mounts_lost()
{
	local v=$1 store=$2
	cp "$store" "$T/lost-$v.db" 2>/dev/null && cp "$store-wal" "$T/lost-$v.db-wal" 2>/dev/null
	sqlite3 -readonly "$store" "SELECT id, pid, comm, kind, detail FROM revisions
		WHERE path = 'state/taskHistory.json' ORDER BY id" 2>&1 | tail -n 40
	grep -h -i -E 'task history|taskHistory' "$T/$v-mounts-"*/task-*.out "$T/$v-mounts-"*/task-*.err 2>/dev/null |
		head -n 20 || true
}

# all_in_both V PART NOUN PREFIX [STORE]: tasks 1 and 2 of each of two
# layouts (folders PREFIX"a" and PREFIX"b", a NOUN each: a mount, a machine)
# ended well, and each one's history lists the four; a note says how many it
# lists. With STORE (the one store of both), a loss is reported with what
# mounts_lost says of it.
all_in_both()
{
	local v=$1 part=$2 noun=$3 prefix=$4 store=${5:-} m i id why hist lost ids=() why_lost=
	for m in a b; do
		layout "$v" "$prefix$m"
		for i in 1 2; do
			id=$(task_id "$v" "$i")
			why=$(task_problems "$v" "$i" "$id")
			[[ -z $why ]] || problem "$part: $v: task $i through $noun $m${id:+ ($id)}: $why"
			[[ -z $id ]] || ids+=("$id")
		done
	done
	((${#ids[@]} == 4)) || problem "$part: $v: ${#ids[@]} of the 4 tasks found in the data folders"
	for m in a b; do
		layout "$v" "$prefix$m"
		hist=$(history_ids "$v")
		lost=()
		for id in "${ids[@]}"; do has_line "$hist" "$id" || lost+=("$id"); done
		note "$part: $v: $((${#ids[@]} - ${#lost[@]})) of the ${#ids[@]} tasks of both in $noun $m's $(history_name "$v")$(retries)"
		((${#lost[@]} == 0)) || problem "$part: $v: $(history_name "$v") through $noun $m lacks ${lost[*]}"
		((${#lost[@]} == 0)) || [[ -z $store || -n $why_lost ]] || why_lost=$(mounts_lost "$v" "$store")
	done
	[[ -z $why_lost ]] || say "$part: $v: what may say why a task is lost:"$'\n'"$why_lost"
}

# mounts_test V: two layouts (a, b) whose data folders are two mounts of one
# store; two tasks at once through each mount, the four at once.
mounts_test()
{
	local v=$1 store=$T/$v-mounts.db m pids=()
	step "$v: two tasks at once through each of two mounts of one store"
	for m in a b; do
		layout "$v" "$T/$v-mounts-$m"
		mount_convfs_log "$DATA" "$B/convfs.log" -o "store=$store"
		auth "$v" || problem "mounts: $v: \`cline auth\` through mount $m failed: $(err_text "$B/auth.out" "$B/auth.err")"
	done
	for m in a b; do
		(layout "$v" "$T/$v-mounts-$m" && run_tasks "$v" 1 2) &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	all_in_both "$v" mounts mount "$T/$v-mounts-" "$store"
	for m in a b; do
		layout "$v" "$T/$v-mounts-$m"
		sweep "$HOME_" "$DATA" "mounts: $v, mount $m"
		unmount_convfs "$DATA"
		check_log "$B/convfs.log"
	done
}

if [[ $PARTS == *" mounts "* ]]; then
	for v in "${VERSIONS[@]}"; do
		[[ $v == 1.* ]] || mounts_test "$v"
	done
fi

V3=
for v in "${VERSIONS[@]}"; do [[ $v == 3.* ]] && V3=$v; done

# ---- 3.x: kill -9 of the daemon in the middle of a session save -------------

# The daemon dies after the client's write of the new <id>.messages.json and
# before its ftruncate (strace delays each ftruncate by a second, and the
# kill lands during the third one on a messages file: the save after the
# tool's result, with two saves before it).
kill_test()
{
	local v=$1 sid msgs n i status=0 got="" k
	step "$v: kill -9 of the daemon in the middle of a session save"
	layout "$v" "$T/kill"
	mount_convfs "$DATA" "$B/store.db"
	auth "$v" || problem "kill: \`cline auth\` failed: $(err_text "$B/auth.out" "$B/auth.err")"
	mkdir -p "$B/ws-1"
	(
		cd "$B" || exit 1
		exec strace -f -qq -e signal=none -y -xx -s 16777216 -o "$B/strace.txt" \
			-e trace=write,ftruncate -e inject=ftruncate:delay_enter=1000000 \
			env -u CLINE_DIR -u CLINE_DATA_DIR HOME="$HOME_" NO_COLOR=1 NO_AUTO_UPDATE=1 \
			CLINE_NO_AUTO_UPDATE=1 CLINE_SESSION_BACKEND_MODE=local \
			"$CACHE/$v/node_modules/.bin/cline" --json \
			"Create a file hello.txt containing a greeting ($(tag_of "$v" 1))" -c "$B/ws-1"
	) </dev/null >"$B/task-1.out" 2>"$B/task-1.err" &
	local spid=$!
	# -xx writes paths in hex too.
	local suffix
	suffix=$(printf %s .messages.json | od -An -tx1 | tr -d ' \n' | sed 's/../\\\\x&/g')
	for ((i = 0; i < 1200; i++)); do
		n=$(grep -a -c -E "ftruncate\\([0-9]+<[^>]*$suffix>" "$B/strace.txt" 2>/dev/null || true)
		((n >= 3)) && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	if ((n < 3)); then
		problem "kill: the client made $n saves of a messages file (ftruncate) before it ended; no kill"
		wait "$spid" || true
		sweep "$HOME_" "$DATA" "kill"
		unmount_convfs "$DATA"
		return 0
	fi
	msgs=$(grep -a -o -E "ftruncate\\([0-9]+<[^>]*$suffix>" "$B/strace.txt" | tail -n 1 | sed -E 's/^ftruncate\([0-9]+<//; s/>$//')
	msgs=$(printf '%b' "$msgs")
	kill_daemon "$DATA"
	say "killed the daemon during the save of ${msgs#"$DATA"/}"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$spid" 2>/dev/null; then
		note "kill: the client still ran 10 s after the daemon died; stopped"
	fi
	sweep "$HOME_" "$DATA" "kill: after the daemon's death"
	{ wait "$spid"; } 2>/dev/null || status=$?
	note "kill: the client exited with status $status after the daemon died: $(err_text "$B/task-1.err" "$B/task-1.out")"
	remove_dead_mount "$DATA"
	mount_convfs "$DATA" "$B/store.db"
	n=$(node "$RCDIR/strace_versions.js" "$B/strace.txt" "$msgs" "$B/versions")
	sid=$(basename "$msgs" .messages.json)
	if [[ ! -f $msgs ]]; then
		problem "kill: ${msgs#"$DATA"/} is gone after the remount"
	elif ! jq empty "$msgs" 2>/dev/null; then
		problem "kill: ${msgs#"$DATA"/} is torn after the remount (not valid JSON; $(stat -c %s "$msgs") bytes, ends with: $(tail -c 60 "$msgs" | tr '\n' ' '))"
	fi
	if [[ -f $msgs ]]; then
		for ((k = n; k >= 1; k--)); do
			cmp -s "$msgs" "$B/versions/v-$(printf %03d "$k").json" && { got=$k; break; }
		done
		if [[ -z $got ]]; then
			problem "kill: ${msgs#"$DATA"/} ($(stat -c %s "$msgs") bytes) is none of the $n versions the client wrote (sizes: $(stat -c %s "$B"/versions/v-*.json | tr '\n' ' '))"
		elif ((got < n - 1)); then
			problem "kill: ${msgs#"$DATA"/} is version $got of $n: a save whose close had returned (version $((n - 1))) is lost"
		else
			note "kill: after the remount ${msgs#"$DATA"/} is version $got of the $n the client wrote ($([[ $got == "$n" ]] && echo "the one being saved at the kill" || echo "the one before the kill")), valid JSON"
		fi
	fi
	jq empty "$DATA/sessions/$sid/$sid.json" 2>/dev/null ||
		note "kill: the manifest sessions/$sid/$sid.json is missing or not valid JSON after the remount"
	history_ids "$v" | grep -q -x -F "$sid" && note "kill: \`cline history\` lists the session after the remount" ||
		note "kill: \`cline history\` does not list the session after the remount"
	sweep "$HOME_" "$DATA" "kill: after the remount"
	unmount_convfs "$DATA"
	check_log "$B/store.db.log"
}

# ---- unmount while a client runs ----------------------------------------------

# A 3.x task in hub mode leaves its hub running, holding files open in the
# data folder; a writer of ours holds one too and goes on appending.
unmount_test()
{
	local v=$1 sid pids p before err rc=0 dpid lines i missing
	step "$v: unmount while a client runs"
	layout "$v" "$T/unmount"
	mount_convfs "$DATA" "$B/store.db"
	dpid=${DAEMON_PID[$DATA]}
	auth "$v" || problem "unmount: \`cline auth\` failed: $(err_text "$B/auth.out" "$B/auth.err")"
	BACKEND='' run_tasks "$v" 1 1
	sid=$(task_id "$v" 1)
	why=$(task_problems "$v" 1 "$sid")
	[[ -z $why ]] || problem "unmount: the hub-mode task: $why"
	mapfile -t pids < <(pids_on "$DATA")
	if ((${#pids[@]} == 0)); then
		note "unmount: after a hub-mode task no process holds a file on the mount"
	fi
	for p in "${pids[@]}"; do
		note "unmount: after a hub-mode task, still running: $(describe "$p" "$DATA")"
	done
	mkdir "$DATA/notes"
	echo "written before the unmount" >"$DATA/notes/before.txt"
	node "$RCDIR/append_writer.js" "$DATA/notes/writer.log" "$B/writer.record" "$B/writer.stop" >"$B/writer.out" 2>&1 &
	local wpid=$!
	for ((i = 0; i < 100; i++)); do
		[[ -f $B/writer.record && $(wc -l <"$B/writer.record") -ge 5 ]] && break
		sleep 0.1
	done
	before=$(wc -l <"$B/writer.record")
	if fusermount3 -u "$DATA" 2>"$B/umount.err"; then
		problem "unmount: fusermount3 -u succeeded while files were open on the mount"
		note "unmount: fusermount3 -u succeeded at once, with files open"
	else
		err=$(cat "$B/umount.err")
		note "unmount: fusermount3 -u with files open: $err"
		[[ $err == *"Device or resource busy"* ]] || problem "unmount: fusermount3 -u failed, but not with EBUSY: $err"
		fusermount3 -uz "$DATA" 2>"$B/umount.err" || problem "unmount: fusermount3 -uz failed: $(cat "$B/umount.err")"
		mountpoint -q "$DATA" && problem "unmount: '$DATA' is still a mount point after fusermount3 -uz"
		kill -0 "$dpid" 2>/dev/null && note "unmount: after fusermount3 -uz the daemon still runs (files are open)" ||
			note "unmount: after fusermount3 -uz the daemon exited at once"
		# The writer goes on through its descriptor; a new file made by
		# path now lands in the folder underneath.
		sleep 1
		echo "written by path after the lazy unmount" >"$DATA/notes-after.txt" 2>/dev/null &&
			touch "$B/made-after" &&
			note "unmount: after the lazy unmount, a file created by path (notes-after.txt) went to the folder underneath, not to the mount"
	fi
	touch "$B/writer.stop"
	wait "$wpid" || problem "unmount: the writer failed: $(cat "$B/writer.out")"
	lines=$(wc -l <"$B/writer.record")
	note "unmount: the writer appended $lines lines through its open descriptor, $((lines - before)) of them after fusermount3 -u was tried"
	# Everything else of the client's goes too.
	sweep "$HOME_" "$DATA" "unmount: after the lazy unmount"
	if wait_gone "$dpid" 15; then
		wait "$dpid" && rc=0 || rc=$?
		unset 'DAEMON_PID[$DATA]'
		((rc == 0)) || problem "unmount: the daemon exited with status $rc after the lazy unmount"
		note "unmount: the daemon exited (status $rc) once the last file on the detached mount was closed"
	else
		problem "unmount: the daemon still runs 15 s after every client was stopped"
		kill_daemon "$DATA"
	fi
	mountpoint -q "$DATA" && fusermount3 -uz "$DATA"
	mount_convfs "$DATA" "$B/store.db"
	[[ $(cat "$DATA/notes/before.txt" 2>/dev/null) == "written before the unmount" ]] ||
		problem "unmount: notes/before.txt is lost after the remount"
	missing=$(awk '{ print "line " $1 }' "$B/writer.record" | grep -v -x -F -f "$DATA/notes/writer.log" | head -n 5 || true)
	[[ -z $missing ]] || problem "unmount: writes that had returned are lost after the remount: $(tr "\n" " " <<<"$missing")"
	[[ -n $missing ]] || note "unmount: after the remount all $lines appended lines are there, those written after the lazy unmount included"
	if [[ -n $sid ]]; then
		for f in "$DATA/sessions/$sid/$sid.json" "$DATA/sessions/$sid/$sid.messages.json"; do
			jq empty "$f" 2>/dev/null || problem "unmount: ${f#"$DATA"/} is missing or not valid JSON after the remount"
		done
		history_ids "$v" | grep -q -x -F "$sid" || problem "unmount: \`cline history\` lacks $sid after the remount"
		view_ids | grep -q -x -F "$sid" || problem "unmount: the view lacks $sid after the remount"
	fi
	# What went to the folder underneath after the lazy unmount is taken in by the remount.
	if [[ -e $B/made-after ]]; then
		[[ $(cat "$DATA/notes-after.txt" 2>/dev/null) == "written by path after the lazy unmount" ]] ||
			problem "unmount: notes-after.txt, made in the folder underneath after the lazy unmount, is not on the mount after the remount"
	fi
	sweep "$HOME_" "$DATA" "unmount: after the remount"
	unmount_convfs "$DATA"
	# A hub left running after the lazy unmount writes its databases in the
	# folder underneath: the remount keeps the store's and puts those beside.
	check_log "$B/store.db.log" "^convfs: warning: 'db/[^']*' is new underneath and differs from the store's; the store's version is kept"
}

# ---- 2.x on two machines, one history --------------------------------------------

sync_test()
{
	local v=$1 m i conn datas=() pids=()
	step "$v on two machines syncing through PostgreSQL, two tasks at once on each"
	pg_setup
	q -d postgres -c 'CREATE DATABASE rc'
	conn=$(pg_conn rc)
	for m in a b; do
		layout "$v" "$T/sync-$m"
		mount_convfs "$DATA" "$B/store.db" -o "sync=$conn"
		datas+=("$DATA")
	done
	# The two machines' auth at once: the CLI's start-up is most of it.
	for m in a b; do
		(
			trap - ERR
			set +e
			layout "$v" "$T/sync-$m"
			auth "$v"
		) &
		pids+=($!)
	done
	for i in 0 1; do
		m=$([[ $i == 0 ]] && echo a || echo b)
		layout "$v" "$T/sync-$m"
		wait "${pids[$i]}" || problem "sync: $m: \`cline auth\` failed: $(err_text "$B/auth.out" "$B/auth.err")"
	done
	pids=()
	for m in a b; do
		(
			trap - ERR
			set +e
			layout "$v" "$T/sync-$m"
			run_tasks "$v" 1 2
		) &
		pids+=($!)
	done
	# Only these: a bare wait would wait for the model server too.
	wait "${pids[@]}" || true
	pg_settled rc "${datas[@]}"
	all_in_both "$v" sync machine "$T/sync-"
	node "$TESTS_DIR/sync/check.js" -- "${datas[@]}" >"$T/sync-check.out" 2>&1 ||
		problem "sync: the two machines differ:\n$(cat "$T/sync-check.out")"
	for m in a b; do
		layout "$v" "$T/sync-$m"
		sweep "$HOME_" "$DATA" "sync: $m"
		unmount_convfs "$DATA"
		check_log "$B/store.db.log"
	done
	pg_teardown
}

if [[ $PARTS == *" sync "* ]]; then
	for v in "${VERSIONS[@]}"; do
		[[ $v != 2.* ]] || sync_test "$v"
	done
fi

if [[ -n $V3 && $PARTS == *" kill "* ]]; then
	if ((HAVE_STRACE)); then
		kill_test "$V3"
	else
		problem "strace is missing and could not be installed: no kill test"
	fi
fi
[[ -z $V3 || $PARTS != *" unmount "* ]] || unmount_test "$V3"
step ""

# What the clients asked of the model server.
say "model server: $(jq -r '.url' "$T/model.log" | sort | uniq -c | tr '\n' ' ')"
say "time: all of it took $SECONDS s"
say "report:"
printf '  %s\n' "${REPORT[@]}" >&2
pass
