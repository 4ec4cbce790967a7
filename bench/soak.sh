#!/usr/bin/env bash
# Soak of the serving model (issue 4): 10,000 and 100,000 requests arriving as a Poisson
# process (1/s, ~83% load) on the case study's exclusive scenario. Prints wall time, peak RSS
# (memory must stay flat: the engine keeps O(1) data per request besides a 24-byte sample),
# and stationarity: decode tok/s p50 and TTFT p50 of the first vs the second half of the
# requests (by id; one slot serves them in arrival order). Asserts nothing.
#
# usage: bench/soak.sh [BUILD_DIR] [REQUESTS...]   (default build-release; 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/build.sh "${1:-}"
shift || true
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(10000 100000)
scenario=configs/scenarios/moe125b-rtx5090-gen3-exclusive.yaml
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "vramsim run, $scenario, Poisson 1/s, one core (taskset -c 0), $(date -u +%Y-%m-%d)"
printf '%9s %10s %9s %9s %10s %10s %8s %9s %9s %7s\n' requests tokens wall_s RSS_MiB dec_p50_1 dec_p50_2 drift ttft_p50_1 ttft_p50_2 queue
for n in "${counts[@]}"; do
  /usr/bin/env time -f "%e %M" -o "$tmp/time" taskset -c 0 "$vramsim" run "$scenario" --set workload.requests="$n" \
    --set workload.clients= --set workload.arrival.process=poisson --set workload.arrival.rate=1/s \
    --json --requests-out "$tmp/req.jsonl" >"$tmp/out.json"
  python3 - "$tmp/out.json" "$tmp/req.jsonl" "$tmp/time" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
wall, rss = open(sys.argv[3]).read().split()[-2:]
rows = sorted((json.loads(l) for l in open(sys.argv[2])), key=lambda r: r["id"])
half = len(rows) // 2
med = lambda rs, k: statistics.median(r[k] for r in rs)
a, b = med(rows[:half], "decode_tok_s"), med(rows[half:], "decode_tok_s")
print(f'{d["requests"]["completed"]:>9} {d["generated_tokens"]:>10} {float(wall):>9.1f} {int(rss) / 1024:>9.1f} '
      f'{a:>10.2f} {b:>10.2f} {100 * (b - a) / a:>+7.2f}% {med(rows[:half], "ttft_s"):>9.3f} {med(rows[half:], "ttft_s"):>9.3f} '
      f'{d["queue_length"]["mean"]:>7.2f}')
PY
done
