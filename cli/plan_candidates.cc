#include "cli/plan_candidates.h"

#include "cli/plan_space.h"
#include "core/config_reader.h"
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
  // The one placement an engine or a part allows, every layer on the GPU: it fits, or `refusal`.
  auto only_placement = [&](const std::string& description, const std::string& refusal) {
    if (!fits(base)) {
      add_skipped(skipped, quant, kv, refusal);
      return all_gpu;
    }
    Candidate c;
    c.placement.gpu_layers = base.model.layers;
    c.placement.description = description;
    add(base, c);
    return all_gpu;
  };
  if (base.engine.kv_pool)  // vLLM: no placement to choose; the weights and the pool fit, or not
    return only_placement("every layer on the GPU, a paged KV pool",
                          "the weights and one sequence's KV need more than gpu_memory_utilization x the card");
  if (base.engine.expert_cache) {  // expert-cache, hybrid-cpu-experts: the cache's size
    const auto sizes = cache_sizes(base);
    if (sizes.empty()) add_skipped(skipped, quant, kv, "the weights kept on the GPU do not fit it");
    for (const std::int64_t slots : sizes) {
      Candidate c;
      c.hot_slots = slots;
      c.sets = {"engine.expert_cache.size=" + std::to_string(slots)};
      c.placement.gpu_layers = base.model.layers;
      c.placement.description = base.engine.misses_on_cpu
                                    ? "routed experts on the CPU, " + (slots ? std::to_string(slots) + " hot experts on the GPU"
                                                                             : std::string("no hot set"))
                                    : std::to_string(slots) + " expert-cache slots";
      sim::Scenario s = base;
      s.engine.cache_slots = slots;
      s.engine.cache_size_bytes.reset();
      add(s, c);
    }
    return all_gpu;
  }
  base.engine.gpu_layers = base.model.layers;
  base.engine.cpu_moe_layers = 0;
  if (base.gpu.spec.unified())  // an Apple part: every layer on its GPU (sim/scenario.cc)
    return only_placement("every layer on the GPU", "every layer on the GPU needs more than its share of the unified memory");
  const auto placements = fitting_placements(base);
  if (placements.empty()) add_skipped(skipped, quant, kv, why_nothing_fits(base));
  for (const auto& p : placements) {
    Candidate c;
    c.placement = p;
    c.sets = placement_sets(p, base.model.layers);
    sim::Scenario s = base;
    apply_placement(p, s.engine);
    add(s, c);
  }
  return all_gpu;
}

}  // namespace vramsim::cli
