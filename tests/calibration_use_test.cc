// A GPU description that references a calibration (hw/calibration.h): the simulation uses the
// measured link rate, latency and zero-copy efficiency.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "calibrate/report.h"
#include "core/config_tree.h"
#include "hw/calibration.h"
#include "scenario_runs.h"
#include "tests/json_matchers.h"

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
  CHECK_THAT(calibrated, vramsim::test::HasMember("link_rate_source", "\"" + data_path("calibration/test-card.yaml") + "\""));
  // The run says what the calibration changed, in its summary and in the JSON.
  CHECK_THAT(scenario_rate, vramsim::test::HasMember("calibration", "\"" + data_path("calibration/test-card.yaml") + "\""));
  CHECK_THAT(vramsim::test::run_ok("run " + kShared + kCalibrated),
             Catch::Contains("calibration " + data_path("calibration/test-card.yaml") +
                             ": zero-copy efficiency 0.65 (its link rate unused: the scenario's measured_h2d wins)"));
  // A relative path on the command line is relative to the working directory.
  const std::string relative = std::filesystem::relative(data_path("calibration/test-card.yaml")).string();
  REQUIRE(relative.find('/') != std::string::npos);
  const std::string from_cwd = run_json(kShared, " --set workload.requests=20 --set hardware.link.measured_h2d= "
                                                 "--set hardware.gpu.calibration=" + relative);
  CHECK(json_number(from_cwd, "bandwidth_gb_s", "links") == Approx(12.8));
  // The measured zero-copy efficiency (0.65, below the engine's 0.8) slows the overflow reads.
  const std::string plain = run_json(kShared, " --set workload.requests=20 --set hardware.gpu.vram_used_by_others=24000MiB");
  const std::string slow = run_json(kShared, kCalibrated + " --set hardware.gpu.vram_used_by_others=24000MiB");
  CHECK(json_number(slow, "p50", "decode_tok_s") < json_number(plain, "p50", "decode_tok_s"));
}

