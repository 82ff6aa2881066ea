#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# undo.sh: `convfs undo [--apply] TASK_DIR N`, the agent's edits after a
# checkpoint taken back in the workspace, and never the user's. Over the
# 1.0.10 fixture (made by the real Cline CLI 1.0.10: its agent wrote
# hello.txt between the task's two checkpoints), the workspace being the
# latest checkpoint's files/ copied out (--workspace: the path the task
# recorded is another machine's).
#
#   A. The user wrote notes.txt and changed README.md since (files the
#      agent never touched). The dry run lists "remove hello.txt" and changes
#      nothing; --apply removes hello.txt, copies it into the backup folder
#      it names first, and leaves the user's files as they were: the
#      workspace is checkpoint 1's files/ plus the user's edits. Run again:
#      nothing to undo.
#   B. The user also changed hello.txt since the latest checkpoint: it is
#      refused (a file the agent made and the user changed cannot be taken
#      back around the user's change), the whole undo with it: exit 1, the
#      workspace untouched.
#   C. The task goes on (in the mount, as the client would): the agent
#      changes line 2 of a ten-line story.txt between a third and a fourth
#      checkpoint (its files_in_context says so), and the user then changes
#      line 9 in the workspace. Undo of checkpoint 3 merges three-way: line 2
#      is as at checkpoint 3 again, line 9 the user's; hello.txt, which the
#      agent wrote before checkpoint 3, stays. Then the user changes line 2
#      too: refused, nothing changed.
#   D. What is not a task folder, a checkpoint the task lacks, and a file
#      of the workspace that is a symlink out of it (never written
#      through), each refused with a line that says why.

. "$(dirname "$0")/lib.sh"

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
TASK=1795306331217

