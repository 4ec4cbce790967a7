// Loads the case study's scenarios from the source tree for the simulator's tests.
#pragma once

#include <string>
#include <vector>

#include "core/config_reader.h"
#include "sim/scenario.h"
#include "tests/test_support.h"

namespace vramsim::test {

inline sim::Scenario case_study(const std::string& run, const std::vector<std::string>& overrides = {}) {
  auto cat = catalogue();
  auto formats = workloads::FormatTables::load(cat);
  auto tree = config::load_yaml_file((cat.root() / "scenarios" / ("moe125b-rtx5090-gen3-" + run + ".yaml")).string());
  if (!tree) throw std::runtime_error(tree.error().message);
  for (const auto& o : overrides)
    if (!config::apply_override(*tree, o).ok()) throw std::runtime_error("bad override " + o);
  return sim::decode_scenario(*tree, cat, formats);
}

}  // namespace vramsim::test
