# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# pg.sh: a PostgreSQL cluster of the test's own, for the tests of one
# history across machines (sync.sh, real_clients.sh's sync part). Sourced
# after lib.sh. Debian's postgresql package (installed if missing, as
# real_clients.sh installs strace); the cluster is made in $T/pg and
# started as an unprivileged user (postgres when the test runs as root),
# on a private socket and a free port, trust authentication, role convfs.
#
#   pg_setup      makes and starts it; skips (77) where it cannot, but under
#                 CI=true fails; PostgreSQL goes at the test's end
#   pg_start, pg_stop   the cluster started or stopped again (a cut)
#   q ARGS...     psql on it (-d DATABASE ...), unaligned, tuples only
#   pg_conn DB    the CONNINFO of database DB
#   pg_settled DB MOUNT...   waits until each mount is connected, has pushed
#                 everything and has every entry of DB's log

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGD=$T/pg

pg_skip()
{
	if [[ ${CI:-} == true ]]; then
		fail "$* (CI=true: not skipped)"
	fi
	say "SKIP: $*"
	exit 77
}

pg_start()
{
	"${PG_AS[@]}" "$PGBIN/pg_ctl" -D "$PGD/data" -l "$PGD/log" -w -t 30 \
		-o "-k $PGD -p $PG_PORT -c listen_addresses= -c fsync=off" start >/dev/null ||
		fail "PostgreSQL does not start:\n$(tail -n 20 "$PGD/log")"
}

pg_stop()
{
	"${PG_AS[@]}" "$PGBIN/pg_ctl" -D "$PGD/data" -m fast -w -t 30 stop >/dev/null
}

q() { psql -h "$PGD" -p "$PG_PORT" -U convfs -X -q -t -A "$@"; }

pg_conn() { echo "host=$PGD port=$PG_PORT user=convfs dbname=$1"; }

pg_setup()
{
	local i
	if [[ ! -x $PGBIN/initdb ]]; then
		say "PostgreSQL's server is missing; installing Debian's postgresql"
		local sudo=
		[[ $(id -u) == 0 ]] || sudo=sudo
		{ DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql ||
			{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
				--no-install-recommends postgresql; }; } >/dev/null 2>&1 || true
	fi
	[[ -x $PGBIN/initdb ]] || pg_skip "PostgreSQL's server ($PGBIN/initdb) is missing and could not be installed"
	command -v psql >/dev/null || pg_skip "psql is missing"
	PG_AS=()
	if [[ $(id -u) == 0 ]]; then
		id postgres >/dev/null 2>&1 || pg_skip "no user postgres to run the cluster as"
		PG_AS=(runuser -u postgres --)
		chmod 711 "$T" # the cluster's folder below it is postgres's own
	fi
	mkdir -p "$PGD"
	[[ $(id -u) != 0 ]] || chown postgres "$PGD"
	for ((i = 0; i < 50; i++)); do
		PG_PORT=$((20000 + RANDOM % 30000))
		[[ -z $(ss -Hltn "sport = :$PG_PORT" 2>/dev/null) && ! -e $PGD/.s.PGSQL.$PG_PORT ]] && break
	done
	"${PG_AS[@]}" "$PGBIN/initdb" -D "$PGD/data" -A trust -U convfs --no-sync -E UTF8 >"$T/initdb.log" 2>&1 ||
		fail "initdb failed:\n$(tail -n 20 "$T/initdb.log")"
	pg_start
	PG_UP=1
}

# At the test's end, PostgreSQL goes (then lib.sh's cleanup, or the test's own trap's).
pg_teardown()
{
	((${PG_UP:-0})) && pg_stop 2>/dev/null
	PG_UP=0
	return 0
}

pg_settled()
{
	local db=$1 m head ok end=$((SECONDS + 60 * SLOW))
	shift
	while ((SECONDS < end)); do
		head=$(q -d "$db" -c 'SELECT seq FROM convfs.head')
		ok=1
		for m in "$@"; do
			"$CONVFS" status --json "$m" >"$T/status.json" 2>/dev/null || true
			jq -e --argjson head "$head" '.sync.connected and .sync.waiting == 0 and .sync.pulled == $head' \
				"$T/status.json" >/dev/null || { ok=0; break; }
		done
		((ok)) && return 0
		sleep 0.1
	done
	fail "the machines did not settle in $((60 * SLOW)) s; log head $head; $m says:\n$(cat "$T/status.json")"
}