mnt=$(fixture_extract 1.0.10 "$T/a")
store=$T/a/store.db
mount_convfs "$mnt" "$store"
V=$(echo "$mnt"/workspaces/*/tasks/$TASK)
[[ -d $V ]] || fail "no view folder of task $TASK"
C=$V/checkpoints
mapfile -t ck < <(ls "$C")
((${#ck[@]} == 2)) || fail "the fixture's task shows ${#ck[@]} checkpoints (${ck[*]}); expected 2"
W=$T/work
BK=$T/backup

# workspace_at N: the workspace as checkpoint N (0-based in ck) left it.
workspace_at()
{
	rm -rf "$W"
	mkdir -p "$W"
	cp -a "$C/${ck[$1]}/files/." "$W/"
	chmod -R u+w "$W"
}

# undo ARGS...: convfs undo with the test's workspace; output in $T/undo.out, status in $rc.
undo()
{
	rc=0
	"$CONVFS" undo --workspace "$W" "$@" >"$T/undo.out" 2>&1 || rc=$?
}

snapshot() { (cd "$W" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

# ---- A. the agent's file taken back, the user's kept ---------------------------
say "A. the agent's hello.txt taken back, the user's edits kept"
workspace_at 1
[[ -f $W/hello.txt ]] || fail "the latest checkpoint has no hello.txt: $(ls "$W")"
echo "the user's notes" >"$W/notes.txt"
echo "a line the user added" >>"$W/README.md" 2>/dev/null || echo "the user's README" >"$W/README.md"
cp "$W/README.md" "$T/readme.want"
snapshot >"$T/before"
undo "$V" 1
((rc == 0)) || problem "A: the dry run exited $rc:\n$(cat "$T/undo.out")"
grep -q '^  remove   hello.txt (the agent made it)$' "$T/undo.out" ||
	problem "A: the dry run does not say it would remove hello.txt:\n$(cat "$T/undo.out")"
grep -q '^dry run: nothing changed' "$T/undo.out" || problem "A: the dry run does not say it changed nothing:\n$(cat "$T/undo.out")"
! grep -q 'notes.txt\|README.md' "$T/undo.out" || problem "A: the dry run names a file of the user's:\n$(cat "$T/undo.out")"
snapshot | cmp -s - "$T/before" || problem "A: the dry run changed the workspace"
undo --apply --backup "$BK" "$V" 001
((rc == 0)) || problem "A: --apply exited $rc:\n$(cat "$T/undo.out")"
grep -q "^undone; what it replaced or removed is in $BK\$" "$T/undo.out" ||
	problem "A: --apply does not name the backup folder:\n$(cat "$T/undo.out")"
[[ ! -e $W/hello.txt ]] || problem "A: hello.txt, which the agent made after checkpoint 1, is still there"
same "$BK/hello.txt" "$C/${ck[1]}/files/hello.txt" "A: the backup of hello.txt"
same "$W/README.md" "$T/readme.want" "A: README.md, the user's edit"
[[ $(cat "$W/notes.txt") == "the user's notes" ]] || problem "A: notes.txt, the user's file, changed"
rm "$W/notes.txt"
cp "$C/${ck[0]}/files/README.md" "$W/README.md" 2>/dev/null || rm -f "$W/README.md"
diff -r "$W" "$C/${ck[0]}/files" >"$T/a.diff" 2>&1 ||
	problem "A: but for the user's edits, the workspace is not checkpoint 1's files/:\n$(head -n 20 "$T/a.diff")"
undo --apply --backup "$BK.2" "$V" 1
((rc == 0)) && grep -q '^nothing to undo$' "$T/undo.out" ||
	problem "A: a second undo did not find nothing to undo (exit $rc):\n$(cat "$T/undo.out")"
[[ ! -e $BK.2 ]] || problem "A: a second undo, with nothing to do, made a backup folder"

# ---- B. the user changed the agent's file too: refused --------------------------
say "B. the user changed hello.txt too: refused"
workspace_at 1
echo "the user's line" >>"$W/hello.txt"
snapshot >"$T/before"
undo --apply --backup "$BK.b" "$V" 1
((rc == 1)) || problem "B: undo exited $rc; expected 1 (refused):\n$(cat "$T/undo.out")"
grep -q '^  refuse   hello.txt: changed in the workspace since the latest checkpoint$' "$T/undo.out" &&
	grep -q '^refused: 1 file(s) (above); nothing changed$' "$T/undo.out" ||
	problem "B: undo does not say it refused hello.txt:\n$(cat "$T/undo.out")"
snapshot | cmp -s - "$T/before" || problem "B: a refused undo changed the workspace"
[[ ! -e $BK.b ]] || problem "B: a refused undo made a backup folder"

# ---- C. a three-way merge around the user's change -----------------------------
say "C. the agent's change of story.txt taken back around the user's"
GD=$(echo "$mnt"/checkpoints/*/.git)
[[ -d $GD ]] || fail "no shadow repository in the fixture"
workspace_at 1
g() { git --git-dir="$GD" --work-tree="$W" -c user.name=Cline -c user.email=c@cline.bot "$@"; }
T0=$(jq '[.[] | .ts] | max' "$mnt/tasks/$TASK/ui_messages.json")
seq -f 'story line %g' 1 10 >"$W/story.txt"
g add -A && g commit -q -m "checkpoint 3"
H3=$(g rev-parse HEAD)
sed -i 's/^story line 2$/story line 2, as the agent wrote it/' "$W/story.txt"
g add -A && g commit -q -m "checkpoint 4"
H4=$(g rev-parse HEAD)
# What the client writes: two checkpoint messages, and the agent's edit between them.
jq -c --arg h3 "$H3" --arg h4 "$H4" --argjson t "$T0" '. + [
	{ts: ($t + 1000), type: "say", say: "checkpoint_created", lastCheckpointHash: $h3},
	{ts: ($t + 3000), type: "say", say: "checkpoint_created", lastCheckpointHash: $h4}]' \
	"$mnt/tasks/$TASK/ui_messages.json" >"$T/ui.json"
jq -c --argjson t "$T0" '.files_in_context += [{path: "story.txt", record_state: "active",
	record_source: "cline_edited", cline_read_date: ($t + 2000), cline_edit_date: ($t + 2000),
	user_edit_date: null}]' "$mnt/tasks/$TASK/task_metadata.json" >"$T/meta.json"
