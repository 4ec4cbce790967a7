#!/usr/bin/env bash
# The project's size rule (issue 22): no source file of the project over 500 lines, tests
# aside. Prints each file over the limit and exits 1 when there is one. ctest runs it
# (structure.source_files_under_500_lines).
#
# usage: scripts/check-file-sizes.sh [SOURCE_DIR]   (default: the checkout holding this script)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
limit=500
status=0
while IFS= read -r -d '' file; do
  lines=$(wc -l < "$file")
  if [ "$lines" -gt "$limit" ]; then
    echo "${file#"$root"/}: $lines lines (at most $limit: split it by what it does)"
    status=1
  fi
done < <(find "$root"/core "$root"/hw "$root"/workloads "$root"/sim "$root"/reports "$root"/cli "$root"/calibrate \
           -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' \) -print0)
exit $status
