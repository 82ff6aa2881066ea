#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# posix.sh: plain files get POSIX semantics (the battery in posix.c).
#
# The battery (open flags, O_APPEND, offsets and holes, rename of files and
# folders, hard links and their counts, unlink of open files, truncate,
# timestamps, modes and owners, permissions as another user, mmap, fsync,
# O_DIRECT, POSIX, OFD and flock locks, statfs, long listings with
# telldir/seekdir, fifos and sockets, exec, xattrs, fallocate,
# copy_file_range) runs
#   - on a plain folder first, where every check must pass: the battery is
#     right, and could fail;
#   - in the plain area of a private mount (the default: no allow_other), at
#     the top (posix/) and inside a task folder of the compat tree
#     (tasks/<id>/extra/, plain because it is not one of a task's
#     conversation files), checking the documented differences: no group or
#     other bits, other users refused, O_TMPFILE and xattrs EOPNOTSUPP, no
#     device nodes;
#   - after a remount: what the battery left in keep/ (contents, a sparse
#     tail, modes, link counts, inode numbers, explicit times, a symlink, a
#     fifo, bytes written through a mapping, an owner) is all still there,
#     `find -printf` of it is unchanged, and it lives in the backing tree;
#   - in a mount with -o allow_other, with the permission checks run as
#     uid 65534: default_permissions refuses and allows what a kernel
#     filesystem would, and what that user makes is owned by it.
# Docs are not plain files (one name, mode 0600, content committed at close):
# the battery does not run on them; their semantics are the other tests'.

. "$(dirname "$0")/lib.sh"

[[ -n ${POSIX:-} && -x $POSIX ]] || fail "POSIX must name the battery binary (got '${POSIX:-}')"
# Root: to act as another user, and to mount with allow_other without
# user_allow_other in /etc/fuse.conf (which only binds fusermount3's users).
((EUID == 0)) || fail "this test needs root"

OTHER=65534
TASK=1795306331999

# battery LABEL ARGS...: runs the battery; each failed check is a problem.
battery()
{
	local label=$1 out rc=0
	shift
	say "battery: $label ($*)"
	out=$("$POSIX" "$@" 2>&1) || rc=$?
	sed "s/^/  $label: /" <<<"$out" >&2
	if ((rc != 0)); then
		problem "$label: the battery failed (status $rc):\n$(grep -E '^FAIL|^posix:' <<<"$out" || true)"
	fi
}

# listing DIR: what must not change across a remount (atime aside: reads move it).
listing()
{
	(cd "$1" && find . -printf '%p %i %n %m %s %T@ %U %G %y %l\n' | sort)
}

# Uid 65534 must be able to reach the folders the battery makes below $T.
chmod 0755 "$T"

# ---- a plain folder: the battery itself ---------------------------------------

start=$SECONDS
battery plain --other "$OTHER" "$T/plain"
battery plain-verify --verify "$T/plain"
say "the plain folder took $((SECONDS - start)) s"

# ---- a private mount -------------------------------------------------------------

M=$T/mnt
STORE=$T/store.db
mkdir "$M"
mount_convfs "$M" "$STORE"
start=$SECONDS
battery convfs --private --other "$OTHER" "$M/posix"
mkdir -p "$M/tasks/$TASK"
battery convfs-task --private --other "$OTHER" "$M/tasks/$TASK/extra"
say "the private mount took $((SECONDS - start)) s"
listing "$M/posix/keep" >"$T/keep.before"
listing "$M/tasks/$TASK/extra/keep" >"$T/task-keep.before"

# ---- what it left survives a remount ------------------------------------------

unmount_convfs "$M"
mount_convfs "$M" "$STORE"
battery convfs-verify --verify --private "$M/posix"
battery convfs-task-verify --verify --private "$M/tasks/$TASK/extra"
listing "$M/posix/keep" >"$T/keep.after"
listing "$M/tasks/$TASK/extra/keep" >"$T/task-keep.after"
same "$T/keep.after" "$T/keep.before" "posix/keep after a remount (find -printf)"
same "$T/task-keep.after" "$T/task-keep.before" "tasks/$TASK/extra/keep after a remount (find -printf)"
# plain files are real files of the backing tree, hard links included
B=$STORE.files/posix/keep
[[ -f $B/data && $(stat -c %h "$B/data") == 2 && $(stat -c %i "$B/data") == $(stat -c %i "$B/link") ]] ||
	problem "keep/data and keep/link are not one file with two names in the backing tree"
[[ $(stat -c %i "$B/data") == $(stat -c %i "$M/posix/keep/data") ]] ||
	problem "st_ino of keep/data is not the backing file's"
[[ -p $B/fifo && -L $B/sym ]] || problem "keep/fifo or keep/sym is not in the backing tree"
unmount_convfs "$M"

# ---- a shared mount: permissions as another user ---------------------------------

mount_convfs "$M" "$STORE" -o allow_other
chmod 0755 "$M"
start=$SECONDS
battery convfs-shared --convfs --other "$OTHER" "$M/posix-shared"
say "the shared mount took $((SECONDS - start)) s"
# the other user's files are its own in the backing tree too
[[ $(stat -c %U "$STORE.files/posix-shared/permissions/open/mine") == "$(id -nu "$OTHER")" ]] ||
	problem "a file made by uid $OTHER is not owned by it in the backing tree"
unmount_convfs "$M"

check_log "$STORE.log"
pass
