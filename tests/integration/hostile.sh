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
#     (mv workspaces/.trash/<id> ...): nothing is made outside the tree;
#   - another user, on a mount shared with -o allow_other (uid 65534): cannot
#     read or write the owner's conversations (compat files and the view) or
#     plain files, nor rename anything over a conversation file; in a task
#     folder the owner shares, 16 FIFOs renamed over its conversation file at
#     once all fail with EINVAL within 10 s, and a 20 GB sparse file with
#     EFBIG, the store's disk no fuller; can fill a
#     folder the owner shared with it until the disk is full (ENOSPC for it,
#     nothing of the owner's lost); can open the same file 5,000 times (the
#     daemon holds an fd for each) and the owner still works; the daemon
#     stays up through all of it, and everything of the owner's is intact;
#   - no mode bit given away: the take-in copies owner-only on a shared
#     mount too; a chmod 0755 of the mount root shows (also after a
#     remount) but leaves the backing tree 0700, which the other user can
#     neither list nor rename anything in; a 6755 file the other user makes
#     in a shared folder comes out of `convfs export` owner-only, neither
#     setuid nor setgid, owned by the store's owner (root; uid 65534 once
#     the store file is its), and the same file underneath is taken in so,
#     with -o allow_other and without; a backing tree an older convfs left
#     0755 is 0700 once mounted, the mount root keeping 0755;
#   - root serving another user's store registers beside it as that user:
#     the folder, its file and its warnings are the store owner's; with
#     <store>.mounts made a symlink by that user, root's daemon serves
#     unregistered and makes, gives away or removes nothing where it points;
#     a daemon's warnings file replaced by a FIFO does not hang convfs status.

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
for t in $TASK 1795306284156; do
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
store_log=$store.log

# ---- another user on a shared mount ---------------------------------------------
say "another user on a mount shared with -o allow_other"
OTHER=65534
as_other() { setpriv --reuid "$OTHER" --regid "$OTHER" --clear-groups -- "$@"; }
mkdir "$T/small"
mount -t tmpfs -o size=48m tmpfs "$T/small" || fail "cannot mount a tmpfs for the shared store"
mnt2=$(fixture_extract 2.18.0 "$T/small/mnt")
pristine2=$(fixture_extract 2.18.0 "$T/pristine2")
store2=$T/small/store.db
mount_convfs "$mnt2" "$store2" -o allow_other
# What the take-in copied is owner-only, on a shared mount too.
for f in globalState.json:600 settings:700 settings/cline_mcp_settings.json:600 workspaces/292fed87:700; do
	m=$(stat -c %a "$store2.files/${f%:*}")
	[[ $m == "${f#*:}" ]] || problem "the take-in of a shared mount made ${f%:*} mode $m, not ${f#*:}"
done
ctime=$(stat -c %z "$mnt2")
chmod 0755 "$mnt2"
chmod o+x "$T" "$T/small" "$T/small/mnt" # a way in for the other user
[[ $(stat -c %a "$mnt2") == 755 ]] || problem "the mount root is mode $(stat -c %a "$mnt2") after chmod 0755"
[[ $(stat -c %z "$mnt2") != "$ctime" ]] || problem "chmod 0755 of the mount root left its ctime"
[[ $(stat -c %a "$store2.files") == 700 ]] ||
	problem "chmod 0755 of the mount root made the backing tree mode $(stat -c %a "$store2.files"), not 700"
mkdir -m 0777 "$mnt2/shared" # a folder the owner shares
(umask 077 && echo secret >"$mnt2/settings/secret.txt") # kept private, as a client keeps secrets.json
C2=$mnt2/tasks/$TASK
V2=$mnt2/workspaces/webapp-691006855/tasks/$TASK
for f in "$C2/ui_messages.json" "$V2/messages.jsonl" "$mnt2/state/taskHistory.json" "$mnt2/settings/secret.txt"; do
	as_other cat "$f" >/dev/null 2>&1 && problem "uid $OTHER read ${f#"$mnt2"/}"
	as_other sh -c 'echo x >>"$1"' _ "$f" 2>/dev/null && problem "uid $OTHER wrote ${f#"$mnt2"/}"
