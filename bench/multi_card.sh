#!/usr/bin/env bash
# One 48 GB card vs two 24 GB cards (with and without an NVLink bridge), for a 70B dense model
# and for the case study's 125B-class MoE: every figure from `vramsim run`. Prints Markdown.
# Usage: bench/multi_card.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/bin/vramsim
[ -x "$bin" ] || { echo "multi_card: build first (cmake --build ${1:-build})" >&2; exit 2; }

# run SCENARIO ARGS... -> one JSON summary
run() { "$bin" run "$@" --json; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

dense=configs/scenarios/llama70b-2x4090-pipeline.yaml
one48="--set hardware.gpu.preset=rtx-6000-ada --set hardware.gpu.count=1"
x3090="--set hardware.gpu.preset=rtx-3090"
nvl="--set hardware.gpu_link.preset=nvlink-bridge-3090"
clients8="--set engine.context=1024 --set engine.parallel=8 --set workload.clients=8 --set workload.requests=32"

echo "### Llama 3.3 70B IQ4_XS, 4K context, llama.cpp preset, PCIe Gen4 x16 slots"
echo
echo "| machine | split | decode tok/s (1 stream) | TTFT 512-token prompt ms | aggregate tok/s (8 clients) |"
echo "|---|---|---|---|---|"
row() {  # label split args...
  local label=$1 split=$2; shift 2
  local one eight
  one=$(run $dense --set engine.split="$split" "$@" 2>/dev/null)
  # 8 clients' KV cache may not fit where one card holds all of it (llama.cpp's row split).
  if eight=$(run $dense --set engine.split="$split" $clients8 "$@" 2>/dev/null); then
    eight=$(echo "$eight" | field "'%.1f' % d['throughput_tok_s']")
  else
    eight="does not fit"
  fi
  printf "| %s | %s | %s | %s | %s |\n" "$label" "$split" \
    "$(echo "$one" | field "'%.1f' % d['decode_tok_s']['p50']")" \
    "$(echo "$one" | field "'%.0f' % (1e3 * d['ttft_s']['p50'])")" "$eight"
}
row "1x RTX 6000 Ada 48 GB" single $one48
row "2x RTX 4090 24 GB" pipeline
row "2x RTX 4090 24 GB" tensor
row "2x RTX 3090 24 GB" pipeline $x3090
row "2x RTX 3090 24 GB" tensor $x3090
row "2x RTX 3090 + NVLink bridge" pipeline $x3090 $nvl
row "2x RTX 3090 + NVLink bridge" tensor $x3090 $nvl
row "2x RTX 4090, 2nd card at x4" pipeline --set "hardware.link=[pcie-gen4-x16, pcie-gen4-x4]"
row "2x RTX 4090, 2nd card at x4" tensor --set "hardware.link=[pcie-gen4-x16, pcie-gen4-x4]"

moe=configs/scenarios/moe125b-rtx5090-gen3-exclusive.yaml
gen4="--set hardware.link.preset=pcie-gen4-x16 --set hardware.link.measured_h2d=26GB/s --set workload.requests=100"
echo
echo "### 125B-class MoE (case study, Q2_0 experts), expert-cache engine, PCIe Gen4 x16, 2x Xeon Gold 5218"
echo
echo "| machine | expert-cache coverage | hit rate p50 | PCIe overflow p50 | decode tok/s p50 |"
echo "|---|---|---|---|---|"
moe_row() {  # label args...
  local label=$1; shift
  local out
  out=$(run $moe $gen4 "$@")
  printf "| %s | %s | %s | %s | %s |\n" "$label" \
    "$(echo "$out" | field "'/'.join('%.1f%%' % (100 * c['coverage']) for c in d['cards'])")" \
    "$(echo "$out" | field "'%.1f%%' % (100 * d['expert_hit_rate']['p50'])")" \
    "$(echo "$out" | field "'%.2f%%' % (100 * d['pcie_overflow']['p50'])")" \
    "$(echo "$out" | field "'%.1f' % d['decode_tok_s']['p50']")"
}
moe_row "1x RTX 5090 32 GB (the case study's card)"
moe_row "1x RTX 6000 Ada 48 GB" --set hardware.gpu.preset=rtx-6000-ada
moe_row "2x RTX 4090 24 GB, pipeline" --set hardware.gpu.preset=rtx-4090 --set hardware.gpu.count=2
moe_row "2x RTX 3090 24 GB, pipeline" --set hardware.gpu.preset=rtx-3090 --set hardware.gpu.count=2
moe_row "2x RTX 3090 + NVLink, pipeline" --set hardware.gpu.preset=rtx-3090 --set hardware.gpu.count=2 $nvl
