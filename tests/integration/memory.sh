#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory.sh: what the model saw, context.jsonl beside a task's messages.jsonl
# (live, at each checkpoint and at each version): found by its name, never
# listed, read-only.
#
#   A. Over the 1.0.10 fixture (a task never cut, two checkpoints, three
#      saves): the task's context.jsonl is byte for byte its messages.jsonl,
#      and so is each checkpoint's and each version's; the task's folder does
#      not list it, and grep -r over workspaces/ finds each message of the
#      conversation in one file; it is mode 0400 and refuses writes.
#   B. A task cut as Cline cuts it (conversationHistoryDeletedRange [2, 3] on
#      its history item, and a context_history.json that puts the notice on
#      message 1 and shortens a file read in message 4), written into the
#      client's folder before the mount: context.jsonl is messages 0, 1, 4, 5,
#      6 and 7, with the two edits applied (compared with what jq makes of
#      the client's files), and the messages the client sends as they are
#      are messages.jsonl's own lines, byte for byte. Then the client writes
#      a new history item through the mount (range [2, 5]): context.jsonl
#      follows at once. grep -r still finds each message once.
#   E. agent.diff over the 1.0.10 fixture (the agent wrote hello.txt between
#      its two checkpoints): checkpoint 1's is a patch that `git apply -R`
#      takes back in a workspace as the latest checkpoint left it (the
#      workspace then equals checkpoint 1's files/), with the header lines
#      that say what it is and that commands are not tracked; the latest
#      checkpoint's holds no change. Once task_metadata.json says the user
#      edited hello.txt too, it is left out and named, and the patch is
#      empty. (The issue's test on a real CLI 1.0.10 run where the test edits
#      a file as the user is not here.)
#   C. The real Cline CLI 2.18.0 (from ${CONVFS_CLIENT_CACHE:-~/.cache/convfs/
#      clients}, installed there as real_clients.sh does if it is not yet:
#      the CLIs of C, D, F and G) on the mount, driven into
#      a cut by the test's model server (real_clients/model_server.js, task
#      [window]: from 6 messages on it reports 99,000 tokens of a window the
#      client takes for 98,000): the client cuts (a range on its history
#      item, a context_history.json), and the messages of its last request
#      (the server records each), the system prompt aside and taken out of
#      the OpenAI format (a message's texts), are context.jsonl's. Skipped
#      (noted) without the CLI, or while another worktree's real-client run
#      goes on (it times its clients); under CI=true either fails. Not run
#      under valgrind (CONVFS_VALGRIND=1), as real_clients.sh is not.
#   D. The real Cline CLI 3.0.65 on the mount, made by the model server to
#      spawn a subagent that spawns its own (task [spawn nested]): the
#      session's folder holds subagents/<agent>/ with messages.jsonl (the
#      child's conversation, a message a line) and spawn.json (its task, the
#      system prompt, status "completed", its result, times, and spawnedBy
#      "../../messages.jsonl:N", the line of the parent's spawn_agent call),
#      the grandchild in the child's own subagents/; no flat
#      <agent>.messages.jsonl is left; grep -r finds each subagent's messages
#      (by their ids) in its messages.jsonl alone; rm -r of the session puts
#      it in the trash and mv brings it back with its subagents. Skipped as C
#      is.
#   F. convfs undo on a task the real Cline CLI 1.0.10 ran on the mount (the
#      test's model server has its agent write hello.txt) in a workspace that
#      holds the user's notes.txt, which the user then edits: the dry run
#      would remove hello.txt alone, --apply removes it (a copy in the backup
#      folder) and leaves notes.txt with the user's edit; the workspace is
#      the one the task recorded. Skipped as C is.
#   G. A CLI 3.x session (the 3.0.65 fixture's) with the 3.0.65 client's own
#      compaction functions called from node (memory_compaction.mjs; the
#      client is not run): no compaction file, context.jsonl is its
#      messages.jsonl; the state the client writes when it compacts the first
#      two messages: context.jsonl is the client's projection, its compacted
#      lines byte for byte as the client serialises them, the rest
#      messages.jsonl's own lines; an error appended that the client only
#      shows is left out; message 0 edited in the session's file (written
#      back whole, as the client writes it): the client no longer applies the
#      state, and context.jsonl is every message it sends. Skipped (noted)
#      without the 3.0.65 client in the cache; under CI=true it fails.

. "$(dirname "$0")/lib.sh"

TASK=1795306331217
CUT=1799000000001
WS=webapp-691006855

# not_listed DIR NAME: `ls -A DIR` does not show NAME.
not_listed()
{
	! ls -A "$1" | grep -qxF -- "$2" || problem "$1 lists $2: $(ls -A "$1" | tr '\n' ' ')"
}

