// The power model's per-card figures (sim/power.h) against their closed forms.
#include <catch2/catch.hpp>

#include "sim/power.h"

TEST_CASE("power: energy per byte is each card's (TDP - idle) / peak bandwidth unless the engine sets it", "[power]") {
  vramsim::hw::GpuSpec h100;
  h100.tdp_watts = 700;
  h100.idle_watts = 70;
  h100.memory_bandwidth = 3350e9;
  vramsim::sim::Scenario s;
  CHECK(vramsim::sim::energy_per_byte(h100, s) == Approx(630.0 / 3350e9));  // 188 pJ/B
  s.engine.physics.energy_per_byte = 304e-12;
  CHECK(vramsim::sim::energy_per_byte(h100, s) == Approx(304e-12));
}
