#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# workspaces.sh: the workspaces view works with the programs people use on it.
#
# Over the 2.18.0 fixture (and the 1.0.10 one for a folder with no
# workspaces/ of its own) it proves, with real programs, that
#   - `ls workspaces/` shows the client's own <hash> folders, untouched, beside
#     webapp-691006855 and api-server-2325622928, whose workspace.json gives
#     the path and key;
#   - task.json is the task's history item, at once after the item changes;
#   - `printf ... >>` appends one message, read back the same through
#     messages.jsonl / ui_messages.jsonl and the compat JSON files; a whole
#     rewrite (cat old new > tmp; cat tmp > file) with one new line is taken;
#   - a bad line (not JSON, an array, an api line without "role", a bad 2nd
#     line in one write, a last line with no newline) is refused with EINVAL
#     and changes nothing, byte for byte, in either view; emptying a
#     conversation (`: > messages.jsonl`) is refused at close with EPERM and
#     a log line that says to remove the task instead;
#   - `grep -r` finds a phrase in both workspaces; `jq -c .` reproduces each
#     .jsonl file; `rsync -a` run twice transfers nothing the second time;
#   - `rm -r` of a task (in the view or in tasks/) moves it to
#     workspaces/.trash, history item included, where its conversation reads
#     as it was (read-only), and `mv` brings all of it back;
#   - `mkdir` in a workspace's tasks/ makes a task and refuses a bad id
#     with EINVAL;
#   - any name the view is not showing can be made, written, renamed and
#     removed in workspaces/ as the client's own (Cline 2.x's <hash>/, 3.x's
#     chat/); a client entry renamed onto a view folder's name wins, and the
#     view's folder shows as <name>.view until it goes;
#   - inode numbers, mtimes and sizes stay the same across a remount, and
#     follow at once a change made through the compat files;
#   - find, ls -lR and du work, and `tail -f messages.jsonl` sees a message
#     Cline adds through the compat file;
#   - the daemon logs no warning but the refusals this test provokes.

. "$(dirname "$0")/lib.sh"

WS_A=webapp-691006855
WS_B=api-server-2325622928
TA=1795306269021
TB=1795306284156
NEW=1799000000000

pristine=$(fixture_extract 2.18.0 "$T/pristine")
mnt=$(fixture_extract 2.18.0 "$T/mnt")
store=$T/store.db
mount_convfs "$mnt" "$store"
W=$mnt/workspaces
VA=$W/$WS_A/tasks/$TA
VB=$W/$WS_B/tasks/$TB
CA=$mnt/tasks/$TA
CB=$mnt/tasks/$TB
HIST=$mnt/state/taskHistory.json

# append_raw FILE DATA: one open(O_APPEND), one write(DATA), one close, by
# node; prints ok, or the call that failed and its code (write:EINVAL).
append_raw()
{
	node -e '
		const fs = require("fs");
		const [file, data] = process.argv.slice(1);
		let fd;
		try { fd = fs.openSync(file, "a"); } catch (e) { console.log("open:" + e.code); process.exit(1); }
		try { fs.writeSync(fd, data); } catch (e) {
			console.log("write:" + e.code);
			try { fs.closeSync(fd); } catch (e2) {}
			process.exit(1);
		}
		try { fs.closeSync(fd); } catch (e) { console.log("close:" + e.code); process.exit(1); }
		console.log("ok");' "$1" "$2" || true
}

# lists DIR NAME: `ls -A DIR` shows NAME.
lists()
{
	ls -A "$1" 2>/dev/null | grep -qxF -- "$2"
}

# ls_workspaces [FLAGS] DIR: `ls` of a workspaces/ folder on one line, but
# the view's README.md (readme.sh checks it; its place depends on the locale).
ls_workspaces()
{
	ls "$@" | { grep -vxF README.md || true; } | tr '\n' ' '
}

# history_item ID: the item of ID in state/taskHistory.json (compact), or nothing.
history_item()
{
	jq -c --arg id "$1" '.[] | select(.id == $id)' "$HIST"
}

# jq_reproduces FILE WHAT: `jq -c . FILE` gives FILE back byte for byte.
jq_reproduces()
{
	if ! jq -c . "$1" >"$T/jq.out" 2>"$T/jq.err"; then
		problem "$2: jq -c . failed: $(cat "$T/jq.err")"
		return
	fi
	same "$T/jq.out" "$1" "$2: jq -c . does not reproduce the file"
}