# once_each VIEW MESSAGES WHAT: grep -r over VIEW finds each message of
# MESSAGES (the longest line of its first text, as a fixed string) in
# MESSAGES alone, leaving aside the files that quote the conversation on
# purpose (ui_messages.jsonl, task.json, taskHistory.json): not in a
# context.jsonl, a checkpoint or a version, which are not listed.
once_each()
{
	local n=0 line key hits
	while IFS= read -r line; do
		n=$((n + 1))
		key=$(jq -r '[.content[]? | .text? // empty] | first // empty' <<<"$line" |
			awk 'length > max { max = length; l = $0 } END { print substr(l, 1, 80) }')
		[[ -n $key ]] || continue
		hits=$(grep -r -l -F -- "$key" "$1" | grep -v -E '/(ui_messages\.jsonl|task\.json|taskHistory\.json)$' || true)
		[[ $hits == "$2" ]] || problem "$3: grep -r finds message $n ('$key') in:\n$hits\nexpected in $2 alone"
	done <"$2"
}

# ---- A. never cut: context.jsonl is messages.jsonl ----------------------------
say "A. the 1.0.10 fixture: a task never cut"
mnt=$(fixture_extract 1.0.10 "$T/a")
store=$T/a/store.db
mount_convfs "$mnt" "$store"
V=$(echo "$mnt"/workspaces/*/tasks/$TASK)
[[ -d $V ]] || fail "no view folder of task $TASK"
same "$V/context.jsonl" "$V/messages.jsonl" "the live task's context.jsonl (never cut)"
not_listed "$V" context.jsonl
[[ $(stat -c %a "$V/context.jsonl") == 400 ]] || problem "context.jsonl has mode $(stat -c %a "$V/context.jsonl"); expected 400"
[[ $(stat -c %s "$V/context.jsonl") == $(stat -c %s "$V/messages.jsonl") ]] ||
	problem "context.jsonl's stat size $(stat -c %s "$V/context.jsonl") is not messages.jsonl's"
rc=0
(echo '{"role":"user","content":"x"}' >>"$V/context.jsonl") 2>"$T/w.err" || rc=$?
((rc != 0)) || problem "an append to context.jsonl succeeded"
grep -q 'Permission denied' "$T/w.err" || problem "an append to context.jsonl failed, but not with EACCES: $(cat "$T/w.err")"
same "$V/context.jsonl" "$V/messages.jsonl" "context.jsonl after a refused append"
# each_point KIND MIN: each checkpoint's (or version's) context.jsonl is its messages.jsonl, not listed.
each_point()
{
	local n=0 s
	for s in "$V/$1"/*/; do
		same "$s/context.jsonl" "$s/messages.jsonl" "$1/$(basename "$s")/context.jsonl"
		not_listed "$s" context.jsonl
		n=$((n + 1))
	done
	((n >= $2)) || problem "the fixture's task shows $n $1; expected $2"
}
each_point checkpoints 2
each_point versions 3
once_each "$mnt/workspaces" "$V/messages.jsonl" "the fixture"

# ---- E. agent.diff ----------------------------------------------------------------
say "E. agent.diff over the 1.0.10 fixture"
C=$V/checkpoints
mapfile -t ck < <(ls "$C")
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
W=$T/a/work
mkdir -p "$W"
cp -a "$C/${ck[1]}/files/." "$W/" # the workspace as the latest checkpoint left it
head -n 2 "$C/${ck[0]}/agent.diff" | grep -q '^# convfs: .*not tracked by the client' ||
	problem "E: agent.diff's header does not say commands are not tracked: $(head -n 2 "$C/${ck[0]}/agent.diff")"
grep -q '^diff --git a/hello.txt b/hello.txt$' "$C/${ck[0]}/agent.diff" ||
	problem "E: checkpoint 1's agent.diff has no change of hello.txt:\n$(cat "$C/${ck[0]}/agent.diff")"
(cd "$W" && git apply -R "$C/${ck[0]}/agent.diff") 2>"$T/apply.err" ||
	problem "E: git apply -R of checkpoint 1's agent.diff failed: $(cat "$T/apply.err")"
diff -r "$W" "$C/${ck[0]}/files" >"$T/e.diff" 2>&1 ||
	problem "E: after git apply -R the workspace is not checkpoint 1's files/:\n$(head -n 20 "$T/e.diff")"
! grep -q '^diff --git' "$C/${ck[1]}/agent.diff" || problem "E: the latest checkpoint's agent.diff holds changes"
# The user edited hello.txt too (after the checkpoint): left out, and named.
jq '.files_in_context[0].user_edit_date = .files_in_context[0].cline_edit_date + 1' \
	"$mnt/tasks/$TASK/task_metadata.json" >"$T/a/meta"
