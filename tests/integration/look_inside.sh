#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# look_inside.sh: `convfs status` on a real mount, driven by real programs
# (node writing as Cline does, printf, cp; sqlite3 nowhere: the point is to
# need no SQL).
#
# It proves:
#   - the mount names its store (the source column of /proc/mounts), and
#     status finds it from the mount point, from a folder inside the mount
#     (no argument) and says what to give from elsewhere (exit 2); mounted
#     exit 0, not mounted exit 1, a dead daemon exit 1 with its store still
#     named; --json is valid JSON with the counts (tasks and sessions apart,
#     versions, files), the last commit (kind, path, pid, process) and the
#     warnings since the mount, the one a refused save logged included, and
#     not those of the mount before.

. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || fail "jq is missing"

MNT=$T/mnt
STORE=$T/store.db
TASK=1795306269021
SESSION=1763560000000_ab12c
F=$MNT/tasks/$TASK/ui_messages.json
V=$MNT/workspaces/unknown/tasks/$TASK/ui_messages.jsonl
mkdir -p "$MNT"

m() { printf '{"ts":%s,"type":"say","say":"text","text":"%s"}' "$1" "$2"; }

# cv ARGS...: convfs with its stdout in $T/out, its stderr in $T/err; sets RC.
cv()
{
	RC=0
	"$CONVFS" "$@" >"$T/out" 2>"$T/err" || RC=$?
}

# expect_rc WANT WHAT: the last cv's status.
expect_rc()
{
	((RC == $1)) || problem "$2: exit status $RC, expected $1 (stdout: $(cat "$T/out"); stderr: $(cat "$T/err"))"
}

# ---- status before the mount -------------------------------------------------

cv status "$MNT"
expect_rc 1 "status of a folder not mounted"
grep -q "not mounted" "$T/out" || problem "status does not say 'not mounted': $(cat "$T/out")"
cv status --json "$MNT"
expect_rc 1 "status --json of a folder not mounted"
[[ $(jq -r .mounted "$T/out") == false ]] || problem "status --json: mounted is not false: $(cat "$T/out")"
(cd "$T" && "$CONVFS" status >/dev/null 2>"$T/err") && RC=0 || RC=$?
expect_rc 2 "status with no argument outside a mount"
grep -q "give the mount point" "$T/err" || problem "status outside a mount does not say what to give: $(cat "$T/err")"

# ---- mounted: the store named by the mount table --------------------------------

mount_convfs "$MNT" "$STORE"
src=$(awk -v m="$MNT" '$2 == m && $3 == "fuse.convfs" { print $1 }' /proc/self/mounts)
[[ $src == "$STORE" ]] || problem "the mount's source is '$src', not its store '$STORE'"

mkdir -p "$MNT/tasks/$TASK"
m 1 a | sed 's/^/[/; s/$/]/' >"$T/v1"
printf '%s' "$(cat "$T/v1")" >"$F"                       # 1: the shell writes in place
printf '[%s,%s]' "$(m 1 a)" "$(m 2 b)" >"$T/v2"
node_client write_atomic.js "$F" "$T/v2"                 # 2: node, temp + rename
printf '%s\n' "$(m 3 c)" >>"$V"                          # 3: an append through the view
cp "$T/v2" "$F"                                          # 4: cp of an old version: merged
grep -q '"text":"c"' "$F" || problem "cp of an old version over the live file removed a message added since"

cv status "$MNT"
expect_rc 0 "status of the mount"
grep -q "^mounted: *$MNT\$" "$T/out" || problem "status does not say mounted: $(cat "$T/out")"
cv status --json "$MNT"
expect_rc 0 "status --json of the mount"
jq -e . "$T/out" >/dev/null || problem "status --json is not JSON: $(cat "$T/out")"
jq -e --arg s "$STORE" '.mounted == true and .store == $s and .tasks == 1 and .sessions == 0
	and .files == 1 and .versions >= 4 and .store_bytes > 0 and .schema >= 6
	and .last_commit.path == "tasks/'"$TASK"'/ui_messages.json" and .last_commit.process == "cp"
	and (.last_commit.pid | type) == "number" and .warnings.count == 0' "$T/out" >/dev/null ||
	problem "status --json says something else: $(cat "$T/out")"
# No argument: the mount of the current folder, from deep inside it.
(cd "$MNT/tasks/$TASK" && "$CONVFS" status --json) >"$T/out" || problem "status from inside the mount failed"
[[ $(jq -r .mountpoint "$T/out") == "$MNT" ]] || problem "status from inside the mount: $(cat "$T/out")"

# ---- a 3.x session, a warning ---------------------------------------------------------

mkdir -p "$MNT/sessions/$SESSION"
printf '{\n  "version": 1,\n  "messages": [\n    {"id": "m1"}\n  ]\n}\n' >"$MNT/sessions/$SESSION/$SESSION.messages.json"
node_client write_in_place.js "$F" <(printf '[{"ts":1') >"$T/client.out" 2>&1 || true
cv status --json "$MNT"
jq -e '.sessions == 1 and .tasks == 1 and .warnings.count == 1
	and (.warnings.last[0] | test("warning: refusing to commit .*ui_messages.json"))' "$T/out" >/dev/null ||
	problem "status does not count the session or the warning: $(cat "$T/out")"
[[ $(stat -c %a "$STORE.warnings") == 600 ]] || problem "the warnings file is not owner-only"

# ---- a dead daemon, a remount ------------------------------------------------------------

unmount_convfs "$MNT"
mount_convfs "$MNT" "$STORE"
cv status --json "$MNT"
[[ $(jq -r .warnings.count "$T/out") == 0 ]] || problem "the warnings of the last mount count at this one"
kill_daemon "$MNT"
cv status --json "$MNT"
expect_rc 1 "status of a mount whose daemon is gone"
jq -e --arg s "$STORE" '.mounted == false and .store == $s and .tasks == 1' "$T/out" >/dev/null ||
	problem "status of a dead mount: $(cat "$T/out")"
remove_dead_mount "$MNT"

check_log "$STORE.log" "warning: refusing to commit 'tasks/$TASK/ui_messages.json': not a JSON array"
pass
