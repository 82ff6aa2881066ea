#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sessions.sh: the Cline CLI 3.x layout is managed like the classic one.
#
# Over the 3.0.65 fixture's data/ folder (what ~/.cline/data holds) it proves
# that
#   - the sessions are taken in: each <id>.messages.json reads back byte for
#     byte, and is a doc of the store (one row a message, every save a
#     revision), the manifest <id>.json too; db/*.db stay plain files;
#   - the view shows each session as a task of its workspace (from the
#     manifest's workspace_root): messages.jsonl one message a line, jq -c
#     reads every line, task.json is the manifest;
#   - a save as the CLI makes it (open without O_TRUNC, write, ftruncate,
#     close) is one commit at close: a reader that opened before still reads
#     the old version whole;
#   - two writers that read the same version and each add a message (by id)
#     both keep theirs; `>>` to messages.jsonl adds a message inside the
#     object's array; `cat > messages.jsonl` of its lines with one edited
#     rewrites the messages and keeps the object's other members; a save that is not a session's shape is refused with
#     EINVAL at close and changes nothing;
#   - a subagent's conversation (<stem>.messages.json) is a doc of the session
#     and shows as subagents/<stem>/messages.jsonl in its folder;
#   - sqlite3 works on db/sessions.db in WAL mode, through the mount;
#   - rm -r of the session in the view moves it to the trash, mv brings it back;
#   - the daemon logs no warning but the refusal this test provokes.

. "$(dirname "$0")/lib.sh"

S1=1795505492931_y5z6u
S2=1795505502012_k89ya
pristine=$(fixture_extract 3.0.65 "$T/pristine")/data
mnt=$(fixture_extract 3.0.65 "$T/mnt")/data
store=$T/store.db
mount_convfs "$mnt" "$store"
M1=$mnt/sessions/$S1/$S1.messages.json
V1=$mnt/workspaces/webapp-691006855/tasks/$S1
V2=$mnt/workspaces/api-server-2325622928/tasks/$S2

# revisions PATH: how many revisions of PATH the store holds.
revisions()
{
	sqlite3 "$store" "SELECT count(*) FROM revisions WHERE path = '$1'"
}

say "taken in"
for s in $S1 $S2; do
	for f in $s.messages.json $s.json; do
		same "$mnt/sessions/$s/$f" "$pristine/sessions/$s/$f" "sessions/$s/$f read through the mount"
	done
done
got=$(sqlite3 "$store" "SELECT group_concat(format || ':' || nelems, ' ') FROM docs WHERE path LIKE 'sessions/$S1/%' ORDER BY path")
[[ $got == "1:0 0:4" || $got == "0:4 1:0" ]] || problem "the store keeps sessions/$S1 as '$got'; expected the manifest whole (1:0) and 4 messages (0:4)"
same "$mnt/db/sessions.db" "$pristine/db/sessions.db" "db/sessions.db (a plain file)"
# Kept per mount (each mount's clients their own: SQLite's locks and shared
# memory hold within one mount), in this mount's folder of the backing tree.
[[ $(find "$T/store.db.files/.convfs-mounts" -path '*/db/sessions.db' -type f | wc -l) == 1 ]] ||
	problem "db/sessions.db is not a plain file of this mount's folder of the backing tree"
[[ ! -e $T/store.db.files/db ]] || problem "db/ is at the top of the backing tree, shared by every mount"

say "the view"
[[ -d $V1 && -d $V2 ]] || problem "the view does not show the sessions under their workspaces:\n$(cd "$mnt/workspaces" && find . | sort)"
n=$(wc -l <"$V1/messages.jsonl")
want=$(jq '.messages | length' "$pristine/sessions/$S1/$S1.messages.json")
((n == want)) || problem "messages.jsonl has $n lines; the session has $want messages"
jq -e -s "length == $want" "$V1/messages.jsonl" >/dev/null || problem "jq cannot read every line of messages.jsonl"
[[ $(jq -r '.[0].id' <(jq -s . "$V1/messages.jsonl")) == $(jq -r '.messages[0].id' "$M1") ]] ||
	problem "the first line of messages.jsonl is not the first message"
same "$V1/task.json" "$pristine/sessions/$S1/$S1.json" "task.json of a session (its manifest)"
[[ ! -e $V1/ui_messages.jsonl && ! -e $V1/metadata.json ]] || problem "a session shows files it does not have"
grep -rq "Created hello.txt" "$mnt/workspaces" || problem "grep -r finds nothing of the sessions in workspaces/"

say "a save as the CLI makes it: one commit at close"
jq '.messages += [{"id":"m-new","role":"user","content":[{"type":"text","text":"one more"}],"ts":1795505499000}]' \
	"$M1" >"$T/next.json"
before=$(revisions "sessions/$S1/$S1.messages.json")
exec 7<"$M1" # a reader that opened the old version
node_client write_in_place.js --bun "$M1" "$T/next.json" || problem "the in-place save failed"
same "$M1" "$T/next.json" "the session file after the save"
out=$(cmp - "$pristine/sessions/$S1/$S1.messages.json" <&7 2>&1) || problem "a reader that opened before the save does not read the old version: $out"
exec 7<&-
after=$(revisions "sessions/$S1/$S1.messages.json")
((after == before + 1)) || problem "the save made $((after - before)) revisions; expected 1"

