#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# containers.sh: a devcontainer rebuilt loses no task, and two containers at
# once on one store see each other's, with the real Cline CLIs (2.18.0 and
# 3.0.65, driven as real_clients.sh drives them: real_clients/drive.sh).
#
# A "container" here is what Docker makes of one, less the image: new mount
# and PID namespaces (`unshare --mount --propagation private --pid --fork
# --mount-proc`) whose home folder is a fresh tmpfs, made and seen only in
# there; commands run in it through nsenter, as `docker exec` runs them.
# Its end is `docker rm -f`'s: SIGKILL to its process 1, which takes every
# process in it along (convfs's daemons too), and with the last of them the
# mount namespace, the tmpfs and the mounts. A rebuilt container is a new one
# at the same paths: a new tmpfs, so its data folder is a new, empty folder
# underneath (with the old one's device and inode number, as a fresh tmpfs
# gives them: only its birth time tells it apart). The store is on the host's
# side (a folder of the test's temp dir, as a named volume or a host folder
# would be); so are the tasks' workspaces (the project folder a devcontainer
# binds in). In each container convfs is mounted over each CLI's data folder:
# ~/.cline/data for 3.0.65; for 2.18.0 the VS Code extension's folder in a
# remote window, ~/.vscode-server/data/User/globalStorage/saoudrizwan.claude-dev
# (2.x's core is the extension's, its files the same), its --config's data/ a
# symlink to it.
#
#   1. container a (a1): per CLI, `cline auth` and a task on the plain data
#      folder before convfs is mounted (the client won the race with the
#      mount: a devcontainer whose editor starts first); the task ends well
#      (exit 0, hello.txt, the completion in the client's own record) and a
#      copy of its conversation's folder is taken. Then convfs is mounted:
#      the take-in puts the task in the history (state/taskHistory.json,
#      `cline history --json`) and view (workspaces/*/tasks/), and it reads
#      back as its copy. Then a is destroyed (kill -9), daemons and all.
#   2. a container b, convfs mounted first (b never runs `cline auth`: the
#      settings are in the store), and a rebuilt (a2), its client first
#      again (auth and a task underneath), then convfs: a2's history and
#      view have a1's task and its own, byte for byte as their copies
#      (a rebuilt folder taken for the old one would lose a1's task from
#      state/taskHistory.json); `convfs status` lists two daemons. A task
#      through b's mount: within 5 s it is in a2's history and reads back
#      there (the daemons tell each other's kernels). a2 is destroyed.
#   3. a rebuilt again (a3) beside b: the three tasks in its history and
#      view, byte for byte; `convfs status` lists the two daemons serving,
#      not the one killed with a2. Then both unmounted, both containers end.
# Each daemon's log holds nothing unexpected (a2's: the settings and logs its
# client wrote before the mount, kept beside the store's as *.offline-*).
#
# About a minute on an idle machine of 2 cores, most of it the CLIs' start-up
# (the 2.18.0 CLI takes 5 to 15 s to start, and runs five times in a row).
#
# Environment (besides lib.sh's and drive.sh's):
#   CONTAINER_CLIENTS  the CLI versions (default "2.18.0 3.0.65")
#   CONTAINER_STORE    "host" (default), or "home" to put each store in the
#                      container's home instead, as without this recipe:
#                      then the test must fail (a rebuild loses everything)
# It needs root (mount and PID namespaces, and detaching mounts in them).
# Outside CI it skips (exit 77) without root, node >= 20, or, when a CLI is
# not yet in the cache, the npm registry; under CI=true that is a failure.

# lib.sh's watchdog: meson gives 540 s (see meson.build); run alone, as long.
: "${TEST_TIMEOUT:=540}"
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/real_clients/drive.sh"

# (The daemons start in a container's own folder: a relative path would not do.)
CONVFS=$(realpath -- "$CONVFS")
read -r -a VERSIONS <<<"${CONTAINER_CLIENTS:-2.18.0 3.0.65}"
STORE_IN=${CONTAINER_STORE:-host}

# ---- preconditions -------------------------------------------------------------

