#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# damaged.sh: a damaged store is refused at mount, with the reason, unless
# -o salvage asks to serve what can be read of it, read-only.
#
#   A. Each damage, on a copy of a store made through a mount, makes the
#      mount fail with status 1 (in the foreground and as a daemon) and a
#      message that names it, says that nothing was changed and how to go
#      on (convfs check, -o salvage, a backup, convfs export); the store
#      file is byte for byte as it was and the folder underneath is
#      untouched and visible: a table dropped (elems), an index dropped
#      (elems_cur), the schema of a table rewritten (PRAGMA writable_schema),
#      the root page of a table overwritten with random bytes and that of an
#      index zeroed (dd, as check.sh does), the schema's own page
#      overwritten (SQLite cannot read the store at all).
#   B. -o salvage on the store whose elems table lost its root: mounted
#      read-only (the mount is "ro"); plain files and whole conversation
#      files read, a conversation kept as elements answers EIO with a log
#      line; every write (a plain file, a conversation, mkdir, rename)
#      EROFS; convfs status says read-only and shows the damage; the store
#      file is unchanged after the unmount.
#
# Shown to fail before the check: the store without elems (and every other
# damaged copy) was mounted over the folder, and answered EIO to the reads.

. "$(dirname "$0")/lib.sh"

TASK=1795306269021
mnt=$(fixture_extract 2.18.0 "$T/mnt")
pristine=$(fixture_extract 2.18.0 "$T/pristine")
store=$T/store.db
mount_convfs "$mnt" "$store"
printf '%s\n' '{"ts":1795400000001,"type":"say","say":"text","text":"before the damage"}' \
	>>"$(echo "$mnt"/workspaces/*/tasks/$TASK)/ui_messages.jsonl"
unmount_convfs "$mnt"
check_log "$store.log"
cp -a "$mnt/." "$T/underneath" # what the folder underneath holds, to see it untouched

# damaged NAME: a copy of the store (and its files) as $T/NAME.db, printed.
damaged()
{
	cp "$store" "$T/$1.db"
	cp -a "$store.files" "$T/$1.db.files"
	echo "$T/$1.db"
}

# overwrite DB NAME SOURCE: the root page of table or index NAME of DB, from SOURCE (/dev/zero, /dev/urandom).
overwrite()
{
	local page psize
	page=$(sqlite3 "$1" "SELECT rootpage FROM sqlite_master WHERE name = '$2'")
	psize=$(sqlite3 "$1" "PRAGMA page_size")
	dd if="$3" of="$1" bs="$psize" seek=$((page - 1)) count=1 conv=notrunc status=none
}

# refused WHAT DB ERE: mounting DB fails with status 1 and a message matching
# ERE, says nothing changed and how to go on; DB and the folder underneath
# are as they were, and the folder is not a mount point.
refused()
{
	local what=$1 db=$2 ere=$3 sum rc=0 pid i
	sum=$(sha256sum <"$db")
	# In the background: a convfs that mounts it serves in the foreground until unmounted.
	{ run_convfs -f -o "store=$db" "$mnt" || exit $?; } >"$T/out" 2>"$T/err" &
	pid=$!
	echo "$pid" >>"$T/daemons"
	for ((i = 0; i < 100 * SLOW; i++)); do
		kill -0 "$pid" 2>/dev/null && ! mountpoint -q "$mnt" || break
		sleep 0.1
	done
	if mountpoint -q "$mnt"; then
		problem "$what: the damaged store was mounted"
		fusermount3 -u "$mnt"
		wait "$pid" || true
		return
	fi
	wait "$pid" || rc=$?
	((rc == 1)) || problem "$what: convfs exited $rc, expected 1:\n$(cat "$T/err")"
	grep -q -E -e "$ere" "$T/err" || problem "$what: no message matches /$ere/:\n$(cat "$T/err")"
	grep -q "nothing was changed" "$T/err" || problem "$what: not said that nothing was changed:\n$(cat "$T/err")"
	for how in "convfs check $db" "-o salvage" "backup" "convfs export $db"; do
		grep -q -F -e "$how" "$T/err" || problem "$what: the message does not say '$how':\n$(cat "$T/err")"
	done
	no_valgrind_report "$T/err" "$what"
	[[ $(sha256sum <"$db") == "$sum" ]] || problem "$what: the store file changed"
	diff -r "$T/underneath" "$mnt" >/dev/null || problem "$what: the folder underneath changed or is hidden"
}

