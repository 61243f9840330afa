#!/usr/bin/env bash
# Soak test: builds the release binary, loads the demo data set into a fresh PostgreSQL
# database, starts two `serve` processes on it and drives them for SOAK_SECONDS (default 10
# minutes) with bench/soak_driver.py, as the demo admin:
#   reads    READ_WORKERS connections (worker i on server i % 2), each request one of the read
#            workloads W1–W5 of bench/run.sh at random, with random parameters (W1 a random page,
#            page size and order; W2/W3 a random barcode prefix of 501000..501099; W4 a random
#            brand; W5 two random statuses, a carrier condition and 10–100 random brand stores)
#   uploads  every UPLOAD_EVERY seconds a stock file (CSV of UPLOAD_ROWS rows, new quantities)
#            through POST /api/file, the servers in turn, timed until it is `processed`; one of
#            its rows is then read back through the other server
#   writes   WRITE_RATE a second PATCH /api/stock/<id> {inStock}, the servers in turn
# and prints, per minute, requests, p50 and p99 of every workload ("upload": upload to
# processed), the errors, and each server's resident memory (VmRSS) at the end of the minute.
#
#   bash bench/soak.sh                                   # from the repo root: 10 minutes
#   SOAK_SECONDS=90 DEMO_SCALE=5000 bash bench/soak.sh   # a quick check that it works
#
# The goals of the soak issue, and how they are judged:
#   errors  0. An error is any answer but the expected one (200; 201 for an upload), a request
#           that fails, an upload that does not end `processed` with every row applied and no
#           row skipped or warning, or a read-back that does not show the uploaded quantity.
#   memory  flat after the first RSS_WARMUP_MINUTES (default 2) minutes, but for the page
#           cache, the one store meant to grow with use, up to its bound (PAGE_CACHE_MB per
#           process): for each server, its RSS minus its page cache's bytes (the metric
#           brandhub_page_cache_bytes, read from each server's --metrics-listen port every
#           minute) at the end of a later minute (or of the run) is at most RSS_SLACK_MB
#           (default 16) above the same figure at the end of minute RSS_WARMUP_MINUTES. The RSS
#           itself, the page cache's size, and each server's growth from the start of the load
#           are shown beside it. A run shorter than RSS_WARMUP_MINUTES + 1
#           minutes cannot judge memory: the verdict then says so.
# Verdicts are printed (met / MISSED), as by the other benchmarks; the exit status is 0 unless
# the run itself fails.
#
# Two servers on one machine share the PostgreSQL database and the data dir: their file store
# is the data dir's `files` folder, which both see (on separate machines the file store would
# be S3, see README "Operations"). Each runs its own file workers on the shared job queue, so
# either may process a file the other took in.
#
# Knobs (environment):
#   SOAK_SECONDS   how long the load runs (default 600)
#   DEMO_SCALE     demo variants (default 100000)
#   READ_WORKERS   read connections (default 6), half on each server
#   READ_RATE      reads a second over all of them (default 0: as fast as they are answered)
#   WRITE_RATE     PATCH writes a second (default 5; 0: none)
#   UPLOAD_EVERY   seconds between stock uploads (default 10; 0: none)
#   UPLOAD_ROWS    rows of each stock file (default 100)
#   RSS_WARMUP_MINUTES, RSS_SLACK_MB  the memory rule above (defaults 2 and 16)
#   PAGE_CACHE_MB  each server's page cache (default 32, the server's default)
#   BRANDHUB_BENCH_DATABASE_URL  the PostgreSQL server (default postgres://root@127.0.0.1:5432/test),
#                  where the script creates and finally drops its own database brandhub_bench_soak
#   BENCH_WORK_DIR  where data dirs and logs go (default target/bench-run); deleted at the end
#                  unless BENCH_KEEP=1
#
# Needs: a Rust toolchain, curl, psql, python3, Linux /proc (memory figures).

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SOAK_SECONDS=${SOAK_SECONDS:-600}
DEMO_SCALE=${DEMO_SCALE:-100000}
READ_WORKERS=${READ_WORKERS:-6}
READ_RATE=${READ_RATE:-0}
WRITE_RATE=${WRITE_RATE:-5}
UPLOAD_EVERY=${UPLOAD_EVERY:-10}
UPLOAD_ROWS=${UPLOAD_ROWS:-100}
RSS_WARMUP_MINUTES=${RSS_WARMUP_MINUTES:-2}
RSS_SLACK_MB=${RSS_SLACK_MB:-16}
PAGE_CACHE_MB=${PAGE_CACHE_MB:-32}
PORT=0   # two servers: each takes any free port
BENCH_KEEP=${BENCH_KEEP:-0}
BACKENDS=postgres
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_soak
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub
DRIVER=$ROOT/bench/soak_driver.py
ERRORS_GOAL=0

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $SOAK_SECONDS =~ ^[1-9][0-9]*$ ]] || die "SOAK_SECONDS must be a positive number of seconds"
[[ $DEMO_SCALE =~ ^[1-9][0-9]*$ ]] || die "DEMO_SCALE must be a positive number"
[[ $READ_WORKERS =~ ^[1-9][0-9]*$ ]] || die "READ_WORKERS must be a positive number"
[[ $READ_RATE =~ ^[0-9]+$ ]] || die "READ_RATE must be a number (0: unpaced)"
[[ $WRITE_RATE =~ ^[0-9]+$ ]] || die "WRITE_RATE must be a number (0: no writes)"
[[ $UPLOAD_EVERY =~ ^[0-9]+$ ]] || die "UPLOAD_EVERY must be a number of seconds (0: no uploads)"
[[ $UPLOAD_ROWS =~ ^[1-9][0-9]*$ ]] && [ "$UPLOAD_ROWS" -le 1000 ] || die "UPLOAD_ROWS must be 1 to 1000"
[[ $RSS_WARMUP_MINUTES =~ ^[0-9]+$ ]] || die "RSS_WARMUP_MINUTES must be a number"
[[ $RSS_SLACK_MB =~ ^[0-9]+$ ]] || die "RSS_SLACK_MB must be a number"
[[ $PAGE_CACHE_MB =~ ^[0-9]+$ ]] || die "PAGE_CACHE_MB must be a number"
[ -r /proc/self/status ] || die "memory figures need Linux /proc"
command -v python3 >/dev/null || die "python3 is needed (the soak driver)"
[ -r "$DRIVER" ] || die "the soak driver $DRIVER is missing"

