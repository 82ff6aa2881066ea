#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# write_patterns.sh: the three ways real clients save a conversation file
# each become one atomic commit that reads back byte-for-byte.
#
# On a mount of the Cline 2.18.0 fixture, node scripts write exactly as the
# clients do (clients/*.js):
#   a      fs.writeFile: open O_TRUNC, write, close;
#   a-bun  Bun: open without O_TRUNC, write, ftruncate, close;
#   b      Cline's atomicWriteFile: <file>.tmp.<ms>.<rand>.json renamed over it;
#   c      Roo Code's safeWriteJson: <file>.lock dir, .<name>.new_*.tmp,
#          target moved to .<name>.bak_*.tmp, new renamed in, backup removed.
# It proves, for ui_messages.json, api_conversation_history.json,
# state/taskHistory.json and task_metadata.json:
#   - every write reads back byte-identical, also after a remount, whatever
#     the formatting (compact, pretty-printed, empty array, \u escapes);
#   - a new task (mkdir tasks/<id>, files written by pattern b) works;
#   - invalid JSON (a torn array, an object where an array belongs) fails with
#     EINVAL on close (a) or rename (b, c), the previous version stays
#     byte-for-byte, even for a reader looking right after the refusal, and
#     the log says why;
#   - while a writer has written but not closed, other readers see the
#     previous version (size and bytes);
#   - nothing is left behind: no temp, lock or staging files.

. "$(dirname "$0")/lib.sh"

M=$(fixture_extract 2.18.0 "$T/fx")
STORE=$T/store.db
TASK=1795306269021
declare -A FILE=(
	[ui]=tasks/$TASK/ui_messages.json
	[api]=tasks/$TASK/api_conversation_history.json
	[history]=state/taskHistory.json
	[metadata]=tasks/$TASK/task_metadata.json
)
mkdir -p "$T/expect" "$T/content"
cp "$M/${FILE[ui]}" "$T/expect/ui"
cp "$M/${FILE[api]}" "$T/expect/api"
cp "$M/${FILE[history]}" "$T/expect/history"
cp "$M/${FILE[metadata]}" "$T/expect/metadata"

# write_with PATTERN TARGET CONTENT_FILE
write_with()
{
	case $1 in
	a) node_client write_in_place.js "$2" "$3" ;;
	a-bun) node_client write_in_place.js --bun "$2" "$3" ;;
	b) node_client write_atomic.js "$2" "$3" ;;
	c) node_client write_safe.js "$2" "$3" ;;
	*) fail "unknown write pattern '$1'" ;;
	esac
}

# write_and_check PATTERN KEY CONTENT_FILE: writes, reads back, remembers.
write_and_check()
{
	local pattern=$1 key=$2 content=$3
	write_with "$pattern" "$M/${FILE[$key]}" "$content"
	same "$M/${FILE[$key]}" "$content" "pattern $pattern on ${FILE[$key]}"
	cp "$content" "$T/expect/$key"
}

mount_convfs "$M" "$STORE"

# ---- every pattern on every kind of file --------------------------------------

say "round trips: patterns a, a-bun, b, c"
seed=100
for key in ui api history metadata; do
	say "  ${FILE[$key]}"
	for pattern in a a-bun b c a; do
		seed=$((seed + 1))
		# Sizes go up and down, so that a-bun both grows and shrinks files.
		count=$((20 + (seed * 37) % 150))
		node_client gen.js "$key" "$count" "$seed" >"$T/content/$key.$seed"
		write_and_check "$pattern" "$key" "$T/content/$key.$seed"
	done
done

say "round trips: unusual formatting"
printf '[]' >"$T/content/empty"
printf '[ ]\n' >"$T/content/empty-spaced"
node_client gen.js ui 15 300 --pretty >"$T/content/pretty"
node_client gen.js api 9 301 --pretty >"$T/content/pretty-api"
printf '[\n  {"ts":1,"type":"say","say":"text","text":"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/"} ,\n\t{"ts":2,"type":"say","say":"text","text":"日本語 ünïcödé","n":1.50e+3}\n]\n' >"$T/content/escapes"
for pattern in a b c a-bun; do
	for c in empty empty-spaced pretty escapes; do
		write_and_check "$pattern" ui "$T/content/$c"
	done
	write_and_check "$pattern" api "$T/content/pretty-api"
