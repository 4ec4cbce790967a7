// On-device benchmarks: (5) device memory read bandwidth, (6) cuBLAS fp16 GEMV-like GEMMs
// on expert-sized weights, (7) kernel launch, device synchronisation and CUDA Graph costs.

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "calibrate/common.cuh"

#define CHECK_CUBLAS(call)                                                                   \
  do {                                                                                       \
    const cublasStatus_t check_st_ = (call);                                                 \
    if (check_st_ != CUBLAS_STATUS_SUCCESS) {                                                \
      char check_msg_[512];                                                                  \
      std::snprintf(check_msg_, sizeof check_msg_, "%s:%d: %s failed: %s", __FILE__, __LINE__, \
                    #call, cublasGetStatusString(check_st_));                                \
      std::fprintf(stderr, "vramsim-calibrate: %s\n", check_msg_);                           \
      throw ::vramsim::calibrate::CudaFailure(check_msg_);                                   \
    }                                                                                        \
  } while (0)

namespace vramsim::calibrate {

namespace {
__global__ void empty_kernel() {}
}  // namespace

void launch_read(const Context& ctx, const void* p, std::size_t bytes, unsigned int* sink,
                 cudaStream_t stream) {
  // Enough resident threads to keep many loads in flight: as many 256-thread blocks per SM as
  // the occupancy calculator says fit (asked once; the program uses one device), times the SMs.
  static const int per_sm = [] {
    int n = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, read_kernel<4>, 256, 0));
    return std::max(1, n);
  }();
  const unsigned int blocks = static_cast<unsigned int>(ctx.prop.multiProcessorCount) * static_cast<unsigned int>(per_sm);
  read_kernel<4><<<blocks, 256, 0, stream>>>(static_cast<const uint4*>(p), bytes / sizeof(uint4), sink);
  CHECK_LAUNCH();
}

// (5) Streaming read of a buffer of max(1 GiB, 8 x L2) bytes (capped at half the free
// memory), repeated; efficiency against 2 x memory clock x bus width when the driver reports
// them.
void bench_vram(Context& ctx) {
  std::printf("== vram: device memory read bandwidth\n");
  std::fflush(stdout);
  const std::size_t l2 = static_cast<std::size_t>(ctx.prop.l2CacheSize);
  const ReadBuffer buffer(ctx.quick ? std::max<std::size_t>(std::size_t{256} << 20, 4 * l2)
                                    : std::max<std::size_t>(std::size_t{1} << 30, 8 * l2));
  void* buf = buffer.data;
  unsigned int* sink = buffer.sink;
  const std::size_t bytes = buffer.bytes;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto samples = time_events(s, ctx.warmup, ctx.trials, [&](int) { launch_read(ctx, buf, bytes, sink, s); });
  Value p = Value::object();
  p["bytes"] = Value::number(static_cast<double>(bytes));
  p["l2_bytes"] = Value::number(ctx.prop.l2CacheSize);
  const Stats st = record(ctx, "vram.read", std::move(p), "s", samples);
  const double bw = static_cast<double>(bytes) / st.median;

  // Theoretical peak: cudaDeviceProp::memoryClockRate is gone in CUDA 13, so ask the
  // attributes (kHz and bits); either may be unsupported (then 0) on some devices.
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ctx.device) != cudaSuccess) clock_khz = 0;
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ctx.device) != cudaSuccess) bus_bits = 0;
  (void)cudaGetLastError();  // clear a sticky-free error from an unsupported attribute
  const double theoretical = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0);  // bytes/s, double data rate

  Value& v = ctx.summary["vram"];
  v["read_bandwidth"] = Value::string(format_bandwidth(bw));
  v["theoretical"] = theoretical > 0.0 ? Value::string(format_bandwidth(theoretical)) : Value();
  v["efficiency"] = theoretical > 0.0 ? Value::number(std::round(bw / theoretical * 1000.0) / 1000.0) : Value();
  v["buffer"] = Value::string(format_bytes_mib(static_cast<double>(bytes)));
  Value info = Value::object();
  info["memory_clock_khz"] = Value::number(clock_khz);
  info["bus_width_bits"] = Value::number(bus_bits);
  info["theoretical_Bps"] = Value::number(theoretical);
  ctx.raw["fits"]["vram.theoretical"] = std::move(info);

  CHECK(cudaStreamDestroy(s));
}

