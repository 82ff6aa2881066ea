#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# big_message.sh: committing a conversation file that holds one 100 MB
# message keeps the daemon's memory bounded and stores the bytes exactly.
#
# On a fresh mount over an empty folder, a new task's ui_messages.json holds
# a few small messages and one whose "text" is 100 MiB of ASCII letters. It
# is saved four times:
#   1. as Cline saves: copied in as a temp file beside it and renamed over it;
#   2. rewritten in place (cat > file) with one small message appended, the
#      big one unchanged;
#   3. by temp + rename again, the big text replaced by another of the same
#      length (another letter);
#   4. through the view: its ui_messages.jsonl rewritten whole (cat >), with
#      "\r\n" line ends, a 1 MiB message first and one more at the end;
#   5. the same with a last line that is not an object: refused at close,
#      nothing changed;
#   6. a line as long as the big message appended (>>) to the view's file
#      and never ended: refused at close, nothing changed.
# It proves that
#   - after each save the file reads back byte-for-byte what was written
#     (cmp), and jq counts the messages written; also after a remount;
#   - the daemon's peak RSS (VmHWM of its process, over its whole life up to
#     the last save) stays at or under 64 MB: a commit must not hold the file
#     in memory, nor does the search index, which each save updates (the big
#     message a piece of about 1 MiB at a time). The figure is printed in any case ("# peak
#     RSS");
#   - the index has every message after each save, the big one included,
#     its text past the first MiB too: convfs search finds the small ones
#     beside it and a word 10 MiB into the big one (after save 1, and after
#     save 3 the new one's, not the old one's), and one 96 MiB into it, past
#     the 16 MiB a commit indexes, once the daemon has taken in the rest
#     behind the mount (the replaced message's at once no longer), and
#     the two words in one query (and not one with the other excluded); and
#     convfs check, at the end, finds the index holds the current messages
#     and their words. Last, the same save through a second mount of the
#     store, killed right after it: the first mount takes in the rest.
# Under valgrind (CONVFS_VALGRIND=1) the big message is 8 MB and the RSS is
# not checked (it is memcheck's); under a sanitizer build (CONVFS_SANITIZED=1)
# the RSS is not checked either (ASan's shadow memory and quarantine inflate
# it). The content checks run in every build.

. "$(dirname "$0")/lib.sh"

BIG=$((100 << 20))
[[ ${CONVFS_VALGRIND:-} == 1 ]] && BIG=$((8 << 20)) # 100 MB through memcheck take minutes
# Where in the big message's text a word stands: 10 MiB in (4 MiB of 8),
# past the first MiB, which the search index holds as the message's first
# piece, and before the 16th, where the pieces it holds end.
MID=$((BIG > (20 << 20) ? 10 << 20 : BIG / 2))
# And one 96 MiB in (6 MiB of 8): past the 16th piece, which a commit
# indexes; the rest goes in behind the mount, a few pieces at a time.
LATE=$((BIG > (20 << 20) ? BIG - (4 << 20) : BIG * 3 / 4))
RSS_LIMIT_KB=65536
check_rss=1
why_no_rss=
if [[ ${CONVFS_VALGRIND:-} == 1 ]]; then
	check_rss=0 why_no_rss="under valgrind (the figure is memcheck's)"
elif [[ ${CONVFS_SANITIZED:-} == 1 ]]; then
	check_rss=0 why_no_rss="in a sanitizer build (ASan inflates RSS)"
fi

M=$T/mnt
STORE=$T/store.db
TASK=1795500000000
DIR=$M/tasks/$TASK
UI=$DIR/ui_messages.json
mkdir -p "$M" "$T/gen"

# small TS TEXT: one small Cline message.
small()
{
	printf '{"ts":%d,"type":"say","say":"text","text":"%s"}' "$1" "$2"
}

