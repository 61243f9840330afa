#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ in turn (libFuzzer, AddressSanitizer), each for the
# given number of seconds, seeded from the test suite's URLs and query bodies.
#
#   bash bench/fuzz.sh            # 60 seconds per target
#   bash bench/fuzz.sh 1800       # half an hour per target
#   TARGETS=query_body bash bench/fuzz.sh 600
#
# Knobs (environment):
#   TARGETS     targets to run, in order (default: every target `cargo fuzz list` names)
#   JOBS        libFuzzer jobs per target, run in parallel (default 1)
#   NICE        niceness of the fuzzers (default 19: they only take idle CPU)
#   TOOLCHAIN   "stable" (default) or another rustup toolchain such as "nightly"
#   SANITIZER   address (default) or none
#
# Toolchain: cargo fuzz passes unstable -Z flags to rustc (the sanitizer, coverage options).
# A nightly toolchain takes them as they are; on a stable toolchain this script sets
# RUSTC_BOOTSTRAP=1, which lets the stable compiler accept them (the AddressSanitizer runtime
# ships with the stable standard library for x86_64-unknown-linux-gnu). Needs cargo-fuzz
# (`cargo install cargo-fuzz`) and a C++ compiler (libfuzzer-sys builds libFuzzer).
#
# Inputs: fuzz/corpus/<target>/ keeps what each run found interesting (not committed); the
# seeds are written afresh each run into fuzz/seeds/<target>/ from the tests. A crash leaves
# its input in fuzz/artifacts/<target>/: fix it, then copy the input into
# fuzz/regressions/<target>/, where `cargo test -p brandhub-query fuzz` replays it for good.
# At the end: per target, the time run, the executions, the corpus size and what was found.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT/fuzz"

SECONDS_PER_TARGET=${1:-60}
JOBS=${JOBS:-1}
NICE=${NICE:-19}
TOOLCHAIN=${TOOLCHAIN:-stable}
SANITIZER=${SANITIZER:-address}

die() {
  printf 'fuzz: %s\n' "$*" >&2
  exit 1
}

command -v cargo-fuzz > /dev/null || die "cargo-fuzz is missing: cargo install cargo-fuzz"
FUZZ=(cargo "+$TOOLCHAIN" fuzz)
if [ "$TOOLCHAIN" != nightly ]; then
  export RUSTC_BOOTSTRAP=1
fi
TARGETS=${TARGETS:-$("${FUZZ[@]}" list)}

# Seeds from the tests: every "/api/<resource>?<query>" of the integration tests, and every
# raw-string JSON body with a query key of the query crate's and the integration tests' code.
write_seeds() {
  local dir=seeds/url_query
  rm -rf seeds && mkdir -p "$dir" seeds/query_body
  local n=0
  while IFS= read -r url; do
    n=$((n + 1))
    printf '%s' "$url" > "$dir/test-$n"
  done < <(grep -ohE '"/api/[a-zA-Z]+\?[^"]*"' "$ROOT"/crates/brandhub/tests/*.rs "$ROOT"/crates/brandhub/tests/*/*.rs 2> /dev/null |
    sed -E 's|^"/api/||; s|"$||' | sort -u)
  n=0
  while IFS= read -r -d '' body; do
    for resource in order stock file product; do
      n=$((n + 1))
      printf '%s\n%s' "$resource" "$body" > "seeds/query_body/test-$n"
    done
  done < <(cat "$ROOT"/crates/query/src/*.rs "$ROOT"/crates/query/src/plan/*.rs "$ROOT"/crates/brandhub/tests/*.rs |
    perl -0777 -ne 'while (/b?r(#+)"(\{.*?\})"\1/sg) { my $b = $2; print "$b\0" if $b =~ /query|witharray/ }')
  # The upload's part names and waits as the tests write them; the spreadsheet readers start
  # from the fixtures of the sheet crate, each format from its own files.
  mkdir -p seeds/part_name seeds/sheet_xlsx seeds/sheet_xls seeds/sheet_ods seeds/sheet_csv
  n=0
  while IFS= read -r name; do
    n=$((n + 1))
    printf '%s\nwait=%s' "$name" "$((n % 70))" > "seeds/part_name/test-$n"
  done < <(grep -ohE '"(product|stock|price|image|orderDispatch|orderdispatch),[^"]*"' \
    "$ROOT"/crates/sheet/src/*.rs "$ROOT"/crates/brandhub/tests/*.rs "$ROOT"/crates/brandhub/tests/*/*.rs 2> /dev/null |
    tr -d '"' | sort -u)
  local format
  for format in xlsx xls ods csv; do
    cp "$ROOT"/crates/sheet/tests/fixtures/*."$format" "seeds/sheet_$format/" 2> /dev/null || true
  done
  local target
  for target in url_query query_body part_name sheet_xlsx sheet_xls sheet_ods sheet_csv; do
    printf '%s seeds for %s\n' "$(ls "seeds/$target" | wc -l)" "$target"
  done
}

write_seeds
REPORT=()
for target in $TARGETS; do
  mkdir -p "corpus/$target" "artifacts/$target"
  before=$(ls "artifacts/$target" | wc -l)
  log="artifacts/$target.log"
  printf '\n=== %s: %s s ===\n' "$target" "$SECONDS_PER_TARGET"
  "${FUZZ[@]}" build --sanitizer "$SANITIZER" "$target"
  started=$(date +%s)
  status=0
  parallel=()
  if [ "$JOBS" -gt 1 ]; then parallel=(-jobs="$JOBS" -workers="$JOBS"); fi
  nice -n "$NICE" "${FUZZ[@]}" run --sanitizer "$SANITIZER" "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" "${parallel[@]}" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="artifacts/$target/" > "$log" 2>&1 || status=$?
  elapsed=$(($(date +%s) - started))
  # With -jobs the workers log to fuzz-<n>.log; their final stats are summed.
  logs=("$log")
  if [ "$JOBS" -gt 1 ]; then logs=(fuzz-*.log "$log"); fi
  execs=$(grep -h 'stat::number_of_executed_units' "${logs[@]}" | awk '{s += $2} END {print s + 0}')
  found=$(($(ls "artifacts/$target" | wc -l) - before))
  corpus=$(ls "corpus/$target" | wc -l)
  REPORT+=("$target: ${elapsed} s, ${execs} executions, corpus ${corpus} inputs, ${found} new crash inputs (exit ${status})")
  tail -n 5 "$log"
  rm -f fuzz-*.log
done

printf '\n=== summary ===\n'
printf '%s\n' "${REPORT[@]}"
