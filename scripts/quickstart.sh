#!/usr/bin/env bash
# One command for a newcomer: install the dependencies, build vramsim (Release) and run the
# main job on a bundled example. The binary ends up in build/bin/vramsim.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVRAMSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"

scenario=configs/scenarios/moe125b-rtx5090-gen3-shared.yaml
echo
echo "== The case study: a 125B MoE on an RTX 5090 in a PCIe Gen3 slot, 18 GB held by other tenants =="
build/bin/vramsim run "$scenario"
echo
echo "== What would a Gen5 slot buy? =="
build/bin/vramsim run "$scenario" --set hardware.link.preset=pcie-gen5-x16 --set hardware.link.measured_h2d=56GB/s
echo
echo "== And the card to itself (18 GB more for the expert cache)? =="
build/bin/vramsim run "$scenario" --set hardware.gpu.vram_used_by_others=0MiB
echo
echo "== Will Llama 3.3 70B fit on one RTX 4090, and what if part of it runs from DDR5? =="
build/bin/vramsim fit --model llama-3.3-70b --gpu rtx-4090 --quant Q4_K_M --context 8192 --host ddr5-dual-channel
