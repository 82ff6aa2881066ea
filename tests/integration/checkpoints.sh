#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# checkpoints.sh: a task's checkpoints as read-only snapshot folders
# (workspaces/<ws>/tasks/<id>/checkpoints/<NNN>-<short hash>/).
#
#   A. Over the 1.0.10 fixture (a real shadow repo, two checkpoints): exactly
#      001-<7 hex> and 002-<7 hex>, in the order of the conversation; the
#      second one's files/hello.txt is what git reads at that commit;
#      commit.json gives hash, time, message and parent; the folder's mtime is
#      the checkpoint message's ts, checkpoints/'s the last one's; the task's
#      folder does not list checkpoints/, and grep -r of it finds the
#      checkpoint messages in one file; ui_messages.jsonl (messages.jsonl) is the
#      task's stream up to the message that carries the hash (cut at its
#      conversationHistoryIndex); changes.diff is `git diff`.
#   B. A shadow repo made in the mount as Cline makes it (checkpoints/<key>,
#      core.worktree = a workspace outside the mount whose path has non-ASCII
#      characters, "initial commit", then `git add -A && git commit
#      --allow-empty -m checkpoint-<key>-<task>`), with new, changed, deleted,
#      renamed, executable, symlinked, binary files, a subfolder, a mode
#      change and an empty checkpoint; a task of that workspace written as
#      Cline writes it. For each snapshot: `diff -r files/` against `git
#      archive` of its commit is empty, with the same types, executable bits
#      (0500/0400, docs/SECURITY.md), sizes and link targets; changes.diff is
#      `git diff <previous> <hash>`; every write-like call gets EROFS ("Read-
#      only file system") and changes nothing; `rsync -a` copies it.
#   C. A hash the repo lacks: the snapshot shows its conversation without
#      files/, everything it lists exists (ls -l, rsync -a work), the next
#      checkpoint's changes.diff is against the last commit the repo has, the
#      daemon lives on, and its log says why.
#   D. A commit of 10,000 files: `ls files/` lists 10000 names and
#      `ls -l files/` takes under 10 s (the time is printed; killed at 12 s).
#      Under valgrind (CONVFS_VALGRIND=1), 1,000 files.
#   E. With -o allow_other, a shadow repo that another user could swap or
#      redirect (its .git writable by others, or checkpoints/<key> owned by
#      another user) is not opened: no files/, one warning; once it is the
#      daemon user's alone again, it is.
#   F. checkpoints/ is not listed in the task's folder, so rm -r of a task
#      with checkpoints puts it in the trash, as rmdir of its folder does,
#      and mv brings it back with the same checkpoints and its messages.

. "$(dirname "$0")/lib.sh"

# git as the tests need it: no user or system configuration, no pager.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
# git's automatic gc runs, as for any user, but in the foreground: detached,
# it outlived the commit of 10,000 files with files of the mount open, and
# the unmount that follows failed with EBUSY on a loaded machine.
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=gc.autoDetach GIT_CONFIG_VALUE_0=false
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE

# cline_key PATH: Cline's checkpoint key of a workspace path.
cline_key()
{
	node -e '
		const p = process.argv[1];
		let h = 0;
		for (let i = 0; i < p.length; i++)
			h = (h * 31 + p.charCodeAt(i)) >>> 0;
		console.log(h);' "$1"
}

# The work tree git is given ($WT): the fixture repo's core.worktree is a
# path that does not exist here, and git refuses to run without it. An empty
# folder of the test's own: git refuses to run from a current folder inside
# the work tree that it does not track (the build folder may be under /tmp).
WT=$T/empty-work-tree
mkdir -p "$WT"

# extract_commit GIT_DIR HASH DEST: `git archive HASH`, extracted into DEST.
extract_commit()
{
	rm -rf "$3"
	mkdir -p "$3"
	git --git-dir="$1" --work-tree="$WT" -c tar.umask=0022 archive "$2" | tar -x -C "$3"
}

# tree_listing DIR: one line an entry: type, path, and for a file its size
# and whether its owner may execute it, for a link its target.
tree_listing()
{
	(cd "$1" && find . -mindepth 1 -printf '%y %p\n' | sort | while read -r type p; do
		case $type in
		f) printf 'f %s %s %s\n' "$p" "$(stat -c %s -- "$p")" "$([[ -x $p ]] && echo exec || echo noexec)" ;;
		l) printf 'l %s -> %s\n' "$p" "$(readlink -- "$p")" ;;
		*) printf '%s %s\n' "$type" "$p" ;;
		esac
	done)
}

