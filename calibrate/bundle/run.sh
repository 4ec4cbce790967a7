#!/usr/bin/env bash
# The calibration bundle's run script (scripts/make-calibration-bundle.sh copies it to the
# bundle's top as run.sh). On an offline NVIDIA machine it runs nothing but the bundle: the
# microbenchmarks (bin/vramsim-calibrate), then the real-card MoE replay over the routing trace
# made with the bundle (traces/). It needs bash, coreutils and the driver; it finds cuBLAS
# (libcublas.so.13) and NVML (libnvidia-ml.so.1) where CUDA images keep them. docs/calibration.md.
#
#   run.sh [--quick] [--dry-run] [--out DIR] [--name NAME] [--budget SECONDS] [--no-replay]
#
#   --quick      the quick microbenchmarks, the short trace, one replay trial: under 3 minutes
#   --dry-run    no CUDA call: checks the libraries resolve, reads the traces, plans the replay
#                and writes the three files marked as a dry run (no measurement in them)
#   --out DIR    where the files go (default: $OUT when set, else ./calibration-out)
#   --name NAME  file stem (default: the card's name from nvidia-smi, e.g. nvidia-h200;
#                dry-run in a dry run)
#   --budget S   wall-clock seconds for the whole script (default 330 full, 165 quick): the
#                microbenchmarks get at most 150 s (75 s quick), the replay the rest; a phase
#                past its share is stopped, keeping what it wrote (each file is rewritten per
#                benchmark and per replay point)
#
# Writes under DIR: NAME.yaml (the calibration), NAME-raw.json (every sample), NAME-replay.json
# (tokens/s and hit rate per cache size, copy and zero-copy) and NAME-log.txt (this output).
# Every measurement is printed as it ends. Exit status: 0 when both phases completed, 1 when
# one failed or ran out of time (what was measured is still written), 2 on a usage error or a
# bundle that cannot run here (a library missing, a file corrupted).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
quick=0 dry=0 replay=1 out="${OUT:-calibration-out}" name="" budget=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --dry-run) dry=1 ;;
    --no-replay) replay=0 ;;
    --out) out="${2:?--out needs a value}"; shift ;;
    --name) name="${2:?--name needs a value}"; shift ;;
    --budget) budget="${2:?--budget needs a value}"; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$budget" in ''|*[!0-9]*) [ -n "$budget" ] && { echo "run.sh: --budget takes whole seconds" >&2; exit 2; } ;; esac
[ -n "$budget" ] || budget=$([ "$quick" = 1 ] && echo 165 || echo 330)
micro_cap=$([ "$quick" = 1 ] && echo 75 || echo 150)
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }

mkdir -p "$out" || exit 2
say() { printf 'run.sh [%3ds] %s\n' "$((SECONDS - start))" "$*"; }
bin="$here/bin/vramsim-calibrate"

# ---- the bundle is whole ----------------------------------------------------------------
if command -v sha256sum >/dev/null 2>&1 && [ -f "$here/SHA256SUMS" ]; then
  (cd "$here" && sha256sum --quiet -c SHA256SUMS) || { echo "run.sh: the bundle's files do not match SHA256SUMS" >&2; exit 2; }
fi

# ---- the card ----------------------------------------------------------------------------
export CUDA_DEVICE_ORDER=PCI_BUS_ID  # CUDA device 0 is nvidia-smi's first GPU
if [ "$dry" = 1 ]; then
  [ -n "$name" ] || name=dry-run
  mode_args=(--dry-run)
  say "dry run: no CUDA call will be made and nothing will be measured"
else
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "run.sh: nvidia-smi not found: this needs an NVIDIA GPU and driver (or --dry-run)" >&2
    exit 2
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
             --format=csv 2>&1 | sed 's/^/  nvidia-smi: /'
  [ -n "$name" ] || name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9._\n-' '-')
  mode_args=()
fi
log="$out/$name-log.txt"
exec > >(tee -a "$log") 2>&1
tee_pid=$!
say "bundle: $(head -n 1 "$here/MANIFEST.txt" 2>/dev/null); mode $([ "$quick" = 1 ] && echo quick || echo full)$([ "$dry" = 1 ] && echo ', dry run'); budget ${budget}s; out $out; name $name"

