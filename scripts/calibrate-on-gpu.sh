#!/usr/bin/env bash
# Measures this machine's NVIDIA GPU for vramsim: installs the build dependencies, builds
# vramsim-calibrate (Release, with CUDA) and runs it. Needs an NVIDIA driver (nvidia-smi)
# and a CUDA toolkit (nvcc on PATH or in /usr/local/cuda). Takes a few minutes.
#
#   scripts/calibrate-on-gpu.sh                 # full run
#   QUICK=1 scripts/calibrate-on-gpu.sh         # half the sizes and trials
#   OUT=dir NAME=my-card scripts/calibrate-on-gpu.sh
#
# Writes $OUT/$NAME.yaml (the calibration, units in strings) and $OUT/$NAME-raw.json (every
# sample). The card's settings are never changed.
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

scripts/install-deps.sh

out="${OUT:-calibration-out}"
name="${NAME:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr '[:upper:]' '[:lower:]')}"
build="build-calibrate"

echo "calibrate-on-gpu: configuring ($build, Release, nvcc: $nvcc_path)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVRAMSIM_BUILD_TESTS=OFF \
      -DCMAKE_CUDA_COMPILER="$nvcc_path" >/dev/null
cmake --build "$build" -j "$(nproc)" --target vramsim-calibrate

args=(--out "$out" --name "$name")
[ "${QUICK:-0}" = "1" ] && args+=(--quick)
echo "calibrate-on-gpu: running $build/bin/vramsim-calibrate ${args[*]}"
start=$SECONDS
"$build/bin/vramsim-calibrate" "${args[@]}"
echo
echo "calibrate-on-gpu: done in $((SECONDS - start)) s"
echo "  calibration: $out/$name.yaml"
echo "  raw samples: $out/$name-raw.json"
