#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# look_inside.sh: `convfs status`, `convfs log` and `convfs restore` on a
# real mount, driven by real programs (node writing as Cline does, printf,
# cp, sqlite3 nowhere: the point is to need no SQL).
#
# It proves:
#   - the mount names its store (the source column of /proc/mounts), and
#     status finds it from the mount point, from a folder inside the mount
#     (no argument) and says what to give from elsewhere (exit 2); mounted
#     exit 0, not mounted exit 1, a dead daemon exit 1 with its store still
#     named; --json is valid JSON with the counts (tasks and sessions apart,
#     versions, files), the last commit (kind, path, pid, process) and the
#     warnings since the mount, the one a refused save logged included;
#   - log lists each saved version of a file, newest first, numbered, with
#     its kind (write, rename, append, merge, restore), size and process
#     (node, cp, the shell's printf); the view's file (ui_messages.jsonl, a
#     3.x session's messages.jsonl) has the same log as the compat file
#     behind it; a merge says what it kept from the writer and with whose
#     version it merged;
#   - a plain cp of an old version over the live file is an ordinary write
#     that merges: a message added since stays;
#   - restore makes that version live byte for byte, as one commit of kind
#     restore (not merged), seen at once through the compat file and the
#     view, through either; the live version again changes nothing; a
#     number the file does not have, a plain file, a path off the mount and
#     a bad number are refused with a clear message and exit status;
#   - a task's files share one numbering, the one of its versions/: its
#     messages and ui messages saved in turn (node, temp + rename) are
#     versions 1 to 5 in versions/, the messages' log is numbered 5, 3, 1
#     (the view's messages.jsonl too) and the ui messages' 4, 2; a restore
#     of the messages at 4, a save of the ui messages, makes them what
#     versions/000004-*/messages.jsonl shows (jq -c, line by line) and is
#     version 6, restoring 4; a restore of the ui messages at 1, before
#     their first version, is refused (exit 1, "had no version yet") and
#     changes nothing;
#   - other extended attributes still answer EOPNOTSUPP;
#   - the log is the same after a remount;
#   - a store whose path has a comma, a percent sign, a space and a
#     backslash mounts and is named.

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

# ---- log ---------------------------------------------------------------------------

cv log "$F"
expect_rc 0 "log of a conversation file"
[[ $(wc -l <"$T/out") == 4 ]] || problem "log shows $(wc -l <"$T/out") versions, not 4:\n$(cat "$T/out")"
[[ $(awk '{ print $1 }' "$T/out" | tr '\n' ' ') == "004 003 002 001 " ]] ||
	problem "log is not numbered newest first:\n$(cat "$T/out")"
cv log --json "$F"
cp "$T/out" "$T/log.json"
jq -e . "$T/log.json" >/dev/null || problem "log --json is not JSON: $(cat "$T/log.json")"
kinds=$(jq -r '[.[].kind] | join(" ")' "$T/log.json")
[[ $kinds == "merge append rename write" ]] || problem "log kinds are '$kinds', not 'merge append rename write'"
procs=$(jq -r '[.[].process] | join(" ")' "$T/log.json")
[[ $procs == "cp bash node bash" ]] || problem "log processes are '$procs', not 'cp bash node bash'"
jq -e --argjson s1 "$(stat -c %s "$T/v1")" --argjson s2 "$(stat -c %s "$T/v2")" --argjson s4 "$(stat -c %s "$F")" \
	'.[3].size == $s1 and .[2].size == $s2 and .[0].size == $s4 and (.[0].pid | type) == "number"' \
	"$T/log.json" >/dev/null || problem "log sizes or pids are wrong: $(cat "$T/log.json")"
jq -e '.[0].merge.from_writer == 2 and .[0].merge.kept_stored == 1 and .[0].merge.others_kept == 1
	and .[0].merge.with.number == 3 and .[0].merge.with.process == "bash"' "$T/log.json" >/dev/null ||
	problem "the merge does not say what it kept from whom: $(jq -c '.[0]' "$T/log.json")"
