#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# install.sh: `meson install` puts the binary, the man page and the systemd
# user unit where they belong under the prefix (into a --destdir, as a
# packager does); the man page renders without a groff or man warning, has
# its sections, names every option of `convfs --help` and has an entry for
# every errno of README.md's "What a writer can be told"; the unit passes
# `systemd-analyze verify` (as a user unit, for an instance naming a folder,
# with its programs taken from the destdir) and orders itself before the
# graphical session; the script it runs to detach a dead mount is installed in
# libexecdir. No mount: none of this needs FUSE (integration-restart runs the
# unit's commands).
#
# Environment (set by tests/integration/meson.build): BUILD_ROOT, the build
# folder; PREFIX, its prefix.
set -euo pipefail
name=install
fail() { printf '%s: FAIL: %b\n' "$name" "$*" >&2; exit 1; }
say() { printf '%s: %s\n' "$name" "$*" >&2; }
[[ -n ${BUILD_ROOT:-} && -d $BUILD_ROOT ]] || fail "BUILD_ROOT must name the build folder"
for cmd in meson groff man systemd-analyze systemd-escape; do
	command -v "$cmd" >/dev/null || fail "$cmd is missing (scripts/deps installs it)"
done
T=$(mktemp -d "${TMPDIR:-/tmp}/convfs-install.XXXXXX")
trap 'rm -rf "$T"' EXIT
D=$T/dest

say "meson install --destdir"
meson install -C "$BUILD_ROOT" --no-rebuild --destdir "$D" >"$T/install.log" 2>&1 ||
	fail "meson install failed:\n$(tail -n 20 "$T/install.log")"
bin=$D$PREFIX/bin/convfs man1=$D$PREFIX/share/man/man1/convfs.1 unit=$D$PREFIX/lib/systemd/user/convfs@.service
detach=$D$PREFIX/libexec/convfs-detach-dead
[[ -x $bin ]] || fail "no executable $bin"
[[ -x $detach ]] || fail "no executable $detach"
[[ -f $man1 ]] || fail "no man page $man1"
[[ -f $unit ]] || fail "no user unit $unit"
"$bin" --version >/dev/null || fail "the installed convfs does not run"

say "the man page"
warnings=$(groff -man -Tutf8 -ww -z "$man1" 2>&1) || fail "groff fails on the man page: $warnings"
[[ -z $warnings ]] || fail "groff warns about the man page:\n$warnings"
page=$(MANWIDTH=100 man -l "$man1" 2>"$T/man.err" | col -b)
[[ ! -s $T/man.err ]] || fail "man -l warns about the man page:\n$(cat "$T/man.err")"
for section in NAME SYNOPSIS DESCRIPTION OPTIONS COMMANDS 'MOUNTING FROM FSTAB' 'ERRORS A WRITER CAN GET' SYSTEMD \
	ENVIRONMENT FILES 'EXIT STATUS'; do
	grep -q "^$section" <<<"$page" || fail "the man page has no $section section"
done
# Every option and errno the daemon documents elsewhere is in it.
mapfile -t opts < <("$bin" --help 2>&1 | sed -n -E 's/^  (-o [a-z_]+|-[a-zA-Z](, --[a-z]+)?).*/\1/p' | sed -E 's/^-o //; s/, /\n/' )
((${#opts[@]} >= 5)) || fail "cannot read the options from convfs --help"
for opt in "${opts[@]}"; do
	grep -q -F -- "$opt" <<<"$page" || fail "the man page does not mention $opt (convfs --help has it)"
done
# And every errno README.md's "What a writer can be told" names.
readme=$(dirname "$0")/../../README.md
mapfile -t errnos < <(sed -n '/^What a writer can be told/,/^## /p' "$readme" | grep -o -E '\bE[A-Z]{3,}\b' | sort -u)
((${#errnos[@]} >= 8)) || fail "cannot read the errnos of README.md's \"What a writer can be told\""
for e in "${errnos[@]}" EINVAL EPERM EACCES EROFS EXDEV ENAMETOOLONG EOPNOTSUPP ENOSPC EBUSY EIO ENOTCONN ECONNABORTED; do
	grep -q "^ *$e\b" <<<"$page" || fail "the man page has no entry for $e"
done

say "the user unit"
grep -q "^ExecStart=$PREFIX/bin/convfs %f$" "$unit" || fail "the unit does not start $PREFIX/bin/convfs:\n$(grep Exec "$unit")"
for key in ExecStartPre ExecStopPost; do
	grep -q "^$key=$PREFIX/libexec/convfs-detach-dead %f$" "$unit" ||
		fail "the unit's $key does not run $PREFIX/libexec/convfs-detach-dead:\n$(grep Exec "$unit")"
done
grep -q '^Before=graphical-session-pre.target$' "$unit" || fail "the unit is not ordered before graphical-session-pre.target"
mkdir -p "$T/units" "$T/run" "$T/folder"
chmod 700 "$T/run"
inst=$(systemd-escape --path "$T/folder")
# Every program of the prefix taken from the --destdir, as if installed.
sed -E "s|^(Exec[A-Za-z]*=-?)$PREFIX/|\1$D$PREFIX/|" "$unit" >"$T/units/convfs@$inst.service"
out=$(MANPATH=$D$PREFIX/share/man XDG_RUNTIME_DIR=$T/run systemd-analyze verify --user "$T/units/convfs@$inst.service" 2>&1) ||
	fail "systemd-analyze verify rejects the unit:\n$out"
[[ -z $out ]] || fail "systemd-analyze verify warns about the unit:\n$out"
printf '%s: PASS\n' "$name" >&2