# --- A: refused -----------------------------------------------------------------
say "A: damaged stores are refused"
db=$(damaged dropped)
sqlite3 "$db" "DROP TABLE elems"
refused "a dropped table" "$db" "^convfs: error: the store '$db' is damaged: table 'elems' is missing$"
# As a daemon: the parent reports the child's refusal.
rc=0
"$CONVFS" -o "store=$db" "$mnt" >"$T/out" 2>"$T/err" || rc=$?
if mountpoint -q "$mnt"; then
	problem "as a daemon, a dropped table: mounted"
	fusermount3 -u "$mnt"
fi
((rc == 1)) || problem "as a daemon, a dropped table: exit $rc:\n$(cat "$T/err")"
grep -q "table 'elems' is missing" "$T/err" || problem "as a daemon: no reason given:\n$(cat "$T/err")"

db=$(damaged index)
sqlite3 "$db" "DROP INDEX elems_cur"
refused "a dropped index" "$db" "is damaged: index 'elems_cur' of table 'elems' is missing$"

db=$(damaged schema)
sqlite3 "$db" "PRAGMA writable_schema = ON;
	UPDATE sqlite_master SET sql = 'CREATE TABLE meta (key TEXT PRIMARY KEY, val TEXT NOT NULL) WITHOUT ROWID'
	WHERE name = 'meta'"
refused "a rewritten schema" "$db" "is damaged: table 'meta' has the columns \(key, val\), not \(key, value\)$"

db=$(damaged table_root)
overwrite "$db" elems /dev/urandom
refused "a table's root overwritten" "$db" "is damaged: table 'elems' \(page [0-9]+\)"

db=$(damaged index_root)
overwrite "$db" elems_off /dev/zero
refused "an index's root zeroed" "$db" "is damaged: index 'elems_off' \(page [0-9]+\)"

db=$(damaged master)
# Page 1 past the file header: the schema itself.
dd if=/dev/urandom of="$db" bs=1 seek=100 count=3996 conv=notrunc status=none
refused "the schema's page overwritten" "$db" "cannot read the store '$db'"

# --- B: -o salvage ----------------------------------------------------------------
say "B: -o salvage serves what can be read, read-only"
db=$T/table_root.db
sum=$(sha256sum <"$db")
mount_convfs "$mnt" "$db" -o salvage
grep -q -E "^[^ ]+ $mnt fuse\.convfs ro," /proc/mounts || problem "salvage: the mount is not read-only: $(grep " $mnt " /proc/mounts)"
same "$mnt/globalState.json" "$pristine/globalState.json" "salvage: a plain file"
same "$mnt/tasks/$TASK/task_metadata.json" "$pristine/tasks/$TASK/task_metadata.json" "salvage: a whole conversation file"
cat "$mnt/tasks/$TASK/ui_messages.json" >/dev/null 2>"$T/err" && problem "salvage: a conversation whose rows are lost read"
grep -q "Input/output error" "$T/err" || problem "salvage: reading lost rows did not fail with EIO: $(cat "$T/err")"
for w in "echo x >'$mnt/new.txt'" "echo x >>'$mnt/globalState.json'" "echo '[]' >'$mnt/tasks/$TASK/ui_messages.json'" \
	"mkdir '$mnt/tasks/1799000000000'" "mv '$mnt/globalState.json' '$mnt/moved.json'"; do
	out=$(sh -c "$w" 2>&1) && problem "salvage: '$w' succeeded"
	[[ $out == *"Read-only file system"* ]] || problem "salvage: '$w' did not fail with EROFS: $out"
done
"$CONVFS" status "$mnt" >"$T/status" || problem "salvage: convfs status exited $?"
grep -q "^mounted: .*(read-only" "$T/status" || problem "salvage: status does not say read-only:\n$(cat "$T/status")"
grep -q "is damaged: table 'elems'" "$T/status" || problem "salvage: status does not show the damage:\n$(cat "$T/status")"
"$CONVFS" status --json "$mnt" | jq -e '.readonly == true' >/dev/null || problem "salvage: status --json has no readonly: true"
unmount_convfs "$mnt"
[[ $(sha256sum <"$db") == "$sum" ]] || problem "salvage: the store file changed"
log_has "$db.log" "^convfs: error: store: cannot read" "the read that failed"
check_log "$db.log" "^convfs: warning: (the store '$db' is damaged: table 'elems'|serving the damaged store '$db' read-only)|^convfs: error: store: cannot read .*malformed"
pass
