// The SimGrid side shared by every simulation: an engine configured for exact link sharing and
// the machine's platform: the host (CPU and RAM), the cards, each card's PCIe link to the host
// (optionally through a PCIe switch whose upstream link the cards share) and an optional
// card-to-card link (NVLink or a bridge) between every pair.
//
// Exactness (DESIGN: SimGrid's default network model distorts a PCIe-like link): with
// network/model:CM02, no cross-traffic, no TCP gamma window and unit latency/bandwidth
// factors, one transfer takes the sum of its route's latencies + bytes / the route's slowest
// bandwidth, and concurrent transfers share every link max-min fairly.
#pragma once

#include <simgrid/s4u.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vramsim::sim {

// The process's one engine (SimGrid allows one per process), quiet and exact.
std::unique_ptr<simgrid::s4u::Engine> make_exact_engine();

// One direction of a full-duplex link: bytes per second, seconds.
struct LinkParams {
  std::string name;
  double bandwidth = 0;
  double latency = 0;
};

struct PlatformSpec {
  double gpu_speed = 0;                 // flops/s of each card's host (the engine's time unit)
  double host_speed = 0;                // flops/s of one host core
  int host_cores = 1;
  std::vector<LinkParams> card_links;   // one per card: card <-> host (or <-> switch)
  std::optional<LinkParams> pcie_switch;  // switch <-> host, shared by every card
  // Card <-> card NVLink: a bridge (one link per pair; a bridge joins two cards), or with
  // `gpu_link_switch` one port per card into an NVSwitch (a copy crosses the sender's port up
  // and the receiver's port down; each port carries half of `latency`).
  std::optional<LinkParams> gpu_link;
  bool gpu_link_switch = false;
  bool peer_to_peer = false;            // cards copy to each other directly over PCIe
};

struct Platform {
  simgrid::s4u::Host* host = nullptr;   // the CPU side
  simgrid::s4u::Host* gpu = nullptr;    // the first card
  simgrid::s4u::Link* link = nullptr;   // the first card's link, host -> card direction
  std::vector<simgrid::s4u::Host*> gpus;
  // Whether card-to-card copies have a direct route (NVLink, or PCIe peer-to-peer); without
  // one they are staged through host memory (two copies: card -> host, host -> card).
  bool direct_peer = false;
  bool gpu_switch_ports = false;  // the card-to-card link is one NVSwitch port per card
};

Platform build_platform(const PlatformSpec& spec);

// One card: the GPU runs at `gpu_speed` flops/s; the host has `host_cores` cores of
// `host_speed` each; the link has `bandwidth` bytes/s per direction and `latency` s.
Platform build_host_gpu_platform(double gpu_speed, double host_speed, int host_cores, double bandwidth, double latency);

}  // namespace vramsim::sim
