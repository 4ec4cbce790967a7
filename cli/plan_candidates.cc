#include "cli/plan_candidates.h"

#include "cli/plan_space.h"
#include "core/config_reader.h"
#include "sim/engines/engine_family.h"
#include "sim/vram_plan.h"

namespace vramsim::cli {
namespace {

void add_skipped(std::vector<Skipped>& skipped, const std::string& quant, const std::string& kv, std::string reason) {
  while (!reason.empty() && reason.back() == '\n') reason.pop_back();
  // "<command line>:2:3: error: hardware.host: ..." -> "hardware.host: ...": the line is plan's own.
  if (const auto at = reason.find("error: "); at != std::string::npos) reason.erase(0, at + 7);
  for (auto& s : skipped)
    if (s.quant == quant && s.reason == reason) {
      s.kv.push_back(kv);
      return;
    }
  skipped.push_back({quant, {kv}, reason});
}

}  // namespace

std::string note(const Skipped& s) {
  std::string kv;
  for (const auto& k : s.kv) kv += (kv.empty() ? "" : ", ") + k;
  return s.quant + " (KV " + kv + "): " + s.reason;
}


bool add_candidates(const CandidateSpace& space, const std::string& quant, const std::string& kv,
                    std::vector<Candidate>& candidates, std::vector<Skipped>& skipped) {
  bool all_gpu = false;
  // The scenario `run` would build for this candidate.
  const std::string kv_set = "engine.kv_type=" + kv;
  std::vector<std::string> a = {"--quant", quant};
  for (const auto& set : space.workload) a.insert(a.end(), {"--set", set});
  a.insert(a.end(), {"--set", kv_set});
  for (const auto& set : space.args.all("--set")) a.insert(a.end(), {"--set", set});
  for (const char* key : {"--model", "--gpu", "--gpus", "--host", "--link", "--context", "--configs", "--engine"})
    if (auto v = space.args.get(key)) a.insert(a.end(), {key, std::string(key) == "--gpu" && !space.one_card.empty() ? space.one_card : *v});
  OptionSpec s2;
  s2.with_value = {"--model", "--gpu", "--gpus", "--host", "--link", "--context", "--configs", "--quant", "--engine"};
  s2.repeated = {"--set"};
  sim::Scenario base;
  try {
    base = named_scenario(Args(a, s2), "plan");
  } catch (const config::ConfigError& e) {  // e.g. this format's experts do not fit the host's RAM
    add_skipped(skipped, quant, kv, e.what());
    return all_gpu;
  }
  auto add = [&](sim::Scenario s, Candidate c) {
    c.quant = quant;
    c.kv = kv;
    c.sets.insert(c.sets.begin(), kv_set);
    const EngineFlags f = engine_flags(s);
    c.flags = f.flags;
    c.engine = f.engine;
    if (!space.one_card.empty()) {  // llama.cpp on one GPU of the machine: the others hold nothing
      const std::string device = std::to_string(space.device);
      c.gpu = space.one_card;
      c.device = space.device;
      c.flags = "-sm none -mg " + device + " " + c.flags;
      c.placement.description += " (card " + device + ", the " + space.one_card + ", alone: -sm none -mg " + device + ")";
    }
    c.max_context = max_context(s);
    c.context_note = context_note(s, c.max_context);
    // Every layer on the GPUs, judged by the memory-budget model: beyond its largest context
    // run --model keeps the placement by the engine's own accounting (unless the rule was
    // chosen), so that larger figure is named too.
    if (!s.engine.kv_pool && !s.engine.expert_cache && !sim::judged_by_engine_accounting(s) && !s.engine.vram_rule_given) {
      sim::Scenario engine_rule = s;
      engine_rule.engine.engine_vram_rule = true;
      if (const std::int64_t most = max_context(engine_rule); most > c.max_context)
        c.context_note += ", up to " + std::to_string(most * s.engine.parallel) + " by weights + KV + runtime (engine.vram_rule=engine)";
    }
    if (c.placement.gpu_layers == s.model.layers && c.placement.cpu_moe_layers == 0 && !c.placement.head_on_cpu) all_gpu = true;
    candidates.push_back(c);
  };
  // The family's search space (sim/engines/): the placements, cache sizes or one configuration.
  const sim::engines::SearchSpace space_of = sim::engines::family(base.engine.family).search_space(base);
  if (space_of.points.empty()) add_skipped(skipped, quant, kv, space_of.none_fits);
  for (const auto& point : space_of.points) {
    Candidate c;
    c.placement = point.placement;
    c.sets = point.sets;
    c.hot_slots = point.hot_slots;
    add(point.scenario, c);
  }
  return all_gpu;
}

}  // namespace vramsim::cli
