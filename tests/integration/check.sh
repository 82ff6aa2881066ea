#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check.sh: `convfs check STORE`.
#
#   A. A store made by mounting the 2.18.0 fixture and writing through it is
#      sound: exit 0, nothing on stdout, and nothing written (the store file's
#      checksum and the backing folder's listing are the same after).
#   B. Mounted: a warning on stderr that a daemon serves it, the check all
#      the same (exit 0).
#   C. Each kind of damage is found, one line each, exit 1: a mode that is not
#      owner-only (group or other bits, setuid, sticky; the folder itself
#      too), a file that is not the store owner's (the store file's owner,
#      not who runs the check), a mount root's mode in the store that is not
#      a mode (a mount shows 0700, with a warning), a symlink out of the
#      folder, a symlink where conversations
#      are kept, a plain file where the store has a conversation file, a
#      conversation's folder missing, a doc's row that disagrees with its
#      rows (sqlite3), a damaged index page (dd), an index dropped.
#   A store of the schema before is checked as it is, with a note, unmigrated.
#   D. Exit 2, with a message: no argument, a missing store, a file that is
#      not a store, a store of a newer schema.

. "$(dirname "$0")/lib.sh"

TA=1795306269021
mnt=$(fixture_extract 2.18.0 "$T/mnt")
store=$T/store.db
files=$store.files
mount_convfs "$mnt" "$store"
printf '%s\n' '{"role":"user","content":"checked"}' >>"$(echo "$mnt"/workspaces/*/tasks/$TA)/messages.jsonl"

# --- B: mounted -------------------------------------------------------------
rc=0
"$CONVFS" check "$store" >"$T/out" 2>"$T/err" || rc=$?
((rc == 0)) || problem "check of a sound mounted store exited $rc: $(cat "$T/out" "$T/err")"
grep -q "is mounted" "$T/err" || problem "no warning that the store is mounted: '$(cat "$T/err")'"
unmount_convfs "$mnt"
check_log "$store.log"

# --- A: sound, read-only ------------------------------------------------------
sum_before=$(sha256sum <"$store")
find "$files" -printf "%p %y %m %s %T@ %i\n" | sort >"$T/files-before"
rc=0
"$CONVFS" check "$store" >"$T/out" 2>"$T/err" || rc=$?
((rc == 0)) || problem "check of a sound store exited $rc:\n$(cat "$T/out" "$T/err")"
[[ ! -s $T/out ]] || problem "check of a sound store printed:\n$(cat "$T/out")"
[[ ! -s $T/err ]] || problem "check of a sound store said on stderr (no terminal):\n$(cat "$T/err")"
[[ $(sha256sum <"$store") == "$sum_before" ]] || problem "check changed the store file"
find "$files" -printf "%p %y %m %s %T@ %i\n" | sort | diff "$T/files-before" - || problem "check changed the backing folder"

# --- C: damage, one kind at a time --------------------------------------------
# expect_problem WHAT ERE: check exits 1 and one line of stdout matches ERE.
expect_problem()
{
	local rc=0
	"$CONVFS" check "$store" >"$T/out" 2>"$T/err" || rc=$?
	((rc == 1)) || problem "$1: check exited $rc, expected 1:\n$(cat "$T/out" "$T/err")"
	grep -q -E -e "$2" "$T/out" || problem "$1: no line matches /$2/:\n$(cat "$T/out")"
	grep -q -E "^convfs: [0-9]+ problems? in the store" "$T/err" || problem "$1: no count on stderr: $(cat "$T/err")"
}

chmod 0644 "$files/globalState.json"
expect_problem "a mode" "^files: 'globalState.json' has mode 0644, not owner-only$"
chmod 0600 "$files/globalState.json"
chmod 4700 "$files/globalState.json"
expect_problem "a setuid mode" "^files: 'globalState.json' has mode 4700, not owner-only$"
chmod 0600 "$files/globalState.json"
chmod 1700 "$files/settings"
expect_problem "a sticky folder" "^files: 'settings' has mode 1700, not owner-only$"
chmod 0700 "$files/settings"
chmod 0755 "$files"
expect_problem "the backing folder's mode" "^files: '$files' has mode 0755, not owner-only$"
chmod 0700 "$files"
# What is not the store owner's: the store's owner is its file's, not who runs the check.
chown 65534 "$store"
expect_problem "a store of another user" "^files: 'globalState.json' belongs to uid 0, not to the store's owner \(uid 65534\)$"
chown 0 "$store"
# The mount root's mode, a row of the store: one that is not a mode is found,
# and a mount shows 0700 with a warning.
sqlite3 "$store" "INSERT INTO meta(key, value) VALUES ('root_mode', '0x755')"
expect_problem "the mount root's mode" "^store: the mount root's mode '0x755' is not a mode"
mount_convfs "$mnt" "$store"
[[ $(stat -c %a "$mnt") == 700 ]] || problem "a mount root whose mode is not a mode shows $(stat -c %a "$mnt")"
chmod 0750 "$mnt"
unmount_convfs "$mnt"
check_log "$store.log" "^convfs: warning: the mount root's mode '0x755' in the store is not a mode"
log_has "$store.log" "^convfs: warning: the mount root's mode '0x755' in the store is not a mode" "a mount root's mode that is not a mode"
[[ $(sqlite3 "$store" "SELECT value FROM meta WHERE key = 'root_mode'") == 0700 ]] ||
	problem "chmod 0750 of the mount root (not shared) kept $(sqlite3 "$store" "SELECT value FROM meta WHERE key = 'root_mode'")"
