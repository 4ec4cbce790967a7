#include "sim/link_probe.h"

#include <simgrid/s4u.hpp>

#include <string>

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

std::vector<double> simulate_host_to_device_copies(const hw::LinkSpec& link, double bytes, int concurrent) {
  int argc = 2;
  char name[] = "vramsim";
  char quiet[] = "--log=root.thresh:warning";
  char* argv[] = {name, quiet, nullptr};
  s4u::Engine engine(&argc, argv);
  // Exact size/bandwidth + latency sharing (see DESIGN: the default model distorts PCIe).
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
  engine.set_config("network/TCP-gamma:0");
  engine.set_config("network/latency-factor:1");
  engine.set_config("network/bandwidth-factor:1");

  auto* zone = s4u::create_full_zone("node");
  s4u::Host* host = zone->create_host("host", 1e9);
  s4u::Host* gpu = zone->create_host("gpu", 1e9);
  // One direction of the full-duplex link (split-duplex: each direction is its own resource).
  s4u::Link* h2d = zone->create_split_duplex_link("pcie", link.typical_bandwidth)->set_latency(link.latency_s);
  zone->add_route(host->get_netpoint(), gpu->get_netpoint(), nullptr, nullptr,
                  {s4u::LinkInRoute(h2d, s4u::LinkInRoute::Direction::UP)}, true);
  zone->seal();

  std::vector<double> done(static_cast<std::size_t>(concurrent), 0.0);
  for (int i = 0; i < concurrent; ++i) {
    s4u::Actor::create("copy" + std::to_string(i), host, [&, i] {
      s4u::Comm::sendto(host, gpu, static_cast<std::uint64_t>(bytes));
      done[static_cast<std::size_t>(i)] = s4u::Engine::get_clock();
    });
  }
  engine.run();
  return done;
}

}  // namespace vramsim::sim
