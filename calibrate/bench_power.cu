// (8) Board power from NVML's total energy counter (millijoules since driver load,
// nvmlDeviceGetTotalEnergyConsumption, Volta and newer): average watts = delta energy /
// wall time, over an idle window and over a steady memory-bound read loop. NVML is loaded at
// run time (nvml_loader.h): where libnvidia-ml.so.1 is missing, the power section is left out
// with a note. NVML failures are not fatal: power is optional, so they only drop the section.

#include <algorithm>
#include <chrono>
#include <thread>

#include "calibrate/common.cuh"
#include "calibrate/nvml_loader.h"

namespace vramsim::calibrate {

namespace {

using nvmlDevice_t = NvmlApi::Device;

const NvmlApi& nvml() {
  static const NvmlApi api = load_nvml();
  return api;
}

bool nvml_ok(NvmlApi::Return r, const char* what, Context& ctx) {
  if (r == NvmlApi::kSuccess) return true;
  const std::string msg = std::string("power: ") + what + " failed: " + nvml().error(r);
  std::fprintf(stderr, "vramsim-calibrate: %s (power section omitted)\n", msg.c_str());
  ctx.raw["notes"].push(Value::string(msg));
  return false;
}

// NVML's energy counter advances in steps (every 20-100 ms depending on the board), so a
// window that opens or closes between steps is off by up to a step's energy. Runs `body`
// until the counter changes and returns the new reading (millijoules) and the host time it
// was seen (at most one body() after the change). Gives up after kTickTimeout (then the last
// reading, with a note). False on an NVML error.
constexpr double kTickTimeout = 1.0;  // seconds

template <class F>
bool until_tick(nvmlDevice_t dev, Context& ctx, F&& body, unsigned long long* mj,
                std::chrono::steady_clock::time_point* at) {
  unsigned long long e0 = 0, e = 0;
  if (!nvml_ok(nvml().total_energy(dev, &e0), "nvmlDeviceGetTotalEnergyConsumption", ctx)) return false;
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    body();
    if (!nvml_ok(nvml().total_energy(dev, &e), "nvmlDeviceGetTotalEnergyConsumption", ctx)) return false;
    *at = std::chrono::steady_clock::now();
    *mj = e;
    if (e != e0) return true;
    if (std::chrono::duration<double>(*at - t0).count() > kTickTimeout) {
      ctx.raw["notes"].push(Value::string("power: the energy counter did not change within 1 s; window edge not aligned"));
      return true;
    }
  }
}

// Average power in watts over at least `seconds` of `body` running repeatedly (body returns
// after doing or waiting for a slice of work). The window opens and closes on counter
// updates (until_tick), so it spans whole counter steps; watts = delta energy / host time
// between the two updates. `opened()` is called when the window opens (to reset counts).
template <class F, class G>
bool average_power(nvmlDevice_t dev, double seconds, Context& ctx, F&& body, G&& opened, double* watts,
                   double* elapsed) {
  unsigned long long e0 = 0, e1 = 0;  // millijoules
  std::chrono::steady_clock::time_point t0, t1;
  if (!until_tick(dev, ctx, body, &e0, &t0)) return false;
  opened();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) body();
  if (!until_tick(dev, ctx, body, &e1, &t1)) return false;
  CHECK(cudaDeviceSynchronize());
  const double dt = std::chrono::duration<double>(t1 - t0).count();
  *watts = static_cast<double>(e1 - e0) * 1e-3 / dt;
  *elapsed = dt;
  return true;
}

}  // namespace

