#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# limits.sh: other users of a shared mount (-o allow_other) cannot take
# what the owner's saves need.
#
#   A. Open files, the daemon started with a soft limit of 1,024 (the usual
#      default; the hard limit is the machine's): it raises its soft limit
#      to the hard one, so another user (uid 65534) holding 2,000 files
#      open through the mount gets them all, and the owner's saves (temp +
#      rename, in place, >> to the view, a plain file) go on meanwhile.
#   B. Open files, the daemon's hard limit 1,024 too: another user holds at
#      most a quarter (256): its next open fails with EMFILE; a second user
#      gets its quarter too, and a third none (other users together hold
#      half); the owner's saves all succeed while they hold them, and the
#      daemon warns once (rate-limited).
#   C. Disk space, the daemon run by root with its store on an ext4 image
#      (a loop device) that keeps 10 % for root: another user filling a
#      folder of the mount gets ENOSPC while the blocks only root may use
#      (f_bfree - f_bavail) stay as many; the owner (root) still saves.
#
# Shown to fail before the shares: in A the daemon kept 1,024 and the other
# user's 2,000 opens failed at about 1,000 and so did the owner's saves, in
# B the owner's saves failed with EMFILE, and in C the other user's 100 MB
# went on into root's reserved blocks.

. "$(dirname "$0")/lib.sh"

TASK=1795306269021
WS_TASK=workspaces/webapp-691006855/tasks/$TASK
chmod o+x "$T"

as_user() # UID CMD...
{
	local uid=$1
	shift
	setpriv --reuid "$uid" --regid "$uid" --clear-groups -- "$@"
}

# hold_opens UID FILE MAX OUT: uid opens FILE (read-only) until MAX opens or
# the first error, writes "<count> <error code>" to OUT and holds them all
# until $T/release exists. In the background; its pid is added to HOLDERS.
HOLDERS=()
hold_opens()
{
	as_user "$1" node -e '
		const fs = require("fs");
		const [file, max, rel] = [process.argv[1], Number(process.argv[2]), process.argv[3]];
		const fds = [];
		let err = "none";
		try {
			while (fds.length < max)
				fds.push(fs.openSync(file, "r"));
		} catch (e) {
			err = e.code;
		}
		console.log(fds.length + " " + err);
		const t = setInterval(() => { if (fs.existsSync(rel)) clearInterval(t); }, 100);' \
		"$2" "$3" "$T/release" >"$4" &
	HOLDERS+=($!)
}

# owner_saves MNT WHAT: the owner's saves of every kind succeed, and read back.
owner_saves()
{
	local mnt=$1 what=$2 ui=$1/tasks/$TASK/ui_messages.json msg
	msg="{\"ts\":$((1795400000000 + RANDOM)),\"type\":\"say\",\"say\":\"text\",\"text\":\"$what\"}"
	jq -c ". + [$msg]" "$ui" >"$ui.tmp.json" && mv "$ui.tmp.json" "$ui" ||
		problem "$what: the owner's temp + rename failed"
	jq -c ". + [$msg]" "$ui" >"$T/inplace.json" && cat "$T/inplace.json" >"$ui" ||
		problem "$what: the owner's rewrite in place failed"
	printf '%s\n' "$msg" >>"$mnt/$WS_TASK/ui_messages.jsonl" || problem "$what: the owner's >> to the view failed"
	echo "{\"k\":\"$what\"}" >"$mnt/settings/during.json" || problem "$what: the owner's plain file failed"
	[[ $(jq "[.[] | select(.text == \"$what\")] | length" "$ui") == 3 ]] ||
		problem "$what: the owner's saves do not read back: $(jq -c '.[-3:]' "$ui" 2>&1 || true)"
}

# wait_line FILE: waits until a holder has written its count.
wait_line()
{
	local i
	for ((i = 0; i < 600; i++)); do
		[[ -s $1 ]] && return 0
		sleep 0.1
	done
	fail "no count in $1 after 60 s"
}

release()
{
	touch "$T/release"
	wait "${HOLDERS[@]}" || problem "a holder of open files failed"
	HOLDERS=()
	rm -f "$T/release"
}

soft=$(ulimit -Sn)
hard=$(ulimit -Hn)
command -v prlimit >/dev/null || fail "prlimit (util-linux) is missing"

