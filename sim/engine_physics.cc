// The engine's physics and its batching keys (engine_config.h).
#include <string>

#include "sim/engine_config.h"

namespace vramsim::sim {

using config::Lower;
using config::MapReader;
using config::Node;
using units::Dimension;

EnginePhysics decode_physics(MapReader& e, bool moe, bool cache, bool pcie_reads) {
  EnginePhysics p;
  // A kernel's achieved share of a peak: at most 1, and a kernel below 1% of its peak is not one
  // the engine runs (a percentage written as a share, or a typo).
  auto efficiency = [&](const char* key, double v) {
    if (v > 1) e.fail_at(key, "an efficiency is at most 1");
    if (v < 0.01) e.fail_at(key, "an efficiency below 0.01 (1% of the peak) is not a kernel's; it is a share of the peak, not a percentage");
    return v;
  };
  // A fixed cost per step (under 1 s), or per layer or hand-off (under 10 ms): microseconds to
  // milliseconds; more is a unit slip.
  auto fixed_cost = [&](const char* key, double v, bool per_step = false) {
    if (per_step && v >= 1.0) e.fail_at(key, "a fixed cost per step of 1 s or more is not physical; check the unit (us, ms)");
    if (!per_step && v >= 0.01)
      e.fail_at(key, "a fixed cost per layer or hand-off of 10 ms or more is not physical; check the unit (us, ms)");
    return v;
  };
  p.gpu_bandwidth_efficiency = efficiency("gpu_bandwidth_efficiency", e.number("gpu_bandwidth_efficiency"));
  p.gpu_compute_efficiency = efficiency("gpu_compute_efficiency", e.number("gpu_compute_efficiency"));
  p.runtime_vram = e.quantity("runtime_vram", Dimension::Bytes, Lower::NonNegative);
  p.step_overhead = fixed_cost("step_overhead", e.quantity("step_overhead", Dimension::Time, Lower::NonNegative), true);
  // layer_launch, or layer_launch_cycles (converted at the card's clock by the scenario); a given
  // layer_launch wins (a measured value, a --set).
  p.layer_launch_cycles = e.optional_number("layer_launch_cycles", Lower::Positive).value_or(0.0);
  if (p.layer_launch_cycles >= 1e7)
    e.fail_at("layer_launch_cycles", "10^7 cycles or more a layer is milliseconds of fixed cost at any clock: not physical");
  p.layer_launch_given = p.layer_launch_cycles == 0 || e.has("layer_launch");
  if (p.layer_launch_given)
    p.layer_launch = fixed_cost("layer_launch", e.quantity("layer_launch", Dimension::Time, Lower::NonNegative));
  p.metal_dispatches_per_layer = static_cast<int>(e.optional_integer("metal_dispatches_per_layer", 1, 1000).value_or(0));
  p.handoff_sync = fixed_cost("handoff_sync", e.quantity("handoff_sync", Dimension::Time, Lower::NonNegative));
  p.collective_sync = fixed_cost("collective_sync", e.quantity("collective_sync", Dimension::Time, Lower::NonNegative));
  // The expert path (cache slots, miss service) matters for MoE models only: an engine preset
  // for dense models may leave it out; an MoE model needs every key.
  auto time = [&](const char* key) {
    return fixed_cost(key, moe ? e.quantity(key, Dimension::Time, Lower::NonNegative)
                               : e.optional_quantity(key, Dimension::Time, Lower::NonNegative).value_or(0.0));
  };
  auto share = [&](const char* key, Lower lower) {
    const double v = moe ? e.number(key, lower) : e.optional_number(key, lower).value_or(0.0);
    if (v > 1) e.fail_at(key, "a share or efficiency is at most 1");
    return v;
  };
  // Cache slots and the PCIe split exist only in an engine with an expert cache.
  const bool slots = moe && cache;
  p.slot_alignment = slots ? e.quantity("slot_alignment", Dimension::Bytes)
                           : e.optional_quantity("slot_alignment", Dimension::Bytes).value_or(1.0);
  // A fixed GPU-idle cost per MoE layer beyond its bytes (the routing's round trip to the host
  // and the eager launches of an uncaptured expert path); 0 for engines that keep routing on
  // the GPU inside a captured graph.
  p.moe_layer_sync = time("moe_layer_sync");
  p.expert_sort_sync = fixed_cost(
      "expert_sort_sync", e.optional_quantity("expert_sort_sync", Dimension::Time, Lower::NonNegative).value_or(0.0));
  p.miss_sync = time("miss_sync");
  p.miss_sync_idle = time("miss_sync_idle");
  if (p.miss_sync_idle > p.miss_sync) {
    // Either may be the one changed (a --set of one against the preset's other): name both.
    const Node* sync = e.node().find("miss_sync");
    e.fail_at("miss_sync_idle", "cannot exceed miss_sync (" + (sync ? sync->text() : std::string("?")) + ", at " +
                                    (sync ? config::to_string(sync->origin()) : std::string("?")) + "): lower it with the other");
  }
  p.cpu_expert_share = share("cpu_expert_share", Lower::Positive);
  if (auto bpf = e.optional_number("cpu_expert_bytes_per_flop", Lower::Positive)) {
    // A multiply-add of one weight is 2 FLOP, so even 8-bit weights give at most 0.5 byte per FLOP.
    if (*bpf > 0.5) e.fail_at("cpu_expert_bytes_per_flop", "at most 0.5 (one 8-bit weight per multiply-add of 2 FLOP); check the unit: bytes of weights per FLOP");
    p.cpu_expert_bytes_per_flop = *bpf;
  }
  if (auto eff = e.optional_number("cpu_matrix_efficiency")) p.cpu_matrix_efficiency = efficiency("cpu_matrix_efficiency", *eff);
  if (e.has("cpu_matrix_isa")) p.cpu_matrix_isa = e.choice("cpu_matrix_isa", {"avx2", "avx512", "amx", "neon"});
  p.cpu_threads = static_cast<int>(e.optional_integer("cpu_threads", 1, 1 << 20).value_or(0));
  p.numa_first_job_stride = static_cast<int>(e.optional_integer("numa_first_job_stride", 0, 1 << 20).value_or(0));
  p.host_prefill_overlap = e.boolean("host_prefill_overlap", true);
  p.prefill_activation_traffic = e.boolean("prefill_activation_traffic", false);
  p.attention_skips_window = e.boolean("attention_skips_window", true);
  p.attention_skip_min_rows = e.optional_integer("attention_skip_min_rows", 0, std::int64_t{1} << 20).value_or(0);
  p.activation_value_bytes = e.optional_quantity("activation_value_bytes", Dimension::Bytes, Lower::Positive).value_or(2.0);
  if (p.activation_value_bytes > 8)
    e.fail_at("activation_value_bytes", "a hidden-state value is at most 8 bytes (fp64), got " + std::to_string(p.activation_value_bytes));
  // The split of misses between host and PCIe reads exists only where misses may be read over PCIe.
  const bool split = slots && pcie_reads;
  p.pcie_split_reference = split ? e.quantity("pcie_split_reference", Dimension::Bandwidth)
                                 : e.optional_quantity("pcie_split_reference", Dimension::Bandwidth).value_or(1.0);
  p.host_expert_workers = static_cast<int>(moe ? e.integer("host_expert_workers", 0, 4096)
                                               : e.optional_integer("host_expert_workers", 0, 4096).value_or(0));
  p.zero_copy_efficiency = split ? share("zero_copy_efficiency", Lower::Positive)
                                 : e.optional_number("zero_copy_efficiency").value_or(1.0);
  p.default_pcie_frac = split ? share("default_pcie_frac", Lower::NonNegative)
                              : e.optional_number("default_pcie_frac", Lower::NonNegative).value_or(0.0);
  p.prefill_ubatch = static_cast<int>(e.optional_integer("prefill_ubatch", 0, 1 << 20).value_or(0));
  p.gemm_half_rows = e.optional_number("gemm_half_rows", Lower::NonNegative).value_or(0.0);
  p.matvec_max_rows = static_cast<int>(e.optional_integer("matvec_max_rows", 0, 1 << 20).value_or(0));
  p.matvec_max_rows_experts =
      static_cast<int>(e.optional_integer("matvec_max_rows_experts", 0, 1 << 20).value_or(p.matvec_max_rows));
  if (auto eff = e.optional_number("matvec_compute_efficiency")) p.matvec_compute_efficiency = efficiency("matvec_compute_efficiency", *eff);
  p.mmq_max_rows = static_cast<int>(e.optional_integer("mmq_max_rows", 0, 1 << 20).value_or(0));
  p.mmq_tile_tokens = static_cast<int>(e.optional_integer("mmq_tile_tokens", 0, 4096).value_or(0));
  if (auto eff = e.optional_number("dequant_gemm_efficiency")) p.dequant_gemm_efficiency = efficiency("dequant_gemm_efficiency", *eff);
  if (p.mmq_max_rows > 0 && p.dequant_gemm_efficiency <= 0)
    e.fail_at("mmq_max_rows", "a build that dequantizes larger GEMMs to fp16 (mmq_max_rows > 0) needs "
                              "dequant_gemm_efficiency: its cuBLAS GEMM's share of the dense fp16 rate");
  p.attention_score_bytes = e.optional_quantity("attention_score_bytes", Dimension::Bytes, Lower::NonNegative).value_or(0.0);
  if (e.has("quantized_gemm_efficiency"))
    p.quantized_gemm_efficiency = efficiency("quantized_gemm_efficiency", e.number("quantized_gemm_efficiency"));
  p.decode_attention_blocks = static_cast<int>(e.optional_integer("decode_attention_blocks", 1, 1000000).value_or(0));
  if (p.mmq_max_rows == 0 && p.dequant_gemm_efficiency > 0)
    e.fail_at("dequant_gemm_efficiency", "applies only with mmq_max_rows > 0 (a build that dequantizes larger GEMMs to fp16)");
  if (auto eff = e.optional_number("cpu_bandwidth_efficiency")) p.cpu_bandwidth_efficiency = efficiency("cpu_bandwidth_efficiency", *eff);
  if (e.has("wait_power"))
    e.fail_at("wait_power", "replaced by wait_power_share: the share of each card's TDP - idle that a resident kernel "
                            "draws whether it works or waits (0.265 calibrated on the case study's RTX 5090: 144 W of 545 W)");
  p.wait_power_share = e.number("wait_power_share", Lower::NonNegative);
  if (p.wait_power_share >= 1) e.fail_at("wait_power_share", "a share of the card's TDP - idle, below 1 (the rest powers the work)");
  // Absent: each card's own (TDP - idle - wait) / peak bandwidth (power.h's energy_per_byte).
  if (auto pj = e.optional_number("energy_per_byte_pj", Lower::NonNegative)) p.energy_per_byte = *pj * 1e-12;
  return p;
}

}  // namespace vramsim::sim
