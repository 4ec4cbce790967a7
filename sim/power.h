// GPU power and utilisation over a run (several cards: summed power, mean utilisation).
//
//   mean power = idle + wait_power x (share of time a kernel is resident)
//                + energy_per_byte x (VRAM bytes streamed) / time
//                + energy_per_flop x (tensor FLOPs run) / time,   at most the card's TDP
// The first two terms are what a resident kernel costs while it waits (clocks up, polling);
// the last two are the work itself. energy_per_byte is the engine's (energy_per_byte_pj, the
// RTX 5090's (TDP - idle) / peak bandwidth, applied to every card). energy_per_flop is the
// card's own (TDP - idle) / its peak tensor rate for the scenario's GEMMs (gemm_peak: dense
// fp16, or fp8 for FP8 weights), from its catalogue figures: the card at its rated board power
// running dense tensor math at peak (H100 SXM: 630 W / 989 TFLOPS = 0.64 pJ/FLOP; RTX 3090:
// 330 W / 71 TFLOPS = 4.6 pJ/FLOP). Both work terms include the operands' on-chip movement,
// so a kernel at peak on either alone reaches the TDP. "Utilisation" is what the driver
// reports: the share of time a kernel is resident, stalls included; the useful fraction is the
// share spent streaming weights and KV or computing. Only the GPU boards: host CPU and RAM
// power are not modelled.
#pragma once

#include <cstdint>

#include "sim/engine.h"

namespace vramsim::sim {

struct PowerSummary {
  double util = 0;             // driver-style: kernel resident (several cards: their mean)
  double useful_fraction = 0;  // streaming weights / KV, or computing (several cards: their mean)
  double avg_power_w = 0;      // after each card's TDP cap (several cards: their sum)
  double uncapped_power_w = 0; // the model's figure before the TDP cap (several cards: their sum)
  bool power_capped = false;   // the model's figure exceeded the TDP of some card, which was used instead
  double energy_j = 0;         // avg_power_w x makespan (GPU boards only)
  double j_per_token = 0;
  int cards = 1;
};

// J per FLOP of `gpu`'s tensor cores for the scenario's GEMMs: (TDP - idle) / gemm_peak.
double energy_per_flop(const hw::GpuSpec& gpu, const Scenario& scenario);

PowerSummary summarise_power(const Scenario& scenario, const RunResult& run);

}  // namespace vramsim::sim