grep -q "merged with 003 by pid [0-9]* (bash)" <("$CONVFS" log "$F") || problem "log does not say whose version the merge kept"
# The view's file shows the same doc: the same log.
cv log --json "$V"
expect_rc 0 "log of the view's file"
cmp -s "$T/out" "$T/log.json" || problem "the log of '$V' differs from that of '$F'"

# ---- restore -------------------------------------------------------------------------

cv restore "$F" 1
expect_rc 0 "restore of version 1"
grep -q "restored version 001 .* as version 005" "$T/out" || problem "restore says: $(cat "$T/out")"
same "$F" "$T/v1" "the restored file"
[[ $(stat -c %s "$F") == $(stat -c %s "$T/v1") ]] || problem "the restored file's size is stale: $(stat -c %s "$F")"
[[ $(wc -l <"$V") == 1 ]] || problem "the view still shows $(wc -l <"$V") lines after the restore"
cv log --json "$F"
jq -e '.[0].kind == "restore" and .[0].number == 5 and .[0].restored == 1 and (.[0] | has("merge") | not)
	and .[0].process == "convfs"' "$T/out" >/dev/null ||
	problem "the restore is not one unmerged commit of kind restore: $(jq -c '.[0]' "$T/out")"
cv status --json "$MNT"
[[ $(jq -r .last_commit.kind "$T/out") == restore ]] || problem "status's last commit is not the restore: $(cat "$T/out")"
# Forward again, through the view; then the live one changes nothing.
cv restore "$V" 4
expect_rc 0 "restore through the view"
grep -q '"text":"c"' "$F" || problem "restoring version 4 through the view did not bring back its messages"
cv restore "$F" 6
expect_rc 0 "restore of the live version"
grep -q "already the live one" "$T/out" || problem "restore of the live version says: $(cat "$T/out")"
[[ $(jq length <("$CONVFS" log --json "$F")) == 6 ]] || problem "restore of the live version made a version"
# Refusals.
cv restore "$F" 99
expect_rc 1 "restore of a version the file does not have"
grep -q "there is no version 099 (the last is 006" "$T/err" || problem "restore 99 says: $(cat "$T/err")"
cv restore "$F" x1
expect_rc 2 "restore with a bad number"
echo plain >"$MNT/notes.txt"
cv restore "$MNT/notes.txt" 1
expect_rc 1 "restore of a plain file"
grep -q "is not a conversation file" "$T/err" || problem "restore of a plain file says: $(cat "$T/err")"
cv log "$MNT/notes.txt"
expect_rc 1 "log of a plain file"
cv log "$T/v1"
expect_rc 1 "log of a file off the mount"
grep -q "is not on a convfs mount" "$T/err" || problem "log off the mount says: $(cat "$T/err")"
cv log "$MNT/tasks/$TASK/nothing.json"
expect_rc 1 "log of a missing file"
# The mount keeps no other extended attribute.
for f in "$F" "$MNT/notes.txt"; do
	err=$(python3 -c 'import errno, os, sys
try:
	os.setxattr(sys.argv[1], "user.other", b"1")
	print("ok")
except OSError as e:
	print(errno.errorcode[e.errno])' "$f")
	[[ $err == EOPNOTSUPP || $err == ENOTSUP ]] || problem "setxattr user.other on '$f': $err, expected EOPNOTSUPP"
done

# ---- a 3.x session, a warning ---------------------------------------------------------

mkdir -p "$MNT/sessions/$SESSION"
printf '{\n  "version": 1,\n  "messages": [\n    {"id": "m1"}\n  ]\n}\n' >"$MNT/sessions/$SESSION/$SESSION.messages.json"
node_client write_in_place.js "$F" <(printf '[{"ts":1') >"$T/client.out" 2>&1 || true
cv status --json "$MNT"
jq -e '.sessions == 1 and .tasks == 1 and .warnings.count == 1
	and (.warnings.last[0] | test("warning: refusing to commit .*ui_messages.json"))' "$T/out" >/dev/null ||
	problem "status does not count the session or the warning: $(cat "$T/out")"
for f in "$STORE".mounts/*.warnings; do
	[[ $(stat -c %a "$f") == 600 ]] || problem "the warnings file $f is not owner-only"
done
[[ $(stat -c %a "$STORE.mounts") == 700 ]] || problem "the folder where the daemons register is not owner-only"
cv log --json "$MNT/sessions/$SESSION/$SESSION.messages.json"
expect_rc 0 "log of a session's messages"
cp "$T/out" "$T/session.json"
[[ $(jq length "$T/session.json") == 1 ]] || problem "a session's log: $(cat "$T/session.json")"
cv log --json "$MNT/workspaces/unknown/tasks/$SESSION/messages.jsonl"
expect_rc 0 "log of a session's messages.jsonl in the view"
cmp -s "$T/out" "$T/session.json" || problem "a session's log differs between its file and the view's"

# ---- a dead daemon, a remount ------------------------------------------------------------

unmount_convfs "$MNT"
mount_convfs "$MNT" "$STORE"
cv log --json "$F"
jq -e 'length == 6 and .[0].number == 6 and .[1].kind == "restore"' "$T/out" >/dev/null ||
	problem "the log after a remount: $(cat "$T/out")"
cv status --json "$MNT"
[[ $(jq -r .warnings.count "$T/out") == 0 ]] || problem "the warnings of the last mount count at this one"
# A daemon that does not answer (stopped here): status says so in about 5 s
# and ends, where it would wait as long as the daemon does; then, going on,
# it answers again.
pid=${DAEMON_PID[$MNT]}
kill -STOP "$pid"
# kill returns before every thread has stopped: wait until each one has (T).
all_stopped() { ! grep -q -v -E '^[0-9]+ \(.*\) T ' /proc/"$pid"/task/*/stat; }
for ((i = 0; i < 100; i++)); do
	all_stopped && break
	sleep 0.05