((EUID == 0)) || skip "not root: containers need mount and PID namespaces and umount in them"
for t in unshare nsenter umount; do
	command -v "$t" >/dev/null || fail "$t (util-linux) is missing"
done
clients_preconditions
clients_ready "${VERSIONS[@]}"

# ---- containers -------------------------------------------------------------------

declare -A INIT=()    # container -> pid of its process 1 (here)
declare -A UNSHARE=() # container -> pid of the unshare that made it
declare -A MNTNS=()   # container -> its mount namespace (mnt:[N])
declare -A DAEMON=()  # "container V" -> pid of the nsenter whose child is the daemon

# container_init HOME READY: process 1 of a container, run by unshare.
container_init()
{
	local home=$1 ready=$2
	# Other tests' FUSE mounts, copied into this namespace, are let go
	# before this container makes its own.
	detach_fuse_copies
	mount -t tmpfs -o mode=0755 tmpfs "$home"
	echo up >"$ready"
	while :; do
		sleep 1000 &
		wait $!
	done
}

# container_start NAME: a new container NAME, with a fresh tmpfs over
# $T/NAME/home (its HOME).
container_start()
{
	local name=$1 ready=$T/$1.ready up i
	mkdir -p "$T/$name/home"
	rm -f "$ready"
	: >"$T/$name.err"
	unshare --mount --propagation private --pid --fork --mount-proc \
		bash -c "$(declare -f detach_fuse_copies container_init); container_init \"\$@\"" - "$T/$name/home" "$ready" \
		2>>"$T/$name.err" &
	up=$!
	for ((i = 0; i < 100; i++)); do
		[[ -s $ready ]] && break
		kill -0 "$up" 2>/dev/null || fail "container $name did not start:\n$(cat "$T/$name.err")"
		sleep 0.1
	done
	[[ -s $ready ]] || fail "container $name did not start in 10 s:\n$(cat "$T/$name.err")"
	UNSHARE[$name]=$up
	INIT[$name]=$(tr -d ' \n' <"/proc/$up/task/$up/children")
	MNTNS[$name]=$(readlink "/proc/${INIT[$name]}/ns/mnt")
	# (A mount that went between the listing and its umount is no harm.)
	! grep -q . "$T/$name.err" || say "container $name: $(cat "$T/$name.err")"
}

# cexec NAME CMD...: CMD in container NAME, in this shell's current folder
# (a folder of $T, the same path in there), as `docker exec` runs it.
cexec()
{
	local name=$1
	shift
	nsenter --target "${INIT[$name]}" --mount --pid -- bash -c 'cd "$1" && shift && exec "$@"' - "$PWD" "$@"
}

# cline V HOME ARGS...: the CLI V runs in the current container, $CUR.
cline()
{
	cline_argv "$1" "$2"
	shift 2
	cexec "$CUR" "${CLINE_ARGV[@]}" "$@"
}

# fuse_mounts NAME: the FUSE mounts in container NAME, "mount-point device"
# a line.
fuse_mounts()
{
	awk '{ for (i = 7; $i != "-"; i++); if ($(i + 1) ~ /^fuse(blk)?(\.|$)/) print $5, $3 }' \
		"/proc/${INIT[$1]}/mountinfo" 2>/dev/null || true
}

# is_mounted NAME DIR: DIR is a FUSE mount point in container NAME.
is_mounted()
{
	fuse_mounts "$1" | awk -v d="$2" '$1 == d { found = 1 } END { exit !found }'
}

