#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# versions.sh: every saved version of a task is a read-only folder,
# workspaces/<ws>/tasks/<id>/versions/<NNNNNN>-<time>/.
#
#   A. Over the 1.0.10 fixture: the take-in's saves are versions 1..3; after
#      each save through the mount (an append with >>, a rewrite through the
#      compat file that drops messages) a new version appears whose
#      messages.jsonl, ui_messages.jsonl and metadata.json are byte for byte
#      the live files as they were right after that save (diff), and the
#      older versions still read as they were.
#   B. Read-only: writing, creating, removing, renaming, chmod in a version
#      folder fail with EROFS (or EACCES) and change nothing.
#   C. rsync-stable: `rsync -a versions/ backup/` twice, the second copies
#      nothing; inode numbers, sizes and mtimes (stat) are the same after a
#      remount.
#   D. A CLI 3.x session's version holds what it has: messages.jsonl.
#   E. 10,000 saves of one task: `ls versions/` lists 10,000+ names in order
#      (ls sorts them as numbered) in under 3 s, `ls -l` (a lookup of each)
#      in under 10 s (the times are printed), and the last and the middle
#      one read back their last lines. Under valgrind (CONVFS_VALGRIND=1),
#      1,000 saves: the same paths through the daemon (a listing of many
#      readdir replies, a lookup of each), where 10,000 took 7 minutes of
#      CI's; the plain and sanitized runs keep 10,000.

. "$(dirname "$0")/lib.sh"

