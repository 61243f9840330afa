#!/usr/bin/env bash
# Benchmark of the brandhub write API (docs/API.md, "Writes: master data and catalogue"): builds the release binary, loads the demo
# data set into a fresh database per backend, serves it over HTTPS and measures, as a demo user
# that owns brands (WRITE_USER, default company):
#   P1  single-record creates: POST /api/product, a new code per request (wrk, CONNECTIONS)
#   P2  single-record changes: PATCH /api/stock/<id> setting inStock, over STOCK_IDS of the
#       user's stock records (wrk, CONNECTIONS)
#   P3  an array create: POST /api/variant with BULK_SIZE variants of one new product, timed
#       with curl, BULK_REPS times
#   R   the read workloads W1–W5 of bench/run.sh (as READ_USER, default admin), first alone,
#       then again while bench/background_writer.py writes WRITER_RATE records a second
#       (stock and variants, alternately) and checks after every write that reads by id and
#       list queries show the value just written; the page cache's hits and misses of each
#       workload come from the server's /metrics.
#
#   bash bench/writes.sh                                  # from the repo root
#   SCALE=20000 DURATION=3 BACKENDS=sqlite bash bench/writes.sh
#
# Knobs (environment):
#   SCALE        demo variants (default 1000000)
#   BACKENDS     "sqlite postgres" (default); postgres needs psql and a server reachable at
#                BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                the script creates and finally drops its own database brandhub_bench_writes
#   DURATION     seconds per wrk workload (default 20)
#   CONNECTIONS  wrk connections (default 8)
#   THREADS      wrk threads (default 2)
#   WRITE_USER   the demo user that writes, by user type or email (default company)
#   READ_USER    the demo user of the read workloads (default admin, as bench/run.sh)
#   WRITER_USER  the demo user of the background writer (default WRITE_USER; it writes records
#                of WRITE_USER's brand and warehouse, so it must be allowed to: admin is)
#   STOCK_IDS    stock records the PATCH workload cycles through (default 1000)
#   BULK_SIZE    variants in the array create (default 1000, the most one request may hold)
#   BULK_REPS    array creates to time (default 5)
#   WRITER_RATE  background writes per second during the second read pass (default 50)
#   WARMUP       seconds of each write workload run first and not counted (default 5): the
#                first seconds after the demo load and a fresh server are the database's
#                first touches of the pages written (full-page images in PostgreSQL's WAL
#                after the load's checkpoint) and the server's empty caches
#   WRITER_CONNECTIONS  the background writer's connections, which share its schedule (default
#                8: a write and its checks take longer than 1/50 s on a busy server)
#   PAGE_CACHE_MB  the server's page cache (default 32, the server's default)
#   WRK_TIMEOUT  wrk's per-request timeout (default 30s; slower answers count as socket errors)
#   PORT         port to serve on (default 0: any free port)
#   BENCH_WORK_DIR  where data dirs and logs go (default target/bench-run); they are deleted at
#                the end unless BENCH_KEEP=1
#
# Needs: a Rust toolchain, curl, python3 (the background writer), and wrk (installed with
# apt-get when missing and possible). Results: one table per backend at the end, with the
# goals beside them.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SCALE=${SCALE:-1000000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
DURATION=${DURATION:-20}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-2}
WRITE_USER=${WRITE_USER:-company}
READ_USER=${READ_USER:-admin}
WRITER_USER=${WRITER_USER:-$WRITE_USER}
STOCK_IDS=${STOCK_IDS:-1000}
BULK_SIZE=${BULK_SIZE:-1000}
BULK_REPS=${BULK_REPS:-5}
WRITER_RATE=${WRITER_RATE:-50}
WARMUP=${WARMUP:-5}
WRITER_CONNECTIONS=${WRITER_CONNECTIONS:-8}
PAGE_CACHE_MB=${PAGE_CACHE_MB:-32}
WRK_TIMEOUT=${WRK_TIMEOUT:-30s}
PORT=${PORT:-0}
BENCH_KEEP=${BENCH_KEEP:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_writes
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub
LUA_DIR=$ROOT/bench/lua
WRITER=$ROOT/bench/background_writer.py

# The goals of the writes issue.
SQLITE_GOAL_WPS=1000      # single-record writes/s with 8 connections, SQLite
SQLITE_GOAL_P50=5         # ms, single-record writes, SQLite
POSTGRES_GOAL_WPS=2000    # single-record writes/s with 8 connections, PostgreSQL
BULK_GOAL_MS=200          # an array of 1,000 variants
READ_RATIO_GOAL=2         # read p50 under background writes, against the read-only p50
STALE_GOAL=0

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $SCALE =~ ^[0-9]+$ ]] || die "SCALE must be a number"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION must be a number of seconds"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die "CONNECTIONS must be a number"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || die "THREADS must be a number"
[ "$CONNECTIONS" -ge "$THREADS" ] || die "CONNECTIONS must be at least THREADS"
[[ $STOCK_IDS =~ ^[1-9][0-9]*$ ]] && [ "$STOCK_IDS" -le 1000 ] || die "STOCK_IDS must be 1 to 1000"
[[ $BULK_SIZE =~ ^[1-9][0-9]*$ ]] && [ "$BULK_SIZE" -le 1000 ] || die "BULK_SIZE must be 1 to 1000"
[[ $BULK_REPS =~ ^[1-9][0-9]*$ ]] || die "BULK_REPS must be a positive number"
[[ $WRITER_RATE =~ ^[1-9][0-9]*$ ]] || die "WRITER_RATE must be a positive number"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "WARMUP must be a number of seconds"
[[ $WRITER_CONNECTIONS =~ ^[1-9][0-9]*$ ]] && [ "$WRITER_CONNECTIONS" -le 25 ] ||
  die "WRITER_CONNECTIONS must be 1 to 25"
