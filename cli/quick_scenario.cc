#include "cli/quick_scenario.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli/catalogue_access.h"
#include "core/units.h"
#include "core/config_reader.h"
#include "hw/gpu.h"
#include "reports/validation.h"
#include "sim/engines/engine_family.h"
#include "sim/vram_plan.h"
#include "workloads/formats.h"
#include "workloads/layer_split.h"

namespace vramsim::cli {
using workloads::upper;
namespace {
// A command-line value as a YAML single-quoted scalar: taken as written, whatever it holds.
std::string quoted(const std::string& value) {
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}
}  // namespace

EngineFlags engine_flags(const sim::Scenario& s) {
  const sim::engines::EngineCommand c = sim::engines::family(s.engine.family).command(s);
  return {c.program, c.flags};
}

std::string machine_text(const sim::Scenario& s) {
  std::vector<std::string> names;
  for (const auto& c : s.cards) names.push_back(c.gpu.spec.name);
  const bool identical = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == names.front(); });
  return identical ? std::to_string(names.size()) + " x " + s.gpu.spec.name : reports::cards_label(names);
}

sim::Scenario named_scenario(const Args& args, const std::string& command, bool warn) {
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  workloads::FormatTables formats = workloads::FormatTables::load(catalogue);
  const std::string model = args.require("--model");
  const std::string gpu = args.require("--gpu");
  // --gpu A,B names each card of a mixed machine (device 0 first); identical ones are a count.
  const std::vector<std::string> names = card_list(gpu);
  if (names.size() > 1 && args.get("--gpus"))
    throw UsageError("--gpus: --gpu " + gpu + " already names each card (a list names every card once; --gpus N counts "
                     "copies of one card)");
  const bool identical = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == names.front(); });
  const std::int64_t gpus = names.size() > 1 ? static_cast<std::int64_t>(names.size()) : args.integer("--gpus", 1, 1, 64);
  std::vector<hw::GpuSpec> specs;
  for (const auto& n : names)
    specs.push_back(hw::decode_gpu(catalogue.resolve("gpus", "GPU", config::Node::scalar(n, {"--gpu", 0, 0}), "--gpu"), "--gpu"));
  const hw::GpuSpec& spec = specs.front();
  // A unified-memory part (Apple) has no link, and its host is its own CPU (GpuSpec::soc_host).
  const bool soc = spec.unified();
  for (const auto& g : specs)
    if (g.unified() && names.size() > 1)
      throw UsageError("--gpu " + gpu + ": " + g.name + " is a unified-memory part: it cannot be combined with other cards");
  if (soc && (args.get("--link") || args.get("--host")))
    throw UsageError("--gpu " + gpu + " is a unified-memory part: no --link (its GPU reads the memory it shares with the CPU) "
                     "and no --host (its host is its own CPU, " + spec.soc_host + ")");
  if (soc && gpus > 1) throw UsageError("--gpus: " + gpu + " is a unified-memory part: several cannot be combined");
  // Each card's own slot by default: its PCIe generation and width.
  const auto own_slot = [](const hw::GpuSpec& g) {
    return "pcie-gen" + std::to_string(g.pcie_generation) + "-x" + std::to_string(g.pcie_lanes);
  };
  std::string own_slots;  // "pcie-gen4-x16, pcie-gen5-x16"
  for (const auto& g : specs) own_slots += (own_slots.empty() ? "" : ", ") + own_slot(g);
  const std::string link = args.get("--link").value_or(own_slot(spec));
  std::ostringstream y;
  y << "hardware:\n";
  if (identical) {
    y << "  gpu: { preset: " << quoted(names.front()) << ", count: " << gpus << " }\n";
  } else {
    y << "  gpu:\n";
    for (const auto& n : names) y << "    - { preset: " << quoted(n) << " }\n";
  }
  if (!soc) {
    if (identical || args.get("--link")) {
      y << "  link: { preset: " << quoted(link) << " }\n";
    } else {
      y << "  link:\n";
      for (const auto& g : specs) y << "    - { preset: " << quoted(own_slot(g)) << " }\n";
    }
    y << "  host: { preset: " << quoted(args.get("--host").value_or("ddr5-dual-channel")) << " }\n";
  }
  y << "model: " << quoted(model) << "\n"
    << "engine:\n"
    << "  preset: " << quoted(args.get("--engine").value_or("llama.cpp")) << "\n"
    << "  context: " << args.integer("--context", kDefaultContext, 1, std::int64_t{1} << 32) << "\n";
  if (auto q = args.get("--quant")) y << "  weights: { experts: " << quoted(*q) << ", other: " << quoted(*q) << " }\n";
  y << "workload: { clients: 1, requests: 3, prompt_tokens: " << kPromptTokens << ", gen_tokens: " << kGenTokens
    << " }\nseed: 1\n";
  auto tree = config::parse_yaml(y.str(), "<command line>");
  if (!tree) throw config::ConfigError(tree.error());
  // The text above is this function's, not the user's: an error points at the option a part
  // came from (or says it is a default), never at a line of that text.
  tree->relabel({"the command's options", 0, 0});
  const auto label = [&](std::initializer_list<const char*> path, const std::string& origin) {
    config::Node* n = &*tree;
    for (const char* key : path)
      if (!(n = n->find(key))) return;
    n->relabel({origin, 0, 0});
  };
  label({"hardware", "gpu"}, "--gpu " + gpu + (gpus > 1 && names.size() == 1 ? " --gpus " + std::to_string(gpus) : std::string()));
  label({"hardware", "link"}, args.get("--link")      ? "--link " + link
                              : identical           ? "the card's own slot (" + link + "; --link changes it)"
                                                    : "each card's own slot (" + own_slots + "; --link changes them)");
  label({"hardware", "host"}, args.get("--host") ? "--host " + *args.get("--host")
                                                 : std::string("the default host ddr5-dual-channel (--host changes it)"));
  label({"model"}, "--model " + model);
  label({"engine"}, "--engine " + args.get("--engine").value_or("llama.cpp") + (args.get("--engine") ? "" : " (the default)"));
  if (args.get("--context")) label({"engine", "context"}, "--context " + *args.get("--context"));
  if (auto q = args.get("--quant")) label({"engine", "weights"}, "--quant " + *q);
  label({"workload"}, "the default workload (--set workload.* changes it)");
  apply_overrides(*tree, args.all("--set"));
  apply_seed(*tree, args);
  sim::Scenario s = sim::decode_scenario(*tree, catalogue, formats);
  if (warn) print_warnings(command, s.warnings);
  return s;
}

