#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. a warnings-as-errors build and the Catch2 suite under ctest;
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build and the same suite;
#   3. the config-loader fuzzer (libFuzzer, clang) for a bounded time.
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

echo "== 3/3 fuzz the config loader for ${FUZZ_SECONDS}s (seed ${FUZZ_SEED})"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVRAMSIM_FUZZ=ON \
  -DVRAMSIM_BUILD_TESTS=ON >/dev/null
cmake --build build-fuzz -j "$jobs" --target config_fuzzer
rm -rf build-fuzz/corpus && mkdir -p build-fuzz/corpus
cp configs/*/*.yaml build-fuzz/corpus/ 2>/dev/null || true
# A fixed seed makes the run reproducible: a slower machine runs a prefix of the same inputs.
# Set FUZZ_SEED=0 for a random seed and FUZZ_SECONDS for a longer search.
if ! build-fuzz/bin/config_fuzzer -seed="$FUZZ_SEED" -max_total_time="$FUZZ_SECONDS" -max_len=4096 \
       -print_final_stats=1 -artifact_prefix=build-fuzz/ build-fuzz/corpus >build-fuzz/fuzz.log 2>&1; then
  grep -m1 -A40 -E "^==[0-9]+==|runtime error|terminate called" build-fuzz/fuzz.log || tail -n 60 build-fuzz/fuzz.log
  echo "fuzz: crash; input saved as $(ls build-fuzz/crash-* 2>/dev/null | head -n 1)"
  echo "      replay it with: build-fuzz/bin/config_fuzzer <that file>"
  exit 1
fi
tail -n 8 build-fuzz/fuzz.log
echo "fuzz: no crash in ${FUZZ_SECONDS}s"
echo "tests: $passed passed, 0 failed"
