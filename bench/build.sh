# Sourced by the benchmarks: `vramsim` of the build directory $1 (default build-release),
# configured and built as a Release build first when missing. Sets $vramsim.
build=${1:-}; build=${build:-build-release}
if [ ! -x "$build/bin/vramsim" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVRAMSIM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
fi
vramsim="$build/bin/vramsim"
