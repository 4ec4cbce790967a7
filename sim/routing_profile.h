// An engine's measured expert profile: how often each (layer, expert) was routed.
//
// CSV with a header line "layer,expert,count" and one row per pair (any order; pairs that are
// missing count 0). Layers and experts are 0-based. Each layer's counts, ranked hottest first,
// become that layer's inclusion probabilities (sim/routing.h), so layers may differ in skew and
// the cache's hottest-first pre-fill gives the skewed layers more slots.
#pragma once

#include <string>

#include "core/result.h"
#include "sim/routing.h"

namespace vramsim::sim {

// Errors name the file and line: a malformed row, a layer or expert out of range, a negative
// count, a pair given twice, or a layer with fewer than top-k experts ever routed.
Result<LayerPopularity> load_routing_profile(const std::string& path, int layers, int experts, int top_k);

}  // namespace vramsim::sim
