#!/usr/bin/env bash
# API conformance (operations issue): runs schemathesis against the server's own OpenAPI
# document (each user type's own, ?userType=) with every check, as the demo admin and as the
# demo host user. Builds the release binary, loads the demo data set into a fresh SQLite
# database, starts `serve`, and for each user runs every phase (examples, coverage, fuzzing, stateful) with every check (schemathesis's
# default; bench/schemathesis.toml gives two checks the statuses the document declares for
# what no schema can say, and says why); prints each run's summary and leaves the reports
# (JUnit XML and NDJSON events) in the work dir when BENCH_KEEP=1.
#
#   bash bench/conformance.sh                      # from the repo root
#   SECONDS_PER_USER=900 USERS=admin bash bench/conformance.sh
#
# Knobs (environment):
#   USERS             demo user types to run as (default "admin host")
#   SECONDS_PER_USER  the time budget of each schemathesis run (default 600)
#   MAX_EXAMPLES      test cases per operation and phase (default 25)
#   SEED              schemathesis's random seed, to repeat a run (default: a new one)
#   DEMO_SCALE        demo variants loaded first (default 2000)
#   BENCH_BIN         a brandhub binary to test instead of this checkout's release build
#   BENCH_WORK_DIR    where the data dir, logs and reports go (default target/bench-run);
#                     deleted at the end unless BENCH_KEEP=1
#
# Needs: a Rust toolchain, curl, python3 with pip (schemathesis is installed from PyPI when it
# is missing). Exits non-zero when any run reports a failure or an error.

set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

USERS=${USERS:-"admin host"}
SECONDS_PER_USER=${SECONDS_PER_USER:-600}
MAX_EXAMPLES=${MAX_EXAMPLES:-25}
DEMO_SCALE=${DEMO_SCALE:-2000}
BENCH_KEEP=${BENCH_KEEP:-0}
BACKENDS=sqlite
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${BENCH_BIN:-$TARGET_DIR/release/brandhub}

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[[ $SECONDS_PER_USER =~ ^[1-9][0-9]*$ ]] || die "SECONDS_PER_USER must be a positive number"
[[ $MAX_EXAMPLES =~ ^[1-9][0-9]*$ ]] || die "MAX_EXAMPLES must be a positive number"
bench_start conformance

if ! command -v schemathesis >/dev/null 2>&1; then
  section "Installing schemathesis (PyPI)"
  python3 -m pip install --quiet schemathesis || die "could not install schemathesis"
  command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
  command -v schemathesis >/dev/null 2>&1 || die "schemathesis is not on the PATH after installing it"
fi
say "$(schemathesis --version)"

if [ -z "${BENCH_BIN:-}" ]; then
  section "Building (cargo build --release)"
  if ! cargo build --release -p brandhub --bin brandhub >"$WORK/build.log" 2>&1; then
    tail -n 60 "$WORK/build.log" >&2
    die "the release build failed"
  fi
  tail -n 1 "$WORK/build.log"
fi

load_demo sqlite "$DEMO_SCALE"
# Schemathesis sends thousands of requests with one key and many that fail authentication on
# purpose: the limiters would answer 429 to most of them, which tests nothing.
start_server "$dir/data" "" "$WORK/server" --auth-failure-limit 1000000 --workers 1

failed=0
for user_type in $USERS; do
  use_demo_user "$dir/demo.out" "$user_type"
  section "schemathesis as $user_type ($CRED_USER), $SECONDS_PER_USER s"
  report=$WORK/report-$user_type
  args=(--config-file "$ROOT/bench/schemathesis.toml" run "$BASE/api/openapi.json?userType=$user_type" --tls-verify false --auth "$CRED_USER:$CRED_KEY"
    --max-examples "$MAX_EXAMPLES" --max-time "$SECONDS_PER_USER" --no-color
    --report junit,ndjson --report-dir "$report" --workers 2)
  [ -n "${SEED:-}" ] && args+=(--seed "$SEED")
  if schemathesis "${args[@]}" >"$WORK/schemathesis-$user_type.log" 2>&1; then
    outcome="no failures"
  else
    outcome="FAILURES (exit $?)"
    failed=1
  fi
  # The summary: phases, failures by check, warnings, counts.
  sed -n '/^Test Phases:/,$p' "$WORK/schemathesis-$user_type.log" | indent | tee -a "$RESULTS"
  if [ "$failed" = 1 ]; then
    say "  first failures:"
    # sed, not head: it reads to the end, so grep never meets a closed pipe (exit 141).
    grep -E '^(_{5,}|- ST|\[[0-9]{3}\])' "$WORK/schemathesis-$user_type.log" | sed -n '1,60p' | indent
  fi
  say "$user_type: $outcome" | tee -a "$RESULTS"
  if grep -q '"type":"internal"\|500 Internal' "$WORK/server.err" 2>/dev/null; then
    say "  the server log has internal errors:" | tee -a "$RESULTS"
    grep -m5 'internal' "$WORK/server.err" | indent | tee -a "$RESULTS"
    failed=1
  fi
done

stop_server
print_results
exit "$failed"