done
as_other ls "$mnt2/workspaces/webapp-691006855" >/dev/null 2>&1 && problem "uid $OTHER listed a workspace of the view"
echo '[]' >"$T/empty.json"
as_other cp "$T/empty.json" "$mnt2/shared/tmp.json" || problem "uid $OTHER cannot write the shared folder"
as_other mv "$mnt2/shared/tmp.json" "$C2/ui_messages.json" 2>/dev/null && problem "uid $OTHER renamed a file over the owner's ui_messages.json"
as_other ln "$mnt2/shared/tmp.json" "$C2/link" 2>/dev/null && problem "uid $OTHER linked into the owner's task folder"
# The backing tree is the daemon's user's 0700: no way round the mount.
as_other ls "$store2.files" >/dev/null 2>&1 && problem "uid $OTHER listed the backing tree"
as_other mv "$store2.files/shared/tmp.json" "$store2.files/shared/moved.json" 2>/dev/null &&
	problem "uid $OTHER renamed a file in the backing tree"
[[ -f $mnt2/shared/tmp.json ]] || problem "shared/tmp.json is gone from the mount"
# A setuid and setgid file another user makes in a folder shared with it.
as_other sh -c 'cat /bin/true >"$1" && chmod 6755 "$1"' _ "$mnt2/shared/setid" || fail "uid $OTHER cannot make shared/setid"
[[ $(stat -c %a "$mnt2/shared/setid") == 6755 ]] || fail "shared/setid is mode $(stat -c %a "$mnt2/shared/setid"), not 6755"
# A task folder the owner shares: FIFOs renamed over its conversation file,
# as many at once as the daemon has workers, each an open() that waited for
# a writer for good (the mount hung for everyone); a 20 GB sparse file
# renamed over it, copied until the 48 MB store was full.
SHARED_TASK=$mnt2/tasks/1795306500000
chmod o+x "$mnt2/tasks"
mkdir -m 0777 "$SHARED_TASK"
pids=()
for ((i = 0; i < 16; i++)); do
	as_other mkfifo "$mnt2/shared/fifo.$i"
	as_other mv "$mnt2/shared/fifo.$i" "$SHARED_TASK/ui_messages.json" 2>/dev/null &
	pids+=($!)
done
for p in "${pids[@]}"; do
	pid_ends_within 10 "uid $OTHER's renames of FIFOs over a conversation file" "$p"
done
[[ ! -e $SHARED_TASK/ui_messages.json ]] || problem "a FIFO renamed over a conversation file made one"
as_other rm -f "$mnt2"/shared/fifo.*
as_other truncate -s 20G "$mnt2/shared/sparse.json"
out=$(as_other mv "$mnt2/shared/sparse.json" "$SHARED_TASK/ui_messages.json" 2>&1) &&
	problem "uid $OTHER renamed a 20 GB sparse file over a conversation file"
[[ $out == *"too large"* ]] || problem "a 20 GB sparse file renamed over a conversation file failed, but not with EFBIG: $out"
as_other rm -f "$mnt2/shared/sparse.json"
(($(df --output=avail "$T/small" | tail -1) > 20000)) || problem "uid $OTHER's sparse file filled the store's disk"
# Filling the disk: ENOSPC for the other user, nothing of the owner's lost.
out=$(as_other dd if=/dev/zero of="$mnt2/shared/fill" bs=1M count=100 2>&1) && problem "uid $OTHER wrote 100 MB into a 48 MB store"
[[ $out == *"No space left"* ]] || problem "filling the disk did not end in ENOSPC: $out"
as_other rm -f "$mnt2/shared/fill"
# A flood of opens: the daemon keeps an fd per open plain file. 5,000 in
# all with fd 3: the whole share of one other user of a daemon whose limit
# is 20,000 (limits.sh opens past it). (Under valgrind, whose own table of
# descriptors is smaller, 500.)
nopens=4999
[[ ${CONVFS_VALGRIND:-} == 1 ]] && nopens=500
as_other bash -c 'ulimit -n 6000 && exec 3<"$1" && for ((i = 0; i < $2; i++)); do exec {fd}<"$1" || exit 1; done; sleep 3' \
	_ "$mnt2/shared/tmp.json" "$nopens" &
