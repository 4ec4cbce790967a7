// Shared pieces of vramsim-calibrate's CUDA code: error checking, timing helpers, the run
// context and the raw-sample recorder. Units: times are seconds (double) unless a name says
// otherwise; sizes are bytes; bandwidths are bytes per second.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/report.h"

namespace vramsim::calibrate {
// A failed CUDA runtime or library call. main.cu catches it per benchmark: it records the
// failure, writes what was measured so far, and goes on to the next benchmark unless the
// error is sticky (the context is unusable; cudaDeviceSynchronize keeps failing).
class CudaFailure : public std::runtime_error {
 public:
  explicit CudaFailure(const std::string& what) : std::runtime_error(what) {}
};
}  // namespace vramsim::calibrate

// Every CUDA runtime call goes through CHECK: on failure it prints file:line, the call and
// the error string to stderr and throws vramsim::calibrate::CudaFailure.
#define CHECK(call)                                                                          \
  do {                                                                                       \
    const cudaError_t check_err_ = (call);                                                   \
    if (check_err_ != cudaSuccess) {                                                         \
      char check_msg_[512];                                                                  \
      std::snprintf(check_msg_, sizeof check_msg_, "%s:%d: %s failed: %s", __FILE__, __LINE__, \
                    #call, cudaGetErrorString(check_err_));                                  \
      std::fprintf(stderr, "vramsim-calibrate: %s\n", check_msg_);                           \
      throw ::vramsim::calibrate::CudaFailure(check_msg_);                                   \
    }                                                                                        \
  } while (0)

// For clean-up in destructors (which must not throw): a failure is only printed.
#define CHECK_QUIET(call)                                                                    \
  do {                                                                                       \
    const cudaError_t check_err_ = (call);                                                   \
    if (check_err_ != cudaSuccess)                                                           \
      std::fprintf(stderr, "vramsim-calibrate: %s:%d: %s failed: %s (ignored in clean-up)\n", \
                   __FILE__, __LINE__, #call, cudaGetErrorString(check_err_));               \
  } while (0)

// Checks that a kernel launch was accepted (launch errors surface at cudaGetLastError).
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

namespace vramsim::calibrate {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// One expert of the case-study model (moe-125b-q2), in bytes.
constexpr std::size_t kExpertBytes = 1382400;

// What one run knows and accumulates.
struct Context {
  int device = 0;
  cudaDeviceProp prop{};
  bool quick = false;
  int trials = 10;   // timed repetitions per point (>= 5)
  int warmup = 2;    // untimed repetitions before the timed ones
  Value raw;         // raw-sample document (becomes NAME-raw.json)
  Value summary;     // calibration document (becomes NAME.yaml)
  // The device is a MIG instance (its name says "MIG", as CUDA names MIG devices): it shares
  // the board, so board-level power is not its own and bench_power skips.
  bool mig = false;
  // Results later benchmarks reuse (bytes/s); 0 when not measured.
  double h2d_bandwidth = 0.0;
};

// Appends one series of samples to ctx.raw["series"]: {name, params, unit, samples, stats}.
// Returns the summary of the samples, after printing it (series_line) and flushing stdout.
inline Stats record(Context& ctx, const std::string& name, Value params, const std::string& unit,
                    const std::vector<double>& samples) {
  const Stats s = summarize(samples);
  std::printf("  %s\n", series_line(name, params, unit, s).c_str());
  std::fflush(stdout);
  Value e = Value::object();
  e["name"] = Value::string(name);
  e["params"] = std::move(params);
  e["unit"] = Value::string(unit);
  e["samples"] = number_array(samples);
  e["stats"] = stats_value(s);
  ctx.raw["series"].push(std::move(e));
  return s;
}

// Device time of `enqueue(trial)` on `stream`, bracketed by CUDA events; `warmup` untimed
// runs first, then `trials` timed ones. Returns seconds per trial.
template <class F>
std::vector<double> time_events(cudaStream_t stream, int warmup, int trials, F&& enqueue) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) enqueue(i);
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(trials));
  for (int t = 0; t < trials; ++t) {
    CHECK(cudaEventRecord(start, stream));
    enqueue(warmup + t);
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    out.push_back(static_cast<double>(ms) * 1e-3);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return out;
}

// Host wall-clock time (std::chrono::steady_clock) of `body(trial)`, `warmup` untimed runs
// first. Returns seconds per trial; `body` must itself wait for any GPU work it measures.
template <class F>
std::vector<double> time_wall(int warmup, int trials, F&& body) {
  for (int i = 0; i < warmup; ++i) body(i);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(trials));
  for (int t = 0; t < trials; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    body(warmup + t);
    const auto t1 = std::chrono::steady_clock::now();
    out.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return out;
}

// Streaming read of n uint4 elements (16 bytes each) with a grid-stride loop, U independent
// loads in flight per thread. The sum goes to *sink only when it equals an unlikely value,
// so the loads cannot be optimised away and nothing is written in practice.
template <int U>
__global__ void read_kernel(const uint4* __restrict__ p, std::size_t n, unsigned int* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned int acc = 0;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = p[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 0xDEADBEEFu) *sink = acc;
}

// Launches read_kernel over `bytes` bytes at `p` (16-byte aligned) on `stream`.
void launch_read(const Context& ctx, const void* p, std::size_t bytes, unsigned int* sink,
                 cudaStream_t stream);

// A VRAM buffer for read_kernel and its one-word sink: `wanted` bytes, at most half the free
// memory, rounded down to 4 KiB, filled; freed when it goes out of scope.
struct ReadBuffer {
  explicit ReadBuffer(std::size_t wanted) {
    std::size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    bytes = std::min(wanted, free_b / 2) & ~static_cast<std::size_t>(4095);
    CHECK(cudaMalloc(&data, bytes));
    if (const cudaError_t e = cudaMalloc(&sink, sizeof(unsigned int)); e != cudaSuccess) {
      CHECK_QUIET(cudaFree(data));  // a throwing constructor runs no destructor
      CHECK(e);
    }
    // The memset runs on the legacy default stream, which the benchmarks' non-blocking
    // streams do not wait for: finish it before any timed work.
    CHECK(cudaMemset(data, 1, bytes));
    CHECK(cudaDeviceSynchronize());
  }
  ~ReadBuffer() {
    CHECK_QUIET(cudaFree(data));
    CHECK_QUIET(cudaFree(sink));
  }
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  void* data = nullptr;
  unsigned int* sink = nullptr;
  std::size_t bytes = 0;
};

// ---- the benchmarks (each fills ctx.raw and its section of ctx.summary) ----------------

void bench_pcie(Context& ctx);       // (1) pinned H2D/D2H fit, (2) pageable + bidirectional, (3) small copy + sync
void bench_zero_copy(Context& ctx);  // (4) mapped pinned host memory read in place
void bench_vram(Context& ctx);       // (5) device memory read bandwidth
void bench_gemv(Context& ctx);       // (6) cuBLAS fp16 GEMV-like GEMMs
void bench_launch(Context& ctx);     // (7) kernel launch, device sync, CUDA Graph node
void bench_power(Context& ctx);      // (8) NVML energy counter, idle and loaded (if built with NVML)

// `vramsim-calibrate replay ARGS` (replay.cu): the real-card MoE decode loop; argv excludes "replay".
int replay_main(int argc, char** argv);

}  // namespace vramsim::calibrate
