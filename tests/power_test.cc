// The power model's per-card figures (sim/power.h) against their closed forms.
#include <catch2/catch.hpp>

#include "sim/power.h"

TEST_CASE("power: energy per byte is each card's (TDP - idle - wait) / peak bandwidth unless the engine sets it", "[power]") {
  vramsim::hw::GpuSpec h100;
  h100.tdp_watts = 700;
  h100.idle_watts = 70;
  h100.memory_bandwidth = 3350e9;
  vramsim::sim::Scenario s;
  s.engine.physics.wait_power_share = 0.265;
  CHECK(vramsim::sim::wait_power(h100, s) == Approx(0.265 * 630));                          // 167 W
  CHECK(vramsim::sim::energy_per_byte(h100, s) == Approx((630.0 - 0.265 * 630) / 3350e9));  // 138 pJ/B
  // A resident kernel streaming at full bandwidth draws exactly the TDP.
  CHECK(h100.idle_watts + vramsim::sim::wait_power(h100, s) + vramsim::sim::energy_per_byte(h100, s) * 3350e9 ==
        Approx(700));
  s.engine.physics.wait_power_share = 0;
  CHECK(vramsim::sim::energy_per_byte(h100, s) == Approx(630.0 / 3350e9));
  s.engine.physics.energy_per_byte = 304e-12;
  CHECK(vramsim::sim::energy_per_byte(h100, s) == Approx(304e-12));
}
