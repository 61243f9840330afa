#!/usr/bin/env bash
# Timings of the web portal (README, "The portal") in a real Chromium on loopback, from the ignored
# test `portal_timings` (crates/brandhub/tests/portal.rs) built in release mode: the first
# load's bytes (uncompressed, every asset) and milliseconds, a browse table of 100 stock rows
# from the API's answer to the table in the page (median and max of 5), an order's page and a
# table of 100 stock rows each from navigation to drawn against the time of the API calls it
# makes (their spans' union; medians of 5 after one to warm up), and a 10,000-row product
# file from choosing it to `processed` in the page. Server and browser share the machine.
#
#   bash bench/portal.sh            # from the repo root
#
# Needs: a Rust toolchain, chromium and chromedriver (apt-get install chromium chromium-driver).
# Goals: first load <= 300 KB before data; browse table of 100 rows <= 300 ms after the API
# answered; an order's page and a table of 100 rows drawn within 2x the time of their API
# calls.

set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
  { echo "bench: chromium and chromedriver are needed (apt-get install chromium chromium-driver)" >&2; exit 1; }

OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
echo "date $(date -u '+%Y-%m-%d %H:%M:%S UTC'); nproc $(nproc); load average $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
cargo test --release -p brandhub --test portal -- --ignored --nocapture --exact portal_timings >"$OUT" 2>&1 ||
  { tail -n 60 "$OUT" >&2; exit 1; }
line=$(sed -n 's/^PORTAL //p' "$OUT")
[ -n "$line" ] || { tail -n 60 "$OUT" >&2; echo "bench: no figures" >&2; exit 1; }
declare -A P
for kv in $line; do P[${kv%%=*}]=${kv#*=}; done
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 <= b + 0) ? "met" : "MISSED" }'; }
printf 'first load: %s bytes in %s files, %s ms  %s (goal <= 307200 bytes)\n' \
  "${P[first_load_bytes]}" "${P[first_load_files]}" "${P[first_load_ms]}" "$(verdict "${P[first_load_bytes]}" 307200)"
printf 'browse 100 stock rows, answer to table: median %s ms, max %s ms  %s (goal <= 300 ms)\n' \
  "${P[browse100_median_ms]}" "${P[browse100_max_ms]}" "$(verdict "${P[browse100_max_ms]}" 300)"
printf "an order's page, navigation to drawn: %s ms against %s ms of API calls, %sx  %s (goal <= 2x)\n" \
  "${P[order_drawn_ms]}" "${P[order_api_ms]}" "${P[order_ratio]}" "$(verdict "${P[order_ratio]}" 2)"
printf 'table of 100 stock rows, navigation to drawn: %s ms against %s ms of API calls, %sx  %s (goal <= 2x)\n' \
  "${P[table100_drawn_ms]}" "${P[table100_api_ms]}" "${P[table100_ratio]}" "$(verdict "${P[table100_ratio]}" 2)"
printf '10,000-row product file (%s bytes), chosen to processed in the page: %s ms\n' \
  "${P[file_bytes]}" "${P[upload10000_ms]}"
sed -n 's/^PARTS /where the time went (medians, ms; before the first API call, last answer to page made, page made to its frame, that frame to painted): /p' "$OUT"
