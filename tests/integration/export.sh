#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# export.sh: import then export gives the same files; nothing is locked in.
#
# For each fixture (Cline CLI 2.18.0, 1.0.10, the damaged folder, and the
# data/ folder of CLI 3.0.65, whose sessions are docs too) it mounts
# convfs over a copy (the first mount imports it), unmounts, runs
# `convfs export STORE OUTDIR`, and proves that `diff -r pristine OUTDIR` is
# empty (the torn file of the damaged folder included, byte-for-byte). Then,
# with changes made through the mount (a new ui_messages.json version by
# temp + rename, a new task, a new plain file, a removed plain file), the
# export holds exactly the changed folder. An export into a non-empty
# folder is refused with an error.

. "$(dirname "$0")/lib.sh"

for fx in 2.18.0 1.0.10 damaged 3.0.65; do
	say "fixture $fx"
	pristine=$(fixture_extract "$fx" "$T/$fx/pristine")
	mnt=$(fixture_extract "$fx" "$T/$fx/mnt")
	if [[ $fx == 3.* ]]; then # the CLI 3.x data folder: sessions as docs, db/ plain
		pristine+=/data
		mnt+=/data
	fi
	store=$T/$fx/store.db
	mount_convfs "$mnt" "$store"
	unmount_convfs "$mnt"
	run_convfs export "$store" "$T/$fx/out" 2>"$T/$fx/export.err" || fail "export of fixture $fx failed:\n$(cat "$T/$fx/export.err")"
	diff -r "$pristine" "$T/$fx/out" >"$T/diff" 2>&1 || problem "fixture $fx: the export differs from the original:\n$(head -n 40 "$T/diff")"
	check_log "$T/$fx/export.err"
	if [[ $fx == damaged ]]; then
		same "$T/$fx/out/tasks/1795306269021/ui_messages.json" "$pristine/tasks/1795306269021/ui_messages.json" \
			"the torn file, exported"
		check_log "$store.log" "^convfs: warning: .*('tasks/1795306269021/ui_messages\.json'|'tasks/1795306284156' is not listed)"
	else
		check_log "$store.log"
	fi
done

say "changes made through the mount"
expected=$(fixture_extract 2.18.0 "$T/changed/expected")
mnt=$(fixture_extract 2.18.0 "$T/changed/mnt")
store=$T/changed/store.db
mount_convfs "$mnt" "$store"
for dir in "$mnt" "$expected"; do
	node_client gen.js ui 33 9 >"$T/ui.json"
	node_client write_atomic.js "$dir/tasks/1795306269021/ui_messages.json" "$T/ui.json"
	mkdir "$dir/tasks/1795400000000"
	node_client gen.js api 5 10 >"$T/api.json"
	node_client write_atomic.js "$dir/tasks/1795400000000/api_conversation_history.json" "$T/api.json"
	printf '{"new":true}\n' >"$dir/settings/extra.json"
	rm "$dir/workspaces/292fed87/workspaceState.json"
done
unmount_convfs "$mnt"
run_convfs export "$store" "$T/changed/out" 2>"$T/changed/export.err" || fail "export of the changed store failed:\n$(cat "$T/changed/export.err")"
diff -r "$expected" "$T/changed/out" >"$T/diff" 2>&1 || problem "the export of the changed store differs:\n$(head -n 40 "$T/diff")"
check_log "$T/changed/export.err"
check_log "$store.log"

say "export into a non-empty folder"
rc=0
run_convfs export "$store" "$T/changed/out" 2>"$T/export.err" || rc=$?
((rc != 0)) || problem "an export into a non-empty folder succeeded"
[[ -s $T/export.err ]] || problem "an export into a non-empty folder failed without a message"
no_valgrind_report "$T/export.err" "the refused export"
diff -r "$expected" "$T/changed/out" >/dev/null 2>&1 || problem "a refused export changed the folder it was refused for"

pass
