#!/bin/sh
# Runs vramsim ($VRAMSIM, or the first argument's program) with the given arguments and prints
# its standard output and error with the wall-clock figures blanked, so that a golden file
# (tests/golden/*.tesh) compares only what the simulation decides. Keeps the exit status.
#   "wall_s": 2.06        ->  "wall_s": "<wall>"
#   simulation  1.81 s wall  ->  simulation  <wall> s wall
#   ... in 0:03 / 0:02 elapsed (sweep progress and summary) -> <elapsed>
# Usage: run-blanked.sh VRAMSIM_BINARY ARGS...
bin=$1
shift
out=$("$bin" "$@" 2>&1)
status=$?
printf '%s\n' "$out" | sed -E \
  -e 's/("wall_s": )[-0-9.eE+]+/\1"<wall>"/g' \
  -e 's/[0-9.]+ s wall/<wall> s wall/' \
  -e 's/ in [0-9]+:[0-9]{2}(:[0-9]{2})?/ in <elapsed>/g' \
  -e 's/[0-9]+:[0-9]{2}(:[0-9]{2})? elapsed/<elapsed> elapsed/g'
exit $status
