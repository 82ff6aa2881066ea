#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# offline.sh: what is written into the folder underneath while the store is
# not mounted (the editor started before the mount) is taken in at the next
# mount, and nothing of the store is lost by it.
#
# Over the Cline CLI 2.18.0 fixture: a first mount takes the folder in; writes
# through the mount (a message by temp + rename, an API message by `>>` to the
# view, a new history item, a plain file). Unmounted, the folder underneath
# gets a new task (folder and history item), a message added to the same
# task's two conversations, a changed and a new plain file, the plain file the
# mount changed changed again, a task folder deleted and a folder emptied.
# The next mount must
#   - show the new task in tasks/ and in workspaces/*/tasks/;
#   - hold both the mount's and the folder's messages (merged) and history items;
#   - copy the plain files in, and keep the one changed on both sides in the
#     store with the folder's version beside it as <name>.offline-<time>;
#   - keep every file that is missing underneath;
#   - say so in one log line with the counts;
#   - leave the folder underneath byte-identical (names, modes, times, contents).
# Then -o no_import takes nothing in, the next mount takes in what it skipped,
# and a mount with nothing changed logs no take-in and makes no revision.
# Each kind of difference alone is found, and while the walk goes on behind
# the mount, a request waits for what it touches, and only for that.

. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || fail "jq is missing"
command -v sqlite3 >/dev/null || fail "sqlite3 is missing"

M=$(fixture_extract 2.18.0 "$T/fx")
STORE=$T/store.db
A=1795306269021    # a task written on both sides
GONE=1795306284156 # a task whose folder is deleted underneath
NEW=1795400000000  # a task made underneath
WS=/home/dev/projects/webapp

