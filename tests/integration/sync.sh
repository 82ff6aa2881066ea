#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sync.sh: one history across machines (-o sync, docs/SYNC.md), against a
# real PostgreSQL: a cluster of Debian's postgresql package that the test
# makes and starts itself as an unprivileged user, on a private socket and
# port in its temp dir. Each "machine" is a mount with a store of its own.
#
#   - latency: a conversation saved on A is read, byte for byte, on B within
#     1 s of the save's return (five times; not held under valgrind);
#   - a second daemon serving A's store (several mounts of one store), with
#     -o sync too: it leaves the sync to the first (one lock beside the
#     store), its save reaches B, and neither logs a push refused;
#   - the window model (torture/run.js) on A and B at once, three windows
#     each, one conversation shared by all six; PostgreSQL stopped during
#     the run and started again: each daemon is connected again within 10 s,
#     and once all is pushed and pulled every store holds the same bytes,
#     and every task and message any window saved (a snapshot of each
#     machine when its windows ended: sync/check.js);
#   - the same conversation changed on A and on B while PostgreSQL is down:
#     both machines keep every message, in the same bytes;
#   - A's daemon killed (-9) once its push of 150 commits is in PostgreSQL
#     and before its store has recorded it (CONVFS_SYNC_PUSH_PAUSE holds that
#     step back): mounted again, it pushes nothing twice (the log refuses a
#     commit pushed twice, which the daemon would log), takes its own entries
#     as its own, and B has them all;
#   - C, a new machine with an empty store, takes in the whole history
#     before it mounts, PostgreSQL restarted in the middle of that pull
#     (CONVFS_SYNC_SLOW spreads it out): C mounts anyway, takes the rest in
#     once PostgreSQL is back, and holds what A and B hold;
#   - no commit applied twice: each store has each log entry once, and as
#     many versions of A's 150 saves as A;
#   - a text forgotten on one machine leaves the others' stores, what their
#     mounts show, and the pages a second daemon's kernel kept of it (a
#     reader's version since replaced included);
#   - a log sealed with -o sync_key: what PostgreSQL holds has no byte of the
#     conversations, a machine with the key reads them, one without is
#     refused with a clear line, and convfs status says why;
#   - convfs status --json shows the sync (connected, nothing waiting);
#   - libpq is loaded by a daemon with -o sync, not by `convfs --version` nor
#     by a daemon without it; with libpq made unloadable (an empty file bound
#     over it in a private mount namespace), -o sync is refused with a line
#     that names what is missing.
# Outside CI, a machine without PostgreSQL's server skips (77); under
# CI=true that fails. CONVFS_VALGRIND: fewer windows and commits.

. "$(dirname "$0")/lib.sh"

SYNCDIR=$TESTS_DIR/sync
. "$TESTS_DIR/pg.sh"
command -v jq >/dev/null || fail "jq is missing"

status_is() { return "$1"; }
trap 'st=$?; trap - ERR; set +e; pg_teardown; status_is $st; cleanup' EXIT
pg_setup
q -d postgres -c 'CREATE DATABASE hist' -c 'CREATE DATABASE sealed'
DB=hist
CONN=$(pg_conn "$DB")

# What the daemons may log: the cut and the restart of PostgreSQL.
ALLOWED='sync: cannot reach PostgreSQL|sync: the shared history could not be taken in before mounting'
N=3 TASKS=3 MSGS=5 MANY=150
if [[ ${CONVFS_VALGRIND:-} == 1 ]]; then
	N=2 TASKS=2 MSGS=3 MANY=30
fi

# mount_machine NAME [convfs options...]: mounts $T/NAME with store $T/NAME.db, syncing through hist.
mount_machine()
{
	local name=$1
	shift
	mkdir -p "$T/$name"
	mount_convfs "$T/$name" "$T/$name.db" -o "sync=$CONN" "$@"
}

settled() { pg_settled "$DB" "$@"; }

# snapshot MOUNT NAME: a copy of what a machine holds now, for check.js.
snapshot()
{
	mkdir -p "$T/snap/$2"
	cp -r "$1/state" "$1/tasks" "$T/snap/$2/" 2>/dev/null || true
}

