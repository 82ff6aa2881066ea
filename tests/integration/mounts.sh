#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# mounts.sh: several mounts of one store at once (the host's editor and a
# devcontainer, two containers of one host), each served by a daemon of its
# own, keep every promise one mount keeps.
#
# Mount A is over the 2.18.0 fixture, B and C over folders of their own, all
# of one store. It proves that
#   - windows: Cline-like windows (torture/window.js) spread over two mounts,
#     then over three, lose nothing: every task in taskHistory.json, every
#     message in its files, in order, counted through A;
#   - seen within SEE_MS (100) ms: once a change through A has returned
#     (a round that misses runs again, up to three, the last deciding),
#     stat and read through B and C show it (each time measured and
#     reported): a conversation file renamed over, a plain file rewritten at
#     the same size (its pages, not only its size), a new task's folder in
#     tasks/ and its item in state/taskHistory.json, the view (the task in
#     its workspace's tasks/, its messages, a new entry of its versions/, the
#     trash after `rm -r` through A), and `convfs status` and `convfs log`
#     asked through B;
#   - a reader: while A saves one conversation over and over (by rename and
#     in place, growing, its last message completed now and then), every
#     read through B is whole JSON, the writer's messages in order, and never
#     fewer of them than the last save that had returned before the read
#     began, while another reader of the same file through B keeps a handle
#     of some version open (clients/follow.js; on a plain folder, the
#     control, it reads a save cut short);
#   - locks: an O_EXCL create of a *.lock file through A makes the same
#     create through B fail with EEXIST (the backing tree decides), while an
#     flock() taken through A does not hold against B (each mount's kernel
#     keeps its own locks); so the client's SQLite databases, which live by
#     such locks and by shared memory, are each mount's own: db/ and
#     locks.db written through A and through B stay apart, while the
#     conversations are shared;
#   - kill -9 of B in the middle of a burst of saves through it: every save
#     that had returned reads back through A at once and through B once it is
#     mounted again the way the suite restarts a killed mount (fusermount3
#     -uz, then mount again); A serves and saves all along (a save every
#     100 ms, none fails), and status lists the daemons that serve;
#   - take-in: what was written into B's folder while B was not mounted is
#     taken in at B's mount while A serves and is saved through, and A shows
#     it; D's first mount, over a folder of 1,000 tasks (3,000 files; 300
#     under valgrind), takes it all in while every save through A succeeds
#     (SQLite's lock waited out: a batch that ends lets the waiting writers
#     go first);
#   - mount namespaces: a daemon started in another one (unshare -m) is in
#     `convfs status` asked outside, and while it alone serves the store
#     convfs forget refuses and convfs check warns;
#   - the daemons log nothing unexpected.

. "$(dirname "$0")/lib.sh"

command -v jq >/dev/null || fail "jq is missing"
command -v sqlite3 >/dev/null || fail "sqlite3 is missing"
command -v unshare >/dev/null || fail "unshare is missing"

SEE_MS=$((${MOUNTS_SEE_MS:-100} * SLOW))
S=$T/store.db
A=$(fixture_extract 2.18.0 "$T/fx")
B=$T/b
C=$T/c
D=$T/d
WS=webapp-691006855 # the fixture's workspace of /home/dev/projects/webapp
mkdir -p "$B" "$C" "$D"

# The clients this test starts in the background end with it, whatever happens.
declare -a BG=()
status_is() { return "$1"; }
trap 'st=$?; set +e; trap - ERR; for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; status_is $st; cleanup' EXIT

# mount_at DIR NAME: a daemon of the store at DIR, its log $T/NAME.log.
mount_at() { mount_convfs_log "$1" "$T/$2.log" -o "store=$S"; }

mount_at "$A" a
mount_at "$B" b

# ---- windows over two and three mounts ---------------------------------------

runner=$(dirname "$0")/torture/run.js
say "windows: 4 on 2 mounts"
node "$runner" "$A,$B" 4 8 5 2>"$T/run2.err" >&2 ||
	problem "4 windows on 2 mounts lost work:\n$(head -n 20 "$T/run2.err")"