# same_tree SNAPSHOT_FILES EXTRACT WHAT: diff -r empty, same listing.
same_tree()
{
	if ! diff -r --no-dereference "$1" "$2" >"$T/tree.diff" 2>&1; then
		problem "$3: diff -r against git archive is not empty:\n$(head -n 20 "$T/tree.diff")"
	fi
	if ! diff <(tree_listing "$2") <(tree_listing "$1") >"$T/listing.diff" 2>&1; then
		problem "$3: types, sizes, modes or link targets differ from git archive (< git, > snapshot):\n$(head -n 20 "$T/listing.diff")"
	fi
}

# check_commit_json SNAPSHOT GIT_DIR HASH WHAT: hash, time, message, parent.
check_commit_json()
{
	local s=$1 gd=$2 h=$3 what=$4 got want
	if ! jq -e . "$s/commit.json" >/dev/null 2>&1; then
		problem "$what: commit.json does not parse: $(head -c 300 "$s/commit.json" 2>&1)"
		return
	fi
	got=$(jq -r .hash "$s/commit.json")
	[[ $got == "$h" ]] || problem "$what: commit.json hash is '$got'; expected '$h'"
	got=$(jq -r .time "$s/commit.json")
	want=$(git --git-dir="$gd" --work-tree="$WT" show -s --format=%ct "$h")
	[[ $got == "$want" ]] || problem "$what: commit.json time is '$got'; expected '$want' (committer time)"
	got=$(jq -r .message "$s/commit.json")
	# git keeps bytes; commit.json shows what is not UTF-8 as U+FFFD, as node does.
	want=$(git --git-dir="$gd" --work-tree="$WT" show -s --format=%B "$h" |
		node -e 'process.stdout.write(require("fs").readFileSync(0).toString("utf8"))')
	[[ $got == "$want" ]] || problem "$what: commit.json message is '$got'; expected '$want'"
	got=$(jq -r .parent "$s/commit.json")
	want=$(git --git-dir="$gd" --work-tree="$WT" rev-parse -q --verify "$h^" 2>/dev/null || echo null)
	[[ $got == "$want" ]] || problem "$what: commit.json parent is '$got'; expected '$want'"
}

# check_conversation SNAPSHOT TASK_VIEW HASH WHAT: ui_messages.jsonl is the
# task's up to the first line with HASH, messages.jsonl the task's first
# conversationHistoryIndex+1 lines; the folder's mtime is that message's ts.
check_conversation()
{
	local s=$1 v=$2 h=$3 what=$4 n line idx ts got
	n=$(grep -n -m 1 -F "\"lastCheckpointHash\":\"$h\"" "$v/ui_messages.jsonl" | cut -d: -f1)
	if [[ -z $n ]]; then
		problem "$what: no line of the task's ui_messages.jsonl carries $h"
		return
	fi
	head -n "$n" "$v/ui_messages.jsonl" >"$T/ui.want"
	same "$s/ui_messages.jsonl" "$T/ui.want" "$what: ui_messages.jsonl (the task's first $n lines)"
	line=$(sed -n "${n}p" "$v/ui_messages.jsonl")
	idx=$(jq -r '.conversationHistoryIndex // -1' <<<"$line")
	ts=$(jq -r .ts <<<"$line")
	head -n $((idx + 1)) "$v/messages.jsonl" >"$T/api.want"
	same "$s/messages.jsonl" "$T/api.want" "$what: messages.jsonl (the task's first $((idx + 1)) lines)"
	got=$(stat -c %Y "$s")
	[[ $got == $((ts / 1000)) ]] || problem "$what: the folder's mtime is $got; expected $((ts / 1000)) (ts $ts)"
	got=$(stat -c %.3Y "$s")
	[[ $got == "$((ts / 1000)).$(printf %03d $((ts % 1000)))" ]] ||
		problem "$what: the folder's mtime is $got; expected the ts $ts to the millisecond"
}

# check_diff SNAPSHOT GIT_DIR WORK_TREE PREV HASH WHAT: changes.diff is `git diff PREV HASH`.
check_diff()
{
	git --git-dir="$2" --work-tree="$3" diff "$4" "$5" >"$T/diff.want"
	if ! cmp -s "$1/changes.diff" "$T/diff.want"; then
		problem "$6: changes.diff differs from 'git diff ${4:0:7} ${5:0:7}' (< git, > changes.diff):\n$(diff "$T/diff.want" "$1/changes.diff" 2>&1 | head -n 30 || true)"
	fi
}

