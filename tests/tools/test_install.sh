#!/bin/bash
# test_install.sh -- `cmake --install` into a scratch prefix, then checks what
# landed there as a user of the installed tree would (SPEC.md 8.2):
#
#   - every program, manual page, header, the pkg-config file, the library
#     and the example systemd units are installed;
#   - each installed program answers --help (exit 0, usage on stdout) and
#     --version ("straum-x VERSION"); the three of this tree refuse an
#     unknown option with exit 2, a hint on stderr and nothing on stdout;
#   - each manual page renders with `groff -man -ww -z` without a warning;
#     those of the three programs have the usual sections and name every
#     option their program's --help lists;
#   - the units name the installed programs; systemd-analyze verify passes
#     when it is installed (said so when it is not);
#   - an outside C program (install_probe.c, copied out of the tree) builds
#     with `pkg-config --cflags --libs --static straum-store` against the
#     prefix alone, makes a store through the API, reads it back read-only,
#     and prints what the script expects.
#
# usage: test_install.sh CMAKE BUILD_DIR SOURCE_DIR CC VERSION LIBDIR
#   CC is the compiler of the build: a sanitizer build's archive links only
#   with the compiler whose runtimes it needs (the .pc file adds the flags).
set -euo pipefail

cmake=$1 build=$2 src=$3 cc=$4 version=$5 libdir=$6

tmp=$(mktemp -d /tmp/straum-install-test-XXXXXX)
if [[ -z ${STRAUM_INSTALL_TEST_KEEP:-} ]]; then
  trap 'rm -rf "$tmp"' EXIT
else
  echo "keeping $tmp"
fi
prefix=$tmp/prefix
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

echo "== cmake --install $build --prefix $prefix"
if ! "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log" >&2
  echo "FAIL: cmake --install failed" >&2
  exit 1
fi

# ---- What must be there ---------------------------------------------------
programs=(straum-ingest straum-serve straum-dump)
own_programs=("${programs[@]}")
# straum-shell is installed when the tree builds it.
[[ -x $build/bin/straum-shell ]] && programs+=(straum-shell)

