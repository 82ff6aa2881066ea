#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fixtures_rerun.sh: scripts/make-fixtures makes the fixtures that are
# committed. It runs the real Cline CLIs again (into the test's temp dir, not
# over tests/fixtures) and compares each new tarball with the committed one:
#   - the same entries, each with the same type and mode;
#   - each file the same: text byte for byte once the times on the fixtures'
#     clocks and git object ids are masked on both sides (make-fixtures.d/
#     normalise.js mask; two events that fall in one millisecond in one run
#     and in two in another shift the ranks of the times after them, so times
#     cannot be promised byte for byte); a SQLite database by its dump, masked
#     the same way, and its page size and journal mode;
#   - each git repository passes `git fsck --full --strict` and has the same
#     commits (tree, parents, author, committer, message with times masked, in
#     order), the same other objects and the same index entries.
# A time of the run that the normaliser missed is not on a fixture's clock,
# so it is not masked and fails the comparison.
#
# Environment (besides lib.sh's):
#   CONVFS_CLIENT_CACHE  where the CLIs are installed (default ~/.cache/convfs/clients)
#   CI=true              a reason to skip (no npm registry, node < 20, no
#                        namespaces) fails
# Outside CI it skips (exit 77) without node >= 20, without namespaces (not
# root and no user namespaces) or, when a CLI is not yet in the cache, without
# the npm registry.

# lib.sh's watchdog: meson gives 420 s (see meson.build); run alone, as long.
: "${TEST_TIMEOUT:=360}"
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/real_clients/drive.sh"

TOP=$(cd "$TESTS_DIR/../.." && pwd)
NORMALISE=$TOP/scripts/make-fixtures.d/normalise.js
export CONVFS_CLIENT_CACHE=${CONVFS_CLIENT_CACHE:-$HOME/.cache/convfs/clients}
TARBALLS=(cline-cli-2.18.0-globalStorage cline-cli-1.0.10-globalStorage cline-cli-3.0.65-data cline-damaged-globalStorage)

clients_preconditions
ns=(unshare --mount --net --pid --fork --mount-proc --uts)
[[ $(id -u) == 0 ]] || ns+=(--map-root-user)
"${ns[@]}" true 2>/dev/null || skip "no namespaces for make-fixtures ('${ns[*]} true' fails)"
for v in 1.0.10 2.18.0 3.0.65; do
	[[ -f $CONVFS_CLIENT_CACHE/$v/.installed ]] && continue
	timeout 60 npm ping >/dev/null 2>&1 || skip "the npm registry cannot be reached (npm ping failed) to install cline@$v"
	break
done

# ---- make them again ----------------------------------------------------------------

say "scripts/make-fixtures -o $T/new (with the CLIs in $CONVFS_CLIENT_CACHE)"
t=$SECONDS
"$TOP/scripts/make-fixtures" -o "$T/new" 2>"$T/make.err" &
MF=$!
# (A TERM from the watchdog reaches the test while it waits; make-fixtures
# then stops its clients and removes its work folder.)
trap 'kill -TERM "$MF" 2>/dev/null; wait "$MF" 2>/dev/null; cleanup' EXIT
rc=0
wait "$MF" || rc=$?
trap cleanup EXIT
((rc == 0)) || fail "scripts/make-fixtures failed (status $rc):\n$(tail -n 20 "$T/make.err")"
say "make-fixtures took $((SECONDS - t)) s"

# ---- compare ------------------------------------------------------------------------

# masked FILE: FILE with the fixtures' times and git ids masked.
masked() { node "$NORMALISE" mask "$1"; }

is_sqlite() { [[ $(head -c 15 "$1") == "SQLite format 3" ]]; }

# db_text DB: what a database holds, to compare: its dump and two pragmas.
db_text()
{
	sqlite3 -batch "$1" 'PRAGMA page_size; PRAGMA journal_mode;'
	sqlite3 -batch "$1" .dump
}

# repo_text GITDIR: what a repository holds, to compare (times and commit ids
# masked below): its commits, parents first, its other objects, its index.
repo_text()
{
	local wt=$T/empty-worktree
	mkdir -p "$wt"
	# (core.worktree names the client's workspace, which is not here.)
	git --git-dir="$1" --work-tree="$wt" log --all --reverse --topo-order \
		--format='commit tree %T parents %P%nauthor %an <%ae> %ad%ncommitter %cn <%ce> %cd%n%B' --date=raw
	git --git-dir="$1" --work-tree="$wt" cat-file --batch-all-objects --batch-check >"$T/objects"
	awk '$2 != "commit"' "$T/objects"
	awk '$2 == "commit" { n++ } END { print "commits: " n + 0 }' "$T/objects"
	git --git-dir="$1" --work-tree="$wt" ls-files --stage
}

