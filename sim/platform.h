// The SimGrid side shared by every simulation: an engine configured for exact link sharing and
// the host + GPU platform joined by the host link.
//
// Exactness (DESIGN: SimGrid's default network model distorts a PCIe-like link): with
// network/model:CM02, no cross-traffic, no TCP gamma window and unit latency/bandwidth
// factors, one transfer takes latency + bytes / bandwidth and concurrent transfers share the
// bandwidth max-min fairly.
#pragma once

#include <simgrid/s4u.hpp>

#include <memory>

namespace vramsim::sim {

// The process's one engine (SimGrid allows one per process), quiet and exact.
std::unique_ptr<simgrid::s4u::Engine> make_exact_engine();

struct Platform {
  simgrid::s4u::Host* host = nullptr;  // the CPU side
  simgrid::s4u::Host* gpu = nullptr;
  simgrid::s4u::Link* link = nullptr;  // host -> GPU direction of a split-duplex link
};

// The GPU runs at `gpu_speed` flops/s; the host has `host_cores` cores of `host_speed` each; the
// link has `bandwidth` bytes/s per direction and `latency` s.
Platform build_host_gpu_platform(double gpu_speed, double host_speed, int host_cores, double bandwidth, double latency);

}  // namespace vramsim::sim