# abort_container NAME: aborts the FUSE connections of container NAME's
# mounts (a daemon stuck in one could not be killed).
abort_container()
{
	local mp dev n
	while read -r mp dev; do
		n=$((${dev%%:*} * 1048576 + ${dev#*:}))
		[[ -w /sys/fs/fuse/connections/$n/abort ]] && echo 1 >"/sys/fs/fuse/connections/$n/abort"
	done < <(fuse_mounts "$1")
}

# container_destroy NAME: `docker rm -f`: SIGKILL to its process 1. The
# namespace must be gone (no process left in it) within 10 s.
container_destroy()
{
	local name=$1 k p i left
	kill -KILL "${INIT[$name]}"
	{ wait "${UNSHARE[$name]}"; } 2>/dev/null || true
	for k in "${!DAEMON[@]}"; do
		[[ $k == "$name "* ]] || continue
		{ wait "${DAEMON[$k]}"; } 2>/dev/null || true
		unset 'DAEMON[$k]'
	done
	for ((i = 0; i < 100; i++)); do
		left=
		for p in /proc/[0-9]*/ns/mnt; do
			[[ $(readlink "$p" 2>/dev/null) == "${MNTNS[$name]}" ]] && left+=" ${p//[^0-9]/}"
		done
		[[ -z $left ]] && break
		sleep 0.1
	done
	[[ -z $left ]] || problem "container $name: processes still in its mount namespace 10 s after its end:$left"
	unset 'INIT[$name]' 'UNSHARE[$name]' 'MNTNS[$name]'
}

# Whatever happens, no container is left: their connections aborted, their
# processes killed. (lib.sh's cleanup takes the test's status from $?.)
end_containers()
{
	local name
	for name in "${!INIT[@]}"; do
		abort_container "$name"
		kill -KILL "${INIT[$name]}" 2>/dev/null
	done
	for name in "${!UNSHARE[@]}"; do
		wait "${UNSHARE[$name]}" 2>/dev/null
	done
	kill "$MODEL_PID" 2>/dev/null
	return 0
}
at_exit end_containers

# ---- the clients' folders in a container ---------------------------------------

# In container NAME, life LIFE (a1, a2, ...), for CLI V: sets what drive.sh
# works with: B (this life's folder, on the host's side: workspaces and the
# clients' output), HOME_, CFG, DATA (as this shell reads it: through
# /proc/PID/root, in the container's mounts), and IN_DATA (the data folder's
# path in there), STORE, CUR. 2.x's data folder is the VS Code extension's
# in a remote window (the same files: its core is the extension's), reached
# from its --config through a symlink, as 3.x's is its own ~/.cline/data.
use()
{
	local name=$1 life=$2 v=$3
	CUR=$name
	B=$T/runs/$life-$v
	HOME_=$T/$name/home
	CFG=$HOME_/.cline2
	case $v in
	2.*) IN_DATA=$HOME_/.vscode-server/data/User/globalStorage/saoudrizwan.claude-dev ;;
	*) IN_DATA=$HOME_/.cline/data ;;
	esac
	DATA=/proc/${INIT[$name]}/root$IN_DATA
	if [[ $STORE_IN == home ]]; then
		STORE=$HOME_/.local/share/convfs/$v.db
	else
		STORE=$T/stores/$v.db
	fi
}

# conv_dir V ID: the folder of a conversation in the data folder.
conv_dir()
{
	case $1 in
	3.*) echo "sessions/$2" ;;
	*) echo "tasks/$2" ;;
	esac
}

# prepare NAME LIFE V: use, and the folders made.
prepare()
{
	use "$@"
	mkdir -p "$B" "$T/logs" "$T/stores"
	cexec "$1" mkdir -p "$IN_DATA" "$(dirname "$STORE")"
	[[ $3 != 2.* ]] || cexec "$1" bash -c 'mkdir -p "$1" && ln -sfn "$2" "$1/data"' - "$CFG" "$IN_DATA"
}

# mount_in NAME LIFE V: convfs over V's data folder in container NAME.
mount_in()
{
	local name=$1 life=$2 v=$3 log pid i
	prepare "$name" "$life" "$v"
	log=$T/logs/$life-$v.log
	LOGS[$log]=1
	nsenter --target "${INIT[$name]}" --mount --pid -- \
		"${VALGRIND[@]}" "$CONVFS" -f -o "store=$STORE" "$IN_DATA" 2>>"$log" &
	pid=$!
	DAEMON["$name $v"]=$pid
	for ((i = 0; i < 100 * SLOW; i++)); do
		is_mounted "$name" "$IN_DATA" && break
		kill -0 "$pid" 2>/dev/null || fail "$life: convfs exited before mounting '$IN_DATA':\n$(cat "$log")"
		sleep 0.1
	done
	is_mounted "$name" "$IN_DATA" || fail "$life: '$IN_DATA' is not mounted after $((10 * SLOW)) s"
	# (The daemon, nsenter's child, for the watchdog.)
	tr ' ' '\n' <"/proc/$pid/task/$pid/children" | grep . >>"$T/daemons" || true
}