# compare NAME: the committed tarball NAME against the new one.
compare()
{
	local name=$1 a=$T/old/$1 b=$T/new-x/$1 i n=0 g pa pb
	mkdir -p "$a" "$b"
	tar -xzf "$FIXTURES/$name.tar.gz" -C "$a"
	tar -xzf "$T/new/$name.tar.gz" -C "$b"
	if cmp -s "$FIXTURES/$name.tar.gz" "$T/new/$name.tar.gz"; then
		say "$name: byte for byte the same tarball"
	fi
	# Entries in name order: ids keep their order, so the n-th of each side
	# is the same entry (loose git objects, named by what they hold, and
	# their folders are compared as repositories).
	local -a la lb
	mapfile -t la < <(cd "$a" && find . -path '*/.git/objects/??' -prune -o -printf '%P\n' | LC_ALL=C sort)
	mapfile -t lb < <(cd "$b" && find . -path '*/.git/objects/??' -prune -o -printf '%P\n' | LC_ALL=C sort)
	((${#la[@]} > 1 && ${#lb[@]} > 1)) || fail "$name: cannot list the extracted folders"
	printf '%s\n' "${la[@]}" >"$T/names.a"
	printf '%s\n' "${lb[@]}" >"$T/names.b"
	masked "$T/names.a" >"$T/a.masked"
	masked "$T/names.b" >"$T/b.masked"
	if ! cmp -s "$T/a.masked" "$T/b.masked"; then
		problem "$name: the entries differ (times masked; < committed, > made again):\n$(diff "$T/a.masked" "$T/b.masked" | head -n 20 || true)"
		return 0
	fi
	for ((i = 0; i < ${#la[@]}; i++)); do
		pa=$a/${la[i]} pb=$b/${lb[i]}
		[[ $(stat -c '%F %a' "$pa") == "$(stat -c '%F %a' "$pb")" ]] ||
			problem "$name: '${la[i]}' is $(stat -c '%F %a' "$pa") committed, $(stat -c '%F %a' "$pb") made again"
		[[ -f $pa && -f $pb ]] || continue
		[[ ${la[i]} == */.git/objects/* || ${la[i]} == */.git/index ]] && continue
		n=$((n + 1))
		if is_sqlite "$pa"; then
			db_text "$pa" >"$T/a.txt"
			db_text "$pb" >"$T/b.txt"
		else
			cp "$pa" "$T/a.txt"
			cp "$pb" "$T/b.txt"
		fi
		masked "$T/a.txt" >"$T/a.masked"
		masked "$T/b.txt" >"$T/b.masked"
		cmp -s "$T/a.masked" "$T/b.masked" ||
			problem "$name: '${la[i]}' differs (times masked; < committed, > made again): $(cmp "$T/a.masked" "$T/b.masked" 2>&1 | head -n 1 || true)\n$(diff <(fold -w 120 "$T/a.masked") <(fold -w 120 "$T/b.masked") | head -n 12 || true)"
	done
	while read -r g; do
		for pa in "$a/$g" "$b/$g"; do
			git --git-dir="$pa" --work-tree="$T" fsck --full --strict --no-progress >"$T/fsck" 2>&1 ||
				problem "$name: git fsck of '${pa#"$T"/}' fails:\n$(head -n 5 "$T/fsck")"
		done
		repo_text "$a/$g" >"$T/a.txt"
		repo_text "$b/$g" >"$T/b.txt"
		masked "$T/a.txt" >"$T/a.masked"
		masked "$T/b.txt" >"$T/b.masked"
		cmp -s "$T/a.masked" "$T/b.masked" ||
			problem "$name: the git repository '$g' differs (times and ids masked; < committed, > made again):\n$(diff "$T/a.masked" "$T/b.masked" | head -n 12 || true)"
		n=$((n + 1))
	done < <(cd "$a" && find . -name .git -type d -printf '%P\n')
	say "$name: ${#la[@]} entries, $n files and repositories compared"
}

for name in "${TARBALLS[@]}"; do
	[[ -f $T/new/$name.tar.gz ]] || { problem "make-fixtures made no $name.tar.gz"; continue; }
	compare "$name"
done
pass