# ---- 1. ls workspaces/ -------------------------------------------------------
say "the listing of workspaces/"
listing=$(ls_workspaces "$W")
[[ $listing == "1b84b014 292fed87 7561cf70 $WS_B $WS_A " ]] ||
	problem "ls workspaces/ shows '$listing'; expected the client's 1b84b014 292fed87 7561cf70 and $WS_B $WS_A"
lists "$W" README.md || problem "ls workspaces/ does not list the view's README.md"
for h in 292fed87 7561cf70; do
	same "$W/$h/workspaceState.json" "$pristine/workspaces/$h/workspaceState.json" "the client's workspaces/$h/workspaceState.json"
done
[[ -d $W/1b84b014 && -z $(ls -A "$W/1b84b014") ]] || problem "the client's empty folder workspaces/1b84b014 is not an empty folder"
for ws in "$WS_A /home/dev/projects/webapp 691006855" "$WS_B /home/dev/projects/api-server 2325622928"; do
	read -r name path key <<<"$ws"
	got=$(jq -r '.path + " " + .key' "$W/$name/workspace.json" 2>&1) || true
	[[ $got == "$path $key" ]] || problem "workspaces/$name/workspace.json gives path and key '$got'; expected '$path $key'"
done

# A task with no checkpoints: its checkpoints/ (found by name) is empty and
# has the task's time, not 1970's.
if [[ -d $VA/checkpoints && -z $(ls -A "$VA/checkpoints") ]]; then
	[[ $(stat -c %Y "$VA/checkpoints") == $(stat -c %Y "$VA") ]] ||
		problem "checkpoints/ of a task with none has the mtime $(stat -c %y "$VA/checkpoints"); the task's folder $(stat -c %y "$VA")"
else
	problem "checkpoints/ of a task with none is not an empty folder: $(ls -A "$VA/checkpoints" 2>&1 | head -n 3)"
fi

# The trash, empty so far, has the mount root's time, not 1970's.
if [[ -z $(ls -A "$W/.trash") ]]; then
	[[ $(stat -c %Y "$W/.trash") == $(stat -c %Y "$mnt") ]] ||
		problem "the empty workspaces/.trash has the mtime $(stat -c %y "$W/.trash"); the mount's root $(stat -c %y "$mnt")"
else
	problem "workspaces/.trash is not empty before any task was removed: $(ls -A "$W/.trash" | head -n 3)"
fi

# ---- 1b. task.json is the task's history item, and follows it ------------------
say "task.json and its history item"
# (The view keeps the last item it rendered until the next commit.)
task_json_is_item()
{
	local got want
	got=$(jq -c . "$VA/task.json" 2>&1) || true
	want=$(history_item "$TA")
	[[ -n $want && $got == "$want" ]] || problem "$1: task.json of $TA gives '$got'; its history item is '$want'"
}
task_json_is_item "as imported"
for flip in 1 2; do
	jq -c --arg id "$TA" 'map(if .id == $id then .isFavorited = (.isFavorited | not) else . end)' "$HIST" >"$T/hist.new"
	node_client write_atomic.js "$HIST" "$T/hist.new"
	task_json_is_item "right after the item's isFavorited was flipped ($flip)"
done

# ---- 8. jq -c . reproduces the .jsonl files (as imported) ---------------------
say "jq -c . of the imported conversations"
for v in "$VA" "$VB"; do
	for f in messages.jsonl ui_messages.jsonl; do
		jq_reproduces "$v/$f" "${v#"$mnt"/}/$f (imported)"
	done
done

# ---- 2. append with >> -------------------------------------------------------
say "appending with >>"
api_line='{"role":"user","content":[{"type":"text","text":"appended from the shell: é \"quoted\" back\\slash tab\t"}],"ts":1795306400000}'
ui_line='{"ts":1795306400001,"type":"say","say":"text","text":"appended to the UI stream","partial":false}'
jq -e . <<<"$api_line" >/dev/null && jq -e . <<<"$ui_line" >/dev/null # the test's own lines are valid

