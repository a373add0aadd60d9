#!/usr/bin/env bash
# tools/demo.sh -- Straum end to end in a few minutes, on a fresh Debian 12 as
# root: installs packages, builds build/, starts a throwaway PostgreSQL 15,
# loads the real taxi zones and generated trips, lets straum-ingest load and
# follow them, starts straum-serve, answers the ten benchmark asks beside
# PostgreSQL (both timed, checked equal), then changes PostgreSQL and shows
# the answers follow. Exits 0 only if every answer equals PostgreSQL's.
#
# usage: ./tools/demo.sh [--trips N]      (default 200,000 trips)
# env:   STRAUM_TEST_SKIP_APT=1  skip apt-get (see tools/packages.sh)
#
# Everything it starts is stopped on exit and the store is removed; the
# PostgreSQL cluster is removed by straum-pgtmp. Logs go to a temp dir whose
# path is printed on failure.
set -euo pipefail
export LC_NUMERIC=C # $EPOCHREALTIME and awk: a decimal point, whatever the locale

cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/build/bin
TRIPS=200000

usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}

while [[ $# -gt 0 ]]; do
  case $1 in
    --trips)
      [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "demo.sh: --trips takes a positive number" >&2; exit 2; }
      TRIPS=$2
      shift 2
      ;;
    -h | --help) usage 0 ;;
    *) echo "demo.sh: unknown argument $1" >&2; usage 2 ;;
  esac
done

# ---- Output helpers ----------------------------------------------------------

