// Decoding of a scenario's `engine:` section: the engine preset it refines (configs/engines/),
// its family (sim/engines/, which decodes the family's own sections: an expert cache, a paged
// KV pool), its placement (llama.cpp's -ngl, --n-cpu-moe, -ts), its speculative decoding, and
// its physics (EnginePhysics: efficiencies, fixed costs, the expert path). Throws config::ConfigError at the offending key (file:line:col).
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

// llama.cpp's flags for the scenario's placement, e.g. "-ngl 39", "-ngl 99 --n-cpu-moe 12".
std::string describe_placement(const Scenario& s);

}  // namespace vramsim::sim
