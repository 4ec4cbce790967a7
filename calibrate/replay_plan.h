// The plain C++ half of the real-card MoE replay (`vramsim-calibrate replay`, replay.cu): reading
// the routing trace `vramsim routing-trace` writes (format: sim/routing_trace.h) and deciding,
// for an expert cache of S slots, which look-ups hit, which miss, and where each miss goes.
// The CUDA program only executes the plan and times it, so everything it counts (hit rate,
// misses, layers with a miss) is computed and tested here without a GPU.
// C++17 (nvcc compiles the header). Units: bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "calibrate/report.h"

namespace vramsim::calibrate {

struct RoutingTrace {
  int layers = 0;
  int experts = 0;               // per layer
  int top_k = 0;
  std::int64_t expert_bytes = 0; // one routed expert
  std::int64_t scenario_slots = 0;
  std::int64_t gen_tokens = 0;   // tokens per request
  std::int64_t tokens = 0;
  std::vector<std::uint32_t> prefill_order;  // id = layer * experts + expert, hottest first
  std::vector<std::int64_t> request;         // per token
  std::vector<std::uint16_t> routes;         // tokens x layers x top_k expert ids

  const std::uint16_t* route(std::int64_t token, int layer) const {
    return routes.data() + (static_cast<std::size_t>(token) * static_cast<std::size_t>(layers) + static_cast<std::size_t>(layer)) *
                               static_cast<std::size_t>(top_k);
  }
};

// Reads a trace; throws InputError (file:line:col) on anything malformed or out of range.
RoutingTrace read_routing_trace(std::istream& in, const std::string& file);

// A command-line value read whole, within [low, high]: std::invalid_argument naming `option`
// otherwise (std::stoll would read "1.38e6" as 1 and "3x" as 3).
std::int64_t option_integer(const std::string& option, const std::string& text, std::int64_t low, std::int64_t high);
double option_number(const std::string& option, const std::string& text, double low, double high);

enum class ReplayPolicy {
  Profile,  // the S hottest experts pre-filled and pinned; a miss is copied to a staging buffer
  Lru       // pre-filled the same way; a miss is copied into the least recently used slot
};

// Where every look-up of every (token, layer) is served from.
struct ReplayPlan {
  std::int64_t slots = 0;
  ReplayPolicy policy = ReplayPolicy::Profile;
  std::int64_t warmup_tokens = 0;            // replayed but not counted (nor timed)
  std::vector<std::uint32_t> initial;        // slot -> expert id (layer * experts + expert) at start
  // Per look-up (tokens x layers x top_k): the slot it reads (a hit, or for Lru the slot a miss
  // is copied into), or -1 for a Profile miss (the layer's staging buffer, index = position
  // among the layer's misses).
  std::vector<std::int32_t> slot;
  std::vector<std::uint8_t> miss;            // per look-up: 1 when not resident
  std::vector<std::uint8_t> layer_has_miss;  // per (token, layer)
  // Counted over tokens >= warmup_tokens:
  std::int64_t lookups = 0;
  std::int64_t hits = 0;
  std::int64_t layers_with_miss = 0;
  std::int64_t counted_tokens = 0;
  double hit_rate() const { return lookups ? static_cast<double>(hits) / static_cast<double>(lookups) : 1.0; }
  double misses_per_token() const {
    return counted_tokens ? static_cast<double>(lookups - hits) / static_cast<double>(counted_tokens) : 0.0;
  }
};

// Throws std::invalid_argument when slots is negative, exceeds layers x experts, or (Lru) is
// below top_k (a layer's misses would evict each other).
ReplayPlan plan_replay(const RoutingTrace& trace, std::int64_t slots, ReplayPolicy policy, std::int64_t warmup_tokens);

// VRAM (bytes) the replay allocates for a cache of `slots` slots of `stride_bytes` each: the
// slots, two layers' staging (2 x top_k slots) and one layer's dense weights.
std::uint64_t replay_vram_bytes(std::int64_t slots, std::uint64_t stride_bytes, int top_k, std::int64_t dense_bytes);

// Which requested cache sizes the replay can run in `budget_bytes` of VRAM: per entry of
// `slots`, true when replay_vram_bytes fits. Each size is judged alone, so a cache too large
// for the card is skipped (and reported) instead of refusing the others.
std::vector<bool> replay_sizes_that_fit(const std::vector<std::int64_t>& slots, std::uint64_t stride_bytes, int top_k,
                                        std::int64_t dense_bytes, std::uint64_t budget_bytes);

}  // namespace vramsim::calibrate
