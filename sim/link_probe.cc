#include "sim/link_probe.h"

#include <simgrid/s4u.hpp>

#include "sim/platform.h"

#include <string>

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

std::vector<double> simulate_host_to_device_copies(const hw::LinkSpec& link, double bytes, int concurrent) {
  auto engine = make_exact_engine();
  const Platform p = build_host_gpu_platform(1e9, 1e9, 1, link.typical_bandwidth, link.latency_s);
  s4u::Host* host = p.host;
  s4u::Host* gpu = p.gpu;

  std::vector<double> done(static_cast<std::size_t>(concurrent), 0.0);
  for (int i = 0; i < concurrent; ++i) {
    s4u::Actor::create("copy" + std::to_string(i), host, [&, i] {
      s4u::Comm::sendto(host, gpu, static_cast<std::uint64_t>(bytes));
      done[static_cast<std::size_t>(i)] = s4u::Engine::get_clock();
    });
  }
  engine->run();
  return done;
}

}  // namespace vramsim::sim