mans=()
for m in "$src"/tools/man/*.[17]; do
  mans+=("$(basename "$m")")
done

expect=(
  "$libdir/libstraum-store.a"
  "$libdir/pkgconfig/straum-store.pc"
  include/straum/store/store.h
  include/straum/format/format.h
  include/straum/sql/sql.h
  share/doc/straum/examples/systemd/straum-ingest.service
  share/doc/straum/examples/systemd/straum-serve@.service
  share/doc/straum/examples/systemd/straum.env
)
for p in "${programs[@]}"; do
  expect+=("bin/$p")
done
for m in "${mans[@]}"; do
  expect+=("share/man/man${m##*.}/$m")
done
for p in straum-ingest straum-serve straum-dump; do
  [[ " ${mans[*]} " == *" $p.1 "* ]] || fail "tools/man/$p.1 is missing from the sources"
done
for f in "${expect[@]}"; do
  [[ -f $prefix/$f ]] || fail "not installed: $f"
done
echo "checked ${#expect[@]} installed files"

# ---- Programs: --help, --version, a usage error --------------------------
for p in "${programs[@]}"; do
  bin=$prefix/bin/$p
  [[ -x $bin ]] || continue
  if ! "$bin" --help >"$tmp/out" 2>"$tmp/err"; then
    fail "$p --help exited $?"
  fi
  grep -q "$p" "$tmp/out" || fail "$p --help does not name $p on stdout"
  grep -qi 'usage' "$tmp/out" || fail "$p --help prints no usage on stdout"
  if ! "$bin" --version >"$tmp/out" 2>"$tmp/err"; then
    fail "$p --version exited $?"
  fi
  [[ $(cat "$tmp/out") == "$p $version" ]] ||
    fail "$p --version printed '$(cat "$tmp/out")', not '$p $version'"
done
for p in "${own_programs[@]}"; do
  rc=0
  "$prefix/bin/$p" --no-such-option >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [[ $rc == 2 ]] || fail "$p --no-such-option exited $rc, not 2"
  [[ -s $tmp/err ]] || fail "$p --no-such-option printed no hint on stderr"
  [[ ! -s $tmp/out ]] || fail "$p --no-such-option printed on stdout"
done
echo "checked --help, --version and usage errors of: ${programs[*]}"

# ---- Manual pages ----------------------------------------------------------
for m in "${mans[@]}"; do
  page=$prefix/share/man/man${m##*.}/$m
  [[ -f $page ]] || continue
  if ! groff -man -ww -z "$page" >"$tmp/groff" 2>&1 || [[ -s $tmp/groff ]]; then
    fail "$m: groff -man -ww warns:"
    cat "$tmp/groff" >&2
  fi
  # Sections and options: the pages of this tree's programs (straum-shell's
  # page is its own author's; it is rendered above like every page).
  p=${m%.*}
  [[ " ${own_programs[*]} " == *" $p "* && ${m##*.} == 1 ]] || continue
  for s in NAME SYNOPSIS DESCRIPTION OPTIONS 'EXIT STATUS' ENVIRONMENT FILES EXAMPLES 'SEE ALSO'; do
    grep -Eq "^\.SH \"?$s\"?\$" "$page" || fail "$m has no $s section"
  done
  # Every option the program's --help lists is in its page.
  if [[ -x $prefix/bin/$p ]]; then
    "$prefix/bin/$p" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u >"$tmp/opts"
    sed 's/\\-/-/g' "$page" >"$tmp/page"
    while read -r opt; do
      grep -q -- "$opt" "$tmp/page" || fail "$m does not mention $opt (listed by $p --help)"
    done <"$tmp/opts"
  fi
done
echo "rendered and checked ${#mans[@]} manual pages"

# ---- systemd units ---------------------------------------------------------
units=$prefix/share/doc/straum/examples/systemd
for u in straum-ingest.service straum-serve@.service; do
  [[ -f $units/$u ]] || continue
  exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$units/$u")
  [[ $exe == "$prefix/bin/"* && -x $exe ]] ||
    fail "$u: ExecStart=$exe is not an installed program"
  ! grep -q '@[A-Z_]*@' "$units/$u" || fail "$u: an unconfigured @VARIABLE@ is left"
done
if command -v systemd-analyze >/dev/null; then
  # An instance of the template verifies when the template lies beside it;
  # MANPATH lets Documentation=man: find the installed pages.
  mkdir "$tmp/units"
  cp "$units/straum-ingest.service" "$units/straum-serve@.service" "$tmp/units/"
  if ! MANPATH=$prefix/share/man systemd-analyze verify \
      "$tmp/units/straum-ingest.service" "$tmp/units/straum-serve@8081.service" \
      >"$tmp/verify" 2>&1 || [[ -s $tmp/verify ]]; then
    fail "systemd-analyze verify:"
    cat "$tmp/verify" >&2
  fi
  echo "systemd-analyze verify: units checked"
else
  echo "note: systemd-analyze is not installed; the units were checked for their paths only"
fi

# ---- An outside program through pkg-config ---------------------------------
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[[ $(pkg-config --modversion straum-store) == "$version" ]] ||
  fail "pkg-config --modversion straum-store is not $version"
mkdir "$tmp/outside"
cp "$src/tests/tools/install_probe.c" "$tmp/outside/probe.c"
read -ra pcflags < <(pkg-config --cflags --libs --static straum-store)
echo "== $cc -std=c17 -Wall -Wextra -Werror probe.c ${pcflags[*]}"
if ! (cd "$tmp/outside" &&
      "$cc" -std=c17 -Wall -Wextra -Werror probe.c "${pcflags[@]}" -o probe) 2>&1; then
  fail "the outside program does not build against the installed library"
else
  if ! "$tmp/outside/probe" "$tmp/outside/store" >"$tmp/probe.out"; then
    fail "the outside program failed"
  fi
  cat "$tmp/probe.out"
  cat >"$tmp/probe.want" <<'EOF'
format_version 12
position 1A/002B3C4D
view trips widths 2
cells 6 3
EOF
  grep -v -e '^verified ' -e '^code ' "$tmp/probe.out" | diff -u "$tmp/probe.want" - >&2 ||
    fail "the outside program printed other than expected"
  v=$(sed -n 's/^verified //p' "$tmp/probe.out")
  [[ ${v:-0} -ge 2 ]] || fail "the outside program verified ${v:-no} segments, not 2 or more"
  grep -qx 'code 12.50' "$tmp/probe.out" || fail "store_code_format did not give 12.50"
fi

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all install checks passed"
