#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# killed_writer.sh: a writer killed in the middle of a 20 MB in-place write
# changes nothing.
#
# A 20 MB ui_messages.json (20000 Cline-like messages) is committed with
# fs.writeFile. Then a node writer rewrites it in place (O_TRUNC, many small
# writes) with another 20 MB version and is killed with SIGKILL: once half
# way through, and once right after its open (nothing written yet). It proves
# that
#   - while the writer is at work, readers see the old version (size and bytes);
#   - after the kill, the file reads back exactly the old version, also after
#     a remount;
#   - the daemon only logs why it refused the torn content.

. "$(dirname "$0")/lib.sh"

M=$T/mnt
STORE=$T/store.db
TARGET=$M/tasks/1795306269021/ui_messages.json
mkdir -p "$M"
node_client gen.js ui 20000 1 --size 1100 >"$T/old.json"
node_client gen.js ui 20000 2 --size 1100 >"$T/new.json"
size=$(stat -c %s "$T/old.json")
((size > 18000000)) || fail "the generated version is only $size bytes"

mount_convfs "$M" "$STORE"
mkdir -p "$M/tasks/1795306269021"
node_client write_in_place.js "$TARGET" "$T/old.json"
same "$TARGET" "$T/old.json" "the 20 MB version written with fs.writeFile"

# kill_writer_at BYTES: starts the slow writer, kills it once BYTES are written.
kill_writer_at()
{
	local at=$1 writer status=0
	rm -f "$T/mark"
	node "$CLIENTS/slow_writer.js" "$TARGET" "$T/new.json" 16384 "$at" "$T/mark" &
	writer=$!
	wait_for "$T/mark" 30 || fail "the writer never got to byte $at"

	[[ $(stat -c %s "$TARGET") == "$size" ]] ||
		problem "with a writer at byte $(cat "$T/mark"), stat shows size $(stat -c %s "$TARGET"), not $size"
	same "$TARGET" "$T/old.json" "a reader while the writer is at byte $(cat "$T/mark")"

	kill -KILL "$writer"
	{ wait "$writer"; } 2>/dev/null || status=$? # (no "Killed" from bash)
	((status == 137)) || fail "the writer was not killed by SIGKILL (exit status $status): it finished too soon?"
	same "$TARGET" "$T/old.json" "the file after killing its writer at byte $(cat "$T/mark")"
}

say "kill the writer half way"
kill_writer_at $((size / 2))
say "kill the writer right after its open"
kill_writer_at 0

unmount_convfs "$M"
mount_convfs "$M" "$STORE"
same "$TARGET" "$T/old.json" "the file after remounting"
unmount_convfs "$M"

log_has "$STORE.log" "refusing to commit .tasks/1795306269021/ui_messages.json." "why the torn content was refused"
check_log "$STORE.log" "^convfs: warning: refusing to commit 'tasks/1795306269021/ui_messages.json': not a JSON array: .*; nothing stored changes$"
pass
