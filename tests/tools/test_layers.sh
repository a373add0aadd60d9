#!/usr/bin/env bash
# test_layers: tools/check_layers.sh passes on the tree, and fails, naming
# each one, on includes planted in a scratch tree that reach up, sideways,
# past a front door, into tests/, into bench/ from tests, or around with "..".
set -euo pipefail
ROOT=$1
CHECK=$ROOT/tools/check_layers.sh

fail() { echo "test_layers: FAIL: $*" >&2; exit 1; }

"$CHECK" "$ROOT" || fail "the tree itself breaks its layers (above)"
echo "ok: the tree keeps its layers"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/cmake" "$scratch/engine" "$scratch/store" "$scratch/sql" "$scratch/tests/unit" \
  "$scratch/bench" "$scratch/tools/dump"
cp "$ROOT/cmake/layers.txt" "$scratch/cmake/"

# A clean file of each kind first: the check must not cry wolf.
printf '#include "engine/internal.h"\n#include "store/store.h"\n#include <stdio.h>\n' \
  >"$scratch/engine/good.c"
printf '#include "tests/kit/pgtmp.h"\n#include "engine/engine.h"\n' >"$scratch/bench/good.c"
printf '#include "store/internal.h"\n#include "tests/kit/answer.h"\n' >"$scratch/tests/unit/good.c"
"$CHECK" "$scratch" >"$scratch/out" || { cat "$scratch/out"; fail "clean files reported"; }
echo "ok: clean includes pass"

plant() { # plant <file> <include> <what the report must say>
  printf '#include "%s"\n' "$2" >"$scratch/$1"
  if "$CHECK" "$scratch" >"$scratch/out"; then
    fail "$1 including \"$2\" passed the check"
  fi
  grep -q -- "$3" "$scratch/out" || { cat "$scratch/out"; fail "no \"$3\" for $1"; }
  rm "$scratch/$1"
  echo "ok: $1 including \"$2\" is refused ($3)"
}
plant engine/bad.c ingest/ingest.h "engine does not stand on ingest"     # sideways
plant store/bad.c serve/serve.h "store does not stand on serve"          # upwards
plant sql/bad.c format/format.h "sql does not stand on format"           # sideways, low
plant engine/bad.c store/internal.h "not one of its front doors"         # past a door
plant store/bad.c tests/kit/pgtmp.h "store does not stand on kit"        # product -> tests
plant store/bad.c tests/unit/store_fixture.h "does not include tests/"   # product -> tests
plant tests/unit/bad.c bench/taxi_bench.h "tests do not include bench/"  # tests -> bench
plant tools/dump/bad.c ../store/internal.h "climbs with"                 # around
