#!/usr/bin/env bash
# One command for a newcomer: install the dependencies, build vramsim (Release) and run the
# main job on a bundled example. The binary ends up in build/bin/vramsim.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVRAMSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"

echo
echo "== Will Llama 3.3 70B fit on one RTX 4090, and what if part of it runs from DDR5? =="
build/bin/vramsim fit --model llama-3.3-70b --gpu rtx-4090 --quant Q4_K_M --context 8192 --host ddr5-dual-channel
