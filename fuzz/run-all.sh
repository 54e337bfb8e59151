#!/usr/bin/env bash
# Fuzzes every target (decode, node, cluster) in turn: the search for
# counterexamples that CI runs on every change and a developer runs before
# stopping work on the core or the codec.
#
#   fuzz/run-all.sh [SECONDS]      (default 60 per target)
#
# With a nightly toolchain and cargo-fuzz: libFuzzer, SECONDS per target, from the
# committed corpus (what it learns goes to a scratch directory; the corpus stays
# as committed). Otherwise the stable runner (fuzz/stable): the committed corpus,
# then inputs mutated from it for SECONDS per target, or for exactly
# BULLY_FUZZ_INPUTS inputs per target when that is set (CI sets 200000).
# BULLY_FUZZ_STABLE=1 takes the stable runner even where nightly is installed;
# its other variables (BULLY_FUZZ_SEED, BULLY_FUZZ_THREADS, ...) are in
# fuzz/README.md.
#
# A crash is saved as fuzz/artifacts/<target>/crash-<sha1 of the input>, which
# `cargo +nightly fuzz run <target> <file>` and `fuzz-stable <target> <file>`
# replay; the script goes on with the other targets and fails at the end.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-60}
targets=(decode node cluster)

nightly_fuzz() {
  [[ "${BULLY_FUZZ_STABLE:-}" == 1 ]] && return 1
  command -v rustup >/dev/null 2>&1 || return 1
  rustup toolchain list | grep -q '^nightly' || return 1
  if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "nightly is installed but cargo-fuzz is not: installing it"
    cargo install cargo-fuzz --locked >/dev/null 2>&1 || return 1
  fi
}

failed=()
if nightly_fuzz; then
  echo "libFuzzer (cargo +nightly fuzz, $(cargo +nightly fuzz --version)), ${seconds} s per target"
  # No sanitizer: the crates forbid unsafe code, and the fuzzers run about twice
  # as fast without AddressSanitizer. Debug assertions are on (Cargo.toml).
  cargo +nightly fuzz build -s none >/dev/null
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  for target in "${targets[@]}"; do
    mkdir -p "$scratch/$target"
    log="$scratch/$target.log"
    start=$SECONDS
    if cargo +nightly fuzz run -s none "$target" "$scratch/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=120 -print_final_stats=1 >"$log" 2>&1; then
      outcome="no crash"
    else
      outcome="CRASH"
      failed+=("$target")
      # The panic, the failing input and how to replay it (or, for a crash
      # without a panic, the end of the log).
      sed -n '/panicked at\|deadly signal\|ERROR: libFuzzer/,/cargo fuzz tmin/p' "$log" |
        grep -v '^ *[0-9]*: \|^ *at ' | head -n 60 || tail -n 40 "$log"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    echo "fuzz $target: ${runs:-?} executions in $((SECONDS - start)) s, $outcome"
  done
else
  echo "stable runner (fuzz/stable): no nightly toolchain with cargo-fuzz, or BULLY_FUZZ_STABLE=1"
  cargo build --release --quiet --manifest-path stable/Cargo.toml
  if [[ -z "${BULLY_FUZZ_INPUTS:-}" ]]; then
    export BULLY_FUZZ_SECONDS="$seconds"
  fi
  for target in "${targets[@]}"; do
    start=$SECONDS
    if target/release/fuzz-stable "$target"; then
      outcome="no crash"
    else
      outcome="CRASH"
      failed+=("$target")
    fi
    echo "fuzz $target: $((SECONDS - start)) s, $outcome"
  done
fi

if ((${#failed[@]})); then
  echo "fuzzing found a crash in: ${failed[*]} (saved under fuzz/artifacts/)" >&2
  exit 1
fi
