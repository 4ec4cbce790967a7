// Running `vramsim run SCENARIO --json` from a test and reading its figures.
#pragma once

#include <catch2/catch.hpp>

#include <string>

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

}  // namespace vramsim::test
