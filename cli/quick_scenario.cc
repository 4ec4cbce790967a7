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

bool fits(const sim::Scenario& s) { return sim::plan_memory(s).ok(); }

Placement describe(int gpu_layers, int cpu_moe_layers, int layers, bool head_on_cpu, bool ngl_output_first) {
  const bool all = gpu_layers == layers;
  Placement p;
  p.gpu_layers = gpu_layers;
  p.cpu_moe_layers = cpu_moe_layers;
  p.layers_on_cpu = gpu_layers < layers;
  p.head_on_cpu = head_on_cpu;
  p.ngl_output_first = ngl_output_first;
  const int cpu_layers = layers - gpu_layers;
  const std::string first = cpu_layers == 1 ? "layer 0" : "the first " + std::to_string(cpu_layers) + " layers";
  p.description = all ? (head_on_cpu ? "every layer on the GPU but the LM head on the CPU" : "every layer on the GPU")
                  : head_on_cpu ? std::to_string(gpu_layers) + " of " + std::to_string(layers) + " layers on the GPU, " + first +
                                      " and the LM head on the CPU"
                                : std::to_string(gpu_layers) + " of " + std::to_string(layers) + " layers and the LM head on the GPU, " +
                                      first + " on the CPU";
  p.flags = sim::engines::llama_cpp_placement_flags(gpu_layers, cpu_moe_layers, layers, head_on_cpu, ngl_output_first);
  if (cpu_moe_layers > 0)
    p.description += ", the routed experts of the first " + std::to_string(cpu_moe_layers) + " of " +
                     std::to_string(layers) + " layers on the CPU";
  return p;
}

std::vector<std::string> placement_sets(const Placement& p, int layers) {
  std::vector<std::string> sets = {
      "engine.gpu_layers=" + std::to_string(sim::ngl_flag(p.gpu_layers, layers, p.head_on_cpu, p.ngl_output_first))};
  if (p.cpu_moe_layers > 0) sets.push_back("engine.cpu_moe_layers=" + std::to_string(p.cpu_moe_layers));
  if (p.engine_accounting) sets.push_back("engine.vram_rule=engine");
  if (!p.layer_split.empty()) sets.push_back("engine.layer_split=[" + workloads::counts_text(p.layer_split) + "]");
  return sets;
}

void apply_placement(const Placement& p, sim::EngineSetup& e) {
  e.gpu_layers = p.gpu_layers;
  e.cpu_moe_layers = p.cpu_moe_layers;
  e.head_on_cpu = p.head_on_cpu;
  if (p.engine_accounting) e.engine_vram_rule = true;
  if (!p.layer_split.empty()) e.layer_split = p.layer_split;
}

