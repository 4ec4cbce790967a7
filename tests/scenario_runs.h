// Running `vramsim run SCENARIO --json` and `vramsim plan --json` from a test and reading their
// figures.
#pragma once

#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "test_support.h"

namespace vramsim::test {

// `vramsim run SCENARIO --json ARGS`, which must succeed; its JSON.
inline std::string run_json(const std::string& scenario, const std::string& args) {
  auto r = run_vramsim("run " + scenario + " --json " + args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

inline double decode_p50(const std::string& json) { return json_number(json, "p50", "decode_tok_s"); }

// Milliseconds of a decode step spent waiting on the host's experts (run --json).
inline double cpu_expert_ms(const std::string& json) {
  return json_number(json, "cpu_experts", "step_time_breakdown") * json_number(json, "decode_step_ms");
}

// `vramsim plan ARGS --json --top 50 -j 2`, which must succeed: its output.
inline std::string plan_json(const std::string& args) {
  auto r = run_vramsim("plan " + args + " --json --top 50 -j 2");
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

// Every "flags" value of plan's JSON, in order (best first).
inline std::vector<std::string> all_flags(const std::string& json) {
  std::vector<std::string> out;
  const std::regex flags("\"flags\": \"([^\"]*)\"");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), flags); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

}  // namespace vramsim::test
