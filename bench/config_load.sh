#!/usr/bin/env bash
# Benchmark of configuration loading (issue 26: linear in the number of keys; target: a
# mapping of 1,000,000 keys in under 2 s). Writes scenario files whose `big:` mapping has N
# keys and times `vramsim run` on them, pinned to one core: the run stops at the loader's
# first refusal (a required key missing), so the time is the parse and the checks. Beside it,
# the floor: yaml-cpp's own parser on the same file with an event handler that does nothing
# (bench/yaml_events.cc, compiled here with -O2). Prints figures; asserts nothing.
#
# usage: bench/config_load.sh [BUILD_DIR]   (a Release build is what the figures mean)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/build.sh "${1:-}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"${CXX:-c++}" -O2 -std=c++20 bench/yaml_events.cc -lyaml-cpp -o "$dir/yaml_events"

echo "vramsim run on an N-key mapping, one core (taskset -c 0), $(date -u +%Y-%m-%d)"
printf '%10s %10s %8s %9s %12s  %s\n' "keys" "MB" "wall_s" "RSS_MiB" "yaml-cpp_s" "the loader's answer"
for n in 10000 160000 500000 1000000; do
  file="$dir/keys-$n.yaml"
  python3 - "$file" "$n" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("seed: 1\nbig:\n")
    for i in range(n):
        f.write(f"  k{i}: {i}\n")
PY
  /usr/bin/env time -o "$dir/time" -f "%e %M" taskset -c 0 "$vramsim" run "$file" >/dev/null 2>"$dir/err" || true
  answer=$(head -n 1 "$dir/err" | sed "s|$dir/||" | cut -c1-70)
  read -r wall rss < <(tail -n 1 "$dir/time")
  mb=$(awk -v b="$(stat -c %s "$file")" 'BEGIN { printf "%.1f", b / 1e6 }')
  floor=$(taskset -c 0 "$dir/yaml_events" "$file")
  printf '%10s %10s %8s %9s %12s  %s\n' "$n" "$mb" "$wall" "$((rss / 1024))" "$floor" "$answer"
done
