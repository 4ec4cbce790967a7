// Transfers and collectives between cards on each topology, against their closed forms
// (sim/fabric.h). Each TEST_CASE runs in its own process (one SimGrid engine per process).
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <vector>

#include "sim/fabric.h"

using namespace vramsim::sim;
namespace s4u = simgrid::s4u;

namespace {

constexpr double kMB = 1e6;
constexpr double kX16 = 26e9, kX4 = 6.5e9, kPcieLat = 2e-6;  // Gen4 x16 / x4 typical (configs/links)
constexpr double kNv = 50e9, kNvLat = 2e-6;                  // RTX 3090 NVLink bridge

PlatformSpec cards(std::vector<double> bandwidths) {
  PlatformSpec spec;
  spec.gpu_speed = spec.host_speed = 1e9;
  for (std::size_t c = 0; c < bandwidths.size(); ++c)
    spec.card_links.push_back(LinkParams{"pcie" + std::to_string(c), bandwidths[c], kPcieLat});
  return spec;
}

// Runs `body` as an actor on the built platform; returns the times `body` recorded.
std::vector<double> measure(const PlatformSpec& spec, const std::function<void(Fabric&, std::vector<double>&)>& body) {
  auto engine = make_exact_engine();
  const Platform p = build_platform(spec);
  Fabric fabric(p, spec.pcie_switch.has_value(), spec.gpu_link.has_value());
  std::vector<double> times;
  s4u::Actor::create("probe", p.host, [&] { body(fabric, times); });
  engine->run();
  return times;
}

// Seconds taken by `what`, run now in the calling actor.
double timed(const std::function<void()>& what) {
  const double t0 = s4u::Engine::get_clock();
  what();
  return s4u::Engine::get_clock() - t0;
}

}  // namespace

TEST_CASE("GeForce cards without peer-to-peer: copies staged through host memory", "[sim][fabric]") {
  const double b = 16 * kMB;
  auto t = measure(cards({kX16, kX4}), [&](Fabric& f, std::vector<double>& out) {
    out.push_back(timed([&] { f.host_to_card(1, b); }));
    out.push_back(timed([&] { f.card_to_card(0, 1, b); }));
    out.push_back(timed([&] { f.all_reduce(b); }));
  });
  CHECK(t[0] == Approx(kPcieLat + b / kX4).epsilon(1e-9));
  // Card 0 -> host over x16 and host -> card 1 over x4, pipelined: the slower hop sets the rate.
  CHECK(t[1] == Approx(kPcieLat + b / kX4).epsilon(1e-9));
  // Ring over 2 cards: 2 steps, each both cards' halves staged (the x4 hop sets the pace).
  CHECK(t[2] == Approx(2 * (kPcieLat + b / 2 / kX4 + kPcieLat + b / 2 / kX4)).epsilon(1e-9));
}

TEST_CASE("a staged copy between cards waits the driver's fallback latency, once for copies at once", "[sim][fabric]") {
  const double b = 16 * kMB, staged = 15e-6;  // configs/links: p2pBandwidthLatencyTest's P2P=Disabled latency
  auto t = measure(cards({kX16, kX16, kX16}), [&](Fabric& f, std::vector<double>& out) {
    f.set_staged_peer_latency({staged, staged, staged}, {kPcieLat, kPcieLat, kPcieLat});
    out.push_back(timed([&] { f.card_to_card(0, 1, b); }));
    out.push_back(timed([&] { f.card_copies({{0, 1}, {0, 2}}, b); }));  // card 0's link carries both
    out.push_back(timed([&] { f.card_copies({{0, 1}}, b, false); }));   // counted only
    out.push_back(timed([&] { f.all_reduce(b); }));                      // NCCL's own staging: no fallback
  });
  // The fixed cost replaces the DMA copies' latency (staged - latency more); the two hops run at once.
  CHECK(t[0] == Approx(staged + b / kX16).epsilon(1e-9));
  // Card 0's link carries both first hops (2b) while the other links take theirs.
  CHECK(t[1] == Approx(staged + 2 * b / kX16).epsilon(1e-9));
  CHECK(t[2] == 0.0);
  CHECK(t[3] == Approx(4 * (kPcieLat + b / 3 / kX16 + kPcieLat + b / 3 / kX16)).epsilon(1e-7));
}

TEST_CASE("a staged copy between links of different latencies: the hops at once, the fixed cost on top", "[sim][fabric]") {
  const double b = 16 * kMB, staged = 15e-6, slow = 5e-6;
  PlatformSpec spec = cards({kX16, kX4});
  spec.card_links[1].latency = slow;
  auto t = measure(spec, [&](Fabric& f, std::vector<double>& out) {
    f.set_staged_peer_latency({staged, staged}, {kPcieLat, slow});
    out.push_back(timed([&] { f.card_to_card(0, 1, b); }));
  });
  // max(S - max(latencies), 0) + max(latency_a + B / link_a, latency_b + B / link_b)
  CHECK(t[0] == Approx((staged - slow) + std::max(kPcieLat + b / kX16, slow + b / kX4)).epsilon(1e-9));
}