mount_at "$C" c
say "windows: 6 on 3 mounts"
TORTURE_FIRST_WINDOW=11 node "$runner" "$A,$B,$C" 6 8 5 2>"$T/run3.err" >&2 ||
	problem "6 windows on 3 mounts lost work:\n$(head -n 20 "$T/run3.err")"

# ---- seen through the others within SEE_MS ------------------------------------

# The observer (clients/observe.js) polls B and C for what a change through A
# made, from the moment it is asked, and says when each showed it.
coproc OBS { exec node "$CLIENTS/observe.js" "$A" "$B" "$C"; }
BG+=("$OBS_PID")
declare -a SEEN=() MISSED=()
now_us() { echo "${EPOCHREALTIME/./}"; }
CHANGED_US=0
changed() { CHANGED_US=$(now_us); }

# seen WHAT CHECK ARGS...: what the change through A that returned at
# CHANGED_US made must show through B and C (the mounts SEE_ON names)
# within SEE_LIMIT ms (SEE_MS): CHECK ARGS (observe.js's, @M@ for the
# mount) must hold. The times go to SEEN, a change shown late or not at
# all (3 s) to MISSED.
SEE_ON="B C"
SEE_LIMIT=$SEE_MS
seen()
{
	local what=$1 i ms names=(A B C) on m
	shift
	on=$(for m in $SEE_ON; do case $m in A) echo 0 ;; B) echo 1 ;; C) echo 2 ;; esac; done | paste -s -d,)
	{
		printf '%s\t%s\t%s\t%s' "$CHANGED_US" $((3000 * SLOW)) "$on" "$what"
		printf '\t%s' "$@"
		printf '\n'
	} >&"${OBS[1]}"
	while :; do
		read -r -u "${OBS[0]}" i ms || fail "the observer (clients/observe.js) ended"
		[[ $i == done ]] && break
		[[ $i =~ ^[012]$ ]] || fail "the observer says: $i $ms"
		if [[ $ms == - ]]; then
			MISSED+=("${names[i]}: $what: not seen after 3 s")
		else
			SEEN+=("${names[i]} $what $ms ms")
			((ms <= SEE_LIMIT)) || MISSED+=("${names[i]}: $what: seen after $ms ms, not within $SEE_LIMIT ms")
		fi
	done
}

# rename_in MOUNT REL FILE: FILE's content renamed over MOUNT/REL (a temp
# file beside it, written and renamed by the shell's programs); changed.
rename_in()
{
	cp "$3" "$1/$2.tmp.$$"
	mv -T "$1/$2.tmp.$$" "$1/$2"
	changed
}

