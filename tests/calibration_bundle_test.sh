#!/usr/bin/env bash
# ctest script test (tests/CMakeLists.txt, registered when vramsim-calibrate is built): the
# calibration bundle is assembled from this build's binaries and its run script is run with
# --dry-run, full and quick, as the GPU machine would run it but with no CUDA call. Fails when
# the binary needs a library the GPU machine lacks, cannot start, cannot read the traces, or
# writes files that are not the run's structure marked as a dry run.
#   calibration_bundle_test.sh VRAMSIM_CALIBRATE VRAMSIM WORK_DIR
set -euo pipefail
calibrate="$1" vramsim="$2" work="$3"
root="$(cd "$(dirname "$0")/.." && pwd)"
fail() { echo "calibration_bundle_test: FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"

"$root/scripts/make-calibration-bundle.sh" --calibrate "$calibrate" --vramsim "$vramsim" --out "$work/bundle" \
  --full-tokens 64 --quick-tokens 40 --allow-rpath --no-tar
for f in run.sh MANIFEST.txt SHA256SUMS bin/vramsim-calibrate traces/routing-full.trace traces/routing-quick.trace; do
  [ -f "$work/bundle/$f" ] || fail "the bundle lacks $f"
done

json_ok() {  # a JSON file parses (python3 or jq, when either is here)
  if command -v python3 >/dev/null 2>&1; then python3 -m json.tool "$1" >/dev/null || fail "$1 is not JSON"
  elif command -v jq >/dev/null 2>&1; then jq . "$1" >/dev/null || fail "$1 is not JSON"; fi
}
for run in full quick; do
  args=(--dry-run --out "$work/out-$run" --name "dry-$run")
  [ "$run" = quick ] && args+=(--quick)
  # OUT as the device machine sets it must not win over --out.
  OUT="$work/elsewhere" bash "$work/bundle/run.sh" "${args[@]}" >"$work/$run.log" 2>&1 || { cat "$work/$run.log"; fail "run.sh ${args[*]} failed"; }
  o="$work/out-$run/dry-$run"
  for f in "$o.yaml" "$o-raw.json" "$o-replay.json" "$o-log.txt"; do [ -s "$f" ] || fail "$f not written"; done
  json_ok "$o-raw.json"
  json_ok "$o-replay.json"
  grep -q '^mode: dry-run$' "$o.yaml" || fail "$o.yaml is not marked mode: dry-run"
  grep -q '^measured: null$' "$o.yaml" || fail "$o.yaml claims a measurement time"
  grep -q '"dry_run": true' "$o-raw.json" || fail "$o-raw.json is not marked dry_run"
  grep -q '"series": \[\]' "$o-raw.json" || fail "$o-raw.json holds samples"
  grep -q '"dry_run": true' "$o-replay.json" || fail "$o-replay.json is not marked dry_run"
  grep -q '"measured": true' "$o-replay.json" && fail "$o-replay.json claims a measured point"
  grep -Eq '"tok_s": [0-9]' "$o-replay.json" && fail "$o-replay.json holds a tokens/s figure"
  [ "$(grep -c '"hit_rate"' "$o-replay.json")" -eq 10 ] || fail "$o-replay.json lacks the 5 cache sizes x 2 modes"
  grep -q 'bin/vramsim-calibrate.*--dry-run\|dry run' "$o-log.txt" || fail "$o-log.txt does not say it was a dry run"
done
[ -e "$work/elsewhere" ] && fail "run.sh wrote to \$OUT although --out was given"

# The simulator refuses a dry run's file as a calibration.
scenario="$root/configs/scenarios/moe125b-rtx5090-gen3-shared.yaml"
if "$vramsim" run "$scenario" --set workload.requests=2 --set "hardware.gpu.calibration=$work/out-full/dry-full.yaml" \
     >"$work/refused.log" 2>&1; then
  fail "vramsim run accepted a dry run's calibration"
fi
grep -q "is a dry run of vramsim-calibrate" "$work/refused.log" || { cat "$work/refused.log"; fail "the refusal does not say why"; }
echo "calibration_bundle_test: ok (bundle $(du -sb "$work/bundle" | cut -f1) bytes; dry runs full and quick)"
