// plan's search space beside the placements (quick_scenario.h): the expert cache's sizes, the
// largest context a candidate fits, and how the engine's own flag says it. Memory-plan
// arithmetic only, no simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace vramsim::cli {

// The cache (hot-set) sizes worth simulating: 0, 1/4, 1/2, 3/4 and all of the slots that fit
// (a model without routing statistics has no hot set to choose: 0 only; none when nothing fits).
std::vector<std::int64_t> cache_sizes(sim::Scenario s);
// The largest context (tokens, up to the model's maximum) with which `s` still fits: a
// bisection over the memory plan, to the token. REQUIRES: `s` fits at its own context.
std::int64_t max_context(sim::Scenario s);
// "-c up to N fits" in the engine's own flag, for `per_slot` tokens per slot.
std::string context_note(const sim::Scenario& s, std::int64_t per_slot);

}  // namespace vramsim::cli
