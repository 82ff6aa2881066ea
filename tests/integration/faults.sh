#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# faults.sh: a full disk, a busy database, a read-only store and a backing
# tree removed under the daemon give the writer a clear error, keep the
# previous version, and the daemon recovers once the fault is gone.
#
# The store lives on a tmpfs of its own (this test mounts one: it needs root,
# as CI has). On a mount of the 2.18.0 fixture:
#   - full disk: with the tmpfs filled up, an in-place rewrite of a
#     conversation file, a temp + rename rewrite, a `>>` append to the
#     workspaces view and a plain file each fail with ENOSPC, and every file
#     reads back as before; once the filler is removed the same four writes
#     succeed and read back;
#   - busy database: another process holds SQLite's write lock (BEGIN
#     IMMEDIATE in sqlite3). A rewrite waits, and gets EBUSY after about 5 s
#     (the bound) with the previous version intact; held for 1 s only, the
#     rewrite waits and succeeds;
#   - read-only store: the store's folder bind-mounted read-only; the daemon
#     says so once, serves the same files, and every kind of write (in place,
#     rename, append, plain file, mkdir) gets EROFS;
#   - backing tree removed: a plain folder removed under the daemon is gone
#     (ENOENT); a task's folder removed: its conversations still read (the
#     daemon makes the folder again); the whole backing folder removed: the
#     daemon makes it again, and conversations read and write as before;
#   - full disk at mount: a conversation written underneath while unmounted
#     that the store has no room to take in: the daemon unmounts and exits
#     with an error instead of hiding it, and the next mount has it;
#   - the store checks ok after each part, and the daemon logs nothing but
#     the failures provoked here.

. "$(dirname "$0")/lib.sh"

SMALL=$T/small
mkdir -p "$SMALL"
mount -t tmpfs -o size=32m,mode=0700 convfs-test "$SMALL" ||
	fail "cannot mount a tmpfs (this test needs root)"
# (lib.sh's cleanup unmounts it, and the bind mount below, after the daemon.)

M=$(fixture_extract 2.18.0 "$T/fx")
STORE=$SMALL/store.db
TASK=1795306269021
UI=$M/tasks/$TASK/ui_messages.json
VIEW=$M/workspaces/api-server-2325622928/tasks/1795306284156/ui_messages.jsonl

# try MODE FILE BYTES: one write as a client makes it, by node; prints ok or
# the error code. MODE: inplace (fs.writeFile, the fixture's messages plus
# BYTES of new ones), atomic (temp + rename, the same content), append (one
# line of BYTES, O_APPEND), plain (BYTES of text).
try()
{
	node -e '
		const fs = require("fs");
		const [mode, file, bytes] = [process.argv[1], process.argv[2], Number(process.argv[3])];
		const grow = () => {
			const a = JSON.parse(fs.readFileSync(file, "utf8"));
			a.push({ ts: 1795400000000 + a.length, type: "say", say: "text", text: "x".repeat(bytes) });
			return JSON.stringify(a);
		};
		try {
			if (mode === "inplace") {
				fs.writeFileSync(file, grow());
			} else if (mode === "atomic") {
				const tmp = file + ".tmp." + process.pid + ".json";
				try {
					fs.writeFileSync(tmp, grow());
					fs.renameSync(tmp, file);
				} catch (e) {
					try { fs.unlinkSync(tmp); } catch (e2) {}
					throw e;
				}
			} else if (mode === "append") {
				fs.appendFileSync(file, JSON.stringify({ ts: 1795500000000 + bytes, type: "say", say: "text",
					text: "y".repeat(bytes) }) + "\n");
			} else {
				fs.writeFileSync(file, "z".repeat(bytes));
			}
			console.log("ok");
		} catch (e) {
			console.log(e.code);
		}' "$@"
}

# expect WANT MODE FILE BYTES
expect()
{
	local want=$1 got
	shift
	got=$(try "$@")
	[[ $got == "$want" ]] || problem "$1 write of '${2#"$M"/}' ($3 bytes): got $got, expected $want"
}