# check_appended JSONL COMPAT LINE COUNT WHAT: LINE is the last line of JSONL
# and the last element of COMPAT (byte for byte), which has COUNT elements.
check_appended()
{
	local jsonl=$1 compat=$2 line=$3 count=$4 what=$5 got
	got=$(tail -n 1 "$jsonl")
	[[ $got == "$line" ]] || problem "$what: the last line of ${jsonl#"$mnt"/} is '$got'; expected '$line'"
	got=$(jq -c '.[-1]' "$compat" 2>&1) || true
	[[ $got == "$(jq -c . <<<"$line")" ]] || problem "$what: the last element of ${compat#"$mnt"/} is '$got'; expected '$line'"
	grep -qF -- "$line" "$compat" || problem "$what: ${compat#"$mnt"/} does not hold the line byte for byte"
	got=$(jq length "$compat" 2>&1) || true
	[[ $got == "$count" ]] || problem "$what: ${compat#"$mnt"/} has $got elements; expected $count"
	got=$(wc -l <"$jsonl")
	[[ $got == "$count" ]] || problem "$what: ${jsonl#"$mnt"/} has $got lines; expected $count"
}

n_api=$(jq length "$CA/api_conversation_history.json")
n_ui=$(jq length "$CA/ui_messages.json")
printf '%s\n' "$api_line" >>"$VA/messages.jsonl"
check_appended "$VA/messages.jsonl" "$CA/api_conversation_history.json" "$api_line" $((++n_api)) "append with >>"
printf '%s\n' "$ui_line" >>"$VA/ui_messages.jsonl"
check_appended "$VA/ui_messages.jsonl" "$CA/ui_messages.json" "$ui_line" $((++n_ui)) "append with >>"

# ---- 3. a whole rewrite with one new line ------------------------------------
say "a rewrite with one new line"
# rewrite_plus JSONL COMPAT LINE COUNT: `cat JSONL new.line > tmp; cat tmp > JSONL`.
rewrite_plus()
{
	printf '%s\n' "$3" >"$T/new.line"
	cat "$VA/$1" "$T/new.line" >"$T/rewrite"
	cat "$T/rewrite" >"$VA/$1"
	same "$VA/$1" "$T/rewrite" "a rewrite of $1 with one new line"
	check_appended "$VA/$1" "$CA/$2" "$3" "$4" "a rewrite with one new line"
}
rewrite_plus messages.jsonl api_conversation_history.json \
	'{"role":"assistant","content":[{"type":"text","text":"added by a whole rewrite"}],"ts":1795306400002}' $((++n_api))
rewrite_plus ui_messages.jsonl ui_messages.json \
	'{"ts":1795306400003,"type":"say","say":"text","text":"added to the UI stream by a whole rewrite"}' $((++n_ui))

# ---- 4. bad lines are refused with EINVAL, nothing stored ---------------------
say "bad lines"
files=("$VA/messages.jsonl" "$VA/ui_messages.jsonl" "$CA/api_conversation_history.json" "$CA/ui_messages.json")
mkdir "$T/before"
for f in "${files[@]}"; do cp "$f" "$T/before/$(basename "$f")"; done
stat -c '%n %i %Y %s' "${files[@]}" >"$T/before.stat"

# refuse_shell JSONL LINE WHAT: `printf '%s\n' LINE >> JSONL` from a shell fails with EINVAL.
refuse_shell()
{
	local err
	if err=$(bash -c 'printf "%s\n" "$2" >>"$1"' _ "$1" "$2" 2>&1); then
		problem "$3 (printf >> ${1#"$mnt"/}) was accepted; expected Invalid argument"
	elif [[ $err != *"Invalid argument"* ]]; then
		problem "$3 (printf >> ${1#"$mnt"/}) failed with '$err'; expected Invalid argument"
	fi
}
refuse_shell "$VA/messages.jsonl" 'this is not JSON' "a line that is not JSON"
refuse_shell "$VA/messages.jsonl" '[{"role":"user","content":"an array"}]' "a JSON array line"
refuse_shell "$VA/messages.jsonl" '{"content":"no role","ts":1795306400004}' "an api line without role"
refuse_shell "$VA/messages.jsonl" '{"role":"user","content":"x"} {"role":"user","content":"y"}' "two objects on one line"
refuse_shell "$VA/messages.jsonl" '"a string"' "a JSON string line"
refuse_shell "$VA/ui_messages.jsonl" '{"ts":1795306400005,"type":"say","text":"torn' "a torn ui line"
refuse_shell "$VA/ui_messages.jsonl" '[1,2]' "a JSON array ui line"

