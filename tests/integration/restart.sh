#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# restart.sh: the installed systemd unit brings convfs back after the daemon
# is killed, while a client saves every 100 ms, and nothing committed is
# lost. These machines run no systemd: the unit is checked with
# `systemd-analyze verify`, and standin_systemd.sh plays systemd's part (it
# runs the unit's ExecStartPre, ExecStart, ExecStop and ExecStopPost lines as
# systemd does for Type=forking, Restart=on-failure, RestartSec; see there
# what it cannot do as systemd does).
#
# The unit is the one `meson install --destdir` installs, its programs taken
# from the destdir; the instance is the folder's escaped path, and %f its
# unescaped form. clients/saver.js saves tasks/<id>/ui_messages.json every
# 100 ms by temp file + rename, one message more each time, recording which
# saves returned success, and keeps a file of the mount open all along (as
# an editor or the Cline CLI's hub keeps its log): on the dead mount
# `fusermount3 -u` then fails with EBUSY, and only the lazy detach lets the
# restart mount. The test kills the daemon with SIGKILL once 20 saves have
# returned, and proves that
#   - the folder answers again (a listing succeeds) within 3 s of the kill;
#   - the unit starts the daemon again, and the client's saves succeed
#     through the new mount within 6 s of the kill (typically 1.2-3 s here:
#     RestartSec=1 and the start; the bound leaves room for a loaded machine
#     or a sanitizer build), and every save after the
#     first one through it succeeds;
#   - nothing committed is lost: after the restart, every save that had
#     returned before the kill is there (each save also writes a task of its
#     own once, which no later save rewrites), and so is every save the
#     client made into the folder underneath while it was detached (convfs
#     takes in the folder again once mounted: what landed there after its
#     first take-in had read the folder would otherwise wait for the next
#     mount); the growing file holds at least the messages of the last save
#     before the kill; after a stop of the unit and a
#     mount of the same (default) store, every save that returned is there,
#     those the client made into the folder underneath while it was detached
#     included, and the growing file is byte for byte the last save;
#   - stopping the unit (the stand-in's SIGTERM: ExecStop, SIGTERM to the
#     daemon, ExecStopPost) while a file of the mount is still open (the
#     editor's log) unmounts: the daemon exits on SIGTERM, nothing is
#     killed, and no mount is left on the folder, dead or alive;
#   - convfs-detach-dead leaves a live mount alone (one made by hand: the
#     unit started then must not detach it from under its clients), and
#     refuses a wrong command line with status 2.
# It reports how many saves failed, and with what, and how many went into
# the folder underneath.
#
# RESTART_NO_DETACH=1 drops the unit's convfs-detach-dead lines (the lazy
# unmount): the test must then fail, the restart finding the dead mount
# (convfs: cannot open the mount point: Transport endpoint is not connected).
#
# Environment (set by tests/integration/meson.build): BUILD_ROOT, PREFIX.

. "$(dirname "$0")/lib.sh"

[[ -n ${BUILD_ROOT:-} && -d $BUILD_ROOT && -n ${PREFIX:-} ]] || fail "BUILD_ROOT and PREFIX must be set"
for cmd in meson systemd-analyze systemd-escape findmnt sqlite3; do
	command -v "$cmd" >/dev/null || fail "$cmd is missing (scripts/deps installs it)"
done

now_ms() { date +%s%3N; }

# ---- the installed unit, checked --------------------------------------------

say "meson install --destdir, systemd-analyze verify"
D=$T/dest
meson install -C "$BUILD_ROOT" --no-rebuild --destdir "$D" >"$T/install.log" 2>&1 ||
	fail "meson install failed:\n$(tail -n 20 "$T/install.log")"
M=$T/folder
mkdir -p "$M" "$T/units" "$T/run" "$T/xdg"
chmod 700 "$T/run"
inst=$(systemd-escape --path "$M")
folder=/$(systemd-escape --unescape "$inst") # %f
[[ $folder == "$M" ]] || fail "the instance '$inst' does not name '$M' again (%f = '$folder')"
UNIT=$T/units/convfs@$inst.service
sed -E "s|^(Exec[A-Za-z]*=-?)$PREFIX/|\1$D$PREFIX/|" "$D$PREFIX/lib/systemd/user/convfs@.service" >"$UNIT"
out=$(MANPATH=$D$PREFIX/share/man XDG_RUNTIME_DIR=$T/run systemd-analyze verify --user "$UNIT" 2>&1) ||
	fail "systemd-analyze verify rejects the unit:\n$out"
