#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# git_sqlite.sh: git and sqlite3 work on plain files in the mount.
#
# On a mount of the Cline CLI 1.0.10 fixture, it proves that
#   - the fixture's real shadow repo checkpoints/3301258620/.git reads and
#     checks clean (log, show of the checkpointed hello.txt, fsck --full);
#   - a new shadow repo made as Cline makes one (git init in
#     checkpoints/<key>/.git, core.worktree = a workspace outside the mount,
#     "initial commit", then checkpoint-<key>-<task> commits with
#     --allow-empty) takes commits; log, show, diff, reset --hard, gc and
#     fsck --full --strict all succeed and give the right content, also after
#     a remount;
#   - sqlite3 works on the fixture's locks.db and on new databases, in
#     rollback-journal and WAL mode: 1000 rows in one transaction, queries,
#     PRAGMA integrity_check = ok, a reader during a writer's transaction,
#     and the data is still there after a remount;
#   - locks.db.lock can be taken with O_EXCL as Cline 1.x does, exactly once.

. "$(dirname "$0")/lib.sh"

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME="Cline Checkpoint" GIT_AUTHOR_EMAIL=checkpoint@cline.bot
export GIT_COMMITTER_NAME="Cline Checkpoint" GIT_COMMITTER_EMAIL=checkpoint@cline.bot

M=$(fixture_extract 1.0.10 "$T/fx")
STORE=$T/store.db
mount_convfs "$M" "$STORE"

# ---- the fixture's shadow repo -------------------------------------------------

say "the fixture's shadow repo"
mkdir "$T/greeter" # stands in for its worktree, /home/dev/projects/greeter
OLD=$M/checkpoints/3301258620/.git
git --git-dir="$OLD" --work-tree="$T/greeter" fsck --full --strict --no-progress
subjects=$(git --git-dir="$OLD" --work-tree="$T/greeter" log --format=%s | tr '\n' '|')
[[ $subjects == "checkpoint-3301258620-1795306331217|checkpoint-3301258620-1795306331217|initial commit|" ]] ||
	problem "the fixture repo's log is '$subjects'"
[[ $(git --git-dir="$OLD" --work-tree="$T/greeter" show cc8d38e17cacad8d4288e7ed6cea501336453a97:hello.txt) == "Hello from fake LLM" ]] ||
	problem "the fixture's checkpoint does not show hello.txt"

# ---- a new shadow repo, as Cline makes it -----------------------------------

say "a new shadow repo"
WS=$T/projects/webapp
mkdir -p "$WS/src"
KEY=$(node -e 'let h = 0; for (const c of process.argv[1]) for (let i = 0; i < c.length; i++) h = (h * 31 + c.charCodeAt(i)) >>> 0; console.log(h)' "$WS")
TASK=1795306331999
GIT_DIR_=$M/checkpoints/$KEY/.git
g() { git --git-dir="$GIT_DIR_" --work-tree="$WS" "$@"; }

mkdir -p "$M/checkpoints/$KEY"
git --git-dir="$GIT_DIR_" init -q
git --git-dir="$GIT_DIR_" config core.worktree "$WS"
git --git-dir="$GIT_DIR_" config commit.gpgSign false
git --git-dir="$GIT_DIR_" config user.name "Cline Checkpoint"
git --git-dir="$GIT_DIR_" config user.email checkpoint@cline.bot
[[ $(git --git-dir="$GIT_DIR_" config core.worktree) == "$WS" ]] || problem "core.worktree did not stick"
printf 'node_modules/\n*.log\n' >>"$GIT_DIR_/info/exclude"

printf 'console.log("v0")\n' >"$WS/src/app.js"
printf '# webapp\n' >"$WS/README.md"
g add -A
g commit -q --allow-empty --no-verify -m "initial commit"
declare -a COMMITS=()
for i in 1 2 3 4 5; do
	printf 'console.log("v%d")\n' "$i" >"$WS/src/app.js"
	head -c $((i * 20000)) /dev/urandom | base64 >"$WS/src/data$i.txt" # some bigger blobs
	((i != 3)) || rm "$WS/README.md"
	printf 'ignored\n' >"$WS/debug.log"
	g add -A
	g commit -q --allow-empty --no-verify -m "checkpoint-$KEY-$TASK"
	COMMITS+=("$(g rev-parse HEAD)")
	cp "$WS/src/app.js" "$T/app.js.$i"
	cp "$WS/src/data$i.txt" "$T/data$i.txt"
done
g commit -q --allow-empty --no-verify -m "checkpoint-$KEY-$TASK" # nothing changed: still a checkpoint

# check_repo: log, show, ls-tree, fsck give what was committed.
check_repo()
{
	local what=$1 n i
	n=$(g log --format=%s | grep -c "^checkpoint-$KEY-$TASK\$" || true)
	((n == 6)) || problem "$what: $n checkpoint commits in the log, not 6"
	[[ $(g log --format=%s | tail -n 1) == "initial commit" ]] || problem "$what: the first commit is not 'initial commit'"
	for i in 1 2 3 4 5; do
		g show "${COMMITS[i - 1]}:src/app.js" >"$T/shown"
		same "$T/shown" "$T/app.js.$i" "$what: app.js of checkpoint $i"
		g show "${COMMITS[i - 1]}:src/data$i.txt" >"$T/shown"
		same "$T/shown" "$T/data$i.txt" "$what: data$i.txt of checkpoint $i"
	done
	g ls-tree -r --name-only "${COMMITS[1]}" | grep -qx README.md || problem "$what: README.md is missing from checkpoint 2"
	! g ls-tree -r --name-only "${COMMITS[3]}" | grep -qx README.md || problem "$what: README.md is in checkpoint 4"
	! g ls-tree -r --name-only HEAD | grep -q 'debug.log' || problem "$what: the excluded debug.log was committed"
	g fsck --full --strict --no-progress || problem "$what: git fsck failed"
}