# conversation OUT LETTER [EXTRA [FORM]]: three small messages, one whose
# text is $BIG bytes of LETTER, two small ones, and EXTRA more small ones, as
# a JSON array. FORM "padded": after a first message whose compact form is
# 1 MiB - 1 bytes long; FORM "lines": the same as the view's JSON Lines with
# "\r\n" line ends, so that the padded line's "\r" is the last byte of the
# first MiB a rewrite of the view reads. Both forms end with a message with
# a "\r" between its members (a JSON blank).
conversation()
{
	local out=$1 letter=$2 extra=${3:-0} form=${4:-} i sep=, open='[' close=']' pad
	[[ $form == lines ]] && sep=$'\r\n' open= close=$'\r\n'
	{
		printf '%s' "$open"
		if [[ -n $form ]]; then
			pad=$(((1 << 20) - 1 - ${#PAD_HEAD} - 2))
			printf '%s' "$PAD_HEAD"
			head -c "$pad" /dev/zero | tr '\0' p
			printf '"}%s' "$sep"
		fi
		small 1795500000001 "task: a big paste"
		printf '%s' "$sep"
		small 1795500000002 "reading the file"
		printf '%s' "$sep"
		small 1795500000003 "here it comes"
		printf '%s{"ts":1795500000004,"type":"say","say":"text","text":"' "$sep"
		head -c "$MID" /dev/zero | tr '\0' "$letter"
		printf ' %smid ' "$letter"
		head -c "$((LATE - MID - 6))" /dev/zero | tr '\0' "$letter"
		printf ' %slate ' "$letter"
		head -c "$((BIG - LATE - 7))" /dev/zero | tr '\0' "$letter"
		printf '"}%s' "$sep"
		small 1795500000005 "that was big"
		printf '%s' "$sep"
		small 1795500000006 "done"
		for ((i = 1; i <= extra; i++)); do
			printf '%s' "$sep"
			small $((1795500000006 + i)) "one more, number $i"
		done
		# A "\r" between members: the message's own, kept.
		[[ -z $form ]] || printf '%s{"ts":1795500000100,\r"type":"say","say":"text","text":"cr inside"}' "$sep"
		printf '%s' "$close"
	} >"$out"
}
PAD_HEAD='{"ts":1795500000000,"type":"say","say":"text","text":"'

# rename_in CONTENT: Cline's atomicWriteFile, a temp file beside the target
# renamed over it.
rename_in()
{
	local tmp
	tmp=$UI.tmp.$(date +%s%3N).$RANDOM.json
	cp "$1" "$tmp" || fail "cp of $(stat -c %s "$1") bytes to the temp file ${tmp#"$M"/} failed"
	mv "$tmp" "$UI" || fail "the rename of the temp file over ${UI#"$M"/} failed"
}

# peak: the daemon's VmHWM so far, in kB.
peak()
{
	local kb
	kb=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
	[[ $kb =~ ^[0-9]+$ ]] || fail "cannot read VmHWM of the daemon (pid $pid) from /proc/$pid/status"
	echo "$kb"
}

# check_content CONTENT COUNT WHAT: the mount's file is CONTENT, byte for byte,
# and holds COUNT messages.
check_content()
{
	local n
	same "$UI" "$1" "$3: ${UI#"$M"/} against the $(stat -c %s "$1") bytes written"
	if command -v jq >/dev/null; then
		n=$(jq length "$UI" 2>&1) || n="jq failed: $n"
		[[ $n == "$2" ]] || problem "$3: jq length of ${UI#"$M"/} gives '$n', expected $2"
	fi
}

# late_hits WORD N WHAT: convfs search finds WORD N times once the index
# has taken in the pieces a commit left for behind the mount (convfs status
# says it builds meanwhile; a minute at most).
late_hits()
{
	local hits i
	for ((i = 0; i < 600 * SLOW; i++)); do
		hits=$("$CONVFS" search --json "$1" "$M" | wc -l) || true
		((hits == $2)) && ! "$CONVFS" status "$M" | grep -q 'being built' && return 0
		sleep 0.1
	done
	problem "$3: convfs search finds it $hits times, not $2, a minute after the save ($("$CONVFS" status "$M" | grep search))"
}

say "generating the versions ($BIG bytes of text in the big message)"
conversation "$T/gen/v1.json" a 0
conversation "$T/gen/v2.json" a 1
conversation "$T/gen/v3.json" b 1
conversation "$T/gen/v4.jsonl" b 2 lines
conversation "$T/gen/v4.json" b 2 padded
size=$(stat -c %s "$T/gen/v1.json")
((size > BIG)) || fail "the generated conversation is only $size bytes"

mount_convfs "$M" "$STORE"
pid=${DAEMON_PID[$M]}
mkdir -p "$DIR"
echo "#   VmHWM after mounting: $(peak) kB"

say "1. temp + rename: 6 messages, the big one all a's"
rename_in "$T/gen/v1.json"
check_content "$T/gen/v1.json" 6 "after the first temp + rename"
echo "#   VmHWM after save 1: $(peak) kB"
hits=$("$CONVFS" search --json amid "$M" | wc -l) || true
((hits == 1)) || problem "after save 1, convfs search finds the word $MID bytes into the big message $hits times, not once"
late_hits alate 1 "after save 1, the word $LATE bytes into the big message"
# The words of one query in pieces far apart find the big message, as they
# would any message; a word excluded anywhere in it excludes it; a word of
# another message of the task does not make it a hit.
hits=$("$CONVFS" search --json 'amid alate' "$M" | wc -l) || true
((hits == 1)) || problem "after save 1, convfs search 'amid alate' (words $MID and $LATE bytes into the big message) finds it $hits times, not once"
hits=$("$CONVFS" search --json 'amid -alate' "$M" | wc -l) || true
((hits == 0)) || problem "after save 1, convfs search 'amid -alate' finds the big message, which has alate, $hits times"
hits=$("$CONVFS" search --json 'alate "that was big"' "$M" | wc -l) || true
((hits == 0)) || problem "after save 1, convfs search 'alate \"that was big\"' (words of two messages) finds $hits hits"
n=$(ls "$M/search/amid alate" | grep -c -E '^[0-9]{3,}-') || true
((n == 1)) || problem "after save 1, search/amid alate/ links $n tasks, not 1"

say "2. in place: a small message appended, the big one unchanged"
cat "$T/gen/v2.json" >"$UI"
check_content "$T/gen/v2.json" 7 "after the in-place rewrite (cat >)"
echo "#   VmHWM after save 2: $(peak) kB"

say "3. temp + rename: the big message's text all b's (same length)"
rename_in "$T/gen/v3.json"
check_content "$T/gen/v3.json" 7 "after the temp + rename that changed the big message"
echo "#   VmHWM after save 3: $(peak) kB"
hits=$("$CONVFS" search --json '"that was big"' "$M" | wc -l) || true
((hits == 1)) || problem "after save 3, convfs search finds the message after the big one $hits times, not once"
# The word inside the big message: the new one's is found, the old one's no longer.
hits=$("$CONVFS" search --json bmid "$M" | wc -l) || true
((hits == 1)) || problem "after save 3, convfs search finds the word $MID bytes into the big message $hits times, not once"
hits=$("$CONVFS" search --json amid "$M" | wc -l) || true
((hits == 0)) || problem "after save 3, convfs search finds the word of the big message it replaced $hits times"
hits=$("$CONVFS" search --json alate "$M" | wc -l) || true
((hits == 0)) || problem "after save 3, convfs search finds the late word of the big message it replaced $hits times"
late_hits blate 1 "after save 3, the word $LATE bytes into the big message"

say "4. the view's JSON Lines rewritten whole: CRLF ends, a message first, one more at the end"
cat "$T/gen/v4.jsonl" >"$M/workspaces/unknown/tasks/$TASK/ui_messages.jsonl" ||
	problem "the rewrite of the view's ui_messages.jsonl failed"
check_content "$T/gen/v4.json" 10 "after the rewrite of the view's JSON Lines"

say "5. the same rewrite with a last line that is not an object: refused, nothing changes"
{ cat "$T/gen/v4.jsonl"; printf '[1]\n'; } >"$T/gen/v5.jsonl"
if cat "$T/gen/v5.jsonl" >"$M/workspaces/unknown/tasks/$TASK/ui_messages.jsonl" 2>/dev/null; then
	problem "a rewrite of the view's ui_messages.jsonl whose last line is [1] succeeded; expected EINVAL at close"
fi
check_content "$T/gen/v4.json" 10 "after the refused rewrite"
log_has "$STORE.log" "line 11 is not a JSON object; nothing stored" "the refused line"

echo "#   VmHWM after save 5: $(peak) kB"
say "6. >> of a line as long as the big message that never ends: refused at close, nothing changes"
# The daemon kept an unended line in memory, whatever its length (1.5 GB
# took its RSS past 1.15 GB).
head -c "$BIG" /dev/zero | tr '\0' x >>"$M/workspaces/unknown/tasks/$TASK/ui_messages.jsonl" 2>/dev/null || true
check_content "$T/gen/v4.json" 10 "after a >> whose line never ended"
log_has "$STORE.log" "refusing to commit 'tasks/$TASK/ui_messages.json': its last line has no newline" "the line with no end"
echo "#   VmHWM after the unended line: $(peak) kB"

hwm=$(peak)
echo "# peak RSS of the daemon (VmHWM): $hwm kB ($((hwm / 1024)) MB), limit $RSS_LIMIT_KB kB, for a $size-byte file with a $BIG-byte message"
if ((check_rss)); then
	((hwm <= RSS_LIMIT_KB)) ||
		problem "the daemon's peak RSS (VmHWM) is $hwm kB ($((hwm / 1024)) MB) after committing a $size-byte ui_messages.json four times; expected at most $RSS_LIMIT_KB kB (64 MB): a commit must not hold the whole file in memory"
else
	say "peak RSS not checked $why_no_rss"
fi

left=$(find "$M" "$STORE.files" -name '*.tmp*' -print)
[[ -z $left ]] || problem "temp files left behind:\n$left"
unmount_convfs "$M"
mount_convfs "$M" "$STORE"
check_content "$T/gen/v4.json" 10 "after a remount"

say "7. a second mount killed before its steps are done: the first takes in the rest"
# The second daemon pauses 2 s between steps, so that it is killed after a
# step or two; the first looks every 5 s whether pieces wait, whoever left
# them. (Under valgrind the message is 8 MB: its save indexes all of it.)
M2=$T/mnt2
mkdir -p "$M2"
CONVFS_INDEX_DELAY_MS=2000 mount_convfs_log "$M2" "$T/second.log" -o "store=$STORE"
cp "$T/gen/v1.json" "$M2/tasks/$TASK/ui_messages.json.tmp.7" &&
	mv "$M2/tasks/$TASK/ui_messages.json.tmp.7" "$M2/tasks/$TASK/ui_messages.json" ||
	fail "the save through the second mount failed"
kill_daemon "$M2"
remove_dead_mount "$M2"
late_hits alate 1 "after a save through a second mount killed right after it, through the first"
unmount_convfs "$M"
"$CONVFS" check "$STORE" >"$T/check.txt" 2>&1 || problem "convfs check finds problems:\n$(cat "$T/check.txt")"
check_log "$STORE.log" "^convfs: warning: refusing to (append to 'tasks/$TASK/ui_messages.json': line 11 is not a JSON object|commit 'tasks/$TASK/ui_messages.json': its last line has no newline); nothing stored$"
pass