snapshot() { cp "$UI" "$T/ui.$1"; cp "$VIEW" "$T/view.$1"; }
unchanged()
{
	same "$UI" "$T/ui.$1" "$2: ui_messages.json"
	same "$VIEW" "$T/view.$1" "$2: the view's ui_messages.jsonl"
}
store_ok()
{
	[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check' 2>&1) == ok ]] || problem "$1: the store does not check ok"
}

# The daemon's log stays off the tmpfs, which fills up and goes read-only.
LOG=$T/daemon.log
mount_convfs_log "$M" "$LOG" -o "store=$STORE"

say "full disk"
snapshot full
# Fills what is left; dd ends with ENOSPC, as meant.
dd if=/dev/zero of="$SMALL/filler" bs=64k status=none 2>/dev/null || true
(($(df --output=avail "$SMALL" | tail -1) < 128)) || fail "the tmpfs did not fill up"
# Lines bigger than anything SQLite's WAL file can still hold from before: an
# append of one line that comes in one write goes to the store; a longer one
# (past 1 MiB without its newline) is staged, as an in-place write is.
expect ENOSPC inplace "$UI" 3000000
expect ENOSPC atomic "$UI" 3000000
expect ENOSPC append "$VIEW" 1000000
expect ENOSPC append "$VIEW" 3000000
expect ENOSPC plain "$M/bigplain" 3000000
unchanged full "full disk"
ls "$M/tasks" >/dev/null || fail "the daemon does not answer on a full disk"
rm -f "$SMALL/filler"
expect ok inplace "$UI" 3000000
expect ok atomic "$UI" 1000
expect ok append "$VIEW" 3000000
expect ok plain "$M/bigplain" 3000000
[[ $(jq length "$UI") == $(($(jq length "$T/ui.full") + 2)) ]] || problem "after the disk was freed, the two rewrites are not both there"
[[ $(tail -n 1 "$VIEW" | jq -r '.text | length') == 3000000 ]] || problem "after the disk was freed, the append is not there"
[[ $(stat -c %s "$M/bigplain") == 3000000 ]] || problem "after the disk was freed, the plain file is not whole"
log_has "$LOG" "cannot stage a write to 'tasks/$TASK/ui_messages.json': No space left on device" "an in-place write on a full disk"
log_has "$LOG" "disk is full" "SQLite's full disk"
store_ok "full disk"

say "busy database"
snapshot busy
(
	echo 'BEGIN IMMEDIATE; INSERT INTO meta SELECT * FROM meta WHERE 0;'
	sleep 8
	echo 'COMMIT;'
) | sqlite3 "$STORE" &
holder=$!
sleep 0.5
start=$(date +%s%N)
expect EBUSY atomic "$UI" 100
secs=$((($(date +%s%N) - start) / 1000000))
((secs >= 4000 && secs <= 7500)) || problem "a write against a held lock took $secs ms, not the 5 s bound"
unchanged busy "busy database"
wait "$holder"
expect ok atomic "$UI" 100
# Held for a shorter time than the bound: the write waits and succeeds.
(
	echo 'BEGIN IMMEDIATE; INSERT INTO meta SELECT * FROM meta WHERE 0;'
	sleep 1
	echo 'COMMIT;'
) | sqlite3 "$STORE" &
holder=$!
sleep 0.3
expect ok inplace "$UI" 100
wait "$holder"
[[ $(jq length "$UI") == $(($(jq length "$T/ui.busy") + 2)) ]] || problem "the writes after the lock are not both there"
log_has "$LOG" "database is locked" "the busy lock"
store_ok "busy database"

say "backing tree removed"
rm -rf "$STORE.files/settings"
[[ ! -e $M/settings ]] || problem "a plain folder removed behind the daemon is still there"
if out=$(cat "$M/settings/cline_mcp_settings.json" 2>&1); then
	problem "a plain file removed behind the daemon still reads: $out"
fi
mkdir "$M/settings"
echo '{}' >"$M/settings/cline_mcp_settings.json"
[[ $(cat "$M/settings/cline_mcp_settings.json") == '{}' ]] || problem "a plain file cannot be made again after its folder was removed"
snapshot backing
# A task's folder removed: its conversations stay, the folder comes back.
rm -rf "$STORE.files/tasks/$TASK"
sleep 1.1 # the kernel's entry for the folder times out
ls "$M/tasks/$TASK" >"$T/ls.task" || problem "a task folder removed from the backing tree cannot be listed"
grep -q -x ui_messages.json "$T/ls.task" || problem "a task folder removed from the backing tree lists no conversation"
unchanged backing "a task folder removed"
log_has "$LOG" "folder 'tasks/$TASK' was missing from the backing tree" "the removed task folder"
rm -rf "$STORE.files"
sleep 1.1 # the kernel's entries time out: the next lookups reach the daemon
unchanged backing "backing tree removed"
expect ok inplace "$UI" 100
expect ok atomic "$UI" 100
expect ok plain "$M/plain-after" 10
[[ -d $STORE.files && -f $STORE.files/plain-after ]] || problem "the daemon did not make its backing folder again"
log_has "$LOG" "backing folder.*was removed" "the removed backing folder"
store_ok "backing tree removed"
unmount_convfs "$M"
check_log "$LOG" "No space left on device|database or disk is full|database is locked|Device or resource busy|backing folder.*was removed|missing from the backing tree"

say "full disk at mount"
# A conversation written underneath while convfs was not mounted, and too
# little room in the store to take it in: serving that mount would hide it.
# The daemon unmounts, exits with an error and says why; the next mount,
# with room again, has it. (1 MB is left: the store opens, the 3 MB
# conversation does not fit.)
OFF=tasks/1799100000000
mkdir "$M/$OFF"
node -e 'process.stdout.write(JSON.stringify([{ role: "user",
	content: [{ type: "text", text: "written offline " + "w".repeat(3000000) }] }]))' \
	>"$M/$OFF/api_conversation_history.json"
