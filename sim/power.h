// GPU power and utilisation over a run (several cards: summed power, mean utilisation).
//
//   mean power = idle + wait_power x (share of time a kernel is resident)
//                + energy_per_byte x (VRAM bytes streamed) / time
// The first two terms are what a resident kernel costs while it waits (clocks up, polling);
// the last is the work itself. "Utilisation" is what the driver reports: the share of time a
// kernel is resident, stalls included; the useful fraction is the share spent streaming
// weights and KV.
#pragma once

#include <cstdint>

#include "sim/engine.h"

namespace vramsim::sim {

struct PowerSummary {
  double util = 0;             // driver-style: kernel resident
  double useful_fraction = 0;  // streaming weights / KV
  double avg_power_w = 0;
  double energy_j = 0;
  double j_per_token = 0;
};

PowerSummary summarise_power(const Scenario& scenario, const RunResult& run);

}  // namespace vramsim::sim
