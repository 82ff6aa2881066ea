#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# cache.sh: what the kernel caches of conversation files never shows a stale,
# torn or mixed version.
#
# Docs are read through the kernel's page cache and their attributes kept,
# by version (docs/ARCHITECTURE.md, "Caching"). Each check first makes the
# kernel hold the old version (stat and a whole read), then changes the doc,
# then looks at once, without waiting for any timeout. It proves that
#   - a reader that opened a version before a commit reads that version to its
#     end, whole, and fstat gives its size, even when the new version is
#     smaller and others stat and read the new one meanwhile (which sets the
#     kernel's size of the file); readers that open after the commit read the
#     new version, whole;
#   - right after a commit returns, stat and read give the new version, also
#     when the commit was a merge (the stored file differs from what its
#     writer wrote): two writers that each read the file, then save by
#     temp + rename (and again in place), both read back the merged bytes;
#   - a change through the view (>> to messages.jsonl) shows at once in the
#     compat file (tasks/<id>/api_conversation_history.json), while a reader
#     of the compat file open across it reads (and fstats) its own; a change of the
#     compat file at once in the view, a file and a task made through the
#     view at once in the compat folders' listings (which the kernel keeps),
#     and the task's removal in the view at once in the compat tree, and so
#     does its restore;
#   - the view's listings, which the kernel keeps too, at once after changes
#     made in the compat tree: a new version, a new checkpoint, a task moved
#     to a new workspace by its history item, a task removed (in the trash);
#   - a first walk of folders looks none of them up: their listings bring
#     their entries (READDIRPLUS);
#   - and that the kernel does keep them: a second read and stat of a doc that
#     did not change since its save by temp + rename (and 1 s, for the temp
#     file's entry to lapse) send the daemon no READ and no GETATTR (nor any
#     LOOKUP, where the kernel counts epochs), a find of unchanged folders
#     walked before no OPENDIR, RELEASEDIR, LOOKUP or GETATTR, and one of the
#     unchanged view no OPENDIR; and neither asks for more than a few listings
#     again (kept_listings()).
# Every step waits for files the processes write; the only waits for time
# are for the kernel's 1 s entry of a temp file renamed over a doc to lapse
# (hold_version).

. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || fail "jq is missing"
command -v fincore >/dev/null || fail "fincore (util-linux-extra) is missing"
M=$T/mnt
STORE=$T/store.db
TASK=1795306269021
DOC=$M/tasks/$TASK/ui_messages.json
API=$M/tasks/$TASK/api_conversation_history.json
VIEW=$M/workspaces/unknown/tasks/$TASK
mkdir -p "$M"
mount_convfs "$M" "$STORE"
mkdir -p "$M/tasks/$TASK"

# hold_version FILE...: makes the kernel hold each FILE's version node, its
# attributes and pages. A file just renamed into place keeps the temp file's
# entry (and node) for the kernel's 1 s; once that lapsed, a stat looks the doc
# up and gets the version node, and a read fills its pages.
hold_version()
{
	sleep 1.1
	stat "$@" >/dev/null
	cat "$@" >/dev/null
}

# resident FILE: how many bytes of FILE are in the kernel's page cache (whole pages).
resident()
{
	fincore --noheadings --bytes --output RES -- "$1" | tr -d ' '
}

# kept_listings WALK FOLDERS WHAT: a problem if WALK (requests counted by
# opcode) asked the daemon for the listings of more than an eighth of the
# FOLDERS it walked. The kernel keeps a folder's listing in the folder's page
# cache, and may reclaim those pages like any others: on the machines CI runs
# on, the kernel's proactive reclaim (DAMON, paging out memory it finds cold)
# takes a few listings' pages in a walk, and the walk lists those folders
# again. A listing not kept is asked for in every folder, two READDIRs each
# (its entries, then their end).
kept_listings()
{
	local n
	n=$(awk '{ for (i = 3; i <= NF; i++) if ($i == "READDIR") print $(i - 2) }' "$1")
	if ((${n:-0} * 4 > $2)); then
		problem "$3 asked the daemon for listings again: $n READDIR requests for $2 folders: $(cat "$1")"
	elif [[ -n $n ]]; then
		say "($3 sent $n READDIR requests for $2 folders: listings whose pages the kernel reclaimed)"
	fi
}

