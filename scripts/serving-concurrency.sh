#!/usr/bin/env bash
# The worked concurrency example of docs/serving.md: closed-loop clients c = 1, 2, 4, 8, 16 on
# the case study's exclusive scenario (one slot), 160 requests each. Writes the plot-ready CSV
# (default docs/serving-concurrency.csv) and prints it.
#
# usage: scripts/serving-concurrency.sh [VRAMSIM] [OUT.csv]   (default build/bin/vramsim)
set -euo pipefail
cd "$(dirname "$0")/.."
vramsim=${1:-build/bin/vramsim}
out=${2:-docs/serving-concurrency.csv}
scenario=configs/scenarios/moe125b-rtx5090-gen3-exclusive.yaml
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for c in 1 2 4 8 16; do
  "$vramsim" run "$scenario" --set workload.requests=160 --set workload.clients=$c --json >"$tmp/c$c.json"
done
python3 - "$tmp" >"$out" <<'PY'
import json, sys
print("clients,requests,throughput_tok_s,ttft_p50_s,ttft_p95_s,tpot_p50_s,tpot_p95_s,e2e_p50_s,e2e_p99_s,"
      "per_client_tok_s_p50,decode_tok_s_p50,queue_mean,queue_max")
for c in (1, 2, 4, 8, 16):
    d = json.load(open(f"{sys.argv[1]}/c{c}.json"))
    row = [c, d["requests"]["completed"], d["throughput_tok_s"], d["ttft_s"]["p50"], d["ttft_s"]["p95"],
           d["tpot_s"]["p50"], d["tpot_s"]["p95"], d["e2e_s"]["p50"], d["e2e_s"]["p99"],
           d["per_client_tok_s"]["p50"], d["decode_tok_s"]["p50"], d["queue_length"]["mean"], d["queue_length"]["max"]]
    print(",".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
PY
cat "$out"