cp "$T/a/meta" "$mnt/tasks/$TASK/task_metadata.json"
grep -q '^# convfs: left out, changed by the user too: hello.txt$' "$C/${ck[0]}/agent.diff" ||
	problem "E: agent.diff does not name hello.txt, which the user changed too:\n$(cat "$C/${ck[0]}/agent.diff")"
! grep -q '^diff --git' "$C/${ck[0]}/agent.diff" || problem "E: agent.diff holds the change of a file the user changed too"
unmount_convfs "$mnt"
check_log "$store.log"

# ---- B. a task cut by the client ------------------------------------------------
say "B. a task the client cut"
mnt=$(fixture_extract 2.18.0 "$T/b")
store=$T/b/store.db
C=$mnt/tasks/$CUT
mkdir -p "$C"
cp "$mnt/tasks/1795306269021/ui_messages.json" "$mnt/tasks/1795306269021/task_metadata.json" "$C/"
# Eight messages, as Cline's XML-tool conversations are: text blocks.
node -e '
	const m = [];
	const say = (role, text) => m.push({ role, content: [{ type: "text", text }] });
	say("user", "<task>\nRemember the marker task-0\n</task>");
	for (let i = 1; i < 8; i++)
		say(i % 2 ? "assistant" : "user", "marker-" + i + " " + "x".repeat(200));
	process.stdout.write(JSON.stringify(m));' >"$C/api_conversation_history.json"
# What Cline CLI 1.0.10 wrote when it cut: the notice on message 1, a file read in message 4 made short.
cat >"$C/context_history.json" <<'EOF'
[[2,[3,[[0,[[1000,"text",["[write_to_file for 'hello.txt'] Result: short"],[]]]]]]],[4,[2,[[0,[[1000,"text",["[read_file for 'hello.txt'] Result:\n[[NOTE] removed]"],[]]]]]]],[1,[0,[[0,[[1000,"text",["[NOTE] Some previous conversation history has been removed."],[]]]]]]]]
EOF
jq -c --arg id "$CUT" '. + [(.[0] | .id = $id | .ts = 1799000000999 | .task = "Remember the marker task-0" |
	.conversationHistoryDeletedRange = [2, 3])]' "$mnt/state/taskHistory.json" >"$T/b/hist"
cp "$T/b/hist" "$mnt/state/taskHistory.json"
mount_convfs "$mnt" "$store"
V=$mnt/workspaces/$WS/tasks/$CUT
[[ -d $V ]] || fail "no view folder of task $CUT: $(ls "$mnt/workspaces/$WS/tasks")"

# want END: what the client sends with the range [2, END]: jq's own rebuild.
want()
{
	jq -c --argjson cut "$1" '
		(.[1].content[0].text = "[NOTE] Some previous conversation history has been removed.") |
		(.[4].content[0].text = "[read_file for '"'hello.txt'"'] Result:\n[[NOTE] removed]") |
		.[0:2] + .[($cut + 1):] | .[]' "$C/api_conversation_history.json"
}
# check_cut END WHAT: context.jsonl is want END (as JSON), and the messages it
# sends unchanged are messages.jsonl's own lines.
check_cut()
{
	want "$1" >"$T/b/want"
	jq -c . "$V/context.jsonl" >"$T/b/got" 2>"$T/b/jq.err" || problem "$2: context.jsonl is not JSON Lines: $(cat "$T/b/jq.err")"
	if ! cmp -s "$T/b/got" "$T/b/want"; then
		problem "$2: context.jsonl is not the client's rebuild (< want, > got):\n$({ diff "$T/b/want" "$T/b/got" || true; } | cut -c1-200 | head -n 20)"
	fi
	sed -n 1p "$V/messages.jsonl" >"$T/b/m0"
	sed -n 1p "$V/context.jsonl" >"$T/b/c0"
	same "$T/b/c0" "$T/b/m0" "$2: message 0, sent as stored"
	tail -n 2 "$V/messages.jsonl" >"$T/b/mt"
	tail -n 2 "$V/context.jsonl" >"$T/b/ct"
	same "$T/b/ct" "$T/b/mt" "$2: messages 6 and 7, sent as stored"
	[[ $(stat -c %s "$V/context.jsonl") == $(wc -c <"$V/context.jsonl") ]] ||
		problem "$2: stat gives context.jsonl $(stat -c %s "$V/context.jsonl") bytes; it reads $(wc -c <"$V/context.jsonl")"
}
check_cut 3 "the range [2, 3] of the history item"
(($(wc -l <"$V/messages.jsonl") == 8)) || problem "messages.jsonl has $(wc -l <"$V/messages.jsonl") lines; expected 8"
once_each "$mnt/workspaces" "$V/messages.jsonl" "a cut task"

