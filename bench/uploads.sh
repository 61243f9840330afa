#!/usr/bin/env bash
# Benchmark of file processing (docs/API.md, "Files: uploads and processing"): builds the release binary, loads a small demo data
# set into a fresh database per backend, and over HTTPS
#   1. uploads a product file of PRODUCTS × VARIANTS rows (.xlsx; 20,000 × 5 = 100,000 rows by
#      default) and times it until the file record says `processed`,
#   2. uploads a stock file over the same 100,000 barcodes and times it the same way,
#   3. restarts the server without workers and uploads UPLOAD_MIB MiB, to show that an upload is
#      streamed to the file store rather than held in memory,
# printing the server's peak memory in each phase, and checks through the API that every row
# arrived.
#
#   bash bench/uploads.sh                      # from the repo root
#   PRODUCTS=2000 BACKENDS=sqlite bash bench/uploads.sh
#
# Knobs (environment):
#   PRODUCTS     products in the product file (default 20000)
#   VARIANTS     variants (rows) per product (default 5)
#   UPLOAD_MIB   size of the upload of phase 3 (default 50)
#   BACKENDS     "sqlite postgres" (default); postgres needs psql and a server reachable at
#                BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                the script creates and finally drops its own database brandhub_bench_uploads
#   DEMO_SCALE   demo variants loaded first (default 2000)
#   SERVE_BIN    the brandhub binary to load and serve with (default: the one built here; the
#                spreadsheets are written by this checkout's example either way): an A/B of
#                another build on the same files
#   BENCH_WORK_DIR  where data dirs, files and logs go (default target/bench-run); deleted at the
#                end unless BENCH_KEEP=1
#
# Needs: a Rust toolchain, curl, Linux /proc (for memory figures).

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PRODUCTS=${PRODUCTS:-20000}
VARIANTS=${VARIANTS:-5}
UPLOAD_MIB=${UPLOAD_MIB:-50}
BACKENDS=${BACKENDS:-"sqlite postgres"}
DEMO_SCALE=${DEMO_SCALE:-2000}
BENCH_KEEP=${BENCH_KEEP:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_uploads
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${SERVE_BIN:-$TARGET_DIR/release/brandhub}
SHEETS=$TARGET_DIR/release/examples/upload_sheets
# The goals of the uploads issue.
PRODUCT_GOAL_S=20
STOCK_GOAL_S=5

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $PRODUCTS =~ ^[1-9][0-9]*$ ]] || die "PRODUCTS must be a positive number"
[[ $VARIANTS =~ ^[1-9][0-9]*$ ]] || die "VARIANTS must be a positive number"
[[ $UPLOAD_MIB =~ ^[1-9][0-9]*$ ]] || die "UPLOAD_MIB must be a positive number"
[ -r /proc/self/status ] || die "memory figures need Linux /proc"
bench_start uploads

# ---------------------------------------------------------------------------------------------
# Build and files

section "Building (cargo build --release)"
if ! cargo build --release -p brandhub --bin brandhub --example upload_sheets >"$WORK/build.log" 2>&1; then
  tail -n 60 "$WORK/build.log" >&2
  die "the release build failed"
fi
tail -n 1 "$WORK/build.log"

ROWS=$((PRODUCTS * VARIANTS))
section "Writing the spreadsheets ($ROWS rows each)"
"$SHEETS" product "$PRODUCTS" "$VARIANTS" "$WORK/products.xlsx"
"$SHEETS" stock "$PRODUCTS" "$VARIANTS" "$WORK/stock.xlsx"
# Phase 3's upload: a CSV of stock rows, as large as asked for (`yes` ends by SIGPIPE).
{
  printf 'Barcode;Qty;Demand;Supply\n'
  yes '2700000000000;1;0;0' || true
} | head -c $((UPLOAD_MIB * 1024 * 1024)) >"$WORK/big.csv"
ls -l "$WORK/products.xlsx" "$WORK/stock.xlsx" "$WORK/big.csv" | awk '{ printf "  %-14s %10d bytes\n", $NF, $5 }' | sed "s|$WORK/||"

# ---------------------------------------------------------------------------------------------
# Measuring

# Restarts the peak (VmHWM) from the current resident size, so each phase has its own peak.
reset_peak() { echo 5 >"/proc/$SERVER_PID/clear_refs" 2>/dev/null || say "  (cannot reset the peak; figures include earlier phases)"; }
now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

# Uploads a file (with an optional query such as ?wait=60) as the current user; prints the
# new file's id.
upload() {
  local part=$1 file=$2 query=${3:-} out=$WORK/upload.json code
  code=$(api -o "$out" -w '%{http_code}' -F "$part=@$file" "$BASE/api/file$query") || die "the upload of $file failed"
  [ "$code" = 201 ] || die "the upload of $file answered $code: $(head -c 500 "$out")"
  ids_of <"$out" | sed -n '1p'
}

# Waits (up to 10 minutes) until a file is processed or failed; prints its record.
await_file() {
  local id=$1 record status deadline=$((SECONDS + 600))
  while :; do
    record=$(api_get "/api/file/$id?fields=status,detail") || die "the file $id cannot be read"
    status=$(grep -o '"status":"[^"]*"' <<<"$record" | cut -d'"' -f4)
    case $status in
      processed | failed)
        printf '%s\n' "$record"
        return 0
        ;;
    esac
    [ "$SECONDS" -lt "$deadline" ] || die "file $id not finished after 10 minutes: $record"
    sleep 0.05
  done
}

