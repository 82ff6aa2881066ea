#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fstab.sh: convfs mounted by mount(8), as an /etc/fstab line or
# `mount -t fuse.convfs` has it: mount(8) runs mount.fuse3, which runs
# `convfs SOURCE MOUNTPOINT -o OPTIONS`.
#
# It proves that
#   - `mount -t fuse.convfs STORE MOUNTPOINT -o ...` mounts with STORE as the
#     store, despite the options that are only fstab's or systemd's (nofail,
#     _netdev, x-systemd.*, comment=, defaults, relatime) and those
#     mount.fuse3 adds as root (dev, suid): the mount is nosuid,nodev all the
#     same; what is written reads back, and `umount` ends the daemon;
#   - an fstab line `convfs MOUNTPOINT fuse.convfs OPTIONS 0 0`, mounted with
#     `mount -T FILE MOUNTPOINT`, uses the mount point's default store (under
#     $XDG_DATA_HOME/convfs/: mount(8) sets HOME to the user's home from
#     /etc/passwd, but keeps XDG_DATA_HOME), and a second mount finds what
#     the first stored;
#   - an unknown SOURCE word fails the mount with a message naming it, and
#     nothing is mounted.
#
# mount(8) runs its helpers without the caller's PATH (the helper's shell
# looks in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin), so
# the test runs in a mount namespace of its own, where a folder holding a
# `convfs` link to the build is bind-mounted over /usr/local/sbin, and a
# tmpfs over /run/mount (libmount's record of userspace options): nothing of
# it is seen outside. The daemons log to syslog here (they are not -f).

if [[ ${CONVFS_FSTAB_NS:-} != 1 ]]; then
	((EUID == 0)) || { echo "fstab: FAIL: this test needs root (mount(8), a mount namespace)" >&2; exit 1; }
	command -v unshare >/dev/null || { echo "fstab: FAIL: unshare (util-linux) is missing" >&2; exit 1; }
	CONVFS_FSTAB_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

. "$(dirname "$0")/lib.sh"
# Other tests' FUSE mounts, copied into this namespace, are let go at once
# (their daemons would not end at their unmounts while it lives).
detach_fuse_copies

for cmd in mount umount findmnt mount.fuse3; do
	command -v "$cmd" >/dev/null || fail "$cmd is missing"
done
mkdir -p "$T/bin" "$T/xdg" "$T/stores"
ln -s "$CONVFS" "$T/bin/convfs"
mount --bind "$T/bin" /usr/local/sbin || fail "cannot bind-mount '$T/bin' over /usr/local/sbin"
mount -t tmpfs -o mode=0755 tmpfs /run/mount 2>/dev/null || true
export XDG_DATA_HOME=$T/xdg
M=$T/folder
mkdir -p "$M"
TASK=1795306269021
MSG='[{"ts":1795306271039,"type":"say","say":"task","text":"from fstab"}]'

# save_and_read TAG: a conversation file written through the mount reads back.
save_and_read()
{
	mkdir -p "$M/tasks/$TASK"
	printf '%s' "${MSG/fstab/$1}" >"$M/tasks/$TASK/ui_messages.json.tmp"
	mv "$M/tasks/$TASK/ui_messages.json.tmp" "$M/tasks/$TASK/ui_messages.json"
	[[ $(cat "$M/tasks/$TASK/ui_messages.json") == "${MSG/fstab/$1}" ]] ||
		problem "$1: the conversation does not read back: $(cat "$M/tasks/$TASK/ui_messages.json")"
}

# umount_and_wait: umount(8), then the daemon must go (the mount and its pid).
umount_and_wait()
{
	local pid
	pid=$(daemon_of "$M")
	[[ -n $pid ]] || fail "no convfs serves '$M'"
	umount "$M" || fail "umount '$M' failed"
	! mountpoint -q "$M" || fail "'$M' is still mounted after umount"
	wait_gone "$pid" $((10 * SLOW)) || fail "convfs (pid $pid) still runs $((10 * SLOW)) s after umount"
}