# ---- A: the soft limit raised ------------------------------------------------
((hard >= 8000)) || fail "part A needs a hard limit of open files of 8,000 at least (it is $hard)"
if ((${#VALGRIND[@]} > 0)); then
	# valgrind fixes its client's table of descriptors at start, from the soft limit.
	say "A: skipped under valgrind, which gives the daemon no more than its soft limit"
else
	say "A: a daemon started with ulimit -Sn 1024 (hard $hard)"
	mnt=$(fixture_extract 2.18.0 "$T/a")
	ulimit -Sn 1024
	mount_convfs "$mnt" "$T/a.db" -o allow_other
	ulimit -Sn "$soft"
	pid=${DAEMON_PID[$mnt]}
	got=$(awk '/^Max open files/ { print $4 " " $5 }' "/proc/$pid/limits")
	[[ $got == "$hard $hard" ]] || problem "the daemon's limit of open files is '$got', expected '$hard $hard'"
	chmod 0755 "$mnt" "$T/a"
	mkdir -m 0755 "$mnt/shared"
	echo hello >"$mnt/shared/file"
	hold_opens 65534 "$mnt/shared/file" 2000 "$T/a.65534"
	wait_line "$T/a.65534"
	[[ $(cat "$T/a.65534") == "2000 none" ]] || problem "uid 65534 could not open 2,000 files: $(cat "$T/a.65534")"
	owner_saves "$mnt" "while uid 65534 holds 2000"
	release
	owner_saves "$mnt" "after uid 65534"
	unmount_convfs "$mnt"
	check_log "$T/a.db.log"
fi

# ---- B: the shares -------------------------------------------------------------
say "B: a daemon whose limit is 1024:1024"
mnt=$(fixture_extract 2.18.0 "$T/b")
# (A hard limit lowered in this shell could not be raised again: the daemon alone gets it.)
runner=("${VALGRIND[@]}")
VALGRIND=(prlimit --nofile=1024:1024 "${runner[@]}")
mount_convfs "$mnt" "$T/b.db" -o allow_other
VALGRIND=("${runner[@]}")
# The daemon's limit as it sees it: 1,024, or a few less under valgrind, which keeps some for itself.
max=$(sed -n 's/^convfs: info: open files: up to \([0-9]*\);.*/\1/p' "$T/b.db.log")
[[ -n $max ]] && ((max <= 1024 && max > 900)) || fail "the daemon's limit of open files is '$max', expected 1024"
share=$((max / 4))
third=$((max / 2 - 2 * share))
chmod 0755 "$mnt" "$T/b"
mkdir -m 0755 "$mnt/shared"
echo hello >"$mnt/shared/file"
hold_opens 65534 "$mnt/shared/file" 1000 "$T/b.65534"
wait_line "$T/b.65534"
[[ $(cat "$T/b.65534") == "$share EMFILE" ]] || problem "uid 65534: $(cat "$T/b.65534"); expected $share opens, then EMFILE"
owner_saves "$mnt" "while uid 65534 holds its share"
hold_opens 65533 "$mnt/shared/file" 1000 "$T/b.65533"
wait_line "$T/b.65533"
[[ $(cat "$T/b.65533") == "$share EMFILE" ]] || problem "uid 65533: $(cat "$T/b.65533"); expected $share opens, then EMFILE"
hold_opens 65532 "$mnt/shared/file" 1000 "$T/b.65532"
wait_line "$T/b.65532"
[[ $(cat "$T/b.65532") == "$third EMFILE" ]] || problem "uid 65532, once others hold half: $(cat "$T/b.65532"); expected $third opens, then EMFILE"
owner_saves "$mnt" "while other users hold half"
release
# (The kernel sends the releases of a closed file after close() returned: a moment.)
for ((i = 0; i < 50 * SLOW; i++)); do
	as_user 65534 cat "$mnt/shared/file" >/dev/null 2>&1 && break
	sleep 0.1
done
((i < 50 * SLOW)) || problem "uid 65534 cannot open a file once it let go of its share"
owner_saves "$mnt" "after the other users"
unmount_convfs "$mnt"
log_has "$T/b.db.log" "^convfs: warning: refusing to open more files for uid 6553[2-4] \(EMFILE" "the refusals"
(($(grep -c 'refusing to open more files' "$T/b.db.log" || true) <= 1)) ||
	problem "the refusals were warned more than once:\n$(grep 'refusing to open more files' "$T/b.db.log")"
check_log "$T/b.db.log" "^convfs: warning: refusing to open more files for uid"

# ---- C: root's reserved blocks ---------------------------------------------------
say "C: a daemon run by root, its store on ext4 with 10 % reserved for root"
truncate -s 64M "$T/disk.img"
mkfs.ext4 -q -m 10 "$T/disk.img"
mkdir "$T/disk"
mount -o loop "$T/disk.img" "$T/disk" || fail "cannot mount an ext4 image on a loop device (root and loop devices are needed)"
# root_only: the blocks only root may use now (statvfs' f_bfree - f_bavail).
root_only() { sync -f "$T/disk/store.db" && stat -f -c '%f %a' "$T/disk" | awk '{ print $1 - $2 }'; }
mnt=$(fixture_extract 2.18.0 "$T/c")
mount_convfs "$mnt" "$T/disk/store.db" -o allow_other
chmod 0755 "$mnt" "$T/c"
mkdir -m 0777 "$mnt/shared"
before=$(root_only)
((before > 0)) || fail "the ext4 image keeps no blocks for root"
out=$(as_user 65534 dd if=/dev/zero of="$mnt/shared/fill" bs=1M count=100 2>&1) &&
	problem "uid 65534 wrote 100 MB into a 64 MB filesystem"
[[ $out == *"No space left"* ]] || problem "uid 65534 filling the disk did not end in ENOSPC: $out"
# What a 1 MB write left, a 4 kB one at a time.
as_user 65534 dd if=/dev/zero of="$mnt/shared/fill2" bs=4k count=100000 status=none 2>/dev/null &&
	problem "uid 65534 wrote 400 MB into a 64 MB filesystem"
after=$(root_only)
((after == before)) || problem "uid 65534 used root's reserved blocks: $before blocks only root may use before, $after after"
owner_saves "$mnt" "root on a disk another user filled"
as_user 65534 rm -f "$mnt/shared/fill" "$mnt/shared/fill2"
unmount_convfs "$mnt"
log_has "$T/disk/store.db.log" "^convfs: warning: refusing to write [0-9]+ bytes for uid 65534 \(ENOSPC" "the refusal"
check_log "$T/disk/store.db.log" "^convfs: warning: refusing to write [0-9]+ bytes for uid 65534"
pass
