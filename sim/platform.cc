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

namespace {

using Direction = s4u::LinkInRoute::Direction;

// Split-duplex: each direction is its own resource, so both run at full rate at once. UP is
// the direction from the first end named to the second.
s4u::SplitDuplexLink* duplex(s4u::NetZone* zone, const LinkParams& p) {
  auto* link = zone->create_split_duplex_link(p.name, p.bandwidth);
  link->set_latency(p.latency);
  return link;
}

}  // namespace

Platform build_platform(const PlatformSpec& spec) {
  Platform p;
  auto* zone = s4u::create_full_zone("node");
  p.host = zone->create_host("host", spec.host_speed)->set_core_count(std::max(1, spec.host_cores));
  const std::size_t n = spec.card_links.size();
  for (std::size_t c = 0; c < n; ++c) p.gpus.push_back(zone->create_host("gpu" + std::to_string(c), spec.gpu_speed));
  p.gpu = p.gpus.front();

  // Card links: "up" is host (or switch) -> card.
  std::vector<s4u::SplitDuplexLink*> card(n);
  for (std::size_t c = 0; c < n; ++c) card[c] = duplex(zone, spec.card_links[c]);
  s4u::SplitDuplexLink* uplink = spec.pcie_switch ? duplex(zone, *spec.pcie_switch) : nullptr;  // host -> switch is up
  auto host_to = [&](std::size_t c) {
    std::vector<s4u::LinkInRoute> r;
    if (uplink) r.emplace_back(uplink, Direction::UP);
    r.emplace_back(card[c], Direction::UP);
    return r;
  };
  auto to_host = [&](std::size_t c) {
    std::vector<s4u::LinkInRoute> r{s4u::LinkInRoute(card[c], Direction::DOWN)};
    if (uplink) r.emplace_back(uplink, Direction::DOWN);
    return r;
  };
  for (std::size_t c = 0; c < n; ++c) {
    zone->add_route(p.host->get_netpoint(), p.gpus[c]->get_netpoint(), nullptr, nullptr, host_to(c), false);
    zone->add_route(p.gpus[c]->get_netpoint(), p.host->get_netpoint(), nullptr, nullptr, to_host(c), false);
  }
  // Card to card: over the card-to-card link, else peer-to-peer through the switch or the root
  // complex (both cards' links, not the uplink), else no route (staged through the host).
  p.direct_peer = spec.gpu_link.has_value() || spec.peer_to_peer;
  p.gpu_switch_ports = spec.gpu_link.has_value() && spec.gpu_link_switch;
  std::vector<s4u::SplitDuplexLink*> port(p.gpu_switch_ports ? n : 0);  // card -> switch is up
  for (std::size_t c = 0; c < port.size(); ++c) {
    LinkParams params = *spec.gpu_link;
    params.name.append("-port").append(std::to_string(c));
    params.latency /= 2;
    port[c] = duplex(zone, params);
  }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      std::vector<s4u::LinkInRoute> ab, ba;
      if (p.gpu_switch_ports) {
        ab = {s4u::LinkInRoute(port[a], Direction::UP), s4u::LinkInRoute(port[b], Direction::DOWN)};
        ba = {s4u::LinkInRoute(port[b], Direction::UP), s4u::LinkInRoute(port[a], Direction::DOWN)};
      } else if (spec.gpu_link) {
        LinkParams params = *spec.gpu_link;
        // Appended piecewise: GCC 12's -O3 flags `"-" + std::string&&` with a false -Wrestrict.
        params.name.append("-").append(std::to_string(a)).append("-").append(std::to_string(b));
        auto* l = duplex(zone, params);
        ab = {s4u::LinkInRoute(l, Direction::UP)};
        ba = {s4u::LinkInRoute(l, Direction::DOWN)};
      } else if (spec.peer_to_peer) {
        ab = {s4u::LinkInRoute(card[a], Direction::DOWN), s4u::LinkInRoute(card[b], Direction::UP)};
        ba = {s4u::LinkInRoute(card[b], Direction::DOWN), s4u::LinkInRoute(card[a], Direction::UP)};
      } else {
        continue;
      }
      zone->add_route(p.gpus[a]->get_netpoint(), p.gpus[b]->get_netpoint(), nullptr, nullptr, ab, false);
      zone->add_route(p.gpus[b]->get_netpoint(), p.gpus[a]->get_netpoint(), nullptr, nullptr, ba, false);
    }
  zone->seal();
  p.link = card.front()->get_link_up();
  return p;
}

Platform build_host_gpu_platform(double gpu_speed, double host_speed, int host_cores, double bandwidth,
                                 double latency) {
  PlatformSpec spec;
  spec.gpu_speed = gpu_speed;
  spec.host_speed = host_speed;
  spec.host_cores = host_cores;
  spec.card_links.push_back(LinkParams{"pcie", bandwidth, latency});
  return build_platform(spec);
}

}  // namespace vramsim::sim
