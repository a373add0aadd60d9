#!/usr/bin/env bash
# results_rendered: bench/RESULTS.md is exactly what bench/render_results.py
# renders from bench/RESULTS.json, so the report and its figures cannot
# drift apart; and the check fails when they do: on a changed figure in a
# copy of the report, on a changed figure in a copy of the JSON, and on a
# JSON document missing a mode's figures (exit 2, naming what is missing).
set -euo pipefail
ROOT=$1
RENDER=$ROOT/bench/render_results.py

fail() { echo "results_rendered: FAIL: $*" >&2; exit 1; }

python3 "$RENDER" --check --json "$ROOT/bench/RESULTS.json" --out "$ROOT/bench/RESULTS.md" ||
  fail "bench/RESULTS.md differs from what bench/RESULTS.json renders to (above); run bench/render_results.py"
echo "ok: bench/RESULTS.md is what bench/RESULTS.json renders to"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# A figure changed in the report alone.
cp "$ROOT/bench/RESULTS.md" "$scratch/RESULTS.md"
grep -q '^| 1 Trips |' "$scratch/RESULTS.md" || fail "the report has no row for ask 1"
sed -i 's/^\(| 1 Trips | [^|]* | [^|]* | \)[^|]*|/\1 1 ms |/' "$scratch/RESULTS.md"
cmp -s "$scratch/RESULTS.md" "$ROOT/bench/RESULTS.md" && fail "the planted change did not change the copy"
if python3 "$RENDER" --check --json "$ROOT/bench/RESULTS.json" --out "$scratch/RESULTS.md" \
    2>"$scratch/err"; then
  fail "a report with a changed figure passed the check"
fi
grep -q 'first difference at line' "$scratch/err" || { cat "$scratch/err"; fail "no line named"; }
echo "ok: a figure changed in the report fails the check, naming the line"

# A figure changed in the JSON alone.
python3 - "$ROOT/bench/RESULTS.json" "$scratch/RESULTS.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["modes"]["asks"]["asks"][0]["straum_median_ms"] *= 2
json.dump(d, open(sys.argv[2], "w"))
PY
if python3 "$RENDER" --check --json "$scratch/RESULTS.json" --out "$ROOT/bench/RESULTS.md" \
    2>"$scratch/err"; then
  fail "a JSON with a changed figure passed the check against the report"
fi
echo "ok: a figure changed in the JSON fails the check"

# A mode's figures missing: a clear error, exit 2.
python3 - "$ROOT/bench/RESULTS.json" "$scratch/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["modes"]["memory"]["memory"]
json.dump(d, open(sys.argv[2], "w"))
PY
set +e
python3 "$RENDER" --json "$scratch/broken.json" --out "$scratch/out.md" 2>"$scratch/err"
rc=$?
set -e
[[ $rc == 2 ]] || fail "a document missing the memory figures exited $rc, not 2"
grep -q "cannot render" "$scratch/err" || { cat "$scratch/err"; fail "no message"; }
[[ ! -e $scratch/out.md ]] || fail "a document that cannot be rendered wrote a report"
echo "ok: a document missing a mode's figures is refused: $(cat "$scratch/err")"