[[ $PAGE_CACHE_MB =~ ^[0-9]+$ ]] || die "PAGE_CACHE_MB must be a number"
command -v python3 >/dev/null || die "python3 is needed (the background writer)"
[ -r "$WRITER" ] || die "the background writer $WRITER is missing"

# ---------------------------------------------------------------------------------------------
# Work dir, server and cleanup

bench_start writes
trap background_cleanup EXIT

# ---------------------------------------------------------------------------------------------
# 1. Build and the load tool

build_release

ensure_wrk
WRK_VERSION=$( (wrk -v 2>&1 || true) | sed -n '1p')

# The machine, wrk runs, requests and the read workloads W1–W5 (shared with bench/orders.sh).
# shellcheck source=bench/lib_load.sh
. "$ROOT/bench/lib_load.sh"

# WARMUP seconds of a write workload, not counted (its writes carry the tag BENCH_TAG's run
# tag with a 9 after it, so they are not among the run's products).
warm_up() {
  [ "$WARMUP" -gt 0 ] || return 0
  say "  warm-up: ${WARMUP}s of the same, not counted"
  BENCH_TAG=${TAG}9 wrk -t"$THREADS" -c"$CONNECTIONS" -d"${WARMUP}s" --timeout "$WRK_TIMEOUT" \
    -s "$LUA_DIR/$1" "$BASE" >/dev/null 2>&1 || say "  (the warm-up's wrk failed)"
}

wps_goal() { if [ "$1" = sqlite ]; then echo "$SQLITE_GOAL_WPS"; else echo "$POSTGRES_GOAL_WPS"; fi; }
write_goal_text() {
  if [ "$1" = sqlite ]; then
    printf '>= %s writes/s and p50 <= %s ms with 8 connections' "$SQLITE_GOAL_WPS" "$SQLITE_GOAL_P50"
  else
    printf '>= %s writes/s with 8 connections' "$POSTGRES_GOAL_WPS"
  fi
}
write_verdict() {
  local backend=$1 p50=$2 wps=$3 errors=$4
  if [ "$errors" != 0 ]; then
    echo "INVALID (errors)"
  elif ! ge "$wps" "$(wps_goal "$backend")"; then
    echo MISSED
  elif [ "$backend" = sqlite ] && ! le "$p50" "$SQLITE_GOAL_P50"; then
    echo MISSED
  elif [ "$CONNECTIONS" != 8 ]; then
    echo "met (at $CONNECTIONS connections)"
  else
    echo met
  fi
}