done
all_stopped || problem "the daemon's threads did not all stop in 5 s"
start=$SECONDS
RC=0
timeout -s KILL 30 "$CONVFS" status "$MNT" >"$T/out" 2>"$T/err" || RC=$?
took=$((SECONDS - start))
kill -CONT "$pid"
expect_rc 1 "status of a mount whose daemon is stopped"
((took <= 15)) || problem "status of a mount whose daemon is stopped took $took s"
grep -q "not answering: .* has not answered in 5 s" "$T/out" ||
	problem "status of a mount whose daemon is stopped does not say it does not answer: $(cat "$T/out")"
cv status --json "$MNT"
expect_rc 0 "status once the stopped daemon goes on"
[[ $(jq -r .mounted "$T/out") == true ]] || problem "status --json once the stopped daemon goes on: $(cat "$T/out")"
kill_daemon "$MNT"
cv status --json "$MNT"
expect_rc 1 "status of a mount whose daemon is gone"
jq -e --arg s "$STORE" '.mounted == false and .store == $s and .tasks == 1' "$T/out" >/dev/null ||
	problem "status of a dead mount: $(cat "$T/out")"
remove_dead_mount "$MNT"

# A store whose path has what libfuse's options and the mount table escape.
ODD="$T/odd, 50% \\dir"
mkdir -p "$ODD/mnt"
esc=${ODD//\\/\\\\}
esc=${esc//,/\\,}
mount_convfs_log "$ODD/mnt" "$ODD/s,1.db.log" -o "store=$esc/s\\,1.db"   # -o wants , and \ escaped
cv status --json "$ODD/mnt"
expect_rc 0 "status of a mount whose store's path has a comma"
[[ $(jq -r .store "$T/out") == "$ODD/s,1.db" ]] || problem "status names the store '$(jq -r .store "$T/out")'"
unmount_convfs "$ODD/mnt"

# ---- one numbering: a task's files, versions/, log and restore ------------------------------

MNT2=$T/mnt2
STORE2=$T/store2.db
TASK2=1795306269055
mkdir -p "$MNT2"
mount_convfs "$MNT2" "$STORE2"
A=$MNT2/tasks/$TASK2/api_conversation_history.json
U=$MNT2/tasks/$TASK2/ui_messages.json
W=$MNT2/workspaces/unknown/tasks/$TASK2
u() { printf '{"role":"%s","content":[{"type":"text","text":"%s"}]}' "$1" "$2"; }
mkdir -p "$MNT2/tasks/$TASK2"
# The two streams saved in turn, as Cline saves them (temp + rename): messages 1, 3, 5; ui 2, 4.
printf '[%s]' "$(u user one)" >"$T/a1"
printf '[%s,%s]' "$(u user one)" "$(u assistant two)" >"$T/a3"
printf '[%s,%s,%s]' "$(u user one)" "$(u assistant two)" "$(u user three)" >"$T/a5"
printf '[%s]' "$(m 1 a)" >"$T/u2"
printf '[%s,%s]' "$(m 1 a)" "$(m 2 b)" >"$T/u4"
for f in a1 u2 a3 u4 a5; do
	node_client write_atomic.js "$([[ $f == a* ]] && echo "$A" || echo "$U")" "$T/$f"
done
[[ $(ls "$W/versions" | cut -c1-6 | tr '\n' ' ') == "000001 000002 000003 000004 000005 " ]] ||
	problem "versions/ of the two streams saved in turn: $(ls "$W/versions" | tr '\n' ' ')"
cv log --json "$A"
expect_rc 0 "log of the task's messages"
[[ $(jq -c '[.[].number]' "$T/out") == "[5,3,1]" ]] ||
	problem "the messages' log is not numbered as versions/ (5, 3, 1): $(jq -c '[.[].number]' "$T/out")"
cv log --json "$W/messages.jsonl"
[[ $(jq -c '[.[].number]' "$T/out") == "[5,3,1]" ]] || problem "the view's messages.jsonl has another log: $(cat "$T/out")"
cv log --json "$U"
[[ $(jq -c '[.[].number]' "$T/out") == "[4,2]" ]] ||
	problem "the ui messages' log is not numbered as versions/ (4, 2): $(jq -c '[.[].number]' "$T/out")"
# 4 saved the ui messages: the messages come back as versions/4 shows them (as 3 left them).
jq -c . "$W"/versions/000004-*/messages.jsonl >"$T/want4"
cv restore "$A" 4
expect_rc 0 "restore of the messages at a save of the ui messages"
grep -q "restored version 004 .* as version 006" "$T/out" || problem "restore 4 says: $(cat "$T/out")"
jq -c . "$W/messages.jsonl" >"$T/got4"
diff "$T/want4" "$T/got4" || problem "restore 4 did not bring back the messages as versions/000004 shows them"
[[ $(jq -c . "$A") == "$(jq -c . "$T/a3")" ]] || problem "restore 4 did not bring back the messages of save 3"
jq -e '.[0].number == 6 and .[0].kind == "restore" and .[0].restored == 4' <("$CONVFS" log --json "$A") >/dev/null ||
	problem "the restore is not version 006, restoring 004: $("$CONVFS" log --json "$A" | jq -c '.[0]')"
diff <(jq -c . "$W/messages.jsonl") <(jq -c . "$W"/versions/000006-*/messages.jsonl) ||
	problem "versions/000006 is not what the restore made live"
# Before the file's first version: refused, nothing changes.
nv=$(ls "$W/versions" | wc -l)
cv restore "$U" 1
expect_rc 1 "restore of the ui messages before their first version"
grep -q "had no version yet at 001 (its first is 002" "$T/err" || problem "restore of the ui messages at 1 says: $(cat "$T/err")"
same "$U" "$T/u4" "the ui messages after a refused restore"
(($(ls "$W/versions" | wc -l) == nv)) || problem "a refused restore made a version"
unmount_convfs "$MNT2"

check_log "$STORE2.log"
check_log "$ODD/s,1.db.log"
check_log "$STORE.log" "warning: refusing to commit 'tasks/$TASK/ui_messages.json': not a JSON array"
pass
