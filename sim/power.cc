#include "sim/power.h"

#include <algorithm>

namespace vramsim::sim {

PowerSummary summarise_power(const Scenario& s, const RunResult& run) {
  PowerSummary p;
  const double t = run.makespan_s;
  if (t <= 0) return p;
  const auto& ph = s.engine.physics;
  if (s.cards.size() > 1 || run.host_plan) {
    // Several cards, or CPU layers beside the card: each card's power from its own time and bytes; utilisation and the
    // useful fraction are the cards' means.
    const double n = static_cast<double>(s.cards.size());
    for (std::size_t c = 0; c < s.cards.size(); ++c) {
      const auto& u = run.card_use.at(c);
      const auto& spec = s.cards[c].gpu.spec;
      const double util = std::min(1.0, u.busy_s / t);
      p.util += util / n;
      p.useful_fraction += std::min(1.0, u.compute_s / t) / n;
      p.avg_power_w += std::min(spec.tdp_watts, spec.idle_watts + ph.wait_power * util + ph.energy_per_byte * u.vram_bytes / t);
    }
  } else {
    // With several slots, resident times overlap; the driver still reports at most 100%.
    p.util = std::min(1.0, run.gpu_resident_s / t);
    p.useful_fraction = std::min(1.0, (run.decode.compute + run.prefill.compute) / t);
    const double bytes = run.decode.vram_bytes + run.prefill.vram_bytes;
    p.avg_power_w = s.gpu.spec.idle_watts + ph.wait_power * p.util + ph.energy_per_byte * bytes / t;
    p.avg_power_w = std::min(p.avg_power_w, s.gpu.spec.tdp_watts);
  }
  p.energy_j = p.avg_power_w * t;
  p.j_per_token = run.generated_tokens > 0 ? p.energy_j / static_cast<double>(run.generated_tokens) : 0.0;
  return p;
}

}  // namespace vramsim::sim