# expect_erofs WHAT CMD...: CMD must fail with "Read-only file system".
expect_erofs()
{
	local what=$1 rc=0
	shift
	"$@" >/dev/null 2>"$T/erofs.err" || rc=$?
	if ((rc == 0)); then
		problem "$what: '$*' succeeded; expected EROFS"
	elif ! grep -q 'Read-only file system' "$T/erofs.err"; then
		problem "$what: '$*' failed, but not with EROFS: $(head -c 300 "$T/erofs.err")"
	fi
}

# ---- A. the 1.0.10 fixture ----------------------------------------------------
say "A. the 1.0.10 fixture"
mnt=$(fixture_extract 1.0.10 "$T/a")
store_a=$T/a/store.db
mount_convfs "$mnt" "$store_a"
V=$mnt/workspaces/greeter-3301258620/tasks/1795306331217
C=$V/checkpoints
GD=$mnt/checkpoints/3301258620/.git
# The repo's core.worktree is /home/dev/projects/greeter, not here.
ga() { git --git-dir="$GD" --work-tree=/tmp "$@"; }

# The distinct hashes the task's messages carry, in order.
mapfile -t want_hashes < <(jq -r '[.[] | .lastCheckpointHash | strings] | reduce .[] as $h ([]; if index([$h]) then . else . + [$h] end) | .[]' \
	"$mnt/tasks/1795306331217/ui_messages.json")
