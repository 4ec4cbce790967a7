// The power model's per-card figures (sim/power.h) against their closed forms.
#include <catch2/catch.hpp>

#include "core/config_reader.h"
#include "hw/host.h"
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

// The host's CPU packages (hw::HostSpec cpu.power): idle + (full_load - idle) x the share of the
// run the host computes, beside the boards; none without the figures or on a unified part.
TEST_CASE("power: the host CPU's power follows the share of the run it computes", "[power]") {
  vramsim::sim::Scenario s;
  s.gpu.spec.tdp_watts = 450;
  s.gpu.spec.idle_watts = 20;
  s.gpu.spec.memory_bandwidth = 1e12;
  s.cards.resize(1);
  s.cards[0].gpu = s.gpu;
  s.host.cpu_full_load_watts = 142;
  s.host.cpu_idle_watts = 20;
  vramsim::sim::RunResult r;
  r.makespan_s = 10;
  r.completed = 1;
  r.generated_tokens = 100;
  r.decode.host_busy = 3;  // the host computed 3 s of the 10
  r.prefill.host_busy = 1;
  const auto p = vramsim::sim::summarise_power(s, r);
  CHECK(p.host_busy_share == Approx(0.4));
  REQUIRE(p.host_power_w);
  CHECK(*p.host_power_w == Approx(20 + 0.4 * 122));
  REQUIRE(p.j_per_token_with_host);
  CHECK(*p.j_per_token_with_host == Approx((p.avg_power_w + *p.host_power_w) * 10 / 100));
  r.decode.host_busy = 30;  // overlapping slots: at most the whole run
  CHECK(vramsim::sim::summarise_power(s, r).host_busy_share == Approx(1.0));
  s.host.cpu_full_load_watts.reset();
  CHECK_FALSE(vramsim::sim::summarise_power(s, r).host_power_w);
}

TEST_CASE("power: a host's cpu.power is checked at its key", "[power][errors]") {
  auto host = [](const std::string& power) {
    auto n = vramsim::config::parse_yaml("name: h\ncpu: {sockets: 1, cores: 8, threads: 16, simd: avx2, power: " + power +
                                             "}\nmemory: {capacity: 64GiB, channels: 2, bandwidth: 51.2GB/s}\nnuma_nodes: 1\n",
                                         "host-test.yaml");
    REQUIRE(n);
    return vramsim::hw::decode_host(*n, "hardware.host");
  };
  const auto h = host("{full_load: 142W, idle: 20W}");
  CHECK(h.cpu_full_load_watts == std::optional<double>(142));
  CHECK(h.cpu_idle_watts == std::optional<double>(20));
  CHECK_THROWS_WITH(host("{full_load: 142kW, idle: 20W}"), Catch::Contains("cpu.power.full_load") && Catch::Contains("600 W a socket"));
  CHECK_THROWS_WITH(host("{full_load: 142W, idle: 150W}"), Catch::Contains("must be below the full-load power"));
  CHECK_THROWS_WITH(host("{full_load: 142W}"), Catch::Contains("cpu.power.idle"));
  CHECK_THROWS_WITH(host("{full_load: 142W, idle: 20W, peak: 200W}"), Catch::Contains("peak"));
}
