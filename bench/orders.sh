#!/usr/bin/env bash
# Benchmark of the order flow (docs/API.md, "Orders: intake, lifecycle and stock"): builds the release binary, loads the demo data set
# into a fresh database per backend, serves it over HTTPS (with --webhook-allow-insecure-localhost
# for a local receiver) and measures:
#   O1  order intake: POST /api/order as the demo host user, 5 lines a request, a new
#       hostOrderRef each (wrk, CONNECTIONS); each order takes the next 5 of SPREAD_VARIANTS
#       variants of the brand stocked in the brand store's warehouse, as a shop's orders
#       spread over its catalogue
#   O1h the same with the same 5 variants in every order: every intake updates the same 5
#       stock rows (the worst case of one hot product; reported, no goal)
#   O2  a dispatch array: POST /api/order/dispatch with DISPATCH_SIZE orders of O1, first
#       acknowledged by the admin (bench/orders_driver.py accept), timed with curl
#   O3  webhook delivery lag: LAG_ORDERS intakes at LAG_RATE a second with a host webhook on
#       order.created pointing at a receiver on 127.0.0.1; from each intake's answer (its
#       commit) to the receiver getting its event (bench/orders_driver.py lag)
#   R   the read workloads W1–W5 of bench/run.sh (as READ_USER), first alone, then while the
#       host pushes FLOW_RATE orders a second (bench/orders_driver.py flow)
#
#   bash bench/orders.sh                                  # from the repo root
#   SCALE=20000 DURATION=3 BACKENDS=sqlite bash bench/orders.sh
#
# Knobs (environment):
#   SCALE         demo variants (default 1000000)
#   BACKENDS      "sqlite postgres" (default); postgres needs psql and a server reachable at
#                 BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                 the script creates and finally drops its own database brandhub_bench_orders
#   DURATION      seconds per wrk workload (default 20)
#   CONNECTIONS   wrk connections (default 8)
#   THREADS       wrk threads (default 2)
#   READ_USER     the demo user of the read workloads (default admin, as bench/run.sh)
#   DISPATCH_SIZE orders in the dispatch array (default 1000, the most one request may hold)
#   LAG_ORDERS    intakes whose webhook lag is measured (default 200), at LAG_RATE a second
#                 (default 20)
#   SPREAD_VARIANTS  stocked variants O1's orders are spread over (default 500)
#   FLOW_RATE     orders a second during the second read pass (default 50), over FLOW_WORKERS
#                 connections (default 4)
#   PAGE_CACHE_MB, WRK_TIMEOUT, PORT, BENCH_WORK_DIR, BENCH_KEEP: as in bench/writes.sh
#
# Needs: a Rust toolchain, curl, python3, and wrk (installed with apt-get when missing and
# possible). Results: one table per backend at the end, with the goals beside them.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SCALE=${SCALE:-1000000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
DURATION=${DURATION:-20}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-2}
READ_USER=${READ_USER:-admin}
DISPATCH_SIZE=${DISPATCH_SIZE:-1000}
LAG_ORDERS=${LAG_ORDERS:-200}
LAG_RATE=${LAG_RATE:-20}
FLOW_RATE=${FLOW_RATE:-50}
FLOW_WORKERS=${FLOW_WORKERS:-4}
SPREAD_VARIANTS=${SPREAD_VARIANTS:-500}
PAGE_CACHE_MB=${PAGE_CACHE_MB:-32}
WRK_TIMEOUT=${WRK_TIMEOUT:-30s}
PORT=${PORT:-0}
BENCH_KEEP=${BENCH_KEEP:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_orders
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub
LUA_DIR=$ROOT/bench/lua
DRIVER=$ROOT/bench/orders_driver.py

# The goals of the orders issue.
SQLITE_GOAL_OPS=300       # orders/s with 8 connections, SQLite
POSTGRES_GOAL_OPS=500     # orders/s with 8 connections, PostgreSQL
GOAL_P50=10               # ms, an intake of 5 lines
DISPATCH_GOAL_MS=2000     # a dispatch array of 1,000 orders
LAG_GOAL_P50=200          # ms, commit to the receiver's answer
READ_RATIO_GOAL=2         # read p50 while orders flow, against the read-only p50

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $SCALE =~ ^[0-9]+$ ]] || die "SCALE must be a number"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION must be a number of seconds"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die "CONNECTIONS must be a number"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || die "THREADS must be a number"
[ "$CONNECTIONS" -ge "$THREADS" ] || die "CONNECTIONS must be at least THREADS"
[[ $DISPATCH_SIZE =~ ^[1-9][0-9]*$ ]] && [ "$DISPATCH_SIZE" -le 1000 ] || die "DISPATCH_SIZE must be 1 to 1000"
[[ $LAG_ORDERS =~ ^[1-9][0-9]*$ ]] || die "LAG_ORDERS must be a positive number"
[[ $LAG_RATE =~ ^[1-9][0-9]*$ ]] || die "LAG_RATE must be a positive number"
[[ $SPREAD_VARIANTS =~ ^[0-9]+$ ]] && [ "$SPREAD_VARIANTS" -ge 5 ] && [ "$SPREAD_VARIANTS" -le 1000 ] || die "SPREAD_VARIANTS must be 5 to 1000"
[[ $FLOW_RATE =~ ^[1-9][0-9]*$ ]] || die "FLOW_RATE must be a positive number"
[[ $FLOW_WORKERS =~ ^[1-9][0-9]*$ ]] || die "FLOW_WORKERS must be a positive number"
command -v python3 >/dev/null || die "python3 is needed (the order driver)"

