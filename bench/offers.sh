#!/usr/bin/env bash
# Benchmark of offers (docs/API.md, "Offers"): builds the release binary, loads the demo data
# set into a fresh database per backend (five brand stores per brand: about 5 offers per
# variant), serves it over HTTPS and measures, side by side in one run:
#   R   a host's page of 1,000 offers against a page of 1,000 stock records (wrk p50, default
#       template), with the default page cache and with --page-cache-mb 0; goal ≤ 1.5×; and
#       the offers' page walked in id order through the whole table (`order_by=id`)
#   P   PATCH /api/stock/<id> (each moves the offers of its variant) as the company user:
#       writes/s; with BEFORE_BIN (a binary of the build before offers) the same against it
#   F   a stock file of up to 100,000 rows of one brand (CSV): seconds until processed; with
#       BEFORE_BIN the same against it (goal ≤ 1.5×)
#   B   a rule PATCH of a brand store of the largest brand, with RULE_SUBSCRIBERS (default 10)
#       active offer.updated webhooks: its time, and its events' fan-out time
#   D   up to 100,000 prices of the host for the variants of one of its stores, starting at
#       one moment (JSON arrays written PRICE_LEAD seconds ahead), with PRICE_SUBSCRIBERS
#       (default 1) active offer.updated webhooks: seconds from that moment until every offer
#       shows them; goal ≤ 10 s
#   X   the store's whole feed as CSV (GET /api/offer?fk_store=…&format=csv): rows/s, median
#       of three; goal ≥ 200,000; and the same with the variant and the store expanded
#   S   sync by cursor: the store's offers from changedSince=0 in pages of 1,000 (offers/s;
#       goal ≥ 50,000), then one answer of 1,000 changes (host SKUs set in one array, timed;
#       wrk p50 of that call; goal ≤ 50 ms)
#   and the demo load's time with offers.
#
#   bash bench/offers.sh                                  # from the repo root
#   SCALE=20000 DURATION=5 BACKENDS=sqlite bash bench/offers.sh
#
# Knobs (environment): SCALE (demo variants, default 1000000), BACKENDS ("sqlite postgres"),
# DURATION (seconds per wrk run, default 10), CONNECTIONS (8), THREADS (2), STOCK_IDS (1000),
# ONLY (letters of the parts to run, e.g. ONLY=RS; default all), FILE_ROWS (100000), PRICE_ROWS (100000), PRICE_SUBSCRIBERS (1), RULE_SUBSCRIBERS (10), PRICE_LEAD (seconds between the price file's
# upload and its start, default 20 s and 1 s a thousand prices), BEFORE_BIN (optional, see P), PORT, BENCH_WORK_DIR,
# BENCH_KEEP, BENCH_REUSE (SQLite: the data of a run kept with BENCH_KEEP=1, not loaded again); PostgreSQL at BRANDHUB_BENCH_DATABASE_URL (default
# postgres://root@127.0.0.1:5432/test), in a database brandhub_bench_offers it drops at the end.
# Needs: a Rust toolchain, curl, wrk (installed with apt-get when missing and possible).

set -euo pipefail
export LC_ALL=C
# (No `| head` after a command that may write more: under pipefail its SIGPIPE ends the run.)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SCALE=${SCALE:-1000000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-2}
STOCK_IDS=${STOCK_IDS:-1000}
FILE_ROWS=${FILE_ROWS:-100000}
PRICE_ROWS=${PRICE_ROWS:-100000}
PRICE_LEAD=${PRICE_LEAD:-$((20 + PRICE_ROWS / 1000))}
PRICE_SUBSCRIBERS=${PRICE_SUBSCRIBERS:-1}
RULE_SUBSCRIBERS=${RULE_SUBSCRIBERS:-10}
WRK_TIMEOUT=${WRK_TIMEOUT:-30s}
BEFORE_BIN=${BEFORE_BIN:-}
LUA_DIR=$ROOT/bench/lua
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench_offers
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_start offers
build_release
ensure_wrk
# shellcheck source=bench/lib_load.sh
. "$ROOT/bench/lib_load.sh"