say "two writers, one message each"
# Two processes (a writer is a process) read the same version, then save in turn.
for w in a b; do
	node -e '
		const fs = require("fs");
		const [file, id, go] = process.argv.slice(1);
		const doc = JSON.parse(fs.readFileSync(file, "utf8"));
		fs.writeFileSync(go + ".read", "");
		while (!fs.existsSync(go)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
		doc.messages.push({ id, role: "user", content: [{ type: "text", text: "from " + id }], ts: 1795505499500 });
		const fd = fs.openSync(file, "r+");
		const data = Buffer.from(JSON.stringify(doc, null, 2));
		fs.writeSync(fd, data, 0, data.length, 0);
		fs.ftruncateSync(fd, data.length);
		fs.closeSync(fd);' "$M1" "writer-$w" "$T/go-$w" &
	eval "pid_$w=\$!"
done
{ wait_for "$T/go-a.read" && wait_for "$T/go-b.read"; } || problem "the two writers did not read the session"
touch "$T/go-a"
wait "$pid_a" || problem "writer a failed"
touch "$T/go-b"
wait "$pid_b" || problem "writer b failed"
got=$(jq -r '[.messages[].id] | map(select(startswith("writer-"))) | join(" ")' "$M1")
[[ $got == "writer-a writer-b" ]] || problem "after two writers the session has '$got'; expected both messages"

say ">> to messages.jsonl"
line='{"id":"m-appended","role":"user","content":[{"type":"text","text":"appended"}],"ts":1795505499900}'
printf '%s\n' "$line" >>"$V1/messages.jsonl" || problem ">> to a session's messages.jsonl failed"
[[ $(jq -c '.messages[-1]' "$M1") == "$line" ]] || problem "the appended line is not the session's last message"
jq -e '.system_prompt | length > 0' "$M1" >/dev/null || problem "the session lost its members after the array"
[[ $(tail -n 1 "$V1/messages.jsonl") == "$line" ]] || problem "messages.jsonl does not end with the appended line"

say "a rewrite of messages.jsonl"
jq -c 'select(.id == "m-appended").content[0].text = "rewritten"' "$V1/messages.jsonl" >"$T/rewrite.jsonl"
jq '.messages | length' "$M1" >"$T/count.before"
jq -c 'del(.messages, .updated_at)' "$M1" >"$T/members.before"
cat "$T/rewrite.jsonl" >"$V1/messages.jsonl" || problem "cat > a session's messages.jsonl failed"
same "$V1/messages.jsonl" "$T/rewrite.jsonl" "messages.jsonl after its rewrite"
jq -c '.messages[]' "$M1" | cmp -s - "$T/rewrite.jsonl" ||
	problem "after a rewrite of messages.jsonl the session's messages are not its lines"
jq -c 'del(.messages, .updated_at)' "$M1" | cmp -s - "$T/members.before" ||
	problem "a rewrite of messages.jsonl changed the session's other members: $(jq -c 'del(.messages) | keys' "$M1")"
[[ $(jq '.messages | length' "$M1") == $(cat "$T/count.before") ]] || problem "a rewrite changed the number of messages"

say "a save that is not a session's shape"
cp "$M1" "$T/before.json"
echo '[1, 2]' >"$T/bad.json"
out=$(node_client write_in_place.js --bun "$M1" "$T/bad.json" 2>&1) && problem "a save of a JSON array as a session succeeded"
[[ $out == *EINVAL* ]] || problem "a bad save failed, but not with EINVAL: $out"
same "$M1" "$T/before.json" "the session after a refused save"

say "a subagent's conversation"
sub=$mnt/sessions/$S1/sub-agent_1.messages.json
jq '.agent = "sub" | .messages = [.messages[0]]' "$M1" >"$sub" || problem "writing a subagent's conversation failed"
[[ $(sqlite3 "$store" "SELECT task_id FROM docs WHERE path = 'sessions/$S1/sub-agent_1.messages.json'") == "$S1" ]] ||
	problem "the subagent's conversation is not a doc of session $S1"
[[ $(wc -l <"$V1/subagents/sub-agent_1/messages.jsonl" 2>&1) == 1 ]] ||
	problem "the view does not show subagents/sub-agent_1/messages.jsonl with one line:\n$(ls -R "$V1")"

say "sqlite3 on db/sessions.db in WAL mode"
sqlite3 "$mnt/db/sessions.db" "PRAGMA journal_mode=WAL; CREATE TABLE convfs_test(x); INSERT INTO convfs_test VALUES (42);" \
	>/dev/null || problem "sqlite3 cannot write db/sessions.db in WAL mode"
[[ $(sqlite3 "$mnt/db/sessions.db" "SELECT x FROM convfs_test") == 42 ]] || problem "sqlite3 does not read back what it wrote"
sqlite3 "$mnt/db/sessions.db" "PRAGMA integrity_check" | grep -qx ok || problem "db/sessions.db fails its integrity check"

say "the trash"
rm -r "$V2" || problem "rm -r of a session in the view failed"
[[ ! -e $mnt/sessions/$S2/$S2.messages.json && -d $mnt/workspaces/.trash/$S2 ]] || problem "the removed session is not in the trash"
[[ $(wc -l <"$mnt/workspaces/.trash/$S2/messages.jsonl") == $(jq '.messages | length' "$pristine/sessions/$S2/$S2.messages.json") ]] ||
	problem "the trash does not show the session's messages"
mv "$mnt/workspaces/.trash/$S2" "$V2" || problem "mv from the trash failed"
same "$mnt/sessions/$S2/$S2.messages.json" "$pristine/sessions/$S2/$S2.messages.json" "the session back from the trash"

unmount_convfs "$mnt"
check_log "$store.log" "^convfs: warning: refusing to commit 'sessions/$S1/$S1\.messages\.json': not a JSON object"
pass
