#!/usr/bin/env bash
# Benchmark of a hostile spreadsheet (hardening issue, finding 4): an .xlsx of about 2 MB whose
# row 3 holds a title of CELL_MB MB in one inline string (compressing about 200 times, under the
# archive's ratio limit). Builds the release binary and the workbook, loads a small demo data set
# into a fresh database per backend, and for each server setting of MODES uploads the file over
# HTTPS, waits until it is processed, and prints the server's peak memory from the upload to the
# end of processing, the time, and the outcome (status, rows, the report, the titles stored):
#
#   lifted   --max-cell-chars 1000000000: the reader takes the cell whole, as every reader did
#            before the cell limit (the field's length check still keeps it out of the database)
#   default  the cell limit of 32,767 characters: the cell is never held whole
#
#   bash bench/hostile_cell.sh                 # from the repo root
#   CELL_MB=50 BACKENDS=sqlite bash bench/hostile_cell.sh
#
# Knobs (environment):
#   CELL_MB      megabytes of the huge cell (default 400)
#   MODES        "lifted default" (default)
#   BACKENDS     "sqlite postgres" (default); postgres needs psql and a server reachable at
#                BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                the script creates and finally drops its own database brandhub_bench_hostile
#   DEMO_SCALE   demo variants loaded first (default 200)
#   BENCH_BIN    a brandhub binary to measure instead of this checkout's (an older build, for a
#                before/after comparison; use MODES=default with a binary older than the cell
#                limit, which has no --max-cell-chars)
#   BENCH_WORK_DIR  where data dirs, files and logs go (default target/bench-run); deleted at the
#                end unless BENCH_KEEP=1
#
# Needs: a Rust toolchain, curl, Linux /proc (for memory figures), and memory for the lifted
# mode (about 12 times CELL_MB).

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

CELL_MB=${CELL_MB:-400}
MODES=${MODES:-"lifted default"}
BACKENDS=${BACKENDS:-"sqlite postgres"}
DEMO_SCALE=${DEMO_SCALE:-200}
BENCH_KEEP=${BENCH_KEEP:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_hostile
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${BENCH_BIN:-$TARGET_DIR/release/brandhub}
WRITER=$TARGET_DIR/release/examples/hostile_cell

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $CELL_MB =~ ^[1-9][0-9]*$ ]] || die "CELL_MB must be a positive number"
for mode in $MODES; do
  case $mode in
    lifted | default) ;;
    *) die "unknown mode '$mode' in MODES (lifted, default)" ;;
  esac
done
[ -r /proc/self/status ] || die "memory figures need Linux /proc"
bench_start hostile

section "Building (cargo build --release)"
if ! cargo build --release -p brandhub --bin brandhub --example hostile_cell >"$WORK/build.log" 2>&1; then
  tail -n 60 "$WORK/build.log" >&2
  die "the release build failed"
fi
tail -n 1 "$WORK/build.log"

section "Writing the workbook (a $CELL_MB MB cell)"
"$WRITER" "$CELL_MB" "$WORK/hostile.xlsx"
size=$(stat -c %s "$WORK/hostile.xlsx")
say "  hostile.xlsx: $size bytes, $((CELL_MB * 1024 * 1024 / size)) times smaller than its cell"

reset_peak() { echo 5 >"/proc/$SERVER_PID/clear_refs" 2>/dev/null || say "  (cannot reset the peak; figures include the start)"; }
now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
field() { grep -o "\"$1\":[0-9]*" | head -n 1 | cut -d: -f2; }

# Waits (up to 30 minutes) until a file is processed or failed; prints its record.
await_file() {
  local id=$1 record status deadline=$((SECONDS + 1800))
  while :; do
    record=$(api_get "/api/file/$id?fields=status,detail") || die "the file $id cannot be read"
    status=$(grep -o '"status":"[^"]*"' <<<"$record" | cut -d'"' -f4)
    case $status in
      processed | failed)
        printf '%s\n' "$record"
        return 0
        ;;
    esac
    [ "$SECONDS" -lt "$deadline" ] || die "file $id not finished after 30 minutes: $record"
    sleep 0.2
  done
}

section "brandhub hostile cell benchmark"
say "binary $BIN"
say "date $(date '+%Y-%m-%d %H:%M:%S %Z'); nproc $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); CELL_MB $CELL_MB; MODES $MODES; BACKENDS $BACKENDS"

for backend in $BACKENDS; do
  load_demo "$backend" "$DEMO_SCALE"
  use_demo_user "$dir/demo.out" admin
  n=0
  for mode in $MODES; do
    n=$((n + 1))
    args=(--workers 1)
    [ "$mode" = lifted ] && args+=(--max-cell-chars 1000000000)
    section "$BACKEND_LABEL, $mode: serve ${args[*]}"
    start_server "$dir/data" "$url" "$dir/server-$mode" "${args[@]}"
    # A brand of its own per mode, so that each run's products are its own.
    brand=$(api_get "/api/brand?fields=id&pageSize=$n" | ids_of | sed -n "${n}p")
    [ -n "$brand" ] || die "the demo data has fewer than $n brands"
    rss_before=$(rss_mb VmRSS)
    reset_peak
    started=$(now_ns)
    code=$(api -o "$WORK/upload.json" -w '%{http_code}' -F "product,$brand=@$WORK/hostile.xlsx" "$BASE/api/file") ||
      die "the upload failed"
    [ "$code" = 201 ] || die "the upload answered $code: $(head -c 500 "$WORK/upload.json")"
    id=$(ids_of <"$WORK/upload.json" | sed -n '1p')
    record=$(await_file "$id")
    secs=$(secs_since "$started")
    peak=$(rss_mb VmHWM)
    status=$(grep -o '"status":"[^"]*"' <<<"$record" | cut -d'"' -f4)
    report=$(grep -o '"error":"[^"]*"' <<<"$record" | cut -d'"' -f4 | cut -c1-160)
    rows="read $(field rowsRead <<<"$record"), applied $(field rowsApplied <<<"$record"), skipped $(field rowsSkipped <<<"$record")"
    say "  $status in $secs s; rows $rows"
    say "  report: ${report:-(none)}"
    say "  memory: $rss_before MB resident before the upload, peak $peak MB until processed"
    # The titles stored for the file's products, by length. The answer holds them whole (a
    # title stored whole is hundreds of megabytes): saved first, then measured line by line.
    started=$(now_ns)
    if api --max-time 3600 -o "$WORK/titles.json" "$BASE/api/product?fk_brand=$brand&code=HOSTILE@&fields=code,title&order_by=code"; then
      titles=$(tr ',' '\n' <"$WORK/titles.json" |
        awk -F'"' '/"code":/ { code = $4 } /"title":/ { printf "%s%s %d chars", (n++ ? ", " : ""), code, length($4) }')
      say "  titles stored: ${titles:-(none)} (read in $(secs_since "$started") s, $(stat -c %s "$WORK/titles.json") bytes)"
    else
      titles="(not read within an hour)"
      say "  titles stored: $titles"
    fi
    rm -f "$WORK/titles.json"
    printf '%-18s %-8s peak RSS %8s MB (before %6s MB)  %7s s  %-9s rows %s; titles: %s\n' \
      "$BACKEND_LABEL" "$mode" "$peak" "$rss_before" "$secs" "$status" "$rows" "${titles:-none}" >>"$RESULTS"
    stop_server
  done
  drop_database "$backend"
done

print_results