# unmount_in NAME LIFE V: fusermount3 -u in there; the daemon exits with 0.
unmount_in()
{
	local name=$1 v=$3 pid=${DAEMON["$1 $3"]} i rc=0
	use "$name" "$2" "$v"
	for ((i = 0; ; i++)); do
		cexec "$name" fusermount3 -u "$IN_DATA" 2>"$T/fusermount.err" && break
		((i < 20 * SLOW)) || fail "$name: fusermount3 -u '$IN_DATA' failed: $(cat "$T/fusermount.err")"
		sleep 0.25
	done
	wait_gone "$pid" $((10 * SLOW)) || fail "$name: convfs still runs $((10 * SLOW)) s after unmounting '$IN_DATA'"
	wait "$pid" || rc=$?
	unset 'DAEMON["$name $v"]'
	((rc == 0)) || problem "$name: convfs serving '$IN_DATA' exited with status $rc"
}

# ---- what became of the tasks ---------------------------------------------------

declare -A ALL=()  # V -> the ids of every task that ended well, a line each
declare -A FROM=() # "V ID" -> the life that ran it

# tasks_done LIFE V FROM TO: tasks FROM..TO of this life ended well; their
# ids join ALL, and a copy of each conversation's folder is taken in the
# container, to $T/copies/V/ID.
tasks_done()
{
	local life=$1 v=$2 i id why
	mkdir -p "$T/copies/$v"
	for ((i = $3; i <= $4; i++)); do
		id=$(task_id "$v" "$i")
		why=$(task_problems "$v" "$i" "$id")
		[[ -z $why ]] || problem "$life: $v task $i${id:+ ($id)}: $why$(retries)"
		[[ -n $id ]] || continue
		ALL[$v]+="$id"$'\n'
		FROM["$v $id"]=$life
		cexec "$CUR" cp -a "$IN_DATA/$(conv_dir "$v" "$id")" "$T/copies/$v/$id" ||
			problem "$life: $v: cannot copy the conversation $id in the container"
	done
}

# same_conversation WHAT V ID: the conversation's folder reads back in the
# current container as its copy, byte for byte (names and contents).
same_conversation()
{
	local out
	out=$(diff -r "$T/copies/$2/$3" "$DATA/$(conv_dir "$2" "$3")" 2>&1) && return 0
	problem "$1: $2: the conversation $3 (of ${FROM["$2 $3"]}) does not read back as it was:\n$(head -n 10 <<<"$out")"
}