# ---------------------------------------------------------------------------------------------
# Work dir, servers and cleanup

bench_start soak

# Both servers: lib.sh's start_server and stop_server handle one (SERVER_PID, BASE).
PID_A="" PID_B="" BASE_A="" BASE_B=""
stop_servers() {
  local pid
  for pid in "$PID_B" "$PID_A"; do
    SERVER_PID=$pid
    stop_server
  done
  PID_A="" PID_B=""
}
soak_cleanup() {
  local rc=$?
  set +e
  stop_background
  stop_servers
  (exit "$rc")
  bench_cleanup
}
trap soak_cleanup EXIT

build_release --bin brandhub

# shellcheck source=bench/lib_load.sh
. "$ROOT/bench/lib_load.sh"

RUN_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
section "brandhub soak test"
say "date $RUN_DATE; nproc $NPROC; CPU $CPU_MODEL; load average $LOADAVG; commit $COMMIT"
say "SOAK_SECONDS $SOAK_SECONDS; DEMO_SCALE $DEMO_SCALE; READ_WORKERS $READ_WORKERS (READ_RATE $READ_RATE);" \
  "WRITE_RATE $WRITE_RATE; UPLOAD_EVERY $UPLOAD_EVERY s ($UPLOAD_ROWS rows); page cache $PAGE_CACHE_MB MB a server"

load_demo postgres "$DEMO_SCALE"
sed '/^demo users/,$d' "$dir/demo.out" | indent
say "demo load took $DEMO_SECONDS s"

section "$BACKEND_LABEL: two servers on one database and data dir (page cache $PAGE_CACHE_MB MB each)"
# Each server's metrics (the page cache's size) on a free loopback port of its own.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
METRICS_A=127.0.0.1:$(free_port)
METRICS_B=127.0.0.1:$(free_port)
start_server "$dir/data" "$url" "$dir/server-a" --metrics-listen "$METRICS_A"
PID_A=$SERVER_PID BASE_A=$BASE
start_server "$dir/data" "$url" "$dir/server-b" --metrics-listen "$METRICS_B"
PID_B=$SERVER_PID BASE_B=$BASE
SERVER_PID=""
say "server A $BASE_A (PID $PID_A), server B $BASE_B (PID $PID_B)"