[[ -z $out ]] || fail "systemd-analyze verify warns about the unit:\n$out"
if [[ ${RESTART_NO_DETACH:-} == 1 ]]; then
	say "RESTART_NO_DETACH=1: the unit without its lazy unmount (this run must fail)"
	sed -i '/convfs-detach-dead/d' "$UNIT"
fi

# ---- the stand-in for systemd -----------------------------------------------

export XDG_DATA_HOME=$T/xdg # the default store of the folder goes there
EVENTS=$T/events
: >"$EVENTS"
STANDIN=
TEST_PID=$$ bash "$TESTS_DIR/standin_systemd.sh" "$UNIT" "$folder" "$EVENTS" 2>"$T/standin.log" &
STANDIN=$!
LOGS[$T/standin.log]=1

# Before lib.sh's cleanup: stop the stand-in first, so that it does not
# start convfs again while the mounts are removed.
stop_standin()
{
	[[ -n $STANDIN ]] || return 0
	kill -TERM "$STANDIN" 2>/dev/null || true
	wait_gone "$STANDIN" 40 || kill -9 "$STANDIN" 2>/dev/null || true
	STANDIN=
}
saver=
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit()
{
	local status=$?
	trap - ERR
	set +e
	[[ -z $saver ]] || kill "$saver" 2>/dev/null
	stop_standin
	(exit "$status")
	cleanup
}
trap on_exit EXIT

# wait_event WORD COUNT SECONDS: waits until EVENTS has COUNT lines of WORD.
wait_event()
{
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		(($(grep -c " $1" "$EVENTS" || true) >= $2)) && return 0
		grep -q ' start-limit-hit' "$EVENTS" && return 1
		sleep 0.05
	done
	return 1
}
wait_event started 1 20 || fail "the unit did not start:\n$(cat "$EVENTS")\n$(tail -n 20 "$T/standin.log")"
mountpoint -q "$M" || fail "the unit started, but '$M' is not mounted"
pid=$(sed -n -E 's/^[0-9]+ started pid=([0-9]+)$/\1/p' "$EVENTS" | tail -n 1)
echo "$pid" >>"$T/daemons"
STORE=$(echo "$XDG_DATA_HOME"/convfs/folder-*.db)
[[ -f $STORE ]] || fail "no default store under '$XDG_DATA_HOME/convfs': $(ls -A "$XDG_DATA_HOME/convfs" 2>&1)"

# ---- the client, the kill, the restart --------------------------------------

TASK=1795306269021
RECORD=$T/record
: >"$RECORD"
say "a client saves every 100 ms; kill -9 of the daemon (pid $pid) after 20 saves"
node "$CLIENTS/saver.js" save "$M" "$TASK" "$RECORD" "$T/stop" >"$T/saver.out" 2>"$T/saver.err" &
saver=$!
rc=0
wait_records "$RECORD" 'ok ' 20 "$saver" 10 || rc=$?
((rc != 1)) || fail "the client stopped: $(cat "$T/saver.err")"
((rc == 0)) || fail "the client made fewer than 20 saves in 10 s:\n$(tail -n 5 "$RECORD")"
killed=$(now_ms)
kill -9 "$pid"

# The folder answers again (underneath, or the new mount).
answered=
for ((i = 0; i < 300; i++)); do
	if ls -a -- "$M" >/dev/null 2>&1; then
		answered=$(now_ms)
		break
	fi
	sleep 0.01
done
[[ -n $answered ]] || problem "the folder does not answer 3 s after the kill"

wait_event started 2 20 ||
	fail "the unit did not start the daemon again:\n$(cat "$EVENTS")\n--- stand-in ---\n$(tail -n 30 "$T/standin.log")"
restarted=$(sed -n -E 's/^([0-9]+) started pid=[0-9]+$/\1/p' "$EVENTS" | tail -n 1)
pid=$(sed -n -E 's/^[0-9]+ started pid=([0-9]+)$/\1/p' "$EVENTS" | tail -n 1)
echo "$pid" >>"$T/daemons"
grep -q ' died failure$' "$EVENTS" || problem "the stand-in did not take the kill for a failure:\n$(cat "$EVENTS")"

# The first save begun after the new mount was up, then 10 more.
first_ok=
for ((i = 0; i < 200; i++)); do
	first_ok=$(awk -v r="$restarted" '$1 == "ok" && $3 >= r { print; exit }' "$RECORD")
	[[ -z $first_ok ]] || break
	sleep 0.05
done
[[ -n $first_ok ]] || fail "no save succeeded in the 10 s after the restart:\n$(tail -n 10 "$RECORD")"
read -r _ first_n _ first_end <<<"$first_ok"
for ((i = 0; i < 100; i++)); do
	(($(awk -v n="$first_n" '$2 > n' "$RECORD" | wc -l) >= 10)) && break
	sleep 0.05
