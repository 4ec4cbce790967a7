// Cache sizing: the case study's arithmetic.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/vram_plan.h"
#include "tests/sim_fixture.h"

using namespace vramsim;
using namespace vramsim::sim;

TEST_CASE("slots from the measured free VRAM: 5,784 on the shared card", "[vram]") {
  // The engine's log: "8.31 GiB free, 700 MiB reserved (+184 MiB for the draft head) -> 5784 slots".
  VramPlan p = plan_vram(test::case_study("shared", {"hardware.gpu.free_vram=8.31GiB"}));
  CHECK(p.free_measured);
  CHECK(p.slot_bytes == 1382400.0);  // one expert (1,382,023 B) rounded up to 512 B
  CHECK(p.slots == 5784);
  CHECK(p.slots == static_cast<std::int64_t>(std::floor((8.31 * units::kGiB - 884 * units::kMiB) / 1382400.0)));
}

TEST_CASE("slots derived from the card: within 1% of the report on both runs", "[vram]") {
  VramPlan shared = plan_vram(test::case_study("shared"));
  VramPlan exclusive = plan_vram(test::case_study("exclusive"));
  CHECK(shared.card_total == 32607 * units::kMiB);
  CHECK(shared.others == 18106 * units::kMiB);
  CHECK(shared.fixed == Approx(exclusive.fixed));  // other tenants do not change the engine's own needs
  CHECK(std::fabs(static_cast<double>(shared.slots) / 5784.0 - 1) < 0.01);
  CHECK(std::fabs(static_cast<double>(exclusive.slots) / 19530.0 - 1) < 0.01);
  CHECK(shared.coverage() == Approx(0.235).margin(0.003));
  CHECK(exclusive.coverage() == Approx(0.795).margin(0.003));
}

TEST_CASE("a cache larger than the free VRAM is refused", "[vram]") {
  CHECK_THROWS_WITH(plan_vram(test::case_study("shared", {"engine.expert_cache.size=7000"})),
                    Catch::Contains("engine.expert_cache.size: 7000 slots need"));
  CHECK(plan_vram(test::case_study("shared", {"engine.expert_cache.size=5000"})).slots == 5000);
}

TEST_CASE("fixed allocations that do not fit are refused with the arithmetic", "[vram]") {
  CHECK_THROWS_WITH(plan_vram(test::case_study("shared", {"hardware.gpu.vram_used_by_others=30000MiB"})),
                    Catch::Contains("the engine's fixed allocations do not fit"));
}
