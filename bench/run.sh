#!/usr/bin/env bash
# Benchmark of the brandhub read API: builds the release binary, loads the demo data set into a
# fresh database per backend, serves it over HTTPS and drives five read workloads with wrk.
#
#   bash bench/run.sh                                  # from the repo root
#   SCALE=20000 DURATION=5 BACKENDS=sqlite bash bench/run.sh
#
# Knobs (environment):
#   SCALE        demo variants (default 1000000)
#   BACKENDS     "sqlite postgres" (default); postgres needs psql and a server reachable at
#                BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                the script creates and finally drops its own database brandhub_bench
#   DURATION     seconds per workload (default 20)
#   CONNECTIONS  wrk connections (default 8)
#   THREADS      wrk threads (default 2)
#   USER_TYPES   demo users to run the workloads as, by user type (admin sponsor company host
#                warehouse) or by email; the first demo user of a type is taken (default admin)
#   WRK_TIMEOUT  wrk's per-request timeout (default 30s; slower answers count as socket errors)
#   PORT         port to serve on (default 0: any free port)
#   PAGE_CACHE_MBS  page cache sizes to run the workloads with, one server run each (default
#                "32 0": the default cache, then no page cache, to show the engine alone)
#   BENCH_WORK_DIR  where data dirs and logs go (default target/bench-run); they are deleted at
#                the end unless BENCH_KEEP=1
#
# Needs: a Rust toolchain, curl, and wrk (installed with apt-get when missing and possible).
# Results: one table per backend and user type at the end, with the goals beside them.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SCALE=${SCALE:-1000000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
DURATION=${DURATION:-20}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-2}
USER_TYPES=${USER_TYPES:-admin}
WRK_TIMEOUT=${WRK_TIMEOUT:-30s}
PORT=${PORT:-0}
PAGE_CACHE_MBS=${PAGE_CACHE_MBS:-"32 0"}
PAGE_CACHE_MB=32
BENCH_KEEP=${BENCH_KEEP:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub
LUA_DIR=$ROOT/bench/lua

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"


[[ $SCALE =~ ^[0-9]+$ ]] || die "SCALE must be a number"
[[ $DURATION =~ ^[0-9]+$ ]] || die "DURATION must be a number of seconds"
[[ $CONNECTIONS =~ ^[0-9]+$ ]] || die "CONNECTIONS must be a number"
[[ $THREADS =~ ^[0-9]+$ ]] || die "THREADS must be a number"
[ "$CONNECTIONS" -ge "$THREADS" ] || die "CONNECTIONS must be at least THREADS"

# ---------------------------------------------------------------------------------------------
# Work dir, server and cleanup

bench_start run

# ---------------------------------------------------------------------------------------------
# 1. Build

section "Building (cargo build --release)"
if ! cargo build --release >"$WORK/build.log" 2>&1; then
  tail -n 60 "$WORK/build.log" >&2
  die "the release build failed"
fi
tail -n 1 "$WORK/build.log"
[ -x "$BIN" ] || die "no binary at $BIN after the build"

# ---------------------------------------------------------------------------------------------
# 2. The load tool

ensure_wrk
WRK_VERSION=$( (wrk -v 2>&1 || true) | sed -n '1p')

# ---------------------------------------------------------------------------------------------
# The machine

CPU_MODEL=$( (grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true) | cut -d: -f2- | sed 's/^ *//')
if [ -z "$CPU_MODEL" ] && command -v lscpu >/dev/null; then
  CPU_MODEL=$( (lscpu 2>/dev/null || true) | sed -n 's/^Model name: *//p' | sed -n '1p')
fi
CPU_MODEL=${CPU_MODEL:-$(uname -m)}
NPROC=$(nproc)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  COMMIT="$COMMIT (with uncommitted changes)"
fi

# ---------------------------------------------------------------------------------------------
# Talking to the server

CRED_USER=""  # the current demo user's email (see use_demo_user)
CRED_KEY=""   # and API key

# ---------------------------------------------------------------------------------------------
# Workloads

WORKLOADS=(W1 W2 W3 W4 W5)
declare -A SCRIPT=(
  [W1]=w1_stock.lua [W2]=w2_variant_barcode.lua [W3]=w3_stock_by_barcode.lua
  [W4]=w4_stock_count_brand.lua [W5]=w5_order_query.lua
)
declare -A TITLE=(
  [W1]="GET /api/stock"
  [W2]="GET /api/variant?barcode=5010xx@"
  [W3]="GET /api/stock?stock_variant.barcode=5010xx@&order_by=lastUpdate<"
  [W4]="GET /api/stock/count?stock_variant.variant_product.fk_brand=<brand>"
  [W5]="POST /api/order/query (status, carrier, 100 brand stores)"
)
declare -A GOAL_P50=([W1]=8 [W2]=3 [W3]=5 [W4]=50 [W5]=20)
W1_GOAL_RPS=400
DEMO_GOAL_S=180
RSS_GOAL_MB=150

# Results of the current user type, by workload.
declare -A R_P50 R_P99 R_RPS R_SHARE R_ERR R_COLD R_NOTE R_RSS

# The first request of a workload: time it with curl (cold), then check its answer.
cold_request() {
  local w=$1 method=$2 path=$3 body_file=${4:-}
  local out=$WORK/cold.$w.body hdr=$WORK/cold.$w.headers result code secs
  local extra=()
  if [ "$method" = POST ]; then
    extra=(-X POST -H 'Content-Type: application/json' --data-binary "@$body_file")
  fi
  result=$(api ${extra[@]+"${extra[@]}"} -o "$out" -D "$hdr" -w '%{http_code} %{time_total}' "$BASE$path") ||
    result="000 0"
  code=${result%% *}
  secs=${result#* }
  local ms timing
  ms=$(awk -v s="$secs" 'BEGIN { printf "%.1f", s * 1000 }')
  timing=$( (grep -i '^server-timing:' "$hdr" 2>/dev/null || true) | tr -d '\r' | cut -d: -f2- | sed 's/^ *//')
  say "  cold first request: $ms ms, HTTP $code; Server-Timing: ${timing:-none}"
  if [[ $code == 2* ]]; then
    R_COLD[$w]=$ms
    say "  answer ($(wc -c <"$out") bytes): $(head -c 160 "$out")"
  else
    R_COLD[$w]="HTTP $code"
    say "  answer: $(head -c 500 "$out")"
  fi
}

run_wrk() {
  local w=$1 out=$WORK/wrk.$w.txt
  if ! wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --timeout "$WRK_TIMEOUT" --latency \
    -s "$LUA_DIR/${SCRIPT[$w]}" "$BASE" >"$out" 2>&1; then
    indent <"$out"
    R_NOTE[$w]="wrk failed"
    return 0
  fi
  indent <"$out"
  local line
  line=$(sed -n 's/^BENCH //p' "$out" | sed -n '1p')
  if [ -z "$line" ]; then
    R_NOTE[$w]="no results from wrk"
    return 0
  fi
  local kv key value
  local -A m=()
  for kv in $line; do
    key=${kv%%=*}
    value=${kv#*=}
    m[$key]=$value
  done
  R_P50[$w]=${m[p50_ms]}
  R_P99[$w]=${m[p99_ms]}
  R_RPS[$w]=${m[rps]}
  R_SHARE[$w]=$(awk -v s="${m[db_share]}" 'BEGIN { printf "%.0f%%", s * 100 }')
  R_ERR[$w]=$((${m[non2xx]} + ${m[socket_errors]}))
}

goal_text() {
  case $1 in
    W1) printf 'p50 <= %s ms and >= %s req/s with 8 connections' "${GOAL_P50[W1]}" "$W1_GOAL_RPS" ;;
    *) printf 'p50 <= %s ms' "${GOAL_P50[$1]}" ;;
  esac
}

verdict() {
  local w=$1
  if [ -n "${R_NOTE[$w]:-}" ] || [ -z "${R_P50[$w]:-}" ]; then
    echo "no result"
  elif [ "${R_ERR[$w]}" != 0 ]; then
    echo "INVALID (errors)"
  elif ! le "${R_P50[$w]}" "${GOAL_P50[$w]}"; then
    echo "MISSED"
  elif [ "$w" = W1 ] && ! ge "${R_RPS[$w]}" "$W1_GOAL_RPS"; then
    echo "MISSED"
  elif [ "$w" = W1 ] && [ "$CONNECTIONS" != 8 ]; then
    echo "met (at $CONNECTIONS connections)"
  else
    echo "met"
  fi
}

# The cost of scope: each user type's p50 and req/s beside the admin's, as ratios (the goal:
# within 1.5 times the admin's p50).
compare_users() {
  local backend=$1 cache=$2
  [ -s "$WORK/compare.txt" ] || return 0
  awk -v b="$backend" -v c="$cache" '
    $1 == b && $2 == c && $3 == "admin" { p50[$4] = $5; rps[$4] = $6 }
    $1 == b && $2 == c && $3 != "admin" { rows[++n] = $0 }
    END {
      if (n == 0) exit
      printf "\nscope cost on %s, page cache %s MB: p50 and req/s against admin (goal: p50 within 1.5x)\n", b, c
      printf "%-10s %-8s %9s %9s %7s %9s %9s  %s\n", "user", "workload", "p50 ms", "admin", "ratio", "req/s", "admin", "verdict"
      for (i = 1; i <= n; i++) {
        split(rows[i], f, " ")
        ratio = (p50[f[4]] > 0 && f[5] != "-") ? f[5] / p50[f[4]] : 0
        verdict = (ratio == 0) ? "-" : (ratio <= 1.5 ? "met" : "MISSED")
        printf "%-10s %-8s %9s %9s %7.2f %9s %9s  %s\n", f[3], f[4], f[5], p50[f[4]], ratio, f[6], rps[f[4]], verdict
      }
    }' "$WORK/compare.txt"
}

# Runs the workloads as one demo user and appends its table to $RESULTS.
run_user() {
  local backend=$1 user_type=$2 demo_out=$3 demo_s=$4
  use_demo_user "$demo_out" "$user_type"
  export BENCH_AUTH BENCH_LUA_DIR=$LUA_DIR BENCH_BRAND BENCH_BODY_FILE=$WORK/w5.json
  BENCH_AUTH="Basic $(printf '%s:%s' "$CRED_USER" "$CRED_KEY" | base64 | tr -d '\n')"

  section "$backend, as $user_type ($CRED_USER)"
  R_P50=() R_P99=() R_RPS=() R_SHARE=() R_ERR=() R_COLD=() R_NOTE=() R_RSS=()

  # 4. What the workloads need, through the API.
  BENCH_BRAND=$(api_get "/api/brand?fields=id&pageSize=1" | ids_of | sed -n '1p' || true)
  local stores=() id
  while read -r id; do
    [ -n "$id" ] && stores+=("$id")
  done < <(api_get "/api/brandStore?fields=id&pageSize=100" | ids_of)
  local values="" sep=""
  for id in ${stores[@]+"${stores[@]}"}; do
    values+="$sep\"$id\""
    sep=","
  done
  printf '%s' '{"query":[{"field":"status","operator":"=","value":"dispatched"},{"field":"status","operator":"=","value":"partDispatched","conjunction":"|"},{"field":"carrier","operator":"=","value":"","conjunction":"#"}],"queryselectionwitharray":{"field":"fk_brandStore","values":['"$values"']}}' \
    >"$BENCH_BODY_FILE"
  say "brand id: ${BENCH_BRAND:-none visible}; brand stores: ${#stores[@]} ids"

  local w
  for w in "${WORKLOADS[@]}"; do
    printf '\n-- %s  %s\n' "$w" "${TITLE[$w]}"
    case $w in
      W1) cold_request W1 GET "/api/stock" ;;
      W2) cold_request W2 GET "/api/variant?barcode=501000@" ;;
      W3) cold_request W3 GET "/api/stock?stock_variant.barcode=501000@&order_by=lastUpdate%3C" ;;
      W4)
        if [ -z "$BENCH_BRAND" ]; then
          R_NOTE[W4]="skipped: no brand visible"
          say "  skipped: $CRED_USER sees no brand"
          continue
        fi
        cold_request W4 GET "/api/stock/count?stock_variant.variant_product.fk_brand=$BENCH_BRAND"
        ;;
      W5)
        if [ "${#stores[@]}" = 0 ]; then
          R_NOTE[W5]="skipped: no brand store visible"
          say "  skipped: $CRED_USER sees no brand store"
          continue
        fi
        cold_request W5 POST "/api/order/query" "$BENCH_BODY_FILE"
        ;;
    esac
    say "  wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --timeout $WRK_TIMEOUT --latency -s bench/lua/${SCRIPT[$w]}"
    run_wrk "$w"
    R_RSS[$w]=$(rss_mb VmHWM)
    if [ "$w" = W1 ]; then
      RSS_AFTER_W1=$(rss_mb VmHWM)
      say "  server peak RSS after W1: $RSS_AFTER_W1 MB"
    fi
  done
  local rss_end
  rss_end=$(rss_mb VmHWM)
  say "server peak RSS at the end: $rss_end MB"

  # How many of the 100 barcode prefixes the workloads W2 and W3 cycle through have variants
  # (a small SCALE has fewer brands, so most prefixes then find nothing).
  local urls=() p counts
  for p in $(seq 501000 501099); do
    urls+=("$BASE/api/variant/count?barcode=$p@")
  done
  counts=$(api -w '\n' "${urls[@]}" | grep -o '"count":[0-9]*' | cut -d: -f2 || true)
  local coverage
  coverage=$(awk '$1 > 0 { n++; s += $1 } END { printf "%d of 100 prefixes match variants (%d variants, %.0f per matching prefix)", n, s, n ? s / n : 0 }' <<<"$counts")
  say "barcode prefixes 501000..501099: $coverage"

  # 7. The table.
  local rss_verdict demo_verdict
  if ! [[ $RSS_AFTER_W1 =~ ^[0-9.]+$ ]]; then
    rss_verdict=unknown
  elif le "$RSS_AFTER_W1" "$RSS_GOAL_MB"; then
    rss_verdict=met
  else
    rss_verdict=MISSED
  fi
  if [ "$backend" = sqlite ]; then
    if le "$demo_s" "$DEMO_GOAL_S"; then demo_verdict="goal <= $DEMO_GOAL_S s on SQLite: met"; else
      demo_verdict="goal <= $DEMO_GOAL_S s on SQLite: MISSED"; fi
  else
    demo_verdict="no goal on PostgreSQL"
  fi
  {
    printf '\n%s, %s (%s), page cache %s MB\n' "$BACKEND_LABEL" "$user_type" "$CRED_USER" "$PAGE_CACHE_MB"
    printf 'date %s; nproc %s; CPU %s; load average %s\n' "$RUN_DATE" "$NPROC" "$CPU_MODEL" "$LOADAVG"
    printf 'backend %s; SCALE %s; %s s per workload; wrk %s threads, %s connections; commit %s\n' \
      "$BACKEND_LABEL" "$SCALE" "$DURATION" "$THREADS" "$CONNECTIONS" "$COMMIT"
    printf 'demo load: %s s (%s)\n' "$demo_s" "$demo_verdict"
    printf 'server peak RSS: %s MB after W1 (goal <= %s MB: %s), %s MB at the end\n' \
      "$RSS_AFTER_W1" "$RSS_GOAL_MB" "$rss_verdict" "$rss_end"
    printf 'barcode prefixes: %s\n' "$coverage"
    say "(p50, p99, req/s: wrk, warm; db share: sum of Server-Timing db / total; errors: non-2xx"
    say " and socket errors; cold 1st: curl time of the first request, before wrk; peak RSS: VmHWM"
    say " of the server after the workload)"
    printf '%-4s %9s %9s %9s %8s %7s %10s %8s  %-8s %s\n' \
      workload "p50 ms" "p99 ms" "req/s" "db share" errors "cold 1st" "peak RSS" verdict goal
    for w in "${WORKLOADS[@]}"; do
      if [ -n "${R_NOTE[$w]:-}" ] || [ -z "${R_P50[$w]:-}" ]; then
        printf '%-8s %s  (goal: %s)\n' "$w" "${R_NOTE[$w]:-no result}" "$(goal_text "$w")"
        continue
      fi
      local cold=${R_COLD[$w]:-?}
      [[ $cold =~ ^[0-9.]+$ ]] && cold="$cold ms"
      printf '%-8s %9.2f %9.2f %9.1f %8s %7s %10s %8s  %-8s %s\n' "$w" "${R_P50[$w]}" "${R_P99[$w]}" \
        "${R_RPS[$w]}" "${R_SHARE[$w]}" "${R_ERR[$w]}" "$cold" "${R_RSS[$w]:-?} MB" "$(verdict "$w")" \
        "$(goal_text "$w")"
    done
  } >>"$RESULTS"
  for w in "${WORKLOADS[@]}"; do
    printf '%s %s %s %s %s %s\n' "$backend" "$PAGE_CACHE_MB" "$user_type" "$w" "${R_P50[$w]:--}" "${R_RPS[$w]:--}" >>"$WORK/compare.txt"
  done
}