good='{"role":"user","content":"a good first line","ts":1795306400006}'
got=$(append_raw "$VA/messages.jsonl" "$good"$'\n''{"content":"a bad second line"}'$'\n')
[[ $got == write:EINVAL ]] || problem "one write of a good line and a bad one returned '$got'; expected write:EINVAL"
got=$(append_raw "$VA/ui_messages.jsonl" '{"ts":1795306400007,"type":"say","say":"text","text":"good"}'$'\n''not json'$'\n')
[[ $got == write:EINVAL ]] || problem "one write of a good ui line and a bad one returned '$got'; expected write:EINVAL"

# A last line without its newline: refused at close (the shell does not see
# close's error; node does).
printf '%s' "$good" >>"$VA/messages.jsonl" || problem "printf of a line without newline failed at write; expected the refusal at close"
got=$(append_raw "$VA/messages.jsonl" "$good")
[[ $got == close:EINVAL ]] || problem "a last line without newline returned '$got'; expected close:EINVAL"

# Emptying a conversation through the view (`: > messages.jsonl`) is refused
# at close with EPERM and a log line that says how to remove a task.
: >"$VA/messages.jsonl" || true
got=$(node -e '
	const fs = require("fs");
	const fd = fs.openSync(process.argv[1], "w");
	try { fs.closeSync(fd); console.log("ok"); } catch (e) { console.log("close:" + e.code); }' "$VA/ui_messages.jsonl")
[[ $got == close:EPERM ]] || problem "emptying ui_messages.jsonl through the view returned '$got'; expected close:EPERM"
got=$(node -e '
	const fs = require("fs");
	const fd = fs.openSync(process.argv[1], "w");
	try { fs.closeSync(fd); console.log("ok"); } catch (e) { console.log("close:" + e.code); }' "$W/$WS_A/taskHistory.json")
[[ $got == close:EPERM ]] || problem "emptying a workspace's taskHistory.json returned '$got'; expected close:EPERM"
log_has "$store.log" "refusing to empty 'tasks/$TA/api_conversation_history\.json' through the view; nothing changes\. To remove a task, remove its folder" \
	"the refused emptying of messages.jsonl"

for f in "${files[@]}"; do
	same "$f" "$T/before/$(basename "$f")" "after the refused lines, ${f#"$mnt"/}"
done
stat -c '%n %i %Y %s' "${files[@]}" >"$T/after.stat"
diff "$T/before.stat" "$T/after.stat" >"$T/diff" || problem "the refused lines changed the metadata (inode mtime size):\n$(cat "$T/diff")"

# ---- 5. grep -r across workspaces -------------------------------------------
say "grep -r"
grep -rl "hello.txt" "$W"/*/tasks >"$T/grep.out" 2>"$T/grep.err" || problem "grep -r hello.txt workspaces/*/tasks failed: $(cat "$T/grep.err")"
for ws in "$WS_A" "$WS_B"; do
	grep -q "^$W/$ws/tasks/" "$T/grep.out" || problem "grep -r hello.txt finds nothing in workspaces/$ws:\n$(cat "$T/grep.out")"
done
[[ ! -s $T/grep.err ]] || problem "grep -r printed errors: $(cat "$T/grep.err")"

# ---- 10. mkdir makes a task ---------------------------------------------------
say "mkdir of a task"
if mkdir "$W/$WS_A/tasks/$NEW" 2>"$T/mkdir.err"; then
	for f in ui_messages.json api_conversation_history.json; do
		got=$(cat "$mnt/tasks/$NEW/$f" 2>&1) || true
		[[ $got == "[]" ]] || problem "after mkdir, tasks/$NEW/$f holds '$got'; expected []"
	done
	lists "$W/$WS_A/tasks" "$NEW" || problem "the task made by mkdir is not listed in workspaces/$WS_A/tasks"
	[[ -f $W/$WS_A/tasks/$NEW/messages.jsonl && ! -s $W/$WS_A/tasks/$NEW/messages.jsonl ]] ||
		problem "the task made by mkdir has no empty messages.jsonl"
else
	problem "mkdir workspaces/$WS_A/tasks/$NEW failed: $(cat "$T/mkdir.err")"
fi
for bad in not-a-number 1799000000000x; do
	if out=$(mkdir "$W/$WS_A/tasks/$bad" 2>&1); then
		problem "mkdir workspaces/$WS_A/tasks/$bad succeeded; a task id must be digits"
	elif [[ $out != *"Invalid argument"* ]]; then
		problem "mkdir workspaces/$WS_A/tasks/$bad failed, but not with EINVAL: $out"
	fi
	[[ ! -e $W/$WS_A/tasks/$bad && ! -e $mnt/tasks/$bad ]] || problem "the refused mkdir of '$bad' left something behind"
done

# ---- 7. rm -r a task, then mv it back ----------------------------------------
say "rm -r of a task and its restore"
# save_task ID VIEWDIR DEST: copies of a task's files in both views, and its history item.
save_task()
{
	mkdir -p "$3/view" "$3/compat"
	cp "$2"/* "$3/view/"
	cp "$mnt/tasks/$1"/* "$3/compat/"
	history_item "$1" >"$3/item"
	[[ -s $3/item ]] || fail "task $1 has no history item before the test removes it"
}

# check_removed ID VIEWDIR WHAT
check_removed()
{
	[[ ! -e $2 ]] || problem "$3: ${2#"$mnt"/} is still there"
	[[ ! -e $mnt/tasks/$1 ]] || problem "$3: tasks/$1 is still there"
	[[ -z $(history_item "$1") ]] || problem "$3: state/taskHistory.json still lists $1"
	lists "$W/.trash" "$1" || problem "$3: ls workspaces/.trash does not show $1"
	[[ -d $W/.trash/$1 ]] || problem "$3: workspaces/.trash/$1 is not a folder"
	(($(stat -c %Y "$W/.trash/$1") >= $(date +%s) - 60)) ||
		problem "$3: workspaces/.trash/$1 has mtime $(stat -c %y "$W/.trash/$1"), not the time it went there"
	# The trash shows the conversation as it was, read-only.
	local f
	for f in messages.jsonl ui_messages.jsonl metadata.json; do
		[[ -e $T/saved-$1/view/$f ]] || continue
		same "$W/.trash/$1/$f" "$T/saved-$1/view/$f" "$3: workspaces/.trash/$1/$f"
	done
	if echo '{}' 2>/dev/null >>"$W/.trash/$1/ui_messages.jsonl"; then
		problem "$3: workspaces/.trash/$1/ui_messages.jsonl took an append"
	fi
}

# check_restored ID VIEWDIR WHAT
check_restored()
{
	local f
	for f in "$T/saved-$1/view"/*; do
		same "$2/$(basename "$f")" "$f" "$3: ${2#"$mnt"/}/$(basename "$f")"
	done
	for f in "$T/saved-$1/compat"/*; do
		same "$mnt/tasks/$1/$(basename "$f")" "$f" "$3: tasks/$1/$(basename "$f")"
	done
	[[ $(history_item "$1") == "$(cat "$T/saved-$1/item")" ]] ||
		problem "$3: the history item of $1 is '$(history_item "$1")'; expected '$(cat "$T/saved-$1/item")'"
	! lists "$W/.trash" "$1" || problem "$3: workspaces/.trash still shows $1"
}

save_task "$TA" "$VA" "$T/saved-$TA"
# The kernel holds the compat folder of the task, fresh, as the view loses
# it: it must not go on showing it either.
stat "$mnt/tasks/$TA" >/dev/null
if rm -r "$VA" 2>"$T/rm.err"; then
	check_removed "$TA" "$VA" "rm -r of workspaces/$WS_A/tasks/$TA"
	if mv "$W/.trash/$TA" "$VA" 2>"$T/mv.err"; then
		check_restored "$TA" "$VA" "mv of workspaces/.trash/$TA back"
	else
		problem "mv workspaces/.trash/$TA workspaces/$WS_A/tasks/$TA failed: $(cat "$T/mv.err")"
	fi
else
	problem "rm -r workspaces/$WS_A/tasks/$TA failed: $(cat "$T/rm.err")"
fi

save_task "$TB" "$VB" "$T/saved-$TB"
# The kernel holds the view's folder of the task, fresh, as the compat tree
# loses it: it must not go on showing it (see check_removed).
stat "$VB" >/dev/null
if rm -r "$CB" 2>"$T/rm.err"; then
	check_removed "$TB" "$VB" "rm -r of tasks/$TB"
	if mv "$W/.trash/$TB" "$CB" 2>"$T/mv.err"; then
		check_restored "$TB" "$VB" "mv of workspaces/.trash/$TB to tasks/$TB"
	else
		problem "mv workspaces/.trash/$TB tasks/$TB failed: $(cat "$T/mv.err")"
	fi
else
	problem "rm -r tasks/$TB failed: $(cat "$T/rm.err")"
fi

# ---- metadata is fresh at once after a change through the compat files -------
say "metadata right after a compat write"
# The view's files and folders show the doc behind them: a change made
# through tasks/<id>/*.json must show in their size and mtime at once (what
# tail -n1, wc -c and rsync's quick check read), not after a cache expires.
fresh_line='{"role":"assistant","content":[{"type":"text","text":"written through the compat file"}],"ts":1795306400008}'
node -e '
	const fs = require("fs");
	const [from, line, to] = process.argv.slice(1);
	const msgs = JSON.parse(fs.readFileSync(from, "utf8"));
	msgs.push(JSON.parse(line));
	fs.writeFileSync(to, JSON.stringify(msgs));' "$CA/api_conversation_history.json" "$fresh_line" "$T/api.next"
sleep 1.1 # whatever the kernel cached of them before has expired
stat "$VA/messages.jsonl" "$W/$WS_A/workspace.json" >/dev/null # as a watcher or rsync would, just before
node_client write_atomic.js "$CA/api_conversation_history.json" "$T/api.next"
got_jsonl=$(stat -c '%s %.9Y' "$VA/messages.jsonl")
got_ws=$(stat -c '%.9Y' "$W/$WS_A/workspace.json")
doc_mtime=$(stat -c '%.9Y' "$CA/api_conversation_history.json")
want="$(cat "$VA/messages.jsonl" | wc -c) $doc_mtime" # the bytes read (wc -c <file would take st_size)
[[ $got_jsonl == "$want" ]] || problem "right after a write to tasks/$TA/api_conversation_history.json, stat of messages.jsonl gives size and mtime '$got_jsonl'; expected '$want' (its content and the doc's mtime)"
[[ $got_ws == "$doc_mtime" ]] || problem "right after a write to tasks/$TA/api_conversation_history.json, the mtime of workspaces/$WS_A/workspace.json is $got_ws; expected $doc_mtime (its last activity)"
got=$(tail -n 1 "$VA/messages.jsonl")
[[ $got == "$fresh_line" ]] || problem "right after a write to tasks/$TA/api_conversation_history.json, tail -n1 messages.jsonl gives '$got'; expected the new message '$fresh_line'"
((++n_api))

# ---- 6. rsync twice ---------------------------------------------------------
say "rsync -a twice"
# Quiescent: the kernel's attribute cache (1 s) has expired, so that this
# checks rsync itself and not the freshness checked just above.
sleep 1.1
rsync -a --itemize-changes "$mnt/" "$T/backup/" >"$T/rsync1" 2>"$T/rsync.err" || problem "rsync -a of the mount failed: $(cat "$T/rsync.err")"
same "$T/backup/workspaces/$WS_A/tasks/$TA/messages.jsonl" "$VA/messages.jsonl" "rsync's copy of messages.jsonl"
rsync -a --itemize-changes "$mnt/" "$T/backup/" >"$T/rsync2" 2>"$T/rsync.err" || problem "the second rsync -a failed: $(cat "$T/rsync.err")"
[[ ! -s $T/rsync2 ]] || problem "the second rsync -a transferred something:\n$(head -n 20 "$T/rsync2")"
# Right after a >> append, with the folders' attributes freshly cached by the
# rsync just made: the kernel is told the folders changed, so an rsync at once
# copies the new times, and its rerun copies nothing.
stat "$W/$WS_A" "$W/$WS_A/tasks" >/dev/null # cached by the kernel now, as by that rsync
printf '%s\n' '{"role":"user","content":[{"type":"text","text":"just before a backup"}],"ts":1795306400009}' >>"$VA/messages.jsonl"
((++n_api))
doc_mtime=$(stat -c '%.9Y' "$CA/api_conversation_history.json")
for d in "$W/$WS_A" "$W/$WS_A/tasks"; do
	got=$(stat -c '%.9Y' "$d")
	[[ $got == "$doc_mtime" ]] || problem "right after >>, the mtime of ${d#"$mnt"/} is $got; expected $doc_mtime (its last activity)"
done
rsync -a "$mnt/" "$T/backup/" 2>"$T/rsync.err" || problem "rsync -a right after >> failed: $(cat "$T/rsync.err")"
sleep 1.1 # the rerun sees the folders as they are, whatever the kernel had cached
rsync -a --itemize-changes "$mnt/" "$T/backup/" >"$T/rsync3" 2>"$T/rsync.err" || problem "the rerun failed: $(cat "$T/rsync.err")"
[[ ! -s $T/rsync3 ]] || problem "after a >> append, an rsync and its rerun: the rerun transferred something (stale folder times):\n$(head -n 20 "$T/rsync3")"

# ---- 9. inode numbers and mtimes across a remount ----------------------------
say "remount"
# stat_all: inode, mtime and size of the view and of the compat files.
stat_all()
{
	find "$W" "$mnt/tasks" "$mnt/state" -print0 | sort -z | xargs -0 stat -c '%n %i %Y %s'
}
stat_all >"$T/stat.before"
unmount_convfs "$mnt"
mount_convfs "$mnt" "$store"
stat_all >"$T/stat.after"
diff "$T/stat.before" "$T/stat.after" >"$T/diff" ||
	problem "inode, mtime or size changed across a remount (name inode mtime size):\n$(head -n 20 "$T/diff")"
rsync -a --itemize-changes "$mnt/" "$T/backup/" >"$T/rsync3" 2>"$T/rsync.err" || problem "rsync -a after remounting failed: $(cat "$T/rsync.err")"
[[ ! -s $T/rsync3 ]] || problem "rsync -a after remounting transferred something:\n$(head -n 20 "$T/rsync3")"

# ---- 8. jq -c . reproduces the .jsonl files (after the changes) -------------
say "jq -c . of the changed conversations"
for v in "$VA" "$VB"; do
	for f in messages.jsonl ui_messages.jsonl; do
		jq_reproduces "$v/$f" "${v#"$mnt"/}/$f (after the changes)"
	done
done

# ---- 11. find, ls -lR, du, tail -f -----------------------------------------
say "find, ls -lR, du, tail -f"
for cmd in "find $mnt" "ls -lR $mnt" "du -s $mnt"; do
	$cmd >/dev/null 2>"$T/cmd.err" || problem "'$cmd' failed: $(cat "$T/cmd.err")"
	[[ ! -s $T/cmd.err ]] || problem "'$cmd' printed errors: $(cat "$T/cmd.err")"
done
[[ $(find "$W" -name messages.jsonl -path "*/tasks/*" | wc -l) == 3 ]] ||
	problem "find does not see the three tasks' messages.jsonl:\n$(find "$W" -name messages.jsonl)"

tail_line='{"role":"assistant","content":[{"type":"text","text":"written by Cline through the compat file"}],"ts":1795306400009}'
tail -n 0 -f "$VA/messages.jsonl" >"$T/tail.out" 2>"$T/tail.err" &
tail_pid=$!
sleep 0.5 # tail opens the file and goes to its end
node -e '
	const fs = require("fs");
	const [from, line, to] = process.argv.slice(1);
	const msgs = JSON.parse(fs.readFileSync(from, "utf8"));
	msgs.push(JSON.parse(line));
	fs.writeFileSync(to, JSON.stringify(msgs));' "$CA/api_conversation_history.json" "$tail_line" "$T/api.next"
node_client write_atomic.js "$CA/api_conversation_history.json" "$T/api.next"
seen=0
for ((i = 0; i < 50; i++)); do
	if grep -qxF -- "$tail_line" "$T/tail.out"; then seen=1; break; fi
	sleep 0.1
done
kill "$tail_pid"
wait "$tail_pid" 2>/dev/null || true
((seen)) || problem "tail -f messages.jsonl did not see the message added through api_conversation_history.json within 5 s; it printed:\n$(cat "$T/tail.out" "$T/tail.err")"
[[ $(tail -n 1 "$VA/messages.jsonl") == "$tail_line" ]] || problem "messages.jsonl does not end with the message added through the compat file"

unmount_convfs "$mnt"
# The refusals this test provokes, and nothing else.
check_log "$store.log" "^convfs: warning: refusing ((to append to|the last line written to) 'tasks/$TA/(api_conversation_history|ui_messages)\.json'|to make the task 'workspaces/$WS_A/tasks/(not-a-number|1799000000000x)'|to empty '(tasks/$TA/(api_conversation_history|ui_messages)\.json|workspaces/$WS_A/taskHistory\.json)' through the view)"

# ---- 1.0.10: a folder with no workspaces/ of its own -------------------------
say "fixture 1.0.10"
pristine10=$(fixture_extract 1.0.10 "$T/pristine10")
mnt10=$(fixture_extract 1.0.10 "$T/mnt10")
store10=$T/store10.db
mount_convfs "$mnt10" "$store10"
listing=$(ls_workspaces "$mnt10/workspaces")
[[ $listing == "greeter-3301258620 " ]] || problem "1.0.10: ls workspaces/ shows '$listing'; expected greeter-3301258620"
got=$(jq -r '.path + " " + .key' "$mnt10/workspaces/greeter-3301258620/workspace.json" 2>&1) || true
[[ $got == "/home/dev/projects/greeter 3301258620" ]] || problem "1.0.10: workspace.json gives '$got'"
same "$mnt10/workspace/workspaceState.json" "$pristine10/workspace/workspaceState.json" "1.0.10: the client's workspace/workspaceState.json"
for f in "$mnt10"/workspaces/greeter-3301258620/tasks/*/*.jsonl; do
	jq_reproduces "$f" "1.0.10: ${f#"$mnt10"/}"
done
grep -rq "hello.txt" "$mnt10"/workspaces/*/tasks || problem "1.0.10: grep -r hello.txt finds nothing in workspaces/*/tasks"

# ---- the client's own entries in workspaces/ ---------------------------------
# Cline CLI 2.x makes workspaces/<hex hash>/workspaceState.json on its first
# command, 3.x workspaces/chat/AGENTS.md: any name the view is not showing is
# the client's, as a plain file or folder. A name the view shows is taken by
# a rename; the view's folder then shows as <name>.view, until the client's goes.
say "the client's own entries in workspaces/ (no folder of its own before)"
W10=$mnt10/workspaces
G=greeter-3301258620
mkdir "$W10/3514871d" && printf '{"a":1}' >"$W10/3514871d/workspaceState.json" ||
	problem "mkdir workspaces/3514871d and a file in it failed"
[[ $(cat "$W10/3514871d/workspaceState.json" 2>&1) == '{"a":1}' ]] || problem "workspaces/3514871d/workspaceState.json does not read back"
mkdir -p "$W10/chat" && echo '# agents' >"$W10/chat/AGENTS.md" || problem "mkdir -p workspaces/chat failed"
echo note >"$W10/notes.txt" && mv "$W10/notes.txt" "$W10/notes2.txt" || problem "a plain file in workspaces/ cannot be made and renamed"
listing=$(ls_workspaces "$W10")
[[ $listing == "3514871d chat $G notes2.txt " ]] || problem "ls workspaces/ shows '$listing'"
mkdir "$W10/$G" 2>/dev/null && problem "mkdir of the name the view shows ($G) succeeded"
[[ -f $T/store10.db.files/workspaces/3514871d/workspaceState.json ]] || problem "the client's folder is not in the backing tree"
mkdir "$W10/mine"
mv -T "$W10/mine" "$W10/$G" || problem "mv -T of the client's folder onto the view's $G failed"
listing=$(ls_workspaces "$W10")
[[ $listing == "3514871d chat $G $G.view notes2.txt " ]] || problem "after the clash, ls workspaces/ shows '$listing'"
[[ -d $W10/$G && -z $(ls -A "$W10/$G") ]] || problem "workspaces/$G is not the client's empty folder"
[[ -f $W10/$G.view/workspace.json ]] || problem "the view's folder is not at workspaces/$G.view"
rmdir "$W10/$G" || problem "the client's workspaces/$G cannot be removed"
[[ -f $W10/$G/workspace.json && ! -e $W10/$G.view ]] || problem "the view's folder did not come back to its own name"
rm -r "$W10/3514871d" "$W10/chat" "$W10/notes2.txt" || problem "the client's entries cannot be removed"
listing=$(ls_workspaces -A "$W10")
[[ $listing == ".trash $G " ]] || problem "after removing the client's entries, ls -A workspaces/ shows '$listing'"
unmount_convfs "$mnt10"
check_log "$store10.log"
log_has "$store10.log" "the client has its own 'workspaces/$G': the view shows its folder of that name as '$G.view'" \
	"the clash of names"

pass
