// What plan says of each candidate beside its family's search space (sim/engines/): the
// largest context a candidate fits, and how the engine's own flag says it. Memory-plan
// arithmetic only, no simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace vramsim::cli {

// The largest context (tokens, up to the model's maximum) with which `s` still fits: a
// bisection over the memory plan, to the token. REQUIRES: `s` fits at its own context.
std::int64_t max_context(sim::Scenario s);
// "-c up to N fits" in the engine's own flag, for `per_slot` tokens per slot.
std::string context_note(const sim::Scenario& s, std::int64_t per_slot);

}  // namespace vramsim::cli