sqlite3 "$store" "DELETE FROM meta WHERE key = 'root_mode'"

ln -s /etc "$files/settings/escape"
expect_problem "a symlink out" "^files: 'settings/escape' is a symlink out of the folder \(to '/etc'\)$"
rm "$files/settings/escape"
ln -s ../../.. "$files/settings/up"
expect_problem "a relative symlink out" "^files: 'settings/up' is a symlink out of the folder"
rm "$files/settings/up"
ln -s globalState.json "$files/settings/inside"
"$CONVFS" check "$store" >"$T/out" || problem "a symlink inside the folder is a problem:\n$(cat "$T/out")"
rm "$files/settings/inside"

ln -s /tmp "$files/tasks/1799000000001"
expect_problem "a symlink at a task folder" "^files: 'tasks/1799000000001' is a symlink \(to '/tmp'\) where conversations are kept$"
rm "$files/tasks/1799000000001"

echo '[]' >"$files/tasks/$TA/ui_messages.json"
chmod 0600 "$files/tasks/$TA/ui_messages.json"
expect_problem "a plain file over a doc" "^files: 'tasks/$TA/ui_messages.json' is a plain file where the store has"
rm "$files/tasks/$TA/ui_messages.json"

mv "$files/tasks/$TA" "$T/moved"
expect_problem "a missing folder" "^files: 'tasks/$TA' is missing: the folder of 'tasks/$TA/"
mv "$T/moved" "$files/tasks/$TA"

sqlite3 "$store" "UPDATE docs SET nelems = nelems + 1 WHERE path = 'tasks/$TA/ui_messages.json'"
expect_problem "a doc's row" "^store: doc 'tasks/$TA/ui_messages.json': [0-9]+ current rows, its row says"
sqlite3 "$store" "UPDATE docs SET nelems = nelems - 1 WHERE path = 'tasks/$TA/ui_messages.json'"
"$CONVFS" check "$store" >"$T/out" || problem "the repaired store is not sound:\n$(cat "$T/out")"

# A page of an index zeroed: SQLite's integrity check says so.
cp "$store" "$T/damaged.db"
page=$(sqlite3 "$T/damaged.db" "SELECT rootpage FROM sqlite_master WHERE name = 'elems_off'")
psize=$(sqlite3 "$T/damaged.db" "PRAGMA page_size")
dd if=/dev/zero of="$T/damaged.db" bs="$psize" seek=$((page - 1)) count=1 conv=notrunc status=none
rc=0
"$CONVFS" check "$T/damaged.db" >"$T/out" 2>"$T/err" || rc=$?
((rc == 1)) || problem "a damaged index page: check exited $rc:\n$(cat "$T/out" "$T/err")"
grep -q "^sqlite: " "$T/out" || problem "a damaged index page: no sqlite line:\n$(cat "$T/out")"

# check_copy NAME SQL RC WHAT: a copy of the store as $T/NAME.db, changed by
# SQL, is checked with exit status RC (its output in $T/out and $T/err).
check_copy()
{
	local rc=0
	cp "$store" "$T/$1.db"
	cp -a "$files" "$T/$1.db.files"
	sqlite3 "$T/$1.db" "$2"
	"$CONVFS" check "$T/$1.db" >"$T/out" 2>"$T/err" || rc=$?
	((rc == $3)) || problem "$4: check exited $rc, expected $3:\n$(cat "$T/out" "$T/err")"
}

# An index the schema has, dropped: the schema step names it.
check_copy noindex "DROP INDEX elems_cur" 1 "a dropped index"
grep -q "^schema: index 'elems_cur' of table 'elems' is missing$" "$T/out" || problem "a dropped index: no schema line:\n$(cat "$T/out")"

# A store of the schema before (what a user has before the first mount of a
# new convfs): checked as it is, with a note, and not migrated.
check_copy older "DROP INDEX revisions_doc; PRAGMA user_version = 5" 0 "a store of schema 5"
grep -q "note: the store has schema version 5; the next mount migrates it" "$T/err" || problem "no note of the older schema: $(cat "$T/err")"
[[ $(sqlite3 "$T/older.db" "PRAGMA user_version") == 5 ]] || problem "check migrated the store"

# --- D: exit 2 ------------------------------------------------------------------
expect_2()
{
	local what=$1 rc=0
	shift
	"$CONVFS" check "$@" >"$T/out" 2>"$T/err" || rc=$?
	((rc == 2)) || problem "$what: check exited $rc, expected 2"
	[[ -s $T/err ]] || problem "$what: nothing said on stderr"
}
expect_2 "no argument"
expect_2 "a missing store" "$T/nothing.db"
echo "not a database" >"$T/text.db"
expect_2 "a file that is not a store" "$T/text.db"
cp "$store" "$T/newer.db"
sqlite3 "$T/newer.db" "PRAGMA user_version = 99"
expect_2 "a newer schema" "$T/newer.db"
pass
