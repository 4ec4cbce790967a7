// A scenario's expert routing written out as a trace, for programs outside the simulator (the
// real-card MoE replay, `vramsim-calibrate replay`, docs/calibration.md) to replay the same
// token-by-token expert choices the simulation draws.
//
// Format (text, "vramsim-routing-trace 1"; calibrate/replay_plan.h reads it):
//   vramsim-routing-trace 1
//   # comment lines start with '#'
//   layers L
//   experts E
//   top_k K
//   expert_bytes B            one routed expert, bytes (the scenario's expert format)
//   scenario_slots S          the cache size the simulation derives for the scenario
//   gen_tokens G              tokens per request (a new request, a new per-request preference)
//   tokens N
//   prefill_order L*E         then L*E pairs "layer expert", hottest first, 16 pairs a line
//   token T request R         then L lines, one per layer: the K experts of token T
//   ...
// Experts are popularity ranks within their layer (0 = hottest), as in the simulation.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "sim/expert_cache.h"  // prefill_order
#include "sim/routing.h"
#include "sim/scenario.h"

namespace vramsim::sim {

// Each MoE layer's popularity as the simulation builds it: a measured profile when the model
// names one, else the family fitted to its coverage points for the median request. Throws
// std::invalid_argument when neither can be built.
LayerPopularity scenario_popularity(const Scenario& scenario);

// Writes `tokens` decode tokens of routing: requests of workload.gen_tokens tokens each, one
// token per step (no speculative drafts), request ids 0, 1, ... with the simulation's streams.
void write_routing_trace(std::ostream& out, const Scenario& scenario, std::int64_t tokens);

}  // namespace vramsim::sim
