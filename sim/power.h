// GPU power and utilisation over a run (several cards: summed power, mean utilisation).
//
//   mean power = idle + wait x (share of time a kernel is resident)
//                + energy_per_byte x (VRAM bytes streamed) / time
//                + energy_per_flop x (tensor FLOPs run) / time,   at most the card's TDP
// wait = wait_power_share x (TDP - idle): what a resident kernel costs whether it works or
// waits (clocks up, SMs polling), the engine's share of the card's dynamic range (calibrated on
// the case study's RTX 5090). The last two terms are the work itself, each from the card's own
// catalogue figures, so that a resident kernel at peak on either alone reaches the TDP:
// energy_per_byte = (TDP - idle - wait) / peak memory bandwidth (RTX 5090, GDDR7, share 0.265:
// 401 W / 1792 GB/s = 224 pJ/B), unless the engine sets energy_per_byte_pj; energy_per_flop =
// (TDP - idle - wait) / peak tensor rate for the scenario's GEMMs (gemm_peak: dense fp16, or
// fp8 for FP8 weights). Both work terms include the operands' on-chip movement. "Utilisation"
// is what the driver reports: the share of time a kernel is resident, stalls included; the
// useful fraction is the share spent streaming weights and KV or computing. The host's CPU
// packages are added beside the boards when the host gives cpu.power (PowerSummary::host_power_w);
// RAM, fans and the power supply's loss are not modelled.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/engine.h"

namespace vramsim::sim {

// Every figure is NaN (null in JSON) when no request completed: a run whose requests were all
// rejected (an open loop's makespan is then its arrivals' span, with no work in it).
struct PowerSummary {
  double util = 0;             // driver-style: kernel resident (several cards: their mean)
  double useful_fraction = 0;  // streaming weights / KV, or computing (several cards: their mean)
  double avg_power_w = 0;      // after each card's TDP cap (several cards: their sum)
  double uncapped_power_w = 0; // the model's figure before the TDP cap (several cards: their sum)
  bool power_capped = false;   // the model's figure exceeded the TDP of some card, which was used instead
  double energy_j = 0;         // avg_power_w x makespan (GPU boards only)
  double j_per_token = 0;
  int cards = 1;
  // The host CPU packages (the host's cpu.power; none without it, or on a unified part, whose
  // power figures are the whole machine's already): idle + (full_load - idle) x busy_share, where
  // busy_share is the share of the run the host computes (its layers, its experts; at most 1).
  std::optional<double> host_power_w;
  double host_busy_share = 0;
  std::optional<double> j_per_token_with_host;  // (GPU boards + host CPU packages) x makespan / tokens
};

// W above idle while a kernel is resident on `gpu`: wait_power_share x (TDP - idle).
double wait_power(const hw::GpuSpec& gpu, const Scenario& scenario);
// J per FLOP of `gpu`'s tensor cores for the scenario's GEMMs: (TDP - idle - wait) / gemm_peak.
double energy_per_flop(const hw::GpuSpec& gpu, const Scenario& scenario);
// J per byte streamed from `gpu`'s VRAM: the engine's energy_per_byte_pj when set, otherwise
// the card's (TDP - idle - wait) / peak memory bandwidth.
double energy_per_byte(const hw::GpuSpec& gpu, const Scenario& scenario);

PowerSummary summarise_power(const Scenario& scenario, const RunResult& run);

}  // namespace vramsim::sim
