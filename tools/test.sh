#!/usr/bin/env bash
# The one test command: installs what Straum needs (Debian 12), builds two
# trees and runs every test in both, each against a throwaway PostgreSQL:
#   build/       gcc, -O2 -g             (what users run)
#   build-asan/  clang, ASan+UBSan, fuzz (what catches memory bugs)
#   build-tsan/  clang, ThreadSanitizer: tests/tsan's programs only (what
#                catches races in the bulk load's jobs, serve's threads and
#                ingest's stream read ahead;
#                Criterion does not run under TSan, so they do without it)
#
# usage: ./tools/test.sh [ctest args...]     e.g. ./tools/test.sh -R sql
# env:   STRAUM_TEST_SKIP_APT=1  skip apt-get (quick local iteration)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc)

source tools/packages.sh   # PACKAGES and install_packages

log() { printf '\n==> %s\n' "$*"; }

# Functions run inside `if`, where set -e is off: chain steps with &&.

# configure_and_build <dir> <cmake args...>
configure_and_build() {
  local dir=$1
  shift
  log "configuring $dir" &&
    cmake -S "$ROOT" -B "$ROOT/$dir" -DBUILD_TESTING=ON "$@" &&
    log "building $dir" &&
    cmake --build "$ROOT/$dir" -j"$JOBS"
}

# run_tests <dir>: every test shares one throwaway cluster; ctest's JUnit
# file gives the counts of the closing line.
run_tests() {
  local dir=$1
  rm -f "$ROOT/$dir/ctest-junit.xml"
  log "testing $dir" &&
    (cd "$ROOT/$dir" &&
      ./bin/straum-pgtmp run -- ctest --output-on-failure -j"$JOBS" \
        --output-junit "$ROOT/$dir/ctest-junit.xml" "${CTEST_ARGS[@]}")
}

# counts <dir>: "N passed, N failed, N skipped" of its last run, from the
# JUnit file (a skipped test is never counted as passed), and on stderr each
# skipped test with the line that says why.
counts() {
  local f=$ROOT/$1/ctest-junit.xml tests failures skipped
  if [[ ! -f $f ]]; then
    echo "no tests ran"
    return
  fi
  tests=$(grep -m1 -o 'tests="[0-9]*"' "$f" | tr -dc 0-9)
  failures=$(grep -m1 -o 'failures="[0-9]*"' "$f" | tr -dc 0-9)
  skipped=$(grep -m1 -o 'skipped="[0-9]*"' "$f" | tr -dc 0-9)
  echo "$((tests - failures - skipped)) passed, $failures failed, $skipped skipped"
  awk -v tree="$1" '
    /<testcase / { match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
                   skip = $0 ~ /status="notrun"/; why = "" }
    skip && /\[SKIP\]/ && why == "" { why = $0; sub(/^.*\[SKIP\] */, "", why) }
    skip && /<\/testcase>/ { printf "test.sh: %s: skipped %s: %s\n", tree, name, why; skip = 0 }
  ' "$f" >&2
}

# build_and_test <dir> <cmake args...>; records PASS/FAIL and carries on, so
# one run reports on both trees.
declare -A RESULT
build_and_test() {
  local dir=$1
  shift
  if configure_and_build "$dir" "$@" && run_tests "$dir"; then
    RESULT[$dir]=PASS
  else
    RESULT[$dir]=FAIL
  fi
}

CTEST_ARGS=("$@")
install_packages

build_and_test build \
  -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g"

# LeakSanitizer stops the process's threads with ptrace-like calls; some
# sandboxes forbid that and every sanitized process would then die. Probe once.
lsan_works() {
  local dir rc=0
  dir=$(mktemp -d)
  printf 'int main(void) { return 0; }\n' >"$dir/probe.c"
  clang -fsanitize=address "$dir/probe.c" -o "$dir/probe" &&
    ASAN_OPTIONS=detect_leaks=1 "$dir/probe" >/dev/null 2>&1 || rc=1
  rm -rf "$dir"
  return $rc
}
LEAKS=1
if ! lsan_works; then
  echo "test.sh: WARNING: LeakSanitizer does not work here (ptrace restricted?);" \
    "leak checks are OFF for build-asan" >&2
  LEAKS=0
fi

# Leak checks run in every test process; abort so Criterion reports a crash
# with the report instead of a silent non-zero exit.
export ASAN_OPTIONS=detect_leaks=$LEAKS:abort_on_error=1:disable_coredump=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build_and_test build-asan \
  -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
  -DSTRAUM_SANITIZE=ON \
  -DSTRAUM_FUZZ=ON
unset ASAN_OPTIONS UBSAN_OPTIONS

# The TSan tree builds only its programs (and the libraries they use), and
# needs no PostgreSQL; a race is a failure (halt_on_error, exit 66).
tsan_tree() {
  local dir=build-tsan
  log "configuring $dir" &&
    cmake -S "$ROOT" -B "$ROOT/$dir" -DBUILD_TESTING=OFF -DSTRAUM_TSAN=ON \
      -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" &&
    log "building $dir" &&
    cmake --build "$ROOT/$dir" -j"$JOBS" --target tsan_bulk tsan_serve tsan_receiver &&
    log "testing $dir" &&
    rm -f "$ROOT/$dir/ctest-junit.xml" &&
    (cd "$ROOT/$dir" && ctest --output-on-failure -L tsan --output-junit "$ROOT/$dir/ctest-junit.xml")
}
if tsan_tree; then
  RESULT[build-tsan]=PASS
else
  RESULT[build-tsan]=FAIL
fi

status=0
summary=""
for dir in build build-asan build-tsan; do
  summary+=" $dir=${RESULT[$dir]} ($(counts "$dir"))"
  [[ ${RESULT[$dir]} == PASS ]] || status=1
done
if [[ $status == 0 ]]; then
  echo "test.sh: ALL PASSED:$summary"
else
  echo "test.sh: FAILED:$summary" >&2
fi
exit $status
