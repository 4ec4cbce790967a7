#!/usr/bin/env bash
# Measures this machine's NVIDIA GPU for vramsim: installs the build dependencies, builds
# vramsim-calibrate (Release, with CUDA) and vramsim, runs the microbenchmarks, then the
# real-card MoE replay over a routing trace vramsim writes (docs/calibration.md). Needs an
# NVIDIA driver (nvidia-smi) and a CUDA toolkit (nvcc on PATH or in /usr/local/cuda). Takes a
# few minutes.
#
#   scripts/calibrate-on-gpu.sh                 # full run
#   QUICK=1 scripts/calibrate-on-gpu.sh         # half the sizes and trials, a shorter replay
#   OUT=dir NAME=my-card scripts/calibrate-on-gpu.sh
#   REPLAY=0 scripts/calibrate-on-gpu.sh        # microbenchmarks only
#   DEPS=0 scripts/calibrate-on-gpu.sh          # skip scripts/install-deps.sh (Debian 12 apt-get,
#                                               # root or sudo): bring CMake >= 3.25, a C++20
#                                               # compiler, SimGrid >= 3.32, oneTBB and yaml-cpp
#   REPLAY_SCENARIO=configs/scenarios/x.yaml REPLAY_TOKENS=2000 REPLAY_COVERAGE=0.1,0.5,1 \
#     REPLAY_EXPERT_BYTES=1382400 scripts/calibrate-on-gpu.sh
#
# Writes, all in $OUT: $NAME.yaml (the calibration, units in strings), $NAME-raw.json (every
# sample), routing.trace (the replay's routing) and $NAME-replay.json (tokens/s and hit rate
# per cache size, copy and zero-copy). The card's settings are never changed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "calibrate-on-gpu: nvidia-smi not found; this needs a machine with an NVIDIA GPU and driver" >&2
  exit 1
fi

nvcc_path=""
if command -v nvcc >/dev/null 2>&1; then
  nvcc_path="$(command -v nvcc)"
elif [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc_path=/usr/local/cuda/bin/nvcc
else
  echo "calibrate-on-gpu: nvcc not found; install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads)" >&2
  exit 1
fi

if [ "${DEPS:-1}" = "1" ]; then
  scripts/install-deps.sh
fi

# CUDA numbers devices fastest first unless told otherwise, nvidia-smi in PCI bus order: with
# PCI order for both, CUDA device 0 is nvidia-smi's first GPU, whose name the files take.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
out="${OUT:-calibration-out}"
name="${NAME:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr '[:upper:]' '[:lower:]')}"
build="build-calibrate"

echo "calibrate-on-gpu: configuring ($build, Release, nvcc: $nvcc_path)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVRAMSIM_BUILD_TESTS=OFF \
      -DCMAKE_CUDA_COMPILER="$nvcc_path" >/dev/null
targets=(--target vramsim-calibrate)
[ "${REPLAY:-1}" = "1" ] && targets+=(--target vramsim)
cmake --build "$build" -j "$(nproc)" "${targets[@]}"

args=(--out "$out" --name "$name")
[ "${QUICK:-0}" = "1" ] && args+=(--quick)
echo "calibrate-on-gpu: running $build/bin/vramsim-calibrate ${args[*]}"
start=$SECONDS
# Exit status 1 with files written means some benchmark failed (see "failed" in the YAML and
# the raw JSON's notes): go on to the replay, and report the failure at the end.
status=0
"$build/bin/vramsim-calibrate" "${args[@]}" || status=$?

if [ "${REPLAY:-1}" = "1" ]; then
  # The case study's model by default: 48 layers x 512 experts of 1,382,400 bytes (34 GB of
  # pinned host memory). On a host with less than twice that, experts shrink to fit half the RAM.
  scenario="${REPLAY_SCENARIO:-configs/scenarios/moe125b-rtx5090-gen3-shared.yaml}"
  tokens="${REPLAY_TOKENS:-1000}"
  [ "${QUICK:-0}" = "1" ] && tokens="${REPLAY_TOKENS:-300}"
  echo
  echo "calibrate-on-gpu: routing trace of $scenario ($tokens tokens)"
  "$build/bin/vramsim" routing-trace "$scenario" -o "$out/routing.trace" --tokens "$tokens"
  replay=(replay --trace "$out/routing.trace" --out "$out" --name "$name")
  [ -n "${REPLAY_COVERAGE:-}" ] && replay+=(--coverage "$REPLAY_COVERAGE")
  [ "${QUICK:-0}" = "1" ] && replay+=(--trials 1)
  expert_bytes="${REPLAY_EXPERT_BYTES:-}"
  if [ -z "$expert_bytes" ]; then
    pairs=$(awk '/^layers /{l=$2} /^experts /{e=$2} /^expert_bytes /{b=$2} /^prefill_order/{print l*e; exit}' "$out/routing.trace")
    trace_bytes=$(awk '/^expert_bytes /{print $2; exit}' "$out/routing.trace")
    half_ram=$(( $(awk '/^MemTotal:/{print $2}' /proc/meminfo) * 1024 / 2 ))
    if [ $(( pairs * trace_bytes )) -gt "$half_ram" ]; then
      expert_bytes=$(( half_ram / pairs / 4096 * 4096 ))
      echo "calibrate-on-gpu: $pairs experts x $trace_bytes B exceed half the RAM; replaying $expert_bytes B experts"
    fi
  fi
  [ -n "$expert_bytes" ] && replay+=(--expert-bytes "$expert_bytes")
  echo "calibrate-on-gpu: running $build/bin/vramsim-calibrate ${replay[*]}"
  "$build/bin/vramsim-calibrate" "${replay[@]}" || status=$?
fi

echo
echo "calibrate-on-gpu: done in $((SECONDS - start)) s"
echo "  calibration: $out/$name.yaml"
echo "  raw samples: $out/$name-raw.json"
if [ "${REPLAY:-1}" = "1" ]; then
  echo "  replay:      $out/$name-replay.json (routing: $out/routing.trace)"
fi
if [ "$status" != 0 ]; then
  echo "calibrate-on-gpu: something failed (status $status); what was measured is in $out" >&2
  exit "$status"
fi
