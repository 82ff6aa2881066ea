#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# self_contained.sh: a fresh clone tests itself. Nothing in the repository
# may name a path outside it: no folder beside the checkout (`../shared`, in
# shell or in meson's `'..' / 'shared'`), no absolute path of a developer's
# machine (/work/..., /root/..., /home/<someone>/...). The home folders the
# fixtures were written in (/home/dev, see tests/fixtures/README.md) and the
# examples of the docs (/home/alice, /home/u, and /home/vscode, the user of
# a devcontainer's image) are the only ones allowed.
# Also: every fixture the tests name is in tests/fixtures.
#
# Needs no mount. Reads the files git tracks (every file below the top when
# the tree is not a git checkout), but not the fixtures' tarballs, which hold
# what the clients wrote.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

fail=0
problem()
{
	echo "self_contained: $*" >&2
	fail=1
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
	mapfile -t files < <(find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||')
fi
((${#files[@]} > 0)) || problem "no files found below '$top'"

# What names a place outside the repository. A path is absolute when what
# comes before its slash cannot be part of a name or a variable ("$T/work/x"
# is a temp dir's, "/work/x" is a machine's).
outside='\.\./+shared|'"'"'\.\.'"'"' */ *'"'"'shared'"'"'|(^|[^A-Za-z0-9_.}$-])/(work|root)/|(^|[^A-Za-z0-9_.}$-])/home/[A-Za-z0-9_.-]+'
allowed_homes='/home/(dev|alice|u|vscode)([^A-Za-z0-9_.-]|$)'

for f in "${files[@]}"; do
	[[ -f $f ]] || continue
	case $f in
	tests/fixtures/*.tar.gz) continue ;;      # what the clients wrote
	tests/integration/self_contained.sh) continue ;; # names the patterns
	esac
	while IFS= read -r hit; do
		line=${hit#*:}
		rest=$(sed -E "s#$allowed_homes##g" <<<"$line")
		grep -qE "$outside" <<<"$rest" || continue
		problem "'$f' line ${hit%%:*} names a path outside the repository: $(cut -c1-160 <<<"$line")"
	done < <(grep -nIE "$outside" "$f" 2>/dev/null || true)
done

# Every fixture lib.sh can name is here.
for name in cline-cli-1.0.10-globalStorage cline-cli-2.18.0-globalStorage cline-cli-3.0.65-data cline-damaged-globalStorage; do
	[[ -f tests/fixtures/$name.tar.gz ]] || problem "fixture 'tests/fixtures/$name.tar.gz' is missing"
done
[[ -f tests/fixtures/README.md ]] || problem "'tests/fixtures/README.md' is missing"

((fail == 0)) || exit 1
echo "self_contained: ${#files[@]} files, none names a path outside the repository"
