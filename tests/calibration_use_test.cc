// A GPU description that references a calibration (hw/calibration.h): the simulation uses the
// measured link rate, latency and zero-copy efficiency.
#include <catch2/catch.hpp>

#include <string>

#include "scenario_runs.h"

using vramsim::test::data_path;
using vramsim::test::json_number;
using vramsim::test::run_json;
using vramsim::test::run_vramsim;

namespace {
const std::string kShared = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
const std::string kCalibrated = " --set hardware.gpu.calibration=" + data_path("calibration/test-card.yaml") +
                                " --set workload.requests=20";
}  // namespace

TEST_CASE("a calibrated card's measured copy rate stands for the link's, unless the scenario measured one",
          "[calibration]") {
  // The scenario's measured_h2d (13.9 GB/s) wins over the calibration's 12.8 GB/s.
  const std::string scenario_rate = run_json(kShared, kCalibrated);
  CHECK(json_number(scenario_rate, "bandwidth_gb_s", "links") == Approx(13.9));
  // Without it, the calibration's.
  const std::string calibrated = run_json(kShared, kCalibrated + " --set hardware.link.measured_h2d=");
  CHECK(json_number(calibrated, "bandwidth_gb_s", "links") == Approx(12.8));
  CHECK_THAT(calibrated, Catch::Contains("\"link_rate_source\": \"" + data_path("calibration/test-card.yaml") + "\""));
  // The measured zero-copy efficiency (0.65, below the engine's 0.8) slows the overflow reads.
  const std::string plain = run_json(kShared, " --set workload.requests=20 --set hardware.gpu.vram_used_by_others=24000MiB");
  const std::string slow = run_json(kShared, kCalibrated + " --set hardware.gpu.vram_used_by_others=24000MiB");
  CHECK(json_number(slow, "p50", "decode_tok_s") < json_number(plain, "p50", "decode_tok_s"));
}

TEST_CASE("a malformed calibration names its file and key", "[calibration][errors]") {
  auto r = run_vramsim("run " + kShared + " --set hardware.gpu.calibration=" + data_path("calibration/bad-card.yaml"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("bad-card.yaml:3:"));
  CHECK_THAT(r.err, Catch::Contains("pcie.h2d.bandwidth: expected a positive measured figure"));
  auto missing = run_vramsim("run " + kShared + " --set hardware.gpu.calibration=/nonexistent/card.yaml");
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains("cannot read the calibration /nonexistent/card.yaml"));
}
