#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bad_input.sh: bad input gets a clear error and loses nothing.
#
# On a mount of the 2.18.0 fixture:
#   - malformed JSON of every kind (truncated, a top-level object, invalid
#     UTF-8, a NUL byte, nesting past the limit, trailing data), written by
#     temp + rename (mv fails with EINVAL) and in place (dd fails on close
#     with EINVAL): the previous version reads back byte-for-byte, and the
#     log says why, one line each;
#   - names over NAME_MAX: ENAMETOOLONG, nothing created;
#   - a task folder whose name is not a Cline id is a plain folder: its
#     ui_messages.json takes any bytes and is not a doc;
#   - a symlink planted in the backing tree in place of a folder the kernel
#     still knows (as an attacker racing the daemon would): the daemon refuses
#     to follow it (ELOOP), and the file outside stays untouched;
#   - the daemon is alive at the end, and the store's integrity check is ok.
#
# meson runs it twice: as it is, and with CONVFS_NO_OPENAT2=1, where the
# daemon resolves backing paths without openat2 (as on old kernels and under
# valgrind), which must refuse the same links.

. "$(dirname "$0")/lib.sh"

MNT=$(fixture_extract 2.18.0 "$T/fx")
STORE=$T/store.db
mount_convfs "$MNT" "$STORE"

UI=tasks/1795306269021/ui_messages.json
cp "$MNT/$UI" "$T/ui.before"

bad=$T/bad
mkdir -p "$bad"
printf '[{"ts":1,"type":"say"' >"$bad/truncated"
printf '{"not":"an array"}' >"$bad/object"
printf '[{"ts":1,"text":"\xff\xfe"}]' >"$bad/utf8"
printf '[{"ts":1,"text":"a\0b"}]' >"$bad/nul"
printf '[]x' >"$bad/trailing"
node -e 'process.stdout.write("[" + "[".repeat(1000) + "]".repeat(1000) + "]")' >"$bad/deep"
: >"$bad/empty"

for kind in truncated object utf8 nul trailing deep empty; do
	# temp + rename, as Cline's atomicWriteFile
	tmp="$MNT/$UI.tmp.1.$kind.json"
	cp "$bad/$kind" "$tmp"
	if out=$(mv "$tmp" "$MNT/$UI" 2>&1); then
		problem "$kind: the rename of a malformed file over ui_messages.json succeeded"
	elif [[ $out != *"Invalid argument"* && $out != *"subdirectory of itself"* ]]; then
		# (mv words rename's EINVAL as "cannot move ... to a subdirectory of itself")
		problem "$kind: the rename failed, but not with EINVAL: $out"
	fi
	rm -f "$tmp"
	same "$MNT/$UI" "$T/ui.before" "$kind (rename): the previous version"
	# in place: dd reports an error of close()
	if out=$(dd if="$bad/$kind" of="$MNT/$UI" status=none 2>&1); then
		problem "$kind: an in-place write of a malformed file succeeded"
	elif [[ $out != *"Invalid argument"* ]]; then
		problem "$kind: the in-place write failed, but not with EINVAL: $out"
	fi
	same "$MNT/$UI" "$T/ui.before" "$kind (in place): the previous version"
done
log_has "$STORE.log" "refusing to commit '$UI'.*invalid utf-8" "invalid UTF-8"
log_has "$STORE.log" "refusing to commit '$UI'.*nesting too deep" "the nesting limit"
log_has "$STORE.log" "refusing to commit '$UI'.*top-level value is not an array" "a top-level object"

say "a refused save keeps the writer's base"
# One writer saves [a, b], has a save refused, then saves [a]: b goes, since
# the writer had written it. (The base was lost after a refusal: the last
# save merged with no base and kept b.)
for how in rename inplace; do
	task=1795306271000
	[[ $how == rename ]] || task=1795306272000
	mkdir "$MNT/tasks/$task"
	node_client refused_save.js "$MNT/tasks/$task/ui_messages.json" "$how" "$T/refused.$how"
	[[ $(head -n 1 "$T/refused.$how") == EINVAL ]] ||
		problem "$how: the invalid save was not refused with EINVAL: $(head -n 1 "$T/refused.$how")"
	tail -n 1 "$T/refused.$how" >"$T/refused.$how.want"
	printf '%s\n' "$(cat "$MNT/tasks/$task/ui_messages.json")" >"$T/refused.$how.got"
	cmp -s "$T/refused.$how.got" "$T/refused.$how.want" ||
		problem "$how: after a refused save, the writer's save of [a] reads $(jq -c 'map(.ts)' "$T/refused.$how.got"), not [a]"
