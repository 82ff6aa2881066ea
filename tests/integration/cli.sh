#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# cli.sh: the command line behaves as documented, and bad input is refused
# clearly without harm.
#
# It proves that
#   - --help and --version answer with status 0 (help names store=,
#     allow_other and export; version prints a version number);
#   - no mount point, or one that does not exist: a non-zero status and a
#     message;
#   - a store file that is not a convfs database (random text, or another
#     program's SQLite database) or has a newer schema: the mount fails with
#     a clear message, nothing is mounted, the file is unchanged
#     byte-for-byte and nothing is left beside it;
#   - without -o store, the store is created under $XDG_DATA_HOME/convfs/
#     (owner-only), and the same mount point gets the same store again;
#   - without -f, convfs returns once mounted, its daemon holding no
#     descriptor it inherited (flock(1)'s lock); fusermount3 -u unmounts and
#     the daemon goes away;
#   - with -d, libfuse's request log comes as convfs's own lines;
#   - private by default: the mount root is 0700, files created 0644 (or
#     chmod 0644) are 0600, directories 0700, conversation files 0600;
#   - a name longer than NAME_MAX fails with ENAMETOOLONG;
#   - a new store named by a path relative to the folder convfs starts in
#     is made there, with its files and its registration, which goes at the
#     unmount; the mount's root takes a time (touch -d); a registration's
#     temporary file a killed daemon left (over a minute old) goes at the
#     next listing, a new one stays;
#   - a mount that starts while another holds the store's lock for an
#     instant (as convfs check does) waits that out;
#   - a second convfs on a store in use mounts too (several daemons serve
#     one store: tests/integration/mounts.sh), both registered beside the
#     store; convfs forget, which needs the store alone, is refused while
#     either serves; convfs status names a daemon whose mount point takes
#     over 4 KiB in its registration.

. "$(dirname "$0")/lib.sh"

M=$T/mnt
mkdir -p "$M"

# ---- --help, --version, usage errors ----------------------------------------

say "help and version"
rc=0
run_convfs --help >"$T/help" 2>&1 || rc=$?
((rc == 0)) || problem "--help exits with status $rc"
for word in 'store=' allow_other export; do
	grep -q -e "$word" "$T/help" || problem "--help does not mention '$word'"
done
rc=0
run_convfs --version >"$T/version" 2>&1 || rc=$?
((rc == 0)) || problem "--version exits with status $rc"
grep -q -E '[0-9]+\.[0-9]+' "$T/version" || problem "--version prints no version: $(cat "$T/version")"

say "usage errors"
rc=0
run_convfs -f >"$T/out" 2>&1 || rc=$?
((rc != 0)) || problem "convfs without a mount point exits 0"
no_valgrind_report "$T/out" "convfs without a mount point"
grep -q -i -E 'mount ?point' "$T/out" || problem "convfs without a mount point does not say so: $(cat "$T/out")"
rc=0
run_convfs -f -o "store=$T/nodir.db" "$T/does-not-exist" >"$T/out" 2>&1 || rc=$?
((rc != 0)) || problem "convfs on a missing mount point exits 0"
no_valgrind_report "$T/out" "convfs on a missing mount point"
[[ -s $T/out ]] || problem "convfs on a missing mount point says nothing"
! mountpoint -q "$T/does-not-exist" 2>/dev/null || fail "a missing mount point got mounted"

# ---- stores that are not ours --------------------------------------------------

# refused_store WHAT STORE ERE: the mount must fail, with a message matching
# ERE, leaving STORE as it was and nothing beside it.
refused_store()
{
	local what=$1 store=$2 ere=$3 rc=0 before
	cp "$store" "$T/store.orig"
	before=$(ls -A "$(dirname "$store")" | tr '\n' ' ')
	run_convfs -f -o "store=$store" "$M" >"$T/out" 2>&1 || rc=$?
	if mountpoint -q "$M"; then
		fusermount3 -u "$M"
		fail "$what: convfs mounted it"
	fi
	((rc != 0)) || problem "$what: convfs exits 0"
	no_valgrind_report "$T/out" "$what"
	grep -q -E -e "$ere" "$T/out" || problem "$what: no clear message (want /$ere/): $(cat "$T/out")"
	same "$store" "$T/store.orig" "$what: the store file after the refused mount"
	[[ $(ls -A "$(dirname "$store")" | tr '\n' ' ') == "$before" ]] ||
		problem "$what: the refused mount left files beside the store: $(ls -A "$(dirname "$store")" | tr '\n' ' ') (before: $before)"
	# Daemon mode reports the failure on the terminal too (before it forks).
	rc=0
	run_convfs -o "store=$store" "$M" >"$T/out" 2>&1 || rc=$?
	! mountpoint -q "$M" || { fusermount3 -u "$M"; fail "$what: convfs (daemon mode) mounted it"; }
	((rc != 0)) || problem "$what: convfs (daemon mode) exits 0"
	no_valgrind_report "$T/out" "$what (daemon mode)"
	grep -q -E -e "$ere" "$T/out" || problem "$what: no clear message in daemon mode: $(cat "$T/out")"
	same "$store" "$T/store.orig" "$what: the store file after the refused daemon-mode mount"
}

