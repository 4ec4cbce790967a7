#include "hw/gpu.h"

#include "core/config_reader.h"

namespace vramsim::hw {

using config::Lower;
using config::MapReader;
using units::Dimension;

std::string_view to_string(GpuClass c) {
  switch (c) {
    case GpuClass::Consumer: return "consumer";
    case GpuClass::Workstation: return "workstation";
    case GpuClass::Datacenter: return "datacenter";
    case GpuClass::Unified: return "unified";
  }
  return "?";
}

GpuSpec decode_gpu(const config::Node& node, const std::string& key_path, std::initializer_list<std::string_view> scenario_keys) {
  MapReader r(node, key_path);
  GpuSpec g;
  g.name = r.string("name");
  g.display_name = r.optional_string("display_name").value_or(g.name);
  r.ignore("source");
  const std::string cls = r.choice("class", {"consumer", "workstation", "datacenter", "unified"});
  g.gpu_class = cls == "consumer"      ? GpuClass::Consumer
                : cls == "workstation" ? GpuClass::Workstation
                : cls == "datacenter"  ? GpuClass::Datacenter
                                       : GpuClass::Unified;
  {
    MapReader m = r.map("memory");
    g.memory_bytes = m.quantity("capacity", Dimension::Bytes);
    g.driver_total_bytes = m.optional_quantity("driver_total", Dimension::Bytes);
    g.memory_type = m.optional_string("type").value_or("");
    g.memory_bandwidth = m.quantity("bandwidth", Dimension::Bandwidth);
    g.stream_share = m.optional_number("stream_share", Lower::Positive);
    if (g.stream_share && (*g.stream_share > 1 || *g.stream_share < 0.05))
      m.fail_at("stream_share", "a share of the peak bandwidth, above 0.05 and at most 1 (not a percentage)");
    m.finish();
  }
  {
    MapReader c = r.map("compute");
    g.dense_fp16_flops = c.quantity("dense_fp16", Dimension::FlopRate);
    g.dense_fp8_flops = c.optional_quantity("dense_fp8", Dimension::FlopRate).value_or(0.0);
    if (g.dense_fp8_flops > 0 && g.dense_fp8_flops < g.dense_fp16_flops)
      c.fail_at("dense_fp8", "the FP8 tensor rate cannot be below the fp16 one (dense_fp16)");
    g.dense_fp16_accumulate_flops =
        c.optional_quantity("dense_fp16_accumulate", Dimension::FlopRate).value_or(g.dense_fp16_flops);
    if (g.dense_fp16_accumulate_flops < g.dense_fp16_flops)
      c.fail_at("dense_fp16_accumulate", "the fp16-accumulate tensor rate cannot be below the fp32-accumulate one (dense_fp16)");
    // No bound against the tensor rates: a card without fast fp16 (Pascal's P40: 11.8 TFLOPS fp32,
    // 0.18 fp16) has a higher fp32 rate.
    g.dense_fp32_flops = c.optional_quantity("dense_fp32", Dimension::FlopRate).value_or(0.0);
    g.sm_count = static_cast<int>(c.optional_integer("sm_count", 1, 1000).value_or(0));
    g.mma_sync_share = c.optional_number("mma_sync_share", Lower::Positive).value_or(1.0);
    if (g.mma_sync_share > 1) c.fail_at("mma_sync_share", "a share of the tensor peak is at most 1");
    g.dispatch_latency = c.optional_quantity("dispatch_latency", Dimension::Time);
    if (g.dispatch_latency && *g.dispatch_latency >= 1e-3)
      c.fail_at("dispatch_latency", "a kernel dispatch of 1 ms or more is not physical; check the unit (us)");
    g.boost_clock = c.optional_quantity("boost_clock", Dimension::Rate);
    if (g.boost_clock && (*g.boost_clock < 1e8 || *g.boost_clock > 1e10))
      c.fail_at("boost_clock", "a GPU's boost clock is between 100 MHz and 10 GHz; check the unit (MHz, GHz)");
    c.finish();
  }
  {
    MapReader p = r.map("power");
    g.tdp_watts = p.quantity("tdp", Dimension::Power);
    // The largest single accelerator boards draw ~1.2-1.4 kW (NVIDIA B200 1,000 W, GB300 up to
    // 1,400 W per GPU); 2 kW bounds a card with room, and catches a unit slip (450kW).
    if (g.tdp_watts > 2000) p.fail_at("tdp", "a card's TDP is at most 2,000 W (the largest accelerators draw ~1.4 kW); got " +
                                                 std::to_string(static_cast<long long>(g.tdp_watts)) + " W");
    g.idle_watts = p.quantity("idle", Dimension::Power, Lower::NonNegative);
    if (g.idle_watts >= g.tdp_watts)
      p.fail_at("idle", "idle power (" + std::to_string(static_cast<long long>(g.idle_watts)) + " W) must be below the TDP (" +
                            std::to_string(static_cast<long long>(g.tdp_watts)) + " W, set at " +
                            config::to_string(p.node().find("tdp")->origin()) + ")");
    p.finish();
  }
  if (auto pcie = r.optional_map("pcie")) {
    g.pcie_generation = static_cast<int>(pcie->integer("generation", 1, 7));
    g.pcie_lanes = static_cast<int>(pcie->integer("lanes", 1, 16));
    g.peer_to_peer = pcie->boolean("peer_to_peer", g.gpu_class != GpuClass::Consumer);
    pcie->finish();
  } else if (!g.unified()) {
    config::fail(node, key_path, "missing required key \"pcie\" (a discrete card sits on a PCIe link)");
  }
  if (auto nv = r.optional_map("nvlink")) {
    g.nvlink_generation = static_cast<int>(nv->integer("generation", 1, 7));
    g.nvlink_bridge = nv->choice("form", {"bridge", "sxm"}) == "bridge";
    nv->finish();
  }
  if (g.unified())
    g.soc_host = r.string("soc_host");
  else if (r.has("soc_host"))
    r.fail_at("soc_host", "only a unified-memory part has a host on the same chip");
  if (r.has("calibration")) {
    const std::string file = r.string("calibration");
    g.calibration = load_calibration(file, r.any("calibration"), key_path + ".calibration");
  }
  r.finish(scenario_keys);
  return g;
}

}  // namespace vramsim::hw
