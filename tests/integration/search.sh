#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# search.sh: `convfs search` finds exactly what it should, through every
# kind of change, and says what it found in a form that can be used.
#
# clients/search_corpus.js writes a folder of 60 classic tasks and 6 CLI
# 3.x sessions (one with a subagent), whose messages mix plain words, words
# with accents, identifiers (camelCase, snake_case, paths, ERR_CODE) and
# markers ("qm..." words that stand only as whole words in indexed text).
# A copy is mounted (the first take-in; the index is built behind the mount).
# It proves that
#   - for every marker, the tasks `convfs search` finds are exactly those
#     `grep -rliw` finds in the plain folder;
#   - a hit reads as time, workspace, task, title, snippet, FILE:LINE, and
#     `sed -n LINEp FILE` shows a message that holds the word; --json has
#     task, workspace, title, time, path, line and snippet; the options
#     (--workspace by folder, path, name and key, --role, --stream, --limit,
#     --since and --until, --store) filter as they say; a bad query, option
#     or time is one line on stderr and exit 2, nothing found is exit 1;
#   - after changes through the mount (an in-place rewrite that drops
#     messages, temp + rename, >> to the view's messages.jsonl, a three-way
#     merge of two writers, a task to the trash and one back, convfs
#     restore of an older version), for 200 generated one- and two-word
#     queries the tasks found are exactly those a reference matcher
#     (search_corpus.js ref, written apart from the C code) finds in the
#     files the mount shows, and convfs check finds the index sound;
#   - a hit in a subagent's subagent names the file the view shows it in,
#     subagents/<a>/subagents/<b>/messages.jsonl;
#   - a daemon killed with kill -9 while a writer commits large saves
#     leaves an index that matches the store (convfs check);
#   - search/<query>/ (not listed) holds a link for each task convfs search
#     finds (<rank>-<taskId>, to its folder in the view) and results.jsonl,
#     the --json output; a query with '/' written %2F; a bad query answers
#     EINVAL and says why in the log; nothing can be made there; a commit
#     shows at once in the listing; a client's own search/ wins;
#   - a store from before the index (schema 14) gets it on its first mount,
#     built behind the mount; a build cut by kill -9 goes on at the next
#     mount from where it stopped, and then finds everything.

. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || fail "jq is missing"
CORPUS=$CLIENTS/search_corpus.js
P=$T/plain
M=$T/mnt
STORE=$T/store.db

# cs ARGS...: convfs search, its output in $T/out and $T/err, its status in $rc.
rc=0
cs()
{
	rc=0
	"$CONVFS" search "$@" >"$T/out" 2>"$T/err" || rc=$?
}

# wait_built MOUNT: until the daemon's build of the index is over (status says).
wait_built()
{
	local i b
	for ((i = 0; i < 600 * SLOW; i++)); do
		b=$("$CONVFS" status --json "$1" | jq -r '.search.building')
		[[ $b == false ]] && return 0
		sleep 0.1
	done
	fail "the search index of '$1' is still being built after $((60 * SLOW)) s"
}

# tasks_of_hits: the task ids of $T/out (--json), sorted, on one line.
tasks_of_hits()
{
	jq -r .task "$T/out" | sort -u | tr '\n' ' ' | sed 's/ $//'
}

node "$CORPUS" gen "$P" 7 60
cp -a "$P" "$M"
mount_convfs "$M" "$STORE"
wait_built "$M"

# ---- what grep -rliw finds -----------------------------------------------------------

say "each marker: the tasks grep -rliw finds in the plain folder"
while read -r word; do
	want=$(grep -rliw -- "$word" "$P" | sed -n -E 's#^.*/(tasks|sessions)/([^/]+)/.*$#\2#p' | sort -u | tr '\n' ' ' |
		sed 's/ $//')
	cs --json "$word" "$M"
	got=$(tasks_of_hits)
	[[ $got == "$want" ]] || problem "'$word': convfs search finds tasks [$got], grep -rliw [$want]"
	[[ -n $want ]] || problem "'$word' is in no task: the corpus should have it"
done < <(node "$CORPUS" markers)

# ---- the output ------------------------------------------------------------------------

