#!/usr/bin/env bash
# Builds the seed corpus of a fuzz target in OUT from the fixtures (real
# Cline folders, extracted to a temp dir and removed again; nothing of them is
# kept in the repository) and the hand-written seeds beside this script.
#
#   seed.sh json|merge|search FIXTURES_DIR OUT
#
# json:  every JSON file of the fixtures (the torn ui_messages.json too), each
#        array doc also compact and pretty-printed, and each element alone;
#        plus seeds/json/*.
# merge: inputs of fuzz_merge.c (a mode byte, then base, head and new
#        separated by NUL bytes) for each conversation file of the fixtures:
#        identical versions, appends racing appends and truncations, items
#        changed on both sides, no base, a writer's own merged base, and the
#        same file from two fixtures; plus the rows of seeds/merge.tsv.
# search: inputs of fuzz_search.c (a mode byte, then a message or a query):
#        every message of the fixtures' conversations (byte 1), each also
#        cut in half; and the queries of seeds/search/queries.txt (byte 0).
set -euo pipefail

name=$1 fixtures=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/convfs-seed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

shopt -s nullglob
tars=("$fixtures"/*.tar.gz)
if [ ${#tars[@]} -eq 0 ]; then
	echo "seed.sh: no fixtures (*.tar.gz) in '$fixtures'" >&2
	exit 1
fi
mkdir -p "$tmp/x" "$out"
for t in "${tars[@]}"; do
	tar -xzf "$t" -C "$tmp/x"
done
mapfile -t files < <(find "$tmp/x" -name '*.json' -not -path '*/.git/*' -size -64k | sort)

# A name for a seed from a fixture path: its fixture folder and the path in it.
seed_name() {
	local rel=${1#"$tmp/x/"}
	echo "${rel//\//_}"
}

if [ "$name" = json ]; then
	for f in "${files[@]}"; do
		n=$(seed_name "$f")
		cp "$f" "$out/$n"
		jq -e 'type == "array"' "$f" >/dev/null 2>&1 || continue
		jq -c . "$f" >"$out/$n.compact"
		jq . "$f" >"$out/$n.pretty"
		i=0
		while IFS= read -r line; do
			printf '%s' "$line" >"$out/$n.$i"
			i=$((i + 1))
		done < <(jq -c '.[]' "$f")
	done
	cp "$here"/seeds/json/* "$out/"
	exit 0
fi
if [ "$name" = search ]; then
	i=0
	for f in "${files[@]}"; do
		case $f in
		*/ui_messages.json | */api_conversation_history.json) filter='.[]' ;;
		*.messages.json) filter='.messages[]' ;;
		*) continue ;;
		esac
		while IFS= read -r line; do
			printf '\x01%s' "$line" >"$out/message-$i"
			printf '\x01%s' "${line:0:$((${#line} / 2))}" >"$out/message-$i.cut"
			i=$((i + 1))
		done < <(jq -c "$filter" "$f" 2>/dev/null || true)
	done
	i=0
	while IFS= read -r line; do
		printf '\x00%s' "$line" >"$out/query-$i"
		i=$((i + 1))
	done <"$here/seeds/search/queries.txt"
	exit 0
fi
[ "$name" = merge ] || { echo "seed.sh: unknown target '$name'" >&2; exit 1; }

# The mode byte of fuzz_merge.c.
HISTORY=0 MESSAGES=1 METADATA=2 BASE=4 READ=8 EXPLICIT=16

# seed MODE BASE HEAD NEW NAME: one input from three files.
seed() {
	{
		printf "\\x$(printf %02x "$1")"
		cat "$2"
		printf '\0'
		cat "$3"
		printf '\0'
		cat "$4"
	} >"$out/$5"
}

# v FILE NAME JQ: a variant of FILE made by a jq filter, compact like Cline's arrays.
v() {
	jq -c "$3" "$1" >"$tmp/$2"
	echo "$tmp/$2"
}

for f in "${files[@]}"; do
	n=$(seed_name "$f")
	case $f in
	*/state/taskHistory.json) kind=$HISTORY ;;
	*/ui_messages.json | */api_conversation_history.json) kind=$MESSAGES ;;
	*/task_metadata.json) kind=$METADATA ;;
	*) continue ;;
	esac
	jq -e . "$f" >/dev/null 2>&1 || continue # the torn file: not something the store merges
	if [ "$kind" = "$METADATA" ]; then
		m=$((METADATA | BASE))
		mine=$(v "$f" mine '.files_in_context += [{"path": "new.txt", "record_state": "active"}] | .extra = 1')
		theirs=$(v "$f" theirs '.model_usage += [{"ts": 1, "model_id": "other"}] | .extra = 2')
		seed $m "$f" "$f" "$f" "$n.same"
		seed $m "$f" "$theirs" "$mine" "$n.both"
		seed $METADATA "$f" "$theirs" "$mine" "$n.nobase"
		seed $m "$f" "$f" "$mine" "$n.mine"
		continue
	fi
	m=$((kind | BASE | READ))
	all=$(v "$f" all .)
	init=$(v "$f" init '.[0:-1]')
	half=$(v "$f" half '.[0:(length / 2 | floor)]')
	edited=$(v "$f" edited 'if length > 0 then .[-1] += {"fuzzEdit": true} else . end')
	other=$(v "$f" other 'if length > 0 then .[-1] += {"fuzzOther": 1} else . end')
	appended=$(v "$f" appended '. + [.[-1] + {"ts": 9999999999999, "id": "9999999999999"}]')
	seed $m "$f" "$f" "$f" "$n.same"
	seed $m "$init" "$all" "$edited" "$n.append-append"
	seed $m "$all" "$appended" "$half" "$n.truncate-append"
	seed $m "$init" "$half" "$appended" "$n.append-truncate"
	seed $m "$f" "$other" "$edited" "$n.both-changed"
	seed $((m | EXPLICIT)) "$f" "$other" "$edited" "$n.explicit"
	seed $kind "$f" "$all" "$init" "$n.nobase"
	# The same file in another fixture: another window's version of it.
	rel=${f#"$tmp/x/"*/}
	for g in "$tmp"/x/*/"$rel"; do
		[ "$g" != "$f" ] && jq -e . "$g" >/dev/null 2>&1 || continue
		seed $m "$f" "$g" "$appended" "$n.other-$(seed_name "$g" | cut -d_ -f1)"
	done
done

# Hand-written rows: mode<TAB>base<TAB>head<TAB>new (docs/MERGE.md's tables and more).
i=0
tab=$'\t'
while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	# Split by hand: read would merge the empty fields (a tab is white space to it).
	mode=${line%%"$tab"*} line=${line#*"$tab"}
	b=${line%%"$tab"*} line=${line#*"$tab"}
	h=${line%%"$tab"*} nw=${line#*"$tab"}
	{
		printf "\\x$(printf %02x "$((mode))")"
		printf '%s\0%s\0%s' "$b" "$h" "$nw"
	} >"$out/hand-$i"
	i=$((i + 1))
done <"$here/seeds/merge.tsv"
