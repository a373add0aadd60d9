#!/usr/bin/env bash
# tools/check_layers.sh [ROOT] -- fails on any include that reaches up or
# sideways between Straum's layers (SPEC.md §2).
#
# The table is cmake/layers.txt, the same one the build reads to give each
# target its include directory. A file of layer L may include:
#   - any header of L's own folder;
#   - a front door of a layer L stands on;
# tests (tests/ outside tests/kit) may include anything of the product and of
# tests/, never bench/; no product file includes tests/ (but bench/, the
# kit); no include climbs with "..". System headers (<...>) are not checked.
#
# Prints one line per offending include (file:line: what, and why) and exits
# 1 if there is any, 0 otherwise.
set -euo pipefail

ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
TABLE=$ROOT/cmake/layers.txt
[[ -r $TABLE ]] || { echo "check_layers: no layer table at $TABLE" >&2; exit 2; }

declare -A DIR BELOW DOORS
LAYERS=()
while read -r name dir below doors _; do
  [[ -z $name || $name == \#* ]] && continue
  LAYERS+=("$name")
  DIR[$name]=$dir
  BELOW[$name]=${below//,/ }
  [[ ${BELOW[$name]} == - ]] && BELOW[$name]=""
  DOORS[$name]=${doors//,/ }
  [[ ${DOORS[$name]} == - ]] && DOORS[$name]=""
done <"$TABLE"

# The layer a path (relative to ROOT) belongs to; the longest folder wins
# (tests/kit over tests). Empty when none.
layer_of() {
  local path=$1 best="" bestlen=0 l d
  for l in "${LAYERS[@]}"; do
    d=${DIR[$l]}
    if [[ $path == "$d"/* && ${#d} -gt $bestlen ]]; then
      best=$l
      bestlen=${#d}
    fi
  done
  printf '%s' "$best"
}

# Whether an included path is a front door of layer l (doors may be globs).
is_door() {
  local inc=$1 l=$2 pattern
  for pattern in ${DOORS[$l]}; do
    # shellcheck disable=SC2053 # the door is a glob on purpose
    [[ $inc == $pattern ]] && return 0
  done
  return 1
}

bad=0
report() {
  printf '%s\n' "$1"
  bad=1
}

check_file() {
  local file=$1 rel=${1#"$ROOT"/} layer n line inc target below ok
  layer=$(layer_of "$rel")
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] || continue
    inc=${BASH_REMATCH[1]}
    if [[ $inc == *..* ]]; then
      report "$rel:$n: \"$inc\" climbs with '..': include by the path from the repository root"
      continue
    fi
    [[ $inc == */* ]] || continue # a sibling by bare name: the compiler's own folder
    target=$(layer_of "$inc")
    if [[ -z $layer ]]; then
      # tests outside the kit: anything but bench/
      if [[ $target == bench ]]; then
        report "$rel:$n: \"$inc\": tests do not include bench/ (share it through tests/kit/)"
      fi
      continue
    fi
    [[ $target == "$layer" ]] && continue
    if [[ -z $target ]]; then
      if [[ $inc == tests/* ]]; then
        report "$rel:$n: \"$inc\": product code ($layer) does not include tests/"
      else
        report "$rel:$n: \"$inc\" is in no layer (cmake/layers.txt)"
      fi
      continue
    fi
    ok=0
    for below in ${BELOW[$layer]}; do
      [[ $below == "$target" ]] || continue
      if is_door "$inc" "$target"; then
        ok=1
      else
        report "$rel:$n: \"$inc\" is inside $target/, not one of its front doors (${DOORS[$target]:-none})"
        ok=2
      fi
    done
    if [[ $ok == 0 ]]; then
      report "$rel:$n: \"$inc\": $layer does not stand on $target (it stands on: ${BELOW[$layer]:-nothing})"
    fi
  done <"$file"
}

while IFS= read -r -d '' file; do
  check_file "$file"
done < <(find "$ROOT" \( -path "$ROOT/.git" -o -path "$ROOT/build*" -o -name node_modules \) -prune \
  -o -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)

exit $bad