((${#want_hashes[@]} == 2)) || fail "the fixture's task carries ${#want_hashes[@]} checkpoint hashes; expected 2"
mapfile -t names < <(ls "$C" 2>"$T/ls.err") || true
want="001-${want_hashes[0]:0:7} 002-${want_hashes[1]:0:7}"
[[ ${names[*]} == "$want" ]] || problem "ls checkpoints/ shows '${names[*]}' ($(cat "$T/ls.err")); expected '$want'"
# Found by name, not listed: grep -r of the task reads its conversation once, not once a checkpoint.
! ls "$V" | grep -q checkpoints || problem "checkpoints/ is listed in the task's folder: $(ls "$V" | tr '\n' ' ')"
n=$(grep -r -l -F '"say":"checkpoint_created"' "$V" | wc -l)
((n == 1)) || problem "grep -r of the task finds its checkpoint messages in $n files; expected 1 (ui_messages.jsonl)"
# Its mtime is its last checkpoint's (not 1970).
[[ $(stat -c %Y "$C") == $(stat -c %Y "$C/${names[1]}") ]] ||
	problem "checkpoints/ has the mtime $(stat -c %y "$C"); its last checkpoint $(stat -c %y "$C/${names[1]}")"
for i in 0 1; do
	name=$(printf '%03d-%.7s' $((i + 1)) "${want_hashes[i]}")
	s=$C/$name
	h=${want_hashes[i]}
	[[ -d $s ]] || {
		problem "fixture: no snapshot folder $name"
		continue
	}
	entries=$(ls "$s" | tr '\n' ' ')
	[[ $entries == "agent.diff changes.diff commit.json files messages.jsonl ui_messages.jsonl " ]] ||
		problem "fixture $name: holds '$entries'"
	check_commit_json "$s" "$GD" "$h" "fixture $name"
	check_conversation "$s" "$V" "$h" "fixture $name"
	prev=${want_hashes[i - 1]:-}
	((i > 0)) || prev=$(ga rev-parse "$h^")
	check_diff "$s" "$GD" /tmp "$prev" "$h" "fixture $name"
	extract_commit "$GD" "$h" "$T/a/extract-$i"
	same_tree "$s/files" "$T/a/extract-$i" "fixture $name"
done
s=$C/$(printf '002-%.7s' "${want_hashes[1]}")
h=$(jq -r .hash "$s/commit.json" 2>/dev/null) || h=${want_hashes[1]}
ga cat-file -p "$h:hello.txt" >"$T/a/hello.want"
same "$s/files/hello.txt" "$T/a/hello.want" "fixture: the second checkpoint's files/hello.txt"
[[ -s $T/a/hello.want ]] || problem "fixture: hello.txt at ${h:0:7} is empty"
unmount_convfs "$mnt"
check_log "$store_a.log"

# ---- B. a generated shadow repo and task ---------------------------------------
say "B. a generated shadow repo"
mnt=$T/b/mnt
store=$T/b/store.db
mkdir -p "$mnt"
mount_convfs "$mnt" "$store"
log=$store.log
W="$T/work/proj é 日本 🚀"
mkdir -p "$W"
K=$(cline_key "$W")
TASK=1795400000000
GD=$mnt/checkpoints/$K/.git
WT=$W
g() { git --git-dir="$GD" --work-tree="$W" "$@"; }

# As Cline's CheckpointTracker: git init in checkpoints/<key>, then its config.
mkdir -p "$mnt/checkpoints" "$mnt/state" "$mnt/tasks/$TASK"
git init -q "$mnt/checkpoints/$K"
g config core.worktree "$W"
g config commit.gpgSign false
g config user.name "Cline Checkpoint"
g config user.email checkpoint@cline.bot
# commit_at SECONDS ARGS...: a commit at a given time (distinct from the ts of
# the message that carries it, so that the folder's mtime tells them apart).
commit_at()
{
	local at=$1
	shift
	GIT_AUTHOR_DATE="@$at +0000" GIT_COMMITTER_DATE="@$at +0000" g commit -q "$@"
}
commit_at 1700000000 --allow-empty -m "initial commit"
# checkpoint SECONDS: records the work tree as Cline does; appends the hash to HASHES.
HASHES=()
checkpoint()
{
	g add -A
	commit_at "$1" --allow-empty -m "checkpoint-$K-$TASK${2:-}"
	HASHES+=("$(g rev-parse HEAD)")
}

# 1: new files, a subfolder, an executable, a symlink, a binary, no newline at the end.
(
	cd "$W"
	printf '# proj\n\nA test workspace.\n' >README.md
	mkdir -p src/lib docs
	printf 'int main(void)\n{\n\treturn 0;\n}\n' >src/main.c
	printf '#pragma once\nint util(int);\n' >src/lib/util.h
	printf 'no newline at the end' >src/lib/tail.txt
	printf '#!/bin/sh\necho run\n' >run.sh
	chmod +x run.sh
	ln -s README.md readme-link
	ln -s src/lib link-to-dir
	printf '\x00\x01\x02binary\xff\xfe\n' >data.bin
	printf 'to be removed\n' >old.txt
)
checkpoint 1700000100
# 2: changes, a deleted file, a new file in a new subfolder, a mode change, a
# retargeted link.
(
	cd "$W"
	printf '# proj\n\nA test workspace, changed.\nAnd a new line.\n' >README.md
	printf 'int main(void)\n{\n\treturn 1;\n}\n' >src/main.c
	rm old.txt
	mkdir -p docs/deep/er
	printf 'a guide\n' >docs/deep/er/guide.md
	chmod +x src/lib/util.h
	ln -sfn src/main.c readme-link
	printf '\x00\x01\x03binary changed\n' >data.bin
)
checkpoint 1700000200
# 3: what `git diff` prints in its own way: a rename, names with spaces and
# non-ASCII, an empty new file; and a dangling link.
(
	cd "$W"
	: >empty.txt
	mv src/main.c src/app.c
	printf 'spaces\n' >"docs/a file with spaces.txt"
	printf 'unicode\n' >"docs/résumé 日本.txt"
	ln -s does/not/exist dangling
)
checkpoint 1700000300 $' \xff not UTF-8' # commit.json must still be JSON (U+FFFD)
# 4: nothing changed (--allow-empty).
checkpoint 1700000400

# write_task HASH...: writes the task as Cline does (api_conversation_history.json,
# ui_messages.json by atomicWriteFile), then its history item: for each HASH,
# an api request, text, an api message pair and a checkpoint_created message
# carrying it; at the end a completion_result carrying the last hash again.
write_task()
{
	node -e '
		const fs = require("fs");
		const [dir, ...hashes] = process.argv.slice(1);
		const T0 = 1795400000000;
		const ui = [], api = [];
		let ts = T0;
		const next = () => (ts += 1000 + 7);
		ui.push({ ts: T0, type: "say", say: "task", text: "Make the project", conversationHistoryIndex: -1 });
		hashes.forEach((h, k) => {
			api.push({ role: "user", content: [{ type: "text", text: `<task>step ${k}</task>` }], ts: next() });
			ui.push({ ts: next(), type: "say", say: "api_req_started", text: JSON.stringify({ request: `step ${k}` }),
				lastCheckpointHash: null, conversationHistoryIndex: api.length - 1 });
			api.push({ role: "assistant", content: [{ type: "text", text: `doing step ${k}` }], ts: next() });
			ui.push({ ts: next(), type: "say", say: "text", text: `doing step ${k}`, partial: false,
				conversationHistoryIndex: api.length - 1 });
			ui.push({ ts: next(), type: "say", say: "checkpoint_created", lastCheckpointHash: h,
				conversationHistoryIndex: api.length - 1 });
		});
		api.push({ role: "user", content: [{ type: "text", text: "done?" }], ts: next() });
		ui.push({ ts: next(), type: "say", say: "completion_result", text: "Done.",
			lastCheckpointHash: hashes[hashes.length - 1], conversationHistoryIndex: api.length - 1 });
		fs.writeFileSync(dir + "/api.json", JSON.stringify(api));
		fs.writeFileSync(dir + "/ui.json", JSON.stringify(ui));' "$T/b" "$@"
	node_client write_atomic.js "$mnt/tasks/$TASK/api_conversation_history.json" "$T/b/api.json"
	node_client write_atomic.js "$mnt/tasks/$TASK/ui_messages.json" "$T/b/ui.json"
	node -e '
		const [task, cwd] = process.argv.slice(1);
		process.stdout.write(JSON.stringify([{ id: task, ulid: "01M809H72PJEENCE4PW8EWY51W", ts: 1795400000000,
			task: "Make the project", tokensIn: 100, tokensOut: 20, cacheWrites: 0, cacheReads: 0, totalCost: 0,
			size: 1000, cwdOnTaskInitialization: cwd, isFavorited: false, modelId: "fake-model" }]));' \
		"$TASK" "$W" >"$T/b/history.json"
	node_client write_atomic.js "$mnt/state/taskHistory.json" "$T/b/history.json"
}
write_task "${HASHES[@]}"

# The task's folder in the view: workspaces/<name>-<key>/tasks/<id>.
ws=$(cd "$mnt/workspaces" && ls -d -- *-"$K" 2>/dev/null | head -n 1) || true
[[ -n $ws ]] || fail "no workspaces/<name>-$K for the workspace '$W':\n$(ls -la "$mnt/workspaces")"
got=$(jq -r .key "$mnt/workspaces/$ws/workspace.json" 2>&1) || true
[[ $got == "$K" ]] || problem "workspaces/$ws/workspace.json gives the key '$got'; expected $K"
V=$mnt/workspaces/$ws/tasks/$TASK
C=$V/checkpoints
[[ -d $C ]] || fail "no checkpoints/ in workspaces/$ws/tasks/$TASK:\n$(ls -la "$V" 2>&1)"

# snapshot_name I: the folder of the I-th checkpoint (from 1) of HASHES.
snapshot_name()
{
	printf '%03d-%.7s' "$1" "${HASHES[$1 - 1]}"
}

want=""
for ((i = 1; i <= ${#HASHES[@]}; i++)); do
	want+="$(snapshot_name "$i") "
done
got=$(ls "$C" | tr '\n' ' ')
[[ $got == "$want" ]] || problem "ls checkpoints/ shows '$got'; expected '$want'"

for ((i = 1; i <= ${#HASHES[@]}; i++)); do
	name=$(snapshot_name "$i")
	s=$C/$name
	h=${HASHES[i - 1]}
	if [[ ! -d $s/files ]]; then
		problem "generated $name: no files/ ($(ls "$s" 2>&1 | tr '\n' ' '))"
		continue
	fi
	extract_commit "$GD" "$h" "$T/b/extract-$i"
	same_tree "$s/files" "$T/b/extract-$i" "generated $name"
	check_commit_json "$s" "$GD" "$h" "generated $name"
	check_conversation "$s" "$V" "$h" "generated $name"
	prev=${HASHES[i - 2]:-}
	((i > 1)) || prev=$(g rev-parse "$h^")
	check_diff "$s" "$GD" "$W" "$prev" "$h" "generated $name"
	rm -rf "$T/b/out-$i"
	if ! rsync -a "$s/" "$T/b/out-$i/" 2>"$T/rsync.err"; then
		problem "generated $name: rsync -a failed: $(head -c 500 "$T/rsync.err")"
	else
		same_tree "$T/b/out-$i/files" "$T/b/extract-$i" "generated $name, copied by rsync -a"
		for f in commit.json changes.diff messages.jsonl ui_messages.jsonl; do
			same "$T/b/out-$i/$f" "$s/$f" "generated $name: $f copied by rsync -a"
		done
	fi
done

# The modes git archive gives 0755/0644 show as 0500/0400 (read-only, docs/SECURITY.md).
s=$C/$(snapshot_name 2)
for f in run.sh:500 src/lib/util.h:500 README.md:400 src/main.c:400; do
	got=$(stat -c %a "$s/files/${f%:*}" 2>&1) || true
	[[ $got == "${f#*:}" ]] || problem "generated: files/${f%:*} has mode $got; expected ${f#*:}"
done
got=$(stat -c %a "$T/b/extract-2/run.sh")
[[ $got == 755 ]] || problem "git archive gives run.sh mode $got; expected 755 (test bug)"
got=$(readlink "$s/files/readme-link" 2>&1) || true
[[ $got == src/main.c ]] || problem "generated: files/readme-link points to '$got'; expected src/main.c"
got=$(readlink "$C/$(snapshot_name 1)/files/readme-link" 2>&1) || true
[[ $got == README.md ]] || problem "generated: the first checkpoint's files/readme-link points to '$got'; expected README.md"
if [[ ! -x $s/files/run.sh ]] || ! "$s/files/run.sh" | grep -qx run; then
	problem "generated: files/run.sh does not run"
fi

say "B. writes get EROFS"
s=$C/$(snapshot_name 1)
tree_listing "$s" >"$T/b/before"
cp "$s/files/README.md" "$T/b/readme.before"
expect_erofs "touch an existing file" touch "$s/files/README.md"
expect_erofs "touch a new file" touch "$s/files/new.txt"
expect_erofs "echo > an existing file" sh -c "echo x >'$s/files/README.md'"
expect_erofs "echo >> an existing file" sh -c "echo x >>'$s/files/README.md'"
expect_erofs "echo > a new file" sh -c "echo x >'$s/files/new.txt'"
expect_erofs "echo > a new file in a subfolder" sh -c "echo x >'$s/files/src/lib/new.h'"
expect_erofs "truncate" truncate -s 0 "$s/files/README.md"
expect_erofs "rm a file" rm -f "$s/files/README.md"
expect_erofs "rm a link" rm -f "$s/files/readme-link"
expect_erofs "rm -r a folder" rm -rf "$s/files/src"
expect_erofs "rmdir a folder" rmdir "$s/files/src/lib"
expect_erofs "mkdir" mkdir "$s/files/newdir"
expect_erofs "mkdir in a subfolder" mkdir "$s/files/src/newdir"
expect_erofs "mv a file" mv "$s/files/README.md" "$s/files/README2.md"
# (mv to another filesystem copies, then fails to remove the original.)
expect_erofs "mv a file out" mv "$s/files/README.md" "$T/b/moved-out.md"
rm -f "$T/b/moved-out.md"
expect_erofs "mv a file in" sh -c "echo x >'$T/b/in.txt' && mv '$T/b/in.txt' '$s/files/in.txt'"
expect_erofs "chmod" chmod 0700 "$s/files/run.sh"
expect_erofs "ln -s" ln -s README.md "$s/files/link2"
expect_erofs "ln" ln "$s/files/README.md" "$s/files/hard"
expect_erofs "touch -d of files/" touch -d @0 "$s/files"
expect_erofs "echo > commit.json" sh -c "echo x >'$s/commit.json'"
expect_erofs "echo >> ui_messages.jsonl" sh -c "echo '{}' >>'$s/ui_messages.jsonl'"
expect_erofs "echo >> messages.jsonl" sh -c "echo '{\"role\":\"user\"}' >>'$s/messages.jsonl'"
expect_erofs "rm changes.diff" rm -f "$s/changes.diff"
expect_erofs "a new file in the snapshot" touch "$s/new"
expect_erofs "mkdir in checkpoints/" mkdir "$C/099-abcdef0"
expect_erofs "rm -r a snapshot" rm -rf "$s"
expect_erofs "mv a snapshot" mv "$s" "$C/098-abcdef0"
expect_erofs "rm -r checkpoints/" rm -rf "$C"
expect_erofs "rmdir files/" rmdir "$s/files"
tree_listing "$s" >"$T/b/after"
diff "$T/b/before" "$T/b/after" >/dev/null || problem "writes refused with EROFS changed the snapshot:\n$(diff "$T/b/before" "$T/b/after" | head -n 10 || true)"
same "$s/files/README.md" "$T/b/readme.before" "files/README.md after the refused writes"
[[ -d $V && -f $V/ui_messages.jsonl ]] || problem "the task is gone after the refused writes"

# ---- C. a hash the repo lacks ---------------------------------------------------
say "C. a checkpoint hash the repo lacks"
BOGUS=0123456789abcdef0123456789abcdef01234567
HASHES+=("$BOGUS")
write_task "${HASHES[@]}"
name=$(snapshot_name ${#HASHES[@]})
s=$C/$name
if [[ ! -d $s ]]; then
	problem "no snapshot folder $name for a hash the repo lacks (ls: $(ls "$C" | tr '\n' ' '))"
else
	got=$(ls "$s" 2>&1 | tr '\n' ' ')
	[[ $got != *files* ]] || problem "$name (a hash the repo lacks) lists files/: '$got'"
	[[ ! -e $s/files ]] || problem "$name (a hash the repo lacks) has a files/"
	[[ $got == *messages.jsonl* && $got == *ui_messages.jsonl* ]] ||
		problem "$name (a hash the repo lacks) lacks its conversation: '$got'"
	check_conversation "$s" "$V" "$BOGUS" "$name (a hash the repo lacks)"
	# What it lists exists: ls -l and rsync -a work.
	for f in $got; do
		[[ -e $s/$f ]] || problem "$name (a hash the repo lacks) lists $f, which does not exist: $(stat "$s/$f" 2>&1 >/dev/null || true)"
	done
	rc=0
	rsync -a "$s/" "$T/b/out-bogus/" 2>"$T/rsync.err" || rc=$?
	((rc == 0)) || problem "rsync -a of $name (a hash the repo lacks) fails with status $rc: $(head -n 1 "$T/rsync.err")"
fi
kill -0 "${DAEMON_PID[$mnt]}" 2>/dev/null || fail "the daemon died after a hash the repo lacks"
ls "$C" >/dev/null || problem "checkpoints/ does not list after a hash the repo lacks"
# The other snapshots still work.
extract_commit "$GD" "${HASHES[0]}" "$T/b/extract-1"
same_tree "$C/$(snapshot_name 1)/files" "$T/b/extract-1" "the first snapshot after a hash the repo lacks"
log_has "$log" "^convfs: warning: .*${BOGUS:0:7}" "the checkpoint hash the repo lacks"

# ---- D. a commit of 10,000 files -------------------------------------------------
# Under valgrind (lib.sh's SLOW), a tenth as many files with the same time
# limits: the code is the same, and git adding 10,000 files through a daemon
# under valgrind takes minutes.
NFILES=$((10000 / SLOW))
say "D. a commit of $NFILES files"
find "$W" -mindepth 1 -delete
(cd "$W" && for ((i = 0; i < NFILES; i++)); do printf 'file %d\n' "$i" >"f$(printf %05d "$i")"; done)
start=$(date +%s.%N)
checkpoint 1700000500
say "   git add + commit of $NFILES files in the mount: $(printf %.1f "$(bc <<<"$(date +%s.%N) - $start")") s"
write_task "${HASHES[@]}"
name=$(snapshot_name ${#HASHES[@]})
s=$C/$name
got=$(ls "$s/files/" | wc -l)
[[ $got == "$NFILES" ]] || problem "ls $name/files/ | wc -l gives $got; expected $NFILES"
start=$(date +%s.%N)
rc=0
timeout 12 ls -l "$s/files/" >"$T/b/ls-l" 2>"$T/b/ls-l.err" || rc=$?
secs=$(bc <<<"$(date +%s.%N) - $start")
say "   ls -l files/ of $NFILES files: $(printf %.3f "$secs") s"
if ((rc == 124)); then
	problem "ls -l of $NFILES files did not end within 12 s (killed; $(grep -c '^-' "$T/b/ls-l" || true) lines printed)"
elif ((rc != 0)); then
	problem "ls -l $name/files/ failed: $(head -c 300 "$T/b/ls-l.err")"
else
	(($(bc <<<"$secs > 10") == 0)) || problem "ls -l of $NFILES files took $secs s (over 10 s)"
	got=$(grep -c '^-r-------- ' "$T/b/ls-l" || true)
	[[ $got == "$NFILES" ]] || problem "ls -l $name/files/ shows $got read-only files; expected $NFILES"
fi
last=$(printf %05d $((NFILES - 1)))
got=$(cat "$s/files/f$last" 2>&1) || true
[[ $got == "file $((NFILES - 1))" ]] || problem "$name/files/f$last reads '$got'"
check_commit_json "$s" "$GD" "${HASHES[-1]}" "$name ($NFILES files)"
check_conversation "$s" "$V" "${HASHES[-1]}" "$name ($NFILES files)"
# Its previous checkpoint is the hash the repo lacks: its changes.diff is
# against the last one the repo has (here also its commit's parent).
if [[ -r $s/changes.diff ]]; then
	check_diff "$s" "$GD" "$W" "${HASHES[-3]}" "${HASHES[-1]}" "$name (after a hash the repo lacks)"
else
	problem "$name (after a hash the repo lacks): its changes.diff does not read: $(cat "$s/changes.diff" 2>&1 >/dev/null || true)"
fi

unmount_convfs "$mnt"
check_log "$log" "^convfs: warning: .*${BOGUS:0:7}"

# ---- E. -o allow_other: a repository others could redirect ---------------------
# With other users let in, libgit2 (which follows symlinks inside .git and
# opens a repository by path) only opens a repository that no other user can
# change: one writable by others, or owned by another user (whose symlinks a
# daemon running as root would follow as root), shows its checkpoints without
# files/, with a warning.
say "E. -o allow_other and who may change the repository"
BG=$store.files/checkpoints/$K/.git
s1=$C/$(snapshot_name 1)
first=$(git --git-dir="$BG" ls-tree --name-only "${HASHES[0]}" | head -n 1)
# not_opened WHAT WARNING: a mount with allow_other does not open the repository.
not_opened()
{
	mount_convfs "$mnt" "$store" -o allow_other
	[[ -d $s1 ]] || problem "with allow_other and $1, the checkpoint folder $(snapshot_name 1) is not there"
	[[ ! -e $s1/files ]] || problem "with allow_other, a shadow repository $1 was opened"
	unmount_convfs "$mnt"
	log_has "$log" "^convfs: warning: the shadow repository 'checkpoints/$K/\\.git' is not opened: $2" "a shadow repository $1"
}
chmod o+w "$BG"
not_opened "writable by others" "'checkpoints/$K/\\.git' is writable by group or others"
chmod o-w "$BG"
chown 65534 "$store.files/checkpoints/$K"
not_opened "in a folder of another user" "'checkpoints/$K' is owned by another user"
chown 0 "$store.files/checkpoints/$K"
mount_convfs "$mnt" "$store" -o allow_other
same "$s1/files/$first" <(git --git-dir="$BG" cat-file blob "${HASHES[0]}:$first") \
	"with allow_other, $(snapshot_name 1)/files/$first of a repository no other user can change"
unmount_convfs "$mnt"
check_log "$log" "^convfs: warning: .*(${BOGUS:0:7}|is not opened: .* (is writable by group or others|is owned by another user))"

# ---- F. removing a task that has checkpoints ---------------------------------------
# checkpoints/ is not listed in the task's folder, so rm -r of the task does
# not go down into its read-only files: it puts the task in the trash,
# checkpoints and all, as rmdir of the folder does, and mv brings it back
# with them.
say "F. rm -r and rmdir of a task with checkpoints"
mount_convfs "$mnt" "$store"
ls "$C" >"$T/b/cps.before"
[[ -s $T/b/cps.before ]] || problem "the task lists no checkpoints before its removal"
# back_from_trash HOW: the task went to the trash by HOW; mv it back, with the same checkpoints.
back_from_trash()
{
	if [[ -e $V || ! -d $mnt/workspaces/.trash/$TASK ]]; then
		problem "$1 of a task with checkpoints did not put it in the trash"
	elif ! mv "$mnt/workspaces/.trash/$TASK" "$V" 2>"$T/mv.err"; then
		problem "mv of the task back from the trash ($1) failed: $(cat "$T/mv.err")"
	elif ! ls "$C" | cmp -s - "$T/b/cps.before" || [[ ! -s $V/ui_messages.jsonl ]]; then
		problem "the task back from the trash ($1) lists other checkpoints ($(ls "$C" | tr '\n' ' ')) or lost its messages"
	fi
}
if rm -r "$V" 2>"$T/rm.err"; then
	back_from_trash "rm -r"
else
	problem "rm -r of a task with checkpoints failed: $(head -n 3 "$T/rm.err")"
fi
if rmdir "$V" 2>"$T/rmdir.err"; then
	back_from_trash rmdir
else
	problem "rmdir of a task with checkpoints failed: $(cat "$T/rmdir.err")"
fi
unmount_convfs "$mnt"
check_log "$log" "^convfs: warning: .*(${BOGUS:0:7}|is not opened: .* (is writable by group or others|is owned by another user))"

pass