cp "$T/ui.json" "$mnt/tasks/$TASK/ui_messages.json"
cp "$T/meta.json" "$mnt/tasks/$TASK/task_metadata.json"
mapfile -t ck < <(ls "$C")
((${#ck[@]} == 4)) || fail "C: the task shows ${#ck[@]} checkpoints (${ck[*]}); expected 4"
sed -i 's/^story line 9$/story line 9, as the user wrote it/' "$W/story.txt"
undo --apply --backup "$BK.c" "$V" 3
((rc == 0)) || problem "C: undo exited $rc:\n$(cat "$T/undo.out")"
grep -q '^  merge    story.txt (changed since the latest checkpoint too: that change is kept)$' "$T/undo.out" ||
	problem "C: undo does not say it merged story.txt:\n$(cat "$T/undo.out")"
seq -f 'story line %g' 1 10 | sed 's/^story line 9$/story line 9, as the user wrote it/' >"$T/story.want"
same "$W/story.txt" "$T/story.want" "C: story.txt after the merge"
grep -q 'as the agent wrote it' "$BK.c/story.txt" || problem "C: the backup of story.txt is not what undo replaced"
[[ -f $W/hello.txt ]] || problem "C: hello.txt, written before checkpoint 3, was taken back too"
undo --apply --backup "$BK.c2" "$V" 3
((rc == 0)) && grep -q '^  already  story.txt' "$T/undo.out" && grep -q '^nothing to undo$' "$T/undo.out" ||
	problem "C: after the merge, undo again does not find story.txt already taken back (exit $rc):\n$(cat "$T/undo.out")"
# The user rewrites the agent's line: no merge without conflict.
cp "$C/${ck[3]}/files/story.txt" "$W/story.txt"
chmod u+w "$W/story.txt"
sed -i 's/^story line 2, as the agent wrote it$/story line 2, as the user rewrote it/' "$W/story.txt"
snapshot >"$T/before"
undo --apply --backup "$BK.c3" "$V" 3
((rc == 1)) && grep -q '^  refuse   story.txt: changed in the workspace since the latest checkpoint, where the agent' "$T/undo.out" ||
	problem "C: a conflicting change of the user's was not refused (exit $rc):\n$(cat "$T/undo.out")"
snapshot | cmp -s - "$T/before" || problem "C: a refused undo changed the workspace"

# ---- D. wrong input ---------------------------------------------------------------
say "D. what undo refuses"
undo "$mnt/workspaces" 1
((rc == 1)) && grep -q 'has no checkpoints/' "$T/undo.out" || problem "D: a folder that is no task: exit $rc, $(cat "$T/undo.out")"
undo "$V" 9
((rc == 1)) && grep -q "has no checkpoint '9' (it has 001 to 004)" "$T/undo.out" ||
	problem "D: a checkpoint the task lacks: exit $rc, $(cat "$T/undo.out")"
rc=0
"$CONVFS" undo "$V" >/dev/null 2>&1 || rc=$?
((rc == 2)) || problem "D: undo without N exited $rc; expected 2"
# story.txt a symlink out of the workspace: never written through.
workspace_at 3
mkdir -p "$T/outside"
mv "$W/story.txt" "$T/outside/story.txt"
ln -s "$T/outside/story.txt" "$W/story.txt"
cp "$T/outside/story.txt" "$T/outside.want"
undo --apply --backup "$BK.d" "$V" 3
((rc == 1)) && grep -q '^  refuse   story.txt: not a regular file in the workspace, or under a symlink$' "$T/undo.out" ||
	problem "D: a symlink in the workspace was not refused (exit $rc):\n$(cat "$T/undo.out")"
same "$T/outside/story.txt" "$T/outside.want" "D: the file a symlink in the workspace points to"
"$CONVFS" undo --help | grep -q -- '--apply' || problem "D: convfs undo --help does not say --apply"

unmount_convfs "$mnt"
check_log "$store.log"
pass