now_ms() { local t=$EPOCHREALTIME; echo $((10#${t/./} / 1000)); }

# ---- A and B ------------------------------------------------------------------------

mount_machine a
mount_machine b

say "libpq is loaded by a daemon that syncs, by nothing else"
LD_DEBUG=files "$CONVFS" --version 2>"$T/ld.out" >/dev/null || fail "convfs --version failed"
! grep -q 'libpq' "$T/ld.out" || problem "convfs --version loads libpq: every start would pay for it"
mkdir -p "$T/nosync"
mount_convfs "$T/nosync" "$T/nosync.db"
ls "$T/nosync" >/dev/null
! grep -q 'libpq' "/proc/${DAEMON_PID[$T/nosync]}/maps" || problem "a daemon without -o sync loaded libpq"
unmount_convfs "$T/nosync"
grep -q 'libpq' "/proc/${DAEMON_PID[$T/a]}/maps" || problem "a's daemon, with -o sync, did not load libpq"

say "a machine without libpq: -o sync refused, with a line that says what is missing"
libpq=$(awk '/libpq/ { print $6; exit }' "/proc/${DAEMON_PID[$T/a]}/maps")
: >"$T/empty.so"
mkdir -p "$T/nolib"
if unshare -m mount --bind "$T/empty.so" "$libpq" 2>/dev/null; then
	unshare -m bash -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$T/empty.so" "$libpq" \
		"${VALGRIND[@]}" "$CONVFS" -f -o "store=$T/nolib.db" -o "sync=$CONN" "$T/nolib" 2>"$T/nolib.log" &&
		problem "-o sync mounted without libpq"
	log_has "$T/nolib.log" "cannot load PostgreSQL's client library: .*(Debian's package libpq5 has it)" \
		"that -o sync says libpq is missing"
	no_valgrind_report "$T/nolib.log" "-o sync without libpq"
	! mountpoint -q "$T/nolib" || fail "'$T/nolib' was mounted without libpq"
else
	say "skipped: no private mount namespace here"
fi

say "latency: a conversation saved on a, read on b"
worst=0
for ((k = 1; k <= 5; k++)); do
	node "$CLIENTS/gen.js" ui $((10 * k)) $k >"$T/conv.json"
	mkdir -p "$T/a/tasks/17000000000$k"
	# From the moment the save returned: it is committed then.
	node "$CLIENTS/write_atomic.js" "$T/a/tasks/17000000000$k/ui_messages.json" "$T/conv.json"
	t0=$(now_ms)
	for ((i = 0; i < 500 * SLOW; i++)); do
		cmp -s "$T/conv.json" "$T/b/tasks/17000000000$k/ui_messages.json" 2>/dev/null && break
		sleep 0.005
	done
	ms=$(($(now_ms) - t0))
	cmp -s "$T/conv.json" "$T/b/tasks/17000000000$k/ui_messages.json" || fail "conversation $k never reached b"
	((ms > worst)) && worst=$ms
done
say "report: a save on a read on b within $worst ms of its return (the worst of 5)"
((${#VALGRIND[@]} > 0 || worst <= 1000)) || problem "a save on a took $worst ms to be read on b (more than 1 s)"

say "a second daemon serving a's store, with -o sync too: one of them syncs it"
mkdir -p "$T/a2"
mount_convfs_log "$T/a2" "$T/a2.log" -o "store=$T/a.db" -o "sync=$CONN"
node "$CLIENTS/gen.js" ui 7 9 >"$T/conv.json"
mkdir -p "$T/a2/tasks/1750000000000"
node "$CLIENTS/write_atomic.js" "$T/a2/tasks/1750000000000/ui_messages.json" "$T/conv.json"
for ((i = 0; i < 100 * SLOW; i++)); do
	cmp -s "$T/conv.json" "$T/b/tasks/1750000000000/ui_messages.json" 2>/dev/null && break
	sleep 0.1
done
same "$T/conv.json" "$T/b/tasks/1750000000000/ui_messages.json" "a save through a's second daemon, on b"
log_has "$T/a2.log" 'sync: another daemon serving this store syncs it' "that a's second daemon leaves the sync to the first"
unmount_convfs "$T/a2"
# (A commit pushed by both would be refused by the log, with an error line in a's or a2's log.)
check_log "$T/a2.log"

say "window model on a and b at once, PostgreSQL stopped and started again meanwhile"
TORTURE_FIRST_WINDOW=1 node "$TESTS_DIR/torture/run.js" "$T/a" "$N" "$TASKS" "$MSGS" >"$T/run-a.out" 2>&1 &
run_a=$!
TORTURE_FIRST_WINDOW=11 node "$TESTS_DIR/torture/run.js" "$T/b" "$N" "$TASKS" "$MSGS" >"$T/run-b.out" 2>&1 &
run_b=$!
sleep 1
pg_stop
sleep 2
pg_start
started=$(date +%s)
wait "$run_a" || problem "the windows on a lost work:\n$(cat "$T/run-a.out")"
snapshot "$T/a" a1
wait "$run_b" || problem "the windows on b lost work:\n$(cat "$T/run-b.out")"
snapshot "$T/b" b1
settled "$T/a" "$T/b"
for m in a b; do
	"$CONVFS" status --json "$T/$m" >"$T/status.json"
	since=$(date -d "$(jq -r .sync.since "$T/status.json")" +%s)
	((since - started <= 10)) || problem "$m connected again $((since - started)) s after PostgreSQL came back"
done
node "$SYNCDIR/check.js" "$T/snap/a1" "$T/snap/b1" -- "$T/a" "$T/b" >"$T/check.out" 2>&1 ||
	problem "after the window model:\n$(cat "$T/check.out")"
say "$(head -n 1 "$T/check.out")"

say "the same conversation changed on a and on b while PostgreSQL is down"
node "$SYNCDIR/append.js" "$T/a" 1710000000000 base 2 100000
settled "$T/a" "$T/b"
pg_stop
node "$SYNCDIR/append.js" "$T/a" 1710000000000 laptop 4 200000
node "$SYNCDIR/append.js" "$T/b" 1710000000000 desktop 4 300000
snapshot "$T/a" a2
snapshot "$T/b" b2
# Long enough down for the daemons to say they fall behind (5 s), and then that they caught up.
sleep 8
pg_start
settled "$T/a" "$T/b"
for m in a b; do
	log_has "$T/$m.db.log" 'sync: falling behind: [0-9]+ commits wait to be pushed' "that $m fell behind"
	log_has "$T/$m.db.log" 'sync: caught up: pushed [0-9]+ and pulled [0-9]+ commits' "that $m caught up"
done
node "$SYNCDIR/check.js" "$T/snap/a2" "$T/snap/b2" -- "$T/a" "$T/b" >"$T/check.out" 2>&1 ||
	problem "the same conversation changed apart:\n$(cat "$T/check.out")"
n=$(jq length "$T/a/tasks/1710000000000/ui_messages.json")
((n == 10)) || problem "the conversation changed apart has $n messages on a, not 10"

say "a's daemon killed as its push of $MANY commits reaches PostgreSQL"
# The push the log took is recorded in a's store 4 s later: the kill lands in between.
unmount_convfs "$T/a"
CONVFS_SYNC_PUSH_PAUSE=4000 mount_machine a
pg_stop
node "$SYNCDIR/append.js" "$T/a" 1720000000000 many "$MANY" 400000
snapshot "$T/a" a3
pg_start
head0=$(q -d hist -c 'SELECT seq FROM convfs.head')
for ((i = 0; i < 1500 * SLOW; i++)); do
	[[ $(q -d hist -c 'SELECT seq FROM convfs.head') != "$head0" ]] && break
	sleep 0.01
done
kill_daemon "$T/a"
head1=$(q -d hist -c 'SELECT seq FROM convfs.head')
((head1 > head0)) || fail "a's push never reached PostgreSQL (the log's head stayed at $head0)"
mine=$(sqlite3 "$T/a.db" "SELECT count(*) FROM sync_seen WHERE seq > $head0")
((mine == 0)) || fail "the kill came after a had recorded its push ($mine entries): not the case under test"
say "report: a killed with the log's head at $head1 (it was $head0), its store knowing none of it"
remove_dead_mount "$T/a"
mount_machine a
settled "$T/a" "$T/b"
node "$SYNCDIR/check.js" "$T/snap/a3" -- "$T/a" "$T/b" >"$T/check.out" 2>&1 ||
	problem "after the kill:\n$(cat "$T/check.out")"
for m in a b; do
	v=$(sqlite3 "$T/$m.db" "SELECT count(*) FROM revisions r JOIN docs d ON d.id = r.doc_id
		WHERE d.path = 'tasks/1720000000000/ui_messages.json'")
	((v == MANY)) || problem "$m holds $v versions of the $MANY saves made on a"
done

# ---- C: a new machine from the log, PostgreSQL restarted in the middle --------------------

say "c, a new machine, takes in the history; PostgreSQL restarted in the middle of its pull"
mkdir -p "$T/c"
# Restarted once c's store holds the first entries it pulled (the daemon's start
# takes seconds under valgrind): the pull is under way then, 20 entries a fetch.
(
	for ((i = 0; i < 300 * SLOW; i++)); do
		n=$(sqlite3 "$T/c.db" 'SELECT count(*) FROM sync_seen' 2>/dev/null || echo 0)
		((n > 0)) && break
		sleep 0.02
	done
	pg_stop
	sleep 1
	pg_start
) &
restarter=$!
CONVFS_SYNC_SLOW=$((100 * SLOW)) CONVFS_PROGRESS=never mount_machine c
wait "$restarter"
settled "$T/a" "$T/b" "$T/c"
node "$SYNCDIR/check.js" "$T/snap/a1" "$T/snap/b1" "$T/snap/a3" -- "$T/a" "$T/b" "$T/c" >"$T/check.out" 2>&1 ||
	problem "c after its pull:\n$(cat "$T/check.out")"
say "$(head -n 1 "$T/check.out")"
grep -q 'sync: cannot reach PostgreSQL' "$T/c.db.log" ||
	problem "c's pull was not cut by the restart (nothing in its log says so):\n$(cat "$T/c.db.log")"
head=$(q -d hist -c 'SELECT seq FROM convfs.head')
for m in a b c; do
	n=$(sqlite3 "$T/$m.db" 'SELECT count(*), count(DISTINCT seq), max(seq) FROM sync_seen')
	[[ $n == "$head|$head|$head" ]] || problem "$m has the log's $head entries as $n (count, distinct, last)"
done
v=$(sqlite3 "$T/c.db" "SELECT count(*) FROM revisions r JOIN docs d ON d.id = r.doc_id
	WHERE d.path = 'tasks/1720000000000/ui_messages.json'")
((v == MANY)) || problem "c holds $v versions of the $MANY saves made on a"

"$CONVFS" status "$T/c" >"$T/status.out"
grep -q '^sync: *connected to PostgreSQL' "$T/status.out" || problem "convfs status shows no sync:\n$(cat "$T/status.out")"

say "a text forgotten on a (unmounted) leaves PostgreSQL, b and c (mounted)"
SECRET=sk-test-forget-4c2f9e
echo "[{\"ts\":1,\"type\":\"say\",\"say\":\"text\",\"text\":\"the key is $SECRET\"},
{\"ts\":2,\"type\":\"say\",\"say\":\"text\",\"text\":\"noted\"}]" >"$T/secret.json"
mkdir -p "$T/c/tasks/1740000000000"
node "$CLIENTS/write_atomic.js" "$T/c/tasks/1740000000000/ui_messages.json" "$T/secret.json"
settled "$T/a" "$T/b" "$T/c"
grep -q "$SECRET" "$T/b/tasks/1740000000000/ui_messages.json" || fail "the secret never reached b"
# A second daemon serving b's store: its kernel keeps the pages of the
# versions read through it, which the forget its peer applies must not
# outlive, for a reader that opens the file again, one that holds it, and
# one that holds a version since replaced (its node off the names).
mkdir -p "$T/b_second"
mount_convfs_log "$T/b_second" "$T/b_second.log" -o "store=$T/b.db"
BSEC=$T/b_second/tasks/1740000000000/ui_messages.json
for ((i = 0; i < 2; i++)); do
	grep -q "$SECRET" "$BSEC" || fail "the secret does not show through b's second daemon"
done
exec {held_old}<"$BSEC"
sed 's/"noted"}]/"noted"},\n{"ts":3,"type":"say","say":"text","text":"later"}]/' "$T/secret.json" >"$T/secret2.json"
node "$CLIENTS/write_atomic.js" "$T/c/tasks/1740000000000/ui_messages.json" "$T/secret2.json"
settled "$T/a" "$T/b" "$T/c"
for ((i = 0; i < 20 * SLOW; i++)); do
	grep -q '"later"' "$BSEC" && break
	sleep 0.05
done
grep -q '"later"' "$BSEC" || fail "the second version does not show through b's second daemon"
grep -q "$SECRET" "$BSEC" || fail "the secret does not show through b's second daemon in the second version"
exec {held}<"$BSEC"
unmount_convfs "$T/a"
expect_refused=0
"$CONVFS" forget "$T/a.db" --match "$SECRET" --yes >"$T/forget.out" 2>&1 || expect_refused=$?
((expect_refused == 2)) || problem "forget of a store that syncs, without --sync or --here-only, exited $expect_refused"
"$CONVFS" forget "$T/a.db" --match "$SECRET" --yes --sync "$CONN" >"$T/forget.out" 2>&1 ||
	fail "forget --sync failed:\n$(cat "$T/forget.out")"
for ((i = 0; i < 100 * SLOW; i++)); do
	! grep -q -a "$SECRET" "$T/b.db" "$T/b.db-wal" "$T/c.db" "$T/c.db-wal" 2>/dev/null && break
	sleep 0.1
done
for m in a b c; do
	! grep -q -a "$SECRET" "$T/$m.db" "$T/$m.db-wal" 2>/dev/null || problem "$m's store still holds the forgotten text"
done
grep -q "$SECRET" "$T/b/tasks/1740000000000/ui_messages.json" && problem "b still shows the forgotten text"
for ((i = 0; i < 20 * SLOW; i++)); do
	! grep -q "$SECRET" "$BSEC" && break
	sleep 0.05
done
grep -q "$SECRET" "$BSEC" && problem "b's second daemon still shows the forgotten text"
grep -q "$SECRET" <&"$held" && problem "b's second daemon still shows the forgotten text to a reader that held it"
grep -q "$SECRET" <&"$held_old" &&
	problem "b's second daemon still shows the forgotten text to a reader that held a version since replaced"
exec {held}<&- {held_old}<&-
unmount_convfs "$T/b_second"
check_log "$T/b_second.log"
n=$(q -d hist -c "SELECT count(*) FROM convfs.log l WHERE task IS DISTINCT FROM '*forget'
	AND (position(convert_to('$SECRET', 'UTF8') in l.data) > 0
	     OR EXISTS (SELECT 1 FROM convfs.parts p WHERE p.seq = l.seq AND position(convert_to('$SECRET', 'UTF8') in p.data) > 0))")
((n == 0)) || problem "PostgreSQL still holds the forgotten text in $n entries"
mount_machine a
settled "$T/a" "$T/b" "$T/c"
# Every machine has the forget now: its own entry loses the text too.
for ((i = 0; i < 100 * SLOW; i++)); do
	n=$(q -d hist -c "SELECT count(*) FROM convfs.log WHERE position(convert_to('$SECRET', 'UTF8') in data) > 0")
	((n == 0)) && break
	sleep 0.1
done
((n == 0)) || problem "the forget's own entry still holds the text once every machine has it"

for m in a b c; do
	unmount_convfs "$T/$m"
	check_log "$T/$m.db.log" "$ALLOWED"
done

# ---- a sealed log ----------------------------------------------------------------------------

say "a log sealed with -o sync_key"
head -c 32 /dev/urandom >"$T/key"
chmod 600 "$T/key"
DB=sealed
CONN=$(pg_conn "$DB")
mount_machine d -o "sync_key=$T/key"
mount_machine e -o "sync_key=$T/key"
echo '[{"ts":1,"type":"say","say":"text","text":"the password is hunter2-sealed"}]' >"$T/secret.json"
mkdir -p "$T/d/tasks/1730000000000"
node "$CLIENTS/write_atomic.js" "$T/d/tasks/1730000000000/ui_messages.json" "$T/secret.json"
settled "$T/d" "$T/e"
same "$T/secret.json" "$T/e/tasks/1730000000000/ui_messages.json" "the sealed conversation on e"
n=$(q -d sealed -c "SELECT count(*) FROM convfs.log WHERE position(convert_to('hunter2', 'UTF8') in data) > 0
	OR position(convert_to('1730000000000', 'UTF8') in data) > 0")
((n == 0)) || problem "PostgreSQL holds the sealed conversation's text in $n entries"
mkdir -p "$T/f"
mount_convfs "$T/f" "$T/f.db" -o "sync=$CONN"
for ((i = 0; i < 100 * SLOW; i++)); do
	grep -q 'sealed with a key' "$T/f.db.log" && break
	sleep 0.1
done
log_has "$T/f.db.log" 'the log in PostgreSQL is sealed with a key: give it with -o sync_key' "a machine without the key"
"$CONVFS" status --json "$T/f" >"$T/status.json"
jq -e '.sync.connected == false and (.sync.error | length > 0)' "$T/status.json" >/dev/null ||
	problem "status of the machine without the key:\n$(cat "$T/status.json")"
[[ ! -e $T/f/tasks/1730000000000 ]] || problem "a machine without the key took in the sealed conversation"
for m in d e f; do
	unmount_convfs "$T/$m"
done
check_log "$T/d.db.log" "$ALLOWED"
check_log "$T/e.db.log" "$ALLOWED"
check_log "$T/f.db.log" "$ALLOWED|sealed with a key|sync: stopped \\(see the line above\\)|not taken in before mounting \\(see above\\)"
pass
