#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. a warnings-as-errors build and the Catch2 suite under ctest;
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build and the same suite;
#   3. the fuzz targets (libFuzzer, clang), each for a bounded time: the config loader, the HF
#      config.json importer, the GGUF header reader and the engine-log reader (tests/fuzz/).
# Usage: scripts/test.sh [--quick]   (--quick: step 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_SEED=${FUZZ_SEED:-1}
passed=0

# Runs ctest on a build directory and adds its test count to `passed` (set -e stops on failure).
run_ctest() {
  local log
  log=$(mktemp)
  ctest --test-dir "$1" -j "$jobs" --output-on-failure | tee "$log"
  passed=$((passed + $(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log")))
  rm -f "$log"
}

scripts/install-deps.sh

echo "== 1/3 build (warnings as errors) and test"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVRAMSIM_WERROR=ON >/dev/null
cmake --build build-test -j "$jobs"
run_ctest build-test

if [ "${1:-}" = "--quick" ]; then
  echo "tests: $passed passed, 0 failed"
  exit 0
fi

echo "== 2/3 ASan + UBSan build and test"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DVRAMSIM_WERROR=ON -DVRAMSIM_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest build-asan

echo "== 3/3 fuzz each target for ${FUZZ_SECONDS}s (seed ${FUZZ_SEED})"
fuzz_targets="config_fuzzer hf_import_fuzzer engine_log_fuzzer gguf_fuzzer"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVRAMSIM_FUZZ=ON \
  -DVRAMSIM_BUILD_TESTS=ON >/dev/null
# shellcheck disable=SC2086  # the target names are words
cmake --build build-fuzz -j "$jobs" --target $fuzz_targets

# Seeds: real inputs of each kind, and the inputs kept as regressions.
seeds() {
  case "$1" in
    config_fuzzer) ls configs/*/*.yaml ;;
    hf_import_fuzzer) ls tests/data/hf/*.json ;;
    engine_log_fuzzer) ls tests/data/logs/*.log ;;
  esac
  ls -d "tests/fuzz/regressions/$1"/*
}

# Fuzzes one target; on a crash prints it, the saved input and the replay command, and fails.
# A fixed seed makes the run reproducible: a slower machine runs a prefix of the same inputs.
# Set FUZZ_SEED=0 for a random seed and FUZZ_SECONDS for a longer search.
fuzz() {
  local target=$1 corpus=build-fuzz/corpus/$1 log=build-fuzz/$1.log
  rm -rf "$corpus" build-fuzz/"$target"-crash-* build-fuzz/"$target"-timeout-* build-fuzz/"$target"-leak-* \
    build-fuzz/"$target"-oom-* && mkdir -p "$corpus"
  seeds "$target" | xargs cp -t "$corpus"
  local dict=()
  [ -f tests/fuzz/"$target".dict ] && dict=(-dict=tests/fuzz/"$target".dict)
  # -timeout: an input that takes 30 s is a hang (the slowest bounded one, a YAML of aliases
  # that expands to the 1,000,000 values a configuration may have, takes seconds under ASan).
  if ! build-fuzz/bin/"$target" -seed="$FUZZ_SEED" -max_total_time="$FUZZ_SECONDS" -max_len=8192 -timeout=30 \
         "${dict[@]}" -print_final_stats=1 -artifact_prefix=build-fuzz/"$target"- "$corpus" >"$log" 2>&1; then
    grep -m1 -A40 -E "^==[0-9]+==|runtime error|terminate called|${target}: " "$log" || tail -n 60 "$log"
    local saved
    saved=$(ls build-fuzz/"$target"-{crash,timeout,leak,oom}-* 2>/dev/null | head -n 1)
    echo "fuzz: $target: crash; input saved as $saved"
    echo "      replay it with: build-fuzz/bin/$target $saved"
    echo "      (fixed, keep it as a regression: tests/fuzz/regressions/$target/)"
    return 1
  fi
  tail -n 8 "$log"
  echo "fuzz: $target: no crash in ${FUZZ_SECONDS}s"
}

failed=0
for target in $fuzz_targets; do
  fuzz "$target" || failed=1
done
[ "$failed" = 0 ] || exit 1
echo "tests: $passed passed, 0 failed"