# ---------------------------------------------------------------------------------------------
# 3.–8. Per backend

RUN_DATE=$(date '+%Y-%m-%d %H:%M:%S %Z')
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
section "brandhub read benchmark"
say "date $RUN_DATE; nproc $NPROC; CPU $CPU_MODEL; load average $LOADAVG"
say "SCALE $SCALE; BACKENDS $BACKENDS; USER_TYPES $USER_TYPES; DURATION ${DURATION}s; wrk -t$THREADS -c$CONNECTIONS; $WRK_VERSION"
say "commit $COMMIT"

for backend in $BACKENDS; do
  load_demo "$backend" "$SCALE"
  demo_s=$DEMO_SECONDS
  sed '/^demo users/,$d' "$dir/demo.out" | indent
  say "demo load took $demo_s s (wall clock of brandhub demo)"

  for PAGE_CACHE_MB in $PAGE_CACHE_MBS; do
    section "$BACKEND_LABEL: serving with a page cache of $PAGE_CACHE_MB MB"
    start_server "$dir/data" "$url" "$dir/server"
    RSS_AFTER_W1="?"
    for user_type in $USER_TYPES; do
      run_user "$backend" "$user_type" "$dir/demo.out" "$demo_s"
    done
    compare_users "$backend" "$PAGE_CACHE_MB" >>"$RESULTS"
    if [ -s "$dir/server.err" ]; then
      say "server log: $(wc -l <"$dir/server.err") lines at level warn or above; distinct messages, most frequent first:"
      sed -E 's/\x1b\[[0-9;]*m//g; s/^[0-9]{4}-[0-9T:.+-]+Z? +//' "$dir/server.err" |
        sort | uniq -c | sort -rn | awk 'NR <= 20' | indent
    else
      say "server log: empty at level warn"
    fi
    stop_server
  done
  drop_database "$backend"
done

print_results
