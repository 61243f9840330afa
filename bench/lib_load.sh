# Shell helpers of the load benchmarks (bench/writes.sh, bench/orders.sh), sourced after
# bench/lib.sh: the machine's description, wrk runs with the figures the Lua scripts print,
# single timed requests, the cache tallies of the server's metrics, and the read workloads
# W1–W5 of bench/run.sh as one pass. The sourcing script sets WORK, LUA_DIR, THREADS,
# CONNECTIONS, DURATION, WRK_TIMEOUT and BASE; METRICS once its server says where they are.

# ---------------------------------------------------------------------------------------------
# The machine

CPU_MODEL=$( (grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true) | cut -d: -f2- | sed 's/^ *//')
CPU_MODEL=${CPU_MODEL:-$(uname -m)}
NPROC=$(nproc)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  COMMIT="$COMMIT (with uncommitted changes)"
fi
TAG=$(date +%H%M%S)   # makes codes and barcodes unique to this run

CRED_USER=""  # the current demo user (see use_demo_user)
CRED_KEY=""

# Sets BENCH_AUTH (for the Lua scripts) from the current demo user.
export_auth() {
  export BENCH_AUTH BENCH_LUA_DIR=$LUA_DIR
  BENCH_AUTH="Basic $(printf '%s:%s' "$CRED_USER" "$CRED_KEY" | base64 | tr -d '\n')"
}

# ---------------------------------------------------------------------------------------------
# Measuring

# Runs wrk with a script as the current user; the figures go to F_<key> (p50_ms, p99_ms, rps,
# requests, non2xx, socket_errors), F_errors (their sum) and F_note (set when there are none).
declare -A F
run_wrk() {
  local name=$1 script=$2 out=$WORK/wrk.$1.txt
  F=()
  say "  wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --timeout $WRK_TIMEOUT --latency -s bench/lua/$script"
  if ! wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --timeout "$WRK_TIMEOUT" --latency \
    -s "$LUA_DIR/$script" "$BASE" >"$out" 2>&1; then
    indent <"$out"
    F[note]="wrk failed"
    return 0
  fi
  indent <"$out"
  local line kv
  line=$(sed -n 's/^BENCH //p' "$out" | sed -n '1p')
  if [ -z "$line" ]; then
    F[note]="no results from wrk"
    return 0
  fi
  for kv in $line; do
    F[${kv%%=*}]=${kv#*=}
  done
  F[errors]=$((${F[non2xx]} + ${F[socket_errors]}))
}

METRICS=""  # http://host:port/metrics of the running server
# A cache's hits and misses so far (page: rendered pages; count: counts in memory): "hits misses".
cache_tally() {
  curl -s --max-time 10 "$METRICS" | awk -v c="$1" '
    index($0, "brandhub_cache_hits_total{cache=\"" c "\"}") == 1 { h = $2 }
    index($0, "brandhub_cache_misses_total{cache=\"" c "\"}") == 1 { m = $2 }
    END { printf "%d %d\n", h, m }'
}
# The hit rate between two tallies, as "NN% of N".
hit_rate() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, " "); split(b, y, " "); h = y[1] - x[1]; m = y[2] - x[2]
    if (h + m == 0) { print "-"; exit }
    printf "%.1f%% of %d\n", 100 * h / (h + m), h + m }'
}

# Milliseconds from curl's seconds.
ms_of() { awk -v s="$1" 'BEGIN { printf "%.1f", s * 1000 }'; }
median_max() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "- -"; exit }
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f\n", m, v[NR] }'; }

# One request as the current user: METHOD PATH [BODY_FILE]; sets R_CODE, R_MS, R_TIMING and
# leaves the answer in $WORK/answer.json.
request() {
  local method=$1 path=$2 body=${3:-} result extra=()
  [ -n "$body" ] && extra=(-H 'Content-Type: application/json' --data-binary "@$body")
  result=$(api -X "$method" ${extra[@]+"${extra[@]}"} -o "$WORK/answer.json" -D "$WORK/answer.headers" \
    -w '%{http_code} %{time_total}' "$BASE$path") || result="000 0"
  R_CODE=${result%% *}
  R_MS=$(ms_of "${result#* }")
  R_TIMING=$( (grep -i '^server-timing:' "$WORK/answer.headers" 2>/dev/null || true) | tr -d '\r' | cut -d: -f2- | sed 's/^ *//')
}

# ---------------------------------------------------------------------------------------------
# The read workloads of bench/run.sh

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

