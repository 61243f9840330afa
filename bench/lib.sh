# Shell helpers shared by the benchmark scripts (sourced, not run): messages, the PostgreSQL
# bench database, starting and stopping the release server, and curl as a demo user.
#
# The sourcing script sets: WORK (its work dir), BIN (the release binary), PG_URL and PG_DB
# (for the PostgreSQL helpers), and for the API helpers CRED_USER and CRED_KEY; start_server
# sets SERVER_PID and BASE.

# Every brandhub flag also reads a BRANDHUB_* variable: the caller's must not leak into the runs.
while read -r name; do
  [ -n "$name" ] && unset "$name"
done < <(compgen -e | grep '^BRANDHUB_' || true)

say() { printf '%s\n' "$*"; }
section() { printf '\n=== %s ===\n' "$*"; }
die() {
  printf 'bench: %s\n' "$*" >&2
  exit 1
}
# Floating-point comparison: le A B is true when A <= B.
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
indent() { sed 's/^/    /'; }

# The URL of the bench database on the server PG_URL points at (same credentials and options).
pg_bench_url() {
  local base=${PG_URL%%\?*}
  local query=${PG_URL#"$base"}
  if [[ $base =~ ^[a-zA-Z]+://[^/]*/ ]]; then
    base=${BASH_REMATCH[0]}
  else
    base=$base/
  fi
  printf '%s%s%s' "$base" "$PG_DB" "$query"
}

psql_admin() { psql "$PG_URL" -v ON_ERROR_STOP=1 -qAtX "$@"; }

drop_pg_db() {
  psql_admin -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 ||
    psql_admin -c "DROP DATABASE IF EXISTS $PG_DB" >/dev/null
}

# A fresh, empty database for a backend: sets url (empty for SQLite in the data dir) and
# BACKEND_LABEL; on PostgreSQL (re)creates PG_DB and notes it for the clean-up.
fresh_database() {
  url=""
  case $1 in
    sqlite) BACKEND_LABEL=SQLite ;;
    postgres)
      drop_pg_db
      PG_CREATED=1
      psql_admin -c "CREATE DATABASE $PG_DB" >/dev/null
      url=$(pg_bench_url)
      BACKEND_LABEL="PostgreSQL $(psql_admin -c 'SHOW server_version' | cut -d' ' -f1)"
      ;;
  esac
}

# Drops the bench database once a backend's runs are done (nothing to do for SQLite, whose
# data dir goes with WORK).
drop_database() {
  if [ "$1" = postgres ]; then
    drop_pg_db
    PG_CREATED=""
  fi
}

# The end of a run: the results file, under a heading (the clean-up then keeps quiet).
print_results() {
  FINISHED=1
  section "Results"
  cat "$RESULTS"
}

# A fresh database for a backend (see fresh_database) in the data dir $WORK/<backend>/data,
# loaded with the demo data set at a scale: sets dir, url, BACKEND_LABEL, and DEMO_SECONDS (the
# wall clock of `brandhub demo`, whose output is in $dir/demo.out).
load_demo() {
  local backend=$1 scale=$2 start_ns args
  # BENCH_REUSE: the work dir of an earlier run kept with BENCH_KEEP=1, whose SQLite data is
  # used again instead of a new load (a scale of 1,000,000 takes minutes to load; what the
  # earlier run wrote stays in it).
  if [ -n "${BENCH_REUSE:-}" ]; then
    [ "$backend" = sqlite ] || die "BENCH_REUSE keeps SQLite's data only (BACKENDS=sqlite)"
    dir=$BENCH_REUSE/$backend
    [ -f "$dir/demo.out" ] || die "no kept SQLite data in $BENCH_REUSE"
    fresh_database "$backend"
    DEMO_SECONDS="(data of $BENCH_REUSE)"
    return 0
  fi
  dir=$WORK/$backend
  mkdir -p "$dir/data"
  fresh_database "$backend"
  section "$BACKEND_LABEL: loading the demo data set (scale $scale)"
  args=(--data-dir "$dir/data" --log warn)
  [ -n "$url" ] && args+=(--database-url "$url")
  start_ns=$(date +%s%N)
  if ! "$BIN" "${args[@]}" demo --scale "$scale" >"$dir/demo.out" 2>"$dir/demo.err"; then
    cat "$dir/demo.out" "$dir/demo.err" >&2
    die "brandhub demo failed on $backend"
  fi
  DEMO_SECONDS=$(awk -v a="$start_ns" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  if [ "$backend" = postgres ]; then
    # The load leaves PostgreSQL writing its WAL out in checkpoints that run on into the first
    # workloads (bench/RESULTS.md, writes runs 19-21): one checkpoint now, so that every run
    # starts from the same state instead of from wherever the load's checkpoints are.
    psql_admin -c "CHECKPOINT" >/dev/null
  fi
}

# Stops the server started last: SIGTERM, then SIGKILL after 15 s.
stop_server() {
  local pid=$SERVER_PID
  SERVER_PID=""
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "the server (PID $pid) did not stop within 15 s of SIGTERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
}

BASE=""      # https://127.0.0.1:PORT of the running server
SERVER_PID=""

# curl as the current user; HTTP/1.1 like wrk. Extra arguments are passed on.
api() { curl -sS -k --http1.1 --max-time 600 -u "$CRED_USER:$CRED_KEY" "$@"; }

# GET a path and print the body; fails on a non-2xx answer.
api_get() {
  local body=$WORK/get.body code
  code=$(api -o "$body" -w '%{http_code}' "$BASE$1") || die "GET $1 failed"
  if [[ $code != 2* ]]; then
    say "GET $1 answered $code: $(head -c 500 "$body")" >&2
    return 1
  fi
  cat "$body"
}

# Makes the first demo user of a type (or with that email) the current user, from the
# credentials that `brandhub demo` printed into a file.
use_demo_user() {
  local demo_out=$1 user_type=$2 cred
  cred=$(awk -v t="$user_type" '
    found && NF >= 4 && $3 == ":" && ($1 == t || $2 == t) { print $2, $4; exit }
    /^demo users/ { found = 1 }' "$demo_out")
  [ -n "$cred" ] || die "no demo user of type '$user_type' in the demo output"
  CRED_USER=${cred%% *}
  CRED_KEY=${cred#* }
}

# The ids of the records in a list answer, one a line.
ids_of() { grep -o '"id":"[^"]*"' | cut -d'"' -f4 || true; }

# Starts the server in the background on the given data dir (and database URL, may be empty)
# and waits until it answers; further arguments go to `serve`. Output goes to <log>.out/.err.
start_server() {
  local dir=$1 url=$2 log=$3
  shift 3
  # One key drives all the load, so the per-key rate limit is off: a benchmark is not a client.
  local args=(--data-dir "$dir" --log "${SERVER_LOG:-warn}" --page-cache-mb "${PAGE_CACHE_MB:-32}")
  [ -n "$url" ] && args+=(--database-url "$url")
  "$BIN" "${args[@]}" serve --listen "127.0.0.1:${PORT:-0}" --rate-limit 0 "$@" >"$log.out" 2>"$log.err" &
  SERVER_PID=$!
  local i line
  for i in $(seq 1 1200); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      cat "$log.out" "$log.err" >&2
      SERVER_PID=""
      die "the server exited before it answered"
    fi
    line=$(grep -m1 '^brandhub serves https://' "$log.out" 2>/dev/null || true)
    if [ -n "$line" ]; then
      BASE=$(sed 's|^brandhub serves \(https://[^/ ]*\)/api.*|\1|' <<<"$line")
      if [ "$(curl -sk --http1.1 -o /dev/null -w '%{http_code}' --max-time 5 "$BASE/api/openapi.json" || true)" != 000 ]; then
        say "$line (PID $SERVER_PID)"
        return 0
      fi
    fi
    sleep 0.1
  done
  die "the server did not answer within 120 s"
}

# Makes sure wrk is on PATH: installs it with apt-get (as root, or with sudo -n) when missing
# and possible; logs to $WORK/apt.log.
ensure_wrk() {
  command -v wrk >/dev/null && return 0
  if command -v apt-get >/dev/null; then
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
      else
        die "wrk is missing and apt-get needs root: install wrk (apt-get install wrk)"
      fi
    fi
    say "installing wrk with apt-get"
    ${sudo[@]+"${sudo[@]}"} apt-get update -qq >"$WORK/apt.log" 2>&1 ||
      { cat "$WORK/apt.log" >&2; die "apt-get update failed"; }
    ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >>"$WORK/apt.log" 2>&1 ||
      { cat "$WORK/apt.log" >&2; die "apt-get install wrk failed"; }
  fi
  command -v wrk >/dev/null || die "wrk is needed (https://github.com/wg/wrk, or your distribution's package)"
}

# A memory figure of the server in MB, by its /proc status key: VmRSS (now) or VmHWM (peak).
rss_mb() {
  awk -v k="$1:" '$1 == k { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status" 2>/dev/null || echo "?"
}

# Checks BACKENDS and what every benchmark needs, makes the work dir WORK (named after $1, under
# BENCH_WORK_DIR or the target dir) with the results file RESULTS in it, and installs the
# clean-up: stop the server, drop the bench database if this run made it (PG_CREATED), print
# the results so far if the run stopped early (FINISHED unset), and remove WORK unless
# BENCH_KEEP=1.
bench_start() {
  local backend
  for backend in $BACKENDS; do
    case $backend in
      sqlite | postgres) ;;
      *) die "unknown backend '$backend' in BACKENDS (sqlite, postgres)" ;;
    esac
  done
  command -v cargo >/dev/null || die "cargo is not on PATH (a Rust toolchain is needed)"
  command -v curl >/dev/null || die "curl is needed"
  if [[ " $BACKENDS " == *" postgres "* ]]; then
    command -v psql >/dev/null || die "psql is needed for the postgres backend (or set BACKENDS=sqlite)"
    psql_admin -c 'SELECT 1' >/dev/null ||
      die "cannot reach PostgreSQL at $PG_URL (set BRANDHUB_BENCH_DATABASE_URL, or BACKENDS=sqlite)"
  fi
  mkdir -p "${BENCH_WORK_DIR:-$TARGET_DIR/bench-run}"
  WORK=$(mktemp -d "${BENCH_WORK_DIR:-$TARGET_DIR/bench-run}/$1.XXXXXX")
  WORK=$(cd "$WORK" && pwd)
  RESULTS=$WORK/results.txt
  : >"$RESULTS"
  PG_CREATED=""
  FINISHED=""
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

bench_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_server
  if [ -n "$PG_CREATED" ]; then
    drop_pg_db || say "could not drop the database $PG_DB"
  fi
  if [ -z "$FINISHED" ] && [ -s "$RESULTS" ]; then
    section "Results so far (the run stopped early)"
    cat "$RESULTS"
  fi
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    say "logs and data kept in $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}

# A helper process of the run (a background writer, an order flow), stopped before the
# clean-up: set BACKGROUND_PID when starting one and `trap background_cleanup EXIT`.
BACKGROUND_PID=""
stop_background() {
  local pid=$BACKGROUND_PID
  BACKGROUND_PID=""
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
background_cleanup() {
  local rc=$?
  set +e
  stop_background
  (exit "$rc")
  bench_cleanup
}

# Builds the release binary (further arguments go to cargo), logging to $WORK/build.log.
build_release() {
  section "Building (cargo build --release -p brandhub $*)"
  if ! cargo build --release -p brandhub "$@" >"$WORK/build.log" 2>&1; then
    tail -n 60 "$WORK/build.log" >&2
    die "the release build failed"
  fi
  tail -n 1 "$WORK/build.log"
  [ -x "$BIN" ] || die "no binary at $BIN after the build"
}
