// SimGrid's link model, configured as vramsim configures it, is exact: one copy takes
// latency + bytes / bandwidth, and concurrent copies share the bandwidth fairly.
// Each TEST_CASE runs in its own process (one SimGrid engine per process).
#include <catch2/catch.hpp>

#include "sim/link_probe.h"

using namespace vramsim;

namespace {
hw::LinkSpec gen3_x16() {
  hw::LinkSpec l;
  l.name = "pcie-gen3-x16";
  l.typical_bandwidth = 13.9e9;
  l.nominal_bandwidth = 15.75e9;
  l.latency_s = 2e-6;
  return l;
}
}  // namespace

TEST_CASE("one expert-sized copy costs latency + bytes / bandwidth", "[sim][link]") {
  const double bytes = 1.318 * 1024 * 1024;  // one expert of the case study
  auto done = sim::simulate_host_to_device_copies(gen3_x16(), bytes, 1);
  REQUIRE(done.size() == 1);
  CHECK(done[0] == Approx(2e-6 + bytes / 13.9e9).epsilon(1e-6));
}

TEST_CASE("four concurrent copies share the link exactly", "[sim][link]") {
  const double bytes = 1.318 * 1024 * 1024;
  auto done = sim::simulate_host_to_device_copies(gen3_x16(), bytes, 4);
  REQUIRE(done.size() == 4);
  for (double t : done) CHECK(t == Approx(2e-6 + 4 * bytes / 13.9e9).epsilon(1e-6));
}