void bench_power(Context& ctx) {
  std::printf("== power: NVML energy counter, idle and memory-bound loop\n");
  std::fflush(stdout);
  if (ctx.mig) {
    std::fprintf(stderr, "vramsim-calibrate: warning: %s is a MIG instance; board power is not its own, power skipped\n",
                 ctx.prop.name);
    ctx.raw["notes"].push(Value::string("power: MIG instance, board power not measured"));
    return;
  }
  if (!nvml().missing.empty()) {
    std::printf("== power: skipped (%s)\n", nvml().missing.c_str());
    ctx.raw["notes"].push(Value::string("power: not measured: " + nvml().missing));
    return;
  }
  if (!nvml_ok(nvml().init(), "nvmlInit", ctx)) return;
  char bus_id[64] = {};
  CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ctx.device));
  nvmlDevice_t dev;
  if (!nvml_ok(nvml().handle_by_pci_bus_id(bus_id, &dev), "nvmlDeviceGetHandleByPciBusId", ctx)) {
    (void)nvml().shutdown();
    return;
  }
  // MIG mode of the board (read only): with MIG on, the board's power is shared by instances.
  unsigned int mig_current = 0, mig_pending = 0;
  if (nvml().mig_mode(dev, &mig_current, &mig_pending) == NvmlApi::kSuccess) {
    ctx.raw["device"]["nvml_mig_mode"] = Value::boolean(mig_current == NvmlApi::kMigEnable);
    if (mig_current == NvmlApi::kMigEnable) {
      std::fprintf(stderr, "vramsim-calibrate: warning: MIG mode is on; board power is shared, power skipped\n");
      ctx.raw["notes"].push(Value::string("power: MIG mode on (nvmlDeviceGetMigMode), board power not measured"));
      (void)nvml().shutdown();
      return;
    }
  }
  // Seconds per measurement window (whole counter steps of 20-100 ms each; the quick run
  // keeps the whole script inside a 10-minute slot), clock ramp before the load window, and
  // the pause that lets the previous benchmark's power decay before the idle window.
  const double window = ctx.quick ? 2.5 : 5.0;
  const double ramp = 2.0;
  const auto settle = std::chrono::milliseconds(ctx.quick ? 1000 : 2000);

  // Load: repeated streaming reads of a buffer well beyond L2, synchronised every few
  // launches so that the host does not queue far ahead of the window's end.
  const ReadBuffer buffer(std::max<std::size_t>(std::size_t{512} << 20, 8 * static_cast<std::size_t>(ctx.prop.l2CacheSize)));
  void* buf = buffer.data;
  unsigned int* sink = buffer.sink;
  const std::size_t bytes = buffer.bytes;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  double idle_w = 0.0, idle_t = 0.0, load_w = 0.0, load_t = 0.0;
  long long launches = 0;
  CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(settle);  // let the previous work's power decay
  const bool idle_ok = average_power(dev, window, ctx, [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); },
                                     [] {}, &idle_w, &idle_t);
  auto load = [&] {
    for (int i = 0; i < 8; ++i) launch_read(ctx, buf, bytes, sink, s);
    launches += 8;
    CHECK(cudaStreamSynchronize(s));
  };
  // Warm-up: `ramp` seconds of the load so clocks and power settle before the window opens.
  for (const auto w0 = std::chrono::steady_clock::now();
       std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() < ramp;)
    load();
  const bool load_ok = average_power(dev, window, ctx, load, [&] { launches = 0; }, &load_w, &load_t);

  unsigned int limit_mw = 0;
  const bool limit_ok = nvml().enforced_power_limit(dev, &limit_mw) == NvmlApi::kSuccess;

  if (idle_ok && load_ok) {
    Value p = Value::object();
    p["window_s"] = Value::number(idle_t);
    record(ctx, "power.idle", std::move(p), "W", {idle_w});
    Value q = Value::object();
    q["window_s"] = Value::number(load_t);
    q["bytes_read"] = Value::number(static_cast<double>(bytes) * static_cast<double>(launches));
    record(ctx, "power.loaded", std::move(q), "W", {load_w});
    Value& pw = ctx.summary["power"];
    pw["idle"] = Value::string(format_power(idle_w));    // average over the idle window
    pw["loaded"] = Value::string(format_power(load_w));  // average over the read loop
    pw["loaded_bandwidth"] = Value::string(format_bandwidth(static_cast<double>(bytes) * static_cast<double>(launches) / load_t));
    if (limit_ok) pw["limit"] = Value::string(format_power(limit_mw * 1e-3));
  }

  CHECK(cudaStreamDestroy(s));
  (void)nvml().shutdown();
}

}  // namespace vramsim::calibrate
