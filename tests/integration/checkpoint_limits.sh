#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# checkpoint_limits.sh: a shadow repo crafted to be huge, deep, misnamed,
# mistyped, or to block the daemon, read through a task's checkpoints/:
# each request ends at once, in bounded memory, with a clear errno and one
# log line (fs/view/shadow.c, fs/view/shadow_diff.c). clients/git_craft.js writes the
# objects as git stores them (and ones git refuses to make); one task's
# checkpoints name the commits, each one with a problem after a clean one,
# so that its changes.diff is against a commit without any.
#
#   A. A 4 GiB blob of zeros (a loose object of 4 MB), one of 16 MiB (the
#      limit) and one of 16 MiB + 1 byte: stat gives each one's size; the
#      16 MiB one reads whole; the others answer EFBIG ("File too large"),
#      with one log line that names the file, its size and the git command
#      that gets it; changes.diff shows them as binary, with a note; a file
#      of 64 MiB removed and another added are not compared for a rename.
#   B. Tree entries named "a/b", ".", ".." and 256 bytes long, beside a
#      name of 255 bytes and plain ones: files/ lists only those, twice,
#      with one warning; a name that is empty or holds a NUL makes a tree
#      git cannot parse: ls of it answers EIO, with one log line.
#   C. A tree whose entry "notadir" says folder but is a blob, and
#      "notafile" the reverse: both are listed; ls of the one, cat and stat
#      of the other, and changes.diff answer EIO, with one log line each
#      object.
#   D. 2,048 nested folders (git's core.maxTreeDepth): changes.diff is git's
#      diff; 2,049 and 20,000: it holds only a note saying why, at once, one
#      warning.
#   E. 6 MB of new text: changes.diff stops past 4 MiB, before a file, with
#      a note, and what it holds is git's diff up to there.
#   F. The daemon's peak RSS (VmHWM) over A-E stays at or under 64 MB (not
#      under valgrind nor in a sanitizer build, as in big_message.sh).
#   G. FIFOs and a device node where libgit2 would open them: the loose
#      object of a file, of a folder, of a commit, and objects/pack/*.idx:
#      each read ends with EIO or ENOENT and one warning, and the repo
#      reads again once the pack index is gone; FIFOs as HEAD, config,
#      index, info/attributes and objects/info/alternates, which libgit2 is
#      not let open: a file and changes.diff read. Every command that could
#      hang runs under `timeout`; if one does not end, the test aborts the
#      FUSE connection (/sys/fs/fuse/connections/N/abort) and fails.

. "$(dirname "$0")/lib.sh"

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE

M=$T/mnt
STORE=$T/store.db
LOG=$STORE.log
W=$T/work/proj
TASK=1795600000000
mkdir -p "$M" "$W"
mount_convfs "$M" "$STORE"
pid=${DAEMON_PID[$M]}
K=$(node "$CLIENTS/ckpt_task.js" --key "$W")
git init -q "$M/checkpoints/$K" # through the mount, as Cline makes it
GD=$STORE.files/checkpoints/$K/.git
craft() { node "$CLIENTS/git_craft.js" "$GD" "$@"; }
g() { git --git-dir="$GD" "$@"; }