TEST_CASE("peer-to-peer over PCIe crosses both cards' links, the slower one sets the rate", "[sim][fabric]") {
  PlatformSpec spec = cards({kX16, kX4});
  spec.peer_to_peer = true;
  const double b = 16 * kMB;
  auto t = measure(spec, [&](Fabric& f, std::vector<double>& out) {
    f.set_staged_peer_latency({15e-6, 15e-6}, {kPcieLat, kPcieLat});  // a direct route stages nothing
    out.push_back(timed([&] { f.card_to_card(0, 1, b); }));
    out.push_back(timed([&] { f.card_to_card(1, 0, b); }));
  });
  CHECK(t[0] == Approx(2 * kPcieLat + b / kX4).epsilon(1e-9));
  CHECK(t[1] == Approx(2 * kPcieLat + b / kX4).epsilon(1e-9));
}

TEST_CASE("an NVLink bridge carries card-to-card copies and all-reduces", "[sim][fabric]") {
  PlatformSpec spec = cards({kX16, kX16});
  spec.gpu_link = LinkParams{"nvlink", kNv, kNvLat};
  const double b = 16 * kMB;
  auto t = measure(spec, [&](Fabric& f, std::vector<double>& out) {
    out.push_back(timed([&] { f.card_to_card(0, 1, b); }));
    out.push_back(timed([&] { f.all_reduce(b); }));
    out.push_back(f.gpu_link_busiest());
    out.push_back(f.card_link_down(0) + f.card_link_up(0));
    f.count_all_reduces(b, 3);  // three more whose time is known: bytes only
    out.push_back(f.gpu_link_busiest());
  });
  CHECK(t[0] == Approx(kNvLat + b / kNv).epsilon(1e-9));
  // Both directions of the bridge at once (split duplex): each ring step is one chunk's time.
  CHECK(t[1] == Approx(2 * (kNvLat + b / 2 / kNv)).epsilon(1e-9));
  // Busier direction, 0 -> 1: the copy (B) and the all-reduce's two ring steps of B/2 each.
  CHECK(t[2] == Approx(b + 2 * b / 2));
  CHECK(t[3] == 0);
  CHECK(t[4] == Approx(t[2] + 3 * b));
}

TEST_CASE("a 4-card ring all-reduce takes 2(N-1) steps of B/N each", "[sim][fabric]") {
  PlatformSpec spec = cards({kX16, kX16, kX16, kX16});
  spec.gpu_link = LinkParams{"nvlink", kNv, kNvLat};
  const double b = 64 * kMB;
  auto t = measure(spec, [&](Fabric& f, std::vector<double>& out) { out.push_back(timed([&] { f.all_reduce(b); })); });
  CHECK(t[0] == Approx(6 * (kNvLat + b / 4 / kNv)).epsilon(1e-9));
}

TEST_CASE("NVSwitch ports: copies into one card share its port, disjoint pairs do not", "[sim][fabric]") {
  PlatformSpec spec = cards({kX16, kX16, kX16, kX16});
  spec.gpu_link = LinkParams{"nvlink", kNv, kNvLat};
  spec.gpu_link_switch = true;
  const double b = 16 * kMB;
  auto t = measure(spec, [&](Fabric& f, std::vector<double>& out) {
    out.push_back(timed([&] { f.card_to_card(0, 1, b); }));
    // 0 -> 2 and 1 -> 2 at once: card 2's port (down) carries both, each at half its rate.
    out.push_back(timed([&] {
      auto other = s4u::Actor::create("other", s4u::this_actor::get_host(), [&] { f.card_to_card(1, 2, b); });
      f.card_to_card(0, 2, b);
      other->join();
    }));
    // 0 -> 1 and 2 -> 3 at once: four different port directions, full rate each.
    out.push_back(timed([&] {
      auto other = s4u::Actor::create("other2", s4u::this_actor::get_host(), [&] { f.card_to_card(2, 3, b); });
      f.card_to_card(0, 1, b);
      other->join();
    }));
    out.push_back(f.gpu_link_busiest());
  });
  CHECK(t[0] == Approx(kNvLat + b / kNv).epsilon(1e-9));  // half the latency on each port
  CHECK(t[1] == Approx(kNvLat + 2 * b / kNv).epsilon(1e-6));
  CHECK(t[2] == Approx(kNvLat + b / kNv).epsilon(1e-6));
  CHECK(t[3] == Approx(3 * b));  // card 0's port up: 0->1 twice and 0->2; card 2's down: 2 copies
}

TEST_CASE("cards behind a PCIe switch share its uplink to the host", "[sim][fabric]") {
  PlatformSpec spec = cards({kX16, kX16});
  spec.pcie_switch = LinkParams{"switch", kX16, kPcieLat};
  const double b = 16 * kMB;
  auto t = measure(spec, [&](Fabric& f, std::vector<double>& out) {
    out.push_back(timed([&] { f.host_to_card(0, b); }));
    // Both cards at once: the uplink is shared, each gets half of it.
    out.push_back(timed([&] {
      auto other = s4u::Actor::create("other", s4u::this_actor::get_host(), [&] { f.host_to_card(1, b); });
      f.host_to_card(0, b);
      other->join();
    }));
    out.push_back(f.switch_down());
    out.push_back(f.switch_up());
  });
  CHECK(t[0] == Approx(2 * kPcieLat + b / kX16).epsilon(1e-9));
  CHECK(t[1] == Approx(2 * kPcieLat + 2 * b / kX16).epsilon(1e-9));
  CHECK(t[2] == Approx(3 * b));  // host to card: all down the uplink
  CHECK(t[3] == 0);
}