use_demo_user "$dir/demo.out" admin

section "$BACKEND_LABEL: soak for $SOAK_SECONDS s as admin ($CRED_USER)"
: >"$WORK/driver.log"
python3 "$DRIVER" --base "$BASE_A" --base "$BASE_B" --pid "$PID_A" --pid "$PID_B" \
  --metrics "http://$METRICS_A/metrics" --metrics "http://$METRICS_B/metrics" \
  --user "$CRED_USER" --key "$CRED_KEY" --seconds "$SOAK_SECONDS" \
  --read-workers "$READ_WORKERS" --read-rate "$READ_RATE" --write-rate "$WRITE_RATE" \
  --upload-every "$UPLOAD_EVERY" --upload-rows "$UPLOAD_ROWS" --warmup-minutes "$RSS_WARMUP_MINUTES" \
  --out "$WORK/soak.out" --table "$WORK/soak.table" >"$WORK/driver.log" 2>&1 &
BACKGROUND_PID=$!
# The driver's progress (one line a minute) as it comes (sed -u: not held in a buffer). Both
# run in the background, so that a signal stops the wait at once (and the clean-up the driver).
tail -n +1 -f --pid="$BACKGROUND_PID" "$WORK/driver.log" | sed -u 's/^/    /' &
progress_pid=$!
driver_rc=0
wait "$BACKGROUND_PID" || driver_rc=$?
BACKGROUND_PID=""
wait "$progress_pid" || true
[ "$driver_rc" = 0 ] && [ -s "$WORK/soak.out" ] || die "the soak driver failed (exit $driver_rc)"

# Both servers still up? (A server that died shows as errors too.)
alive=""
for pid in "$PID_A" "$PID_B"; do
  if kill -0 "$pid" 2>/dev/null; then alive+=" up"; else alive+=" EXITED"; fi
done
peak_a=$(SERVER_PID=$PID_A rss_mb VmHWM)
peak_b=$(SERVER_PID=$PID_B rss_mb VmHWM)
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
stop_servers

# The server logs at level warn: their distinct messages (times taken out).
server_log() {
  local name=$1 log=$2
  if [ -s "$log" ]; then
    printf 'server %s log: %s lines at level warn or above; distinct messages, most frequent first:\n' \
      "$name" "$(wc -l <"$log")"
    sed -E 's/\x1b\[[0-9;]*m//g; s/^[0-9]{4}-[0-9T:.+-]+Z? +//; s/elapsed=[^ ]* elapsed_secs=[^ ]*/elapsed=(…)/' "$log" |
      cut -c1-300 | sort | uniq -c | sort -rn | awk 'NR <= 10' | indent
  else
    printf 'server %s log: empty at level warn\n' "$name"
  fi
}

# ---------------------------------------------------------------------------------------------
# Results

declare -A S=()
for kv in $(sed -n 's/^SOAK //p' "$WORK/soak.out"); do
  S[${kv%%=*}]=${kv#*=}
done
declare -A T_ERR=()
while read -r w e; do
  T_ERR[$w]=$e
done < <(sed -n 's/^TOTAL workload=\([^ ]*\) .* errors=\([0-9]*\)$/\1 \2/p' "$WORK/soak.out")

if [ "${S[errors]}" = "$ERRORS_GOAL" ]; then errors_verdict=met; else errors_verdict=MISSED; fi
rss_verdict() {
  local growth=$1
  if [ "${S[rss_judged]}" != yes ]; then
    echo "not judged (no full minute after minute $RSS_WARMUP_MINUTES)"
  elif ! [[ $growth =~ ^-?[0-9.]+$ ]]; then
    echo "MISSED (no figure: the server is gone)"
  elif le "$growth" "$RSS_SLACK_MB"; then
    echo met
  else
    echo MISSED
  fi
}
# RSS at the start of the load and its largest figure at the end of a minute.
rss_span() {
  awk -v col="$1" '$1 == "RSS" {
      split($(col), kv, "="); v = kv[2]
      if ($2 == "minute=0") start = v
      else if (v != "-" && (max == "" || v + 0 > max + 0)) max = v
    } END { printf "%s %s\n", start, max }' "$WORK/soak.out"
}
growth() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == "") print "?"; else printf "%+.1f MB", b - a }'; }
read -r start_a max_a < <(rss_span 3)
read -r start_b max_b < <(rss_span 4)