# fuse_abort: ends every request of the mount that hangs in the daemon (its
# caller waits for the answer in D state, which no signal ends), then the
# daemon. The connection's number is the mount's minor device number, taken
# from mountinfo: a stat of the mount could hang too.
fuse_abort()
{
	local dev
	dev=$(awk -v m="$M" '$5 == m { print $3 }' /proc/self/mountinfo | tail -n 1)
	[[ -n $dev ]] || return 0
	if [[ ! -e /sys/fs/fuse/connections/${dev#*:}/abort ]]; then
		mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null || true
	fi
	echo 1 >"/sys/fs/fuse/connections/${dev#*:}/abort" 2>/dev/null || true
	kill -9 "$pid" 2>/dev/null || true
}

# bounded WHAT CMD...: runs CMD (output in $T/out, errors in $T/err) and
# returns its status; if it has not ended within 10 s (times SLOW), the
# daemon hangs on it: abort the connection, and stop here. (Not `timeout`:
# it would wait for ever for a process it cannot kill.)
bounded()
{
	local what=$1 cmd i rc=0
	shift
	"$@" >"$T/out" 2>"$T/err" &
	cmd=$!
	for ((i = 0; i < 500 * SLOW && rc == 0; i++)); do
		kill -0 "$cmd" 2>/dev/null || rc=1
		((rc)) || sleep 0.02
	done
	if kill -0 "$cmd" 2>/dev/null; then
		fuse_abort
		wait "$cmd" 2>/dev/null || true
		fail "$what: '$*' did not end within $((10 * SLOW)) s: the daemon hangs on it (connection aborted)"
	fi
	rc=0
	wait "$cmd" || rc=$?
	return "$rc"
}

# expect_fail WHAT ERROR CMD...: CMD fails with ERROR (strerror's words) in its message.
expect_fail()
{
	local what=$1 want=$2
	shift 2
	if bounded "$what" "$@"; then
		problem "$what: '$*' succeeded; expected '$want'"
	elif ! grep -q -- "$want" "$T/err"; then
		problem "$what: '$*' failed, but not with '$want': $(head -c 300 "$T/err")"
	fi
}

# log_count ERE: how many lines of the daemon log match.
log_count() { grep -a -c -E -e "$1" "$LOG" || true; }

# ---- the commits -----------------------------------------------------------------
readme=$(craft blob $'hello\n')
clean=() # clean commits, one before each with a problem
for i in 0 1 2 3 4 5 6; do
	clean+=("$(craft commit "$(craft tree 100644 README.md "$(craft blob "clean $i")")")")
done
# A: a 4 GiB blob, the limit, one byte over.
start=$(date +%s.%N)
huge=$(craft repeat $((4 << 30)))
edge=$(craft repeat $((16 << 20)))
over=$(craft repeat $((16 << 20 | 1)))
say "   three blobs of zeros (4 GiB, 16 MiB, 16 MiB + 1) made in $(printf %.1f "$(bc <<<"$(date +%s.%N) - $start")") s"
c_big=$(craft commit "$(craft tree 100644 README.md "$readme" 100644 huge.bin "$huge" 100644 edge.bin "$edge" \
	100644 over.bin "$over")")
# A: one 64 MiB file removed, another added: rename candidates too big to compare.
c_ren_a=$(craft commit "$(craft tree 100644 README.md "$readme" 100644 a.bin "$(craft repeat $((64 << 20)) a)")")
c_ren_b=$(craft commit "$(craft tree 100644 README.md "$readme" 100644 b.bin "$(craft repeat $((64 << 20)) b)")")
# B: names no file can have.
long255=$(printf 'm%.0s' {1..255})
long256=$(printf 'n%.0s' {1..256})
emptyname=$(craft tree 100644 hex: "$readme")
nulname=$(craft tree 100644 hex:780079 "$readme")
c_names=$(craft commit "$(craft tree 100644 README.md "$readme" 100644 hex:612f62 "$readme" 100644 . "$readme" \
	100644 .. "$readme" 100644 "$long256" "$readme" 100644 "$long255" "$readme" 40000 emptyname "$emptyname" \
	40000 nulname "$nulname")")
# C: entries of the wrong type.
sub=$(craft tree 100644 inside.txt "$readme")
c_types=$(craft commit "$(craft tree 100644 README.md "$readme" 40000 notadir "$readme" 100644 notafile "$sub")")
# D: nested folders, as deep as git allows and ten times deeper.
c_deep_ok=$(craft commit "$(craft nest 2048 leaf.txt "$readme")")
c_deep_over=$(craft commit "$(craft nest 2049 leaf.txt "$readme")")
c_deep=$(craft commit "$(craft nest 20000 leaf.txt "$readme")")
# E: 24 new files of 4,000 lines of 64 bytes (256,000 bytes): 6 MB.
entries=()
for i in $(seq -w 1 24); do
	entries+=(100644 "text$i.txt" "$(craft lines 4000 "number $i")")
done
c_text=$(craft commit "$(craft tree "${entries[@]}")")

HASHES=("${clean[0]}" "$c_big" "$c_ren_a" "$c_ren_b" "${clean[1]}" "$c_names" "${clean[2]}" "$c_types" "${clean[3]}" "$c_deep_ok"
	"${clean[4]}" "$c_deep" "${clean[6]}" "$c_deep_over" "${clean[5]}" "$c_text")
node "$CLIENTS/ckpt_task.js" "$M" "$TASK" "$W" "${HASHES[@]}" >/dev/null
ws=$(cd "$M/workspaces" && ls -d -- *-"$K") || fail "no workspaces/<name>-$K:\n$(ls -la "$M/workspaces")"
C=$M/workspaces/$ws/tasks/$TASK/checkpoints
# ckpt HASH: the checkpoint folder of HASH.
ckpt()
{
	local i
	for i in "${!HASHES[@]}"; do
		[[ ${HASHES[i]} == "$1" ]] && printf '%s/%03d-%.7s' "$C" $((i + 1)) "$1" && return
	done
	fail "test bug: no checkpoint of $1"
}

# ---- A. big blobs ------------------------------------------------------------------
say "A. a 4 GiB blob, and the limit of 16 MiB"
F=$(ckpt "$c_big")/files
for f in huge.bin:$((4 << 30)) edge.bin:$((16 << 20)) over.bin:$((16 << 20 | 1)); do
	bounded "stat files/${f%:*}" stat -c %s "$F/${f%:*}" || true
	[[ $(cat "$T/out") == "${f#*:}" ]] || problem "stat -c %s files/${f%:*} gives '$(cat "$T/out")' ($(cat "$T/err")); expected ${f#*:}"
done
if bounded "cat files/edge.bin" cmp "$F/edge.bin" <(head -c $((16 << 20)) /dev/zero); then :; else
	problem "files/edge.bin (16 MiB, the limit) does not read whole: $(head -c 300 "$T/out" "$T/err")"
fi
for f in huge.bin over.bin; do
	expect_fail "read files/$f" "File too large" head -c 1M "$F/$f"
	expect_fail "read files/$f again" "File too large" head -c 1M "$F/$f"
	id=$([[ $f == huge.bin ]] && echo "$huge" || echo "$over")
	size=$([[ $f == huge.bin ]] && echo $((4 << 30)) || echo $((16 << 20 | 1)))
	n=$(log_count "^convfs: warning: cannot read 'files/$f' of checkpoint $c_big: it is $size bytes, over the 16777216 convfs reads of a checkpoint's file; get it with: git -C '$GD' show '$c_big:$f'$")
	((n == 1)) || problem "reading files/$f twice logs $n lines saying it is too big and how to get it; expected 1:\n$(grep -a "$f" "$LOG")"
done
# What the log line says works, and gets the blob (only its size here: 4 GiB through a pipe take a while).
got=$(git -C "$GD" cat-file -s "$c_big:over.bin" 2>&1) || true
[[ $got == $((16 << 20 | 1)) ]] || problem "git -C <repo> cat-file -s $c_big:over.bin gives '$got'"
if bounded "cat changes.diff" cat "$(ckpt "$c_big")/changes.diff"; then
	for f in huge.bin edge.bin over.bin; do
		grep -q -x "Binary files a/$f and b/$f differ\|Binary files /dev/null and b/$f differ" "$T/out" ||
			problem "changes.diff of $(basename "$(ckpt "$c_big")") does not show $f as binary:\n$(head -n 20 "$T/out")"
	done
	grep -q -x "# convfs: 3 file(s) over 256 KiB show as binary, such as '.*'; their changes: git -C '$GD' diff ${clean[0]} $c_big" "$T/out" ||
		problem "changes.diff of $(basename "$(ckpt "$c_big")") has no note of the files shown as binary:\n$(tail -n 3 "$T/out")"
else
	problem "changes.diff of the checkpoint with big blobs does not read: $(head -c 300 "$T/err")"
fi

# Renames are looked for by content only among files small enough to diff:
# these two are not compared (a diff would read both whole).
if bounded "cat changes.diff" cat "$(ckpt "$c_ren_b")/changes.diff"; then
	for want in "Binary files a/a.bin and /dev/null differ" "Binary files /dev/null and b/b.bin differ" \
		"# convfs: 2 file(s) over 256 KiB show as binary, such as 'a.bin'; their changes: git -C '$GD' diff $c_ren_a $c_ren_b"; do
		grep -q -x -F "$want" "$T/out" || problem "changes.diff of a 64 MiB file removed and another added lacks '$want':\n$(cat "$T/out")"
	done
else
	problem "changes.diff of a 64 MiB file removed and another added does not read: $(head -c 300 "$T/err")"
fi

# ---- B. names no file can have ---------------------------------------------------
say "B. names no file can have"
F=$(ckpt "$c_names")/files
for round in 1 2; do
	bounded "ls files/" ls -a "$F" || problem "ls -a of files/ with bad names fails: $(cat "$T/err")"
	got=$(tr '\n' ' ' <"$T/out")
	want=". .. README.md emptyname $long255 nulname "
	[[ $got == "$want" ]] || problem "ls -a of files/ with bad names (round $round) lists '$got'; expected '$want'"
	# A name can be empty or hold a NUL only in a tree git cannot parse.
	expect_fail "ls of a tree with an empty name" "Input/output error" ls "$F/emptyname"
	expect_fail "ls of a tree with a NUL in a name" "Input/output error" ls "$F/nulname"
done
n=$(log_count "^convfs: warning: the folder '/' of checkpoint $c_names of the shadow repository '$GD' \\(tree [0-9a-f]{40}\\) holds 4 name\\(s\\) no file can have, such as '.*' \\(empty, '\\.', '\\.\\.', with a '/' or over 255 bytes\\): not listed$")
((n == 1)) || problem "listing files/ with bad names twice logs $n warnings; expected 1:\n$(grep -a "no file can have" "$LOG")"
for t in "emptyname:$emptyname" "nulname:$nulname"; do
	n=$(log_count "^convfs: warning: cannot read the folder '${t%:*}' of the shadow repository '$GD': its object ${t#*:}: failed to parse tree: ")
	((n == 1)) || problem "listing files/${t%:*} twice logs $n lines of a tree that does not parse; expected 1:\n$(grep -a "${t%:*}" "$LOG")"
done
bounded "cat a 255-byte name" cat "$F/$long255" && [[ $(cat "$T/out") == hello ]] ||
	problem "files/<255 bytes> does not read 'hello': $(cat "$T/out" "$T/err")"
expect_fail "stat files/a (of the name a/b)" "No such file or directory" stat "$F/a"

# ---- C. entries of the wrong type ------------------------------------------------
say "C. entries whose object is not of their type"
F=$(ckpt "$c_types")/files
bounded "ls files/" ls "$F" || true
[[ $(tr '\n' ' ' <"$T/out") == "README.md notadir notafile " ]] || problem "ls files/ lists '$(tr '\n' ' ' <"$T/out")' ($(cat "$T/err"))"
expect_fail "ls of a folder whose object is a blob" "Input/output error" ls "$F/notadir"
expect_fail "cat of a file whose object is a tree" "Input/output error" cat "$F/notafile"
expect_fail "stat of a file whose object is a tree" "Input/output error" stat "$F/notafile"
expect_fail "changes.diff of a commit with entries of the wrong type" "Input/output error" cat "$(ckpt "$c_types")/changes.diff"
for what in "'notadir' of the shadow repository '$GD': its tree says it is a folder, but its object $readme is a file" \
	"'notafile' of the shadow repository '$GD': its tree says it is a file, but its object $sub is a folder"; do
	n=$(log_count "^convfs: warning: cannot read $what \\(git fsck finds it too\\)$")
	((n == 1)) || problem "$n log lines say: $what; expected 1:\n$(grep -a "its tree says" "$LOG")"
done

# ---- D. nested folders -------------------------------------------------------------
say "D. 2,048, 2,049 and 20,000 nested folders"
bounded "changes.diff of 2048 nested folders" cat "$(ckpt "$c_deep_ok")/changes.diff" ||
	problem "changes.diff of 2048 nested folders does not read: $(head -c 300 "$T/err")"
# (git warns that it cannot stat d/d/... for attributes: a path over PATH_MAX.)
g diff "${clean[3]}" "$c_deep_ok" >"$T/deep.want" 2>/dev/null
cmp -s "$T/out" "$T/deep.want" || problem "changes.diff of 2048 nested folders is not git's diff:\n$(diff "$T/deep.want" "$T/out" | head -c 600)"
start=$(date +%s.%N)
bounded "changes.diff of 20000 nested folders" cat "$(ckpt "$c_deep")/changes.diff" ||
	problem "changes.diff of 20000 nested folders does not read: $(head -c 300 "$T/err")"
secs=$(bc <<<"$(date +%s.%N) - $start")
say "   changes.diff of 20000 nested folders: $(printf %.2f "$secs") s"
want="# convfs: no diff: a tree holds folders nested more than 2048; the diff: git -C '$GD' diff ${clean[4]} $c_deep"
[[ $(cat "$T/out") == "$want" ]] || problem "changes.diff of 20000 nested folders is '$(head -c 300 "$T/out")'; expected '$want'"
(($(bc <<<"$secs < 2 * $SLOW") == 1)) || problem "changes.diff of 20000 nested folders took $secs s"
bounded "changes.diff of 20000 nested folders, again" cat "$(ckpt "$c_deep")/changes.diff" || true
n=$(log_count "^convfs: warning: changes.diff of checkpoint $c_deep of the shadow repository '$GD' is not made: a tree holds folders nested more than 2048; changes.diff says how to get it from git$")
((n == 1)) || problem "changes.diff of 20000 nested folders, read twice, logs $n warnings; expected 1"
bounded "changes.diff of 2049 nested folders" cat "$(ckpt "$c_deep_over")/changes.diff" || true
want="# convfs: no diff: a tree holds folders nested more than 2048; the diff: git -C '$GD' diff ${clean[6]} $c_deep_over"
[[ $(cat "$T/out") == "$want" ]] || problem "changes.diff of 2049 nested folders is '$(head -c 300 "$T/out" "$T/err")'; expected '$want'"
bounded "ls 3 folders down of 20000" ls "$(ckpt "$c_deep")/files/d/d/d" && [[ $(cat "$T/out") == d ]] ||
	problem "files/d/d/d of 20000 nested folders does not list 'd': $(cat "$T/out" "$T/err")"

# ---- E. a diff over 4 MiB ----------------------------------------------------------
say "E. 6 MB of new text"
bounded "changes.diff of 6 MB of text" cat "$(ckpt "$c_text")/changes.diff" ||
	problem "changes.diff of 6 MB of new text does not read: $(head -c 300 "$T/err")"
size=$(stat -c %s "$T/out")
note=$(tail -n 1 "$T/out")
nfiles=$(grep -c '^diff --git ' "$T/out" || true)
[[ $note == "# convfs: changes.diff stops here, past 4 MiB: it shows $nfiles of the 25 changed files; all of them: git -C '$GD' diff ${clean[5]} $c_text" ]] ||
	problem "changes.diff of 6 MB of text does not end with the note of where it stops: '$note'"
((size > (4 << 20) && size < (5 << 20) && nfiles < 24)) || problem "changes.diff of 6 MB of text is $size bytes with $nfiles files; expected 4 to 5 MiB"
# (24 files added, README.md removed.)
g diff "${clean[5]}" "$c_text" >"$T/text.git"
cmp -s -n $((size - ${#note} - 1)) "$T/out" "$T/text.git" || problem "changes.diff of 6 MB of text is not git's diff up to its note"

# ---- F. the daemon's memory --------------------------------------------------------
hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status")
say "# peak RSS of the daemon over A-E: $((hwm / 1024)) MB"
if [[ ${CONVFS_VALGRIND:-} == 1 || ${CONVFS_SANITIZED:-} == 1 ]]; then
	say "F. the peak RSS is not checked under valgrind or a sanitizer"
elif ((hwm > 65536)); then
	problem "the daemon's peak RSS is $((hwm / 1024)) MB over A-E; expected at most 64 MB"
fi

# ---- G. FIFOs and devices ----------------------------------------------------------
say "G. FIFOs and a device node where libgit2 opens files"
# loose OBJECT: the path of a loose object in the backing tree.
loose() { echo "$GD/objects/${1:0:2}/${1:2}"; }
fifo_blob=$(craft blob "a blob made a FIFO")
fifo_tree=$(craft tree 100644 inside.txt "$(craft blob "in a folder made a FIFO")")
dev_blob=$(craft blob "a blob made a device")
c_fifo=$(craft commit "$(craft tree 100644 README.md "$readme" 100644 fifo.txt "$fifo_blob" 40000 fifodir "$fifo_tree" \
	100644 dev.txt "$dev_blob")")
c_fifo_commit=$(craft commit "$(craft tree 100644 README.md "$(craft blob "behind a FIFO")")")
c_after=$(craft commit "$(craft tree 100644 README.md "$(craft blob "after the FIFOs")")")
HASHES+=("$c_fifo" "$c_fifo_commit" "$c_after")
for o in "$fifo_blob" "$fifo_tree" "$c_fifo_commit"; do
	rm -f "$(loose "$o")"
	mkfifo "$(loose "$o")"
done
rm -f "$(loose "$dev_blob")"
mknod "$(loose "$dev_blob")" c 1 5 # /dev/zero
node "$CLIENTS/ckpt_task.js" "$M" "$TASK" "$W" "${HASHES[@]}" >/dev/null
F=$(ckpt "$c_fifo")/files
bounded "cat files/README.md" cat "$F/README.md" && [[ $(cat "$T/out") == hello ]] ||
	problem "files/README.md beside loose objects that are FIFOs does not read 'hello': $(cat "$T/out" "$T/err")"
expect_fail "cat of a file whose loose object is a FIFO" "Input/output error" cat "$F/fifo.txt"
expect_fail "ls of a folder whose loose object is a FIFO" "Input/output error" ls "$F/fifodir"
expect_fail "cat of a file whose loose object is a device" "Input/output error" cat "$F/dev.txt"
expect_fail "files/ of a commit whose loose object is a FIFO" "No such file or directory" ls "$(ckpt "$c_fifo_commit")/files"
for o in "$fifo_blob:fifo" "$fifo_tree:fifo" "$c_fifo_commit:fifo" "$dev_blob:character device"; do
	rel=objects/${o:0:2}/${o:2:38}
	n=$(log_count "^convfs: warning: the shadow repository '$GD' is not read: '$rel' is a ${o#*:}, not a regular file, and opening it could block the daemon$")
	((n == 1)) || problem "the loose object $rel, a ${o#*:}, is reported $n times; expected once"
done
# A FIFO as a pack index: nothing of the repo is read until it is gone.
mkdir -p "$GD/objects/pack"
: >"$GD/objects/pack/pack-0000000000000000000000000000000000000000.pack"
mkfifo "$GD/objects/pack/pack-0000000000000000000000000000000000000000.idx"
expect_fail "files/ with a FIFO as a pack index" "No such file or directory" ls "$(ckpt "${clean[0]}")/files"
n=$(log_count "^convfs: warning: the shadow repository '$GD' is not read: 'objects/pack/pack-0{40}\\.idx' is a fifo, not a regular file, and opening it could block the daemon$")
((n == 1)) || problem "the FIFO as a pack index is reported $n times; expected once"
rm -f "$GD"/objects/pack/pack-0000000000000000000000000000000000000000.*
bounded "cat once the FIFO is gone" cat "$(ckpt "${clean[0]}")/files/README.md" && [[ $(cat "$T/out") == "clean 0" ]] ||
	problem "files/README.md does not read once the FIFO in objects/pack/ is gone: $(cat "$T/out" "$T/err")"
# FIFOs where libgit2 used to open files by path when it opened a repository
# (HEAD, config) or made a diff (index, attributes): it no longer opens them.
unmount_convfs "$M"
for f in HEAD config index info/attributes objects/info/alternates; do
	mkdir -p "$(dirname "$GD/$f")"
	rm -f "$GD/$f"
	mkfifo "$GD/$f"
done
mount_convfs "$M" "$STORE"
pid=${DAEMON_PID[$M]}
S=$(ckpt "$c_after")
bounded "cat files/README.md" cat "$S/files/README.md" && [[ $(cat "$T/out") == "after the FIFOs" ]] ||
	problem "with FIFOs as HEAD, config, index and the like, files/README.md does not read: $(cat "$T/out" "$T/err")"
bounded "cat changes.diff" cat "$S/changes.diff" && grep -q -x -F "+after the FIFOs" "$T/out" ||
	problem "with FIFOs as HEAD, config, index and the like, changes.diff does not read: $(cat "$T/out" "$T/err")"
unmount_convfs "$M"

check_log "$LOG" "^convfs: warning: (cannot read 'files/(huge|over)\\.bin' of checkpoint |the folder '/' of checkpoint .* holds 4 name|cannot read the folder '(emptyname|nulname)' of the shadow repository|cannot read 'nota(dir|file)' of the shadow repository|changes\\.diff of checkpoint ($c_deep|$c_deep_over) |the shadow repository '.*' is not read: '(objects/[0-9a-f]{2}/[0-9a-f]{38}|objects/pack/pack-0{40}\\.idx)' is a )"
pass