flood=$!
sleep 1.5
jq -e 'type == "array"' "$C2/ui_messages.json" >/dev/null || problem "the owner cannot read its conversation during the flood of opens"
echo '{"k":1}' >"$mnt2/settings/during-flood.json" || problem "the owner cannot write during the flood of opens"
wait "$flood" || problem "uid $OTHER could not open the file 5,000 times"
grep -q " $mnt2 fuse" /proc/mounts && stat "$mnt2" >/dev/null || fail "the daemon died under another user"
for f in tasks/$TASK/ui_messages.json tasks/$TASK/api_conversation_history.json state/taskHistory.json; do
	same "$mnt2/$f" "$pristine2/$f" "the owner's $f after another user's attempts"
done
[[ $(cat "$mnt2/settings/secret.txt") == secret ]] || problem "the owner's plain file changed"
unmount_convfs "$mnt2"
SHARED_LOG="^convfs: (warning|error): cannot (write|commit|stage|create).*(No space left|ENOSPC)|^convfs: warning: .*shared/fill|^convfs: warning: refusing to commit '(shared/fifo\\.[0-9]+' as 'tasks/1795306500000/ui_messages.json': not a regular file|tasks/1795306500000/ui_messages.json': it is 21474836480 bytes)"
check_log "$store2.log" "$SHARED_LOG"

say "no mode bit given away: export, take-in, the mount root"
# owner_only WHAT DIR OWNER: nothing below DIR (DIR included) is setuid,
# setgid, sticky or open to group or others, and everything is OWNER's (uid:gid).
owner_only()
{
	local bad
	bad=$(find "$2" -perm /7077 -printf '%m %p\n')
	[[ -z $bad ]] || problem "$1: not owner-only:\n$bad"
	bad=$(find "$2" ! -user "${3%:*}" -printf '%U:%G %p\n' -o ! -group "${3#*:}" -printf '%U:%G %p\n')
	[[ -z $bad ]] || problem "$1: not owned by $3:\n$bad"
}
run_convfs export "$store2" "$T/out2" 2>"$T/export2.err" || problem "export of the shared store failed: $(cat "$T/export2.err")"
owner_only "the export of a shared store (run by root, its owner)" "$T/out2" 0:0
[[ $(stat -c %a "$T/out2/shared/setid") == 700 ]] || problem "shared/setid exported mode $(stat -c %a "$T/out2/shared/setid")"
cmp -s /bin/true "$T/out2/shared/setid" || problem "shared/setid exported with other bytes"
# A store another user owns: root's export is that user's.
chown "$OTHER:$OTHER" "$store2"
run_convfs export "$store2" "$T/out3" 2>"$T/export3.err" || problem "export of uid $OTHER's store failed: $(cat "$T/export3.err")"
owner_only "the export by root of uid $OTHER's store" "$T/out3" "$OTHER:$OTHER"
check_log "$T/export2.err"
check_log "$T/export3.err"
# The same file underneath, taken in at the next mount: owner-only and the
# store owner's, shared mount or not.
mkdir -m 0777 "$mnt2/shared-under"
as_other sh -c 'cat /bin/true >"$1" && chmod 6755 "$1"' _ "$mnt2/shared-under/setid"
mount_convfs "$mnt2" "$store2" -o allow_other
cmp -s /bin/true "$mnt2/shared-under/setid" || problem "shared-under/setid is not in the mount" # (waits for the take-in)
owner_only "the take-in into uid $OTHER's store (shared mount)" "$store2.files/shared-under" "$OTHER:$OTHER"
# Its registration too: the owner's daemons and convfs status read it, and
# remove it once root's daemon is gone (the folder was root's, made when
# root owned the store).
bad=$(find "$store2.mounts" ! -user "$OTHER" -printf '%U %p\n')
[[ -z $bad ]] || problem "root's registration in uid $OTHER's store is not the owner's:\n$bad"
[[ -n $(find "$store2.mounts" -name '*.warnings') ]] || problem "no warnings file in $store2.mounts"
[[ $(stat -c %a "$mnt2") == 755 ]] || problem "after a remount the mount root is mode $(stat -c %a "$mnt2"), not 755"
[[ $(stat -c %a "$store2.files") == 700 ]] || problem "after a remount the backing tree is mode $(stat -c %a "$store2.files")"
unmount_convfs "$mnt2"
check_log "$store2.log" "$SHARED_LOG"
# The store's folder is its owner's to plant in: <store>.mounts made a
# symlink to a folder of root's, root's daemon makes, gives away and removes
# nothing there (not even what looks like a stale registration), and serves
# unregistered.
mkdir "$T/roots"
stale=0123456789abcdef0123456789abcdef
echo '{}' >"$T/roots/$stale"
echo '{}' >"$T/roots/$stale.warnings"
rm -rf "$store2.mounts"
as_other ln -s "$T/roots" "$store2.mounts"
: >"$store2.log"
mount_convfs "$mnt2" "$store2" -o allow_other
echo planted >"$mnt2/planted" || problem "the mount over a planted <store>.mounts does not serve"
unmount_convfs "$mnt2"
got=$(cd "$T/roots" && find . -printf '%u %p\n' | sort)
[[ $got == $'root .\nroot ./'$stale$'\nroot ./'$stale.warnings ]] ||
	problem "root's daemon changed the folder a planted <store>.mounts points to:\n$got"