# The client cuts again: a new item, written as Cline writes the history (whole).
jq -c --arg id "$CUT" 'map(if .id == $id then .conversationHistoryDeletedRange = [2, 5] else . end)' \
	"$mnt/state/taskHistory.json" >"$T/b/hist2"
cp "$T/b/hist2" "$mnt/state/taskHistory.json"
check_cut 5 "the range [2, 5] written through the mount"
unmount_convfs "$mnt"
check_log "$store.log"

# ---- C. the real CLI cuts its conversation ----------------------------------------
CACHE=${CONVFS_CLIENT_CACHE:-$HOME/.cache/convfs/clients}
CLI=$CACHE/2.18.0/node_modules/.bin/cline

# others_running: another run of the real clients is going on (not ours: we run none).
others_running() { pgrep -f 'real_clients\.sh|drive\.sh|fixtures_rerun\.sh' >/dev/null; }

# skip_c WHY: part C cannot run here; a failure under CI.
skip_c()
{
	[[ ${CI:-} != true ]] || problem "C: $1 (CI=true)"
	say "C. skipped: $1"
}

# texts FILE: each JSON Lines message as {role, text} (its texts joined), as
# the OpenAI format has it; the system prompt left out.
texts()
{
	jq -c 'select(.role != "system") | {role, text: (if (.content | type) == "string" then .content
		else [.content[] | select(.type == "text") | .text] | join("\n") end)}' "$1"
}

# model_up DIR PART: the model server, its port in DIR/port, its log in DIR/model.log.
model_up()
{
	node "$TESTS_DIR/real_clients/model_server.js" "$1/port" "$1/model.log" $$ 2>"$1/model.err" &
	echo $! >"$1/model.pid"
	wait_for "$1/port" 20 || fail "$2: the model server did not start: $(cat "$1/model.err")"
}

# cli VERSION HOME ARGS...: the real CLI VERSION, with HOME, against nothing but the model server.
cli()
{
	local v=$1 home=$2
	shift 2
	env -u CLINE_DIR -u CLINE_DATA_DIR -u XDG_CONFIG_HOME -u XDG_DATA_HOME HOME="$home" NO_COLOR=1 \
		NO_AUTO_UPDATE=1 CLINE_NO_AUTO_UPDATE=1 CLINE_SESSION_BACKEND_MODE=local \
		PATH="$CACHE/$v/node_modules/.bin:$PATH" timeout -k 10 "$((120 * SLOW))" \
		"$CACHE/$v/node_modules/.bin/cline" "$@" </dev/null
}

# run_task DIR PART CMD...: the client's task CMD (its output in DIR/task.out), then the model server ends.
run_task()
{
	local dir=$1 part=$2 rc=0
	shift 2
	"$@" >"$dir/task.out" 2>&1 || rc=$?
	kill "$(cat "$dir/model.pid")" 2>/dev/null || true
	((rc == 0)) || problem "$part: the task ended with status $rc: $(tail -c 500 "$dir/task.out")"
}