done
node_client gen.js ui 40 302 >"$T/content/ui.final"
write_and_check b ui "$T/content/ui.final"
node_client gen.js api 30 303 >"$T/content/api.final"
write_and_check a api "$T/content/api.final"

# ---- a new task, written by pattern b -----------------------------------------

say "a new task"
NEW=1795400000000
mkdir "$M/tasks/$NEW"
FILE[new-ui]=tasks/$NEW/ui_messages.json
FILE[new-api]=tasks/$NEW/api_conversation_history.json
FILE[new-metadata]=tasks/$NEW/task_metadata.json
FILE[new-settings]=tasks/$NEW/settings.json
FILE[new-context]=tasks/$NEW/context_history.json
node_client gen.js ui 25 400 >"$T/content/new-ui"
node_client gen.js api 12 401 >"$T/content/new-api"
node_client gen.js metadata 3 402 >"$T/content/new-metadata"
printf '{"mode":"act","apiProvider":"openai"}' >"$T/content/new-settings"
printf '[[0,[[0,0,[1795400000001,"text",[["x"]],[]]]]]]' >"$T/content/new-context"
for key in new-ui new-api new-metadata new-settings new-context; do
	write_and_check b "$key" "$T/content/$key"
done
# ... and listed in taskHistory.json, as Cline does after the first save.
node -e '
	const fs = require("fs");
	const h = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
	h.push({ id: process.argv[2], ts: Number(process.argv[2]) + 9, task: "a new task", tokensIn: 1,
		tokensOut: 1, totalCost: 0, cwdOnTaskInitialization: "/home/dev/projects/webapp" });
	process.stdout.write(JSON.stringify(h));' "$T/expect/history" "$NEW" >"$T/content/history.new"
write_and_check b history "$T/content/history.new"
listing=$(ls -A "$M/tasks/$NEW" | tr '\n' ' ')
[[ $listing == "api_conversation_history.json context_history.json settings.json task_metadata.json ui_messages.json " ]] ||
	problem "tasks/$NEW lists '$listing'"
[[ -d $M/tasks/$TASK && -d $M/tasks/1795306284156 ]] || problem "the other tasks are gone from tasks/"

# ---- invalid JSON is refused, the previous version stays ----------------------

say "invalid JSON"
for key in ui api history metadata; do
	head -c -7 "$T/expect/$key" >"$T/content/torn.$key" # the end missing, as after a crash
	for pattern in a a-bun b c; do
		expect_errno EINVAL write_with "$pattern" "$M/${FILE[$key]}" "$T/content/torn.$key"
		# Right after the refusal: no reader may see anything but the old version.
		[[ $(stat -c %s "$M/${FILE[$key]}") == $(stat -c %s "$T/expect/$key") ]] ||
			problem "pattern $pattern, torn ${FILE[$key]}: the size is $(stat -c %s "$M/${FILE[$key]}") right after the refusal, not the previous $(stat -c %s "$T/expect/$key")"
		same "$M/${FILE[$key]}" "$T/expect/$key" "pattern $pattern, torn ${FILE[$key]} (read right after the refusal)"
	done
	log_has "$STORE.log" "^convfs: warning: refusing to commit '${FILE[$key]}': not .*(JSON|array)" "why a torn ${FILE[$key]} was refused"
done
printf '{"role":"user","content":"an object, not an array"}' >"$T/content/object"
for pattern in a b c; do
	expect_errno EINVAL write_with "$pattern" "$M/${FILE[ui]}" "$T/content/object"
	same "$M/${FILE[ui]}" "$T/expect/ui" "pattern $pattern, an object written to ${FILE[ui]}"
