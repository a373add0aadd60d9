# tools/packages.sh -- the Debian 12 packages Straum needs, and
# install_packages, shared by tools/test.sh and tools/demo.sh (source it).
#
# install_packages [LOGFILE]: apt-get update + install of PACKAGES, as root or
# through sudo; when not root and everything is present, nothing is done.
# With LOGFILE, apt's output goes there (its tail is shown on failure).
# env: STRAUM_TEST_SKIP_APT=1  skip apt-get (quick local iteration)

PACKAGES=(
  build-essential cmake pkg-config
  clang libclang-rt-14-dev llvm   # llvm: llvm-symbolizer for readable ASan traces
  libpq-dev postgresql-15
  libssl-dev                      # straum-serve: SCRAM-SHA-256 for PostgreSQL clients (libcrypto)
  liblmdb-dev liblz4-dev libxxhash-dev libcjson-dev libmicrohttpd-dev
  libcriterion-dev
  util-linux                      # runuser: the test server runs as postgres
  tzdata                          # time zones of asks (serve reads /usr/share/zoneinfo)
  wrk                             # taxi load: 1,000 keep-alive connections against serve
  libedit-dev                     # straum-shell: line editing and history
  libcurl4-openssl-dev            # straum-shell: asks over HTTP
  nginx-light                     # the replicas test: three serves behind nginx
  groff-base                      # test_install: manual pages render without warnings
  python3                         # bench/render_results.py: RESULTS.md from RESULTS.json (results_rendered)
  python3-psycopg python3-psycopg2  # test_serve_pg: Python drivers over the PostgreSQL protocol
  golang-go golang-github-jackc-pgx-v4-dev  # test_serve_pg: Go's pgx, built offline
  default-jdk-headless libpostgresql-jdbc-java  # test_serve_pg: pgjdbc
)

missing_packages() {
  local p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
      echo "$p"
  done
}

install_packages() {
  local logfile=${1:-} me
  me=$(basename "$0")
  if [[ ${STRAUM_TEST_SKIP_APT:-0} == 1 ]]; then
    printf '\n==> %s\n' "skipping apt (STRAUM_TEST_SKIP_APT=1)"
    return
  fi
  local sudo=()
  if [[ $(id -u) != 0 ]]; then
    if [[ -z $(missing_packages) ]]; then
      printf '\n==> %s\n' "not root; all packages present, skipping apt"
      return
    fi
    if ! command -v sudo >/dev/null; then
      echo "$me: missing packages: $(missing_packages | tr '\n' ' ')" >&2
      echo "$me: run as root (or install sudo) so they can be installed" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  printf '\n==> %s\n' "installing packages${logfile:+ (log: $logfile)}"
  export DEBIAN_FRONTEND=noninteractive
  if [[ -z $logfile ]]; then
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${PACKAGES[@]}"
    return
  fi
  if ! { "${sudo[@]}" apt-get update &&
    "${sudo[@]}" apt-get install -y --no-install-recommends "${PACKAGES[@]}"; } >"$logfile" 2>&1; then
    tail -n 20 "$logfile" >&2
    echo "$me: installing packages failed; the whole log is $logfile" >&2
    exit 1
  fi
}