# daemon_of DIR: the pid of the convfs that has DIR among its arguments, if
# any. (mount.fuse3 runs `convfs SOURCE MOUNTPOINT -o OPTIONS`: the options
# come last.)
daemon_of()
{
	local p args
	for p in /proc/[0-9]*; do
		args=$({ tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null) || continue
		[[ $(head -n 1 <<<"$args") == convfs ]] && grep -q -x -F -e "$1" <<<"$args" || continue
		echo "${p#/proc/}"
		echo "${p#/proc/}" >>"$T/daemons"
		return 0
	done
}

say "mount -t fuse.convfs STORE MOUNTPOINT"
STORE=$T/stores/a.db
mount -t fuse.convfs "$STORE" "$M" \
	-o nofail,_netdev,x-systemd.automount,x-systemd.requires=network.target,comment=convfs,defaults,relatime,dev,suid \
	2>"$T/mount.err" || fail "mount -t fuse.convfs failed: $(cat "$T/mount.err")"
mountpoint -q "$M" || fail "mount -t fuse.convfs returned, but '$M' is not mounted"
[[ ! -s $T/mount.err ]] || problem "mount -t fuse.convfs printed: $(cat "$T/mount.err")"
opts=$(findmnt -n -o FSTYPE,OPTIONS --mountpoint "$M")
[[ $opts == fuse.convfs* ]] || problem "the mount is not of type fuse.convfs: $opts"
[[ ,${opts#* }, == *,nosuid,* && ,${opts#* }, == *,nodev,* ]] || problem "dev or suid of the command line was obeyed: $opts"
[[ -f $STORE && -d $STORE.files ]] || problem "SOURCE '$STORE' was not used as the store: $(ls -A "$T/stores")"
[[ -z $(ls -A "$XDG_DATA_HOME") ]] || problem "a default store was made although SOURCE named one: $(find "$XDG_DATA_HOME")"
save_and_read "mount -t"
umount_and_wait
[[ $(sqlite3 "$STORE" 'PRAGMA integrity_check') == ok ]] || problem "the store does not check ok after umount"

say "an fstab line, mount -T FILE MOUNTPOINT"
printf '# convfs over one folder, its default store\nconvfs %s fuse.convfs defaults,nofail,_netdev,x-systemd.automount,noatime 0 0\n' \
	"$M" >"$T/fstab"
mount -T "$T/fstab" "$M" 2>"$T/mount.err" || fail "mount -T '$T/fstab' '$M' failed: $(cat "$T/mount.err")"
mountpoint -q "$M" || fail "mount -T returned, but '$M' is not mounted"
stores=("$XDG_DATA_HOME"/convfs/folder-*.db)
[[ ${#stores[@]} == 1 && -f ${stores[0]} ]] || problem "no default store under \$XDG_DATA_HOME/convfs: $(find "$XDG_DATA_HOME" 2>&1)"
[[ ! -e $M/tasks/$TASK ]] || problem "the default store holds the task of another store"
save_and_read "fstab"
umount_and_wait
mount -T "$T/fstab" "$M" 2>"$T/mount.err" || fail "mounting the fstab line again failed: $(cat "$T/mount.err")"
[[ $(cat "$M/tasks/$TASK/ui_messages.json" 2>&1) == "${MSG/fstab/fstab}" ]] ||
	problem "the second mount does not find what the first stored: $(cat "$M/tasks/$TASK/ui_messages.json" 2>&1)"
umount_and_wait

say "an unknown SOURCE"
rc=0
mount -t fuse.convfs nosuchword "$M" 2>"$T/mount.err" || rc=$?
((rc != 0)) || problem "mount of SOURCE 'nosuchword' succeeded"
grep -q "unknown source 'nosuchword'" "$T/mount.err" || problem "the failed mount does not name the source: $(cat "$T/mount.err")"
! mountpoint -q "$M" || problem "'$M' is mounted after a failed mount"

pass
