// The SimGrid side of vramsim (the only part of the tree that includes SimGrid headers).
//
// For now: a platform of one host and one GPU joined by a host link, configured so that a
// transfer costs exactly latency + bytes / bandwidth and concurrent transfers share the link
// max-min fairly (network/model:CM02, no TCP gamma window, no cross-traffic). The event
// simulation of decode (`vramsim run`) builds on this platform.
//
// SimGrid allows one engine per process: each function here that runs a simulation must be
// called at most once per process (tests run in their own processes via ctest).
#pragma once

#include <vector>

#include "hw/link.h"

namespace vramsim::sim {

// Simulates `concurrent` host->device copies of `bytes` each, started together on `link`
// at its typical bandwidth, and returns each copy's completion time in seconds.
std::vector<double> simulate_host_to_device_copies(const hw::LinkSpec& link, double bytes, int concurrent);

}  // namespace vramsim::sim