done
touch "$T/stop"
wait_gone "$saver" 10 || fail "the client does not stop"
wait "$saver" || fail "the client failed: $(cat "$T/saver.err")"
saver=

before=$(awk -v k="$killed" '$1 == "ok" && $4 < k { n = $2 } END { print n + 0 }' "$RECORD")
after_fail=$(awk -v n="$first_n" '$1 == "fail" && $2 > n' "$RECORD")
last_ok=$(awk '$1 == "ok" { n = $2 } END { print n + 0 }' "$RECORD")
total=$(wc -l <"$RECORD")
failed=$(grep -c '^fail ' "$RECORD" || true)
codes=$(awk '$1 == "fail" { c[$4]++ } END { for (k in c) printf "%s %d, ", k, c[k] }' "$RECORD")
say "$total saves, $failed failed (${codes%, }); the folder answered $((answered - killed)) ms after the kill," \
	"the daemon was up again after $((restarted - killed)) ms, the first save through it returned after $((first_end - killed)) ms"
bound=$((6000 * SLOW))
((first_end - killed <= bound)) || problem "the client's saves succeed only $((first_end - killed)) ms after the kill (bound: $bound)"
[[ -z $after_fail ]] || problem "saves failed after the first one through the new mount:\n$after_fail"
(($(awk -v n="$first_n" '$2 > n' "$RECORD" | wc -l) >= 10)) || problem "fewer than 10 saves after the first one through the new mount"

say "nothing committed is lost"
n=$(node "$CLIENTS/saver.js" check "$M/tasks/$TASK/ui_messages.json" "$before" 2>"$T/check.err") ||
	problem "after the restart: $(cat "$T/check.err")"
say "after the restart the file holds ${n:-?} messages; the last save before the kill had $before"
out=$(node "$CLIENTS/saver.js" check-once "$M" "$RECORD" "$killed" 2>"$T/check.err") ||
	problem "after the restart: $(cat "$T/check.err")"
say "after the restart all ${out%% *} saves that had returned before the kill are there"
gap=$(awk -v k="$killed" -v r="$restarted" '$1 == "ok" && $3 >= k && $4 < r' "$RECORD" | wc -l)
out=$(node "$CLIENTS/saver.js" check-once "$M" "$RECORD" "$restarted" report)
say "$gap saves went into the folder underneath while it was detached; the restart took in all but ${out#* }"
[[ ${out#* } == 0 ]] ||
	problem "${out#* } of the $gap saves made into the folder underneath during the restart are not in the store after it"

say "stopping the unit while a file of the mount is open"
exec 8>>"$M/editor.log"
stop_standin
exec 8>&-
grep -q ' stopped$' "$EVENTS" || problem "the stand-in did not stop the unit:\n$(cat "$EVENTS")"
! grep -q ' stop-sigkill' "$EVENTS" || problem "the daemon had to be killed to stop the unit"
[[ -z $(findmnt -n --mountpoint "$M" 2>/dev/null) ]] || problem "a mount is left on '$M' after the stop: $(findmnt --mountpoint "$M")"
wait_gone "$pid" 10 || problem "convfs (pid $pid) still runs after the stop"

mount_convfs "$M" "$STORE"
DETACH=$D$PREFIX/libexec/convfs-detach-dead
rc=0
"$DETACH" "$M" 2>"$T/detach.err" || rc=$?
((rc == 0)) || problem "convfs-detach-dead on a live mount exits with status $rc: $(cat "$T/detach.err")"
{ mountpoint -q "$M" && ls "$M/tasks" >/dev/null; } || problem "convfs-detach-dead detached a live mount"
[[ ! -s $T/detach.err ]] || problem "convfs-detach-dead says something about a live mount: $(cat "$T/detach.err")"
rc=0
"$DETACH" 2>/dev/null || rc=$?
((rc == 2)) || problem "convfs-detach-dead without a folder exits with status $rc, not 2"
node "$CLIENTS/saver.js" check "$M/tasks/$TASK/ui_messages.json" "$last_ok" "$last_ok" >/dev/null 2>"$T/check.err" ||
	problem "after a stop and a mount: $(cat "$T/check.err")"
node "$CLIENTS/saver.js" check-once "$M" "$RECORD" 99999999999999 >/dev/null 2>"$T/check.err" ||
	problem "after a stop and a mount: $(cat "$T/check.err")"
[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] || problem "the store does not check ok"
unmount_convfs "$M"
# The client writes no state/taskHistory.json: its tasks are unlisted.
check_log "$STORE.log" '^convfs: warning: state/taskHistory.json is missing or does not parse; [0-9]+ task folders are kept but not listed$'
pass