dd if=/dev/zero of="$SMALL/filler" bs=64k status=none 2>/dev/null || true
truncate -s -1M "$SMALL/filler"
# (Its status through a file: a failing command outside a condition is a test failure.)
(if run_convfs -f -o "store=$STORE" "$M" 2>>"$LOG"; then echo 0; else echo $?; fi >"$T/rc.take-in") &
pid=$!
echo "$pid" >>"$T/daemons"
for ((i = 0; i < 100 * SLOW; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	problem "convfs still serves a mount that could not take in its folder underneath"
	fusermount3 -u "$M" || true
	wait_gone "$pid" $((10 * SLOW)) || fail "convfs (pid $pid) does not stop"
fi
wait "$pid" || true
[[ $(cat "$T/rc.take-in") != 0 ]] || problem "convfs exited with status 0 after failing to take in its folder underneath"
! mountpoint -q "$M" || problem "'$M' is still mounted after the take-in failed"
log_has "$LOG" "unmounting '$M': its folder underneath could not be taken in" "the failed take-in"
rm -f "$SMALL/filler"
mount_convfs_log "$M" "$LOG" -o "store=$STORE"
grep -q "written offline" "$M/$OFF/api_conversation_history.json" ||
	problem "the conversation written underneath is not there once the disk has room"
unmount_convfs "$M"
store_ok "full disk at mount"
check_log "$LOG" "No space left on device|database or disk is full|database is locked|Device or resource busy|backing folder.*was removed|missing from the backing tree|cannot take in|could not be taken in|not listed in state/taskHistory.json"

say "sparse and huge files"
# A hole reads as NUL bytes, which no JSON holds, and a conversation file
# past 1 GiB is refused before a byte of it is copied. (Both were copied byte
# by byte into a file of the daemon's own, though the content was invalid
# from byte 20 on, until the disk was full: here, the store's 32 MB tmpfs.)
mount_convfs_log "$M" "$LOG" -o "store=$STORE"
snapshot sparse
used=$(df --output=used "$SMALL" | tail -1)
# expect_fails ERRNO-TEXT WHAT CMD...
expect_fails()
{
	local want=$1 what=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		problem "$what succeeded"
	elif [[ $out != *"$want"* && ! ($want == "Invalid argument" && $out == *"subdirectory of itself"*) ]]; then
		# (mv words rename's EINVAL as "cannot move ... to a subdirectory of itself")
		problem "$what failed, but not with '$want': $out"
	fi
}
printf '[{"ts":1,"type":"say"' >"$UI.tmp.sparse"
truncate -s 900M "$UI.tmp.sparse"
expect_fails "Invalid argument" "a rename of a 900 MB sparse file over ui_messages.json" mv "$UI.tmp.sparse" "$UI"
truncate -s 20G "$UI.tmp.sparse"
expect_fails "too large" "a rename of a 20 GB sparse file over ui_messages.json" mv "$UI.tmp.sparse" "$UI"
rm -f "$UI.tmp.sparse"
expect_fails "too large" "truncate -s 1T of the view's ui_messages.jsonl" truncate -s 1T "$VIEW"
expect_fails "too large" "truncate -s 1T of ui_messages.json" truncate -s 1T "$UI"
expect_fails "too large" "a write at 2 GiB into ui_messages.json" dd if=/dev/zero of="$UI" bs=1 count=1 seek=2G conv=notrunc status=none
unchanged sparse "sparse and huge files"
(($(df --output=used "$SMALL" | tail -1) < used + 4096)) ||
	problem "the store's filesystem grew from $used to $(df --output=used "$SMALL" | tail -1) kB with sparse and huge files refused"
log_has "$LOG" "refusing to commit 'tasks/$TASK/ui_messages.json': it has a hole at byte [0-9]+" "the hole"
log_has "$LOG" "refusing to commit 'tasks/$TASK/ui_messages.json': it is 21474836480 bytes" "the 20 GB file"
log_has "$LOG" "refusing a write to 'tasks/$TASK/ui_messages.json' at byte 2147483648" "the write past 1 GiB"
unmount_convfs "$M"
# Underneath while unmounted: a sparse conversation file is not taken in.
SPARSE=tasks/1799200000000
mkdir "$M/$SPARSE"
truncate -s 20G "$M/$SPARSE/ui_messages.json"
mount_convfs_log "$M" "$LOG" -o "store=$STORE"
[[ ! -e $M/$SPARSE/ui_messages.json ]] || problem "a 20 GB sparse file underneath was taken in as a conversation file"
unmount_convfs "$M"
rm -rf "${M:?}/$SPARSE"
log_has "$LOG" "refusing to commit '$SPARSE/ui_messages.json': it is 21474836480 bytes" "the sparse file underneath"
store_ok "sparse and huge files"
check_log "$LOG" "No space left on device|database or disk is full|database is locked|Device or resource busy|backing folder.*was removed|missing from the backing tree|could not be taken in|not listed in state/taskHistory.json|refusing to commit|refusing a write"

say "read-only store"
# (The daemon folded the WAL back at unmount: the store is one file.)
mount_convfs_log "$M" "$LOG" -o "store=$STORE"
snapshot ro
ls -lR "$M" >"$T/ls.rw"
unmount_convfs "$M"
mkdir "$T/ro"
mount --bind "$SMALL" "$T/ro"
mount -o remount,bind,ro "$T/ro"
mount_convfs_log "$M" "$LOG" -o "store=$T/ro/store.db"
ls -lR "$M" >"$T/ls.ro"
diff "$T/ls.rw" "$T/ls.ro" >/dev/null || problem "a read-only store does not show the same tree:\n$(diff "$T/ls.rw" "$T/ls.ro" | head)"
unchanged ro "read-only store"
expect EROFS inplace "$UI" 10
expect EROFS atomic "$UI" 10
expect EROFS append "$VIEW" 10
expect EROFS plain "$M/plain-ro" 10
mkdir "$M/tasks/1799000000000" 2>/dev/null && problem "mkdir of a task in a read-only store succeeded"
unchanged ro "read-only store"
log_has "$LOG" "serving it read-only" "the read-only store"
unmount_convfs "$M"
umount "$T/ro"
check_log "$LOG" "No space left on device|database or disk is full|database is locked|Device or resource busy|backing folder.*was removed|missing from the backing tree|serving it read-only|Read-only file system|readonly database|could not be taken in|not listed in state/taskHistory.json|refusing to commit|refusing a write"
store_ok "read-only store"
pass
