#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bad_input.sh: bad input gets a clear error and loses nothing (promise 7).
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

say "the daemon is alive"
ls "$MNT/tasks" >/dev/null || problem "the mount does not answer after the bad input"
unmount_convfs "$MNT"
integrity=$(sqlite3 "$STORE" 'PRAGMA integrity_check')
[[ $integrity == ok ]] || problem "store: $integrity"
check_log "$STORE.log" "^convfs: warning: refusing to commit '$UI'"
pass