TASK=1795306331217
mnt=$(fixture_extract 1.0.10 "$T/mnt")
store=$T/store.db
mount_convfs "$mnt" "$store"
V=$(echo "$mnt"/workspaces/*/tasks/$TASK)
[[ -d $V/versions ]] || fail "no versions/ in '$V'"
# Found by name, not listed: recursive tools see each conversation once, and rm -r of a task works.
! ls "$V" | grep -q versions || problem "versions/ is listed in the task's folder"
(($(grep -r -l --exclude-dir=checkpoints "Current Mode" "$mnt/workspaces" | wc -l) == 2)) ||
	problem "grep -r finds the conversation more than once:\n$(grep -r -l --exclude-dir=checkpoints "Current Mode" "$mnt/workspaces")"

# last_version: the name of the newest version folder.
last_version() { ls "$V/versions" | tail -n 1; }

# snapshot DEST: the task's live files, copied now.
snapshot()
{
	mkdir -p "$1"
	cp "$V/messages.jsonl" "$V/ui_messages.jsonl" "$V/metadata.json" "$1/"
}

# --- A: each save is a version, as it was -----------------------------------
n0=$(ls "$V/versions" | wc -l)
((n0 == 3)) || problem "the take-in of 3 files made $n0 versions, expected 3"
[[ $(ls "$V/versions" | head -n 1) =~ ^000001-[0-9]{8}T[0-9]{6}Z$ ]] || problem "bad version name: $(ls "$V/versions" | head -n 1)"
snapshot "$T/live0"
diff -r "$T/live0" "$V/versions/$(last_version)" || problem "the last version after the take-in is not the live task"

printf '%s\n' '{"role":"user","content":"first save through the mount"}' >>"$V/messages.jsonl"
snapshot "$T/live1"
v1=$(last_version)
[[ $v1 == 000004-* ]] || problem "the append made version '$v1', expected 000004-*"
diff -r "$T/live1" "$V/versions/$v1" || problem "version $v1 is not the task as it was after the append"

# A rewrite that drops all but the first message, as Cline writes (temp + rename).
node -e '
	const fs = require("fs"), f = process.argv[1];
	const a = JSON.parse(fs.readFileSync(f, "utf8")).slice(0, 1);
	fs.writeFileSync(f + ".tmp.1.json", JSON.stringify(a));
	fs.renameSync(f + ".tmp.1.json", f);' "$mnt/tasks/$TASK/api_conversation_history.json"
snapshot "$T/live2"
v2=$(last_version)
[[ $v2 == 000005-* ]] || problem "the rewrite made version '$v2', expected 000005-*"
diff -r "$T/live2" "$V/versions/$v2" || problem "version $v2 is not the task as it was after the rewrite"
diff -r "$T/live1" "$V/versions/$v1" || problem "version $v1 changed after a later save"
(($(wc -l <"$V/versions/$v2/messages.jsonl") == 1)) || problem "the rewrite's version does not have 1 message"
jq -e -s 'length > 1' "$V/versions/$v1/messages.jsonl" >/dev/null || problem "jq cannot read version $v1"

# --- B: read-only ----------------------------------------------------------
vdir=$V/versions/$v1
before=$(cat "$vdir/messages.jsonl" | sha256sum)
expect_fail()
{
	local what=$1 err
	shift
	if "$@" 2>"$T/err"; then
		problem "$what succeeded in a version folder"
	elif ! err=$(cat "$T/err") || ! grep -q -E 'Read-only file system|Permission denied' <<<"$err"; then
		problem "$what failed, but not with EROFS or EACCES: $err"
	fi
}
expect_fail "a write" sh -c "echo x >>'$vdir/messages.jsonl'"
expect_fail "a truncating write" sh -c "echo x >'$vdir/ui_messages.jsonl'"
expect_fail "a new file" touch "$vdir/new"
expect_fail "mkdir" mkdir "$V/versions/000099-x"
expect_fail "rm" rm -f "$vdir/metadata.json"
expect_fail "rm -r" rm -rf "$vdir"
expect_fail "mv" mv "$vdir/messages.jsonl" "$vdir/m"
expect_fail "chmod" chmod 600 "$vdir/messages.jsonl"
expect_fail "touch" touch "$vdir/messages.jsonl"
[[ $(cat "$vdir/messages.jsonl" | sha256sum) == "$before" ]] || problem "a refused write changed a version"
[[ -d $vdir && -f $vdir/metadata.json ]] || problem "a refused removal removed something"

# --- C: rsync-stable -------------------------------------------------------
rsync -a "$V/versions/" "$T/backup/"
diff -r "$V/versions" "$T/backup" || problem "rsync's copy differs from versions/"
again=$(rsync -a --itemize-changes "$V/versions/" "$T/backup/")
[[ -z $again ]] || problem "a second rsync copied again:\n$again"
stat_all() { (cd "$V/versions" && find . -mindepth 1 -exec stat -c '%n %i %s %Y %a' {} + | sort); }
stat_all >"$T/stat1"
unmount_convfs "$mnt"
mount_convfs "$mnt" "$store"
stat_all >"$T/stat2"
diff "$T/stat1" "$T/stat2" || problem "inode numbers, sizes or mtimes of versions changed across a remount"
again=$(rsync -a --itemize-changes "$V/versions/" "$T/backup/")
[[ -z $again ]] || problem "rsync after a remount copied again:\n$again"

# --- E: 10,000 saves -------------------------------------------------------
N=10000
[[ ${CONVFS_VALGRIND:-} == 1 ]] && N=1000
node -e '
	const fs = require("fs"), f = process.argv[1], n = +process.argv[2];
	for (let i = 1; i <= n; i++)
		fs.appendFileSync(f, JSON.stringify({ role: "user", content: "save " + i }) + "\n");' \
	"$V/messages.jsonl" "$N"
start=$(date +%s.%N)
names=$(ls "$V/versions")
secs=$(echo "$(date +%s.%N) - $start" | bc)
count=$(wc -l <<<"$names")
say "ls of versions/ with $count versions: $secs s"
((count == N + 5)) || problem "versions/ lists $count names after $N more saves, expected $((N + 5))"
[[ $names == "$(sort <<<"$names")" ]] || problem "ls does not sort the versions in their order"
# Bounds in seconds, stretched under valgrind as every bound of lib.sh (SLOW).
(($(echo "$secs < 3 * $SLOW" | bc) == 1)) || problem "ls of $count versions took $secs s (over $((3 * SLOW)) s)"
start=$(date +%s.%N)
long=$(ls -l "$V/versions" | grep -c '^dr-x------')
secs=$(echo "$(date +%s.%N) - $start" | bc)
say "ls -l of versions/ with $count versions: $secs s"
((long == count)) || problem "ls -l shows $long read-only folders, expected $count"
(($(echo "$secs < 10 * $SLOW" | bc) == 1)) || problem "ls -l of $count versions took $secs s (over $((10 * SLOW)) s)"
lastv=$(tail -n 1 <<<"$names")
[[ $lastv == $(printf '%06d' $((N + 5)))-* ]] || problem "the last version is '$lastv'"
[[ $(tail -n 1 "$V/versions/$lastv/messages.jsonl") == '{"role":"user","content":"save '$N'"}' ]] ||
	problem "the last version's last line is not save $N"
# Version 5 is the last before these saves: version 5 + k ends with save k.
mid=$((N / 2 + 1))
[[ $(tail -n 1 "$V/versions/$(sed -n "$((mid + 5))p" <<<"$names")/messages.jsonl") == '{"role":"user","content":"save '$mid'"}' ]] ||
	problem "version $((mid + 5)) does not end with save $mid"
unmount_convfs "$mnt"
check_log "$store.log"

# --- D: a CLI 3.x session ----------------------------------------------------
mnt3=$(fixture_extract 3.0.65 "$T/mnt3")/data
store3=$T/store3.db
mount_convfs "$mnt3" "$store3"
for s in "$mnt3"/workspaces/*/tasks/*/; do
	[[ -d $s/versions ]] || { problem "session '$s' has no versions/"; continue; }
	first=$(ls "$s/versions" | head -n 1)
	files=$(ls "$s/versions/$first" | tr '\n' ' ')
	[[ $files == "messages.jsonl " ]] || problem "a session's version holds '$files', expected messages.jsonl"
	diff "$s/messages.jsonl" "$s/versions/$(ls "$s/versions" | tail -n 1)/messages.jsonl" ||
		problem "a session's last version is not its conversation"
done
unmount_convfs "$mnt3"
check_log "$store3.log"
pass
