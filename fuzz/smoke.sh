#!/usr/bin/env bash
# Smoke test of every fuzz target (SPEC §13): builds them with cargo-fuzz on the nightly
# toolchain (installing cargo-fuzz if absent), runs each for FUZZ_SMOKE_SECONDS (default 20)
# from its committed corpus with its dictionary, and prints the executions per target.
# Fails if a target does not build or crashes. Without a nightly toolchain it says so and
# exits 0: the stable corpus replay (`cargo test`) runs every corpus input anyway.
#
# New inputs go to a scratch folder, never into the committed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SMOKE_SECONDS:-20}"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz smoke skipped: no nightly toolchain (install one with 'rustup toolchain install nightly');"
  echo "the stable corpus replay in 'cargo test' still ran every committed input."
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

cargo +nightly fuzz build
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=0
for target in $(cargo +nightly fuzz list); do
  mkdir -p "$scratch/$target"
  dictionary=()
  if [ -f "corpus/dict/$target.dict" ]; then
    dictionary=("-dict=corpus/dict/$target.dict")
  fi
  log="$scratch/$target.log"
  if cargo +nightly fuzz run "$target" "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -print_final_stats=1 "${dictionary[@]}" >"$log" 2>&1; then
    outcome="ok"
  else
    outcome="FAILED"
    failed=1
  fi
  executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  coverage="$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)"
  printf 'fuzz %-14s %s: %s executions in %s s (%s exec/s), %s\n' \
    "$target" "$outcome" "${executions:-?}" "$seconds" "${speed:-?}" "${coverage:-no coverage line}"
  if [ "$outcome" = FAILED ]; then
    tail -n 60 "$log"
  fi
done
exit "$failed"