# size_and_bytes FILE: "size bytes-read": what stat says, and what a read gives.
size_and_bytes()
{
	echo "$(stat -c %s "$1") $(wc -c <"$1" | tr -d ' ')"
}

# ---- 1. a reader across a commit --------------------------------------------
say "a reader that opened before a commit reads its version whole"
node_client gen.js ui 3000 1 --size 700 >"$T/v1.json"
node_client gen.js ui 800 2 --size 500 >"$T/v2.json"
cat >"$T/reader.js" <<'EOF'
// reader.js FILE OUT DIR: reads 256 KiB, says so (DIR/read), waits for DIR/go,
// fstat()s the file (its size into DIR/size), reads to the end.
'use strict';
const fs = require('fs');
const [file, out, dir] = process.argv.slice(2);
const fd = fs.openSync(file, 'r');
const parts = [];
const buf = Buffer.alloc(65536);
let total = 0, n;
while (total < 262144 && (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0) {
	parts.push(Buffer.from(buf.subarray(0, n)));
	total += n;
}
fs.writeFileSync(dir + '/read', String(total));
while (!fs.existsSync(dir + '/go'))
	Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
fs.writeFileSync(dir + '/size', String(fs.fstatSync(fd).size));
while ((n = fs.readSync(fd, buf, 0, buf.length, null)) > 0)
	parts.push(Buffer.from(buf.subarray(0, n)));
fs.closeSync(fd);
fs.writeFileSync(out, Buffer.concat(parts));
EOF
for how in rename inplace; do
	say "... its version saved again by $how"
	node_client write_atomic.js "$DOC" "$T/v1.json"
	hold_version "$DOC" # v1's pages and size
	rm -rf "$T/r1"
	mkdir -p "$T/r1"
	node "$T/reader.js" "$DOC" "$T/r1.out" "$T/r1" &
	reader=$!
	wait_for "$T/r1/read" 30 || fail "the reader never read its first 256 KiB"
	# smaller, and read first, so its removals count
	if [[ $how == rename ]]; then
		node_client write_atomic.js "$DOC" "$T/v2.json"
	else
		node_client write_in_place.js "$DOC" "$T/v2.json"
	fi
	[[ $(size_and_bytes "$DOC") == "$(stat -c %s "$T/v2.json") $(stat -c %s "$T/v2.json")" ]] ||
		problem "right after the commit of v2 by $how (a reader of v1 still open), stat and read give '$(size_and_bytes "$DOC")'; expected v2's size $(stat -c %s "$T/v2.json") for both"
	same "$DOC" "$T/v2.json" "a read right after the commit of v2 by $how, with a reader of v1 open"
	touch "$T/r1/go"
	wait "$reader" || fail "the reader failed"
	same "$T/r1.out" "$T/v1.json" "the reader that opened v1 before its commit by $how (256 KiB read before, the rest after)"
	[[ $(cat "$T/r1/size") == "$(stat -c %s "$T/v1.json")" ]] ||
		problem "the reader of v1, after the commit of v2 by $how: fstat gives size $(cat "$T/r1/size"); expected v1's $(stat -c %s "$T/v1.json")"
	same "$DOC" "$T/v2.json" "a read once the reader of v1 closed ($how)"
	same "$DOC" "$T/v2.json" "a second read of v2 (from the kernel's cache; $how)"
	[[ $(size_and_bytes "$DOC") == "$(stat -c %s "$T/v2.json") $(stat -c %s "$T/v2.json")" ]] ||
		problem "once the reader of v1 closed, stat and read give '$(size_and_bytes "$DOC")'; expected $(stat -c %s "$T/v2.json") ($how)"
done

# ---- 2. stat and read right after a merged commit -----------------------------
cat >"$T/writer.js" <<'EOF'
// writer.js FILE HOW TEXT DIR: reads FILE (its merge base), says so (DIR/read),
// waits for DIR/go, saves it with one message more (HOW: rename or inplace),
// says so (DIR/done), waits for DIR/check, then prints "size bytes" of FILE
// into DIR/seen and its bytes into DIR/bytes.
'use strict';
const fs = require('fs');
const [file, how, text, dir] = process.argv.slice(2);
const wait = (f) => {
	while (!fs.existsSync(f))
		Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
};
const msgs = JSON.parse(fs.readFileSync(file, 'utf8'));
fs.writeFileSync(dir + '/read', '');
wait(dir + '/go');
msgs.push({ ts: 1795306500000 + msgs.length * 10 + (text.includes('writer B') ? 1 : 0), type: 'say', say: 'text', text });
const data = JSON.stringify(msgs);
if (how === 'rename') {
	const tmp = `${file}.tmp.${Date.now()}.${Math.random().toString(36).slice(2)}.json`;
	fs.writeFileSync(tmp, data);
	fs.statSync(tmp); // the kernel holds the temp file's attributes (its size: what was written)
	fs.renameSync(tmp, file);
} else {
	fs.writeFileSync(file, data);
}
fs.writeFileSync(dir + '/done', '');
wait(dir + '/check');
const size = fs.statSync(file).size;
const bytes = fs.readFileSync(file);
fs.writeFileSync(dir + '/bytes', bytes);
fs.writeFileSync(dir + '/seen', `${size} ${bytes.length}`);
EOF
for how in rename inplace; do
	say "two writers save by $how, the second merged: both read the merged version at once"
	node_client write_atomic.js "$DOC" "$T/v1.json"
	hold_version "$DOC"
	rm -rf "$T/a" "$T/b"
	mkdir -p "$T/a" "$T/b"
	node "$T/writer.js" "$DOC" "$how" "from writer A ($how)" "$T/a" &
	wa=$!
	node "$T/writer.js" "$DOC" "$how" "from writer B ($how)" "$T/b" &
	wb=$!
	wait_for "$T/a/read" 30 && wait_for "$T/b/read" 30 || fail "the writers never read the file"
	touch "$T/a/go"
	wait_for "$T/a/done" 30 || fail "writer A never saved"
	cat "$DOC" >/dev/null # the kernel holds A's version now
	touch "$T/b/go"
	wait_for "$T/b/done" 30 || fail "writer B never saved"
	touch "$T/a/check" "$T/b/check"
	wait "$wa" || fail "writer A failed"
	wait "$wb" || fail "writer B failed"
	cp "$DOC" "$T/merged.json"
	n=$(jq 'map(select(.text == "from writer A ('"$how"')" or .text == "from writer B ('"$how"')")) | length' "$T/merged.json")
	[[ $n == 2 ]] || problem "after two $how saves, the file holds $n of the 2 writers' messages; expected both (a merge)"
	want="$(stat -c %s "$T/merged.json") $(stat -c %s "$T/merged.json")"
	for w in a b; do
		[[ $(cat "$T/$w/seen") == "$want" ]] ||
			problem "writer ${w^^} ($how), right after B's merged save: stat and read give '$(cat "$T/$w/seen")'; expected '$want'"
		same "$T/$w/bytes" "$T/merged.json" "what writer ${w^^} ($how) read right after B's merged save"
	done
done

# ---- 3. the view and the compat tree --------------------------------------------
say "a change through the view shows at once in the compat file, and back"
node_client gen.js api 20 3 >"$T/api.json"
node_client write_atomic.js "$API" "$T/api.json"
hold_version "$API" "$VIEW/messages.jsonl"
# A reader of the compat file open across the change, which keeps its node
# at the name: its fstat gives its version's size.
rm -rf "$T/r3"
mkdir -p "$T/r3"
node "$T/reader.js" "$API" "$T/r3.out" "$T/r3" &
reader=$!
wait_for "$T/r3/read" 30 || fail "the reader of the compat file never read it"
line='{"role":"user","content":[{"type":"text","text":"appended through the view"}],"ts":1795306600001}'
printf '%s\n' "$line" >>"$VIEW/messages.jsonl"
touch "$T/r3/go"
wait "$reader" || fail "the reader of the compat file failed"
[[ $(cat "$T/r3/size") == "$(stat -c %s "$T/api.json")" ]] ||
	problem "a reader of the compat file, after >> to messages.jsonl: fstat gives size $(cat "$T/r3/size"); expected its version's $(stat -c %s "$T/api.json")"
same "$T/r3.out" "$T/api.json" "a reader of the compat file open across >> to messages.jsonl"
sz=$(stat -c %s "$API")
cp "$API" "$T/api.after"
[[ $sz == "$(stat -c %s "$T/api.after")" ]] ||
	problem "right after >> to messages.jsonl, stat of the compat file gives size $sz; a read gives $(stat -c %s "$T/api.after") bytes"
[[ $(jq -c '.[-1]' "$T/api.after") == "$line" ]] ||
	problem "right after >> to messages.jsonl, the compat file's last message is $(jq -c '.[-1]' "$T/api.after"); expected $line"
jq -c '. + [{"role":"assistant","content":[{"type":"text","text":"written through the compat file"}],"ts":1795306600002}]' \
	"$T/api.after" >"$T/api.next"
node_client write_atomic.js "$API" "$T/api.next"
[[ $(tail -n 1 "$VIEW/messages.jsonl") == "$(jq -c '.[-1]' "$T/api.next")" ]] ||
	problem "right after a save of the compat file, the view's last line is $(tail -n 1 "$VIEW/messages.jsonl")"
[[ $(stat -c %s "$API") == "$(stat -c %s "$T/api.next")" ]] && same "$API" "$T/api.next" "the compat file read back" ||
	problem "right after a save of the compat file, its size is $(stat -c %s "$API"); expected $(stat -c %s "$T/api.next")"

say "a file made through the view is listed at once in the compat folder"
ls "$M/tasks/$TASK" >/dev/null
ls "$M/tasks/$TASK" >"$T/ls.before" # the kernel keeps the listing
grep -q -x task_metadata.json "$T/ls.before" && fail "the task already has a task_metadata.json"
echo '{"files_in_context":[],"model_usage":[],"environment_history":[]}' >"$VIEW/metadata.json"
ls "$M/tasks/$TASK" >"$T/ls.after"
grep -q -x task_metadata.json "$T/ls.after" ||
	problem "right after metadata.json was made in the view, ls tasks/$TASK lists: $(tr '\n' ' ' <"$T/ls.after")"

say "a task made through the view is listed at once in tasks/"
ls "$M/tasks" >/dev/null
ls "$M/tasks" >/dev/null # kept
mkdir "$M/workspaces/unknown/tasks/1795306269100"
ls "$M/tasks" | grep -q -x 1795306269100 || problem "right after mkdir of a task in the view, ls tasks/ does not list it"

say "removing the task in the view shows at once in the compat tree, and its restore"
# Another task, so that tasks/ lists something with the task gone; a plain
# file in the task's folder, whose attributes the kernel keeps.
mkdir "$M/tasks/1795306269099"
echo '[]' >"$M/tasks/1795306269099/ui_messages.json"
echo notes >"$M/tasks/$TASK/notes.txt"
stat "$API" "$DOC" "$M/tasks/$TASK" "$M/tasks/$TASK/notes.txt" >/dev/null
ls "$M/tasks" >/dev/null
ls "$M/tasks" >"$T/tasks.before" # the kernel keeps the listing
grep -q -x "$TASK" "$T/tasks.before" || fail "ls tasks/ does not list $TASK"
rm -r "$VIEW"
for f in "$API" "$DOC" "$M/tasks/$TASK" "$M/tasks/$TASK/notes.txt"; do
	! stat "$f" >/dev/null 2>&1 || problem "right after the task's removal in the view, stat of ${f#"$M"/} still succeeds"
done
! ls "$M/tasks" | grep -q -x "$TASK" || problem "right after the task's removal in the view, ls tasks/ still lists it"
ls "$M/tasks" >/dev/null # kept again
mv "$M/workspaces/.trash/$TASK" "$VIEW"
ls "$M/tasks" | grep -q -x "$TASK" || problem "right after the task's restore, ls tasks/ does not list it"
[[ $(cat "$M/tasks/$TASK/notes.txt") == notes ]] || problem "right after the task's restore, its notes.txt is not back"
same "$API" "$T/api.next" "the compat file right after the task's restore"
[[ $(stat -c %s "$DOC") == "$(stat -c %s "$T/merged.json")" ]] ||
	problem "right after the task's restore, stat of ui_messages.json gives size $(stat -c %s "$DOC"); expected $(stat -c %s "$T/merged.json")"

say "the view's listings, which the kernel keeps, follow changes made in the compat tree at once"
# Each listing is read twice first (the second from the kernel's cache), then
# the change is made through the compat tree, and the view listed at once:
# within the 1 s the kernel keeps the view folders' attributes, so only the
# daemon telling it can make it list afresh. (Where the kernel counts epochs,
# the change's new epoch makes it look the folders up again, and their new
# mtimes drop their listings too: integration-cache-no_epochs is the run that
# tells the daemon's part.)
OTHER=1795306269099
VO=$M/workspaces/unknown/tasks/$OTHER
twice() { ls "$1" >/dev/null && ls "$1"; }
twice "$VO/versions" >"$T/versions.before"
echo '[{"ts":1795306269200,"type":"say","say":"text","text":"a second version"}]' >"$M/tasks/$OTHER/ui_messages.json"
(($(ls "$VO/versions" | wc -l) == $(wc -l <"$T/versions.before") + 1)) ||
	problem "right after a save of tasks/$OTHER/ui_messages.json, its versions/ lists: $(ls "$VO/versions" | tr '\n' ' ')"
twice "$VIEW/checkpoints" >"$T/ckpts.before"
jq -c '. + [{"ts":1795306600003,"type":"say","say":"checkpoint_created","lastCheckpointHash":"00000000000000000000000000000000deadbeef","conversationHistoryIndex":1}]' \
	"$DOC" >"$T/ui.ckpt"
node_client write_atomic.js "$DOC" "$T/ui.ckpt"
(($(ls "$VIEW/checkpoints" | wc -l) == $(wc -l <"$T/ckpts.before") + 1)) ||
	problem "right after a checkpoint was added to tasks/$TASK/ui_messages.json, its checkpoints/ lists $(ls "$VIEW/checkpoints" | wc -l) folders; $(wc -l <"$T/ckpts.before") before"
twice "$M/workspaces" >/dev/null
twice "$M/workspaces/unknown/tasks" >/dev/null
echo "[{\"id\":\"$OTHER\",\"ts\":1795306269200,\"task\":\"moved\",\"tokensIn\":0,\"tokensOut\":0,\"totalCost\":0,\"cwdOnTaskInitialization\":\"/home/dev/projects/moved-here\"}]" >"$T/hist.json"
mkdir -p "$M/state"
node_client write_atomic.js "$M/state/taskHistory.json" "$T/hist.json"
ws=$(ls "$M/workspaces" | grep -E '^moved-here-[0-9]+$') ||
	problem "right after a history item named a new workspace, ls workspaces/ lists: $(ls "$M/workspaces" | tr '\n' ' ')"
! ls "$M/workspaces/unknown/tasks" | grep -q -x "$OTHER" ||
	problem "right after its history item named a workspace, workspaces/unknown/tasks/ still lists $OTHER"
if [[ -n $ws ]]; then
	twice "$M/workspaces/$ws/tasks" | grep -q -x "$OTHER" || problem "workspaces/$ws/tasks/ does not list $OTHER"
	twice "$M/workspaces/.trash" >/dev/null
	rm -r "$M/tasks/$OTHER"
	! ls "$M/workspaces/$ws/tasks" | grep -q -x "$OTHER" ||
		problem "right after rm -r tasks/$OTHER, workspaces/$ws/tasks/ still lists it"
	ls "$M/workspaces/.trash" | grep -q -x "$OTHER" ||
		problem "right after rm -r tasks/$OTHER, workspaces/.trash/ does not list it"
fi

unmount_convfs "$M"
check_log "$STORE.log"

# ---- 4. what the kernel keeps -------------------------------------------------
say "a second read of an unchanged doc reaches the daemon only to look it up and open it"
# -d logs each request the daemon gets, one line each ("opcode: READ").
mount_convfs "$M" "$STORE" -d
# Saved by temp + rename first, as the client saves: the doc's name is on the
# temp file's node (read with direct I/O) until the entry lapses, after 1 s.
node_client write_atomic.js "$DOC" "$T/merged.json"
hold_version "$DOC"
# The first read's pages are in the kernel's page cache now (fincore: the
# bytes of a file that are); a doc read with direct I/O would have none.
size=$(stat -c %s "$DOC")
(($(resident "$DOC") >= size)) || problem "right after a read of $DOC, the kernel holds $(resident "$DOC") of its $size bytes"
# (The first read's pages came from the daemon, after which the kernel asks
# once for the access time, at the next stat.)
stat "$DOC" >/dev/null
kept=$(resident "$DOC")
before=$(wc -l <"$STORE.log")
same "$DOC" "$T/merged.json" "a second read"
stat "$DOC" >/dev/null
# The doc's node is the one opened. (The task's folder may be asked for its
# attributes, kept 1 s, when a slow run walks through it after they lapsed.)
tail -n +"$((before + 1))" "$STORE.log" | grep -a -E 'opcode: ' >"$T/second"
node=$(awk '/opcode: OPEN \(14\)/ { n = $10; sub(",", "", n); print n; exit }' "$T/second")
[[ -n $node ]] || fail "no OPEN of the doc in the log of its second read"
ops=$(grep -a -F "nodeid: $node," "$T/second" | grep -a -o -E 'opcode: [A-Z_]+' | sort | uniq -c | tr -s ' \n' ' ')
# The node whose pages were counted (kept): the last one opened before, by fincore.
first=$(head -n "$before" "$STORE.log" | awk '/opcode: OPEN \(14\)/ { n = $10; sub(",", "", n) } END { print n }')
reads=checked
if [[ $node != "$first" ]]; then
	# Another node: the kernel forgot the one it had (its inode reclaimed),
	# which a FORGET says before the second read looks the doc up (a
	# BATCH_FORGET names no node in the log); else convfs answered a new node
	# for an unchanged doc, and the kernel forgot the old one after that.
	forgot=$(grep -a -n -m 1 -E "opcode: (FORGET \(2\), nodeid: $first,|BATCH_FORGET)" "$T/second" | cut -d: -f1)
	looked=$(grep -a -n -m 1 -F 'opcode: LOOKUP' "$T/second" | cut -d: -f1)
	if [[ -n $forgot ]] && ((forgot < ${looked:-forgot + 1})); then
		reads="not checked: the kernel forgot the doc's node after its first read, and looked it up anew"
	else
		problem "the second read of an unchanged doc opened node $node, the first $first"
	fi
elif ((kept < size)); then
	# Reclaimed in between, like any page cache (kept_listings()).
	reads="not checked: the kernel had let $((size - kept)) of its $size bytes go"
fi
[[ $reads == checked ]] || say "(a second read's READs are $reads)"
for op in READ GETATTR; do
	[[ $op != READ || $reads == checked ]] || continue
	! grep -q -w "$op" <<<"$ops" || problem "a second read and stat of an unchanged doc sent the daemon $op requests for it: $ops"
done
# Its entry is kept too, and its folder's, where the kernel counts epochs.
if grep -q -a "docs' entries are kept" "$STORE.log"; then
	! grep -q -a 'opcode: LOOKUP' "$T/second" ||
		problem "a second read and stat of an unchanged doc sent the daemon LOOKUP requests: $(grep -c -a 'opcode: LOOKUP' "$T/second")"
else
	say "(no epochs, FUSE 7.44: docs' entries are not kept, and that is not checked)"
fi

say "a walk of unchanged folders, once they are kept, asks the daemon nothing"
find "$M/tasks" >/dev/null
# (The first listing of a folder makes the kernel ask for its access time
# once more, at the next stat: the second walk's.)
find "$M/tasks" -type d >"$T/folders"
before=$(wc -l <"$STORE.log")
find "$M/tasks" >"$T/find.second"
tail -n +"$((before + 1))" "$STORE.log" | grep -a -o -E 'opcode: [A-Z_]+' | sort | uniq -c | tr -s ' \n' ' ' >"$T/walk"
grep -q -x "$DOC" "$T/find.second" || fail "find does not list $DOC"
for op in OPENDIR RELEASEDIR LOOKUP GETATTR; do
	! grep -q -w "$op" "$T/walk" || problem "a third find of unchanged folders sent the daemon $op requests: $(cat "$T/walk")"
done
kept_listings "$T/walk" "$(wc -l <"$T/folders")" "a third find of unchanged folders"
# The view's folders keep their attributes 1 s only, but their listings as
# long: a walk of the view after that asks for attributes, not listings.
find "$M/workspaces" >/dev/null
find "$M/workspaces" -type d >"$T/folders"
before=$(wc -l <"$STORE.log")
sleep 1.1
find "$M/workspaces" >/dev/null
tail -n +"$((before + 1))" "$STORE.log" | grep -a -o -E 'opcode: [A-Z_]+' | sort | uniq -c | tr -s ' \n' ' ' >"$T/walk"
! grep -q -w OPENDIR "$T/walk" || problem "a walk of the unchanged view sent the daemon OPENDIR requests: $(cat "$T/walk")"
kept_listings "$T/walk" "$(wc -l <"$T/folders")" "a walk of the unchanged view"

say "a writer never opens the node a reader of the doc has open"
# The reader's pages and size are its version's: had the writer the same
# node, its O_TRUNC would set the size the kernel lets the reader read to.
before=$(wc -l <"$STORE.log")
me=$BASHPID # (in the pipeline below, $BASHPID is the subshell's)
exec 9<"$DOC"
node_client write_in_place.js "$DOC" "$T/v2.json"
exec 9<&-
# OPEN requests after the mark that succeeded, "0|1 pid nodeid": the reader's (this shell, 0) first.
tail -n +"$((before + 1))" "$STORE.log" | awk -v me="$me" '
	/opcode: OPEN \(14\)/ { u = $5; n = $10; p = $NF; sub(",", "", u); sub(",", "", n); node[u] = n; pid[u] = p }
	/unique: [0-9]+, success/ { u = $5; sub(",", "", u); if (u in node) print (pid[u] == me ? 0 : 1), pid[u], node[u] }
' | sort -n -s -k1,1 >"$T/opens"
reader=$(awk '$1 == 0 { print $3; exit }' "$T/opens")
[[ -n $reader ]] || fail "the log has no OPEN of the reader (pid $me):\n$(cat "$T/opens")"
# The writer reads the doc first (as Cline does), then opens it to write: its last OPEN.
writer=$(awk '$1 == 1 { n = $3 } END { print n }' "$T/opens")
[[ -n $writer ]] || fail "the log has no OPEN of the writer"
[[ $writer != "$reader" ]] ||
	problem "the writer opened node $reader to write, which the reader had open:\n$(cat "$T/opens")"
same "$DOC" "$T/v2.json" "the doc after the writer"

say "a first walk of folders gets their entries with the listings"
# READDIRPLUS: a listing brings each folder's node and attributes, so that a
# walk (find, grep -r, ls -lR) does not look each folder up. Docs still are
# (their entries come by LOOKUP only: ll_readdirplus()).
for i in 1 2 3 4 5 6; do
	mkdir "$M/tasks/17953062690$i"
done
unmount_convfs "$M"
mount_convfs "$M" "$STORE" -d
before=$(wc -l <"$STORE.log")
find "$M/tasks" -type d >"$T/folders"
tail -n +"$((before + 1))" "$STORE.log" | grep -a -o -E 'opcode: [A-Z_]+' | sort | uniq -c | tr -s ' \n' ' ' >"$T/walk"
folders=$(wc -l <"$T/folders")
((folders >= 7)) || fail "find lists $folders folders under tasks/: $(tr '\n' ' ' <"$T/folders")"
looked=$(grep -o -E '[0-9]+ opcode: LOOKUP' "$T/walk" | cut -d' ' -f1) || true
# One LOOKUP: tasks/ itself, found by its path, not in a listing.
((${looked:-0} <= 1)) || problem "a first find of $folders folders sent the daemon ${looked} LOOKUP requests: $(cat "$T/walk")"
grep -q -w READDIRPLUS "$T/walk" || problem "a first find of folders sent no READDIRPLUS: $(cat "$T/walk")"
unmount_convfs "$M"
check_log "$STORE.log" '^convfs: debug: '
pass