bench_start orders
trap background_cleanup EXIT

build_release
ensure_wrk
WRK_VERSION=$( (wrk -v 2>&1 || true) | sed -n '1p')

# shellcheck source=bench/lib_load.sh
. "$ROOT/bench/lib_load.sh"

ops_goal() { if [ "$1" = sqlite ]; then echo "$SQLITE_GOAL_OPS"; else echo "$POSTGRES_GOAL_OPS"; fi; }

# The driver's "KEY k=v ..." line from a file into the associative array named by $3.
read_figures() {
  local file=$1 key=$2 kv
  local -n into=$3
  into=()
  for kv in $(sed -n "s/^$key //p" "$file"); do
    into[${kv%%=*}]=${kv#*=}
  done
}

RUN_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
section "brandhub order benchmark"
say "date $RUN_DATE; nproc $NPROC; CPU $CPU_MODEL; load average $LOADAVG"
say "SCALE $SCALE; BACKENDS $BACKENDS; DURATION ${DURATION}s; wrk -t$THREADS -c$CONNECTIONS; $WRK_VERSION; commit $COMMIT"

run_backend() {
  local backend=$1
  load_demo "$backend" "$SCALE"
  local demo_out=$dir/demo.out
  say "demo load took $DEMO_SECONDS s"
  section "$BACKEND_LABEL: serving"
  start_server "$dir/data" "$url" "$dir/server" --metrics-listen 127.0.0.1:0 --webhook-allow-insecure-localhost
  find_metrics "$dir/server.out"

  # -- The host's brand store, and 5 variants of its brand stocked in its warehouse.
  use_demo_user "$demo_out" host
  export_auth
  local host_user=$CRED_USER host_key=$CRED_KEY
  api_get "/api/brandStore?fields=id,fk_brand,fk_warehouse&pageSize=1&order_by=id" >"$WORK/bs.json" ||
    die "the host sees no brand store"
  local place
  place=$(python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["response"]["brandStore"][0]
key = lambda v: v["__KEY"] if isinstance(v, dict) else v
print(b["id"], key(b["fk_brand"]), key(b["fk_warehouse"]))' "$WORK/bs.json")
  local brand_store brand warehouse
  read -r brand_store brand warehouse <<<"$place"
  api_get "/api/stock?fk_warehouse=$warehouse&stock_variant.variant_product.fk_brand=$brand&fields=fk_variant&pageSize=$SPREAD_VARIANTS&order_by=id" >"$WORK/stock.json" ||
    die "cannot list the brand's stock"
  # intake.json: the same 5 variants in every order; intake_spread.json: "@V1@" … "@V5@",
  # filled by order_intake.lua from variants.txt.
  python3 - "$WORK/stock.json" "$brand_store" "$WORK" <<'EOF'
import json, sys
stock = json.load(open(sys.argv[1]))["response"]["stock"]
key = lambda v: v["__KEY"] if isinstance(v, dict) else v
if len(stock) < 5:
    sys.exit("fewer than 5 stocked variants")
def body(variants):
    return json.dumps({
        "fk_brandStore": sys.argv[2],
        "hostOrderRef": "@REF@",
        "shipAddress": {"forename": "Ada", "surname": "Lovelace", "line1": "1 Analytical Row",
                        "town": "London", "postcode": "N1 1AA", "countryCode": "GB"},
        "order_orderItem": [{"fk_variant": v, "orderQty": 1 + i % 2,
                             "itemPrice": 10 + i, "hostItemRef": "L%d" % i}
                            for i, v in enumerate(variants)],
    })
ids = [key(s["fk_variant"]) for s in stock]
open(sys.argv[3] + "/intake.json", "w").write(body(ids[:5]) + "\n")
open(sys.argv[3] + "/intake_spread.json", "w").write(body(["@V%d@" % (i + 1) for i in range(5)]) + "\n")
open(sys.argv[3] + "/variants.txt", "w").write("\n".join(ids) + "\n")
EOF
  say "brand store $brand_store (brand $brand, warehouse $warehouse), $(wc -l <"$WORK/variants.txt") stocked variants"

  # -- O1: intakes.
  section "$BACKEND_LABEL: O1 POST /api/order (5 lines) as the host ($host_user)"
  sed "s/@REF@/OB$TAG-FIRST/" "$WORK/intake.json" >"$WORK/first.json"
  request POST /api/order "$WORK/first.json"
  say "  first intake: HTTP $R_CODE in $R_MS ms; Server-Timing: ${R_TIMING:-none}"
  [ "$R_CODE" = 201 ] || die "POST /api/order answered $R_CODE: $(head -c 500 "$WORK/answer.json")"
  # Each order 5 variants of the next in the list: a shop's orders spread over its catalogue.
  export BENCH_BODY_FILE=$WORK/intake_spread.json BENCH_VARIANTS_FILE=$WORK/variants.txt BENCH_TAG=$TAG
  run_wrk O1 order_intake.lua
  local -A O=()
  if [ -n "${F[note]:-}" ]; then O[note]=${F[note]}; else
    O[p50]=${F[p50_ms]} O[p99]=${F[p99_ms]} O[ops]=${F[rps]} O[errors]=${F[errors]}
  fi
  # O1h: every order the same 5 variants, whose stock rows every intake then updates: the
  # worst case of one hot product, reported beside O1 (no goal of its own).
  section "$BACKEND_LABEL: O1h the same, every order of the same 5 variants"
  export BENCH_BODY_FILE=$WORK/intake.json BENCH_VARIANTS_FILE="" BENCH_TAG=${TAG}h
  run_wrk O1h order_intake.lua
  local -A OH=()
  if [ -n "${F[note]:-}" ]; then OH[note]=${F[note]}; else
    OH[p50]=${F[p50_ms]} OH[p99]=${F[p99_ms]} OH[ops]=${F[rps]} OH[errors]=${F[errors]}
  fi

  # -- O3: webhook lag (before O2, so that the receiver sees a quiet server).
  section "$BACKEND_LABEL: O3 webhook lag over $LAG_ORDERS intakes at $LAG_RATE/s"
  python3 "$DRIVER" lag "$BASE" "$host_user" "$host_key" "$WORK/intake.json" "$LAG_ORDERS" "$LAG_RATE" \
    "$WORK/lag.out" >"$WORK/lag.log" 2>&1 || { cat "$WORK/lag.log" >&2; die "the lag driver failed"; }
  indent <"$WORK/lag.out"
  local -A LAG=()
  read_figures "$WORK/lag.out" LAG LAG

  # -- O2: a dispatch array of DISPATCH_SIZE of O1's orders, acknowledged first.
  use_demo_user "$demo_out" admin
  section "$BACKEND_LABEL: O2 POST /api/order/dispatch with $DISPATCH_SIZE orders (as $CRED_USER)"
  api_get "/api/order?hostOrderRef=OB$TAG-@&status=new&fields=id&pageSize=$DISPATCH_SIZE&order_by=id" | ids_of >"$WORK/dispatch.ids" ||
    die "cannot list this run's orders"
  local listed
  listed=$(wc -l <"$WORK/dispatch.ids")
  [ "$listed" -ge 1 ] || die "O1 made no orders to dispatch"
  python3 "$DRIVER" accept "$BASE" "$CRED_USER" "$CRED_KEY" "$WORK/dispatch.ids" 8 "$WORK/accept.out" \
    >"$WORK/accept.log" 2>&1 || { cat "$WORK/accept.log" >&2; die "the accept driver failed"; }
  indent <"$WORK/accept.out"
  python3 - "$WORK/dispatch.ids" >"$WORK/dispatch.json" <<'EOF'
import json, sys
ids = [line.strip() for line in open(sys.argv[1]) if line.strip()]
print(json.dumps([{"id": i, "status": "dispatched", "carrier": "DPD", "trackingRef": "BENCH-%d" % n}
                  for n, i in enumerate(ids)]))
EOF
  request POST /api/order/dispatch "$WORK/dispatch.json"
  local applied
  applied=$(grep -o '"applied":[0-9]*' "$WORK/answer.json" | cut -d: -f2 || true)
  local dispatch_ms=$R_MS dispatch_code=$R_CODE
  say "  HTTP $R_CODE in $R_MS ms: ${applied:-?} of $listed applied; Server-Timing: ${R_TIMING:-none}"

  # -- R: reads alone, then while orders flow.
  use_demo_user "$demo_out" "$READ_USER"
  export_auth
  prepare_reads
  section "$BACKEND_LABEL: reads as $READ_USER ($CRED_USER), no writes"
  read_pass alone
  section "$BACKEND_LABEL: reads as $READ_USER while the host pushes $FLOW_RATE orders/s"
  python3 "$DRIVER" flow "$BASE" "$host_user" "$host_key" "$WORK/intake.json" "$FLOW_RATE" "$FLOW_WORKERS" \
    "$((5 * (DURATION + 5) + 30))" "$WORK/flow.out" >"$WORK/flow.log" 2>&1 &
  BACKGROUND_PID=$!
  sleep 2
  kill -0 "$BACKGROUND_PID" 2>/dev/null || { cat "$WORK/flow.log" >&2; die "the order flow stopped"; }
  read_pass writes
  stop_background
  [ -s "$WORK/flow.out" ] || { cat "$WORK/flow.log" >&2; die "the order flow left no figures"; }
  local -A FL=()
  read_figures "$WORK/flow.out" FLOW FL

  local peak load_end
  peak=$(rss_mb VmHWM)
  load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
  stop_server

  {
    printf '\n%s: orders as the host (%s), reads as %s\n' "$BACKEND_LABEL" "$host_user" "$READ_USER"
    printf 'date %s; nproc %s; CPU %s; load average %s at the start, %s at the end\n' \
      "$RUN_DATE" "$NPROC" "$CPU_MODEL" "$LOADAVG" "$load_end"
    printf 'SCALE %s (demo load %s s); %s s per wrk run; wrk %s threads, %s connections; commit %s; server peak RSS %s MB\n' \
      "$SCALE" "$DEMO_SECONDS" "$DURATION" "$THREADS" "$CONNECTIONS" "$COMMIT" "$peak"
    local verdict
    if [ -n "${O[note]:-}" ]; then
      printf 'O1 POST /api/order (5 lines): %s\n' "${O[note]}"
    else
      if [ "${O[errors]}" != 0 ]; then verdict="INVALID (errors)"
      elif ge "${O[ops]}" "$(ops_goal "$backend")" && le "${O[p50]}" "$GOAL_P50"; then verdict=met
      else verdict=MISSED; fi
      printf 'O1 POST /api/order (5 lines): p50 %.2f ms, p99 %.2f ms, %.1f orders/s, %s errors  %s (goal >= %s orders/s, p50 <= %s ms)\n' \
        "${O[p50]}" "${O[p99]}" "${O[ops]}" "${O[errors]}" "$verdict" "$(ops_goal "$backend")" "$GOAL_P50"
    fi
    if [ -n "${OH[note]:-}" ]; then
      printf 'O1h the same 5 variants in every order: %s\n' "${OH[note]}"
    else
      printf 'O1h the same 5 variants in every order: p50 %.2f ms, p99 %.2f ms, %.1f orders/s, %s errors  (the worst case, no goal)\n' \
        "${OH[p50]}" "${OH[p99]}" "${OH[ops]}" "${OH[errors]}"
    fi
    verdict=MISSED
    if [ "$dispatch_code" != 200 ] || [ "${applied:-0}" != "$listed" ]; then verdict="INVALID (not all applied)"
    elif [ "$listed" != "$DISPATCH_SIZE" ]; then verdict="only $listed orders"
    elif le "$dispatch_ms" "$DISPATCH_GOAL_MS"; then verdict=met; fi
    printf 'O2 POST /api/order/dispatch [%s]: %s ms, %s applied  %s (goal <= %s ms)\n' \
      "$listed" "$dispatch_ms" "${applied:-?}" "$verdict" "$DISPATCH_GOAL_MS"
    verdict=MISSED
    if [ "${LAG[missing]:-1}" != 0 ] || [ "${LAG[errors]:-1}" != 0 ]; then verdict="INVALID (lost or failed)"
    elif le "${LAG[p50_ms]}" "$LAG_GOAL_P50"; then verdict=met; fi
    printf 'O3 webhook lag over %s orders: p50 %s ms, p99 %s ms, max %s ms, %s missing  %s (goal p50 <= %s ms)\n' \
      "${LAG[orders]:-?}" "${LAG[p50_ms]:-?}" "${LAG[p99_ms]:-?}" "${LAG[max_ms]:-?}" "${LAG[missing]:-?}" "$verdict" "$LAG_GOAL_P50"
    say ""
    say "reads alone and while orders flow (p50 ms, p99 ms, req/s; hits: page cache, count cache for W4)"
    read_ratio_table
    printf 'order flow: %s orders, %s/s (asked for %s/s), intake p50 %s ms, p99 %s ms, %s errors\n' \
      "${FL[orders]:-?}" "${FL[rate]:-?}" "$FLOW_RATE" "${FL[p50_ms]:-?}" "${FL[p99_ms]:-?}" "${FL[errors]:-?}"
  } >>"$RESULTS"
  drop_database "$backend"
}

for backend in $BACKENDS; do
  run_backend "$backend"
done
print_results
