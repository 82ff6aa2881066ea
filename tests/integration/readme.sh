#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# readme.sh: workspaces/README.md, the view's own account of itself (one kind
# of path, fs/view/view_readme.c).
#
# Over the 2.18.0 fixture:
#   A. `ls workspaces/` lists README.md beside the workspaces; it reads as a
#      text that names the folders no listing shows (versions/,
#      checkpoints/), and those are there by name in a task's folder; stat
#      gives mode 0400, the size cat reads and the text's fixed time.
#   B. The kernel keeps it: a second cat and stat after its first ask the
#      daemon nothing of it (-d logs each request), not even after a second.
#   C. Read-only as the view's other texts: writing it fails with EACCES
#      (one log line), rm and mv with EPERM, chmod changes nothing; it is
#      the same after all that, and after a remount (inode, size, time).
#   D. A README.md of the client's own in workspaces/ (written underneath
#      while unmounted) wins: workspaces/README.md is the client's, the
#      view's answers to README.md.view, with one log line.

. "$(dirname "$0")/lib.sh"

mnt=$(fixture_extract 2.18.0 "$T/mnt")
STORE=$T/store.db
W=$mnt/workspaces
R=$W/README.md
mount_convfs "$mnt" "$STORE" -d

# ---- A. listed, read, stat ---------------------------------------------------
say "listed and read"
ls "$W" | grep -qxF README.md || problem "ls workspaces/ does not list README.md: $(ls "$W" | tr '\n' ' ')"
cat "$R" >"$T/readme" 2>"$T/cat.err" || fail "cat workspaces/README.md failed: $(cat "$T/cat.err")"
[[ $(head -n 1 "$T/readme") == "# workspaces/: the history by project" ]] ||
	problem "README.md begins with '$(head -n 1 "$T/readme")'"
for name in versions/ checkpoints/ .trash/ unknown/ messages.jsonl 'convfs restore'; do
	grep -qF -- "$name" "$T/readme" || problem "README.md does not mention '$name'"
done
task=$(ls -d "$W"/*-*/tasks/* | head -n 1)
[[ -d $task/versions && -d $task/checkpoints ]] || problem "the folders README.md names are not in '$task'"
read -r mode size mtime ino < <(stat -c '%a %s %Y %i' "$R")
[[ $mode == 400 ]] || problem "README.md has mode $mode; expected 400 (read-only, owner-only)"
[[ $size == $(wc -c <"$T/readme") ]] || problem "README.md's size $size is not what cat reads ($(wc -c <"$T/readme"))"
[[ $mtime == 1796515200 ]] || problem "README.md's mtime is $mtime; expected its text's, 1796515200"

# ---- B. kept by the kernel ------------------------------------------------------
# Its entry is kept a second, as the view's are; its attributes and pages
# longer (its text never changes). Tried up to three times: the kernel may
# drop a file's pages or attributes on its own (reclaim, an inode evicted
# during the lookup), but not at every try.
say "kept by the kernel"
for try in 1 2 3; do
	before=$(wc -l <"$STORE.log")
	sleep 1.1 # past the second a view's entry is kept
	cat "$R" >"$T/readme2"
	stat "$R" >/dev/null
	same "$T/readme2" "$T/readme" "a second cat of README.md"
	tail -n +"$((before + 1))" "$STORE.log" | grep -a -E 'opcode: ' >"$T/second"
	node=$(awk '/opcode: OPEN \(14\)/ { n = $10; sub(",", "", n); print n; exit }' "$T/second")
	[[ -n $node ]] || fail "no OPEN of README.md in the daemon's log:\n$(cat "$T/second")"
	asked=$(grep -a -F "nodeid: $node," "$T/second" | { grep -a -o -E 'opcode: (READ|GETATTR)' || true; } | sort |
		uniq -c | tr -s ' \n' ' ')
	[[ -n $asked ]] || break
	say "try $try: a cat and stat of the unchanged README.md asked the daemon:$asked"
done
[[ -z $asked ]] || problem "three times a cat and stat of the unchanged README.md asked the daemon:$asked"

# ---- C. read-only ------------------------------------------------------------------
say "read-only"
if (echo x >"$R") 2>"$T/w.err"; then
	problem "writing README.md succeeded"
else
	grep -q "Permission denied" "$T/w.err" || problem "writing README.md failed, but not with EACCES: $(cat "$T/w.err")"
fi
rm -f "$R" 2>"$T/rm.err" && problem "rm of README.md succeeded"
grep -q "Operation not permitted" "$T/rm.err" || problem "rm of README.md failed, but not with EPERM: $(cat "$T/rm.err")"
mv "$R" "$W/elsewhere.md" 2>"$T/mv.err" && problem "mv of README.md succeeded"
grep -q "Operation not permitted" "$T/mv.err" || problem "mv of README.md failed, but not with EPERM: $(cat "$T/mv.err")"
chmod 644 "$R" 2>/dev/null || true
cat "$R" >"$T/readme3"
same "$T/readme3" "$T/readme" "README.md after the refused writes"
[[ $(stat -c '%a %s %Y %i' "$R") == "400 $size $mtime $ino" ]] ||
	problem "README.md's mode, size, time or inode changed: $(stat -c '%a %s %Y %i' "$R")"
[[ ! -e $W/elsewhere.md && ! -e $STORE.files/workspaces/README.md ]] || problem "a refused write left a file behind"

unmount_convfs "$mnt"
check_log "$STORE.log" "^convfs: debug: |refusing to open 'workspaces/README.md' for writing: the view makes it from the store"
log_has "$STORE.log" "refusing to open 'workspaces/README.md' for writing" "the refused write"

mount_convfs "$mnt" "$STORE"
[[ $(stat -c '%a %s %Y %i' "$R") == "400 $size $mtime $ino" ]] ||
	problem "after a remount, README.md's mode, size, time or inode changed: $(stat -c '%a %s %Y %i' "$R")"
unmount_convfs "$mnt"

# ---- D. the client's own README.md wins -------------------------------------------
say "the client's own README.md"
echo "the client's notes" >"$W/README.md" # underneath: taken in at the next mount
mount_convfs "$mnt" "$STORE"
[[ $(cat "$R" 2>&1) == "the client's notes" ]] || problem "workspaces/README.md is not the client's: $(head -c 80 "$R" 2>&1)"
cat "$W/README.md.view" >"$T/readme4" 2>&1 || problem "the view's README.md is not at README.md.view"
same "$T/readme4" "$T/readme" "the view's README.md under its other name"
ls "$W" | grep -qxF README.md.view || problem "ls workspaces/ does not list README.md.view: $(ls "$W" | tr '\n' ' ')"
echo "more notes" >>"$R" || problem "the client cannot write its own README.md"
unmount_convfs "$mnt"
check_log "$STORE.log" "^convfs: debug: |refusing to open 'workspaces/README.md' for writing: the view makes it from the store"
log_has "$STORE.log" "the client has its own 'workspaces/README.md': the view shows its file of that name as 'README.md.view'" \
	"the clash of names"

pass