say "a store that is not a convfs database"
mkdir "$T/text" "$T/foreign" "$T/newer"
head -c 3000 /dev/urandom | base64 >"$T/text/store.db"
refused_store "a text file as the store" "$T/text/store.db" "store.*not a (convfs )?database"

tar -xzf "$(fixture_tarball 1.0.10)" -C "$T/foreign" cline-1.0.10/locks.db
mv "$T/foreign/cline-1.0.10/locks.db" "$T/foreign/store.db"
rmdir "$T/foreign/cline-1.0.10"
refused_store "another program's SQLite database as the store" "$T/foreign/store.db" "not a convfs database"

say "a store with a newer schema"
mount_convfs "$M" "$T/newer/store.db"
unmount_convfs "$M"
sqlite3 "$T/newer/store.db" 'PRAGMA user_version = 9999'
mv "$T/newer/store.db.log" "$T/newer.log"
refused_store "a store with a newer schema" "$T/newer/store.db" "newer"

# ---- the default store -------------------------------------------------------

say "the default store location"
export XDG_DATA_HOME=$T/xdg
mount_convfs_log "$M" "$T/default.log"
touch "$M/hello"
unmount_convfs "$M"
stores=("$XDG_DATA_HOME"/convfs/*.db)
[[ ${#stores[@]} == 1 && -f ${stores[0]} ]] || fail "no single store under \$XDG_DATA_HOME/convfs/: $(ls -A "$XDG_DATA_HOME/convfs" 2>&1)"
[[ $(stat -c %a "$XDG_DATA_HOME/convfs") == 700 ]] || problem "\$XDG_DATA_HOME/convfs is mode $(stat -c %a "$XDG_DATA_HOME/convfs"), not 700"
[[ $(stat -c %a "${stores[0]}") == 600 ]] || problem "the default store is mode $(stat -c %a "${stores[0]}"), not 600"
[[ -f ${stores[0]}.files/hello ]] || problem "the plain file is not in the default store's .files folder"
mount_convfs_log "$M" "$T/default.log"
[[ -f $M/hello ]] || problem "the second mount without -o store did not find the same store"
unmount_convfs "$M"
stores=("$XDG_DATA_HOME"/convfs/*.db)
((${#stores[@]} == 1)) || problem "a second mount made a second store: ${stores[*]}"
check_log "$T/default.log"
unset XDG_DATA_HOME

# ---- daemon mode -----------------------------------------------------------------

say "daemon mode"
STORE=$T/store.db
rc=0
# Never under valgrind: the daemon is found below by its exact command line.
# Started by flock(1), whose command inherits the lock's descriptor: the
# daemon closes what it did not open, and the lock is free once convfs has
# returned (as is a pipe a script reads until every writer has closed it).
timeout 20 flock "$T/held" "$CONVFS" -o "store=$STORE" "$M" >"$T/out" 2>&1 || rc=$?
((rc == 0)) || fail "convfs in daemon mode exits with status $rc: $(cat "$T/out")"
flock -n "$T/held" true || problem "the daemon holds the lock of the flock(1) that started it"
mountpoint -q "$M" || fail "convfs in daemon mode returned before mounting"
[[ ! -s $T/out ]] || problem "convfs in daemon mode printed: $(cat "$T/out")"
# The daemon: the one process whose command line is exactly ours.
want=$(printf '%s\n' "$CONVFS" -o "store=$STORE" "$M")
daemon=
for cmdline in /proc/[0-9]*/cmdline; do
	[[ $(tr '\0' '\n' <"$cmdline" 2>/dev/null) == "$want" ]] || continue
	[[ -z $daemon ]] || fail "more than one convfs daemon serves '$M'"
	daemon=${cmdline#/proc/}
	daemon=${daemon%/cmdline}
done
[[ -n $daemon ]] || fail "cannot find the convfs daemon serving '$M'"
echo data >"$M/file"
fusermount3 -u "$M"
wait_gone "$daemon" 10 || fail "the daemon (pid $daemon) still runs 10 s after fusermount3 -u"

# ---- a new store named relative to the current folder --------------------------------

say "a new store given by a relative path"
# The daemon works in / (its fork's chdir): the store, its files and its
# registration are where the path meant in the folder convfs started in.
mkdir "$T/rel"
rc=0
(cd "$T/rel" && timeout 20 "$CONVFS" -o store=new.db "$M") >"$T/out" 2>&1 || rc=$?
((rc == 0)) || fail "convfs with -o store=new.db (relative) exits with status $rc: $(cat "$T/out")"
[[ -f $T/rel/new.db ]] || problem "the store named new.db in $T/rel is not there"
touch -d '2001-01-01 00:00' "$M" 2>"$T/out" || problem "touch -d of the mount's root fails: $(cat "$T/out")"
[[ $(stat -c %Y "$M") == $(date -d '2001-01-01 00:00' +%s) ]] || problem "touch -d of the mount's root did not set its time"
echo data >"$M/file" || problem "cannot write a file on a store named by a relative path"
fusermount3 -u "$M"
for ((i = 0; i < 100; i++)); do
	[[ -n $(find "$T/rel/new.db.mounts" -maxdepth 1 -type f 2>/dev/null) ]] || break
	sleep 0.1
done
n=$(find "$T/rel/new.db.mounts" -maxdepth 1 -type f | wc -l)
((n == 0)) || problem "$n files left in new.db.mounts 10 s after unmounting: $(ls "$T/rel/new.db.mounts")"
[[ $(cat "$T/rel/new.db.files/file" 2>/dev/null) == data ]] || problem "the file written is not in new.db.files beside the store"

say "registrations' temporary files left by daemons killed while registering"
# Listing the registrations (status does) removes one no one holds that is
# over a minute old, and leaves a newer one, as a registration under way.
old_tmp=$T/rel/new.db.mounts/0123456789abcdef0123456789abcdef.tmp
young_tmp=$T/rel/new.db.mounts/fedcba9876543210fedcba9876543210.tmp
echo '{}' >"$old_tmp"
touch -d '-2 min' "$old_tmp"
echo '{}' >"$young_tmp"
rc=0
(cd "$T/rel" && timeout 20 "$CONVFS" -o store=new.db "$M") >"$T/out" 2>&1 || rc=$?
((rc == 0)) || fail "convfs -o store=new.db exits with status $rc: $(cat "$T/out")"
"$CONVFS" status "$M" >"$T/out" 2>&1 || problem "convfs status fails: $(cat "$T/out")"
fusermount3 -u "$M"
[[ ! -e $old_tmp ]] || problem "a registration's temporary file of 2 minutes ago, held by no one, is still there"
[[ -e $young_tmp ]] || problem "a registration's temporary file just made was removed"
rm -f "$young_tmp"

say "a mount while the store's lock is held for an instant"
# As convfs check holds it to learn whether a daemon serves the store (here
# for 0.3 s, by flock(1)): the mount waits that out, not refused as if
# convfs forget held it.
flock -x "$T/rel/new.db" sleep 0.3 &
locker=$!
sleep 0.1
mount_convfs_log "$M" "$T/locked.log" -o "store=$T/rel/new.db"
wait "$locker"
[[ -f $M/file ]] || problem "the mount made while the lock was held does not show the store's file"
unmount_convfs "$M"
check_log "$T/locked.log"

# ---- -d: libfuse's messages are convfs's ------------------------------------------

say "-d"
# Every line, libfuse's request log too, is convfs's: prefixed, one level,
# to syslog once detached (never under valgrind: its lines are not ours).
"$CONVFS" -d -o "store=$T/debug.db" "$M" 2>"$T/debug.log" &
pid=$!
for ((i = 0; i < 100; i++)); do
	mountpoint -q "$M" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if mountpoint -q "$M"; then
	ls "$M" >/dev/null
	fusermount3 -u "$M"
	wait_gone "$pid" 10 || fail "convfs -d (pid $pid) still runs 10 s after fusermount3 -u"
	grep -q '^convfs: debug: libfuse: unique: [0-9]*, opcode: READDIR' "$T/debug.log" ||
		problem "convfs -d does not log libfuse's requests as its own: $(head -n 5 "$T/debug.log")"
	other=$(grep -v '^convfs: ' "$T/debug.log" | head -n 3 || true)
	[[ -z $other ]] || problem "convfs -d printed lines not its own: $other"
else
	problem "convfs -d did not mount: $(cat "$T/debug.log")"
fi
wait "$pid" 2>/dev/null || true

# ---- private by default -------------------------------------------------------

say "modes"
mount_convfs "$M" "$STORE"
mode() { stat -c %a "$1"; }
[[ $(mode "$M") == 700 ]] || problem "the mount root is mode $(mode "$M"), not 700"
(umask 022 && : >"$M/new-file" && mkdir "$M/new-dir" && : >"$M/new-dir/inner")
[[ $(mode "$M/new-file") == 600 ]] || problem "a file created 0644 is mode $(mode "$M/new-file"), not 600"
[[ $(mode "$M/new-dir") == 700 ]] || problem "a directory created 0755 is mode $(mode "$M/new-dir"), not 700"
[[ $(mode "$M/new-dir/inner") == 600 ]] || problem "a file created 0644 in a new folder is mode $(mode "$M/new-dir/inner"), not 600"
chmod 0644 "$M/new-file"
[[ $(mode "$M/new-file") == 600 ]] || problem "chmod 0644 gave mode $(mode "$M/new-file"), not 600"
chmod 0755 "$M/new-dir"
[[ $(mode "$M/new-dir") == 700 ]] || problem "chmod 0755 of a folder gave mode $(mode "$M/new-dir"), not 700"
[[ $(mode "$STORE.files/new-file") == 600 ]] || problem "the backing copy of new-file is mode $(mode "$STORE.files/new-file")"
mkdir -p "$M/tasks/1795306269021"
printf '[]' >"$M/tasks/1795306269021/ui_messages.json"
[[ $(mode "$M/tasks/1795306269021/ui_messages.json") == 600 ]] ||
	problem "a conversation file is mode $(mode "$M/tasks/1795306269021/ui_messages.json"), not 600"

# ---- bad names -------------------------------------------------------------------

say "bad names"
long=$(printf 'a%.0s' {1..300})
rc=0
touch "$M/$long" 2>"$T/out" || rc=$?
((rc != 0)) || problem "a 300-byte name was created"
grep -q 'File name too long' "$T/out" || problem "a 300-byte name: not ENAMETOOLONG: $(cat "$T/out")"
rc=0
mkdir "$M/tasks/$long" 2>"$T/out" || rc=$?
grep -q 'File name too long' "$T/out" || problem "a 300-byte task folder name: not ENAMETOOLONG: $(cat "$T/out")"

# ---- two daemons on one store ----------------------------------------------------

say "a second daemon on the same store"
mkdir "$T/second"
mount_convfs_log "$T/second" "$T/second.log" -o "store=$STORE"
[[ -f $T/second/new-file ]] || problem "the second mount of the store does not show the first's file"
[[ -f $M/new-file ]] || problem "the first mount does not answer beside the second"
n=$(find "$STORE.mounts" -maxdepth 1 -regextype egrep -regex '.*/[0-9a-f]{32}' | wc -l)
((n == 2)) || problem "$n daemons registered in $STORE.mounts, not 2"
if out=$(echo x | "$CONVFS" forget "$STORE" --match - --yes 2>&1); then
	problem "convfs forget ran on a store two daemons serve"
elif [[ $out != *"is mounted"* ]]; then
	problem "convfs forget on a mounted store did not say it is mounted: $out"
fi
unmount_convfs "$M"
[[ -f $T/second/new-file ]] || problem "the second mount does not answer after the first left"
unmount_convfs "$T/second"
n=$(find "$STORE.mounts" -maxdepth 1 -type f | wc -l)
((n == 0)) || problem "$n files left in $STORE.mounts after both unmounted"
check_log "$T/second.log"

say "a mount point whose registration is over 4 KiB"
# Its name escaped in the registration's JSON (6 bytes a control character):
# convfs status reads the whole of it.
long=$(printf '\001%.0s' {1..240})
deep=$T/$long/$long/$long
mkdir -p "$deep"
mount_convfs_log "$deep" "$T/deep.log" -o "store=$T/deep.db"
"$CONVFS" status --json "$deep" >"$T/deep.json" || problem "convfs status of a deep mount point failed"
[[ $(jq -r '.daemons[0].mountpoint' "$T/deep.json") == "$deep" ]] ||
	problem "convfs status does not name the deep mount point: $(jq -c .daemons "$T/deep.json" | head -c 300)"
unmount_convfs "$deep"
check_log "$T/deep.log"

check_log "$STORE.log" "File name too long"
pass