SECTION=${STRAUM_DEMO_SECTION:-0}
BOLD= PLAIN=
if [[ -t 1 ]]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; fi
section() {
  SECTION=$((SECTION + 1))
  printf '\n%s%d. %s%s\n' "$BOLD" "$SECTION" "$*" "$PLAIN"
}
say() { printf '   %s\n' "$*"; }
fail() {
  printf '\ndemo.sh: %s\n' "$*" >&2
  exit 1
}
now() { echo "$EPOCHREALTIME"; }
# since <start>: seconds elapsed, one decimal.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }'; }
# since_ms <start>
since_ms() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f ms", (b - a) * 1000 }'; }
commas() { echo "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }

# ---- Stage 1: packages and build, then stage 2 beside a throwaway PostgreSQL --

if [[ ${STRAUM_DEMO_STAGE:-} != beside-postgres ]]; then
  START=$(now)
  echo "Straum demo: PostgreSQL -> straum-ingest -> store -> straum-serve, answers checked"
  echo "against PostgreSQL. Machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)."
  mkdir -p "$ROOT/build"

  section "Installing packages (Debian 12)"
  # shellcheck source=tools/packages.sh
  source tools/packages.sh
  install_packages "$ROOT/build/demo-apt.log"

  section "Building build/ (gcc -O2)"
  BUILD_LOG=$ROOT/build/demo-build.log
  testing=()
  # A first configure needs no Criterion; a tree tools/test.sh configured
  # keeps its setting (same compiler and flags, so nothing is rebuilt twice).
  [[ -f $ROOT/build/CMakeCache.txt ]] || testing=(-DBUILD_TESTING=OFF)
  t=$(now)
  if ! {
    cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_C_COMPILER=gcc \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" "${testing[@]}" &&
      cmake --build "$ROOT/build" -j"$(nproc)" --target \
        straum-ingest straum-serve straum-dump straum-pgtmp taxi
  } >"$BUILD_LOG" 2>&1; then
    tail -n 30 "$BUILD_LOG" >&2
    fail "the build failed; the whole log is $BUILD_LOG"
  fi
  say "straum-ingest, straum-serve, straum-dump, taxi in build/bin ($(since "$t"); log: build/demo-build.log)"

  section "Starting a throwaway PostgreSQL 15 (straum-pgtmp)"
  export STRAUM_DEMO_STAGE=beside-postgres STRAUM_DEMO_SECTION=$SECTION
  set +e
  "$BIN/straum-pgtmp" run -- bash "$ROOT/tools/demo.sh" --trips "$TRIPS"
  rc=$?
  set -e
  echo
  if [[ $rc == 0 ]]; then
    echo "demo.sh: every answer equal to PostgreSQL's; done in $(since "$START")."
  elif [[ $rc == 130 ]]; then
    echo "demo.sh: interrupted after $(since "$START"); everything it started is stopped." >&2
  else
    echo "demo.sh: FAILED (exit $rc) after $(since "$START")." >&2
  fi
  exit $rc
fi

# ---- Stage 2: runs under straum-pgtmp (PGHOST, PGPORT, STRAUM_TEST_PG set) ----

WORK=$(mktemp -d /tmp/straum-demo.XXXXXX)
STORE=$WORK/store
INGEST_LOG=$WORK/ingest.log
SERVE_LOG=$WORK/serve.log
SETUP_LOG=$WORK/setup.log
INGEST_PID=
SERVE_PID=
mkdir -p "$STORE"
touch "$INGEST_LOG" "$SERVE_LOG" "$SETUP_LOG"

# stop <pid>: SIGTERM, then SIGKILL after 10 s.
stop() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  [[ -n $SERVE_PID ]] && stop "$SERVE_PID"
  [[ -n $INGEST_PID ]] && stop "$INGEST_PID"
  rm -rf "$STORE"
  if [[ $rc == 0 ]]; then
    rm -rf "$WORK"
  else
    {
      echo
      echo "demo.sh: logs kept in $WORK:"
      for f in "$SETUP_LOG" "$INGEST_LOG" "$SERVE_LOG"; do
        [[ -s $f ]] && echo "  $f"
      done
    } >&2
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_val() { psql -X -A -t -v ON_ERROR_STOP=1 -c "$1"; }

say "$(psql_val "SELECT split_part(version(), ' on ', 1)") on port $PGPORT, wal_level=$(psql_val "SHOW wal_level")"

section "Loading the taxi data into PostgreSQL"
t=$(now)
psql_q -f bench/taxi_schema.sql -f bench/taxi_generate.sql >>"$SETUP_LOG" 2>&1 ||
  fail "creating the schema failed (see $SETUP_LOG)"
psql_q -c "\\copy taxi_zones FROM 'bench/data/taxi_zone_lookup.csv' CSV HEADER" >>"$SETUP_LOG" 2>&1 ||
  fail "loading the zones failed (see $SETUP_LOG)"
say "tables taxi_zones and yellow_trips (bench/taxi_schema.sql); $(psql_val "SELECT count(*) FROM taxi_zones") real TLC zones"
t=$(now)
psql_q -c "SELECT straum_generate_trips($TRIPS, 0.42, 0)" >>"$SETUP_LOG" 2>&1 ||
  fail "generating trips failed (see $SETUP_LOG)"
psql_q -c "CREATE INDEX ON yellow_trips (pickup_at)" -c "VACUUM ANALYZE yellow_trips" >>"$SETUP_LOG" 2>&1 ||
  fail "indexing trips failed (see $SETUP_LOG)"
say "$(commas "$TRIPS") generated trips, January to June 2024, indexed on pickup_at ($(since "$t"))"

section "straum-ingest: a consistent snapshot, then following PostgreSQL"
say "views (bench/taxi_views.sql): trips and dropoffs, bucketed by 1 hour, 1 day, 7 days"
set +e
"$BIN/straum-ingest" plan --source "$STRAUM_TEST_PG" --views bench/taxi_views.sql >"$WORK/plan.sql" 2>>"$SETUP_LOG"
rc=$?
set -e
[[ $rc == 0 || $rc == 1 ]] || { cat "$WORK/plan.sql" >&2; fail "straum-ingest plan failed (exit $rc)"; }
say "straum-ingest plan says to run, once:"
grep -v '^--' "$WORK/plan.sql" | sed '/^[[:space:]]*$/d; s/^/      /'
grep -v '^--' "$WORK/plan.sql" | psql_q >>"$SETUP_LOG" 2>&1 || fail "applying the plan's SQL failed (see $SETUP_LOG)"
"$BIN/straum-ingest" plan --source "$STRAUM_TEST_PG" --views bench/taxi_views.sql >"$WORK/plan2.sql" 2>>"$SETUP_LOG" || {
  cat "$WORK/plan2.sql" >&2
  fail "straum-ingest plan still finds something to fix"
}
say "applied; plan now finds every check ok"

t=$(now)
"$BIN/straum-ingest" run --source "$STRAUM_TEST_PG" --views bench/taxi_views.sql --store "$STORE" \
  --exit-when-caught-up >>"$INGEST_LOG" 2>&1 || {
  tail -n 20 "$INGEST_LOG" >&2
  fail "the snapshot load failed"
}
say "snapshot loaded into $STORE in $(since "$t"):"
"$BIN/straum-dump" --store "$STORE" stats 2>>"$SETUP_LOG" |
  awk 'NR == 1 || / total / || /^all views/ || /^store file/' | sed 's/^/      /'

"$BIN/straum-ingest" run --source "$STRAUM_TEST_PG" --views bench/taxi_views.sql --store "$STORE" \
  >>"$INGEST_LOG" 2>&1 &
INGEST_PID=$!
say "straum-ingest now follows PostgreSQL by logical decoding (pid $INGEST_PID)"

section "straum-serve: asks over HTTP from the store"
t=$(now)
"$BIN/straum-serve" --store "$STORE" --listen 127.0.0.1:0 >>"$SERVE_LOG" 2>&1 &
SERVE_PID=$!
ADDR=
for ((i = 0; i < 200; i++)); do
  ADDR=$(sed -n 's/.*msg="straum-serve listening" addr=\([^ ]*\).*/\1/p' "$SERVE_LOG" | head -n1)
  [[ -n $ADDR ]] && break
  kill -0 "$SERVE_PID" 2>/dev/null || { cat "$SERVE_LOG" >&2; fail "straum-serve exited"; }
  sleep 0.05
done
[[ -n $ADDR ]] || fail "straum-serve did not start listening (see $SERVE_LOG)"
URL=http://$ADDR
"$BIN/taxi" wait-ready --url "$URL" --timeout 30 || fail "straum-serve is not ready (see $SERVE_LOG)"
say "listening on $URL; /readyz answered 200 $(since_ms "$t") after start"

section "The ten benchmark asks, PostgreSQL beside Straum"
say "PostgreSQL: the SQL over the raw tables, session time zone America/New_York, timed once"
say "after a warm-up. Straum: POST /ask, median of 20 requests on one kept-alive connection."
say "Answers compare as sets of rows: exact decimals digit for digit, timestamps as instants."
"$BIN/taxi" demo --pg "$STRAUM_TEST_PG" --url "$URL" || fail "some answers differ from PostgreSQL's"

section "Changing PostgreSQL while Straum follows"
ZONE=$(psql_val "SELECT zone || ', ' || borough FROM taxi_zones WHERE location_id = 161")
say "fares on 2024-01-17 go up by 1.00, and zone 161 moves from Manhattan to Brooklyn:"
say "   UPDATE yellow_trips SET fare_amount = fare_amount + 1"
say "     WHERE pickup_at >= '2024-01-17' AND pickup_at < '2024-01-18';"
say "   UPDATE taxi_zones SET borough = 'Brooklyn' WHERE location_id = 161;  -- $ZONE"
tags=$(psql -X -v ON_ERROR_STOP=1 \
  -c "UPDATE yellow_trips SET fare_amount = fare_amount + 1 WHERE pickup_at >= '2024-01-17' AND pickup_at < '2024-01-18'" \
  -c "UPDATE taxi_zones SET borough = 'Brooklyn' WHERE location_id = 161" 2>>"$SETUP_LOG") ||
  fail "the change failed (see $SETUP_LOG)"
say "PostgreSQL: $(echo "$tags" | tr '\n' ' ' | sed 's/ $//')"
t=$(now)
read -r TARGET TARGET_LSN < <(psql_val "SELECT pg_current_wal_lsn() - '0/0', pg_current_wal_lsn()" | tr '|' ' ') || true
[[ ${TARGET:-} =~ ^[0-9]+$ ]] || fail "cannot read PostgreSQL's WAL position (see $SETUP_LOG)"
caught_up=0
for ((i = 0; i < 3000; i++)); do
  pos=$("$BIN/straum-dump" --store "$STORE" --json catalog 2>/dev/null |
    sed -n 's/.*"lsn_int": *\([0-9]*\).*/\1/p' | head -n1)
  if [[ -n $pos && $pos -ge $TARGET ]]; then
    caught_up=1
    break
  fi
  kill -0 "$INGEST_PID" 2>/dev/null || { tail -n 20 "$INGEST_LOG" >&2; fail "straum-ingest exited"; }
  sleep 0.02
done
[[ $caught_up == 1 ]] || fail "straum-ingest did not reach $TARGET_LSN within 60 s (see $INGEST_LOG)"
say "straum-ingest had applied both within $(since_ms "$t") of their commit (store position >= $TARGET_LSN)"
say "and Straum's answers move with PostgreSQL's:"
"$BIN/taxi" demo --pg "$STRAUM_TEST_PG" --url "$URL" --asks 3,7 || fail "some answers differ from PostgreSQL's after the change"

kill -0 "$INGEST_PID" 2>/dev/null || fail "straum-ingest stopped unexpectedly (see $INGEST_LOG)"
section "Done"
say "Stopping straum-serve and straum-ingest, removing the store and PostgreSQL."
say "Next: README.md (following your own PostgreSQL), SPEC.md (the ask language)."
