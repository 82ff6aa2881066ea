#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench_smoke.sh: scripts/bench --quick works. It runs the whole benchmark on
# small data (a minute or two) against $CONVFS and passes if the script exits
# 0 and prints its table with every workload in it (and libfuse's
# passthrough_ll where it runs it, and the floor on the walks). It checks that the
# benchmark works, not that convfs meets the targets (docs/BENCHMARKS.md).
#
# Environment (set by tests/integration/meson.build): CONVFS, the binary.
set -euo pipefail

name=bench_smoke
fail() { printf '%s: FAIL: %b\n' "$name" "$*" >&2; exit 1; }

[[ -n ${CONVFS:-} && -x $CONVFS ]] || fail "CONVFS must name the convfs binary (got '${CONVFS:-}')"
[[ -c /dev/fuse ]] || fail "/dev/fuse is missing: this test needs FUSE"
bench=$(cd "$(dirname "$0")/../.." && pwd)/scripts/bench
out=$(mktemp "${TMPDIR:-/tmp}/convfs-bench-smoke.XXXXXX")
trap 'rm -f "$out"' EXIT

# scripts/bench cleans up (unmounts, removes its temp dir) on SIGTERM.
rc=0
timeout -k 20 370 "$bench" --quick --convfs "$CONVFS" >"$out" || rc=$?
cat "$out"
((rc == 0)) || fail "scripts/bench --quick exited with status $rc"

grep -q -E '^\| workload +\| n +\| plain median +\| convfs median +\| convfs/plain' "$out" ||
	fail "no table header in the output"
for row in 'import \(first mount\)' 'mount ready' 'save .* temp\+rename' 'save .* in place' 'merged save' \
	'append 1 message to 10 ' 'append cost' 'git add -A' 'ls -lR' '^\| find' 'grep -r over all history, warm' \
	'rsync -a, first copy' 'rsync -a, rerun' "the list of the view's workspaces" 'stat of [0-9]+ conversation files' \
	'peak RSS'; do
	grep -q -E -- "$row" "$out" || fail "no row matching /$row/ in the table"
done
# Every timed row has a number on both sides.
missing=$(awk -F'|' '$2 ~ /^ (save|merged save|append 1|stat|git|ls|find|grep|rsync)/ && ($4 ~ /—/ || $5 ~ /—/)' "$out")
[[ -z $missing ]] || fail "workloads without a result:\n$missing"
# With libfuse's passthrough_ll (--quick runs it when libfuse3-dev's example
# builds), the rows it serves have its numbers too.
if grep -q -E '^\| workload .*\| passthrough_ll median' "$out"; then
	missing=$(awk -F'|' '$2 ~ /^ (ls -lR \(|find|grep -r over|rsync|git)/ && ($7 ~ /—/ || $8 ~ /—/)' "$out")
	[[ -z $missing ]] || fail "rows without a passthrough_ll result:\n$missing"
fi
# The floor (scripts/bench.d/floor.c) serves the walks in every run: they
# have its numbers.
col=$(awk -F'|' '/^\| workload / { for (i = 2; i <= NF; i++) if ($i ~ /^ floor median/) print i; exit }' "$out")
[[ -n $col ]] || fail "no floor column in the table"
missing=$(awk -F'|' -v c="$col" '$2 ~ /^ (ls -lR \(|find|grep -r over|rsync)/ && ($c ~ /—/ || $(c + 1) ~ /—/)' "$out")
[[ -z $missing ]] || fail "walks without a floor result:\n$missing"
if grep -q 'WARNING' "$out"; then
	fail "the benchmark reported a problem:\n$(grep WARNING "$out")"
fi
printf '%s: PASS\n' "$name" >&2