check_repo "loose objects"
[[ $(g diff --name-only "${COMMITS[0]}" "${COMMITS[2]}" | tr '\n' ' ') == "README.md src/app.js src/data2.txt src/data3.txt " ]] ||
	problem "git diff between checkpoints 1 and 3: $(g diff --name-only "${COMMITS[0]}" "${COMMITS[2]}" | tr '\n' ' ')"

# Restoring a checkpoint, as Cline does: reset --hard writes the workspace.
head=$(g rev-parse HEAD)
g reset -q --hard "${COMMITS[1]}"
same "$WS/src/app.js" "$T/app.js.2" "app.js after restoring checkpoint 2"
[[ -f $WS/README.md && ! -e $WS/src/data3.txt ]] || problem "the workspace does not match checkpoint 2 after reset --hard"
g reset -q --hard "$head"

g gc -q --prune=now
[[ -n $(find "$GIT_DIR_/objects/pack" -name '*.pack') ]] || problem "git gc made no pack"
check_repo "after gc"

# ---- sqlite3 ---------------------------------------------------------------------

say "sqlite3"
# sql DB SQL...: runs sqlite3 in bail mode, failing on any error.
sql() { sqlite3 -bail -batch "$@"; }

[[ $(sql "$M/locks.db" 'PRAGMA integrity_check') == ok ]] || problem "the fixture's locks.db does not check ok"
[[ $(sql "$M/locks.db" "SELECT name FROM sqlite_master WHERE name = 'locks'") == locks ]] || problem "the fixture's locks table is missing"

# fill DB: 1000 rows in one transaction.
fill()
{
	{
		echo "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);"
		echo "BEGIN;"
		for ((i = 1; i <= 1000; i++)); do
			echo "INSERT INTO t (v) VALUES ('row $i $(printf '%0100d' "$i")');"
		done
		echo "COMMIT;"
	} | sql "$1"
}

# check_db DB WHAT: the 1000 rows are there and the database checks ok.
check_db()
{
	[[ $(sql "$1" 'SELECT count(*), sum(id) FROM t') == "1000|500500" ]] || problem "$2: wrong rows: $(sql "$1" 'SELECT count(*), sum(id) FROM t')"
	[[ $(sql "$1" "SELECT v FROM t WHERE id = 777") == "row 777 $(printf '%0100d' 777)" ]] || problem "$2: row 777 is wrong"
	[[ $(sql "$1" 'PRAGMA integrity_check') == ok ]] || problem "$2: PRAGMA integrity_check is not ok"
}

fill "$M/locks.db"
check_db "$M/locks.db" "locks.db, rollback journal"
fill "$M/settings/journal.db"
check_db "$M/settings/journal.db" "a new database, rollback journal"

[[ $(sql "$M/wal.db" 'PRAGMA journal_mode=WAL') == wal ]] || problem "journal_mode=WAL was not taken"
fill "$M/wal.db"
check_db "$M/wal.db" "a WAL database"

# A reader during a writer's open transaction sees the last commit.
coproc WRITER { sqlite3 -bail -batch "$M/wal.db"; }
writer_pid=$WRITER_PID # bash unsets WRITER_PID once the coprocess ends
printf 'BEGIN IMMEDIATE;\nINSERT INTO t (v) VALUES (%s);\nSELECT %s;\n' "'uncommitted'" "'inside'" >&"${WRITER[1]}"
read -r -t 10 line <&"${WRITER[0]}" || fail "the WAL writer did not answer"
[[ $line == inside ]] || fail "the WAL writer said '$line'"
[[ $(sql "$M/wal.db" 'SELECT count(*) FROM t') == 1000 ]] || problem "a WAL reader saw an uncommitted row"
printf 'ROLLBACK;\n.quit\n' >&"${WRITER[1]}"
wait "$writer_pid" || problem "the WAL writer failed"

# Cline 1.x takes locks.db.lock with O_EXCL.
(set -C && : >"$M/locks.db.lock") || problem "cannot create locks.db.lock with O_EXCL"
! (set -C && : >"$M/locks.db.lock") 2>/dev/null || problem "locks.db.lock was created twice with O_EXCL"
rm "$M/locks.db.lock"

# ---- everything survives a remount -----------------------------------------------

unmount_convfs "$M"
mount_convfs "$M" "$STORE"
say "after remount"
check_repo "after remount"
git --git-dir="$OLD" --work-tree="$T/greeter" fsck --full --strict --no-progress || problem "the fixture repo does not fsck after remounting"
check_db "$M/locks.db" "locks.db after remount"
check_db "$M/wal.db" "the WAL database after remount"
unmount_convfs "$M"

check_log "$STORE.log"
pass
