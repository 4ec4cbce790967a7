#include "sim/power.h"

#include <algorithm>
#include <limits>

#include "sim/step_model.h"

namespace vramsim::sim {

double wait_power(const hw::GpuSpec& gpu, const Scenario& s) {
  return s.engine.physics.wait_power_share * std::max(0.0, gpu.tdp_watts - gpu.idle_watts);
}

namespace {
// The board power left for the work once a kernel is resident: TDP - idle - wait power.
double work_budget(const hw::GpuSpec& gpu, const Scenario& s) {
  return std::max(0.0, gpu.tdp_watts - gpu.idle_watts - wait_power(gpu, s));
}
}  // namespace

double energy_per_flop(const hw::GpuSpec& gpu, const Scenario& s) {
  const double peak = tensor_peak(gpu, s);  // the card's power spread over its full tensor rate
  return peak > 0 ? work_budget(gpu, s) / peak : 0.0;
}

double energy_per_byte(const hw::GpuSpec& gpu, const Scenario& s) {
  if (s.engine.physics.energy_per_byte) return *s.engine.physics.energy_per_byte;
  return gpu.memory_bandwidth > 0 ? work_budget(gpu, s) / gpu.memory_bandwidth : 0.0;
}

PowerSummary summarise_power(const Scenario& s, const RunResult& run) {
  PowerSummary p;
  p.cards = static_cast<int>(std::max<std::size_t>(1, s.cards.size()));
  const double t = run.makespan_s;
  if (t <= 0 || run.completed == 0) {  // nothing completed (every request rejected): no figure, rather than zeros
    const double none = std::numeric_limits<double>::quiet_NaN();
    p.util = p.useful_fraction = p.avg_power_w = p.uncapped_power_w = p.energy_j = p.j_per_token = none;
    return p;
  }
  auto add_card = [&](const hw::GpuSpec& spec, double util, double bytes, double flops) {
    const double w = spec.idle_watts + wait_power(spec, s) * util + energy_per_byte(spec, s) * bytes / t +
                     energy_per_flop(spec, s) * flops / t;
    p.uncapped_power_w += w;
    p.power_capped = p.power_capped || w > spec.tdp_watts;
    p.avg_power_w += std::min(spec.tdp_watts, w);
  };
  if (s.cards.size() > 1 || run.host_plan) {
    // Several cards, or CPU layers beside the card: each card's power from its own time and bytes; utilisation and the
    // useful fraction are the cards' means.
    const double n = static_cast<double>(s.cards.size());
    for (std::size_t c = 0; c < s.cards.size(); ++c) {
      const auto& u = run.card_use.at(c);
      const double util = std::min(1.0, u.busy_s / t);
      p.util += util / n;
      p.useful_fraction += std::min(1.0, u.compute_s / t) / n;
      add_card(s.cards[c].gpu.spec, util, u.vram_bytes, u.flops);
    }
  } else {
    // With several slots, resident times overlap; the driver still reports at most 100%.
    p.util = std::min(1.0, run.gpu_resident_s / t);
    p.useful_fraction = std::min(1.0, (run.decode.compute + run.prefill.compute) / t);
    add_card(s.gpu.spec, p.util, run.decode.vram_bytes + run.prefill.vram_bytes, run.decode.flops + run.prefill.flops);
  }
  p.energy_j = p.avg_power_w * t;
  p.j_per_token = run.generated_tokens > 0 ? p.energy_j / static_cast<double>(run.generated_tokens) : 0.0;
  const auto& host = s.host;
  p.host_busy_share = std::min(1.0, (run.decode.host_busy + run.prefill.host_busy) / t);
  if (host.cpu_full_load_watts && host.cpu_idle_watts && !s.gpu.spec.unified()) {
    p.host_power_w = *host.cpu_idle_watts + (*host.cpu_full_load_watts - *host.cpu_idle_watts) * p.host_busy_share;
    if (run.generated_tokens > 0)
      p.j_per_token_with_host = (p.avg_power_w + *p.host_power_w) * t / static_cast<double>(run.generated_tokens);
  }
  return p;
}

}  // namespace vramsim::sim
