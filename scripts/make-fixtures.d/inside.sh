#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# inside.sh VERSION WORK CLI MODEL_SERVER GIT_DATE: one Cline CLI's run for
# scripts/make-fixtures, as process 1 of new mount, network, PID and UTS
# namespaces (`unshare -m -n -p -f --mount-proc -u`, and -r when not root).
# Not meant to be run by hand.
#
# In there, and only there:
#   - /home is a tmpfs holding an empty /home/dev (every other folder of the
#     real /home is bound back in, so that a client cache or a checkout under
#     someone's home stays reachable); nothing is written to the real /home;
#   - the network is loopback alone (up), so the clients reach the model
#     server and nothing else; the host name is "devbox" and
#     /etc/machine-id a fixed one, so that nothing of this machine's gets in;
#   - the clients run with HOME=/home/dev, TZ=UTC, umask 022, and a PATH of
#     one folder holding node, git and the few tools they call (which,
#     cat, head, hostname): what a client reports of the tools it found is
#     the same on every machine;
#   - the stand-in model server (tests/integration/real_clients/model_server.js)
#     runs on a free port of 127.0.0.1, written to WORK/port.
# Then the CLI CLI (the path of its node_modules/.bin/cline) is driven as
# tests/integration/real_clients.sh drives it: `cline auth` in /home/dev,
# then one task each in /home/dev/projects/<name> (2.x and 3.x: webapp, then
# api-server; 1.x: greeter), one after the other. A task must end well (exit
# 0 and hello.txt in its workspace). Client processes still running after
# the last task are named and stopped; the data folder is then copied to
# WORK/raw, the run's first and last clock readings (ms) to WORK/times,
# os.release() to WORK/release, and the clients' output stays in WORK/*.out.
# Everything left in the namespaces ends with process 1.
#
# Environment: MAKE_FIXTURES_TIMEOUT (seconds one client run may take,
# default 240).
set -euo pipefail

V=$1 W=$2 CLI=$3 MODEL_SERVER=$4 GIT_DATE=$5
SECS=${MAKE_FIXTURES_TIMEOUT:-240}
PROMPT='Create a file hello.txt containing a greeting'
GREETING='Hello from fake LLM'

say() { printf 'make-fixtures: %s: %s\n' "$V" "$*" >&2; }
die()
{
	say "$*"
	exit 1
}

# ---- the namespaces' world --------------------------------------------------

mount --make-rprivate /
# A new mount namespace starts with a copy of every mount there is, FUSE
# mounts of other programs included (a convfs mount of a test running
# beside), and holds them: such a daemon would not end at its `fusermount3
# -u` while this namespace lives. Each is detached at once, deepest first
# (-c: no stat of a mount point whose daemon may not answer).
awk '{ for (i = 7; $i != "-"; i++); if ($(i + 1) ~ /^fuse(blk)?(\.|$)/) print $5 }' /proc/self/mountinfo |
	sort -r | while read -r mp; do
	umount -l -c "$(printf '%b' "$mp")" || say "cannot detach the FUSE mount '$mp'"
done
hostname devbox
ip link set lo up

home=$(readlink -f /home)
[[ -d $home ]] || die "cannot find /home to lay /home/dev over"
mkdir "$W/home"
mount -t tmpfs -o mode=755 tmpfs "$W/home"
for d in "$home"/* "$home"/.[!.]*; do
	[[ -e $d || -L $d ]] || continue
	n=${d##*/}
	[[ $n != dev ]] || continue
	if [[ -L $d ]]; then
		cp -P "$d" "$W/home/$n"
	elif [[ -d $d ]]; then
		mkdir "$W/home/$n"
		mount --rbind "$d" "$W/home/$n"
	else
		touch "$W/home/$n"
		mount --bind "$d" "$W/home/$n"
	fi
done
mkdir -m 755 "$W/home/dev"
mount --move "$W/home" "$home"

echo 0c0ffee0c0ffee0c0ffee0c0ffee0c0f >"$W/machine-id"
for f in /etc/machine-id /var/lib/dbus/machine-id; do
	[[ -f $f ]] && mount --bind "$W/machine-id" "$f"
done

mkdir "$W/bin"
for t in node git which cat head hostname; do
	p=$(command -v "$t") || die "cannot find '$t' for the clients' PATH"
	ln -s "$p" "$W/bin/$t"
done

# (1.x: the reply that ends a task waits 2 s, so that the checkpoint commit
# made before it is recorded in ui_messages.json before the client exits.)
end_delay=0
[[ $V != 1.* ]] || end_delay=2000
MODEL_SERVER_END_DELAY_MS=$end_delay node "$MODEL_SERVER" "$W/port" "$W/model.log" $$ 2>"$W/model.err" &
model=$!
for ((i = 0; i < 100; i++)); do
	[[ -f $W/port ]] && break
	sleep 0.1