run_c()
{
	local B=$T/c HOME_=$T/c/home CFG=$T/c/config id
	local DATA=$CFG/data
	mkdir -p "$HOME_" "$DATA" "$B/ws"
	model_up "$B" C
	mount_convfs "$DATA" "$B/store.db"
	cli 2.18.0 "$HOME_" auth -p openai -k sk-fake -m fake-model -b "http://127.0.0.1:$(cat "$B/port")/v1" \
		--config "$CFG" >"$B/auth.out" 2>&1 || fail "C: cline auth failed: $(tail -c 500 "$B/auth.out")"
	run_task "$B" C cli 2.18.0 "$HOME_" task "Write the files [window]" -y --config "$CFG" -c "$B/ws"
	id=$(jq -r '.[-1].id' "$DATA/state/taskHistory.json")
	V=$(echo "$DATA"/workspaces/*/tasks/"$id")
	[[ -d $V ]] || fail "C: no view folder of task '$id'"
	jq -e --arg id "$id" '.[] | select(.id == $id) | .conversationHistoryDeletedRange[1] >= 2' \
		"$DATA/state/taskHistory.json" >/dev/null ||
		fail "C: the client did not cut the conversation (its item: $(jq -c --arg id "$id" '.[] | select(.id == $id)' "$DATA/state/taskHistory.json" | cut -c1-400))"
	[[ -s $DATA/tasks/$id/context_history.json ]] || problem "C: the client wrote no context_history.json"
	# The record of the requests is the server's log: each line's messages.
	tail -n 1 "$B/record.jsonl" | jq -c '.body.messages[]' >"$B/last.jsonl"
	texts "$B/last.jsonl" >"$B/sent"
	texts "$V/context.jsonl" >"$B/seen"
	if ! cmp -s "$B/sent" "$B/seen"; then
		problem "C: context.jsonl is not what the client sent last (< sent, > context.jsonl):\n$({ diff "$B/sent" "$B/seen" || true; } | cut -c1-200 | head -n 20)"
	fi
	(($(wc -l <"$B/seen") < $(wc -l <"$V/messages.jsonl"))) ||
		problem "C: context.jsonl has $(wc -l <"$B/seen") messages, messages.jsonl $(wc -l <"$V/messages.jsonl"): nothing was cut"
	unmount_convfs "$DATA"
	check_log "$B/store.db.log"
}

# ---- D. the real CLI 3.0.65 spawns subagents -----------------------------------------
CLI3=$CACHE/3.0.65/node_modules/.bin/cline

# check_spawn SPAWN_DIR WANT_TASK WHAT: spawn.json says what spawned it, and its
# spawnedBy line of the parent's messages.jsonl makes that call.
check_spawn()
{
	local s=$1/spawn.json got line
	jq -e . "$s" >/dev/null 2>&1 || {
		problem "$3: spawn.json does not parse: $(head -c 300 "$s" 2>&1)"
		return
	}
	got=$(jq -r '[.task, .status, .systemPrompt, .agent] | join("|")' "$s")
	[[ $got == "$2|completed|You write files when asked.|$(basename "$1")" ]] ||
		problem "$3: spawn.json has task|status|systemPrompt|agent '$got'"
	[[ $(jq -r .startedAt "$s") =~ ^20[0-9-]{8}T[0-9:.]{12}Z$ && $(jq -r .updatedAt "$s") != null ]] ||
		problem "$3: spawn.json's times: $(jq -c '[.startedAt, .updatedAt]' "$s")"
	got=$(jq -r .spawnedBy "$s")
	[[ $got =~ ^\.\./\.\./messages\.jsonl:([0-9]+)$ ]] || {
		problem "$3: spawnedBy is '$got'"
		return
	}
	line=$(sed -n "${BASH_REMATCH[1]}p" "$1/../../messages.jsonl")
	jq -e --arg t "$2" '[.content[]? | select(.type == "tool_use" and .name == "spawn_agent" and .input.task == $t)] | length == 1' \
		<<<"$line" >/dev/null 2>&1 || problem "$3: line ${BASH_REMATCH[1]} of the parent's messages.jsonl makes no spawn_agent call of '$2': $(cut -c1-300 <<<"$line")"
}

run_d()
{
	local B=$T/d HOME_=$T/d/home S child grand n a d doc pair id hits
	local DATA=$HOME_/.cline/data
	mkdir -p "$DATA" "$B/ws"
	model_up "$B" D
	mount_convfs "$DATA" "$B/store.db"
	cli 3.0.65 "$HOME_" auth -p openai -k sk-fake -m fake-model -b "http://127.0.0.1:$(cat "$B/port")/v1" \
		>"$B/auth.out" 2>&1 || fail "D: cline auth failed: $(tail -c 500 "$B/auth.out")"
	cd "$B/ws"
	run_task "$B" D cli 3.0.65 "$HOME_" --json "Spawn a nested helper [spawn nested]" -c "$B/ws"
	cd "$T"
	[[ -s $B/ws/grandchild.txt ]] || problem "D: the subagent of the subagent wrote no grandchild.txt"
	S=$(echo "$DATA"/workspaces/*/tasks/*_*)
	[[ -d $S ]] || fail "D: no view folder of the session: $(ls -R "$DATA/workspaces" | head -20)"
	mapfile -t child < <(ls "$S/subagents" 2>/dev/null)
	((${#child[@]} == 1)) || fail "D: the session's subagents/ holds '${child[*]}'; expected one subagent ($(ls "$S"))"
	mapfile -t grand < <(ls "$S/subagents/$child/subagents" 2>/dev/null)
	((${#grand[@]} == 1)) || fail "D: the subagent's subagents/ holds '${grand[*]}'; expected one"
	[[ $(ls "$S/subagents/$child" | tr '\n' ' ') == "messages.jsonl spawn.json subagents " ]] ||
		problem "D: the subagent's folder holds '$(ls "$S/subagents/$child" | tr '\n' ' ')'"
	! ls "$S" | grep -q '\.messages\.jsonl$' || problem "D: the session's folder still lists $(ls "$S" | grep '\.messages\.jsonl$')"
	for pair in "$child ${S##*/}/$child" "$grand ${S##*/}/$grand"; do
		read -r a doc <<<"$pair"
		n=$(jq '.messages | length' "$DATA/sessions/$doc.messages.json")
		[[ $a == "$child" ]] && d=$S/subagents/$a || d=$S/subagents/$child/subagents/$a
		(($(wc -l <"$d/messages.jsonl") == n)) ||
			problem "D: $a's messages.jsonl has $(wc -l <"$d/messages.jsonl") lines; its conversation $n messages"
		# Each message by its id (the fake model's texts repeat from one conversation to the next).
		while read -r id; do
			hits=$(grep -r -l -F -- "\"$id\"" "$DATA/workspaces")
			[[ $hits == "$d/messages.jsonl" ]] || problem "D: grep -r finds $a's message $id in:\n$hits"
		done < <(jq -r '.id // empty' "$d/messages.jsonl")
	done
	check_spawn "$S/subagents/$child" "Spawn a helper that writes a file [child] [nest]" "D: the subagent"
	check_spawn "$S/subagents/$child/subagents/$grand" "Write grandchild.txt containing a greeting [child]" \
		"D: the subagent's subagent"
	# rm -r of the session goes to the trash (its subagents' folders go with it), mv brings all back.
	rm -r "$S" 2>"$B/rm.err" || problem "D: rm -r of the session failed: $(cat "$B/rm.err")"
	[[ ! -e $S ]] || problem "D: the session's folder is still there after rm -r"
	mv "$DATA/workspaces/.trash/${S##*/}" "$S" 2>"$B/mv.err" || problem "D: mv back from the trash failed: $(cat "$B/mv.err")"
	[[ -s $S/subagents/$child/subagents/$grand/spawn.json ]] || problem "D: after rm -r and mv back, the subagents are gone"
	unmount_convfs "$DATA"
	check_log "$B/store.db.log"
}

# ---- F. convfs undo on a task of the real CLI 1.0.10 -------------------------------
CLI1=$CACHE/1.0.10/node_modules/.bin/cline

# cli1 DIR NAME ARGS...: the real CLI 1.0.10 run in DIR (1.x takes the current
# folder as the workspace), its output in $B/NAME.out; tried again, up to
# three times, when its core did not come up in time ("failed to start
# instance"), as real_clients.sh does.
cli1()
{
	local dir=$1 name=$2 attempt rc
	shift 2
	for ((attempt = 1; ; attempt++)); do
		rc=0
		(cd "$dir" && cli 1.0.10 "$HOME_" "$@") >"$B/$name.out" 2>&1 || rc=$?
		((rc != 0 && attempt < 3)) && grep -q -E 'failed to start (new |auth )?instance' "$B/$name.out" || return $rc
		sleep 2
	done
}

# The agent writes hello.txt in a workspace that holds the user's notes.txt;
# then the user edits notes.txt. convfs undo of checkpoint 1 takes back
# hello.txt alone, in the workspace the task recorded.
run_f()
{
	local B=$T/f HOME_=$T/f/home W=$T/f/ws id V rc=0 i
	local DATA=$HOME_/.cline/data
	mkdir -p "$DATA" "$W"
	echo "the user's notes" >"$W/notes.txt"
	# 1.0.10 commits a checkpoint in the background and records its id in
	# ui_messages.json once the commit is done, but its core ends with the
	# CLI as soon as the task ends: the reply that ends the task waits 5 s,
	# as a model's would, so that the checkpoint after hello.txt gets its id.
	MODEL_SERVER_END_DELAY_MS=5000 model_up "$B" F
	mount_convfs "$DATA" "$B/store.db"
	cli1 "$W" auth auth -p openai -k sk-fake -m fake-model -b "http://127.0.0.1:$(cat "$B/port")/v1" ||
		fail "F: cline auth failed: $(tail -c 500 "$B/auth.out")"
	cli1 "$W" task "Create a file hello.txt containing a greeting" -y -m act -F json || rc=$?
	kill "$(cat "$B/model.pid")" 2>/dev/null || true
	((rc == 0)) || problem "F: the task ended with status $rc: $(tail -c 500 "$B/task.out")"
	[[ -f $W/hello.txt ]] || fail "F: the agent wrote no hello.txt in its workspace: $(ls -A "$W")"
	id=$(jq -r '.[-1].id' "$DATA/state/taskHistory.json")
	V=$(echo "$DATA"/workspaces/*/tasks/"$id")
	[[ -d $V/checkpoints ]] || fail "F: no checkpoints/ in the view folder of task '$id'"
	# Should the core still be saving when the CLI returns, wait for
	# checkpoint 1's agent.diff to name the agent's hello.txt.
	for ((i = 0; i < 60 * SLOW; i++)); do
		grep -q '^diff --git a/hello.txt b/hello.txt$' "$V"/checkpoints/001-*/agent.diff 2>/dev/null && break
		sleep 0.5
	done
	grep -q '^diff --git a/hello.txt b/hello.txt$' "$V"/checkpoints/001-*/agent.diff 2>/dev/null ||
		problem "F: 30 s after the task, checkpoint 1's agent.diff does not name hello.txt; checkpoints: $(ls "$V/checkpoints" | tr '\n' ' ')\n$(head -n 5 "$V"/checkpoints/001-*/agent.diff 2>&1)\nfiles_in_context: $(jq -c '.files_in_context' "$DATA/tasks/$id/task_metadata.json" 2>&1 | cut -c1-400)"
	echo "an edit of the user's" >>"$W/notes.txt"
	rc=0
	"$CONVFS" undo "$V" 1 >"$B/undo.out" 2>&1 || rc=$?
	((rc == 0)) && grep -q '^  remove   hello.txt (the agent made it)$' "$B/undo.out" &&
		! grep -q notes.txt "$B/undo.out" ||
		problem "F: the dry run (exit $rc) does not say it would remove hello.txt alone:\n$(cat "$B/undo.out")"
	[[ -f $W/hello.txt ]] || problem "F: the dry run removed hello.txt"
	cp "$W/hello.txt" "$B/hello.want"
	rc=0
	"$CONVFS" undo --apply --backup "$B/backup" "$V" 1 >"$B/undo.out" 2>&1 || rc=$?
	((rc == 0)) || problem "F: convfs undo --apply exited $rc:\n$(cat "$B/undo.out")"
	[[ ! -e $W/hello.txt ]] || problem "F: hello.txt, the agent's, is still in the workspace:\n$(cat "$B/undo.out")"
	same "$B/backup/hello.txt" "$B/hello.want" "F: the backup of hello.txt"
	[[ $(cat "$W/notes.txt") == "the user's notes"$'\n'"an edit of the user's" ]] ||
		problem "F: notes.txt, the user's, changed: $(cat "$W/notes.txt")"
	unmount_convfs "$DATA"
	check_log "$B/store.db.log"
}

# ---- G. a CLI 3.x session's compaction state -----------------------------------------
CORE3=$CACHE/3.0.65/node_modules/@cline/core/dist/index.js
SESSION=1795505492931_y5z6u

# compaction CMD ARGS...: the client's own compaction functions (memory_compaction.mjs).
compaction() { node "$TESTS_DIR/memory_compaction.mjs" "$@"; }

# check_projected B V WHAT: context.jsonl is what the client sends from its state and messages.jsonl.
check_projected()
{
	local B=$1 V=$2 rc=0
	compaction project "$CORE3" "$STATE" "$V/messages.jsonl" >"$B/want" 2>"$B/node.err" || rc=$?
	((rc == 0)) || fail "G: $3: the client's projectSessionCompactionState() does not apply the state (status $rc): $(cat "$B/node.err")"
	compaction norm "$V/context.jsonl" >"$B/got" 2>"$B/node.err" || problem "G: $3: context.jsonl is not JSON Lines: $(cat "$B/node.err")"
	if ! cmp -s "$B/got" "$B/want"; then
		problem "G: $3: context.jsonl is not the client's projection (< want, > got):\n$({ diff "$B/want" "$B/got" || true; } | cut -c1-200 | head -n 20)"
	fi
	# The compacted messages as JSON.stringify() writes them; the rest messages.jsonl's own lines.
	head -n 2 "$B/want" >"$B/w2"
	head -n 2 "$V/context.jsonl" >"$B/c2"
	same "$B/c2" "$B/w2" "G: $3: the compacted messages, as the client serialises them"
	[[ $(stat -c %s "$V/context.jsonl") == $(wc -c <"$V/context.jsonl") ]] ||
		problem "G: $3: stat gives context.jsonl $(stat -c %s "$V/context.jsonl") bytes; it reads $(wc -c <"$V/context.jsonl")"
}

# The 3.0.65 fixture's session (four messages, user input in its tags): with
# no state its context.jsonl is its messages.jsonl; the client compacts its
# first two messages, then the session goes on (an error shown, never sent,
# is appended): context.jsonl is the client's projection; a message before
# the cut edited, the state no longer applies: every message sent.
run_g()
{
	local B=$T/g D V S rc
	D=$(fixture_extract 3.0.65 "$B")/data
	STATE=$D/sessions/$SESSION/$SESSION.compaction.json
	mount_convfs "$D" "$B/store.db"
	V=$(echo "$D"/workspaces/*/tasks/$SESSION)
	[[ -d $V ]] || fail "G: no view folder of session $SESSION: $(ls "$D"/workspaces/*/tasks)"
	same "$V/context.jsonl" "$V/messages.jsonl" "G: a session with no compaction state"
	not_listed "$V" context.jsonl
	[[ $(stat -c %a "$V/context.jsonl") == 400 ]] || problem "G: context.jsonl has mode $(stat -c %a "$V/context.jsonl"); expected 400"
	compaction make "$CORE3" "$V/messages.jsonl" 2 "$SESSION" >"$B/state" 2>"$B/node.err" ||
		fail "G: the client's createSessionCompactionState() failed: $(cat "$B/node.err")"
	cp "$B/state" "$STATE"
	check_projected "$B" "$V" "the first two messages compacted"
	tail -n 2 "$V/messages.jsonl" >"$B/mt"
	tail -n 2 "$V/context.jsonl" >"$B/ct"
	same "$B/ct" "$B/mt" "G: the messages after the compacted ones, sent as stored"
	echo '{"id":"error_1","role":"assistant","content":[{"type":"text","text":"boom"}],"ts":1795505499000,"metadata":{"displayOnly":true,"displayRole":"error"}}' >>"$V/messages.jsonl" ||
		fail "G: cannot append a message to the session's messages.jsonl"
	check_projected "$B" "$V" "an error shown, never sent"
	(($(wc -l <"$V/context.jsonl") == 4)) || problem "G: context.jsonl has $(wc -l <"$V/context.jsonl") lines; expected 4 (two compacted, two after)"
	S=$(grep -c . "$V/messages.jsonl")
	grep -rlF msg_m1ojlqpj "$D/workspaces" >"$B/hits" || true
	[[ $(cat "$B/hits") == "$V/messages.jsonl" ]] || problem "G: grep -r over workspaces/ finds the last message in: $(tr '\n' ' ' <"$B/hits")"
	# A message before the cut edited, the session's file written back whole as the client writes it:
	# the state no longer applies.
	node -e 'const fs = require("fs"), f = process.argv[1], s = JSON.parse(fs.readFileSync(f, "utf8"));
		s.messages[0].content[0].text += " (edited)"; fs.writeFileSync(f, JSON.stringify(s, null, 2));' \
		"$D/sessions/$SESSION/$SESSION.messages.json" || fail "G: cannot write the session's messages"
	(($(grep -c . "$V/messages.jsonl") == S)) || fail "G: the edited messages.jsonl has $(grep -c . "$V/messages.jsonl") lines; expected $S"
	rc=0
	compaction project "$CORE3" "$STATE" "$V/messages.jsonl" >/dev/null 2>&1 || rc=$?
	((rc == 3)) || problem "G: the client still applies its state to the edited messages (status $rc)"
	grep -vF '"displayOnly"' "$V/messages.jsonl" >"$B/sent"
	same "$V/context.jsonl" "$B/sent" "G: a message before the cut edited: every message sent"
	unmount_convfs "$D"
	check_log "$B/store.db.log"
}

# install_clients V...: each CLI V in $CACHE, installed as real_clients.sh
# installs it (drive.sh's install_client) where this machine has yet to: on
# a fresh one this test may run before real_clients.sh. In a subshell of its
# own, so that a failure to install skips only the parts that run that CLI.
install_clients()
{
	local v
	for v in "$@"; do
		(. "$TESTS_DIR/real_clients/drive.sh" && install_client "$v") ||
			say "cannot install cline@$v: the parts that run it say so"
	done
}

if [[ ${CONVFS_VALGRIND:-} == 1 ]]; then
	install_clients 3.0.65
else
	install_clients 3.0.65 2.18.0 1.0.10
fi

if [[ ! -f $CORE3 ]]; then
	[[ ${CI:-} != true ]] || problem "G: the Cline CLI 3.0.65 is not installed in '$CACHE' (CI=true)"
	say "G. skipped: the Cline CLI 3.0.65 is not installed in '$CACHE', and could not be"
else
	say "G. a CLI 3.x session's compaction state, by the client's own functions"
	run_g
fi

if [[ ${CONVFS_VALGRIND:-} == 1 ]]; then
	say "C, D: not under valgrind (the clients' own time limits would end them; as for real_clients)"
elif [[ ! -x $CLI ]]; then
	skip_c "the Cline CLI 2.18.0 is not installed in '$CACHE', and could not be"
else
	i=0
	while others_running && ((i++ < 60)); do
		sleep 1
	done
	if others_running; then
		skip_c "another run of the real clients goes on"
	else
		say "C. the real CLI 2.18.0 cuts its conversation"
		export MODEL_SERVER_RECORD=$T/c/record.jsonl
		run_c
		unset MODEL_SERVER_RECORD
		if [[ ! -x $CLI3 ]]; then
			skip_c "the Cline CLI 3.0.65 is not installed in '$CACHE'"
		elif others_running; then
			skip_c "another run of the real clients goes on"
		else
			say "D. the real CLI 3.0.65 spawns subagents"
			run_d
		fi
		if [[ ! -x $CLI1 ]]; then
			skip_c "the Cline CLI 1.0.10 is not installed in '$CACHE'"
		elif others_running; then
			skip_c "another run of the real clients goes on"
		else
			say "F. convfs undo on a task of the real CLI 1.0.10"
			run_f
		fi
	fi
fi

pass
