#!/usr/bin/env bash
# Makes the calibration bundle on this machine (CUDA toolkit 12 or newer, no GPU needed): a
# folder and its tarball that an offline NVIDIA machine runs with nothing else
# (docs/calibration.md). Step 1 of 2; step 2 is `bash build/calibration-bundle/run.sh` there.
#
#   scripts/make-calibration-bundle.sh                  # build (build-bundle/), then assemble
#   scripts/make-calibration-bundle.sh --vramsim build/bin/vramsim   # reuse a vramsim for the traces
#   scripts/make-calibration-bundle.sh --calibrate BIN --vramsim BIN --allow-rpath   # assemble only
#
#   --out DIR           the bundle folder (default build/calibration-bundle; tarball DIR.tar.gz)
#   --build-dir DIR     where vramsim-calibrate is built (default build-bundle): Release,
#                       CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual" (H100/H200 code + PTX; set
#                       CUDA_ARCHS to change), VRAMSIM_CALIBRATE_BUNDLE=ON (no RPATH)
#   --calibrate BIN     use this vramsim-calibrate instead of building one
#   --vramsim BIN       use this vramsim for `vramsim routing-trace` instead of building one
#   --scenario FILE     the replay's scenario (default configs/scenarios/moe125b-rtx5090-gen3-shared.yaml)
#   --full-tokens N     tokens of the full run's trace (default 1000)
#   --quick-tokens N    tokens of the quick run's trace (default 300)
#   --allow-rpath       accept a binary whose RUNPATH names this machine's folders (a test's)
#   --no-tar            the folder only
#
# Refuses a binary that needs a shared library other than cuBLAS, libc, libm and the loader
# (readelf's NEEDED list), and one with an absolute RUNPATH unless --allow-rpath.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build/calibration-bundle" build="$root/build-bundle" calibrate="" vramsim=""
scenario="$root/configs/scenarios/moe125b-rtx5090-gen3-shared.yaml"
full_tokens=1000 quick_tokens=300 allow_rpath=0 tar=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --build-dir) build="$2"; shift ;;
    --calibrate) calibrate="$2"; shift ;;
    --vramsim) vramsim="$2"; shift ;;
    --scenario) scenario="$2"; shift ;;
    --full-tokens) full_tokens="$2"; shift ;;
    --quick-tokens) quick_tokens="$2"; shift ;;
    --allow-rpath) allow_rpath=1 ;;
    --no-tar) tar=0 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-calibration-bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "make-calibration-bundle: $*"; }
t0=$SECONDS

# ---- build what was not given ------------------------------------------------------------
targets=()
[ -n "$calibrate" ] || targets+=(--target vramsim-calibrate)
[ -n "$vramsim" ] || targets+=(--target vramsim)
if [ ${#targets[@]} -gt 0 ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || { say "nvcc not found: the bundle is built with the CUDA toolkit (12 or newer)"; exit 2; }
  say "configuring $build (Release, CUDA architectures ${CUDA_ARCHS:-90-real;90-virtual})"
  cmake -S "$root" -B "$build" -G "${CMAKE_GENERATOR:-Unix Makefiles}" -DCMAKE_BUILD_TYPE=Release \
        -DVRAMSIM_BUILD_TESTS=OFF -DVRAMSIM_CALIBRATE_BUNDLE=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
        "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90-real;90-virtual}" >/dev/null
  say "building ${targets[*]} (nice, ${JOBS:-2} jobs)"
  nice -n 10 cmake --build "$build" -j "${JOBS:-2}" "${targets[@]}"
  [ -n "$calibrate" ] || calibrate="$build/bin/vramsim-calibrate"
  [ -n "$vramsim" ] || vramsim="$build/bin/vramsim"
fi
[ -x "$calibrate" ] || { say "no vramsim-calibrate at $calibrate (a build without CUDA has none)"; exit 2; }
[ -x "$vramsim" ] || { say "no vramsim at $vramsim"; exit 2; }

# ---- the binary needs only what the GPU machine has --------------------------------------
needed=$(readelf -d "$calibrate" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
bad=$(echo "$needed" | grep -vE '^(libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2)$' || true)
if [ -n "$bad" ]; then
  say "refused: $calibrate needs $(echo $bad) (only cuBLAS, libc, libm and the loader may stay dynamic)"
  exit 1
fi
runpath=$(readelf -d "$calibrate" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p')
if [ -n "$runpath" ] && [ "$allow_rpath" = 0 ]; then
  say "refused: $calibrate has RUNPATH $runpath (this machine's folders); build with VRAMSIM_CALIBRATE_BUNDLE=ON"
  exit 1
fi
glibc=$(objdump -T "$calibrate" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)

# ---- assemble ----------------------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/bin" "$out/traces"
cp "$calibrate" "$out/bin/vramsim-calibrate"
cp "$root/calibrate/bundle/run.sh" "$out/run.sh"
chmod +x "$out/run.sh" "$out/bin/vramsim-calibrate"
for kind in full quick; do
  tokens=$([ "$kind" = full ] && echo "$full_tokens" || echo "$quick_tokens")
  say "routing trace ($kind, $tokens tokens) of $(basename "$scenario")"
  "$vramsim" routing-trace "$scenario" -o "$out/traces/routing-$kind.trace" --tokens "$tokens" >/dev/null
done
# The dry run here: the binary starts, parses, reads both traces and writes its files.
dry=$(mktemp -d)
for kind in full quick; do
  "$out/bin/vramsim-calibrate" replay --dry-run --trace "$out/traces/routing-$kind.trace" --out "$dry" --name "$kind" >/dev/null
done
rm -rf "$dry"

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD -- 2>/dev/null || commit="$commit+changes"
# The architectures: cuobjdump's list where the toolkit has it, else the build's CMake cache.
archs=$(cuobjdump --list-elf "$calibrate" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ' || true)
ptx=$(cuobjdump --list-ptx "$calibrate" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ' || true)
cache="$(dirname "$calibrate")/../CMakeCache.txt"
cmake_archs=$( [ -f "$cache" ] && sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$cache" || true)
{
  echo "vramsim calibration bundle, commit $commit, made $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvcc: $( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) | grep -o 'release [0-9.]*' | head -n 1)"
  if [ -n "$archs$ptx" ]; then echo "machine code: ${archs:-none}; PTX: ${ptx:-none}"
  else echo "CUDA architectures: ${cmake_archs:-unknown} (CMAKE_CUDA_ARCHITECTURES)"; fi
  echo "dynamic libraries: $(echo $needed); newest glibc symbol: $glibc (the GPU machine needs that glibc or newer)"
  echo "traces: $(basename "$scenario"), $full_tokens tokens (full) and $quick_tokens (quick)"
  echo "run: bash run.sh [--quick] [--dry-run] --out DIR --name NAME   (run.sh --help)"
} >"$out/MANIFEST.txt"
(cd "$out" && sha256sum run.sh MANIFEST.txt bin/* traces/* >SHA256SUMS)

if [ "$tar" = 1 ]; then
  tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
fi
say "done in $((SECONDS - t0))s"
cat "$out/MANIFEST.txt"
(cd "$out" && du -b run.sh MANIFEST.txt SHA256SUMS bin/* traces/*) | sed 's/^/  /'
say "folder $out: $(du -sb "$out" | cut -f1) bytes$([ "$tar" = 1 ] && echo "; tarball $out.tar.gz: $(wc -c <"$out.tar.gz") bytes")"
