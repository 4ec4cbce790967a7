// The case study, reproduced: `vramsim validate` runs every simulation of
// configs/validation/case-study.yaml in its own process and compares with the report.
#include <catch2/catch.hpp>

#include <regex>

#include "tests/test_support.h"

using vramsim::test::run_vramsim;

namespace {
// The "pass" of the row named `name` in validate's --json output.
std::string row(const std::string& json, const std::string& name) {
  auto at = json.find("\"name\": \"" + name + "\"");
  REQUIRE(at != std::string::npos);
  return json.substr(at, json.find('}', at) - at);
}
}  // namespace

TEST_CASE("validate: the case study's figures within their tolerances", "[validate]") {
  auto r = run_vramsim("validate case-study --json --jobs 2");
  INFO(r.out << r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  for (const char* name : {"shared slots (derived from the card)", "exclusive slots (derived from the card)",
                           "shared slots (free VRAM given)", "exclusive slots (free VRAM given)", "shared hit rate p50",
                           "exclusive hit rate p50", "shared decode p50 (tok/s)", "exclusive decode p50 (tok/s)",
                           "shared decode mean (tok/s)", "exclusive decode mean (tok/s)",
                           "overflow 0-0.5%: decode p50", "overflow 0.5-1%: decode p50", "overflow 1-2%: decode p50",
                           "overflow 2-3%: decode p50", "overflow 3-5%: decode p50", "overload burst of 32 all complete",
                           "prompt over the 32K window refused", "shared mean power (W)",
                           "shared GPU utilisation", "exclusive GPU utilisation", "shared prefill of a 26-token prompt (s)"}) {
    INFO(name);
    CHECK_THAT(row(r.out, name), Catch::Contains("\"pass\": true"));
  }
  // Known misses, stated in docs/validation.md and docs/cliff.md: the 5-10% and 10-20% buckets,
  // where the report's requests decode at half speed for a reason the model does not have.
  // They are reported, not hidden.
  CHECK_THAT(r.out, Catch::Contains("\"cases\": 25"));
  CHECK_THAT(r.out, Catch::Contains("\"failed\": 2"));
}

TEST_CASE("validate: results do not depend on the number of parallel jobs", "[validate][determinism]") {
  auto one = run_vramsim("validate case-study --json --jobs 1");
  auto two = run_vramsim("validate case-study --json --jobs 2");
  CHECK(one.out == two.out);
}

// configs/validation/community.yaml: published single-card llama.cpp measurements held out to
// test prediction (docs/validation.md). Whether its cases pass is the result being reported, not
// a property of the code, so this checks only that the dataset decodes, every run simulates and
// every case gets a prediction, each a `prediction` but the rows that calibrated the llama.cpp
// preset (the seven its decode was fitted to; moe_layer_sync; the prefill GEMM rate; the matrix-vector rate) and the two that calibrated the RTX
// 2080 machine's CPU rates (its scenario's cpu_bandwidth_efficiency and cpu_expert_share), which
// the preset and the scenario must reproduce.
TEST_CASE("validate: the community llama.cpp dataset runs and reports every case", "[validate][community]") {
  auto r = run_vramsim("validate community --json --jobs 2");
  INFO(r.out << r.err);
  REQUIRE((r.status == 0 || r.status == 1));  // 1: a case out of tolerance, reported
  CHECK_THAT(r.out, Catch::Contains("\"dataset\": \"community\""));
  CHECK_THAT(r.out, Catch::Contains("\"cases\": 56"));
  CHECK_THAT(r.out, !Catch::Contains("\"predicted\": null"));
  std::size_t predictions = 0;
  for (auto at = r.out.find("\"role\": \"prediction\""); at != std::string::npos; at = r.out.find("\"role\": \"prediction\"", at + 1))
    ++predictions;
  CHECK(predictions == 44);
  for (const char* name : {"RTX 4090, gpt-oss-20b MXFP4 tg128", "RTX 3090, llama 8B Q6_K pp2048",
                           "RTX 2080, Mistral-Small-24B Q4_K_M -ngl 16", "RTX 2080, Qwen3-30B-A3B Q4_K_M --n-cpu-moe 36",
                           "RTX 3080, Llama 3 8B Q4_K_M tg512", "RTX 4090, Llama 3 8B F16 tg512",
                           "RTX 3090, llama 8B Q4_0, ub 8 pp512"}) {
    INFO(name);
    CHECK_THAT(row(r.out, name), Catch::Contains("\"role\": \"calibration\"") && Catch::Contains("\"pass\": true"));
  }
  for (const char* name : {"RTX 2080, Llama 3.1 8B Q4_K_M -ngl 99", "RTX 2080, Qwen3-14B Q4_K_M -ngl 32",
                           "RTX 2080, gpt-oss-20b MXFP4 --n-cpu-moe 12", "RTX 2080, Qwen2.5-14B Q4_K_M -ngl 42",
                           "RTX 3090, llama 8B Q4_0, ub 1 pp512", "RTX 4090, Qwen3-30B-A3B Q4_0 tg128",
                           "RTX 5090, gpt-oss-20b MXFP4 pp512", "RTX 4090, llama 8B Q4_0 pp512",
                           "RTX 4090, llama 8B Q5_0 pp2048"}) {
    INFO(name);
    CHECK_THAT(row(r.out, name), Catch::Contains("\"predicted\": "));
  }
}

// configs/validation/out-of-sample.yaml: llama-bench rows gathered after the preset was
// calibrated. As for community, whether they pass is the result reported (docs/validation.md);
// this checks that every case is simulated and is a prediction.
TEST_CASE("validate: the out-of-sample dataset runs and predicts every case", "[validate][community]") {
  auto r = run_vramsim("validate out-of-sample --json --jobs 2");
  INFO(r.out << r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  CHECK_THAT(r.out, Catch::Contains("\"dataset\": \"out-of-sample\"") && Catch::Contains("\"cases\": 22"));
  CHECK_THAT(r.out, !Catch::Contains("\"predicted\": null") && !Catch::Contains("\"role\": \"calibration"));
  std::size_t predictions = 0;
  for (auto at = r.out.find("\"role\": \"prediction\""); at != std::string::npos; at = r.out.find("\"role\": \"prediction\"", at + 1))
    ++predictions;
  CHECK(predictions == 22);
}

TEST_CASE("validate: an unknown dataset names the ones there are", "[validate][errors]") {
  auto r = run_vramsim("validate bogus");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("no validation dataset \"bogus\" (datasets: case-study, community, llama-cpp, multi-card"));
}
