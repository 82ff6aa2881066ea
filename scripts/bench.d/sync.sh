# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scripts/bench.d/sync.sh: the rows of one history across machines
# (-o sync, docs/SYNC.md), sourced by scripts/bench. A PostgreSQL cluster of
# Debian's postgresql package, made in the bench's temp dir and started on
# a private socket (as tests/integration/sync.sh does; left out, with a
# note, where it is missing). Then:
#
#   sync_enable   a copy of the imported store mounted with -o sync: the
#                 first such mount records which docs each of its commits
#                 changed and makes index elems_from
#   sync_push     the time until that mount has pushed the whole store
#   sync_catchup  a new machine: an empty store mounted with -o sync, until
#                 it is mounted (it takes in every commit first), beside
#                 `import (first mount)` of the same data: target <= 2x
#   sync_latency  a conversation saved on the first read on the new
#                 machine (5 times)
#   and a side "sync" for the 20 MB saves and the >> appends: the same
#   workloads on the first mount (-o sync on, its pushes going on), beside
#   convfs without sync: target <= 1.1x.

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
SYNC_ON=0
SYNC_PGD=$T/pg
CS=$T/mnt-sync   # the imported store's copy, syncing
CK=$T/mnt-catch  # a new machine
CSPID= CKPID= SYNC_PG_UP=0

sync_q() { psql -h "$SYNC_PGD" -p "$SYNC_PORT" -U convfs -X -q -t -A "$@"; }

sync_pg()
{
	local as=()
	[[ $(id -u) != 0 ]] || as=(runuser -u postgres --)
	"${as[@]}" "$PGBIN/pg_ctl" -D "$SYNC_PGD/data" -l "$SYNC_PGD/log" -w -t 60 \
		-o "-k $SYNC_PGD -p $SYNC_PORT -c listen_addresses= -c fsync=off" "$@" >/dev/null
}

# sync_mount DIR STORE PIDVAR: convfs -f with -o sync on DIR; PIDVAR gets its pid.
sync_mount()
{
	"$convfs" -f -o "store=$2" -o "sync=$SYNC_CONN" "$1" >>"$T/sync.log" 2>&1 </dev/null &
	printf -v "$3" '%s' "$!"
	until mountpoint -q "$1"; do
		kill -0 "${!3}" 2>/dev/null || die "convfs -o sync exited before mounting $1 (see $T/sync.log)"
		sleep 0.02
	done
}

sync_unmount()
{
	local i
	for ((i = 0; i < 40; i++)); do
		fusermount3 -u "$1" 2>/dev/null && break
		sleep 0.25
	done
	wait_gone "$2" 60 || die "convfs on $1 still runs 60 s after unmounting"
	wait "$2" 2>/dev/null || true
}

# Everything before the workloads: the cluster, the enabling, the push, the catch-up, the latency.
sync_setup()
{
	local t0 t1 entries head i k as=()
	if [[ ! -x $PGBIN/initdb ]] || ! command -v psql >/dev/null; then
		note "the sync rows are left out: PostgreSQL's server ($PGBIN/initdb, Debian's postgresql) is missing"
		return 0
	fi
	mkdir -p "$SYNC_PGD"
	if [[ $(id -u) == 0 ]]; then
		chmod 711 "$T"
		chown postgres "$SYNC_PGD"
		as=(runuser -u postgres --)
	fi
	SYNC_PORT=$((20000 + RANDOM % 30000))
	"${as[@]}" "$PGBIN/initdb" -D "$SYNC_PGD/data" -A trust -U convfs --no-sync -E UTF8 >"$T/initdb.log" 2>&1 ||
		die "initdb failed (see $T/initdb.log)"
	sync_pg start || die "PostgreSQL does not start (see $SYNC_PGD/log)"
	SYNC_PG_UP=1
	sync_q -d postgres -c 'CREATE DATABASE bench'
	SYNC_CONN="host=$SYNC_PGD port=$SYNC_PORT user=convfs dbname=bench"
	cp "$STORE" "$T/sync.db"
	cp -a "$STORE.files" "$T/sync.db.files"
	mkdir -p "$CS" "$CK"
	say "sync: the imported store's copy, mounted with -o sync, pushes all of it"
	t0=$(now_us)
	sync_mount "$CS" "$T/sync.db" CSPID
	t1=$(now_us)
	record sync_enable convfs "$(((t1 - t0) / 1000))"
	entries=$(sqlite3 "$T/sync.db" 'SELECT count(DISTINCT rev) FROM sync_touch')
	for ((i = 0; ; i++)); do
		head=$(sync_q -d bench -c 'SELECT seq FROM convfs.head')
		((head >= entries)) && break
		((i < 12000)) || die "the sync pushed $head of $entries commits in 20 minutes"
		sleep 0.1
	done
	record sync_push convfs "$((($(now_us) - t1) / 1000))"
	note "the sync's log holds $entries commits in $(sync_q -d bench -c "SELECT pg_size_pretty(pg_database_size('bench'))") in PostgreSQL"
	say "sync: a new machine takes in all of it before it mounts"
	drop_caches_if_can
	t0=$(now_us)
	sync_mount "$CK" "$T/catch.db" CKPID
	t1=$(now_us)
	record sync_catchup convfs "$(((t1 - t0) / 1000))"
	cmp -s "$CS/state/taskHistory.json" "$CK/state/taskHistory.json" ||
		warn "after the catch-up, the new machine's state/taskHistory.json differs from the first's"
	(($(find "$CK/tasks" -mindepth 1 -maxdepth 1 | wc -l) == $(find "$CS/tasks" -mindepth 1 -maxdepth 1 | wc -l))) ||
		warn "after the catch-up, the new machine has another number of tasks than the first"
	say "sync: a save on one machine read on the other (5 times)"
	for ((k = 1; k <= 5; k++)); do
		mkdir -p "$CS/tasks/190000000000$k"
		printf '[{"ts":%d,"type":"say","say":"text","text":"latency %d"}]' "$k" "$k" >"$T/lat.json"
		t0=$(now_us)
		cp "$T/lat.json" "$CS/tasks/190000000000$k/ui_messages.json"
		for ((i = 0; i < 1000; i++)); do
			cmp -s "$T/lat.json" "$CK/tasks/190000000000$k/ui_messages.json" 2>/dev/null && break
			sleep 0.005
		done
		record sync_latency convfs "$((($(now_us) - t0) / 1000))"
	done
	sync_unmount "$CK" "$CKPID"
	CKPID=
	SYNC_ON=1
}

# After the workloads (and at any exit): the syncing mount and the cluster go.
sync_teardown()
{
	[[ -z $CKPID ]] || sync_unmount "$CK" "$CKPID"
	[[ -z $CSPID ]] || sync_unmount "$CS" "$CSPID"
	CKPID= CSPID=
	((!SYNC_PG_UP)) || sync_pg -m fast stop || true
	SYNC_PG_UP=0
}

# At any exit of the bench (its cleanup, after the mounts were let go): what is left goes, whatever happens.
sync_cleanup()
{
	local p
	for p in $CKPID $CSPID; do
		wait_gone "$p" 20 || kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	CKPID= CSPID=
	((!SYNC_PG_UP)) || sync_pg -m immediate stop 2>/dev/null
	SYNC_PG_UP=0
}