done
printf '' >"$T/content/nothing"
expect_errno EINVAL write_with a "$M/${FILE[metadata]}" "$T/content/nothing"
same "$M/${FILE[metadata]}" "$T/expect/metadata" "an empty task_metadata.json"
sleep 1.2 # past the attribute timeout: what is stored, not what is cached
for key in ui api history metadata; do
	same "$M/${FILE[$key]}" "$T/expect/$key" "${FILE[$key]} after the refused writes"
done

# ---- readers see the previous version until the writer closes -----------------

say "readers during a write"
for mode in O_TRUNC bun; do
	for count in 8 90; do # shorter, then longer than the current version
		node_client gen.js ui "$count" $((500 + count)) >"$T/content/held"
		rm -f "$T/ready" "$T/go"
		bun=()
		[[ $mode == O_TRUNC ]] || bun=(--bun)
		node "$CLIENTS/hold_write.js" "${bun[@]}" "$M/${FILE[ui]}" "$T/content/held" "$T/ready" "$T/go" &
		writer=$!
		wait_for "$T/ready" || fail "the held $mode writer did not get ready"
		size=$(stat -c %s "$M/${FILE[ui]}")
		[[ $size == $(stat -c %s "$T/expect/ui") ]] ||
			problem "while a $mode writer of $count messages has not closed, stat shows size $size, not the committed $(stat -c %s "$T/expect/ui")"
		same "$M/${FILE[ui]}" "$T/expect/ui" "a reader while a $mode writer of $count messages has not closed"
		touch "$T/go"
		wait "$writer" || problem "the held $mode writer failed"
		same "$M/${FILE[ui]}" "$T/content/held" "the held $mode writer's version after close"
		cp "$T/content/held" "$T/expect/ui"
	done
done

# ---- a child that execs while the file is written -------------------------------

# Node opens every file with O_CLOEXEC. A child spawned while a doc is
# written and not yet closed gets the descriptor, and execve() closes it:
# the daemon gets a flush (a commit) from the child, which holds its exec
# lock until the flush returns. The commit is the writer's (the process
# that opened the file), and must not wait for the child (reading
# /proc/<child>/stat waits for that lock: the daemon hung there, and the
# child with it, under Cline 1.0.10, whose core spawns git while it saves).
say "a child that execs while the writer's file is open"
node_client gen.js ui 12 700 >"$T/content/exec"
rc=0
timeout -s KILL 30 node -e '
	const fs = require("fs"), cp = require("child_process");
	const [file, from] = process.argv.slice(1);
	fs.readFileSync(file); /* as clients do: what it read is the base of its save */
	const fd = fs.openSync(file, "w");
	fs.writeSync(fd, fs.readFileSync(from));
	const r = cp.spawnSync("/bin/true");
	if (r.status !== 0) {
		console.error("the child: " + (r.error || "status " + r.status));
		process.exit(1);
	}
	fs.closeSync(fd);' "$M/${FILE[ui]}" "$T/content/exec" 2>"$T/exec.err" || rc=$?
((rc != 137)) || fail "a child's execve() while a doc was written hung (killed after 30 s): the daemon waits for the child"
((rc == 0)) || problem "a writer whose child exec'd failed (status $rc): $(cat "$T/exec.err")"
same "$M/${FILE[ui]}" "$T/content/exec" "the writer's version, a child having exec'd while it wrote"
cp "$T/content/exec" "$T/expect/ui"
"$CONVFS" log --json "$M/${FILE[ui]}" >"$T/exec.log" 2>&1 || problem "convfs log failed: $(cat "$T/exec.log")"
got=$(jq -r '.[0].process' "$T/exec.log" 2>/dev/null) || true
[[ $got == node ]] || problem "the commit of the writer whose child exec'd is said to be by '$got', not by the writer (node)"

# ---- large writes ---------------------------------------------------------------
# A write of more than 64 KiB makes the daemon take the next request by
# splice(): its bytes go from the pipe to the file (a plain file, a doc's
# staging file) without passing through the daemon's memory. Every byte must
# land where it was written: writes of 512 KiB and more at odd offsets, one
# over the middle of what was written, small ones between them.

