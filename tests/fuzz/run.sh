#!/usr/bin/env bash
# Runs one libFuzzer target of tests/fuzz for a while and fails on anything it
# finds (a crash, a broken invariant, a leak, a timeout, excess memory).
#
#   run.sh FUZZER NAME [SECONDS]
#
# NAME is json, merge or search (which seeds to build). FUZZ_SECONDS overrides
# SECONDS (default 60). FIXTURES is the fixtures folder (default
# tests/fixtures); a missing fixture is a failure.
# FUZZ_CORPUS=DIR keeps the corpus in DIR/NAME, to grow it across runs
# (default: a fresh temp dir). FUZZ_JOBS=N runs N fuzzing processes at once (default 1).
# Extra arguments after SECONDS go to libFuzzer as they are.
#
# Everything goes to a temp dir: the seeds, the corpus, libFuzzer's log and
# any crash-*, leak-*, timeout-* or oom-* input. It is removed after a clean
# run and kept after a failure, whose output says where and how to reproduce.
set -euo pipefail

fuzzer=$(realpath "$1")
name=$2
secs=${FUZZ_SECONDS:-${3:-60}}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")" && pwd)
fixtures=${FIXTURES:-$here/../fixtures}
jobs=${FUZZ_JOBS:-1}

work=$(mktemp -d "${TMPDIR:-/tmp}/convfs-fuzz-$name.XXXXXX")
keep=1
cleanup() { [ "$keep" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

bash "$here/seed.sh" "$name" "$fixtures" "$work/seeds"
corpus=$work/corpus
[ -z "${FUZZ_CORPUS:-}" ] || corpus=$FUZZ_CORPUS/$name
mkdir -p "$corpus" "$work/artifacts"

# Leaks are failures; UBSan's findings stop the run (the code is built with
# -fno-sanitize-recover=undefined as well).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

args=(-max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10
      -dict="$here/json.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@")
if [ "$jobs" -gt 1 ]; then
	args+=(-fork="$jobs" -ignore_crashes=0)
fi

echo "fuzz-$name: $secs s, $(find "$work/seeds" -type f | wc -l) seeds, work dir $work"
rc=0
"$fuzzer" "${args[@]}" "$corpus" "$work/seeds" >"$work/fuzz.log" 2>&1 || rc=$?

found=$(find "$work/artifacts" -type f | sort)
if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
	grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|stat::)' "$work/fuzz.log" || tail -n 5 "$work/fuzz.log"
	echo "fuzz-$name: no findings"
	keep=${FUZZ_KEEP:-0}
	exit 0
fi

# What went wrong: libFuzzer's report (from its first error line), then each input.
echo "fuzz-$name: FAILED (exit $rc); log $work/fuzz.log"
if [ -n "$found" ]; then
	awk '/^==[0-9]+==|invariant broken|runtime error|^SUMMARY|deadly signal|ERROR: libFuzzer/ { p = 1 } p' \
		"$work/fuzz.log" | head -n 150
else
	tail -n 40 "$work/fuzz.log"
fi
for f in $found; do
	echo "--- $f ($(stat -c %s "$f") bytes), first 512 as hex:"
	od -A d -t x1z -v "$f" | head -n 32
	echo "reproduce: $fuzzer $f"
done
exit 1
