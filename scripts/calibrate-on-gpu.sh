#!/usr/bin/env bash
# Measures this machine's NVIDIA GPU for vramsim by running the calibration bundle: it
# installs nothing and builds nothing (a GPU machine may be offline, with no SimGrid, oneTBB or
# yaml-cpp). Make the bundle first, on any machine with the CUDA toolkit:
#   scripts/make-calibration-bundle.sh        # -> build/calibration-bundle/ (+ .tar.gz)
# then, on the GPU machine (docs/calibration.md):
#   scripts/calibrate-on-gpu.sh               # full run, under 6 minutes
#   QUICK=1 scripts/calibrate-on-gpu.sh       # under 3 minutes
#   OUT=dir NAME=h200 scripts/calibrate-on-gpu.sh
#   REPLAY=0 scripts/calibrate-on-gpu.sh      # microbenchmarks only
#   DRY_RUN=1 scripts/calibrate-on-gpu.sh     # no GPU: everything but the CUDA calls
#   BUNDLE=path/to/calibration-bundle scripts/calibrate-on-gpu.sh
# Writes $OUT/$NAME.yaml, $NAME-raw.json, $NAME-replay.json and $NAME-log.txt (the bundle's
# run.sh --help). The card's settings are never changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle="${BUNDLE:-build/calibration-bundle}"
if [ ! -f "$bundle/run.sh" ]; then
  echo "calibrate-on-gpu: no bundle at $bundle; make it with scripts/make-calibration-bundle.sh" >&2
  exit 2
fi
args=(--out "${OUT:-calibration-out}")
[ -n "${NAME:-}" ] && args+=(--name "$NAME")
[ "${QUICK:-0}" = 1 ] && args+=(--quick)
[ "${REPLAY:-1}" = 0 ] && args+=(--no-replay)
[ "${DRY_RUN:-0}" = 1 ] && args+=(--dry-run)
exec bash "$bundle/run.sh" "${args[@]}"
