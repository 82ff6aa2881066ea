#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fixtures.sh: taking over a real Cline folder changes nothing a reader sees.
#
# For each fixture (Cline CLI 2.18.0, 1.0.10 and the damaged folder) it
# extracts a pristine copy and a copy to mount over, mounts convfs over the
# second (first mount: its content is imported), and proves that
#   - `diff -r pristine mount` is empty: every file reads back as it was;
#   - after unmounting, the folder underneath is untouched: same names, types,
#     modes, sizes, mtimes and contents as the pristine copy;
#   - a second mount of the same store shows the same content again;
#   - for the damaged folder, the torn ui_messages.json reads back
#     byte-for-byte, the log reports both problems (the torn file does not
#     parse, task 1795306284156 is not listed in taskHistory.json), and no
#     other warning appears; a valid rewrite of the torn file then works.

. "$(dirname "$0")/lib.sh"

# What `ls -lR` would show, minus atimes: proves a folder was not modified.
tree_listing()
{
	(cd "$1" && find . -printf '%p %y %m %s %T@ %l\n' | sort)
}

TORN=tasks/1795306269021/ui_messages.json
UNLISTED=tasks/1795306284156

# The documented addition: the workspaces view (docs/ARCHITECTURE.md). Its
# entries in workspaces/ are workspaces/<name>-<key>, unknown, .trash and
# README.md (and workspaces/ itself where the client has none); everything else must
# be as it was, the client's own workspaces/<hash>/ folders included.
# view_diff PRISTINE MOUNT: diff -r, less the view's own entries.
view_diff()
{
	diff -r "$1" "$2" >"$T/rawdiff" 2>&1 || true
	grep -Ev "^Only in $2/workspaces: (\.trash|unknown|README\.md|[A-Za-z0-9._-]+-[0-9]+)\$|^Only in $2: workspaces\$" "$T/rawdiff" || true
}

for fx in 2.18.0 1.0.10 damaged; do
	say "fixture $fx"
	pristine=$(fixture_extract "$fx" "$T/$fx/pristine")
	mnt=$(fixture_extract "$fx" "$T/$fx/mnt")
	store=$T/$fx/store.db

	mount_convfs "$mnt" "$store"
	view_diff "$pristine" "$mnt" >"$T/diff" 2>&1
	[[ ! -s $T/diff ]] || fail "fixture $fx: the mount differs from the original:\n$(head -n 40 "$T/diff")"
	# The view is there: one folder per workspace of the fixture's tasks.
	ls "$mnt/workspaces" | grep -Eq -- '-[0-9]+$' || fail "fixture $fx: no workspace in workspaces/"
	if [[ $fx == damaged ]]; then
		same "$mnt/$TORN" "$pristine/$TORN" "the torn file of the damaged fixture"
	fi
	unmount_convfs "$mnt"

	[[ $(tree_listing "$mnt") == "$(tree_listing "$pristine")" ]] ||
		fail "fixture $fx: the folder under the mount was modified:\n$(diff <(tree_listing "$pristine") <(tree_listing "$mnt") | head -n 20)"
	diff -r "$pristine" "$mnt" >/dev/null || fail "fixture $fx: the folder under the mount has changed content"

	# A second mount of the same store: no second import, the same content.
	mount_convfs "$mnt" "$store"
	view_diff "$pristine" "$mnt" >"$T/diff" 2>&1
	[[ ! -s $T/diff ]] || fail "fixture $fx: after remounting, the mount differs:\n$(head -n 40 "$T/diff")"
	if [[ $fx == damaged ]]; then
		same "$mnt/$TORN" "$pristine/$TORN" "the torn file after remounting"
		# The task goes on: a valid rewrite of the torn file is taken.
		node_client gen.js ui 12 7 >"$T/repaired.json"
		node_client write_atomic.js "$mnt/$TORN" "$T/repaired.json"
		same "$mnt/$TORN" "$T/repaired.json" "a valid rewrite of the torn file"
	fi
	unmount_convfs "$mnt"

	if [[ $fx == damaged ]]; then
		log_has "$store.log" "^convfs: warning: .*'$TORN'.*(does not parse|damaged|torn)" "the torn $TORN"
		log_has "$store.log" "^convfs: warning: .*'$UNLISTED'.*not listed" "the unlisted task folder $UNLISTED"
		check_log "$store.log" "^convfs: warning: .*('$TORN'|'$UNLISTED' is not listed)"
	else
		check_log "$store.log"
	fi
done

pass