Result<QuickScenario> quick_scenario(const Args& args) {
  QuickScenario q{named_scenario(args), "", ""};
  const auto finish = [&q]() -> Result<QuickScenario> {
    const EngineFlags f = engine_flags(q.scenario);
    q.flags = f.flags;
    q.flags_for = f.engine;
    return q;
  };

  const sim::Scenario& s = q.scenario;
  if (s.engine.expert_cache && s.engine.misses_on_cpu) {
    const std::string hot = s.engine.cache_size_bytes ? units::format_gib(*s.engine.cache_size_bytes) + " of them"
                            : s.engine.cache_slots    ? std::to_string(*s.engine.cache_slots) + " of them"
                                                      : "as many as fit";
    q.placement = !s.model.moe ? std::string("every layer on the GPU (a dense model: no routed experts for the CPU)")
                  : std::string("attention, dense layers and shared experts on the GPU, routed experts computed by the CPU") +
                  (s.engine.cache_slots == std::int64_t{0} && !s.engine.cache_size_bytes ? ""
                                                                                          : ", a hot set (" + hot + ") on the GPU");
    return finish();
  }
  if (s.engine.kv_pool) {  // vLLM: every weight on the GPU, or the refusal with its numbers
    const auto plans = sim::plan_memory(s);
    if (!plans) return plans.error();
    const sim::VramPlan& plan = plans->front();
    const auto& pool = *s.engine.kv_pool;
    q.placement = "every layer on the GPU, a KV pool of " + std::to_string(plan.kv_blocks) + " blocks of " +
                  std::to_string(pool.block_size) + " tokens (" + std::to_string(plan.kv_blocks * pool.block_size) + " tokens)";
    return finish();
  }
  if (s.engine.expert_cache) {
    q.placement = "every layer on the GPU, routed experts in the expert cache";
    return finish();
  }
  if (fits(s)) {  // the placement given (by default every layer on the GPU) fits: keep it
    q.placement = describe(s.engine.gpu_layers, s.engine.cpu_moe_layers, s.model.layers, s.engine.head_on_cpu,
                           s.engine.ngl_output_first).description;
    return finish();
  }
  // A unified-memory part runs every layer on its GPU (sim/scenario.cc): no other placement.
  if (s.gpu.spec.unified()) {
    const auto plans = sim::plan_memory(s);
    return Error{plans.ok() ? s.model.name + " does not fit " + s.gpu.spec.name + " with every layer on its GPU"
                            : plans.error().message};
  }
  const auto placements = fitting_placements(s);
  if (placements.empty()) return Error{s.model.name + " " + why_nothing_fits(s)};
  apply_placement(placements.front(), q.scenario.engine);
  q.placement = placements.front().description;
  // The first that fits in a fixed order (fitting_placements), not the fastest: plan simulates
  // each (an MoE over several cards can decode faster with whole layers on the CPU).
  if (placements.size() > 1)
    q.placement += "; " + std::to_string(placements.size() - 1) + " other placement" + (placements.size() > 2 ? "s fit" : " fits") +
                   ": vramsim plan simulates each";
  return finish();
}

}  // namespace vramsim::cli
