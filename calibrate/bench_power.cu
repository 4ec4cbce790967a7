// (8) Board power from NVML's total energy counter (millijoules since driver load,
// nvmlDeviceGetTotalEnergyConsumption, Volta and newer): average watts = delta energy /
// wall time, over an idle window and over a steady memory-bound read loop. Compiled out
// (no power section in the YAML) when the build found no NVML (VRAMSIM_CALIBRATE_NVML unset).
// NVML failures are not fatal: power is optional, so they only drop the section.

#include <algorithm>
#include <chrono>
#include <thread>

#include "calibrate/common.cuh"

#ifdef VRAMSIM_CALIBRATE_NVML
#include <nvml.h>
#endif

namespace vramsim::calibrate {

#ifndef VRAMSIM_CALIBRATE_NVML

void bench_power(Context& ctx) {
  std::printf("== power: skipped (built without NVML)\n");
  ctx.raw["notes"].push(Value::string("power: built without NVML, not measured"));
}

#else

namespace {

bool nvml_ok(nvmlReturn_t r, const char* what, Context& ctx) {
  if (r == NVML_SUCCESS) return true;
  const std::string msg = std::string("power: ") + what + " failed: " + nvmlErrorString(r);
  std::fprintf(stderr, "vramsim-calibrate: %s (power section omitted)\n", msg.c_str());
  ctx.raw["notes"].push(Value::string(msg));
  return false;
}

// Average power in watts over `seconds` of `body` running repeatedly (body returns after
// queuing or doing a slice of work; the GPU is synchronised at the end of the window).
template <class F>
bool average_power(nvmlDevice_t dev, double seconds, Context& ctx, F&& body, double* watts, double* elapsed) {
  unsigned long long e0 = 0, e1 = 0;  // millijoules
  if (!nvml_ok(nvmlDeviceGetTotalEnergyConsumption(dev, &e0), "nvmlDeviceGetTotalEnergyConsumption", ctx))
    return false;
  const auto t0 = std::chrono::steady_clock::now();
  double dt = 0.0;
  do {
    body();
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (dt < seconds);
  CHECK(cudaDeviceSynchronize());
  if (!nvml_ok(nvmlDeviceGetTotalEnergyConsumption(dev, &e1), "nvmlDeviceGetTotalEnergyConsumption", ctx))
    return false;
  dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *watts = static_cast<double>(e1 - e0) * 1e-3 / dt;
  *elapsed = dt;
  return true;
}

}  // namespace

void bench_power(Context& ctx) {
  std::printf("== power: NVML energy counter, idle and memory-bound loop\n");
  std::fflush(stdout);
  if (!nvml_ok(nvmlInit_v2(), "nvmlInit", ctx)) return;
  char bus_id[64] = {};
  CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ctx.device));
  nvmlDevice_t dev;
  if (!nvml_ok(nvmlDeviceGetHandleByPciBusId_v2(bus_id, &dev), "nvmlDeviceGetHandleByPciBusId", ctx)) {
    (void)nvmlShutdown();
    return;
  }
  const double window = ctx.quick ? 1.5 : 3.0;  // seconds per measurement window

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
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the previous work's power settle
  const bool idle_ok = average_power(dev, window, ctx, [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); },
                                     &idle_w, &idle_t);
  // Warm-up the load so clocks ramp before the window opens.
  for (int i = 0; i < 20; ++i) launch_read(ctx, buf, bytes, sink, s);
  CHECK(cudaStreamSynchronize(s));
  const bool load_ok = average_power(dev, window, ctx, [&] {
    for (int i = 0; i < 8; ++i) launch_read(ctx, buf, bytes, sink, s);
    launches += 8;
    CHECK(cudaStreamSynchronize(s));
  }, &load_w, &load_t);

  unsigned int limit_mw = 0;
  const bool limit_ok = nvmlDeviceGetEnforcedPowerLimit(dev, &limit_mw) == NVML_SUCCESS;

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
  (void)nvmlShutdown();
}

#endif  // VRAMSIM_CALIBRATE_NVML

}  // namespace vramsim::calibrate