TEST_CASE("a malformed calibration names its file and key", "[calibration][errors]") {
  auto r = run_vramsim("run " + kShared + " --set hardware.gpu.calibration=" + data_path("calibration/bad-card.yaml"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("bad-card.yaml:3:"));
  CHECK_THAT(r.err, Catch::Contains("pcie.h2d.bandwidth: expected a positive measured figure with its unit (e.g. 12.8GB/s)"));
  auto missing = run_vramsim("run " + kShared + " --set hardware.gpu.calibration=/nonexistent/card.yaml");
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains("cannot read the calibration /nonexistent/card.yaml"));
  // A misspelt figure is refused, not skipped (the link's typical rate would stand in for it).
  const auto typo = std::filesystem::temp_directory_path() / ("vramsim_typo_card_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(typo) << "name: typo\npcie:\n  h2d: { bandwith: 12.8GB/s }\n";
  auto misspelt = run_vramsim("run " + kShared + " --set hardware.gpu.calibration=" + typo.string());
  std::filesystem::remove(typo);
  CHECK(misspelt.status == 2);
  CHECK_THAT(misspelt.err, Catch::Contains(":3:") && Catch::Contains("pcie.h2d.bandwith: unknown key") &&
                               Catch::Contains("bandwidth"));
}

namespace {
// The calibration YAML vramsim-calibrate would write for these measurements (the figures the
// simulator reads; report.h decides latency and efficiency), read back by hw/calibration.cc.
vramsim::hw::CardCalibration written_then_read(const vramsim::calibrate::TransferFit& h2d, double zero_copy_Bps) {
  namespace vc = vramsim::calibrate;
  vc::Value summary = vc::Value::object();
  summary["name"] = vc::Value::string("edge-card");
  summary["pcie"]["h2d"]["bandwidth"] = vc::Value::string(vc::format_bandwidth(h2d.bandwidth_Bps));
  summary["pcie"]["h2d"]["latency"] = vc::latency_figure(h2d).value;
  summary["zero_copy"]["efficiency"] = vc::efficiency_figure(zero_copy_Bps, h2d.bandwidth_Bps).value;
  summary["vram"]["read_bandwidth"] = vc::Value::string(vc::format_bandwidth(1.6e12));
  auto tree = vramsim::config::parse_yaml(vc::to_yaml(summary), "edge-card.yaml");
  REQUIRE(tree);
  return vramsim::hw::decode_calibration(*tree, "edge-card.yaml");
}
}  // namespace

TEST_CASE("the simulator reads what the calibrator writes at the edges: t0 <= 0, zero-copy faster than copies",
          "[calibration][calibrate]") {
  namespace vc = vramsim::calibrate;
  vc::TransferFit fit;
  fit.ok = true;
  fit.bandwidth_Bps = 25e9;
  fit.r2 = 0.999;
  SECTION("a negative intercept is unmeasured, not 0ns") {
    fit.t0_s = -3e-7;
    const vc::YamlFigure lat = vc::latency_figure(fit);
    CHECK(lat.value.is_null());
    CHECK_THAT(lat.why, Catch::Contains("not a positive time"));
    const auto c = written_then_read(fit, 20e9);
    CHECK_FALSE(c.h2d_latency);
    CHECK(*c.h2d_bandwidth == Approx(25e9));
    CHECK(*c.zero_copy_efficiency == Approx(0.8));
  }
  SECTION("a zero intercept, and one too small to write, are unmeasured") {
    fit.t0_s = 0.0;
    CHECK_FALSE(written_then_read(fit, 20e9).h2d_latency);
    fit.t0_s = 1e-16;  // "0.0001ns" or "0ns": either way not a figure worth a latency
    const vc::YamlFigure lat = vc::latency_figure(fit);
    CHECK_NOTHROW(written_then_read(fit, 20e9));
    if (!lat.value.is_null()) CHECK(*written_then_read(fit, 20e9).h2d_latency > 0);
  }
  SECTION("a positive intercept is written as a time") {
    fit.t0_s = 2.1e-6;
    CHECK(*written_then_read(fit, 20e9).h2d_latency == Approx(2.1e-6).epsilon(1e-3));
  }
  SECTION("a failed fit is unmeasured") {
    fit.ok = false;
    CHECK(vc::latency_figure(fit).value.is_null());
  }
  SECTION("zero-copy reads faster than the copy fit: efficiency 1 in the YAML, the ratio in the note") {
    fit.t0_s = 2e-6;
    const vc::YamlFigure eff = vc::efficiency_figure(27.5e9, fit.bandwidth_Bps);
    CHECK(eff.value.number() == 1.0);
    CHECK_THAT(eff.why, Catch::Contains("1.1"));
    CHECK(*written_then_read(fit, 27.5e9).zero_copy_efficiency == 1.0);
  }
  SECTION("a tiny efficiency stays positive; an unmeasured one is null") {
    fit.t0_s = 2e-6;
    CHECK(*written_then_read(fit, 1e6).zero_copy_efficiency > 0);
    CHECK(vc::efficiency_figure(0.0, 25e9).value.is_null());
    CHECK(vc::efficiency_figure(20e9, 0.0).value.is_null());
  }
}

// A calibration on one card of several is named once, whichever card carries it.
TEST_CASE("the calibration line names a second card's calibration", "[calibration][multi]") {
  const std::string two = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-2x5090-x16-x4.yaml";
  const std::string cal = data_path("calibration/test-card.yaml");
  const auto out = vramsim::test::run_ok("run " + two + " --set 'hardware.gpu=[{preset: rtx-5090}, {preset: rtx-5090, calibration: " +
                                         cal + "}]' --set workload.requests=2");
  CHECK_THAT(out, Catch::Contains("  calibration " + cal + ": zero-copy efficiency 0.65"));
}

// vramsim-calibrate --dry-run writes the structure of a run with no measurement in it
// (calibrate/main.cu): the simulator refuses it rather than running on no figure.
TEST_CASE("a dry run's calibration file is refused as a calibration", "[calibration][calibrate]") {
  const std::string dry = "name: dry-run\nmeasured: null\nmode: dry-run\ndevice: null\n";
  auto tree = vramsim::config::parse_yaml(dry, "dry-run.yaml");
  REQUIRE(tree);
  CHECK_THROWS_WITH(vramsim::hw::decode_calibration(*tree, "dry-run.yaml"),
                    Catch::Contains("mode") && Catch::Contains("dry-run.yaml is a dry run of vramsim-calibrate"));
  auto quick = vramsim::config::parse_yaml("name: q\nmode: quick\n", "q.yaml");
  REQUIRE(quick);
  CHECK_NOTHROW(vramsim::hw::decode_calibration(*quick, "q.yaml"));
}
