// Host <-> device transfer benchmarks: (1) pinned H2D/D2H over a log-scale size sweep,
// fitted as t = t0 + bytes / bandwidth; (2) pageable H2D and bidirectional copies at a few
// sizes; (3) the host-visible cost of one small copy followed by cudaStreamSynchronize;
// (4) zero-copy: the GPU reading mapped pinned host memory in place.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "calibrate/common.cuh"

namespace vramsim::calibrate {
namespace {

// Copies per timed sample for pinned copies under 1 MiB (see sweep_direction).
constexpr int kSmallCopyReps = 32;
// Expert-sized zero-copy reads per timed sample: one layer's top-8 misses.
constexpr int kZeroCopyExperts = 8;

Value size_param(std::size_t bytes) {
  Value p = Value::object();
  p["bytes"] = Value::number(static_cast<double>(bytes));
  return p;
}

// Log-scale sizes 4 KiB .. max_bytes (factor 2, or 4 in quick mode), plus one expert.
std::vector<std::size_t> sweep_sizes(std::size_t max_bytes, bool quick) {
  std::vector<std::size_t> sizes;
  const std::size_t factor = quick ? 4 : 2;
  for (std::size_t s = 4096; s <= max_bytes; s *= factor) sizes.push_back(s);
  sizes.push_back(kExpertBytes);
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

// Sweep one direction; returns {fit, summary section}.
Value sweep_direction(Context& ctx, const char* name, cudaMemcpyKind kind, void* host, void* dev,
                      const std::vector<std::size_t>& sizes, cudaStream_t stream,
                      double* bandwidth_out) {
  std::vector<double> xs, ys;
  double peak = 0.0, expert_s = 0.0;
  for (std::size_t bytes : sizes) {
    void* dst = kind == cudaMemcpyHostToDevice ? dev : host;
    const void* src = kind == cudaMemcpyHostToDevice ? host : dev;
    // Big copies need fewer repetitions to be stable; keep the run short.
    const int trials = bytes >= (256u << 20) ? std::max(5, ctx.trials / 2) : ctx.trials;
    // A copy under 1 MiB takes a few microseconds, near cudaEventElapsedTime's ~0.5 us
    // resolution, and these sizes decide the fitted intercept: time kSmallCopyReps copies
    // back to back between one event pair and divide. Each sample is then the device-side
    // time per copy in a stream of copies (no host synchronisation between them).
    const int reps = bytes < (1u << 20) ? kSmallCopyReps : 1;
    auto samples = time_events(stream, ctx.warmup, trials, [&](int) {
      for (int r = 0; r < reps; ++r) CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
    });
    for (double& t : samples) t /= reps;
    Value params = size_param(bytes);
    params["copies_per_sample"] = Value::number(reps);
    const Stats s = record(ctx, std::string("pcie.pinned.") + name, std::move(params), "s", samples);
    xs.push_back(static_cast<double>(bytes));
    ys.push_back(s.median);
    peak = std::max(peak, static_cast<double>(bytes) / s.min);
    if (bytes == kExpertBytes) expert_s = s.median;
  }
  const TransferFit fit = fit_transfer(xs, ys);
  Value f = Value::object();
  f["t0_s"] = Value::number(fit.t0_s);
  f["bandwidth_Bps"] = Value::number(fit.bandwidth_Bps);
  f["r2"] = Value::number(fit.r2);
  f["ok"] = Value::boolean(fit.ok);
  f["method"] = Value::string("least squares on per-size medians, weights 1/t^2 (relative residuals)");
  ctx.raw["fits"][std::string("pcie.pinned.") + name] = std::move(f);

  Value out = Value::object();
  // The intercept becomes the latency only when it is a positive time (report.h,
  // latency_figure): a t0 <= 0 is below the timer's resolution or a fitting artefact, and the
  // simulator's reader refuses a zero latency, so the YAML says null (unmeasured) and the raw
  // JSON's notes say why.
  const YamlFigure latency = latency_figure(fit);
  if (!latency.why.empty()) ctx.raw["notes"].push(Value::string(std::string("pcie.") + name + ".latency: " + latency.why));
  out["bandwidth"] = fit.ok ? Value::string(format_bandwidth(fit.bandwidth_Bps)) : Value();
  out["latency"] = latency.value;
  out["peak_bandwidth"] = Value::string(format_bandwidth(peak));
  out["expert_copy"] = Value::string(format_time(expert_s));  // median, 1,382,400 bytes
  out["fit_r2"] = Value::number(std::round(fit.r2 * 1e4) / 1e4);
  *bandwidth_out = fit.ok ? fit.bandwidth_Bps : peak;
  return out;
}

}  // namespace

void bench_pcie(Context& ctx) {
  std::printf("== pcie: pinned, pageable and bidirectional copies\n");
  std::fflush(stdout);
  const std::size_t max_bytes = ctx.quick ? (256u << 20) : (1u << 30);
  const auto sizes = sweep_sizes(max_bytes, ctx.quick);

  void* host = nullptr;
  void* dev = nullptr;
  CHECK(cudaMallocHost(&host, max_bytes));
  CHECK(cudaMalloc(&dev, max_bytes));
  std::memset(host, 1, max_bytes);  // touch every page before timing
  CHECK(cudaMemset(dev, 0, max_bytes));
  CHECK(cudaDeviceSynchronize());  // legacy-stream set-up must end before timed work on non-blocking streams
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

  Value& pcie = ctx.summary["pcie"];
  double d2h_bw = 0.0;
  // (1) pinned sweeps.
  pcie["h2d"] = sweep_direction(ctx, "h2d", cudaMemcpyHostToDevice, host, dev, sizes, s1,
                                &ctx.h2d_bandwidth);
  pcie["d2h"] = sweep_direction(ctx, "d2h", cudaMemcpyDeviceToHost, host, dev, sizes, s1, &d2h_bw);

  // (2a) pageable H2D: host memory from operator new, host wall clock around copy + sync
  // (for pageable memory the driver stages through its own pinned buffer; the host-visible
  // time is what an engine would see).
  {
    std::vector<std::size_t> psizes = {kExpertBytes, 16u << 20};
    if (!ctx.quick) psizes.push_back(256u << 20);
    const std::size_t pmax = psizes.back();
    std::unique_ptr<unsigned char[]> pageable(new unsigned char[pmax]);
    std::memset(pageable.get(), 1, pmax);
    Value table = Value::object();
    double best = 0.0;
    for (std::size_t bytes : psizes) {
      const auto samples = time_wall(ctx.warmup, ctx.trials, [&](int) {
        CHECK(cudaMemcpyAsync(dev, pageable.get(), bytes, cudaMemcpyHostToDevice, s1));
        CHECK(cudaStreamSynchronize(s1));
      });
      const Stats s = record(ctx, "pcie.pageable.h2d", size_param(bytes), "s", samples);
      const double bw = static_cast<double>(bytes) / s.median;
      best = std::max(best, bw);
      const std::string key = bytes == kExpertBytes ? std::string("expert")
                                                    : format_bytes_mib(static_cast<double>(bytes));
      table[key] = Value::string(format_bandwidth(bw));
    }
    Value p = Value::object();
    p["bandwidth"] = Value::string(format_bandwidth(best));  // best over sizes, median trials
    p["by_size"] = std::move(table);
    pcie["pageable_h2d"] = std::move(p);
  }

  // (2b) bidirectional: H2D on s1 and D2H on s2 at the same time, pinned buffers apart from
  // those of (1). Aggregate bandwidth = 2 x bytes / time from the common start to both ends.
  {
    std::vector<std::size_t> bsizes = {16u << 20};
    if (!ctx.quick) bsizes.push_back(256u << 20);
    const std::size_t bmax = bsizes.back();
    void* host_dst = nullptr;
    void* dev_src = nullptr;
    CHECK(cudaMallocHost(&host_dst, bmax));
    CHECK(cudaMalloc(&dev_src, bmax));
    CHECK(cudaMemset(dev_src, 0, bmax));
    CHECK(cudaDeviceSynchronize());  // as above
    cudaEvent_t fork, join;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    double best = 0.0;
    for (std::size_t bytes : bsizes) {
      const auto samples = time_events(s1, ctx.warmup, ctx.trials, [&](int) {
        CHECK(cudaEventRecord(fork, s1));
        CHECK(cudaStreamWaitEvent(s2, fork, 0));
        CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s1));
        CHECK(cudaMemcpyAsync(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, s2));
        CHECK(cudaEventRecord(join, s2));
        CHECK(cudaStreamWaitEvent(s1, join, 0));
      });
      const Stats s = record(ctx, "pcie.bidirectional", size_param(bytes), "s", samples);
      best = std::max(best, 2.0 * static_cast<double>(bytes) / s.median);
    }
    Value b = Value::object();
    b["bandwidth"] = Value::string(format_bandwidth(best));                 // both directions together
    b["per_direction"] = Value::string(format_bandwidth(best / 2.0));
    b["vs_h2d"] = Value::number(ctx.h2d_bandwidth > 0.0 ? std::round(best / 2.0 / ctx.h2d_bandwidth * 1000.0) / 1000.0 : 0.0);
    pcie["bidirectional"] = std::move(b);
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
    CHECK(cudaFreeHost(host_dst));
    CHECK(cudaFree(dev_src));
  }

