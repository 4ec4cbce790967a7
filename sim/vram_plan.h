// Where the card's memory goes when the engine starts, and how many expert slots fit.
//
//   free at start = driver-reported total - other tenants - fixed allocations
//   fixed         = non-expert weights + KV cache (context x kv type x parallel slots) + runtime
//   slots (auto)  = floor((free at start - reserve - draft head) / slot), slot = expert rounded
//                   up to the slot alignment; at most every expert of the model
// When the scenario gives the measured free VRAM (hardware.gpu.free_vram), it replaces the
// derivation, as the engine's own log line does. Units: bytes.
#pragma once

#include <cstdint>

#include "sim/scenario.h"

namespace vramsim::sim {

struct VramPlan {
  double card_total = 0;          // driver-reported total (or nominal capacity)
  double others = 0;              // other tenants
  double non_expert_weights = 0;
  double kv_cache = 0;
  double runtime = 0;
  double fixed = 0;               // non-expert weights + KV + runtime
  double free_at_start = 0;
  bool free_measured = false;     // free_at_start came from the scenario
  double reserve = 0;
  double draft_head = 0;
  double expert_bytes = 0;        // one routed expert in the expert format
  double slot_bytes = 0;          // one cache slot
  std::int64_t total_experts = 0; // layers x experts
  std::int64_t slots = 0;
  double cache_bytes = 0;
  double coverage() const { return static_cast<double>(slots) / static_cast<double>(total_experts); }
};

// Throws std::invalid_argument with a user-facing reason when the fixed allocations do not fit
// or an explicit cache size exceeds the free VRAM.
VramPlan plan_vram(const Scenario& scenario);

}  // namespace vramsim::sim
