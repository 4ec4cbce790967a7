// The plain C++ half of vramsim-calibrate, tested without a GPU on samples shaped like the
// program's: the transfer fit and the unit strings the project's own parser must read back.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibrate/nvml_loader.h"
#include "calibrate/report.h"
#include "core/config_tree.h"
#include "core/units.h"

using namespace vramsim;

TEST_CASE("calibrate: t = t0 + bytes / bandwidth is recovered from pinned-copy samples", "[calibrate]") {
  std::vector<double> bytes, seconds;
  for (double b = 4096; b <= 1024.0 * 1024 * 1024; b *= 2) {
    bytes.push_back(b);
    seconds.push_back(2e-6 + b / 13.9e9);
  }
  bytes.push_back(1382400);  // one expert of the case study
  seconds.push_back(2e-6 + 1382400 / 13.9e9);
  calibrate::TransferFit fit = calibrate::fit_transfer(bytes, seconds);
  REQUIRE(fit.ok);
  CHECK(fit.t0_s == Approx(2e-6).epsilon(1e-6));
  CHECK(fit.bandwidth_Bps == Approx(13.9e9).epsilon(1e-6));
  CHECK(fit.r2 == Approx(1.0));
}

TEST_CASE("calibrate: noisy samples still give t0 from the small sizes", "[calibrate]") {
  std::vector<double> bytes, seconds;
  int i = 0;
  for (double b = 4096; b <= 256.0 * 1024 * 1024; b *= 2, ++i) {
    bytes.push_back(b);
    seconds.push_back((5e-6 + b / 25e9) * (1.0 + ((i % 3) - 1) * 0.02));  // +-2% noise
  }
  calibrate::TransferFit fit = calibrate::fit_transfer(bytes, seconds);
  REQUIRE(fit.ok);
  CHECK(fit.t0_s == Approx(5e-6).epsilon(0.1));
  CHECK(fit.bandwidth_Bps == Approx(25e9).epsilon(0.05));
}

TEST_CASE("calibrate: the YAML's unit strings read back with the project's parser", "[calibrate]") {
  CHECK(*units::parse(calibrate::format_bandwidth(13.9e9), units::Dimension::Bandwidth) == Approx(13.9e9).epsilon(1e-3));
  CHECK(*units::parse(calibrate::format_time(2.1e-6), units::Dimension::Time) == Approx(2.1e-6).epsilon(1e-3));
  CHECK(*units::parse(calibrate::format_time(3.4e-3), units::Dimension::Time) == Approx(3.4e-3).epsilon(1e-3));
  CHECK(*units::parse(calibrate::format_power(575), units::Dimension::Power) == Approx(575));
  CHECK(*units::parse(calibrate::format_bytes_mib(24564.0 * 1048576), units::Dimension::Bytes) ==
        Approx(24564.0 * 1048576));
}

TEST_CASE("calibrate: trial statistics", "[calibrate]") {
  calibrate::Stats s = calibrate::summarize({5, 1, 3, 2, 4});
  CHECK(s.n == 5);
  CHECK(s.min == 1);
  CHECK(s.median == 3);
  CHECK(s.max == 5);
  CHECK(s.mean == 3);
}

TEST_CASE("calibrate: each measurement's printed line carries its figures in unit strings", "[calibrate]") {
  calibrate::Value p = calibrate::Value::object();
  p["bytes"] = calibrate::Value::number(4096);
  p["dtype"] = calibrate::Value::string("fp16");
  p["nested"] = calibrate::Value::object();  // not printed
  const calibrate::Stats s = calibrate::summarize({2.2e-6, 2.1e-6, 2.3e-6});
  CHECK(calibrate::series_line("pcie.pinned.h2d", p, "s", s) ==
        "pcie.pinned.h2d bytes=4096 dtype=fp16: median 2.20us (min 2.10us, n 3)");
  CHECK(calibrate::series_line("power.idle", calibrate::Value::object(), "W", calibrate::summarize({71.5})) ==
        "power.idle: median 71.5W (min 71.5W, n 1)");
  CHECK(calibrate::series_line("x", calibrate::Value(), "B", calibrate::summarize({3})) == "x: median 3 B (min 3 B, n 1)");
}

// vramsim-calibrate opens NVML at run time (nvml_loader.h), so it starts where the driver's
// management library is missing and only skips the power benchmark, saying why.
TEST_CASE("calibrate: NVML is opened at run time, all of its entry points or a reason", "[calibrate]") {
  const calibrate::NvmlApi api = calibrate::load_nvml();
  if (api.missing.empty()) {
    CHECK(api.init);
    CHECK(api.shutdown);
    CHECK(api.error_string);
    CHECK(api.handle_by_pci_bus_id);
    CHECK(api.mig_mode);
    CHECK(api.total_energy);
    CHECK(api.enforced_power_limit);
  } else {
    CHECK_THAT(api.missing, Catch::Contains("libnvidia-ml.so.1"));
    if (!api.error_string) CHECK(api.error(999) == "NVML error 999");
  }
}

TEST_CASE("calibrate: the summary YAML through yaml-cpp's emitter, read back by the config reader", "[calibrate]") {
  using calibrate::Value;
  Value summary = Value::object();
  summary["name"] = Value::string("h200");
  summary["measured"] = Value();
  summary["mode"] = Value::string("true");  // a string YAML would read as a boolean: quoted
  Value& pcie = summary["pcie"];
  pcie["h2d"]["bandwidth"] = Value::string("13.9GB/s");
  pcie["h2d"]["fit_r2"] = Value::number(0.9987);
  pcie["samples"] = calibrate::number_array({1.5, 2, 0.1});
  pcie["sizes"].push(Value::object())["bytes"] = Value::number(4096);
  summary["ok"] = Value::boolean(true);
  const std::string yaml = calibrate::to_yaml(summary);
  CHECK(yaml ==
        "name: h200\n"
        "measured: null\n"
        "mode: \"true\"\n"
        "pcie:\n"
        "  h2d:\n"
        "    bandwidth: 13.9GB/s\n"
        "    fit_r2: 0.9987\n"
        "  samples: [1.5, 2, 0.1]\n"
        "  sizes:\n"
        "    - {bytes: 4096}\n"
        "ok: true\n");
  const auto tree = config::parse_yaml(yaml, "summary.yaml");
  REQUIRE(tree);
  CHECK(tree->find("mode")->text() == "true");
  CHECK(tree->find("mode")->quoted());
  CHECK(tree->find("pcie")->find("h2d")->find("bandwidth")->text() == "13.9GB/s");
  // The raw JSON through core's writer: numbers in their shortest round-trip text.
  CHECK(calibrate::to_json(*summary.find("pcie")->find("samples")) == "[\n  1.5,\n  2,\n  0.1\n]\n");
}
