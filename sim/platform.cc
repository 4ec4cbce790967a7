#include "sim/platform.h"

#include <algorithm>

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

std::unique_ptr<s4u::Engine> make_exact_engine() {
  // SimGrid's own chatter (configuration changes) stays out of the user's output.
  char name[] = "vramsim";
  char quiet[] = "--log=root.thresh:warning";
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer cannot follow SimGrid's ucontext stack switches (false stack overflows
  // when a daemon actor is unwound); actors as threads keep the sanitized build honest.
  char threads[] = "--cfg=contexts/factory:thread";
  int argc = 3;
  char* argv[] = {name, quiet, threads, nullptr};
#else
  int argc = 2;
  char* argv[] = {name, quiet, nullptr};
#endif
  auto engine = std::make_unique<s4u::Engine>(&argc, argv);
  engine->set_config("network/model:CM02");
  engine->set_config("network/crosstraffic:0");
  engine->set_config("network/TCP-gamma:0");
  engine->set_config("network/latency-factor:1");
  engine->set_config("network/bandwidth-factor:1");
  return engine;
}

Platform build_host_gpu_platform(double gpu_speed, double host_speed, int host_cores, double bandwidth,
                                 double latency) {
  Platform p;
  auto* zone = s4u::create_full_zone("node");
  p.host = zone->create_host("host", host_speed)->set_core_count(std::max(1, host_cores));
  p.gpu = zone->create_host("gpu", gpu_speed);
  // Split-duplex: each direction is its own resource, so both run at full rate at once.
  s4u::SplitDuplexLink* duplex = zone->create_split_duplex_link("pcie", bandwidth);
  duplex->set_latency(latency);
  zone->add_route(p.host->get_netpoint(), p.gpu->get_netpoint(), nullptr, nullptr,
                  {s4u::LinkInRoute(duplex, s4u::LinkInRoute::Direction::UP)}, true);
  zone->seal();
  p.link = duplex->get_link_up();
  return p;
}

}  // namespace vramsim::sim
