#!/usr/bin/env bash
# Benchmark of `vramsim sweep`: a 100-point study of the case study's 125B scenario
# (bench/sweep-100.yaml) with -j 1 and -j 2 on two cores. Prints the sweep's wall time, the
# speed-up from -j 1 to -j 2, and per point: the process's wall time, the simulation's own
# wall time (`sim.wall_s`) and the difference, the per-point overhead (process start, config
# and catalogue load, routing set-up, JSON out, the parent's bookkeeping). Asserts nothing.
#
# usage: bench/sweep_overhead.sh [BUILD_DIR]   (default build-release, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/build.sh "${1:-}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '%-4s %8s %8s %12s %12s %12s %10s\n' jobs points wall_s point_wall_ms sim_wall_ms overhead_ms sweep_ms
for j in 1 2; do
  taskset -c 0,1 "$vramsim" sweep bench/sweep-100.yaml -o "$out/j$j" -j "$j" --json >"$out/j$j.json"
  python3 - "$out/j$j.json" "$out/j$j/timings.jsonl" "$j" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); jobs = int(sys.argv[3])
t = [json.loads(l) for l in open(sys.argv[2])]
n = len(t)
point = sum(x["wall_s"] for x in t) / n
sim = sum(x["sim_wall_s"] for x in t) / n
# What the sweep adds beyond its children: wall x workers / points - a child's wall time.
sweep = s["wall_s"] * jobs / n - point
print(f'{jobs:<4} {s["points"]:>8} {s["wall_s"]:>8.2f} {1e3 * point:>12.1f} {1e3 * sim:>12.1f} '
      f'{1e3 * (point - sim):>12.1f} {1e3 * sweep:>10.1f}')
open(sys.argv[1] + ".wall", "w").write(str(s["wall_s"]))
PY
done
python3 - "$out/j1.json.wall" "$out/j2.json.wall" <<'PY'
import sys
a, b = (float(open(p).read()) for p in sys.argv[1:3])
print(f"speed-up -j 1 -> -j 2: {a / b:.2f}x")
PY