done
log_has "$STORE.log" "refusing to commit 'tasks/1795306271000/ui_messages.json'" "the refused rename"
log_has "$STORE.log" "refusing to commit 'tasks/1795306272000/ui_messages.json'" "the refused in-place save"

say "names"
long=$(printf 'n%.0s' $(seq 1 300))
if out=$(touch "$MNT/$long" 2>&1); then
	problem "a name of 300 bytes was created"
elif [[ $out != *"File name too long"* ]]; then
	problem "a name of 300 bytes failed, but not with ENAMETOOLONG: $out"
fi
[[ -z $(find "$T/store.db.files" -name 'nnnnnnnnnn*' -print -quit) ]] || problem "a long name reached the backing tree"

say "a task folder that is not a Cline id"
mkdir "$MNT/tasks/not-a-task"
printf 'not json at all' >"$MNT/tasks/not-a-task/ui_messages.json"
[[ $(cat "$MNT/tasks/not-a-task/ui_messages.json") == "not json at all" ]] || problem "tasks/not-a-task/ui_messages.json is not a plain file"

say "a symlink planted in the backing tree"
mkdir -p "$T/outside"
echo secret >"$T/outside/f"
mkdir "$MNT/plainfolder"
echo mine >"$MNT/plainfolder/f"
cat "$MNT/plainfolder/f" >/dev/null
# Behind the daemon's back, the folder becomes a link out of its tree.
mv "$T/store.db.files/plainfolder" "$T/plainfolder.moved"
ln -s "$T/outside" "$T/store.db.files/plainfolder"
echo overwritten >"$MNT/plainfolder/f" 2>/dev/null || true
cat "$MNT/plainfolder/f" >/dev/null 2>&1 || true
[[ $(cat "$T/outside/f") == secret ]] || problem "the daemon followed a symlink out of its tree and wrote through it"
rm "$T/store.db.files/plainfolder"
mv "$T/plainfolder.moved" "$T/store.db.files/plainfolder"
# The same with the file itself (the last component) replaced by a link.
echo mine >"$MNT/plainfile"
cat "$MNT/plainfile" >/dev/null
mv "$T/store.db.files/plainfile" "$T/plainfile.moved"
ln -s "$T/outside/f" "$T/store.db.files/plainfile"
echo overwritten >"$MNT/plainfile" 2>/dev/null || true
[[ $(cat "$T/outside/f") == secret ]] || problem "the daemon followed a symlink at the leaf out of its tree and wrote through it"
rm "$T/store.db.files/plainfile"
mv "$T/plainfile.moved" "$T/store.db.files/plainfile"
if [[ ${CONVFS_NO_OPENAT2:-} == 1 ]]; then
	log_has "$STORE.log" "^convfs: info: CONVFS_NO_OPENAT2=1: resolving paths" "the walk without openat2"
fi

# (Under valgrind 1 MB, the same code: 100 MB through memcheck take over 10 minutes.)
BIG_MB=100
((SLOW == 1)) || BIG_MB=1
say "a $BIG_MB MB message"
# Not bad input, but the biggest a client could write: stored and read back
# whole, in place and as one `>>` line of the view.
VIEW_UI=$MNT/workspaces/api-server-2325622928/tasks/1795306284156/ui_messages.jsonl
node -e '
	const fs = require("fs");
	const mb = Number(process.argv[4]);
	const a = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
	a.push({ ts: 1795400000001, type: "say", say: "text", text: "q".repeat(mb << 20) });
	fs.writeFileSync(process.argv[2], JSON.stringify(a));
	fs.writeFileSync(process.argv[3], JSON.stringify({ ts: 1795400000002, type: "say", say: "text",
		text: "r".repeat(mb << 20) }) + "\n");' "$MNT/$UI" "$T/big.json" "$T/big.line" "$BIG_MB"
cp "$T/big.json" "$MNT/$UI"
same "$MNT/$UI" "$T/big.json" "a conversation with a $BIG_MB MB message"
cat "$T/big.line" >>"$VIEW_UI"
tail -n 1 "$VIEW_UI" >"$T/big.back"
same "$T/big.back" "$T/big.line" "a $BIG_MB MB line appended to the view"
rm -f "$T/big.json" "$T/big.line" "$T/big.back"