say "the output of a hit, and where it points"
cs qmalpha "$M"
((rc == 0)) || fail "convfs search qmalpha exited $rc: $(cat "$T/err")"
[[ ! -s $T/err ]] || problem "a search of a built index says something on stderr: $(cat "$T/err")"
while IFS= read -r line; do
	loc=${line##*  }
	file=${loc%:*} n=${loc##*:}
	[[ $file == "$M"/workspaces/*/tasks/*/*.jsonl && $n =~ ^[0-9]+$ ]] || { problem "a hit does not end in FILE:LINE: $line"; continue; }
	sed -n "${n}p" "$file" | grep -q -i qmalpha || problem "line $n of $file does not hold qmalpha (the hit: $line)"
	[[ $line =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}\ \ [^\ ]+\ \ [0-9A-Za-z_]+\ \ .*\[qmalpha\] ]] ||
		problem "a hit is not time, workspace, task, title, [snippet]: $line"
done <"$T/out"
cs --json qmalpha "$M"
jq -e 'select((.task | type) != "string" or (.workspace | type) != "string" or (.title | type) != "string"
	or (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T")) != true or (.path | type) != "string"
	or (.line | type) != "number" or (.snippet | test("\\[qmalpha\\]"; "i")) != true)' "$T/out" >"$T/bad" ||
	true
[[ ! -s $T/bad ]] || problem "--json hits without the fields they must have:\n$(cat "$T/bad")"
[[ $(wc -l <"$T/out") -ge 1 ]] || problem "--json printed nothing"

say "from inside the mount, without naming it; and --store"
(cd "$M/tasks" && "$CONVFS" search --json qmalpha) >"$T/inside" || problem "convfs search from inside the mount failed"
cmp -s "$T/inside" "$T/out" || problem "from inside the mount, the hits differ:\n$(diff "$T/inside" "$T/out")"

say "the options"
cs --json --limit 2 qmalpha "$M"
(($(wc -l <"$T/out") == 2)) || problem "--limit 2 gives $(wc -l <"$T/out") hits"
for ws in alpha-$(node -e 'let h=0;for(const c of "/home/dev/projects/alpha")h=(h*31+c.charCodeAt(0))>>>0;console.log(h)') \
	/home/dev/projects/alpha alpha; do
	cs --json --workspace "$ws" "race" "$M"
	((rc == 0)) || problem "--workspace $ws: exit $rc ($(cat "$T/err"))"
	[[ -z $(jq -r 'select(.workspace_path != "/home/dev/projects/alpha") | .task' "$T/out") ]] ||
		problem "--workspace $ws finds tasks of other workspaces"
done
key=$(jq -r .workspace "$T/out" | head -n 1)
cs --json --workspace "${key##*-}" race "$M"
[[ -z $(jq -r 'select(.workspace_path != "/home/dev/projects/alpha") | .task' "$T/out") && -s $T/out ]] ||
	problem "--workspace by key finds other tasks, or none"
cs --json --role user --stream api race "$M"
[[ -s $T/out && -z $(jq -r 'select(.role != "user" or .stream != "api") | .task' "$T/out") ]] ||
	problem "--role user --stream api: $(head -n 3 "$T/out")"
cs --json --stream ui race "$M"
[[ -s $T/out && -z $(jq -r 'select(.stream != "ui") | .task' "$T/out") ]] || problem "--stream ui gives other streams"
cs --json --until 2000-01-01 race "$M"
((rc == 1)) || problem "--until 2000-01-01 finds something (exit $rc)"
cs --json --since 2000-01-01T00:00Z --until 2099-01-01 race "$M"
((rc == 0)) || problem "--since 2000 --until 2099 finds nothing (exit $rc)"
cs --json --since 1d race "$M"
((rc == 1)) || problem "--since 1d finds messages of 2025 (exit $rc)"

say "what is refused, and nothing found"
for bad in '"open phrase' 'OR alone' '-only' '***' 'a"b'; do
	cs -- "$bad" "$M"
	((rc == 2)) || problem "the query '$bad' exited $rc, expected 2"
	(($(wc -l <"$T/err") == 1)) || problem "the query '$bad': not one line on stderr: $(cat "$T/err")"
done
for args in "--limit 0 x" "--role robot x" "--stream disk x" "--since yesterday x" "--until 2025-13-01 x" \
	"--workspace nowhere x" "--nope x" "--limit"; do
	# shellcheck disable=SC2086
	cs $args "$M"
	((rc == 2)) || problem "convfs search $args exited $rc, expected 2"
done
cs
((rc == 2)) || problem "convfs search with no query exited $rc, expected 2"
cs race condition "$M"
((rc == 2)) || problem "two words as two arguments exited $rc, expected 2 (the second is no mount)"
grep -q "one argument" "$T/err" || problem "two words as two arguments: no hint to quote them: $(cat "$T/err")"
cs zzznothingzzz "$M"
((rc == 1)) || problem "a word found nowhere exited $rc, expected 1"

# ---- search/<query>/ ----------------------------------------------------------------------------

say "search/<query>/: found by name, a link a task, results.jsonl the --json output"
! ls -A "$M" | grep -q -x search || problem "the mount's root lists search/"
[[ -z $(ls -A "$M/search") ]] || problem "search/ lists something: $(ls -A "$M/search")"
# folder_tasks DIR: the task ids its links name, sorted, on one line.
folder_tasks()
{
	ls "$1" | grep -E '^[0-9]{3,}-' | sed -E 's/^[0-9]+-//' | sort | tr '\n' ' ' | sed 's/ $//'
}
for q in qmalpha 'race condition' 'src/utils/fileName.ts'; do
	name=${q//\//%2F}
	cs --json "$q" "$M"
	((rc == 0)) || { problem "convfs search '$q' found nothing: the corpus should have it"; continue; }
	[[ $(folder_tasks "$M/search/$name") == "$(tasks_of_hits)" ]] ||
		problem "search/$name/ links [$(folder_tasks "$M/search/$name")], convfs search finds [$(tasks_of_hits)]"
	n=$(ls "$M/search/$name" | grep -c -E '^[0-9]{3,}-')
	[[ $(ls "$M/search/$name" | grep -E '^[0-9]{3,}-' | cut -d- -f1 | tr '\n' ' ') == "$(seq -f %03g 1 "$n" | tr '\n' ' ')" ]] ||
		problem "search/$name/: the ranks are not 001 to $n"
	jq -c ".path |= ltrimstr(\"$M/\")" "$T/out" | head -n 1000 >"$T/want.jsonl"
	jq -c . "$M/search/$name/results.jsonl" >"$T/got.jsonl" || problem "search/$name/results.jsonl is not JSON Lines"
	same "$T/want.jsonl" "$T/got.jsonl" "search/$name/results.jsonl against convfs search --json"
done
link=$(ls "$M/search/qmalpha" | grep -m 1 -E '^001-')
[[ $(readlink "$M/search/qmalpha/$link") == ../../workspaces/*/tasks/"${link#001-}" ]] ||
	problem "search/qmalpha/$link points at '$(readlink "$M/search/qmalpha/$link")'"
grep -r -q -i qmalpha "$M/search/qmalpha/$link/" || problem "the task search/qmalpha/$link leads to has no qmalpha"
! ls "$M/search/%22open%20phrase" 2>"$T/ls.err" && grep -q "Invalid argument" "$T/ls.err" ||
	problem "a folder of a bad query: $(cat "$T/ls.err")"
log_has "$STORE.log" "search/%22open%20phrase: not a query: " "the bad query"
! touch "$M/search/qmalpha/x" 2>/dev/null || problem "a file was made in search/qmalpha/"
# a commit shows at once in a listing the kernel keeps (the folder's time is the store's last change)
mapfile -t SOME < <(cd "$P/tasks" && ls | sort | tail -n 2)
ls "$M/search/qmfresh" >/dev/null
for id in "${SOME[@]}"; do
	printf '%s\n' '{"role":"user","content":[{"type":"text","text":"a qmfresh word"}]}' \
		>>"$(compgen -G "$M/workspaces/*/tasks/$id" | head -n 1)/messages.jsonl"
	want=$(printf '%s\n' "${SOME[@]}" | sed -n "0,/^$id\$/p" | sort | tr '\n' ' ' | sed 's/ $//')
	[[ $(folder_tasks "$M/search/qmfresh") == "$want" ]] ||
		problem "after a >> to $id, search/qmfresh/ links [$(folder_tasks "$M/search/qmfresh")], not [$want]"
done

# ---- changes through the mount, then the reference ------------------------------------------

say "changes through the mount"
mapfile -t TASKS < <(cd "$P/tasks" && ls | sort)
# an in-place rewrite that keeps only the first two messages of a ui stream
node -e 'const f = process.argv[1], a = JSON.parse(require("fs").readFileSync(f)); require("fs").writeFileSync(f, JSON.stringify(a.slice(0, 2)))' \
	"$M/tasks/${TASKS[0]}/ui_messages.json"
# temp + rename with more messages
node -e 'const fs = require("fs"), [f, more] = process.argv.slice(1);
	const a = JSON.parse(fs.readFileSync(f)).concat(fs.readFileSync(more, "utf8").split("\n").filter(Boolean).map(JSON.parse));
	fs.writeFileSync(f + ".tmp.1.json", JSON.stringify(a)); fs.renameSync(f + ".tmp.1.json", f)' \
	"$M/tasks/${TASKS[1]}/api_conversation_history.json" <(node "$CORPUS" more - 11 6)
# >> to the view
view=$(compgen -G "$M/workspaces/*/tasks/${TASKS[2]}" | head -n 1)
node "$CORPUS" more - 12 3 >>"$view/messages.jsonl"
# a three-way merge: a writer that read the file before another's save saves its own
f=$M/tasks/${TASKS[3]}/ui_messages.json
node -e 'const fs = require("fs"), a = JSON.parse(fs.readFileSync(process.argv[1]));
	a.push({ ts: 1799000000001, type: "say", say: "text", text: "mine merged wordmine" });
	fs.writeFileSync(process.argv[2], JSON.stringify(a))' "$f" "$T/mine.json"
node -e 'const fs = require("fs"), a = JSON.parse(fs.readFileSync(process.argv[1]));
	a.push({ ts: 1799000000002, type: "say", say: "text", text: "theirs merged wordtheirs" });
	fs.writeFileSync(process.argv[2], JSON.stringify(a))' "$f" "$T/theirs.json"
node "$CLIENTS/hold_write.js" "$f" "$T/mine.json" "$T/ready" "$T/go" >"$T/hold.out" 2>&1 &
holder=$!
wait_for "$T/ready" 20 || fail "the holding writer never got ready: $(cat "$T/hold.out")"
node_client write_atomic.js "$f" "$T/theirs.json"
touch "$T/go"
wait "$holder" || problem "the merging writer failed: $(cat "$T/hold.out")"
grep -q wordtheirs "$f" && grep -q wordmine "$f" || problem "the merge did not keep both writers' messages"
# the trash, and back
rm -r "$M/tasks/${TASKS[4]}" "$M/tasks/${TASKS[5]}"
mv "$M/workspaces/.trash/${TASKS[5]}" "$M/tasks/${TASKS[5]}"
# convfs restore of the first version of a rewritten file
f=$M/tasks/${TASKS[6]}/ui_messages.json
node -e 'const f = process.argv[1], a = JSON.parse(require("fs").readFileSync(f)); require("fs").writeFileSync(f, JSON.stringify(a.slice(0, 1)))' "$f"
first=$("$CONVFS" log --json "$f" | jq '.[-1].number')
"$CONVFS" restore "$f" "$first" >"$T/restore.out" 2>&1 || problem "convfs restore failed: $(cat "$T/restore.out")"

for w in wordmine wordtheirs; do
	cs --json "$w" "$M"
	[[ $(tasks_of_hits) == "${TASKS[3]}" ]] || problem "after the merge, '$w' finds [$(tasks_of_hits)]"
done

say "200 queries against the reference matcher"
node "$CORPUS" queries 99 200 >"$T/queries"
node "$CORPUS" ref "$M" "$T/queries" >"$T/ref"
n=0
while IFS=$'\t' read -r q want; do
	cs --json "$q" "$M"
	((rc <= 1)) || { problem "'$q': exit $rc: $(cat "$T/err")"; continue; }
	got=$(tasks_of_hits)
	[[ $got == "$want" ]] || problem "'$q': convfs search finds [$got], the reference [$want]"
	[[ -z $want ]] || n=$((n + 1))
done <"$T/ref"
((n >= 100)) || problem "only $n of the 200 queries find anything: the test proves little"
say "$n of 200 queries found something, each the same tasks as the reference"

"$CONVFS" check "$STORE" >"$T/check" 2>"$T/check.err" || problem "convfs check (mounted) finds problems:\n$(cat "$T/check")"

# ---- a subagent's subagent ----------------------------------------------------------------------

say "a hit in a subagent's subagent names its folder in the view"
# The session spawns agent a, which spawns agent b (each spawn_agent call's task is the first message of
# the conversation it starts); the word is in b's conversation, shown at subagents/<a>/subagents/<b>/.
sid=1799500000000_nestx a=agent_1799500000100_aaaa b=agent_1799500000200_bbbb
mkdir "$M/sessions/$sid"
node -e 'const fs = require("fs"), [dir, sid, a, b] = process.argv.slice(1);
	const text = (t) => [{ type: "text", text: t }];
	const spawn = (id, task) => [{ type: "tool_use", id, name: "spawn_agent", input: { task } }];
	const conv = (agent, messages) => JSON.stringify({ version: 1, sessionId: sid, agent, messages });
	fs.writeFileSync(`${dir}/${sid}.json`, JSON.stringify({ version: 1, session_id: sid,
		cwd: "/home/dev/projects/delta", prompt: "a nest", metadata: { title: "a nest" } }));
	fs.writeFileSync(`${dir}/${sid}.messages.json`, conv(undefined, [
		{ id: "n1", role: "user", content: text("a nest"), ts: 1799500000000 },
		{ id: "n2", role: "assistant", content: spawn("call_a", "look into the nest"), ts: 1799500000050 }]));
	fs.writeFileSync(`${dir}/${a}.messages.json`, conv(a, [
		{ id: "a1", role: "user", content: text("look into the nest"), ts: 1799500000100 },
		{ id: "a2", role: "assistant", content: spawn("call_b", "count the eggs"), ts: 1799500000150 }]));
	fs.writeFileSync(`${dir}/${b}.messages.json`, conv(b, [
		{ id: "b1", role: "user", content: text("count the eggs"), ts: 1799500000200 },
		{ id: "b2", role: "assistant", content: text("three eggs, nestedword"), ts: 1799500000250 }]));' \
	"$M/sessions/$sid" "$sid" "$a" "$b"
cs --json nestedword "$M"
path=$(jq -r .path "$T/out") n=$(jq -r .line "$T/out")
[[ $path == "$M"/workspaces/*/tasks/$sid/subagents/$a/subagents/$b/messages.jsonl ]] ||
	problem "a hit in subagent $b (spawned by $a) names '$path'"
sed -n "${n}p" "$path" 2>/dev/null | grep -q nestedword || problem "line $n of '$path' does not hold nestedword"
jq -c ".path |= ltrimstr(\"$M/\")" "$T/out" >"$T/want.jsonl"
jq -c . "$M/search/nestedword/results.jsonl" >"$T/got.jsonl" || problem "search/nestedword/results.jsonl is not JSON Lines"
same "$T/want.jsonl" "$T/got.jsonl" "search/nestedword/results.jsonl against convfs search --json"

# ---- kill -9 in the middle of commits -----------------------------------------------------------

say "kill -9 while large saves commit"
f=$M/tasks/${TASKS[7]}/api_conversation_history.json
node -e 'const fs = require("fs"), f = process.argv[1];
	const base = JSON.parse(fs.readFileSync(f));
	for (let i = 0; ; i++) {
		const a = base.concat(Array.from({ length: 2000 }, (_, k) => ({ role: "user",
			content: `save ${i} message ${k} with words to index, killword${k % 50} and more words` })));
		fs.writeFileSync(f + ".tmp", JSON.stringify(a)); fs.renameSync(f + ".tmp", f);
		fs.writeFileSync(process.argv[2], String(i));
	}' "$f" "$T/saves" >"$T/writer.out" 2>&1 &
writer=$!
wait_for "$T/saves" 30 || fail "the writer saved nothing: $(cat "$T/writer.out")"
sleep 0.$((RANDOM % 9 + 1))
kill_daemon "$M"
wait_gone "$writer" 10 || kill -9 "$writer"
wait "$writer" 2>/dev/null || true
remove_dead_mount "$M"
"$CONVFS" check "$STORE" >"$T/check" 2>"$T/check.err" || problem "after kill -9, convfs check finds problems:\n$(cat "$T/check" "$T/check.err")"
mount_convfs "$M" "$STORE"
cs --json killword7 "$M"
if grep -q killword "$f"; then
	[[ $(tasks_of_hits) == "${TASKS[7]}" ]] || problem "after kill -9, killword7 finds [$(tasks_of_hits)]"
fi
unmount_convfs "$M"

say "--store on the store, unmounted"
cs --json --store "$STORE" qmalpha
((rc == 0)) || problem "--store: exit $rc: $(cat "$T/err")"
[[ $(jq -r .path "$T/out" | head -n 1) == workspaces/*/tasks/*.jsonl ]] || problem "--store: paths are not from a mount's root: $(head -n 1 "$T/out")"

say "a client's own search at the root wins"
mkdir "$M/search" && echo mine >"$M/search/own.txt" # underneath, not mounted
mount_convfs "$M" "$STORE"
[[ $(ls "$M/search") == own.txt && ! -e $M/search/qmalpha ]] || problem "the client's search/ is not what shows: $(ls "$M/search")"
rm -r "$M/search" # the backing tree's copy; what is underneath, unchanged, is not taken in again
unmount_convfs "$M"

# ---- a store from before the index ----------------------------------------------------------

say "a store of schema 14: the index comes with the first mount, built behind it, resumed after kill -9"
sqlite3 "$STORE" ".dbconfig defensive off" "DROP TABLE search_data; DROP TABLE search_idx; DROP TABLE search_docsize;
	DROP TABLE search_config; DROP VIEW search_text; PRAGMA writable_schema = ON;
	DELETE FROM sqlite_master WHERE name = 'search'; PRAGMA writable_schema = OFF;
	DELETE FROM meta WHERE key = 'search_cursor'; PRAGMA user_version = 14" >/dev/null
[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] || fail "the store made schema 14 is not sound"
cs --store "$STORE" qmalpha
((rc == 2)) && grep -q "upgrade" "$T/err" || problem "--store on a schema-14 store: exit $rc: $(cat "$T/err")"
# to_take_in N: what the build said it had to take in, once the log has N such lines (the build's
# thread says it a moment after the mount).
to_take_in()
{
	local i
	for ((i = 0; i < 100 * SLOW; i++)); do
		(($(grep -a -c 'building the search index behind the mount' "$STORE.log") >= $1)) && break
		sleep 0.1
	done
	grep -a -o -E 'building the search index behind the mount: [0-9]+' "$STORE.log" | sed -n "$1p" | grep -o -E '[0-9]+$'
}
builds=$(grep -a -c 'building the search index behind the mount' "$STORE.log")
export CONVFS_INDEX_DELAY_MS=1000 # a step a second: the build is cut in its middle
mount_convfs "$M" "$STORE"
unset CONVFS_INDEX_DELAY_MS
# To this convfs's schema (the migrations after the index's run too).
log_has "$STORE.log" "migrated the store from schema version 14 to $(sqlite3 "$STORE" 'PRAGMA user_version')" "the migration"
first=$(to_take_in $((builds + 1)))
[[ -n $first ]] || fail "the build of the migrated store's index did not start"
sleep 1.5
cs qmalpha "$M"
grep -q "the index is being built" "$T/err" || problem "a search while the index is built does not say so: $(cat "$T/err")"
kill_daemon "$M"
remove_dead_mount "$M"
cursor=$(sqlite3 "$STORE" "SELECT value FROM meta WHERE key = 'search_cursor'")
((cursor > 0)) || problem "the build cut by kill -9 left its cursor at '$cursor': the next would start over"
mount_convfs "$M" "$STORE"
second=$(to_take_in $((builds + 2)))
((second > 0 && second < first)) || problem "the build did not go on where it stopped: $first to take in, then $second"
wait_built "$M"
while read -r word; do
	want=$(grep -rliw -- "$word" "$M/tasks" "$M/sessions" | sed -n -E 's#^.*/(tasks|sessions)/([^/]+)/.*$#\2#p' |
		sort -u | tr '\n' ' ' | sed 's/ $//')
	cs --json "$word" "$M"
	[[ $(tasks_of_hits) == "$want" ]] || problem "after the build, '$word' finds [$(tasks_of_hits)], grep [$want]"
done < <(node "$CORPUS" markers)
unmount_convfs "$M"
"$CONVFS" check "$STORE" >"$T/check" 2>"$T/check.err" || problem "after the build, convfs check finds problems:\n$(cat "$T/check")"

check_log "$STORE.log"
pass