std::optional<std::vector<int>> fitting_split(sim::Scenario s) {
  if (fits(s)) return std::vector<int>{};
  const int cards = static_cast<int>(s.cards.size());
  if (cards < 2 || s.engine.split != sim::Split::Pipeline || !s.engine.layer_split.empty() || s.engine.expert_cache ||
      s.engine.kv_pool)
    return std::nullopt;
  // Card by card, the most layers that card holds, the rest left to the cards not yet filled
  // (a card's need grows with its layers, so filling each fullest leaves the least to the
  // others). As llama.cpp's --fit: a dense model's cards from the last (which holds the LM head)
  // back, an MoE's with experts on the CPU from the first (the CPU-expert layers lead).
  const bool front_first = s.engine.cpu_moe_layers > 0;
  std::vector<int> split(static_cast<std::size_t>(cards), 0);
  const std::size_t rest = front_first ? split.size() - 1 : 0;  // the card that takes what is left
  int left = s.engine.gpu_layers;
  for (int i = 0; i + 1 < cards; ++i) {
    const std::size_t c = static_cast<std::size_t>(front_first ? i : cards - 1 - i);
    int take = 0;
    for (int k = left; k > 0; --k) {
      split[c] = k;
      split[rest] = left - k;
      s.engine.layer_split = split;
      if (const auto shares = sim::resident_shares(s); shares && (*shares)[c].fits()) {
        take = k;
        break;
      }
    }
    split[c] = take;
    left -= take;
  }
  split[rest] = left;
  s.engine.layer_split = split;
  if (!fits(s)) return std::nullopt;
  return split;
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

QuickScenario quick_scenario(const Args& args) {
  QuickScenario q{named_scenario(args), "", ""};
  const auto finish = [&q] {
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
  if (s.engine.kv_pool) {  // vLLM: every weight on the GPU, or the refusal (std::invalid_argument) with its numbers
    const sim::VramPlan plan = sim::plan_vram(s);
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
    throw std::invalid_argument(plans.ok() ? s.model.name + " does not fit " + s.gpu.spec.name + " with every layer on its GPU"
                                           : plans.error().message);
  }
  const auto placements = fitting_placements(s);
  if (placements.empty()) throw std::invalid_argument(s.model.name + " " + why_nothing_fits(s));
  apply_placement(placements.front(), q.scenario.engine);
  q.placement = placements.front().description;
  // The first that fits in a fixed order (fitting_placements), not the fastest: plan simulates
  // each (an MoE over several cards can decode faster with whole layers on the CPU).
  if (placements.size() > 1)
    q.placement += "; " + std::to_string(placements.size() - 1) + " other placement" + (placements.size() > 2 ? "s fit" : " fits") +
                   ": vramsim plan simulates each";
  return finish();
}

std::string why_nothing_fits(const sim::Scenario& scenario) {
  // A row split has no CPU stage: every layer must be on the cards.
  if (scenario.cards.size() > 1 && scenario.engine.split != sim::Split::Pipeline)
    return "fits in no placement with a row split (engine.split: " + std::string(sim::to_string(scenario.engine.split)) +
           "), which keeps every layer on the cards: they do not hold it; a pipeline split (engine.split: pipeline) "
           "can run layers on the CPU";
  sim::Scenario cpu = scenario;
  cpu.engine.gpu_layers = 0;
  cpu.engine.cpu_moe_layers = 0;
  const sim::HostRam ram = sim::host_ram(cpu);
  if (!ram.fits())
    return "fits in no placement: the cards do not hold enough of it, and with every layer on the CPU " + ram.refusal(scenario.host.name);
  return "does not fit even with every layer on the CPU";
}

std::vector<Placement> fitting_placements(sim::Scenario s) {
  std::vector<Placement> out;
  const int layers = s.model.layers;
  const bool output_first = s.engine.ngl_output_first;
  // The placement s now holds, with the layer split that fits it; false when none does.
  const auto add_if_fits = [&](Placement p) {
    const auto split = fitting_split(s);
    if (!split) return false;
    p.layer_split = *split;
    if (!split->empty()) {
      p.description += "; cards hold ";
      for (std::size_t c = 0; c < split->size(); ++c)
        p.description += (c ? c + 1 == split->size() ? " and " : ", " : "") + std::to_string((*split)[c]);
      p.description += " layers (-ts)";
    }
    out.push_back(p);
    return true;
  };
  const auto placement = [&](bool head_on_cpu) {
    return describe(s.engine.gpu_layers, s.engine.cpu_moe_layers, layers, head_on_cpu, output_first);
  };
  s.engine.gpu_layers = layers;
  s.engine.cpu_moe_layers = 0;
  s.engine.head_on_cpu = false;
  if (fits(s)) return {placement(false)};
  // The flat spot of docs/memory-model.md: every layer may fit by llama.cpp's own accounting
  // though not by the memory-budget model. The placements below are judged by that accounting
  // anyway, so every layer and the head on the GPUs, judged by it, comes first.
  if (!s.engine.engine_vram_rule && !s.engine.vram_rule_given) {  // not when the budget rule was chosen
    s.engine.engine_vram_rule = true;
    Placement p = placement(false);
    p.engine_accounting = true;
    p.description += " (by llama.cpp's own accounting; the memory-budget model refuses it: engine.vram_rule=engine)";
    add_if_fits(p);
    s.engine.engine_vram_rule = false;
  }
  if (s.model.moe)
    for (int n = 1; n <= layers; ++n) {
      s.engine.cpu_moe_layers = n;
      if (add_if_fits(placement(false))) break;
    }
  s.engine.cpu_moe_layers = 0;
  // Every layer on the GPUs but the LM head on the CPU: less on the CPU than any whole layer
  // moved there. Only builds whose -ngl counts the output last can ask for it (-ngl equal to
  // the layer count); not with a row split (refused).
  if (!output_first && (s.engine.split != sim::Split::Tensor || s.cards.size() == 1)) {
    s.engine.head_on_cpu = true;
    add_if_fits(placement(true));
  }
  // Whole layers on the CPU: the head goes with them in builds that count it last, stays on
  // the GPUs in builds that offload it first. CPU layers combine with a pipeline split only.
  if (s.cards.size() > 1 && s.engine.split != sim::Split::Pipeline) return out;
  s.engine.head_on_cpu = !output_first;
  for (int g = layers - 1; g >= 0; --g) {
    s.engine.gpu_layers = g;
    // No GPU layer: -ngl 0 keeps the head on the CPU too, in every build.
    if (g == 0) s.engine.head_on_cpu = true;
    if (add_if_fits(placement(s.engine.head_on_cpu))) break;
  }
  return out;
}

}  // namespace vramsim::cli