// (6) y[M x n] = W^T x with fp16 weights W stored K x M (row-major weights as an engine
// keeps them), x K x n, fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F), n = batch.
// Sweep for the fit: K = 4096, M = 128 .. 16384 (1 MiB .. 128 MiB of weights), batch 1.
// Expert point: K = 1024, M = 675 -> 1024 x 675 x 2 B = 1,382,400 B, one case-study expert,
// at batch 1, 2, 4, 8. Each trial uses a different slice of a pool of >= 4 x L2 so that the
// weights come from VRAM, not from L2 left warm by the previous trial.
void bench_gemv(Context& ctx) {
  std::printf("== gemv: cuBLAS fp16 GEMV-like GEMMs\n");
  std::fflush(stdout);
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUBLAS(cublasSetStream(h, s));

  const std::size_t max_weights = std::size_t{4096} * 16384 * sizeof(__half);  // 128 MiB
  const std::size_t pool = std::max<std::size_t>(std::max<std::size_t>(std::size_t{512} << 20, 2 * max_weights),
                                                 4 * static_cast<std::size_t>(ctx.prop.l2CacheSize));
  void* weights = nullptr;
  void* x = nullptr;
  void* y = nullptr;
  const std::size_t max_k = 4096, max_m = 16384, max_n = 8;
  CHECK(cudaMalloc(&weights, pool));
  CHECK(cudaMalloc(&x, max_k * max_n * sizeof(__half)));
  CHECK(cudaMalloc(&y, max_m * max_n * sizeof(__half)));
  CHECK(cudaMemset(weights, 0, pool));
  CHECK(cudaMemset(x, 0, max_k * max_n * sizeof(__half)));
  CHECK(cudaDeviceSynchronize());  // the memsets run on the legacy stream; stream s does not wait for them

  const float alpha = 1.0f, beta = 0.0f;
  // Times one shape; returns the samples (seconds).
  auto run_shape = [&](int m, int k, int n) {
    const std::size_t wbytes = static_cast<std::size_t>(m) * static_cast<std::size_t>(k) * sizeof(__half);
    const std::size_t slot = (wbytes + 255) & ~static_cast<std::size_t>(255);
    const std::size_t slots = std::max<std::size_t>(1, pool / slot);
    return time_events(s, ctx.warmup, ctx.trials, [&](int trial) {
      const char* w = static_cast<const char*>(weights) + (static_cast<std::size_t>(trial) % slots) * slot;
      CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w, CUDA_R_16F, k, x, CUDA_R_16F, k,
                                &beta, y, CUDA_R_16F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
  };
  auto shape_param = [](int m, int k, int n) {
    Value p = Value::object();
    p["m"] = Value::number(m);
    p["k"] = Value::number(k);
    p["batch"] = Value::number(n);
    p["dtype"] = Value::string("fp16");
    // Bytes the kernel must move at least: weights + input + output.
    p["bytes"] = Value::number(2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n));
    return p;
  };

  std::vector<double> xs, ys;
  const int k = 4096;
  for (int m = 128; m <= 16384; m *= ctx.quick ? 4 : 2) {
    Value p = shape_param(m, k, 1);
    const double bytes = p["bytes"].number();
    const Stats st = record(ctx, "gemv.sweep", std::move(p), "s", run_shape(m, k, 1));
    xs.push_back(bytes);
    ys.push_back(st.median);
  }
  const TransferFit fit = fit_transfer(xs, ys);
  Value f = Value::object();
  f["t0_s"] = Value::number(fit.t0_s);
  f["bandwidth_Bps"] = Value::number(fit.bandwidth_Bps);
  f["r2"] = Value::number(fit.r2);
  f["ok"] = Value::boolean(fit.ok);
  ctx.raw["fits"]["gemv.batch1"] = std::move(f);

  Value& g = ctx.summary["gemv"];
  g["fixed"] = fit.ok ? Value::string(format_time(std::max(0.0, fit.t0_s))) : Value();
  g["bandwidth"] = fit.ok ? Value::string(format_bandwidth(fit.bandwidth_Bps)) : Value();
  g["shape"] = Value::string("fp16 weights K=4096 x M=128..16384, batch 1, fp32 accumulate");
  Value expert = Value::object();
  for (int n = 1; n <= 8; n *= 2) {
    const Stats st = record(ctx, "gemv.expert", shape_param(675, 1024, n), "s", run_shape(675, 1024, n));
    expert["batch" + std::to_string(n)] = Value::string(format_time(st.median));
  }
  g["expert"] = std::move(expert);  // 1024 x 675 fp16 = 1,382,400 B, median per call

  CHECK_CUBLAS(cublasDestroy(h));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(weights));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

// (7) Host wall time per back-to-back empty-kernel launch; wall time of cudaDeviceSynchronize
// on an idle device; per-node cost of replaying a CUDA Graph of N empty kernels (device
// time by events, divided by N) and the host time of one graph launch.
void bench_launch(Context& ctx) {
  std::printf("== launch: kernel launch, device sync, CUDA Graph nodes\n");
  std::fflush(stdout);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int n = ctx.quick ? 2000 : 10000;
  Value& l = ctx.summary["launch"];

  {  // back-to-back launches, sync once at the end (included, amortised over n)
    const auto samples = time_wall(ctx.warmup, ctx.trials, [&](int) {
      for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>();
      CHECK_LAUNCH();
      CHECK(cudaStreamSynchronize(s));
    });
    std::vector<double> per;
    for (double t : samples) per.push_back(t / n);
    Value p = Value::object();
    p["launches_per_sample"] = Value::number(n);
    const Stats st = record(ctx, "launch.kernel", std::move(p), "s", per);
    l["kernel"] = Value::string(format_time(st.median));
  }
  {  // launch + cudaStreamSynchronize, one kernel at a time (round trip)
    const int reps = n / 10;
    const auto samples = time_wall(ctx.warmup, ctx.trials, [&](int) {
      for (int i = 0; i < reps; ++i) {
        empty_kernel<<<1, 1, 0, s>>>();
        CHECK(cudaStreamSynchronize(s));
      }
      CHECK_LAUNCH();
    });
    std::vector<double> per;
    for (double t : samples) per.push_back(t / reps);
    Value p = Value::object();
    p["repetitions_per_sample"] = Value::number(reps);
    const Stats st = record(ctx, "launch.kernel_roundtrip", std::move(p), "s", per);
    l["kernel_roundtrip"] = Value::string(format_time(st.median));
  }
  {  // cudaDeviceSynchronize on an idle device
    const int reps = n / 10;
    const auto samples = time_wall(ctx.warmup, ctx.trials, [&](int) {
      for (int i = 0; i < reps; ++i) CHECK(cudaDeviceSynchronize());
    });
    std::vector<double> per;
    for (double t : samples) per.push_back(t / reps);
    Value p = Value::object();
    p["repetitions_per_sample"] = Value::number(reps);
    const Stats st = record(ctx, "launch.device_sync", std::move(p), "s", per);
    l["sync"] = Value::string(format_time(st.median));
  }
  {  // CUDA Graph of `nodes` empty kernels, captured once, replayed
    const int nodes = ctx.quick ? 500 : 1000;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nodes; ++i) empty_kernel<<<1, 1, 0, s>>>();
    CHECK_LAUNCH();
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const auto dev = time_events(s, ctx.warmup, ctx.trials, [&](int) { CHECK(cudaGraphLaunch(exec, s)); });
    std::vector<double> per;
    for (double t : dev) per.push_back(t / nodes);
    Value p = Value::object();
    p["nodes"] = Value::number(nodes);
    const Stats st = record(ctx, "launch.graph_node", std::move(p), "s", per);
    const auto wall = time_wall(ctx.warmup, ctx.trials, [&](int) {
      CHECK(cudaGraphLaunch(exec, s));
      CHECK(cudaStreamSynchronize(s));
    });
    Value p2 = Value::object();
    p2["nodes"] = Value::number(nodes);
    const Stats sw = record(ctx, "launch.graph_launch_wall", std::move(p2), "s", wall);
    l["graph_node"] = Value::string(format_time(st.median));           // device time per node
    l["graph_launch"] = Value::string(format_time(sw.median));         // host wall, launch + sync of the whole graph
    l["graph_nodes"] = Value::number(nodes);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  CHECK(cudaStreamDestroy(s));
}

}  // namespace vramsim::calibrate
