#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# hostile.sh: what another process does to the files the daemon commits
# cannot crash it.
#
#   - a temp file renamed over a conversation file is truncated, through a
#     hard link, while the rename commits (a 64 MB file, cut at several
#     moments): the daemon reads what it commits with pread into its own
#     memory, so it stays up; the rename either commits a version that is
#     valid JSON or fails with EINVAL and changes nothing;
#   - a symlink named tasks cannot be made at the root, and one planted in
#     the backing tree is not followed when a task comes back from the trash
#     (mv workspaces/.trash/<id> ...): nothing is made outside the tree.

. "$(dirname "$0")/lib.sh"

TASK=1795306269021
mnt=$(fixture_extract 2.18.0 "$T/mnt")
store=$T/store.db
mount_convfs "$mnt" "$store"
UI=$mnt/tasks/$TASK/ui_messages.json

say "a 64 MB temp file, truncated through a hard link while it is renamed in"
node -e '
	const fs = require("fs");
	const msg = { ts: 0, type: "say", say: "text", text: "x".repeat(64 * 1024) };
	const fd = fs.openSync(process.argv[1], "w");
	fs.writeSync(fd, "[");
	for (let i = 0; i < 1000; i++) {
		msg.ts = 1795306269100 + i;
		fs.writeSync(fd, (i ? "," : "") + JSON.stringify(msg));
	}
	fs.writeSync(fd, "]");
	fs.closeSync(fd);' "$T/big.json"
for delay in 0.001 0.005 0.01 0.02 0.04 0.08; do
	tmp=$UI.tmp.$RANDOM.json
	cp "$T/big.json" "$tmp"
	ln "$tmp" "$mnt/link-to-temp" || fail "cannot make a hard link to the temp file"
	# mv starts at once (node would take longer than the commit); the cut follows.
	(rc=0; mv -T "$tmp" "$UI" 2>"$T/mv.err" || rc=$?; echo "$rc" >"$T/mv.rc") &
	mover=$!
	sleep "$delay"
	truncate -s 0 "$mnt/link-to-temp" 2>/dev/null || true
	wait "$mover" || true
	if [[ $(cat "$T/mv.rc") == 0 ]]; then
		jq -e 'type == "array"' "$UI" >/dev/null 2>&1 || problem "after a rename cut at ${delay}s, ui_messages.json is not a JSON array"
	elif ! grep -q -e "Invalid argument" -e "subdirectory of itself" "$T/mv.err"; then
		# (GNU mv words EINVAL from rename(2) as "a subdirectory of itself")
		problem "a rename cut at ${delay}s failed, but not with EINVAL: $(cat "$T/mv.err")"
	fi
	stat "$mnt" >/dev/null 2>&1 && grep -q " $mnt fuse" /proc/mounts || fail "the daemon died when its temp file was cut at ${delay}s"
	jq -e 'type == "array"' "$UI" >/dev/null || problem "ui_messages.json does not parse after a cut at ${delay}s"
	rm -f "$mnt/link-to-temp" "$tmp"
done

say "an escape through a symlink named tasks"
mkdir "$T/elsewhere"
for t in $TASK 1795306299870; do
	rm -r "$mnt"/workspaces/*/tasks/$t || problem "rm -r of task $t in the view failed"
done
rmdir "$mnt/tasks" || problem "rmdir of the emptied tasks/ failed"
ln -s "$T/elsewhere" "$mnt/tasks" 2>/dev/null && problem "a symlink named tasks was made at the root"
rm -f "$mnt/tasks" 2>/dev/null || true
# Planted straight into the backing tree, as any process of the owner's could.
rmdir "$T/store.db.files/tasks" 2>/dev/null || true
ln -s "$T/elsewhere" "$T/store.db.files/tasks"
mv "$mnt/workspaces/.trash/$TASK" "$mnt/workspaces/webapp-691006855/tasks/$TASK" 2>/dev/null || true
[[ -z $(ls -A "$T/elsewhere") ]] || problem "the daemon made something outside its tree: $(ls -A "$T/elsewhere")"
grep -q " $mnt fuse" /proc/mounts || fail "the daemon died"

unmount_convfs "$mnt"
check_log "$store.log" "^convfs: warning: (refusing to commit 'tasks/$TASK/ui_messages\.json': not a JSON array|refusing to create the symlink 'tasks'|cannot make the folder 'tasks/[0-9]+' of the restored task: Too many levels)"
pass
