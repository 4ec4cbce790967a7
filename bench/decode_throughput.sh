#!/usr/bin/env bash
# Benchmark of `vramsim run` on the case study's 125B scenario (issue: >= 100,000 simulated
# decode tokens per second of wall time on one core; memory flat in the number of requests;
# cost per token < 2x from 1 to 1,000 concurrent clients). Prints figures; asserts nothing.
#
# usage: bench/decode_throughput.sh [BUILD_DIR]   (a Release build is what the figures mean)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/build.sh "${1:-}"
scenario=configs/scenarios/moe125b-rtx5090-gen3-shared.yaml

# Runs one configuration pinned to one core; prints wall seconds, max RSS (KiB) and the JSON.
measure() {
  local out rss
  out=$(mktemp)
  rss=$( { /usr/bin/env time -f "%M" taskset -c 0 "$vramsim" run "$scenario" "$@" --json >"$out"; } 2>&1 | tail -n 1)
  python3 - "$out" "$rss" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); rss = int(sys.argv[2])
tok = d["generated_tokens"]; wall = d["sim"]["wall_s"]
print(f'{d["requests"]["completed"]:>8} {tok:>10} {wall:>8.2f} {tok / wall:>12.0f} {1e6 * wall / tok:>10.2f} '
      f'{d["sim"]["simgrid_activities_per_token"]:>10.3f} {rss / 1024:>9.1f}')
PY
  rm -f "$out"
}

echo "vramsim run, $scenario, one core (taskset -c 0), $(date -u +%Y-%m-%d)"
printf '%-26s %8s %10s %8s %12s %10s %10s %9s\n' "case" "requests" "tokens" "wall_s" "tokens/s" "us/token" "acts/tok" "RSS_MiB"
for n in 100 1000 10000; do
  printf '%-26s ' "requests=$n"; measure --set workload.requests=$n
done
for c in 1 100 1000; do
  printf '%-26s ' "clients=$c (1000 req)"; measure --set workload.requests=1000 --set workload.clients=$c
done
printf '%-26s ' "parallel=2 (1000 req)"; measure --set workload.requests=1000 --set workload.clients=2 --set engine.parallel=2
