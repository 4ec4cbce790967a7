#include "cli/plan_space.h"

#include "cli/quick_scenario.h"
#include "sim/vram_plan.h"

namespace vramsim::cli {

// The largest context (tokens, up to the model's maximum) with which the candidate `s` still
// fits: a bisection over the memory plan (arithmetic, no simulation), to the token.
std::int64_t max_context(sim::Scenario s) {
  auto fits_with = [&](std::int64_t context) {
    s.engine.context = context;
    return fits(s);
  };
  std::int64_t lo = s.engine.context, hi = s.model.max_context;
  if (fits_with(hi)) return hi;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits_with(mid) ? lo : hi) = mid;
  }
  return lo;
}

// "-c up to N fits": the largest context in the engine's own flag (llama-server's -c is shared
// by its -np slots). For llama.cpp it names the rule that judged it
// (sim::judged_by_engine_accounting), so that the step between the two at the edge reads as
// what it is (docs/memory-model.md).
std::string context_note(const sim::Scenario& s, std::int64_t per_slot) {
  if (s.engine.kv_pool) return "--max-model-len up to " + std::to_string(per_slot) + " fits";
  if (s.engine.expert_cache) return "--context up to " + std::to_string(per_slot) + " fits";
  return "-c up to " + std::to_string(per_slot * s.engine.parallel) + " fits" +
         (s.engine.parallel > 1 ? " (" + std::to_string(per_slot) + " per slot)" : std::string()) +
         (sim::judged_by_engine_accounting(s) ? " by weights + KV + runtime" : " by the memory-budget model");
}

}  // namespace vramsim::cli
