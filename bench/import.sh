#!/usr/bin/env bash
# Benchmark of `brandhub import`: a set-up document of RECORDS records (a company, brand,
# warehouse, host, store and brand store, then products, variants and stock in the ratio
# 1 : 2 : 2, all linked by natural key) imported into an empty database per backend, then
# imported again (every record an upsert of an existing one).
#
#   bash bench/import.sh                              # from the repo root
#   RECORDS=2000 BACKENDS=sqlite bash bench/import.sh
#
# Knobs (environment):
#   RECORDS      records in the document (default 10000; at least 11)
#   BACKENDS     "sqlite postgres" (default); postgres needs psql and a server reachable at
#                BRANDHUB_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test), where
#                the script creates and finally drops its own database brandhub_bench
#   BENCH_WORK_DIR  where data dirs and logs go (default target/bench-run); deleted at the end
#                unless BENCH_KEEP=1
#
# Results: the wall clock of each import and the records per second.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

RECORDS=${RECORDS:-10000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
BENCH_KEEP=${BENCH_KEEP:-0}
PG_URL=${BRANDHUB_BENCH_DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
PG_DB=brandhub_bench
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=$TARGET_DIR/release/brandhub

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $RECORDS =~ ^[0-9]+$ ]] && [ "$RECORDS" -ge 11 ] || die "RECORDS must be a number of at least 11"
bench_start import

section "Building (cargo build --release)"
if ! cargo build --release -p brandhub --bin brandhub >"$WORK/build.log" 2>&1; then
  tail -n 60 "$WORK/build.log" >&2
  die "the release build failed"
fi
tail -n 1 "$WORK/build.log"

# The document: six set-up records, then products, variants and stock in the ratio 1 : 2 : 2.
section "Writing the set-up document ($RECORDS records)"
DOC=$WORK/setup.json
awk -v total="$RECORDS" 'BEGIN {
  rest = total - 6
  products = int(rest / 5); stock = int(rest * 2 / 5); variants = rest - products - stock
  printf "{\"company\": [{\"name\": \"Bench\", \"code\": \"BENCH\"}],\n"
  printf " \"brand\": [{\"fk_company\": \"BENCH\", \"name\": \"Bench\", \"code\": \"BENCH-B\"}],\n"
  printf " \"warehouse\": [{\"fk_company\": \"BENCH\", \"name\": \"Bench Leeds\", \"code\": \"BENCH-W\"}],\n"
  printf " \"host\": [{\"name\": \"Bench Shop\", \"code\": \"BENCHSHOP\"}],\n"
  printf " \"store\": [{\"fk_host\": \"BENCHSHOP\", \"name\": \"Bench Shop UK\", \"code\": \"UK\", \"currency\": \"GBP\"}],\n"
  printf " \"brandStore\": [{\"fk_brand\": \"BENCH-B\", \"fk_store\": \"BENCHSHOP/UK\", \"fk_warehouse\": \"BENCH-W\"}],\n"
  printf " \"product\": ["
  for (n = 0; n < products; n++)
    printf "%s{\"fk_brand\": \"BENCH-B\", \"code\": \"P%06d\", \"title\": \"Product %d\"}", (n ? "," : ""), n, n
  printf "],\n \"variant\": ["
  for (n = 0; n < variants; n++)
    printf "%s{\"fk_product\": \"BENCH-B/P%06d\", \"barcode\": \"4%012d\", \"size\": \"%s\"}", (n ? "," : ""), n % products, n, (n % 2 ? "M" : "L")
  printf "],\n \"stock\": ["
  for (n = 0; n < stock; n++)
    printf "%s{\"fk_warehouse\": \"BENCH-W\", \"fk_variant\": \"BENCH-B/4%012d\", \"inStock\": %d}", (n ? "," : ""), n % variants, n % 50
  printf "]}\n"
  printf "products %d, variants %d, stock %d\n", products, variants, stock > "/dev/stderr"
}' >"$DOC"
ls -l "$DOC" | awk '{ printf "  %s: %d bytes\n", "setup.json", $5 }'

now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
per_second() { awk -v n="$RECORDS" -v s="$1" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }'; }

printf '%-16s %-14s %10s %12s\n' backend run seconds records/s >>"$RESULTS"
for backend in $BACKENDS; do
  dir=$WORK/$backend
  mkdir -p "$dir/data"
  fresh_database "$backend"
  section "$BACKEND_LABEL: brandhub import"
  args=(--data-dir "$dir/data" --log warn)
  [ -n "$url" ] && args+=(--database-url "$url")
  # Migrations run once before the timed runs, so the first import is not charged with them.
  "$BIN" "${args[@]}" user create --email bench@example.test --name Bench --type admin >/dev/null
  for run in "into empty" "again (upserts)"; do
    start=$(now_ns)
    if ! "$BIN" "${args[@]}" import "$DOC" >"$dir/import.out" 2>"$dir/import.err"; then
      cat "$dir/import.out" "$dir/import.err" >&2
      die "brandhub import failed on $backend"
    fi
    seconds=$(secs_since "$start")
    indent <"$dir/import.out"
    say "  $run: $seconds s ($(per_second "$seconds") records/s)"
    printf '%-16s %-14s %10s %12s\n' "$BACKEND_LABEL" "$run" "$seconds" "$(per_second "$seconds")" >>"$RESULTS"
  done
  drop_database "$backend"
done
print_results