# ---- the libraries the binary needs, where CUDA images keep them ------------------------
# find_lib SONAME: the first folder holding SONAME (the loader's cache, the CUDA toolkit's
# folders, the driver's, pip's nvidia-* wheels); empty when none.
find_lib() {
  local soname="$1" d f
  f=$(ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s { print $NF; exit }')
  if [ -n "$f" ] && [ -e "$f" ]; then dirname "$f"; return; fi
  for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
           /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [ -e "$d/$soname" ] && { echo "$d"; return; }
  done
  f=$(find /opt /usr/local /usr/lib -maxdepth 9 -path '*/nvidia/*' -name "$soname" 2>/dev/null | head -n 1)
  [ -n "$f" ] && dirname "$f"
}
libpath=""
for so in libcublas.so.13 libcublasLt.so.13 libnvidia-ml.so.1 libcuda.so.1; do
  d=$(find_lib "$so")
  if [ -z "$d" ]; then
    say "library $so: not found"
  else
    say "library $so: $d"
    case ":$libpath:" in *":$d:"*) ;; *) libpath="${libpath:+$libpath:}$d" ;; esac
  fi
done
export LD_LIBRARY_PATH="${libpath}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# ldd also names a glibc too old for the binary ("version `GLIBC_2.36' not found"): MANIFEST.txt
# says the newest glibc symbol it needs.
if ldd "$bin" 2>&1 | grep -q "not found"; then
  ldd "$bin" >&2
  echo "run.sh: $bin cannot start here: a library above is not found (docs/calibration.md)" >&2
  exit 2
fi
ldd "$bin" | sed 's/^/  ldd: /'

# ---- 1. microbenchmarks ------------------------------------------------------------------
status=0
micro_t=$(( $(left) < micro_cap ? $(left) : micro_cap ))
[ "$micro_t" -gt 0 ] || micro_t=1  # timeout 0 would mean no limit
say "1/2 microbenchmarks (at most ${micro_t}s)"
args=(--out "$out" --name "$name" "${mode_args[@]}")
[ "$quick" = 1 ] && args+=(--quick)
timeout -k 5 "$micro_t" "$bin" "${args[@]}"
rc=$?
case $rc in
  0) ;;
  124|137) say "microbenchmarks stopped at ${micro_t}s; what they measured is in $out/$name.yaml"; status=1 ;;
  *) say "microbenchmarks ended with status $rc (see \"failed\" in $out/$name.yaml)"; status=1 ;;
esac

# ---- 2. the MoE replay -------------------------------------------------------------------
if [ "$replay" = 1 ]; then
  trace="$here/traces/routing-$([ "$quick" = 1 ] && echo quick || echo full).trace"
  replay_t=$(left)
  if [ "$replay_t" -lt 20 ]; then
    say "2/2 replay skipped: ${replay_t}s of the budget left"
    status=1
  else
    args=(replay --trace "$trace" --out "$out" --name "$name" --time-budget $((replay_t - 10)) "${mode_args[@]}")
    [ "$quick" = 1 ] && args+=(--trials 1)
    # The case study's model: 48 x 512 experts of ~1.38 MB (34 GB of pinned host memory). On a
    # host with less than twice that in RAM, the experts shrink to fit half of it.
    pairs=$(awk '/^layers /{l=$2} /^experts /{e=$2} /^prefill_order/{print l*e; exit}' "$trace")
    trace_bytes=$(awk '/^expert_bytes /{print $2; exit}' "$trace")
    half_ram=$(( $(awk '/^MemTotal:/{print $2}' /proc/meminfo) * 1024 / 2 ))
    if [ $((pairs * trace_bytes)) -gt "$half_ram" ]; then
      eb=$(( half_ram / pairs / 4096 * 4096 ))
      say "$pairs experts x $trace_bytes B exceed half the RAM; replaying $eb B experts"
      args+=(--expert-bytes "$eb")
    fi
    say "2/2 replay of $(basename "$trace") (at most ${replay_t}s): ${args[*]}"
    timeout -k 5 "$replay_t" "$bin" "${args[@]}"
    rc=$?
    case $rc in
      0) ;;
      124|137) say "replay stopped at ${replay_t}s; the points measured are in $out/$name-replay.json"; status=1 ;;
      *) say "replay ended with status $rc"; status=1 ;;
    esac
  fi
fi

# ---- what came back ----------------------------------------------------------------------
for f in "$out/$name.yaml" "$out/$name-raw.json" "$out/$name-replay.json"; do
  if [ -f "$f" ]; then say "wrote $f ($(wc -c <"$f") bytes)"; else say "missing $f"; status=1; fi
done
if command -v python3 >/dev/null 2>&1; then
  for f in "$out/$name-raw.json" "$out/$name-replay.json"; do
    [ -f "$f" ] && ! python3 -m json.tool "$f" >/dev/null && { say "$f is not valid JSON"; status=1; }
  done
fi
say "done in $((SECONDS - start))s, status $status"
exec >&- 2>&-  # let tee finish the log before the script ends
wait "$tee_pid" 2>/dev/null
exit "$status"