# Names, types, modes, sizes, mtimes and checksums of everything in a folder.
listing()
{
	(cd "$1" && find . -printf '%p %y %m %s %T@ %l\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

# msg TS TEXT: one ClineMessage, compact.
msg() { jq -cn --argjson ts "$1" --arg t "$2" '{ts: $ts, type: "say", say: "text", text: $t}'; }

revisions() { sqlite3 "$STORE" 'SELECT count(*) FROM revisions'; }

# ---- 1. first mount, writes through it -------------------------------------------
say "first mount and writes through it"
mount_convfs_log "$M" "$T/log1" -o "store=$STORE"
log_has "$T/log1" "^convfs: info: took in from the folder underneath '$M': 2 new conversation folders, 7 new conversation files, 0 changed \(0 merged\), 4 plain files copied in, 0 kept beside" "the first take-in"
jq -c ". + [$(msg 1795306400001 'written through the mount')]" "$M/tasks/$A/ui_messages.json" >"$T/ui.json"
node_client write_atomic.js "$M/tasks/$A/ui_messages.json" "$T/ui.json"
view=$(echo "$M"/workspaces/webapp-*/tasks/$A)
[[ -d $view ]] || fail "task $A is not in the workspaces view"
printf '%s\n' '{"role":"user","content":"api message through the mount","ts":1795306400002}' >>"$view/messages.jsonl"
jq -c '. + [{"id":"1795306400003","ts":1795306400003,"task":"made through the mount","tokensIn":0,"tokensOut":0,"totalCost":0}]' \
	"$M/state/taskHistory.json" >"$T/hist.json"
node_client write_atomic.js "$M/state/taskHistory.json" "$T/hist.json"
printf '{"through":"the mount"}\n' >"$M/globalState.json"
unmount_convfs "$M"

# ---- 2. the editor runs before the mount: writes underneath -------------------------
say "writes into the folder underneath"
mkdir "$M/tasks/$NEW"
printf '[%s]' "$(msg $((NEW + 10)) 'a task made underneath')" >"$M/tasks/$NEW/ui_messages.json"
printf '[{"role":"user","content":"a task made underneath"}]' >"$M/tasks/$NEW/api_conversation_history.json"
printf '{"files_in_context":[],"model_usage":[]}' >"$M/tasks/$NEW/task_metadata.json"
jq -c ". + [{\"id\":\"$NEW\",\"ts\":$((NEW + 20)),\"task\":\"a task made underneath\",\"tokensIn\":1,\"tokensOut\":1,\"totalCost\":0,\"cwdOnTaskInitialization\":\"$WS\"}]" \
	"$M/state/taskHistory.json" >"$T/h" && cat "$T/h" >"$M/state/taskHistory.json"
jq -c ". + [$(msg 1795306500001 'written underneath')]" "$M/tasks/$A/ui_messages.json" >"$T/u" && cat "$T/u" >"$M/tasks/$A/ui_messages.json"
jq -c '. + [{"role":"assistant","content":"api message underneath","ts":1795306500002}]' \
	"$M/tasks/$A/api_conversation_history.json" >"$T/a" && cat "$T/a" >"$M/tasks/$A/api_conversation_history.json"
printf '{\n  "mcpServers": {"x": {}}\n}\n' >"$M/settings/cline_mcp_settings.json"
printf 'new underneath\n' >"$M/new-underneath.txt"
printf '{"written":"underneath"}\n' >"$M/globalState.json"
touch -d '2031-02-03 04:05:06 UTC' "$M/globalState.json"
rm -r "$M/tasks/$GONE"
rm "$M/workspaces/292fed87/workspaceState.json"
listing "$M" >"$T/under.before"

# ---- 3. the next mount takes it in ------------------------------------------------
say "the next mount"
mount_convfs_log "$M" "$T/log2" -o "store=$STORE"
[[ -f $M/tasks/$NEW/ui_messages.json ]] || problem "the task made underneath is not in tasks/"
ls -d "$M"/workspaces/webapp-*/tasks/$NEW >/dev/null 2>&1 || problem "the task made underneath is not in the workspaces view"
[[ $(jq -c . "$M/tasks/$NEW/ui_messages.json") == "[$(msg $((NEW + 10)) 'a task made underneath')]" ]] ||
	problem "the new task's messages are not as written underneath"
for t in 'written through the mount' 'written underneath'; do
	jq -e --arg t "$t" 'any(.[]; .text == $t)' "$M/tasks/$A/ui_messages.json" >/dev/null ||
		problem "ui_messages.json of task $A lacks the message $t"
done
[[ $(jq 'map(.ts) | . == sort' "$M/tasks/$A/ui_messages.json") == true ]] || problem "task $A's merged messages are not in ts order"
for t in 'api message through the mount' 'api message underneath'; do
	jq -e --arg t "$t" 'any(.[]; .content == $t)' "$M/tasks/$A/api_conversation_history.json" >/dev/null ||
		problem "api_conversation_history.json of task $A lacks '$t'"
	grep -q "$t" "$view/messages.jsonl" || problem "the view's messages.jsonl of task $A lacks '$t'"
done
for id in $A $GONE 1795306400003 $NEW; do
	jq -e --arg id "$id" 'any(.[]; .id == $id)' "$M/state/taskHistory.json" >/dev/null ||
		problem "taskHistory.json lacks the item $id"
done
[[ $(cat "$M/settings/cline_mcp_settings.json") == "$(printf '{\n  "mcpServers": {"x": {}}\n}')" ]] ||
	problem "the plain file changed underneath was not copied in"
[[ $(cat "$M/new-underneath.txt" 2>&1) == 'new underneath' ]] || problem "the plain file made underneath was not copied in"
[[ $(cat "$M/globalState.json") == '{"through":"the mount"}' ]] ||
	problem "the plain file changed on both sides does not keep the store's version"
[[ $(cat "$M/globalState.json.offline-20310203T040506" 2>&1) == '{"written":"underneath"}' ]] ||
	problem "the version underneath of the plain file changed on both sides is not beside it"
for f in tasks/$GONE/ui_messages.json tasks/$GONE/api_conversation_history.json tasks/$GONE/task_metadata.json \
	workspaces/292fed87/workspaceState.json; do
	[[ -s $M/$f ]] || problem "'$f', missing underneath, is gone from the store"
done
unmount_convfs "$M"
log_has "$T/log2" "^convfs: info: took in from the folder underneath '$M': 1 new conversation folders, 3 new conversation files, 3 changed \(3 merged\), 2 plain files copied in, 1 kept beside the store's as \*\.offline-\*, .*; 0 damaged, 0 unlisted tasks; 4 files missing underneath kept in the store$" \
	"the take-in with its counts"
log_has "$T/log2" "^convfs: warning: 'globalState.json' changed underneath and in the store; the store's version is kept, the one underneath is beside it as 'globalState.json.offline-20310203T040506'$" \
	"the plain file changed on both sides"
check_log "$T/log2" "^convfs: warning: 'globalState.json' changed underneath and in the store"
listing "$M" >"$T/under.after"
diff "$T/under.before" "$T/under.after" >"$T/under.diff" || problem "the folder underneath was modified:\n$(head -n 20 "$T/under.diff")"

# ---- 4. -o no_import, and the mount after it ---------------------------------------
say "-o no_import"
jq -c ". + [$(msg 1795306600001 'skipped by no_import')]" "$M/tasks/$A/ui_messages.json" >"$T/u" && cat "$T/u" >"$M/tasks/$A/ui_messages.json"
mount_convfs_log "$M" "$T/log3" -o "store=$STORE" -o no_import
jq -e 'any(.[]; .text == "skipped by no_import")' "$M/tasks/$A/ui_messages.json" >/dev/null &&
	problem "-o no_import took in a message written underneath"
unmount_convfs "$M"
! grep -q 'took in' "$T/log3" || problem "-o no_import logged a take-in:\n$(grep 'took in' "$T/log3")"
check_log "$T/log3"
mount_convfs_log "$M" "$T/log4" -o "store=$STORE"
jq -e 'any(.[]; .text == "skipped by no_import")' "$M/tasks/$A/ui_messages.json" >/dev/null ||
	problem "the mount after -o no_import did not take in what it skipped"
jq -e 'any(.[]; .text == "written through the mount")' "$M/tasks/$A/ui_messages.json" >/dev/null ||
	problem "the second take-in lost the message written through the mount"
unmount_convfs "$M"
log_has "$T/log4" "^convfs: info: took in from the folder underneath '$M': 0 new conversation folders, 0 new conversation files, 1 changed \(1 merged\), 0 plain files copied in, 0 kept beside .*; 0 files missing underneath" \
	"the take-in after -o no_import"
check_log "$T/log4"

# ---- 5. nothing changed: nothing logged, nothing committed -------------------------
say "nothing changed"
revs=$(revisions)
rows=$(sqlite3 "$STORE" 'SELECT count(*), sum(gone), sum(mtime_ns % 1000003), sum(rev), sum(ino % 1000003) FROM underneath')
mount_convfs_log "$M" "$T/log5" -o "store=$STORE"
unmount_convfs "$M"
! grep -q 'took in' "$T/log5" || problem "a mount with nothing changed logged a take-in:\n$(grep 'took in' "$T/log5")"
check_log "$T/log5"
[[ $(revisions) == "$revs" ]] || problem "a mount with nothing changed made $(($(revisions) - revs)) revisions"
[[ $(sqlite3 "$STORE" 'SELECT count(*), sum(gone), sum(mtime_ns % 1000003), sum(rev), sum(ino % 1000003) FROM underneath') == "$rows" ]] ||
	problem "a mount with nothing changed changed what the store saw underneath"


# ---- 6. one difference alone is found ----------------------------------------------
# A mount looks for any difference first: the top level on one thread, then
# each entry one level down (a task folder, and all below it) taken by one
# of many threads; each kind of difference, alone, must still reach the
# take-in: a new file at the top, a new file in a task folder, a file in a
# task folder rewritten in place (its folder's mtime unchanged, and every
# path the store knows still there), a file gone.
say "one difference alone"
# alone N WHAT PATTERN: mounts, unmounts, and checks that the take-in logged PATTERN.
alone()
{
	mount_convfs_log "$M" "$T/log6-$1" -o "store=$STORE"
	unmount_convfs "$M"
	log_has "$T/log6-$1" "^convfs: info: took in from the folder underneath '$M': $3" "$2 alone"
	check_log "$T/log6-$1"
}
echo 'top' >"$M/alone-top.txt"
alone 1 "a new file at the top" "0 new conversation folders, 0 new conversation files, 0 changed \(0 merged\), 1 plain files copied in, .*; 0 files missing underneath"
echo 'deep' >"$M/tasks/$A/alone-deep.txt"
alone 2 "a new file in a task folder" "0 new conversation folders, 0 new conversation files, 0 changed \(0 merged\), 1 plain files copied in, .*; 0 files missing underneath"
dir_mtime=$(stat -c %Y "$M/tasks/$A")
echo 'deep, rewritten in place' >"$M/tasks/$A/alone-deep.txt"
[[ $(stat -c %Y "$M/tasks/$A") == "$dir_mtime" ]] || fail "rewriting a file in place moved its folder's mtime"
alone 3 "a file in a task folder rewritten in place" "0 new conversation folders, 0 new conversation files, 0 changed \(0 merged\), 1 plain files copied in, .*; 0 files missing underneath"
rm "$M/tasks/$A/alone-deep.txt"
alone 4 "a file gone" "0 new conversation folders, 0 new conversation files, 0 changed \(0 merged\), 0 plain files copied in, .*; 1 files missing underneath"

# ---- 7. the mount answers while the walk goes on ------------------------------------
# Once the top level is as seen, the mount answers, and the rest of the check
# goes on behind it: the load of what the store saw, then the walk. Both are
# made to begin late here (CONVFS_WALK_DELAY_MS: the load that long after
# mounting, the walk as long again), so that the requests below come first.
# Before the load, a request looks at its own task folder against that
# folder's rows; after it, it looks at it with the walk's check (a task
# folder no thread has taken yet). Either way it must not wait for the walk
# where nothing changed, and where something did it must wait for the
# take-in, never read the store's older version. A listing of tasks/ must
# wait for the walk, and walk what no thread has taken itself.
say "the mount answers while the walk goes on"
late=$((SLOW > 1 ? 12000 : 2000)) # ms; a mount under valgrind takes up to 4 s (the stat must come before the load)
# walk_late N: mounts with the check late, as log7-N.
walk_late() { CONVFS_WALK_DELAY_MS=$late mount_convfs_log "$M" "$T/log7-$1" -o "store=$STORE"; }
# at_once WHAT PATH: a stat of PATH must not have waited for the walk (since $start).
at_once()
{
	stat "$M/$2" >/dev/null || problem "$2 cannot be stat'ed ($1)"
	ms=$((($(date +%s%N) - start) / 1000000))
	((ms < late / 2)) || problem "$1: took $ms ms, waiting for the walk (begun $late ms late)"
}
# rewrite_in_place N: a message added to task A's ui_messages.json underneath, its folder's mtime kept.
rewrite_in_place()
{
	jq -c ". + [$(msg $((1795306500000 + $1)) "rewritten underneath $1")]" "$M/tasks/$A/ui_messages.json" >"$T/ui7.json"
	dir_mtime=$(stat -c %Y "$M/tasks/$A")
	cat "$T/ui7.json" >"$M/tasks/$A/ui_messages.json"
	[[ $(stat -c %Y "$M/tasks/$A") == "$dir_mtime" ]] || fail "rewriting a file in place moved its folder's mtime"
}
# merged_at_once N WHEN: task A's messages, read now, hold rewrite_in_place N's.
merged_at_once()
{
	jq -e --arg t "rewritten underneath $1" 'any(.[]; .text == $t)' "$M/tasks/$A/ui_messages.json" >/dev/null ||
		problem "read $2, a conversation rewritten underneath shows the store's older version"
}
rewrite_in_place 1
start=$(date +%s%N)
walk_late 1
at_once "mounting and a stat before the load" state/taskHistory.json
merged_at_once 1 "before the load"
unmount_convfs "$M"
rewrite_in_place 2
walk_late 2
sleep "$((late * 6 / 5))e-3" # the load is done, the walk not begun
start=$(date +%s%N)
at_once "a stat after the load, before the walk" settings/cline_mcp_settings.json
merged_at_once 2 "after the load, before the walk"
unmount_convfs "$M"
for n in 1 2; do
	log_has "$T/log7-$n" "^convfs: info: took in from the folder underneath '$M': 0 new conversation folders, 0 new conversation files, 1 changed \(1 merged\)" \
		"the conversation rewritten underneath ($n)"
	check_log "$T/log7-$n"
done
NEW2=1795500000000
mkdir "$M/tasks/$NEW2"
echo "[$(msg $((NEW2 + 10)) 'a task the walk finds')]" >"$M/tasks/$NEW2/ui_messages.json"
walk_late 3
ls "$M/tasks" | grep -qx "$NEW2" || problem "listed right after mounting, tasks/ lacks the folder made underneath"
unmount_convfs "$M"
log_has "$T/log7-3" "^convfs: info: took in from the folder underneath '$M': 1 new conversation folders, 1 new conversation files, 0 changed" \
	"the task folder made underneath"
check_log "$T/log7-3" "^convfs: warning: task folder 'tasks/$NEW2' is not listed in state/taskHistory.json; kept as it is$"
# Nothing changed: a listing of tasks/ after the load must not wait for the
# walk's threads (at the lowest priority, they may get no CPU on a busy
# machine): it looks at what they have not taken itself.
walk_late 4
sleep "$((late * 6 / 5))e-3" # the load is done, the walk not begun
start=$(date +%s%N)
ls "$M/tasks" | grep -qx "$NEW2" || problem "tasks/ lacks $NEW2, taken in before"
ms=$((($(date +%s%N) - start) / 1000000))
((ms < late / 2)) || problem "a listing of tasks/ after the load took $ms ms: it waited for the walk's threads (begun $late ms late)"
unmount_convfs "$M"
check_log "$T/log7-4"

# ---- 8. a request that waits holds up no other ----------------------------------------
# One worker at a time reads the kernel's requests and serves what it read
# itself (fs/kernel/loop.c); when a request keeps it, another worker must take over
# reading, and more workers must start when those wait too. Listings of the
# top-level folders made before the check's load wait for its end, each in a
# worker of its own; a stat made meanwhile must not wait behind them. (Not
# workspaces/: the kernel holds up every lookup in the root while the
# view's own lookup waits, whatever the daemon's loop.)
say "a request that waits holds up no other"
walk_late 5
start=$(date +%s%N)
listings=()
for d in tasks settings state; do
	ls "$M/$d" >"$T/ls8-$d" &
	listings+=($!)
done
sleep 0.3 # the listings wait in the daemon
at_once "a stat while 3 listings wait for the check" globalState.json
wait "${listings[@]}"
grep -qx "$NEW2" "$T/ls8-tasks" || problem "tasks/, listed while the check waited, lacks $NEW2"
grep -qx taskHistory.json "$T/ls8-state" || problem "state/, listed while the check waited, lacks taskHistory.json"
unmount_convfs "$M"
check_log "$T/log7-5"

pass