# What W4 and W5 need, as the current user (as bench/run.sh prepares them).
prepare_reads() {
  export BENCH_BRAND BENCH_BODY_FILE=$WORK/w5.json
  BENCH_BRAND=$(api_get "/api/brand?fields=id&pageSize=1" | ids_of | sed -n '1p' || true)
  local values="" sep="" id
  while read -r id; do
    [ -n "$id" ] || continue
    values+="$sep\"$id\""
    sep=","
  done < <(api_get "/api/brandStore?fields=id&pageSize=100" | ids_of)
  printf '%s' '{"query":[{"field":"status","operator":"=","value":"dispatched"},{"field":"status","operator":"=","value":"partDispatched","conjunction":"|"},{"field":"carrier","operator":"=","value":"","conjunction":"#"}],"queryselectionwitharray":{"field":"fk_brandStore","values":['"$values"']}}' \
    >"$BENCH_BODY_FILE"
  [ -n "$BENCH_BRAND" ] || die "$CRED_USER sees no brand (W4)"
  [ -n "$values" ] || die "$CRED_USER sees no brand store (W5)"
}

# One pass of W1–W5 as the current user; figures go to RD_<pass>_* by workload.
declare -A RD_P50 RD_P99 RD_RPS RD_ERR RD_HIT
read_pass() {
  local pass=$1 w before after cache
  for w in "${WORKLOADS[@]}"; do
    printf '\n-- %s  %s (%s)\n' "$w" "${TITLE[$w]}" "$pass"
    cache=page
    [ "$w" = W4 ] && cache=count  # a count is not a page: the count cache answers it
    before=$(cache_tally "$cache")
    run_wrk "$pass.$w" "${SCRIPT[$w]}"
    after=$(cache_tally "$cache")
    RD_HIT[$pass.$w]=$(hit_rate "$before" "$after")
    say "  $cache cache: ${RD_HIT[$pass.$w]} lookups were hits"
    if [ -n "${F[note]:-}" ]; then
      RD_P50[$pass.$w]="${F[note]}"
      continue
    fi
    RD_P50[$pass.$w]=${F[p50_ms]}
    RD_P99[$pass.$w]=${F[p99_ms]}
    RD_RPS[$pass.$w]=${F[rps]}
    RD_ERR[$pass.$w]=${F[errors]}
  done
}


# The table of the read passes "alone" and "writes" (RD_* by workload) with their p50 ratio
# against READ_RATIO_GOAL.
read_ratio_table() {
  printf '%-4s %9s %9s %6s %9s %9s %9s %9s %16s %16s  %-16s\n' workload "p50" "p50 w" ratio "p99" "p99 w" \
    "req/s" "req/s w" "hits" "hits w" verdict
  for w in "${WORKLOADS[@]}"; do
    local a=${RD_P50[alone.$w]:-} b=${RD_P50[writes.$w]:-}
    if ! [[ $a =~ ^[0-9.]+$ && $b =~ ^[0-9.]+$ ]]; then
      printf '%-8s %s / %s\n' "$w" "${a:-no result}" "${b:-no result}"
      continue
    fi
    local ratio verdict
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (a > 0) ? b / a : 0 }')
    if [ "${RD_ERR[alone.$w]}" != 0 ] || [ "${RD_ERR[writes.$w]}" != 0 ]; then verdict="INVALID (errors)"
    elif le "$ratio" "$READ_RATIO_GOAL"; then verdict=met; else verdict=MISSED; fi
    printf '%-8s %9.2f %9.2f %6s %9.2f %9.2f %9.1f %9.1f %16s %16s  %-16s\n' "$w" "$a" "$b" "$ratio" \
      "${RD_P99[alone.$w]}" "${RD_P99[writes.$w]}" "${RD_RPS[alone.$w]}" "${RD_RPS[writes.$w]}" \
      "${RD_HIT[alone.$w]}" "${RD_HIT[writes.$w]}" "$verdict"
  done
  printf '(goal: read p50 under writes within %sx of the p50 alone)\n' "$READ_RATIO_GOAL"
}

# Sets METRICS from what the server started last printed into <file> (its --metrics-listen).
find_metrics() {
  local i
  METRICS=""
  for i in $(seq 1 50); do
    METRICS=$(sed -n 's|^metrics at \(http://[^ ]*\)$|\1|p' "$1" | sed -n '1p')
    [ -n "$METRICS" ] && break
    sleep 0.1
  done
  [ -n "$METRICS" ] || die "the server did not say where its metrics are"
}