  // (3) one small pinned copy + cudaStreamSynchronize, host wall clock, averaged over a
  // batch of repetitions per trial (a single one is near the clock's resolution).
  {
    const std::size_t bytes = 4096;
    const int reps = ctx.quick ? 200 : 1000;
    const auto samples = time_wall(ctx.warmup, ctx.trials, [&](int) {
      for (int r = 0; r < reps; ++r) {
        CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s1));
        CHECK(cudaStreamSynchronize(s1));
      }
    });
    std::vector<double> per_copy;
    for (double t : samples) per_copy.push_back(t / reps);
    Value p = size_param(bytes);
    p["repetitions_per_sample"] = Value::number(reps);
    const Stats s = record(ctx, "pcie.small_copy_sync", std::move(p), "s", per_copy);
    Value c = Value::object();
    c["bytes"] = Value::number(static_cast<double>(bytes));
    c["time"] = Value::string(format_time(s.median));  // host wall time per copy+sync
    c["min"] = Value::string(format_time(s.min));
    pcie["small_copy_sync"] = std::move(c);
  }

  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dev));
}

void bench_zero_copy(Context& ctx) {
  std::printf("== zero_copy: GPU reads of mapped pinned host memory\n");
  std::fflush(stdout);
  Value& z = ctx.summary["zero_copy"];
  if (!ctx.prop.canMapHostMemory) {
    z["bandwidth"] = Value();
    z["efficiency"] = Value();
    z["note"] = Value::string("device cannot map host memory");
    return;
  }
  // Mapped host memory goes through L2 like any other: a buffer of max(256 MiB, 4 x L2) (as
  // bench_vram's) so that repeated reads cannot be served from L2 (96-126 MB on recent cards),
  // in quick mode too.
  const std::size_t l2 = static_cast<std::size_t>(ctx.prop.l2CacheSize);
  const std::size_t bytes = std::max<std::size_t>(std::size_t{256} << 20, 4 * l2);
  void* host = nullptr;
  CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
  std::memset(host, 1, bytes);
  void* dptr = nullptr;
  CHECK(cudaHostGetDevicePointer(&dptr, host, 0));
  unsigned int* sink = nullptr;
  CHECK(cudaMalloc(&sink, sizeof(unsigned int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // (4a) one streaming read of the whole buffer per sample: the YAML's figures.
  const auto samples = time_events(s, ctx.warmup, ctx.trials, [&](int) {
    launch_read(ctx, dptr, bytes, sink, s);
  });
  Value p = Value::object();
  p["bytes"] = Value::number(static_cast<double>(bytes));
  p["l2_bytes"] = Value::number(static_cast<double>(l2));
  const Stats st = record(ctx, "zero_copy.read", std::move(p), "s", samples);
  const double bw = static_cast<double>(bytes) / st.median;
  // (4b) expert-sized reads, as a decode layer's misses are read in place: kZeroCopyExperts
  // launches of one expert each (kExpertBytes, 4 KiB-aligned, distinct and moving through the
  // buffer from sample to sample) between one event pair. Raw JSON only.
  const std::size_t expert_stride = (kExpertBytes + 4095) & ~static_cast<std::size_t>(4095);
  const std::size_t expert_slots = bytes / expert_stride;
  const auto expert_samples = time_events(s, ctx.warmup, ctx.trials, [&](int trial) {
    for (int e = 0; e < kZeroCopyExperts; ++e) {
      const std::size_t slot = (static_cast<std::size_t>(trial) * kZeroCopyExperts + static_cast<std::size_t>(e)) % expert_slots;
      launch_read(ctx, static_cast<const char*>(dptr) + slot * expert_stride, kExpertBytes, sink, s);
    }
  });
  Value ep = Value::object();
  ep["expert_bytes"] = Value::number(static_cast<double>(kExpertBytes));
  ep["experts_per_sample"] = Value::number(kZeroCopyExperts);
  ep["launches_per_sample"] = Value::number(kZeroCopyExperts);
  const Stats est = record(ctx, "zero_copy.expert_reads", std::move(ep), "s", expert_samples);
  const double expert_bw = static_cast<double>(kExpertBytes) * kZeroCopyExperts / est.median;

  z["bandwidth"] = Value::string(format_bandwidth(bw));
  // Ratio of the streaming read (4a) to the pinned cudaMemcpy H2D bandwidth of (1), at most 1
  // in the YAML (report.h, efficiency_figure); the unclamped ratios are in the raw JSON.
  const YamlFigure eff = efficiency_figure(bw, ctx.h2d_bandwidth);
  if (!eff.why.empty()) ctx.raw["notes"].push(Value::string("zero_copy.efficiency: " + eff.why));
  z["efficiency"] = eff.value;
  Value f = Value::object();
  f["stream_bandwidth_Bps"] = Value::number(bw);
  f["expert_bandwidth_Bps"] = Value::number(expert_bw);
  f["h2d_bandwidth_Bps"] = Value::number(ctx.h2d_bandwidth);
  f["stream_ratio"] = ctx.h2d_bandwidth > 0.0 ? Value::number(bw / ctx.h2d_bandwidth) : Value();
  f["expert_ratio"] = ctx.h2d_bandwidth > 0.0 ? Value::number(expert_bw / ctx.h2d_bandwidth) : Value();
  f["yaml_efficiency"] = Value::string("stream_ratio, clamped to at most 1");
  ctx.raw["fits"]["zero_copy"] = std::move(f);
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(sink));
  CHECK(cudaFreeHost(host));
}

}  // namespace vramsim::calibrate