done
[[ -f $W/port ]] || die "the model server did not start: $(cat "$W/model.err")"
BASE_URL=http://127.0.0.1:$(cat "$W/port")/v1

# ---- the client ---------------------------------------------------------------

# cline NAME ARGS...: the CLI in the current folder, output in WORK/NAME.out.
cline()
{
	local name=$1
	shift
	umask 022
	timeout -k 10 "$SECS" env -i HOME=/home/dev PATH="$W/bin" TZ=UTC LANG=C.UTF-8 NO_COLOR=1 \
		NO_AUTO_UPDATE=1 CLINE_NO_AUTO_UPDATE=1 CLINE_SESSION_BACKEND_MODE=local \
		GIT_AUTHOR_DATE="$GIT_DATE" GIT_COMMITTER_DATE="$GIT_DATE" \
		"$CLI" "$@" </dev/null >"$W/$name.out" 2>&1
}

# 1.x gives its core about 12 s to come up; on a loaded machine that is not
# always enough, before anything reached the data folder. Such a start is
# tried again, up to twice (as real_clients.sh does).
STARTUP_FAILURE='failed to start (new |auth )?instance'
run()
{
	local name=$1 rc attempt
	for ((attempt = 1; ; attempt++)); do
		rc=0
		cline "$@" || rc=$?
		((rc != 0 && attempt < 3)) && [[ $V == 1.* ]] && grep -q -E "$STARTUP_FAILURE" "$W/$name.out" || return $rc
		say "$name: the client's core did not start; again"
		sleep 2
	done
}

# why FILE: the lines of a client's output that say what went wrong.
why()
{
	grep -a -i -E 'error|fail|denied' "$1" | grep -a -v -E '^\s+at ' | head -n 3 | cut -c1-200 | tr '\n' ' '
}

mkdir -p /home/dev/projects
date +%s%3N >"$W/times"
cd /home/dev
case $V in
1.*) run auth auth -p openai -k sk-fake -m fake-model -b "$BASE_URL" ;;
2.*) run auth auth -p openai -k sk-fake -m fake-model -b "$BASE_URL" --config /home/dev/.cline ;;
*) run auth auth -p openai -k sk-fake -m fake-model -b "$BASE_URL" ;;
esac || die "\`cline auth\` failed (status $?): $(why "$W/auth.out")"

case $V in
1.*) workspaces=(greeter) ;;
*) workspaces=(webapp api-server) ;;
esac
for ws in "${workspaces[@]}"; do
	dir=/home/dev/projects/$ws
	mkdir "$dir"
	cd "$dir"
	t=$SECONDS
	case $V in
	1.*) run "task-$ws" "$PROMPT" -y -m act -F json ;;
	2.*) run "task-$ws" task "$PROMPT" -y --config /home/dev/.cline -c "$dir" ;;
	*) run "task-$ws" --json "$PROMPT" -c "$dir" ;;
	esac || die "the task in $ws failed (status $?): $(why "$W/task-$ws.out")"
	grep -q -F "$GREETING" "$dir/hello.txt" 2>/dev/null || die "the task in $ws wrote no hello.txt"
	say "task in $ws: $((SECONDS - t)) s"
done
date +%s%3N >>"$W/times"

# running: the processes in the namespace but this one and the model server,
# in $left (no subshell: it would be one of them); zombies are not running.
running()
{
	local p st
	left=()
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[[ $p != 1 && $p != "$model" ]] || continue
		{ read -r st <"/proc/$p/stat"; } 2>/dev/null || continue
		st=${st##*) }
		[[ ${st%% *} != Z ]] && left+=("$p")
	done
}

# settle TENTHS: waits that many tenths of a second at most for $left to be
# empty.
settle()
{
	local i
	for ((i = 0; i < $1; i++)); do
		running
		((${#left[@]} > 0)) || return 0
		sleep 0.1
	done
}

# What the clients leave running (1.x's cline-core and cline-host, 3.x's hub)
# may still be saving: it has 10 s to end by itself, then it is stopped, and
# the folder is copied only after that.
settle 100
for p in "${left[@]}"; do
	say "left running after 10 s: pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-120)"
	kill -TERM "$p" 2>/dev/null || true
done
settle 50
for p in "${left[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
kill "$model" 2>/dev/null || true

# A save cut short (Cline writes a temp file, then renames it) leaves its
# temp file, and the file it was to replace without its last change.
half=$(find /home/dev/.cline -name '*.tmp.*' -printf '%P ')
[[ -z $half ]] || die "a client left a save half done: $half"
# What the tests need of 1.x's folder: both checkpoints with their commit ids.
if [[ $V == 1.* ]]; then
	n=$(cat /home/dev/.cline/data/tasks/*/ui_messages.json | grep -o '"lastCheckpointHash":"[0-9a-f]\{40\}"' | wc -l)
	((n == 2)) || die "the task's ui_messages.json records $n checkpoint commits, not 2"
fi

uname -r >"$W/release"
cp -a /home/dev/.cline "$W/raw"