say "large writes"
python3 - "$M/settings/large.bin" "$T/large.bin" <<'PY' || problem "large writes to a plain file failed"
import os, random, sys
rnd = random.Random(7)
data = bytearray(rnd.randbytes(5 << 20))
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
off = 0
for size in (1 << 20, 300001, 7, (1 << 20) + 4097, 100, 2 << 20):
    os.pwrite(fd, data[off:off + size], off)
    off += size
os.pwrite(fd, data[off:], off)
patch = rnd.randbytes(700000)
os.pwrite(fd, patch, 1234567)
data[1234567:1234567 + len(patch)] = patch
os.close(fd)
open(sys.argv[2], "wb").write(data)
PY
same "$M/settings/large.bin" "$T/large.bin" "a plain file written by large writes at odd offsets"
node -e '
	const n = 3000, a = [];
	for (let i = 0; i < n; i++)
		a.push({ ts: 1795306269021 + i, type: "say", say: "text", text: "large " + i + " " + "x".repeat(900 + i % 97) });
	require("fs").writeFileSync(process.argv[1], JSON.stringify(a, null, 1));' "$T/content/large"
for pattern in a b; do
	write_and_check "$pattern" ui "$T/content/large"
done

# ---- a doc renamed out with RENAME_NOREPLACE (mv -n) ---------------------------

say "mv -n of a conversation file while the backing tree gets its new name"
# The daemon copies the doc out to a temp file, then names it: a file made
# at the new name meanwhile must stay (the name was checked first and then
# renamed over, losing the other file). Through this mount the kernel holds
# the folder's lock across the rename, so the other file is made in the
# backing tree, as another daemon serving the same store would.
OUT=1795306399000
mkdir "$M/tasks/$OUT"
node -e 'const a = [];
	for (let i = 0; i < 60; i++)
		a.push({ ts: 1795306399000 + i, type: "say", say: "text", text: "x".repeat(1 << 20) });
	require("fs").writeFileSync(process.argv[1], JSON.stringify(a));' "$T/content/out"
cp "$T/content/out" "$M/tasks/$OUT/ui_messages.json"
mv -n "$M/tasks/$OUT/ui_messages.json" "$M/tasks/$OUT/ui.bak" &
mvpid=$!
# (A busy wait: the copy takes a few tens of milliseconds.)
while kill -0 "$mvpid" 2>/dev/null && ! compgen -G "$STORE.files/tasks/$OUT/.convfs-rename.*" >/dev/null; do
	:
done
taken=0
(set -o noclobber && echo theirs >"$STORE.files/tasks/$OUT/ui.bak") 2>/dev/null && taken=1
wait "$mvpid" || true
if ((taken)); then
	[[ $(cat "$M/tasks/$OUT/ui.bak") == theirs ]] || problem "mv -n replaced the file another process made meanwhile"
	same "$M/tasks/$OUT/ui_messages.json" "$T/content/out" "mv -n that found its name taken: the conversation file"
else
	say "the rename ended before the other process could make the name (nothing to check)"
fi
rm -f "$M/tasks/$OUT/ui.bak"

# ---- nothing left behind, and it all survives a remount ------------------------

say "leftovers"
# (.convfs-mounts/ of the backing tree is each mount's own: the client's databases.)
left=$(find "$M" "$STORE.files" -path "$STORE.files/.convfs-mounts" -prune -o \( -name '*.tmp*' -o -name '*.lock' -o -name '.convfs-*' -o -name '*.bak_*' \) -print)
[[ -z $left ]] || problem "files left behind:\n$left"

unmount_convfs "$M"
# What the kernel kept of it is gone with the mount: these are the backing file's bytes.
same "$STORE.files/settings/large.bin" "$T/large.bin" "the backing file of the plain file written by large writes"
rm "$STORE.files/settings/large.bin"
mount_convfs "$M" "$STORE"
say "after remount"
for key in "${!FILE[@]}"; do
	same "$M/${FILE[$key]}" "$T/expect/$key" "${FILE[$key]} after remounting"
done
unmount_convfs "$M"

check_log "$STORE.log" "^convfs: warning: refusing to commit '[^']+': not (a JSON array|valid JSON): .*; nothing stored changes$"
pass