say "names"
# The kernel resolves "." and ".." before the daemon sees a path, and no
# system call takes a name with a NUL byte in it (it ends the name), so those
# two only need the daemon to stay out of the way. Every other byte but '/'
# is a name: kept exactly, never decoded ("%2F" is no slash).
[[ $(cat "$MNT/tasks/../state/taskHistory.json") == "$(cat "$MNT/state/taskHistory.json")" ]] ||
	problem "tasks/../state/taskHistory.json does not read as state/taskHistory.json"
mkdir "$MNT/names"
names=($'\xff\xfe' 'a%2Fb' $'\xe2\x88\x95slash' '...' '.. ' $'new\nline' $'esc\e[31m' '-rf' ' lead' 'a\b')
for n in "${names[@]}"; do
	printf '%s' "$n" >"$MNT/names/$n" || problem "cannot create the name $(printf %q "$n")"
done
for n in "${names[@]}"; do
	[[ $(cat "$MNT/names/$n" 2>/dev/null) == "$n" ]] || problem "the name $(printf %q "$n") does not read back"
	[[ -f $T/store.db.files/names/$n ]] || problem "the name $(printf %q "$n") is not kept as it is in the backing tree"
done
(($(find "$MNT/names" -mindepth 1 -printf x | wc -c) == ${#names[@]})) || problem "names/ does not list exactly the names made"
# A task folder whose name is not UTF-8 is not a task: plain, any bytes.
mkdir "$MNT/tasks/"$'\xff'
printf 'anything' >"$MNT/tasks/"$'\xff'"/ui_messages.json"
[[ $(cat "$MNT/tasks/"$'\xff'"/ui_messages.json") == anything ]] || problem "tasks/\\xff/ui_messages.json is not a plain file"
# In the view, a task folder needs a task id: EINVAL, one log line each,
# with the name's control bytes shown as '?' (a name cannot forge a line).
WS=$MNT/workspaces/api-server-2325622928
for n in $'\xff' '..x' $'17990000000\n00'; do
	if out=$(mkdir "$WS/tasks/$n" 2>&1); then
		problem "mkdir of the task $(printf %q "$n") in the view succeeded"
	elif [[ $out != *"Invalid argument"* ]]; then
		problem "mkdir of the task $(printf %q "$n") in the view failed, but not with EINVAL: $out"
	fi
done
log_has "$STORE.log" "refusing to make the task '.*/tasks/17990000000\?00'" "a refused task name, on one line"

say "writes to the read-only parts of the view"
# (The checkpoints' EROFS is checked by checkpoints.sh.)
for f in "$WS/workspace.json" "$WS/tasks/1795306284156/task.json"; do
	if out=$(echo x 2>&1 >"$f"); then
		problem "${f#"$MNT"/} was written"
	elif [[ $out != *"Permission denied"* ]]; then
		problem "a write to ${f#"$MNT"/} failed, but not with EACCES: $out"
	fi
done
for target in "$WS/newfile" "$WS/tasks/1795306284156/extra" "$MNT/workspaces/.trash/x"; do
	if out=$(touch "$target" 2>&1); then
		problem "${target#"$MNT"/} was created in the view"
	elif [[ $out != *"Operation not permitted"* ]]; then
		problem "creating ${target#"$MNT"/} in the view failed, but not with EPERM: $out"
	fi
done
mkdir "$WS/newdir" 2>/dev/null && problem "a folder was made in the view"
ln -s /etc "$WS/lnk" 2>/dev/null && problem "a symlink was made in the view"
[[ -z $(find "$T/store.db.files" \( -name newfile -o -name extra -o -name newdir -o -name lnk \) -print) ]] ||
	problem "a refused create in the view reached the backing tree"
log_has "$STORE.log" "refusing to open '.*/workspace.json' for writing" "a write to workspace.json"
log_has "$STORE.log" "refusing to create the symlink '.*/lnk'" "a symlink in the view"

say "the daemon is alive"
ls "$MNT/tasks" >/dev/null || problem "the mount does not answer after the bad input"
unmount_convfs "$MNT"
integrity=$(sqlite3 "$STORE" 'PRAGMA integrity_check')
[[ $integrity == ok ]] || problem "store: $integrity"
check_log "$STORE.log" "^convfs: warning: refusing (to commit '($UI|tasks/179530627[12]000/ui_messages.json)'|to make the task|to create the|to open '.*' for writing)"
pass