# all_there LIFE V: every task so far is in this container's history and
# view, and reads back as its copy.
all_there()
{
	local life=$1 v=$2 hist view id missing=() missing_view=()
	hist=$(history_ids "$v")
	view=$(view_ids)
	while read -r id; do
		[[ -n $id ]] || continue
		has_line "$hist" "$id" || missing+=("$id (of ${FROM["$v $id"]})")
		has_line "$view" "$id" || missing_view+=("$id (of ${FROM["$v $id"]})")
		same_conversation "$life" "$v" "$id"
	done <<<"${ALL[$v]}"
	((${#missing[@]} == 0)) || problem "$life: $v: $(history_name "$v") lacks ${missing[*]}"
	((${#missing_view[@]} == 0)) || problem "$life: $v: the view (workspaces/*/tasks/) lacks ${missing_view[*]}"
}

# seen_within SECS LIFE V ID: within SECS, the task ID is in this
# container's history (it was made in another container).
seen_within()
{
	local secs=$1 life=$2 v=$3 id=$4 t0=$SECONDS
	while ! history_ids "$v" | grep -q -x -F -- "$id"; do
		if ((SECONDS - t0 >= secs)); then
			problem "$life: $v: $(history_name "$v") lacks ${FROM["$v $id"]}'s task $id $secs s after it ended"
			return 0
		fi
		sleep 0.2
	done
	same_conversation "$life" "$v" "$id"
}

# daemons_serving LIFE V N: convfs status in the container lists N daemons.
daemons_serving()
{
	local n
	n=$( (cd "$B" && cexec "$CUR" "$CONVFS" status --json "$IN_DATA") | jq '.daemons | length' 2>/dev/null) || n=
	[[ $n == "$3" ]] || problem "$1: $2: convfs status lists ${n:-no} daemons serving the store, expected $3"
}

# ---- 1. a container, its tasks, its end -----------------------------------------

# at_once FN NAME/LIFE...: FN V in each container NAME (life LIFE) for each
# CLI V, all at once. FN runs clients, which leave what became of them in
# files; the checks come after, here.
at_once()
{
	local fn=$1 c v pids=()
	shift
	for c in "$@"; do
		for v in "${VERSIONS[@]}"; do
			prepare "${c%/*}" "${c#*/}" "$v"
			("$fn" "$v") &
			pids+=($!)
		done
	done
	wait "${pids[@]}" || true
}

# early_clients V: the client wins the race with convfs (a devcontainer
# whose editor starts before its postStartCommand has mounted): `cline auth`
# and task 1 on the plain data folder, before anything is mounted over it.
early_clients()
{
	local rc=0
	auth "$1" || rc=$?
	echo "$rc" >"$B/auth.rc"
	run_tasks "$1" 1 1
}

# early_done NAME LIFE: what became of early_clients (a copy of the task's
# conversation taken from the plain folder).
early_done()
{
	local v
	for v in "${VERSIONS[@]}"; do
		use "$1" "$2" "$v"
		[[ $(cat "$B/auth.rc") == 0 ]] ||
			problem "$2: $v: \`cline auth\` failed: $(err_text "$B/auth.out" "$B/auth.err")"
		tasks_done "$2" "$v" 1 1
	done
}

task_1() { run_tasks "$1" 1 1; }

step "1. container a: cline auth and a task before convfs is mounted"
container_start a
at_once early_clients a/a1
early_done a a1
for v in "${VERSIONS[@]}"; do
	mount_in a a1 "$v"
	all_there a1 "$v"
done
step "1. container a destroyed (kill -9)"
container_destroy a

# ---- 2. a rebuilt, and b beside it ---------------------------------------------------

step "2. b (convfs first), and a rebuilt (a2: cline auth and a task before convfs again)"
container_start b
container_start a
for v in "${VERSIONS[@]}"; do
	mount_in b b1 "$v"
done
at_once early_clients a/a2
early_done a a2
for v in "${VERSIONS[@]}"; do
	mount_in a a2 "$v"
	all_there a2 "$v"
	daemons_serving a2 "$v" 2
done

step "2. a task through b's mount (b never ran cline auth), seen in a2"
at_once task_1 b/b1
for v in "${VERSIONS[@]}"; do
	use b b1 "$v"
	tasks_done b1 "$v" 1 1
	id=$(task_id "$v" 1)
	[[ -z $id ]] || { use a a2 "$v" && seen_within 5 a2 "$v" "$id"; }
done
step "2. a2 destroyed (kill -9)"
container_destroy a

# ---- 3. a rebuilt again, beside b ----------------------------------------------------------

step "3. a rebuilt again (a3) beside b: every task in it"
container_start a
for v in "${VERSIONS[@]}"; do
	mount_in a a3 "$v"
	all_there a3 "$v"
	daemons_serving a3 "$v" 2
done
for v in "${VERSIONS[@]}"; do
	unmount_in a a3 "$v"
	unmount_in b b1 "$v"
done
container_destroy a
container_destroy b
step ""

# What a2's clients wrote before convfs was mounted (its settings, its logs)
# differs from the store's: those are kept beside the store's, with a warning.
for log in "${!LOGS[@]}"; do
	case $log in
	*/a2-*) check_log "$log" "^convfs: warning: '[^']*' is new underneath and differs from the store's; the store's version is kept, the one underneath is beside it as '[^']*\.offline-[0-9T]*'$" ;;
	*) check_log "$log" ;;
	esac
done
for v in "${VERSIONS[@]}"; do
	say "$v: $(grep -c . <<<"${ALL[$v]}") tasks, every one checked in each container after it"
done
say "time: all of it took $SECONDS s"
pass
