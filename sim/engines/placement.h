// llama.cpp's placements of a model: how many layers on the GPUs (-ngl), how many layers'
// experts on the CPU (--n-cpu-moe), the LM head, the layer split over a pipeline (-ts), and the
// search for those that fit (plan's search space and `run --model`'s choice for the family).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace vramsim::sim::engines {

// One way to place the model (engines without an expert cache).
struct Placement {
  int gpu_layers = 0;
  int cpu_moe_layers = 0;
  std::string description;
  std::string flags;  // llama.cpp's, without -c
  bool layers_on_cpu = false;  // some whole layers run on the CPU
  bool head_on_cpu = false;    // the LM head on the CPU (EngineSetup::head_on_cpu)
  bool ngl_output_first = true;  // the flags are for a build whose -ngl counts the output first
  bool engine_accounting = false;  // fits by llama.cpp's own accounting only (engine.vram_rule=engine)
  // GPU layers per card (engine.layer_split, llama.cpp's -ts) when the default split by free
  // memory does not fit the placement and this one does; empty: the default split.
  std::vector<int> layer_split;
};

// Whether the scenario's memory plan works out on its cards (plan_cards does not refuse it).
bool fits(const Scenario& scenario);

// The description and flags of a placement, the flags for a build whose -ngl counts the
// output layer first or last (EngineSetup::ngl_output_first).
Placement describe(int gpu_layers, int cpu_moe_layers, int layers, bool head_on_cpu, bool ngl_output_first);

// The --set assignments that give a placement of a `layers`-layer model ("engine.gpu_layers=N",
// and "engine.cpu_moe_layers=M" when it has CPU experts), and the placement applied to an engine.
std::vector<std::string> placement_sets(const Placement& placement, int layers);
void apply_placement(const Placement& placement, EngineSetup& engine);

// The GPU layers per card that let a pipeline hold the scenario's placement: empty when the
// default split (by free memory) fits; else each card filled with as many layers as it holds,
// in llama.cpp's --fit order (common/fit.cpp: a dense model's cards from the last, an MoE's with
// CPU experts from the first), the remaining card taking the rest; nullopt
// when no split fits, or the scenario sets engine.layer_split itself, or it is not a pipeline.
std::optional<std::vector<int>> fitting_split(Scenario scenario);

// The placements worth simulating that fit: every layer on the GPUs; else, for an MoE model,
// every layer on the GPUs with the fewest layers' experts on the CPU; every layer on the GPUs
// but the LM head (builds whose -ngl counts the output last); and the most layers on the GPUs
// with the rest on the CPU (with the head on the GPUs in builds that offload it first). In that
// order; empty when none fits. Over a pipeline, each with the layer split that fits it
// (fitting_split).
std::vector<Placement> fitting_placements(Scenario scenario);
// Why fitting_placements() found none: the host's RAM when even every layer on the CPU exceeds
// it (then neither the cards nor the RAM hold the model), else the cards.
std::string why_nothing_fits(const Scenario& scenario);

}  // namespace vramsim::sim::engines