# history_add MOUNT ID: the task's item added to MOUNT's taskHistory.json
# as Cline adds it (read it, push, temp + rename); changed when the rename
# returned.
history_add()
{
	CHANGED_US=$(node -e '
		const fs = require("fs");
		const [mnt, id] = process.argv.slice(1);
		const file = `${mnt}/state/taskHistory.json`;
		const h = JSON.parse(fs.readFileSync(file, "utf8"));
		h.push({ id, ts: Number(id), task: `task ${id}`, tokensIn: 1, tokensOut: 1, totalCost: 0,
			cwdOnTaskInitialization: "/home/dev/projects/webapp" });
		fs.writeFileSync(`${file}.tmp`, JSON.stringify(h));
		fs.renameSync(`${file}.tmp`, file);
		process.stdout.write(String(Date.now() * 1000));' "$1" "$2")
}

# status_names MOUNT REL: convfs status asked through MOUNT names REL as the last commit.
status_names() { [[ $("$CONVFS" status --json "$1" | jq -r .last_commit.path) == "$2" ]]; }
# log_lists MOUNT REL N: convfs log asked through MOUNT lists N versions of REL.
log_lists() { (($("$CONVFS" log --json "$1/$2" | jq length) == $3)); }

# visibility ID: one round of changes through A (task ID made, saved,
# removed; a plain file), each seen through B and C.
visibility()
{
	local id=$1 cf=tasks/$1/ui_messages.json v=workspaces/$WS/tasks/$1 n m
	for m in B C; do
		# What the kernels of B and C keep: the listings, the history, the plain file's pages.
		ls -a "${!m}/tasks" "${!m}/workspaces/$WS/tasks" "${!m}/workspaces/.trash" >/dev/null
		cat "${!m}/state/taskHistory.json" "${!m}/settings/notes.txt" >/dev/null 2>&1 || true
	done

	# A new task: its folder, its conversation, its item, the view.
	node_client gen.js ui 3 "${id: -2}" >"$T/ui3.json"
	node_client gen.js ui 4 "${id: -2}" >"$T/ui4.json"
	mkdir "$A/tasks/$id"
	changed
	seen "a new task's folder in tasks/" lists @M@/tasks "$id"
	rename_in "$A" "$cf" "$T/ui3.json"
	seen "a new conversation file (renamed in)" same @M@/"$cf" "$T/ui3.json"
	history_add "$A" "$id"
	seen "the new task's item in state/taskHistory.json" has @M@/state/taskHistory.json "\"id\":\"$id\""
	seen "the new task in workspaces/$WS/tasks/" lists "@M@/workspaces/$WS/tasks" "$id"

	# The conversation saved again: the compat file, the view, versions/.
	n=$(ls "$B/$v/versions" | wc -l)
	for m in B C; do
		[[ $(ls "${!m}/$v/versions" | wc -l) == "$n" ]] || problem "$m: $v/versions does not list $n versions"
		[[ $(wc -l <"${!m}/$v/ui_messages.jsonl") == 3 ]] || problem "$m: $v/ui_messages.jsonl does not have 3 lines"
	done
	rename_in "$A" "$cf" "$T/ui4.json"
	seen "a conversation file renamed over" same @M@/"$cf" "$T/ui4.json"
	seen "the view's ui_messages.jsonl" lines "@M@/$v/ui_messages.jsonl" 4
	seen "a new entry in the view's versions/" entries "@M@/$v/versions" $((n + 1))
	# convfs status and log read the store: asked through B, they show it too.
	status_names "$B" "$cf" || problem "convfs status asked through B does not name $cf as the last commit"
	log_lists "$B" "$cf" 2 || problem "convfs log asked through B does not list the 2 versions of $cf"

	# A plain file, new, then rewritten at the same size: the pages through B and C must go.
	printf '%s %03d\n' "$id" 1 >"$T/notes1"
	printf '%s %03d\n' "$id" 2 >"$T/notes2"
	cp "$T/notes1" "$A/settings/notes-$id.txt"
	changed
	seen "a new plain file" same "@M@/settings/notes-$id.txt" "$T/notes1"
	printf '%s %03d\n' "$id" 2 >"$A/settings/notes-$id.txt"
	changed
	seen "a plain file rewritten at the same size" same "@M@/settings/notes-$id.txt" "$T/notes2"

	# The trash: rm -r through A.
	rm -r "$A/tasks/$id"
	changed
	seen "a task removed through A, in the trash" lists @M@/workspaces/.trash "$id"
	seen "a task removed through A, gone from tasks/" lacks @M@/tasks "$id"
	seen "a task removed through A, gone from the history" hasnt @M@/state/taskHistory.json "\"id\":\"$id\""
}

say "seen through B and C"
# A loaded machine may hold a thread up for longer than SEE_MS: a round
# that misses runs again, up to three in all, and the last decides.
for round in 1 2 3; do
	SEEN=() MISSED=()
	visibility "17991000000${round}1"
	say "seen (round $round): $(printf '%s; ' "${SEEN[@]}")"
	((${#MISSED[@]} > 0)) || break
	((round == 3)) || say "not seen in time, once more: $(printf '%s; ' "${MISSED[@]}")"
done
for m in "${MISSED[@]}"; do problem "$m"; done
MISSED=()

# ---- a reader through B while A saves -------------------------------------------

say "a reader through B while A saves"
# The control: on a plain folder the reader sees a save cut short, or this could not fail.
mkdir "$T/plain"
! node_client follow.js "$T/plain" "$T/plain" 1799100000002 1 >/dev/null 2>"$T/follow.err" ||
	problem "a reader of a plain folder saw nothing torn: the reader cannot tell a torn read"
say "reader, on a plain folder (must fail): $(cat "$T/follow.err")"
node_client follow.js "$A" "$B" 1799100000002 4 >"$T/follow.out" 2>"$T/follow.err" ||
	problem "a reader through B saw a torn or older version:\n$(cat "$T/follow.err")"
say "reader: $(cat "$T/follow.out")"

# ---- locks -------------------------------------------------------------------

say "locks and the client's databases"
excl() { node -e 'try { require("fs").openSync(process.argv[1], "wx"); console.log("ok"); } catch (e) { console.log(e.code); }' "$1"; }
[[ $(excl "$A/settings/task.lock") == ok ]] || problem "an O_EXCL create of settings/task.lock through A failed"
got=$(excl "$B/settings/task.lock")
[[ $got == EEXIST ]] || problem "an O_EXCL create through B of the lock file made through A: $got, not EEXIST"
rm "$B/settings/task.lock"
[[ $(excl "$A/settings/task.lock") == ok ]] || problem "an O_EXCL create through A after B removed the lock file failed"
rm "$A/settings/task.lock"
: >"$A/settings/flocked"
if flock -n "$A/settings/flocked" flock -n "$B/settings/flocked" true; then
	say "locks: an flock() through A does not hold against B (each kernel keeps its own)"
else
	problem "an flock() through A held against B: docs/ARCHITECTURE.md says each mount's kernel keeps its own locks"
fi
mkdir -p "$A/db" "$B/db"
for m in A B; do
	sqlite3 "${!m}/db/sessions.db" "PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS t (x);
		INSERT INTO t VALUES ('through $m');" >/dev/null || problem "sqlite3 on db/sessions.db through $m failed"
	sqlite3 "${!m}/locks.db" "CREATE TABLE IF NOT EXISTS l (x); INSERT INTO l VALUES ('$m');" ||
		problem "sqlite3 on locks.db through $m failed"
done
[[ $(sqlite3 "$A/db/sessions.db" 'SELECT group_concat(x) FROM t') == 'through A' ]] ||
	problem "db/sessions.db through A is not A's own: $(sqlite3 "$A/db/sessions.db" 'SELECT group_concat(x) FROM t' 2>&1)"
[[ $(sqlite3 "$B/db/sessions.db" 'SELECT group_concat(x) FROM t') == 'through B' ]] ||
	problem "db/sessions.db through B is not B's own: $(sqlite3 "$B/db/sessions.db" 'SELECT group_concat(x) FROM t' 2>&1)"
[[ $(sqlite3 "$C/locks.db" 'SELECT count(*) FROM sqlite_master' 2>&1) == 0 ]] ||
	problem "locks.db through C is not C's own (empty): $(sqlite3 "$C/locks.db" 'SELECT * FROM l' 2>&1)"
[[ $(sqlite3 "$B/locks.db" 'SELECT group_concat(x) FROM l') == B ]] || problem "locks.db through B is not B's own"
n=$({ find "$S.files/.convfs-mounts" -mindepth 2 -maxdepth 2 -name db -type d 2>/dev/null || true; } | wc -l)
((n == 2)) || problem "$n db/ folders in the mounts' own folders of the backing tree, not 2 (A's and B's)"
cmp -s "$A/state/taskHistory.json" "$B/state/taskHistory.json" || problem "the history through A and B differs"

# ---- kill -9 of B in a burst of saves ------------------------------------------

say "kill -9 of B in a burst of saves, A saving all along"
KT=1799100000003
ST=1799100000004
mkdir "$B/tasks/$KT"
: >"$T/burst.rec"
: >"$T/saver.rec"
node "$CLIENTS/saver.js" save "$A" "$ST" "$T/saver.rec" "$T/saver.stop" 2>"$T/saver.err" &
saver=$!
BG+=("$saver")
node "$CLIENTS/burst.js" "$B" "$KT" 7 "$T/burst.rec" >"$T/burst.out" 2>"$T/burst.err" &
burst=$!
BG+=("$burst")
rc=0
wait_records "$T/burst.rec" 'ui ' 40 "$burst" 30 || rc=$?
((rc != 1)) || fail "the burst through B ended before the kill: $(cat "$T/burst.err")"
((rc == 0)) || fail "the burst through B made fewer than 40 saves in 30 s"
kill_daemon "$B"
wait_gone "$burst" 10 || fail "the burst still runs 10 s after B's daemon was killed"
rc=0
wait "$burst" || rc=$?
((rc == 1)) || fail "the burst through B was not stopped by an error (exit status $rc)"
grep -q -x -E 'ENOTCONN|ECONNABORTED|EIO' "$T/burst.out" ||
	fail "the burst stopped with $(cat "$T/burst.out"), not for the dead mount: $(cat "$T/burst.err")"
kill_ok=$(grep -c '^ok' "$T/saver.rec" || true)
node_client check_burst.js "$A" "$KT" 7 "$T/burst.rec" >"$T/check.out" 2>"$T/check.err" ||
	problem "a save through B that had returned before its kill does not read back through A:\n$(cat "$T/check.err")"
"$CONVFS" status --json "$A" >"$T/status.json"
[[ $(jq '.daemons | length' "$T/status.json") == 2 ]] ||
	problem "status through A after B's kill lists $(jq '.daemons | length' "$T/status.json") daemons, not 2: $(jq -c .daemons "$T/status.json")"
remove_dead_mount "$B"
mount_at "$B" b
node_client check_burst.js "$B" "$KT" 7 "$T/burst.rec" >"$T/check.out" 2>"$T/check.err" ||
	problem "a save through B that had returned before its kill does not read back through B mounted again:\n$(cat "$T/check.err")"
sleep 0.5
(($(grep -c '^ok' "$T/saver.rec") > kill_ok)) || problem "A made no save after B's kill"
say "kill: $(tr '\n' ';' <"$T/check.out") B's burst: $(wc -l <"$T/burst.rec") saves recorded; A: $(grep -c '^ok' "$T/saver.rec") saves"

# ---- take-in of each mount's own folder, A saving --------------------------------

say "B's folder underneath, written while B was not mounted"
unmount_convfs "$B"
node_client gen_tasks.js "$B" 4 81 >"$T/b.ids"
mount_at "$B" b
changed
# A take-in is many commits: A shows them within a second of the mount.
SEE_ON=A
SEE_LIMIT=$((1000 * SLOW))
while read -r id; do
	seen "tasks/$id, taken in at B's mount" lists @M@/tasks "$id"
	seen "the item of $id, taken in at B's mount" has @M@/state/taskHistory.json "\"id\":\"$id\""
done <"$T/b.ids"
for m in "${MISSED[@]}"; do problem "$m"; done
MISSED=()

# Seconds of take-in (well past SQLite's 5 s wait), a few under valgrind, whose aim is the daemon's memory.
DN=$((SLOW > 1 ? 300 : 1000))
say "D's first mount, over $DN tasks"
node_client gen_tasks.js "$D" "$DN" 90 >"$T/d.ids"
start=$(now_us)
MOUNT_SECS=120 mount_at "$D" d
say "D mounted in $((($(now_us) - start) / 1000)) ms"
changed
seen "the last of D's tasks, taken in at D's mount" lists @M@/tasks "$(tail -n 1 "$T/d.ids")"
for m in "${MISSED[@]}"; do problem "$m"; done
touch "$T/saver.stop"
wait "$saver" || problem "the saver through A failed: $(cat "$T/saver.err")"
grep -q '^fail' "$T/saver.rec" && problem "saves through A failed:\n$(grep '^fail' "$T/saver.rec" | head -n 5)"
say "A: $(grep -c '^ok' "$T/saver.rec") saves, the longest $(awk '$1 == "ok" && $4 - $3 > m { m = $4 - $3 } END { print m + 0 }' "$T/saver.rec") ms"
node_client saver.js check "$A/tasks/$ST/ui_messages.json" "$(grep -c '^ok' "$T/saver.rec")" >/dev/null ||
	problem "A's saves are not all in its conversation"
n=$(jq length "$A/state/taskHistory.json")
(($(jq --slurpfile d <(jq -R . "$T/d.ids") '($d | map({(.): true}) | add) as $set | [.[] | select($set[.id])] | length' \
	"$A/state/taskHistory.json") == DN)) ||
	problem "A's history lacks some of D's $DN tasks ($n items)"

# ---- a daemon in another mount namespace -----------------------------------------

say "a daemon in another mount namespace"
NS=$T/ns
mkdir "$NS"
# Inside, every FUSE mount copied from here is detached first: a copy would
# keep its daemon (this test's, or another test's) from ending at its unmount.
unshare -m --propagation private bash -c "$(declare -f detach_fuse_copies)"'
	detach_fuse_copies
	exec "$@"' _ "${VALGRIND[@]}" "$CONVFS" -f -o "store=$S" "$NS" 2>>"$T/ns.log" &
nspid=$!
echo "$nspid" >>"$T/daemons"
LOGS[$T/ns.log]=1
for ((i = 0; i < 100 * SLOW; i++)); do
	nsenter -t "$nspid" -m mountpoint -q "$NS" 2>/dev/null && break
	kill -0 "$nspid" 2>/dev/null || fail "the daemon in another mount namespace exited:\n$(cat "$T/ns.log")"
	sleep 0.1
done
nsenter -t "$nspid" -m mountpoint -q "$NS" || fail "the daemon in another mount namespace did not mount"
nsenter -t "$nspid" -m cat "$NS/state/taskHistory.json" | cmp -s - "$A/state/taskHistory.json" ||
	problem "the mount in another namespace does not serve the store's files"
"$CONVFS" status --json "$A" >"$T/status.json"
ns_here=$(readlink /proc/self/ns/mnt)
ns_there=$(readlink "/proc/$nspid/ns/mnt")
[[ $ns_here != "$ns_there" ]] || fail "unshare -m made no mount namespace of its own"
jq -e --arg mp "$NS" --arg ns "$ns_there" 'any(.daemons[]; .mountpoint == $mp and .mount_namespace == $ns)' \
	"$T/status.json" >/dev/null ||
	problem "status asked outside does not list the daemon in $ns_there: $(jq -c .daemons "$T/status.json")"
"$CONVFS" status "$A" >"$T/status.txt"
grep -q "served by: *5 daemons" "$T/status.txt" || problem "status does not say 5 daemons serve: $(cat "$T/status.txt")"
for m in A B C D; do unmount_convfs "${!m}"; done
rc=0
"$CONVFS" forget "$S" --task 1795306269021 --yes >"$T/forget.out" 2>&1 || rc=$?
((rc == 1)) || problem "convfs forget while a daemon in another namespace serves: exit $rc, not 1: $(cat "$T/forget.out")"
grep -q "is mounted" "$T/forget.out" || problem "convfs forget does not say the store is mounted: $(cat "$T/forget.out")"
[[ -f $S.files/tasks/1795306269021/ui_messages.json || -n $(sqlite3 "$S" "SELECT 1 FROM docs WHERE path LIKE 'tasks/1795306269021/%' LIMIT 1") ]] ||
	problem "convfs forget, refused, forgot the task anyway"
rc=0
"$CONVFS" check "$S" >"$T/check.out" 2>&1 || rc=$?
grep -q "is mounted" "$T/check.out" || problem "convfs check does not say the store is mounted: $(cat "$T/check.out")"
kill -TERM "$nspid"
rc=0
wait "$nspid" || rc=$?
((rc == 0)) || problem "the daemon in another mount namespace exited with status $rc after SIGTERM"
n=$({ find "$S.mounts" -maxdepth 1 -type f 2>/dev/null || true; } | wc -l)
((n == 0)) || problem "$n files left in $S.mounts after every daemon ended"

for log in a b c d ns; do check_log "$T/$log.log"; done
[[ $(sqlite3 "$S" 'PRAGMA integrity_check') == ok ]] || problem "the store does not check ok"
pass
