#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# forget.sh: `convfs forget STORE --match TEXT` and `--task ID`.
#
#   A. A secret written underneath before the first mount (taken in), and
#      through the mount: appended with >> (current), appended then dropped
#      by a rewrite (only in an older version), in task_metadata.json (a whole
#      file's older version), and in a plain file. `grep -c` finds it in the
#      store's files before.
#   B. Refusals, nothing changed: while mounted (exit 1); without --yes and
#      without a terminal (exit 2); on a terminal (script(1)) answered "n".
#   C. --match - (the text from stdin, in no process list) --yes: it lists
#      the conversation files (never printing the text), names the plain file in
#      STORE.files/ and the file underneath that still hold it; afterwards
#      `grep -c TEXT STORE*` finds it nowhere, `convfs check` is clean, the
#      conversation is valid JSON with the other messages kept, versions/
#      still list and read (the older ones with a blanked line).
#   D. The next mount's take-in does not bring it back, though the file
#      underneath still holds it and changed after the last take-in (the
#      client wrote there while unmounted): grep -r finds it only in the
#      plain file; and after that mount the store holds no byte of it.
#   E. --task ID: the task leaves tasks/, workspaces/ and taskHistory.json,
#      no byte of its conversation stays in the store, and a remount does
#      not bring it back from underneath.

. "$(dirname "$0")/lib.sh"

# store_hits TEXT: how many lines of the store's files (database, WAL, shm) hold TEXT.
store_hits()
{
	local f n total=0
	for f in "$store" "$store-wal" "$store-shm"; do
		[[ -f $f ]] || continue
		n=$(grep -a -c -F -- "$1" "$f" || true)
		total=$((total + n))
	done
	echo "$total"
}

TA=1795306269021
TB=1795306284156
SECRET=sk-LEAKED-7f3a9c2e
mnt=$(fixture_extract 2.18.0 "$T/mnt")
store=$T/store.db

# Underneath, before the first mount: a message of task B holds it.
node -e '
	const fs = require("fs"), f = process.argv[1];
	const a = JSON.parse(fs.readFileSync(f, "utf8"));
	a.push({ ts: 1799000000000, type: "say", say: "text", text: "my key is " + process.argv[2] });
	a.push({ ts: 1799000000001, type: "say", say: "text", text: "only-in-task-B-4e1d" });
	fs.writeFileSync(f, JSON.stringify(a));' "$mnt/tasks/$TB/ui_messages.json" "$SECRET"
