#!/usr/bin/env bash
# Benchmark of streaming exports (docs/API.md, "Exports: CSV and XLSX"): builds the release binary, loads the demo data
# set into a fresh database per backend, serves it, and as the admin exports every stock record
# as CSV (GET /api/stock?format=csv) and as XLSX (format=xlsx), each timed with curl while the
# server's resident memory is sampled every 50 ms; rows/s and the growth of the server's RSS
# over its level before the export.
#
#   bash bench/export.sh                          # from the repo root
#   SCALE=20000 BACKENDS=sqlite bash bench/export.sh
#
# Knobs (environment):
#   SCALE        demo variants (default 1000000: about 1.1 million stock records)
#   BACKENDS     "sqlite postgres" (default); postgres needs psql and a server reachable at
#                BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                the script creates and finally drops its own database brandhub_bench_export
#   PORT, BENCH_WORK_DIR, BENCH_KEEP: as in bench/writes.sh
#
# Goals: CSV >= 200,000 rows/s; RSS growth <= 50 MB for CSV and for XLSX.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SCALE=${SCALE:-1000000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
PORT=${PORT:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_export
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub
GOAL_CSV_RPS=200000
GOAL_RSS_MB=50

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
[[ $SCALE =~ ^[0-9]+$ ]] || die "SCALE must be a number"

bench_start export
build_release
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
say "date $(date -u '+%Y-%m-%d %H:%M:%S UTC'); nproc $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg); commit $COMMIT; SCALE $SCALE"

# Samples the server's VmRSS (kB) every 50 ms into a file until the file $1.stop exists.
sample_rss() {
  local out=$1
  : >"$out"
  while [ ! -e "$out.stop" ]; do
    awk '$1 == "VmRSS:" { print $2 }' "/proc/$SERVER_PID/status" 2>/dev/null >>"$out" || true
    sleep 0.05
  done
}

# Exports stock in a format; sets X_SECONDS, X_BYTES, X_RSS_GROWTH_MB, X_CODE.
export_stock() {
  local format=$1 out=$WORK/stock.$1 samples=$WORK/rss.$1 before result
  before=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$SERVER_PID/status")
  rm -f "$samples.stop"
  sample_rss "$samples" &
  local sampler=$!
  result=$(api -o "$out" -w '%{http_code} %{time_total} %{size_download}' "$BASE/api/stock?format=$format") ||
    result="000 0 0"
  touch "$samples.stop"
  wait "$sampler" 2>/dev/null || true
  read -r X_CODE X_SECONDS X_BYTES <<<"$result"
  X_RSS_GROWTH_MB=$(sort -n "$samples" | tail -n 1 | awk -v b="$before" '{ printf "%.1f", ($1 - b) / 1024 }')
}

for backend in $BACKENDS; do
  load_demo "$backend" "$SCALE"
  say "demo load took $DEMO_SECONDS s"
  start_server "$dir/data" "$url" "$dir/server"
  use_demo_user "$dir/demo.out" admin
  count=$(api_get "/api/stock/count" | grep -o '"count":[0-9]*' | cut -d: -f2)
  section "$BACKEND_LABEL: exporting $count stock records"
  export_stock csv
  csv_rows=$(($(wc -l <"$WORK/stock.csv") - 1))
  csv_code=$X_CODE csv_seconds=$X_SECONDS csv_bytes=$X_BYTES csv_growth=$X_RSS_GROWTH_MB
  say "  CSV: HTTP $csv_code, $csv_rows rows, $csv_bytes bytes in $csv_seconds s; RSS growth $csv_growth MB"
  export_stock xlsx
  say "  XLSX: HTTP $X_CODE, $X_BYTES bytes in $X_SECONDS s; RSS growth $X_RSS_GROWTH_MB MB"
  stop_server
  csv_rps=$(awk -v r="$csv_rows" -v s="$csv_seconds" 'BEGIN { printf "%.0f", (s > 0) ? r / s : 0 }')
  xlsx_rps=$(awk -v r="$count" -v s="$X_SECONDS" 'BEGIN { printf "%.0f", (s > 0) ? r / s : 0 }')
  {
    printf '\n%s, SCALE %s (demo load %s s), %s stock records, commit %s\n' "$BACKEND_LABEL" "$SCALE" "$DEMO_SECONDS" "$count" "$COMMIT"
    ok=MISSED
    [ "$csv_code" = 200 ] && [ "$csv_rows" = "$count" ] && ge "$csv_rps" "$GOAL_CSV_RPS" && ok=met
    printf 'CSV:  %s rows in %s s, %s rows/s, %s bytes  %s (goal >= %s rows/s, every row)\n' \
      "$csv_rows" "$csv_seconds" "$csv_rps" "$csv_bytes" "$ok" "$GOAL_CSV_RPS"
    ok=MISSED; le "$csv_growth" "$GOAL_RSS_MB" && ok=met
    printf '      RSS growth %s MB  %s (goal <= %s MB)\n' "$csv_growth" "$ok" "$GOAL_RSS_MB"
    ok=MISSED; [ "$X_CODE" = 200 ] && le "$X_RSS_GROWTH_MB" "$GOAL_RSS_MB" && ok=met
    printf 'XLSX: %s s, %s rows/s, %s bytes; RSS growth %s MB  %s (goal <= %s MB)\n' \
      "$X_SECONDS" "$xlsx_rps" "$X_BYTES" "$X_RSS_GROWTH_MB" "$ok" "$GOAL_RSS_MB"
  } >>"$RESULTS"
  rm -f "$WORK/stock.csv" "$WORK/stock.xlsx"
  drop_database "$backend"
done
print_results
