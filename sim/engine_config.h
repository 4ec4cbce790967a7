// Decoding of a scenario's `engine:` section: the engine preset it refines (configs/engines/),
// its placement (llama.cpp's -ngl, --n-cpu-moe, -ts), its expert cache, its batching and paged
// KV pool, its speculative decoding, and its physics (EnginePhysics: efficiencies, fixed costs,
// the expert path). Throws config::ConfigError at the offending key (file:line:col).
#pragma once

#include <string>

#include "core/catalogue.h"
#include "core/config_reader.h"
#include "sim/scenario.h"

namespace vramsim::sim {

// `ref`: the scenario's engine section (null: the expert-cache preset as it is); `cards`: the
// scenario's card count.
EngineSetup decode_engine(const config::Node& ref, const config::Catalogue& catalogue, const workloads::FormatTables& formats,
                          const workloads::ModelSpec& model, int cards);

// The engine's physics (engine_physics.cc). `moe`: the model routes experts; `cache`: the
// engine has an expert cache; `pcie_reads`: its misses may be read over PCIe.
EnginePhysics decode_physics(config::MapReader& e, bool moe, bool cache, bool pcie_reads);

// Continuous batching (slot_scheduling: batched) and the paged KV pool (kv_pool), and what they
// do not combine with (engine_physics.cc). REQUIRES: the placement and the cache decoded in `s`.
void decode_batching(config::MapReader& e, EngineSetup& s, int cards, int layers);

// llama.cpp's flags for the scenario's placement, e.g. "-ngl 39", "-ngl 99 --n-cpu-moe 12".
std::string describe_placement(const Scenario& s);

}  // namespace vramsim::sim