detail_number() { grep -o "\"$1\":[0-9]*" | cut -d: -f2; }
count_of() { api_get "$1" | grep -o '"count":[0-9]*' | cut -d: -f2; }

# Whether an upload's memory growth (MB) shows it streamed: well under its size. Below three
# parts of 5 MiB the two cannot be told apart.
upload_verdict() {
  if [ "$UPLOAD_MIB" -lt 16 ]; then
    echo "too small to tell (the store sends 5 MiB parts)"
  elif le "$1" "$((UPLOAD_MIB / 2))"; then
    echo streamed
  else
    echo "HELD IN MEMORY"
  fi
}

verdict() { if le "$1" "$2"; then echo met; else echo MISSED; fi; }

# One file: upload, wait, print the figures and a row of the results table.
process_file() {
  local label=$1 part=$2 file=$3 goal=$4 started id record secs status applied rss_before peak
  rss_before=$(rss_mb VmRSS)
  reset_peak
  started=$(now_ns)
  id=$(upload "$part" "$file" "?wait=60")
  record=$(await_file "$id")
  secs=$(secs_since "$started")
  peak=$(rss_mb VmHWM)
  status=$(grep -o '"status":"[^"]*"' <<<"$record" | cut -d'"' -f4)
  applied=$(detail_number rowsApplied <<<"$record")
  say "  $label: $status in $secs s; rows read $(detail_number rowsRead <<<"$record"), applied $applied, skipped $(detail_number rowsSkipped <<<"$record")"
  say "  memory: $rss_before MB resident before, peak $peak MB while processing"
  [ "$status" = processed ] || die "the $label file was not processed: $record"
  printf '%-22s %-9s %8s s  goal <= %s s: %-6s  peak RSS %7s MB (before %s MB)\n' \
    "$BACKEND_LABEL" "$label" "$secs" "$goal" "$(verdict "$secs" "$goal")" "$peak" "$rss_before" >>"$RESULTS"
}

# ---------------------------------------------------------------------------------------------
# Per backend

section "brandhub upload benchmark"
say "date $(date '+%Y-%m-%d %H:%M:%S %Z'); nproc $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); PRODUCTS $PRODUCTS x VARIANTS $VARIANTS; UPLOAD_MIB $UPLOAD_MIB; BACKENDS $BACKENDS"

for backend in $BACKENDS; do
  load_demo "$backend" "$DEMO_SCALE"
  use_demo_user "$dir/demo.out" admin

  section "$BACKEND_LABEL: processing (one worker)"
  start_server "$dir/data" "$url" "$dir/server" --workers 1
  # A brand and the warehouse one of its brand stores ships from (of the same company, a
  # stock file's rule): the file's stock is what that brand store's offers sell.
  pair=$(api_get "/api/brandStore?fields=fk_brand,fk_warehouse&pageSize=1")
  brand=$(grep -o '"fk_brand":"[^"]*"' <<<"$pair" | cut -d'"' -f4 | sed -n '1p')
  warehouse=$(grep -o '"fk_warehouse":"[^"]*"' <<<"$pair" | cut -d'"' -f4 | sed -n '1p')
  [ -n "$warehouse" ] && [ -n "$brand" ] || die "no brand store in the demo data"
  brand_stores=$(count_of "/api/brandStore/count?fk_brand=$brand")
  say "brand $brand ($brand_stores brand stores), warehouse $warehouse"

  process_file product "product,$brand" "$WORK/products.xlsx" "$PRODUCT_GOAL_S"
  variants=$(count_of "/api/variant/count?barcode=27@&variant_product.fk_brand=$brand")
  say "  variants of the file's barcodes through the API: $variants (expected $ROWS)"
  [ "$variants" = "$ROWS" ] || die "the product file did not create every variant"
  process_file stock "stock,$brand,$warehouse" "$WORK/stock.xlsx" "$STOCK_GOAL_S"
  stock=$(count_of "/api/stock/count?fk_warehouse=$warehouse&stock_variant.barcode=27@")
  say "  stock records of the file's barcodes through the API: $stock (expected $ROWS)"
  [ "$stock" = "$ROWS" ] || die "the stock file did not set every variant's stock"
  stop_server

  section "$BACKEND_LABEL: a $UPLOAD_MIB MiB upload (no workers)"
  start_server "$dir/data" "$url" "$dir/server-upload" --workers 0 --max-upload "$((UPLOAD_MIB + 1))MiB"
  rss_before=$(rss_mb VmRSS)
  reset_peak
  started=$(now_ns)
  upload "stock,$brand,$warehouse" "$WORK/big.csv" >/dev/null
  secs=$(secs_since "$started")
  peak=$(rss_mb VmHWM)
  growth=$(awk -v a="$rss_before" -v b="$peak" 'BEGIN { printf "%.1f", b - a }')
  say "  stored in $secs s; $rss_before MB resident before, peak $peak MB during the upload (+$growth MB)"
  printf '%-22s %-9s %8s s  peak RSS %7s MB (before %s MB): +%s MB for %s MiB: %s\n' \
    "$BACKEND_LABEL" "upload" "$secs" "$peak" "$rss_before" "$growth" "$UPLOAD_MIB" \
    "$(upload_verdict "$growth")" >>"$RESULTS"
  stop_server
  drop_database "$backend"
done

print_results