mount_convfs "$mnt" "$store"
VA=$(echo "$mnt"/workspaces/*/tasks/$TA)
printf '%s\n' "{\"role\":\"user\",\"content\":\"use $SECRET\"}" '{"role":"assistant","content":"done"}' >>"$VA/messages.jsonl"
printf '%s\n' "{\"role\":\"user\",\"content\":\"old $SECRET\"}" >>"$VA/messages.jsonl"
# a rewrite drops it: only an older version holds it
node -e '
	const fs = require("fs"), f = process.argv[1];
	const a = JSON.parse(fs.readFileSync(f, "utf8")); a.pop();
	fs.writeFileSync(f + ".tmp.1.json", JSON.stringify(a)); fs.renameSync(f + ".tmp.1.json", f);' \
	"$mnt/tasks/$TA/api_conversation_history.json"
meta=$mnt/tasks/$TA/task_metadata.json
# far into a 200 kB version: in overflow pages, which a delete frees without wiping
jq --arg s "$SECRET" '.note = ("x" * 200000) + $s' "$meta" >"$T/meta" && cat "$T/meta" >"$meta"
jq 'del(.note)' "$meta" >"$T/meta" && cat "$T/meta" >"$meta"
echo "{\"token\":\"$SECRET\"}" >"$mnt/settings/leak.json"
versions_before=$(ls "$VA/versions" | wc -l)

# --- B: refusals -----------------------------------------------------------
rc=0
"$CONVFS" forget "$store" --match "$SECRET" --yes >"$T/out" 2>"$T/err" || rc=$?
((rc == 1)) || problem "forget while mounted exited $rc, expected 1"
grep -q "is mounted" "$T/err" || problem "forget while mounted does not say so: $(cat "$T/err")"
unmount_convfs "$mnt"
check_log "$store.log"
# While unmounted, the client writes underneath again, the secret still in the file.
node -e '
	const fs = require("fs"), f = process.argv[1];
	const a = JSON.parse(fs.readFileSync(f, "utf8"));
	a.push({ ts: 1799000000002, type: "say", say: "text", text: "written underneath later" });
	fs.writeFileSync(f, JSON.stringify(a));' "$mnt/tasks/$TB/ui_messages.json"
(($(store_hits "$SECRET") > 0)) || fail "the store does not hold the secret before forget"
sum=$(sha256sum "$store")
rc=0
"$CONVFS" forget "$store" --match "$SECRET" </dev/null >"$T/out" 2>"$T/err" || rc=$?
((rc == 2)) || problem "forget without --yes and without a terminal exited $rc, expected 2"
grep -q -- "--yes" "$T/err" || problem "the refusal does not mention --yes: $(cat "$T/err")"
rc=0
printf 'n\n' | script -q -e -c "'$CONVFS' forget '$store' --match '$SECRET'" /dev/null >"$T/tty" 2>&1 || rc=$?
grep -q "forget all of this for good" "$T/tty" || problem "no question on a terminal:\n$(cat "$T/tty")"
grep -q "nothing was forgotten" "$T/tty" || problem "answering n did not abort:\n$(cat "$T/tty")"
[[ $(sha256sum "$store") == "$sum" ]] || problem "a refused forget changed the store"

# --- C: --yes ----------------------------------------------------------------
rc=0
printf '%s\n' "$SECRET" | "$CONVFS" forget "$store" --match - --yes >"$T/out" 2>"$T/err" || rc=$?
((rc == 0)) || problem "forget --match - --yes exited $rc:\n$(cat "$T/out" "$T/err")"
! grep -q -- "$SECRET" "$T/out" "$T/err" || problem "forget prints the secret it forgets"
grep -q "^  tasks/$TA/api_conversation_history.json: 2 messages (1 in its current version)" "$T/out" ||
	problem "forget does not list the api conversation's 2 messages:\n$(cat "$T/out")"
grep -q "^  tasks/$TA/task_metadata.json: 1 version of the file" "$T/out" ||
	problem "forget does not list the metadata's version:\n$(cat "$T/out")"
grep -q "^  tasks/$TB/ui_messages.json: 1 message" "$T/out" || problem "forget does not list task B's ui message:\n$(cat "$T/out")"
grep -q -F "  $store.files/settings/leak.json" "$T/out" || problem "forget does not name the plain file:\n$(cat "$T/out")"
grep -q -F "  $mnt/tasks/$TB/ui_messages.json" "$T/out" || problem "forget does not name the file underneath:\n$(cat "$T/out")"
for f in "$store"*; do
	[[ -f $f ]] || continue
	n=$(grep -a -c -- "$SECRET" "$f" || true)
	((n == 0)) || problem "'$(basename "$f")' still holds the secret ($n lines)"
done
"$CONVFS" check "$store" >"$T/check" 2>&1 || problem "check after forget:\n$(cat "$T/check")"

# --- D: the next mount's take-in ---------------------------------------------
mount_convfs "$mnt" "$store"
hits=$(grep -r -l --exclude-dir=checkpoints -- "$SECRET" "$mnt" || true)
[[ $hits == "$mnt/settings/leak.json" ]] || problem "after a remount, the secret is in:\n$hits"
jq -e 'length > 0' "$mnt/tasks/$TA/api_conversation_history.json" >/dev/null || problem "the conversation is not valid JSON"
grep -q '"content":"done"' "$VA/messages.jsonl" || problem "the message after the forgotten one is gone"
(($(ls "$VA/versions" | wc -l) == versions_before + 1)) ||
	problem "versions/ lists $(ls "$VA/versions" | wc -l), expected $((versions_before + 1)) (one more: the forget)"
grep -q -r '{"forgotten":true}' "$VA/versions" || problem "no older version shows the blanked message"
jq -c . "$VA"/versions/*/messages.jsonl >/dev/null || problem "an older version is not valid JSON Lines"
unmount_convfs "$mnt"
check_log "$store.log"
(($(store_hits "$SECRET") == 0)) || problem "after a remount, the store holds the secret again"

# --- E: --task -----------------------------------------------------------------
phrase=only-in-task-B-4e1d
[[ -n $phrase ]] && (($(store_hits "$phrase") > 0)) || fail "task B's first message is not in the store"
rc=0
"$CONVFS" forget "$store" --task $TB --yes >"$T/out" 2>"$T/err" || rc=$?
((rc == 0)) || problem "forget --task exited $rc:\n$(cat "$T/out" "$T/err")"
grep -q "^  tasks/$TB/ui_messages.json: the whole file" "$T/out" || problem "forget --task does not list its files:\n$(cat "$T/out")"
(($(store_hits "$phrase") == 0)) || problem "task B's first message is still in the store"
"$CONVFS" check "$store" >"$T/check" 2>&1 || problem "check after forget --task:\n$(cat "$T/check")"
mount_convfs "$mnt" "$store"
[[ ! -e $mnt/tasks/$TB ]] || problem "tasks/$TB is back after a remount"
! ls "$mnt"/workspaces/*/tasks/ | grep -q $TB || problem "the view shows task $TB after a remount"
! jq -e --arg id $TB 'any(.[]; .id == $id)' "$mnt/state/taskHistory.json" >/dev/null ||
	problem "taskHistory.json still lists $TB"
[[ -d $VA ]] || problem "task A went with task B"
unmount_convfs "$mnt"
check_log "$store.log"
pass