# ---------------------------------------------------------------------------------------------
# Per backend

RUN_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
section "brandhub write benchmark"
say "date $RUN_DATE; nproc $NPROC; CPU $CPU_MODEL; load average $LOADAVG"
say "SCALE $SCALE; BACKENDS $BACKENDS; DURATION ${DURATION}s; wrk -t$THREADS -c$CONNECTIONS; $WRK_VERSION"
say "writes as $WRITE_USER, reads as $READ_USER, background writes as $WRITER_USER; page cache $PAGE_CACHE_MB MB; commit $COMMIT"

run_backend() {
  local backend=$1
  load_demo "$backend" "$SCALE"
  local demo_out=$dir/demo.out
  sed '/^demo users/,$d' "$demo_out" | indent
  say "demo load took $DEMO_SECONDS s"
  local load_start
  load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')

  section "$BACKEND_LABEL: serving (page cache $PAGE_CACHE_MB MB)"
  start_server "$dir/data" "$url" "$dir/server" --metrics-listen 127.0.0.1:0
  find_metrics "$dir/server.out"

  # -- What the writes need, as the writing user.
  use_demo_user "$demo_out" "$WRITE_USER"
  export_auth
  local write_email=$CRED_USER
  section "$BACKEND_LABEL: writes as $WRITE_USER ($CRED_USER)"
  local brand warehouses=() id filter=""
  brand=$(api_get "/api/brand?fields=id&pageSize=1" | ids_of | sed -n '1p' || true)
  [ -n "$brand" ] || die "$CRED_USER sees no brand"
  while read -r id; do
    [ -n "$id" ] && warehouses+=("$id") && filter+="&fk_warehouse=$id"
  done < <(api_get "/api/warehouse?fields=id&pageSize=100" | ids_of)
  [ "${#warehouses[@]}" -gt 0 ] || die "$CRED_USER sees no warehouse (stock writes are of one's warehouses)"
  # Stock of the user's warehouses with their variants' barcodes: "<stock id> <barcode>".
  api_get "/api/stock?fields=id,stock_variant.barcode&pageSize=1000$filter" >"$WORK/stock.json" ||
    die "cannot list $CRED_USER's stock"
  python3 - "$WORK/stock.json" >"$WORK/stock.rows" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["response"]["stock"]:
    print(r["id"], (r.get("stock_variant") or {}).get("barcode") or "-")
EOF
  local stock_count
  stock_count=$(wc -l <"$WORK/stock.rows")
  [ "$stock_count" -ge 2 ] || die "$CRED_USER has $stock_count stock records in its warehouses"
  # The PATCH workload takes the first STOCK_IDS, the background writer the last 50 (or what
  # is left): the two never write the same records.
  local writer_stock=$((stock_count / 2 < 50 ? stock_count / 2 : 50))
  head -n "$((stock_count - writer_stock < STOCK_IDS ? stock_count - writer_stock : STOCK_IDS))" "$WORK/stock.rows" |
    cut -d' ' -f1 >"$WORK/patch.ids"
  tail -n "$writer_stock" "$WORK/stock.rows" >"$WORK/writer.stock"
  api_get "/api/variant?fields=id,barcode&pageSize=50&variant_product.fk_brand=$brand" >"$WORK/variants.json" ||
    die "cannot list $CRED_USER's variants"
  python3 - "$WORK/variants.json" >"$WORK/writer.variant" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["response"]["variant"]:
    print(r["id"], r.get("barcode") or "-")
EOF
  [ -s "$WORK/writer.variant" ] || die "$CRED_USER sees no variant of its brand $brand"
  say "brand $brand; ${#warehouses[@]} warehouses; $stock_count stock records listed ($(wc -l <"$WORK/patch.ids") for PATCH, $writer_stock for the background writer); $(wc -l <"$WORK/writer.variant") variants for the background writer"

  # -- P1: single creates.
  printf '\n-- P1  POST /api/product (one new product a request)\n'
  printf '{"fk_brand":"%s","code":"WB%s-FIRST","title":"Benchmark product, first"}' "$brand" "$TAG" >"$WORK/first.json"
  request POST /api/product "$WORK/first.json"
  say "  first create: HTTP $R_CODE in $R_MS ms; Server-Timing: ${R_TIMING:-none}"
  [ "$R_CODE" = 201 ] || die "POST /api/product as $CRED_USER answered $R_CODE: $(head -c 500 "$WORK/answer.json")"
  export BENCH_BRAND=$brand BENCH_TAG=$TAG
  warm_up write_post_product.lua
  run_wrk P1 write_post_product.lua
  local -A W_P50=() W_P99=() W_WPS=() W_ERR=() W_NOTE=()
  if [ -n "${F[note]:-}" ]; then W_NOTE[P1]=${F[note]}; else
    W_P50[P1]=${F[p50_ms]} W_P99[P1]=${F[p99_ms]} W_WPS[P1]=${F[rps]} W_ERR[P1]=${F[errors]}
  fi
  local created
  created=$(api_get "/api/product/count?code=WB$TAG-@" | grep -o '"count":[0-9]*' | cut -d: -f2 || true)
  say "  products with this run's codes in the database: ${created:-?} (wrk counted ${F[requests]:-?} answers, ${F[non2xx]:-?} not 2xx; requests still in flight when wrk stopped are written but not counted)"

  # -- P2: single changes.
  printf '\n-- P2  PATCH /api/stock/<id> (inStock, %s records)\n' "$(wc -l <"$WORK/patch.ids")"
  export BENCH_IDS_FILE=$WORK/patch.ids
  warm_up write_patch_stock.lua
  run_wrk P2 write_patch_stock.lua
  if [ -n "${F[note]:-}" ]; then W_NOTE[P2]=${F[note]}; else
    W_P50[P2]=${F[p50_ms]} W_P99[P2]=${F[p99_ms]} W_WPS[P2]=${F[rps]} W_ERR[P2]=${F[errors]}
  fi

  # -- P3: array creates of BULK_SIZE variants of one new product.
  printf '\n-- P3  POST /api/variant with an array of %s variants (%s times)\n' "$BULK_SIZE" "$BULK_REPS"
  printf '{"fk_brand":"%s","code":"WB%s-BULK","title":"Benchmark product for array creates"}' "$brand" "$TAG" >"$WORK/bulk-product.json"
  request POST /api/product "$WORK/bulk-product.json"
  [ "$R_CODE" = 201 ] || die "POST /api/product as $CRED_USER answered $R_CODE: $(head -c 500 "$WORK/answer.json")"
  local product rep times=() bulk_errors=0 sent
  product=$(ids_of <"$WORK/answer.json" | sed -n '1p')
  for rep in $(seq 1 "$BULK_REPS"); do
    # Barcodes 29<run tag, 6 digits><rep, 2 digits><n, 3 digits>: unique to the run.
    awk -v p="$product" -v t="$TAG" -v r="$rep" -v n="$BULK_SIZE" 'BEGIN {
      printf "["
      for (i = 0; i < n; i++) {
        printf "%s{\"fk_product\":\"%s\",\"barcode\":\"29%06d%02d%03d\",\"code\":\"WB%s-%d-%d\",\"colour\":\"Bench\",\"size\":\"S%d\",\"sequence\":%d}", \
          (i ? "," : ""), p, t, r % 100, i, t, r, i, i, i
      }
      printf "]"
    }' >"$WORK/bulk.json"
    request POST /api/variant "$WORK/bulk.json"
    sent=$(grep -o '"barcode":"29' "$WORK/answer.json" | wc -l)
    say "  array $rep: HTTP $R_CODE in $R_MS ms, $sent variants in the answer; Server-Timing: ${R_TIMING:-none}"
    if [ "$R_CODE" = 201 ] && [ "$sent" = "$BULK_SIZE" ]; then
      times+=("$R_MS")
    else
      bulk_errors=$((bulk_errors + 1))
      say "  answer: $(head -c 500 "$WORK/answer.json")"
    fi
  done
  local bulk_median bulk_max
  read -r bulk_median bulk_max < <(printf '%s\n' ${times[@]+"${times[@]}"} | grep . | median_max)

  # -- R: the read workloads alone, then under background writes.
  use_demo_user "$demo_out" "$READ_USER"
  export_auth
  prepare_reads
  section "$BACKEND_LABEL: reads as $READ_USER ($CRED_USER), no writes"
  read_pass alone
  use_demo_user "$demo_out" "$WRITER_USER"
  local writer_email=$CRED_USER writer_seconds=$((5 * (DURATION + 5) + 30))
  section "$BACKEND_LABEL: reads as $READ_USER while $WRITER_USER writes $WRITER_RATE records/s"
  python3 "$WRITER" "$BASE" "$CRED_USER" "$CRED_KEY" "$WORK/writer.stock" "$WORK/writer.variant" \
    "$WRITER_RATE" "$WRITER_CONNECTIONS" "$writer_seconds" "$WORK/writer.out" >"$WORK/writer.log" 2>&1 &
  BACKGROUND_PID=$!
  sleep 2
  kill -0 "$BACKGROUND_PID" 2>/dev/null || { cat "$WORK/writer.log" >&2; die "the background writer stopped"; }
  use_demo_user "$demo_out" "$READ_USER"
  export_auth
  read_pass writes
  stop_background
  [ -s "$WORK/writer.out" ] || { cat "$WORK/writer.log" >&2; die "the background writer left no figures"; }
  indent <"$WORK/writer.out"
  local -A WR=()
  local kv
  for kv in $(sed -n 's/^WRITER //p' "$WORK/writer.out"); do
    WR[${kv%%=*}]=${kv#*=}
  done

  # -- The server's answers by status, from its metrics (every phase of this backend).
  local statuses
  statuses=$(curl -s --max-time 10 "$METRICS" | awk '
    /^brandhub_http_requests_total\{/ {
      match($0, /method="[^"]*"/); m = substr($0, RSTART + 8, RLENGTH - 9)
      match($0, /route="[^"]*"/); r = substr($0, RSTART + 7, RLENGTH - 8)
      match($0, /status="[^"]*"/); s = substr($0, RSTART + 8, RLENGTH - 9)
      if (s !~ /^2/) printf "%s %s %s: %d; ", m, r, s, $2
    }')
  # The server's log at level warn: its distinct messages (times taken out), and the slow
  # statements sqlx reports (over 1 s).
  local log_lines=0 slow=0 slowest=""
  if [ -s "$dir/server.err" ]; then
    log_lines=$(wc -l <"$dir/server.err")
    slow=$(grep -c 'slow statement' "$dir/server.err" || true)
    slowest=$( (grep -o 'elapsed_secs=[0-9.]*' "$dir/server.err" || true) | cut -d= -f2 | sort -n | sed -n '$p')
    say "server log: $log_lines lines at level warn or above; distinct messages, most frequent first:"
    sed -E 's/\x1b\[[0-9;]*m//g; s/^[0-9]{4}-[0-9T:.+-]+Z? +//; s/elapsed=[^ ]* elapsed_secs=[^ ]*/elapsed=(…)/' "$dir/server.err" |
      cut -c1-400 | sort | uniq -c | sort -rn | awk 'NR <= 20' | indent
  else
    say "server log: empty at level warn"
  fi
  local peak load_end
  peak=$(rss_mb VmHWM)
  load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
  stop_server

  # -- The table.
  local w goal
  goal=$(write_goal_text "$backend")
  {
    printf '\n%s: writes as %s (%s), reads as %s, page cache %s MB\n' "$BACKEND_LABEL" "$WRITE_USER" \
      "$write_email" "$READ_USER" "$PAGE_CACHE_MB"
    printf 'date %s; nproc %s; CPU %s; load average %s at the start, %s after the demo load, %s at the end\n' \
      "$RUN_DATE" "$NPROC" "$CPU_MODEL" "$LOADAVG" "$load_start" "$load_end"
    printf 'SCALE %s (demo load %s s); %s s per wrk run (P1, P2 after %s s of warm-up); wrk %s threads, %s connections; commit %s\n' \
      "$SCALE" "$DEMO_SECONDS" "$DURATION" "$WARMUP" "$THREADS" "$CONNECTIONS" "$COMMIT"
    printf 'server peak RSS %s MB; answers other than 2xx over the whole run (metrics): %s\n' "$peak" "${statuses:-none}"
    printf 'server log: %s lines at level warn, %s of them slow statements (over 1 s)%s\n' "$log_lines" "$slow" \
      "${slowest:+, the slowest $slowest s}"
    say "(p50, p99, writes/s: wrk; errors: non-2xx answers and socket errors)"
    printf '%-40s %9s %9s %9s %7s  %-16s %s\n' workload "p50 ms" "p99 ms" "writes/s" errors verdict goal
    for w in P1 P2; do
      local title="POST /api/product"
      [ "$w" = P2 ] && title="PATCH /api/stock/<id> {inStock}"
      if [ -n "${W_NOTE[$w]:-}" ]; then
        printf '%-40s %s  (goal: %s)\n' "$w $title" "${W_NOTE[$w]}" "$goal"
        continue
      fi
      printf '%-40s %9.2f %9.2f %9.1f %7s  %-16s %s\n' "$w $title" "${W_P50[$w]}" "${W_P99[$w]}" "${W_WPS[$w]}" \
        "${W_ERR[$w]}" "$(write_verdict "$backend" "${W_P50[$w]}" "${W_WPS[$w]}" "${W_ERR[$w]}")" "$goal"
    done
    local bulk_verdict=met
    if [ "$bulk_errors" != 0 ]; then bulk_verdict="INVALID (errors)"; elif ! le "$bulk_max" "$BULK_GOAL_MS"; then
      if le "$bulk_median" "$BULK_GOAL_MS"; then bulk_verdict="met (median)"; else bulk_verdict=MISSED; fi
    fi
    printf '%-40s median %s ms, max %s ms over %s runs, %s failed  %-16s <= %s ms\n' \
      "P3 POST /api/variant [$BULK_SIZE]" "$bulk_median" "$bulk_max" "${#times[@]}" "$bulk_errors" "$bulk_verdict" "$BULK_GOAL_MS"
    say ""
    say "reads alone and under $WRITER_RATE background writes/s (p50 ms, p99 ms, req/s; hits: the share"
    say " of the page cache's lookups that hit, the count cache's for W4; the background writer's"
    say " reads are among the lookups)"
    read_ratio_table
    local stale_verdict=met
    [ "${WR[stale]:-x}" = "$STALE_GOAL" ] || stale_verdict=MISSED
    [ "${WR[write_errors]:-0}" = 0 ] && [ "${WR[read_errors]:-0}" = 0 ] || stale_verdict="$stale_verdict, with ERRORS"
    printf 'background writer (%s, %s connections): %s writes in %s s, %s/s (asked for %s/s; %s writes more than 1 s late), write p50 %s ms, p99 %s ms; %s errors writing, %s reading\n' \
      "$writer_email" "$WRITER_CONNECTIONS" "${WR[writes]:-?}" "${WR[seconds]:-?}" "${WR[rate]:-?}" "$WRITER_RATE" "${WR[late]:-?}" \
      "${WR[write_p50_ms]:-?}" "${WR[write_p99_ms]:-?}" "${WR[write_errors]:-?}" "${WR[read_errors]:-?}"
    if ! ge "${WR[rate]:-0}" "$(awk -v r="$WRITER_RATE" 'BEGIN { print r * 0.9 }')"; then
      printf 'NOTE: the writer did not reach %s writes/s: the reads above ran beside %s writes/s\n' "$WRITER_RATE" "${WR[rate]:-?}"
    fi
    printf 'stale answers: %s (%s by id of %s reads, %s in lists of %s, %s write answers) (goal %s: %s)\n' \
      "${WR[stale]:-?}" "${WR[stale_by_id]:-?}" "${WR[by_id_reads]:-?}" "${WR[stale_list]:-?}" "${WR[list_reads]:-?}" \
      "${WR[stale_write_answer]:-?}" "$STALE_GOAL" "$stale_verdict"
    sed -n 's/^problem: /  first problems: /p' "$WORK/writer.out"
  } >"$WORK/table.txt"
  cat "$WORK/table.txt" >>"$RESULTS"
  drop_database "$backend"
}

for backend in $BACKENDS; do
  run_backend "$backend"
done

print_results
