// Loads the case study's scenarios from the source tree for the simulator's tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config_reader.h"
#include "sim/expert_cache.h"
#include "sim/request_runner.h"
#include "sim/routing_trace.h"
#include "sim/scenario.h"
#include "sim/step_model.h"
#include "sim/vram_plan.h"
#include "tests/test_support.h"

namespace vramsim::test {

// configs/scenarios/NAME.yaml with `overrides` (--set assignments) applied.
inline sim::Scenario bundled_scenario(const std::string& name, const std::vector<std::string>& overrides = {}) {
  auto cat = catalogue();
  auto formats = workloads::FormatTables::load(cat);
  auto tree = config::load_yaml_file((cat.root() / "scenarios" / (name + ".yaml")).string());
  if (!tree) throw std::runtime_error(tree.error().message);
  for (const auto& o : overrides)
    if (!config::apply_override(*tree, o).ok()) throw std::runtime_error("bad override " + o);
  return sim::decode_scenario(*tree, cat, formats);
}

inline sim::Scenario case_study(const std::string& run, const std::vector<std::string>& overrides = {}) {
  return bundled_scenario("moe125b-rtx5090-gen3-" + run, overrides);
}

// The case study's shared card (expert cache, host and PCIe miss paths, MTP), one card, its
// requests driven by hand; `overrides` as for case_study().
struct CaseStudyCard {
  explicit CaseStudyCard(const std::vector<std::string>& overrides = {}) : s(case_study("shared", overrides)) {}
  sim::Scenario s;
  sim::VramPlan plan = sim::plan_vram(s);
  sim::StepModel model{s, plan};
  sim::LayerPopularity popularity = sim::scenario_popularity(s);
  std::unique_ptr<sim::ExpertCache> cache = std::make_unique<sim::ExpertCache>(s.engine.policy, plan.slots, 0.0, popularity);
  std::vector<sim::Stage> stages{sim::Stage{0, s.model.layers, &model, cache.get(), 0, 0}};
  sim::RequestRunner runner(std::uint64_t id, std::int64_t prompt_tokens = 26, std::int64_t gen_tokens = 192) {
    return sim::RequestRunner(s, stages, popularity, id, prompt_tokens, gen_tokens);
  }
};

}  // namespace vramsim::test