say "SCALE $SCALE; BACKENDS $BACKENDS; DURATION ${DURATION}s; wrk -t$THREADS -c$CONNECTIONS"
say "machine: $CPU_MODEL, $NPROC cores; commit $COMMIT; $(date -u +%Y-%m-%dT%H:%MZ)"

# Whether part $1 (a letter) runs: every part unless ONLY names some.
wanted() { [ -z "${ONLY:-}" ] || [[ $ONLY == *"$1"* ]]; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
seconds_since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

# p50 of a GET of a path as the current user, into P50.
p50_of() {
  export BENCH_PATH=$1
  run_wrk "get" get_path.lua
  P50=${F[p50_ms]:-${F[note]:-?}}
}

# writes/s of PATCH /api/stock as the company user over its first STOCK_IDS stock records,
# into WPS.
patch_rate() {
  export_auth_for company
  api_get "/api/stock?fields=id&pageSize=1000" | ids_of | sed -n "1,${STOCK_IDS}p" >"$WORK/stock_ids"
  export BENCH_IDS_FILE=$WORK/stock_ids
  run_wrk "patch" write_patch_stock.lua
  WPS=${F[rps]:-${F[note]:-?}}
}

# The first number of a count's answer (GET <path>, a `/count` endpoint).
count_at() { api_get "$1" | grep -o '[0-9]*' | sed -n 1p; }

# Makes $1 active offer.updated webhooks as the current user, their addresses named after $2
# (never reached from here): each offer a write changes then also writes its event.
# FIRST_HOOK is the id of the first one made.
subscribe_to_offers() {
  local n
  FIRST_HOOK=""
  for n in $(seq 1 "$1"); do
    printf '{"url":"https://%s-%s.example.com/offers","events":["offer.updated"]}' "$2" "$n" >"$WORK/hook.json"
    request POST /api/webhook "$WORK/hook.json"
    [ "$R_CODE" = 201 ] || say "a webhook answered $R_CODE: $(head -c 300 "$WORK/answer.json")"
    [ -n "$FIRST_HOOK" ] || FIRST_HOOK=$(ids_of <"$WORK/answer.json" | sed -n 1p)
  done
}

# The offers of brand store $1 as what their events announce (available, price, status, host
# SKU), one a line in id order: two of these differ in the offers a write changed.
announced_offers() {
  api_get "/api/offer?fk_brandStore=$1&fields=id,available,price,status,hostSku&order_by=id&format=csv"
}

# Says a result line ($1) and writes it to the results; with BEFORE_BIN, with the same measured
# on the build before offers ($2) after it.
against_before() {
  local line=$1
  [ -z "$BEFORE_BIN" ] || line+="; $2"
  say "$line"
  echo "$line" >>"$RESULTS"
}

# The largest brand (the first), a brand store of it, that brand store's warehouse, store and
# host, and the barcodes of the brand's variants (in variants.csv), as the admin.
largest_brand() {
  export_auth_for admin
  brand=$(api_get "/api/brand?fields=id&pageSize=1" | ids_of | sed -n 1p)
  brand_store=$(api_get "/api/brandStore?fk_brand=$brand&fields=id&pageSize=1" | ids_of | sed -n 1p)
  warehouse=$(api_get "/api/brandStore/$brand_store?fields=fk_warehouse" | grep -o '"fk_warehouse":"[^"]*"' | cut -d'"' -f4)
  host=$(api_get "/api/brandStore/$brand_store?fields=brandStore_store.fk_host" | grep -o '"fk_host":"[^"]*"' | cut -d'"' -f4)
  store=$(api_get "/api/brandStore/$brand_store?fields=fk_store" | grep -o '"fk_store":"[^"]*"' | cut -d'"' -f4)
  api -o "$WORK/variants.csv" "$BASE/api/variant?variant_product.fk_brand=$brand&fields=barcode&format=csv"
  variants=$(($(wc -l <"$WORK/variants.csv") - 1))
  say "brand $brand: $variants variants; brand store $brand_store (store $store, host $host)"
}

# A stock file of up to FILE_ROWS of the brand's variants (CSV) for its warehouse, uploaded
# and waited for: FILE_SECONDS until processed, FILE_STATUS (with the rows applied: a file
# whose rows found no variant is processed too), FILE_ROWS_SENT. The demo's brands have 5,000
# variants each: bench/uploads.sh measures a file of 100,000 rows (SERVE_BIN for the build
# before offers).
stock_file_seconds() {
  local start
  # variants.csv is the export's id,barcode.
  { echo "Barcode,Qty"; sed -n "2,$((FILE_ROWS + 1))p" "$WORK/variants.csv" | awk -F, '{ gsub(/"/, "", $2); print $2 "," (NR % 50) }'; } >"$WORK/stock.csv"
  FILE_ROWS_SENT=$(($(wc -l <"$WORK/stock.csv") - 1))
  start=$(date +%s%N)
  api -o "$WORK/file.json" -F "stock,$brand,$warehouse=@$WORK/stock.csv;filename=stock.csv" "$BASE/api/file?wait=60" ||
    say "the stock file's upload failed (curl $?)"
  FILE_SECONDS=$(seconds_since "$start")
  FILE_STATUS="$( (grep -o '"status":"[^"]*"' "$WORK/file.json" || true) | sed -n 1p), $( (grep -o '"rowsApplied":[0-9]*' "$WORK/file.json" || true) | sed -n 1p)"
}

for backend in $BACKENDS; do
  load_demo "$backend" "$SCALE"
  say "demo load: ${DEMO_SECONDS}s"
  printf '%s: demo --scale %s with offers: %ss\n' "$BACKEND_LABEL" "$SCALE" "$DEMO_SECONDS" >>"$RESULTS"
  start_server "$dir/data" "$url" "$WORK/$backend.server"
  export_auth_for() { use_demo_user "$dir/demo.out" "$1"; export_auth; }

  if wanted R; then
  # R: a host's page of 1,000 offers against 1,000 stock records, cached and not.
  section "R: pages of 1,000 ($BACKEND_LABEL)"
  export_auth_for host
  for cache in default 0; do
    if [ "$cache" = 0 ]; then
      stop_server
      PAGE_CACHE_MB=0 start_server "$dir/data" "$url" "$WORK/$backend.server0"
    fi
    p50_of "/api/offer?pageSize=1000"
    offers=$P50
    p50_of "/api/stock?pageSize=1000"
    stock=$P50
    # The same page walked in id order through the whole table (an order of its own keeps
    # it from being read store by store): the A/B of the page by parents.
    p50_of "/api/offer?pageSize=1000&order_by=id"
    walked=$P50
    printf '%s: host page of 1,000 offers, page cache %s: p50 %s ms (walked in order: %s ms); 1,000 stock %s ms; ratio %s (goal <= 1.5)\n' \
      "$BACKEND_LABEL" "$cache" "$offers" "$walked" "$stock" "$(ratio "$offers" "$stock")" >>"$RESULTS"
  done
  stop_server
  start_server "$dir/data" "$url" "$WORK/$backend.server"
  fi

  if wanted P; then
  # P: stock PATCHes as the company user.
  section "P: PATCH /api/stock ($BACKEND_LABEL)"
  patch_rate
  patch_with=$WPS
  fi

  # The largest brand, its brand stores and a warehouse of its company (as the admin).
  largest_brand

  if wanted F; then
  # F: a stock file of the brand's variants.
  section "F: stock file ($BACKEND_LABEL)"
  stock_file_seconds
  file_with=$FILE_SECONDS file_status=$FILE_STATUS
  fi

  # P and F against the build before offers (BEFORE_BIN) on a database of its own, loaded by
  # it under the work dir's before/ (also when BENCH_REUSE gives the new build's): no offer
  # table and no triggers (a database the new build made keeps its triggers whatever binary
  # serves it).
  if [ -n "$BEFORE_BIN" ] && { wanted P || wanted F; }; then
    section "P, F: the build before offers ($BACKEND_LABEL)"
    stop_server
    new_bin=$BIN new_url=$url new_pg=$PG_DB new_dir=$dir new_work=$WORK
    BIN=$BEFORE_BIN PG_DB=${new_pg}_before WORK=$WORK/before
    mkdir -p "$WORK"
    BENCH_REUSE="" load_demo "$backend" "$SCALE"
    before_load=$DEMO_SECONDS
    start_server "$dir/data" "$url" "$WORK/$backend.server"
    if wanted P; then
      patch_rate
      patch_before=$WPS
    fi
    if wanted F; then
      largest_brand
      stock_file_seconds
      file_before=$FILE_SECONDS file_before_status=$FILE_STATUS
    fi
    stop_server
    if [ "$backend" = postgres ]; then drop_pg_db; fi
    BIN=$new_bin PG_DB=$new_pg dir=$new_dir url=$new_url WORK=$new_work
    start_server "$dir/data" "$url" "$WORK/$backend.server"
    largest_brand
  fi
  if wanted P; then
    against_before "$BACKEND_LABEL: PATCH /api/stock with offers: $patch_with/s" \
      "before offers (a demo database loaded by that build): ${patch_before:-}/s, demo load ${before_load:-}s; ratio $(ratio "$patch_with" "${patch_before:-}") (goal >= 0.7)"
  fi
  if wanted F; then
    against_before "$BACKEND_LABEL: stock file of $FILE_ROWS_SENT rows: ${file_with}s ($file_status)" \
      "before offers: ${file_before:-}s (${file_before_status:-}); ratio $(ratio "$file_with" "${file_before:-}") (goal <= 1.5)"
  fi

  if wanted B; then
  # B: a rule PATCH of the brand store, with RULE_SUBSCRIBERS active offer.updated webhooks
  # (the issue's 10), and the fan-out of its events: from the PATCH's answer until the first
  # of those webhooks has a delivery for each offer the PATCH changed. The fan-out takes the
  # outbox oldest first and every webhook's deliveries of an event in one transaction, so
  # that webhook's count tells when all ten have theirs. The demo's dated prices keep
  # changing offers meanwhile (their events go to the same webhooks): counting every
  # delivery until the count stops growing never settles on a demo database.
  section "B: rule PATCH ($BACKEND_LABEL)"
  subscribe_to_offers "$RULE_SUBSCRIBERS" rule-subscriber
  announced_offers "$brand_store" >"$WORK/offers_before.csv"
  before=$(count_at "/api/webhookDelivery/count?fk_webhook=$FIRST_HOOK")
  percent=$((80 + $(date +%s) % 19))
  printf '{"detail":{"stockPercent":%s,"stockBuffer":1}}' "$percent" >"$WORK/rule.json"
  request PATCH "/api/brandStore/$brand_store" "$WORK/rule.json"
  answered_ns=$(date +%s%N)
  announced_offers "$brand_store" >"$WORK/offers_after.csv"
  changed=$(diff "$WORK/offers_before.csv" "$WORK/offers_after.csv" | grep -c '^>' || true)
  while :; do
    count=$(count_at "/api/webhookDelivery/count?fk_webhook=$FIRST_HOOK")
    now_ns=$(date +%s%N)
    [ $((count - before)) -lt "$changed" ] || break
    [ $((now_ns - answered_ns)) -lt 120000000000 ] || break
    sleep 0.05
  done
  fanned=$(awk -v a="$answered_ns" -v b="$now_ns" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  echo "$BACKEND_LABEL: rule PATCH (stockPercent $percent) of a brand store of $variants variants, $RULE_SUBSCRIBERS offer.updated subscribers: $R_CODE in $R_MS ms; its $changed changed offers' $((changed * RULE_SUBSCRIBERS)) deliveries made $fanned s after its answer ($((count - before)) of the first webhook's)" >>"$RESULTS"
  fi

  if wanted D; then
  # D: prices starting at one moment, written ahead as JSON arrays of 1,000.
  section "D: dated prices ($BACKEND_LABEL)"
  # The variants the store sells, of every brand it carries (the export names the offer, then
  # its variant): as many prices as a host sets.
  api -o "$WORK/variant_ids.csv" "$BASE/api/offer?fk_store=$store&fields=fk_variant&format=csv"
  # Active subscribers of offer.updated (the goal's condition; PRICE_SUBSCRIBERS=0 for none):
  # each offer the moment changes also writes its event, in the same transaction; the
  # deliveries that follow are not timed.
  subscribe_to_offers "$PRICE_SUBSCRIBERS" subscriber
  moment=$(date -u -d "+$PRICE_LEAD seconds" +%Y-%m-%dT%H:%M:%S)
  # A price of this moment's own (5.00 to 9.99), so that a run on a kept database
  # (BENCH_REUSE) moves the price of each offer, and announces it, as the first run did.
  price=$(awk -v s="$(date -u -d "$moment" +%s)" 'BEGIN { printf "%.2f", 5 + (s % 500) / 100 }')
  sed -n "2,$((PRICE_ROWS + 1))p" "$WORK/variant_ids.csv" | tr -d '"' | cut -d, -f2 >"$WORK/price_variants"
  prices=$(wc -l <"$WORK/price_variants")
  split -l 1000 "$WORK/price_variants" "$WORK/price_chunk."
  for chunk in "$WORK"/price_chunk.*; do
    awk -v host="$host" -v at="$moment" -v price="$price" 'BEGIN { printf "[" }
      { printf "%s{\"fk_variant\":\"%s\",\"fk_host\":\"%s\",\"price\":%s,\"startDate\":\"%s\"}", (NR > 1 ? "," : ""), $1, host, price, at }
      END { printf "]" }' "$chunk" >"$chunk.json"
    request POST /api/price "$chunk.json"
    [ "$R_CODE" = 201 ] || say "a price array answered $R_CODE: $(head -c 300 "$WORK/answer.json")"
  done
  at_ns=$(date -u -d "$moment" +%s%N)
  now_ns=$(date +%s%N)
  [ "$now_ns" -lt "$at_ns" ] || say "the prices were written after their moment: raise PRICE_LEAD"
  # Polled on one store's offers (its index), which the one transaction of the moment changes
  # with all the others: a count of every offer by an unindexed date scans them all, and
  # back to back such counts took one of the two cores from the change they wait for.
  last=-1 reached=""
  while :; do
    count=$(count_at "/api/offer/count?priceStart=$moment&fk_store=$store")
    now_ns=$(date +%s%N)
    if [ "$count" != "$last" ]; then
      last=$count
      reached=$now_ns
    fi
    # Settled: unchanged for 5 s after the moment.
    if [ "$now_ns" -gt "$at_ns" ] && [ $((now_ns - reached)) -gt 5000000000 ] && [ "$count" -gt 0 ]; then
      break
    fi
    [ $((now_ns - at_ns)) -lt 120000000000 ] || break
    sleep 0.2
  done
  last=$(count_at "/api/offer/count?priceStart=$moment")
  echo "$BACKEND_LABEL: $prices prices starting at one moment, $PRICE_SUBSCRIBERS offer.updated subscriber(s): $last offers changed, all of them $(awk -v a="$at_ns" -v b="$reached" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') s after it (goal <= 10 s)" >>"$RESULTS"
  fi

  if wanted X; then
  # X: the store's feed as CSV, three times (the median); and, for comparison, with the
  # variant and the store expanded (`fields=*,offer_variant,offer_store`: 41 columns).
  section "X: the feed as CSV ($BACKEND_LABEL)"
  feed_rate() {
    local times=() start
    for _ in 1 2 3; do
      start=$(date +%s%N)
      api -o "$WORK/feed.csv" "$BASE/api/offer?fk_store=$store&format=csv$1" || say "the feed's export failed (curl $?)"
      times+=("$(seconds_since "$start")")
    done
    FEED_SECONDS=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
    FEED_ROWS=$(($(wc -l <"$WORK/feed.csv") - 1))
    FEED_BYTES=$(wc -c <"$WORK/feed.csv")
  }
  feed_rate ""
  line="$BACKEND_LABEL: feed of store $store as CSV: $FEED_ROWS rows, $FEED_BYTES bytes in ${FEED_SECONDS}s ($(awk -v n="$FEED_ROWS" -v s="$FEED_SECONDS" 'BEGIN { printf "%.0f", n / s }') rows/s; goal >= 200,000)"
  feed_rate "&fields=*,offer_variant,offer_store"
  line+="; with the variant and the store expanded: $FEED_BYTES bytes in ${FEED_SECONDS}s ($(awk -v n="$FEED_ROWS" -v s="$FEED_SECONDS" 'BEGIN { printf "%.0f", n / s }') rows/s)"
  echo "$line" >>"$RESULTS"
  fi

  # S: sync by cursor: the store's offers from 0, then one answer of 1,000 changes.
  if wanted S; then
    section "S: sync by cursor ($BACKEND_LABEL)"
    sync_query="fk_store=$store&fields=id,available,price,status,hostSku"
    # One keep-alive connection, as a host's sync loop keeps (a curl process a page spent
    # most of the time on its own start and TLS handshake: offers run 7).
    sync=$(python3 "$ROOT/bench/sync_client.py" "$BASE" "$CRED_USER" "$CRED_KEY" "$sync_query") ||
      die "the sync client failed"
    field_of() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$sync"; }
    cursor=$(field_of cursor)
    echo "$BACKEND_LABEL: full sync of store $store by cursor pages of 1,000: $(field_of offers) offers in $(field_of seconds)s ($(field_of rate) offers/s; goal >= 50,000), server's own time $(field_of server_ms) ms" >>"$RESULTS"
    api_get "/api/offer?fk_store=$store&fields=id&pageSize=1000" | ids_of >"$WORK/sync_ids"
    awk -v tag="$RANDOM" 'BEGIN { printf "[" } { printf "%s{\"id\":\"%s\",\"hostSku\":\"S%s-%d\"}", (NR > 1 ? "," : ""), $1, tag, NR } END { printf "]" }' \
      "$WORK/sync_ids" >"$WORK/skus.json"
    request POST /api/offer/hostSku "$WORK/skus.json"
    [ "$R_CODE" = 200 ] || say "the SKU array answered $R_CODE: $(head -c 300 "$WORK/answer.json")"
    echo "$BACKEND_LABEL: host SKUs of 1,000 offers set in one array: $R_CODE in $R_MS ms" >>"$RESULTS"
    api_get "/api/offer?$sync_query&pageSize=1000&changedSince=$cursor" >"$WORK/sync.json"
    changes=$( (grep -o '"id":' "$WORK/sync.json" || true) | wc -l)
    p50_of "/api/offer?$sync_query&pageSize=1000&changedSince=$cursor"
    echo "$BACKEND_LABEL: incremental sync answering $changes changes in one request: p50 $P50 ms (goal <= 50)" >>"$RESULTS"
  fi

  stop_server
  drop_database "$backend"
done

print_results