refused="^convfs: warning: cannot open '.*store\.db\.mounts', where the daemons serving the store register: a symlink, not a folder"
log_has "$store2.log" "$refused" "the refused symlink"
check_log "$store2.log" "$refused"
rm "$store2.mounts"
# A daemon's warnings file replaced by a FIFO: convfs status says it cannot
# read it, and does not wait for a writer that never comes.
mount_convfs "$mnt2" "$store2" -o allow_other
w=("$store2.mounts"/*.warnings)
((${#w[@]} == 1)) && [[ -f ${w[0]} ]] || fail "not one warnings file in $store2.mounts: ${w[*]}"
rm -f "${w[0]}" && as_other mkfifo -m 0600 "${w[0]}"
[[ -p ${w[0]} ]] || fail "no FIFO in place of ${w[0]}"
rc=0
timeout 20 "$CONVFS" status "$mnt2" >"$T/status.out" 2>&1 || rc=$?
((rc != 124)) || problem "convfs status hung on a FIFO in place of a warnings file"
((rc == 0)) || problem "convfs status beside a FIFO warnings file exits $rc: $(cat "$T/status.out")"
grep -q "^warnings: *not known (.*: Invalid argument)" "$T/status.out" ||
	problem "convfs status does not say it cannot read a FIFO warnings file: $(cat "$T/status.out")"
unmount_convfs "$mnt2"
store3=$T/small/store3.db
mount_convfs "$mnt2" "$store3"
owner_only "the take-in (a mount not shared)" "$store3.files/shared-under" 0:0
[[ $(stat -c %a "$store3.files/shared-under/setid") == 700 ]] ||
	problem "shared-under/setid taken in as mode $(stat -c %a "$store3.files/shared-under/setid")"
unmount_convfs "$mnt2"
# A backing tree an older convfs chmod'ed with the mount root: its mode
# becomes the mount root's, and the backing tree 0700 again.
chmod 0755 "$store3.files"
mount_convfs "$mnt2" "$store3"
[[ $(stat -c %a "$mnt2") == 755 ]] || problem "the mount root of a backing tree left 0755 is mode $(stat -c %a "$mnt2")"
[[ $(stat -c %a "$store3.files") == 700 ]] || problem "a backing tree left 0755 is mode $(stat -c %a "$store3.files") once mounted"
unmount_convfs "$mnt2"
check_log "$store3.log"
umount "$T/small" || true
store=$T/store.db
check_log "$store_log" "^convfs: warning: (refusing to commit 'tasks/$TASK/ui_messages\.json': not a JSON array|refusing to create the symlink 'tasks'|cannot make the folder 'tasks/[0-9]+' of the restored task: Too many levels)"
pass