{
  printf '\n%s, two servers on one database (soak as admin %s)\n' "$BACKEND_LABEL" "$CRED_USER"
  printf 'date %s; nproc %s; CPU %s; load average %s at the start, %s at the end; commit %s\n' \
    "$RUN_DATE" "$NPROC" "$CPU_MODEL" "$LOADAVG" "$load_end" "$COMMIT"
  printf 'DEMO_SCALE %s (demo load %s s); %s s of load (%s); READ_WORKERS %s, READ_RATE %s; WRITE_RATE %s/s; a stock file of %s rows every %s s\n' \
    "$DEMO_SCALE" "$DEMO_SECONDS" "${S[seconds]}" "$SOAK_SECONDS asked" "$READ_WORKERS" "$READ_RATE" \
    "$WRITE_RATE" "$UPLOAD_ROWS" "$UPLOAD_EVERY"
  sed -n 's/^SETUP //p' "$WORK/soak.out"
  printf 'page cache bound: %s MB a server; servers at the end:%s; peak RSS (VmHWM) A %s MB, B %s MB\n' \
    "$PAGE_CACHE_MB" "$alive" "$peak_a" "$peak_b"
  say ""
  cat "$WORK/soak.table"
  say ""
  printf 'requests %s; errors %s (W1 %s, W2 %s, W3 %s, W4 %s, W5 %s, upload %s, write %s)  %s (goal %s)\n' \
    "${S[requests]}" "${S[errors]}" "${T_ERR[W1]}" "${T_ERR[W2]}" "${T_ERR[W3]}" "${T_ERR[W4]}" \
    "${T_ERR[W5]}" "${T_ERR[upload]}" "${T_ERR[write]}" "$errors_verdict" "$ERRORS_GOAL"
  printf 'writes more than 1 s behind their slot: %s; uploads more than 1 s late: %s; uploads read back: %s\n' \
    "${S[write_late]}" "${S[upload_late]}" "${S[readbacks]}"
  if [ "${S[rss_judged]}" = yes ]; then
    what="RSS"
    [ "${S[rss_judged_by]}" = outside-page-cache ] && what="RSS outside the page cache (RSS minus brandhub_page_cache_bytes)"
    printf '%s, growth after minute %s (largest later figure minus the figure then): A %s MB, B %s MB  A %s, B %s (goal <= %s MB)\n' \
      "$what" "$RSS_WARMUP_MINUTES" "${S[rss_growth_a]}" "${S[rss_growth_b]}" \
      "$(rss_verdict "${S[rss_growth_a]}")" "$(rss_verdict "${S[rss_growth_b]}")" "$RSS_SLACK_MB"
    printf 'RSS itself after minute %s: A %s MB (from %s), B %s MB (from %s), the page cache filling towards its bound of %s MB\n' \
      "$RSS_WARMUP_MINUTES" "${S[rss_raw_growth_a]}" "${S[rss_base_a]}" "${S[rss_raw_growth_b]}" "${S[rss_base_b]}" "$PAGE_CACHE_MB"
  else
    printf 'RSS growth after minute %s: %s (goal <= %s MB)\n' "$RSS_WARMUP_MINUTES" "$(rss_verdict -)" "$RSS_SLACK_MB"
  fi
  printf 'RSS from the start of the load to its largest minute figure: A %s -> %s MB (%s), B %s -> %s MB (%s); page cache bound %s MB a server\n' \
    "$start_a" "$max_a" "$(growth "$start_a" "$max_a")" "$start_b" "$max_b" "$(growth "$start_b" "$max_b")" "$PAGE_CACHE_MB"
  sed -n 's/^error: /first errors: /p' "$WORK/soak.out"
  server_log A "$dir/server-a.err"
  server_log B "$dir/server-b.err"
} >>"$RESULTS"

drop_database postgres
print_results
