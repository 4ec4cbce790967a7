#include "sim/vram_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/units.h"
#include "workloads/memory_budget.h"

namespace vramsim::sim {

VramPlan plan_vram(const Scenario& s) {
  const auto& moe = *s.model.moe;
  VramPlan p;
  p.card_total = s.gpu.spec.driver_total_bytes.value_or(s.gpu.spec.memory_bytes);
  p.others = s.gpu.vram_used_by_others;
  p.total_experts = static_cast<std::int64_t>(moe.layers) * moe.experts;
  const double expert_params_all = moe.expert_params * static_cast<double>(p.total_experts);
  p.non_expert_weights = (s.model.params_total - expert_params_all) * s.engine.other_format.bits_per_weight / 8.0;
  p.kv_cache = workloads::kv_cache_bytes(s.model, s.engine.context, s.engine.kv.bytes_per_element,
                                         s.engine.kv.bytes_per_element, s.engine.parallel);
  p.runtime = s.engine.physics.runtime_vram;
  p.fixed = p.non_expert_weights + p.kv_cache + p.runtime;
  p.free_measured = s.gpu.free_vram.has_value();
  p.free_at_start = p.free_measured ? *s.gpu.free_vram : p.card_total - p.others - p.fixed;
  p.reserve = s.engine.cache_reserve;
  p.draft_head = s.engine.speculative ? s.engine.draft_head_bytes : 0.0;
  p.expert_bytes = moe.expert_params * s.engine.expert_format.bits_per_weight / 8.0;
  const double align = s.engine.physics.slot_alignment;
  p.slot_bytes = std::ceil(p.expert_bytes / align) * align;

  const double available = p.free_at_start - p.reserve - p.draft_head;
  if (available < 0)
    throw std::invalid_argument(
        "the engine's fixed allocations do not fit: " + units::format_gib(p.card_total) + " card - " +
        units::format_gib(p.others) + " other tenants - " + units::format_gib(p.fixed) +
        " fixed (weights outside the experts, KV cache, runtime) leaves " + units::format_gib(p.free_at_start) +
        ", less than the reserve and draft head (" + units::format_gib(p.reserve + p.draft_head) + ")");
  const auto fit = static_cast<std::int64_t>(std::floor(available / p.slot_bytes));
  if (s.engine.cache_slots) {
    if (*s.engine.cache_slots > fit)
      throw std::invalid_argument("engine.expert_cache.size: " + std::to_string(*s.engine.cache_slots) +
                                  " slots need " + units::format_gib(static_cast<double>(*s.engine.cache_slots) * p.slot_bytes) +
                                  " but only " + units::format_gib(available) + " is free (" + std::to_string(fit) +
                                  " slots)");
    p.slots = std::min(*s.engine.cache_slots, p.total_experts);
  } else {
    p.slots = std::min(fit, p.total_experts);
  }
  p.cache_bytes = static_cast<double>(p.slots) * p.slot_bytes;
  return p;
}

}  // namespace vramsim::sim
