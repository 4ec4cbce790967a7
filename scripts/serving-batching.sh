#!/usr/bin/env bash
# The continuous-batching example of docs/serving.md: Llama 3.1 8B (BF16) on one H100 with the
# vllm preset (configs/scenarios/llama8b-h100-vllm.yaml), closed-loop clients c = 1, 2, 4, 8,
# 16, 32, 64, 128, 256 requests each (1,024-token prompts, 256 generated tokens). Writes the
# plot-ready CSV (default docs/serving-batching.csv) and prints it.
#
# usage: scripts/serving-batching.sh [VRAMSIM] [OUT.csv]   (default build/bin/vramsim)
set -euo pipefail
cd "$(dirname "$0")/.."
vramsim=${1:-build/bin/vramsim}
out=${2:-docs/serving-batching.csv}
scenario=configs/scenarios/llama8b-h100-vllm.yaml
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
clients="1 2 4 8 16 32 64 128"
for c in $clients; do
  "$vramsim" run "$scenario" --set workload.requests=256 --set workload.clients=$c --json >"$tmp/c$c.json"
done
python3 - "$tmp" $clients >"$out" <<'PY'
import json, sys
print("clients,requests,throughput_tok_s,batch_mean,batch_max,decode_step_ms,ttft_p50_s,ttft_p95_s,tpot_p50_s,"
      "tpot_p95_s,e2e_p50_s,per_client_tok_s_p50,decode_tok_s_p50,queue_mean,kv_peak_blocks")
for c in sys.argv[2:]:
    d = json.load(open(f"{sys.argv[1]}/c{c}.json"))
    row = [int(c), d["requests"]["completed"], d["throughput_tok_s"], d["batch"]["mean"], d["batch"]["max"],
           d["decode_step_ms"], d["ttft_s"]["p50"], d["ttft_s"]["p95"], d["tpot_s"]["p50"], d["tpot_s"]["p95"],
           d["e2e_s"]["p50"], d["per_client_tok_s"]["p50"], d["decode_tok_s"]["p50"], d["queue_length"]["mean"],
           d["kv_pool"]["peak_blocks"]]
    print(",".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
PY
cat "$out"
