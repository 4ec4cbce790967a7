#include "cli/quick_scenario.h"

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli/catalogue_access.h"
#include "core/units.h"
#include "core/config_reader.h"
#include "hw/gpu.h"
#include "sim/vram_plan.h"
#include "workloads/formats.h"

namespace vramsim::cli {
namespace {
// A command-line value as a YAML single-quoted scalar: taken as written, whatever it holds.
std::string quoted(const std::string& value) {
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}
}  // namespace

bool fits(const sim::Scenario& s) {
  try {
    sim::plan_cards(s);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

Placement describe(int gpu_layers, int cpu_moe_layers, int layers) {
  Placement p{gpu_layers, cpu_moe_layers, "", "", gpu_layers < layers};
  p.description = gpu_layers == layers ? "every layer on the GPU"
                                       : std::to_string(gpu_layers) + " of " + std::to_string(layers) +
                                             " layers on the GPU, the first " + std::to_string(layers - gpu_layers) + " on the CPU";
  p.flags = gpu_layers == layers ? "-ngl 99" : "-ngl " + std::to_string(gpu_layers);
  if (cpu_moe_layers > 0) {
    p.description += ", the routed experts of the first " + std::to_string(cpu_moe_layers) + " of " +
                     std::to_string(layers) + " layers on the CPU";
    p.flags += cpu_moe_layers == layers ? " --cpu-moe" : " --n-cpu-moe " + std::to_string(cpu_moe_layers);
  }
  return p;
}

sim::Scenario named_scenario(const Args& args) {
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  workloads::FormatTables formats = workloads::FormatTables::load(catalogue);
  const std::string model = args.require("--model");
  const std::string gpu = args.require("--gpu");
  const std::int64_t gpus = args.integer("--gpus", 1, 1, 64);
  const hw::GpuSpec spec = hw::decode_gpu(catalogue.resolve("gpus", "GPU", config::Node::scalar(gpu, {"--gpu", 0, 0}), "--gpu"), "--gpu");
  if (spec.unified()) throw UsageError("--gpu " + gpu + ": unified-memory parts are not simulated by `run` (see `vramsim fit`)");
  // The card's own slot by default: its PCIe generation at x16.
  const std::string link = args.get("--link").value_or("pcie-gen" + std::to_string(spec.pcie_generation) + "-x16");
  std::ostringstream y;
  y << "hardware:\n"
    << "  gpu: { preset: " << quoted(gpu) << ", count: " << gpus << " }\n"
    << "  link: { preset: " << quoted(link) << " }\n"
    << "  host: { preset: " << quoted(args.get("--host").value_or("ddr5-dual-channel")) << " }\n"
    << "model: " << quoted(model) << "\n"
    << "engine:\n"
    << "  preset: " << quoted(args.get("--engine").value_or("llama.cpp")) << "\n"
    << "  context: " << args.integer("--context", kDefaultContext, 1, std::int64_t{1} << 32) << "\n";
  if (auto q = args.get("--quant")) y << "  weights: { experts: " << quoted(*q) << ", other: " << quoted(*q) << " }\n";
  y << "workload: { clients: 1, requests: 3, prompt_tokens: " << kPromptTokens << ", gen_tokens: " << kGenTokens
    << " }\nseed: 1\n";
  auto tree = config::parse_yaml(y.str(), "<command line>");
  if (!tree) throw config::ConfigError(tree.error());
  apply_overrides(*tree, args.all("--set"));
  if (auto seed = args.get("--seed")) apply_overrides(*tree, {"seed=" + *seed});
  sim::Scenario s = sim::decode_scenario(*tree, catalogue, formats);
  for (const auto& w : s.warnings) std::cerr << "vramsim run: warning: " << w << "\n";
  return s;
}

QuickScenario quick_scenario(const Args& args) {
  QuickScenario q{named_scenario(args), "", ""};

  const sim::Scenario& s = q.scenario;
  const std::string context = " -c " + std::to_string(s.engine.context);
  if (s.engine.expert_cache && s.engine.misses_on_cpu) {
    const std::string hot = s.engine.cache_size_bytes ? units::format_gib(*s.engine.cache_size_bytes) + " of them"
                            : s.engine.cache_slots    ? std::to_string(*s.engine.cache_slots) + " of them"
                                                      : "as many as fit";
    q.placement = !s.model.moe ? std::string("every layer on the GPU (a dense model: no routed experts for the CPU)")
                  : std::string("attention, dense layers and shared experts on the GPU, routed experts computed by the CPU") +
                  (s.engine.cache_slots == std::int64_t{0} && !s.engine.cache_size_bytes ? ""
                                                                                          : ", a hot set (" + hot + ") on the GPU");
    q.flags = "--engine " + s.engine.preset + " --context " + std::to_string(s.engine.context) +
              (s.engine.cache_size_bytes || s.engine.cache_slots != std::int64_t{0}
                   ? " --set engine.expert_cache.size=" +
                         (s.engine.cache_slots ? std::to_string(*s.engine.cache_slots) : std::to_string(static_cast<long long>(s.engine.cache_size_bytes.value_or(0) / units::kMiB)) + "MiB")
                   : std::string());
    q.flags_for = "vramsim";
    return q;
  }
  if (s.engine.kv_pool) {  // vLLM: every weight on the GPU, or the refusal (std::invalid_argument) with its numbers
    const sim::VramPlan plan = sim::plan_vram(s);
    const auto& pool = *s.engine.kv_pool;
    std::ostringstream flags, where;
    where << "every layer on the GPU, a KV pool of " << plan.kv_blocks << " blocks of " << pool.block_size << " tokens ("
          << plan.kv_blocks * pool.block_size << " tokens)";
    if (s.cards.size() > 1) flags << "--tensor-parallel-size " << s.cards.size() << " ";
    flags << "--max-model-len " << s.engine.context << " --gpu-memory-utilization " << pool.gpu_memory_utilization
          << " --max-num-seqs " << s.engine.parallel << " --block-size " << pool.block_size;
    q.placement = where.str();
    q.flags = flags.str();
    q.flags_for = "vllm serve";
    return q;
  }
  if (s.engine.expert_cache) {
    q.placement = "every layer on the GPU, routed experts in the expert cache";
    q.flags = "(the expert-cache engine)";
    return q;
  }
  if (fits(s)) {  // the placement given (by default every layer on the GPU) fits: keep it
    const Placement p = describe(s.engine.gpu_layers, s.engine.cpu_moe_layers, s.model.layers);
    q.placement = p.description;
    q.flags = p.flags + context;
    return q;
  }
  const auto placements = fitting_placements(s);
  if (placements.empty()) throw std::invalid_argument(s.model.name + " does not fit even with every layer on the CPU");
  q.scenario.engine.gpu_layers = placements.front().gpu_layers;
  q.scenario.engine.cpu_moe_layers = placements.front().cpu_moe_layers;
  q.placement = placements.front().description;
  q.flags = placements.front().flags + context;
  return q;
}

std::vector<Placement> fitting_placements(sim::Scenario s) {
  std::vector<Placement> out;
  const int layers = s.model.layers;
  s.engine.gpu_layers = layers;
  s.engine.cpu_moe_layers = 0;
  if (fits(s)) return {describe(layers, 0, layers)};
  if (s.model.moe)
    for (int n = 1; n <= layers; ++n) {
      s.engine.cpu_moe_layers = n;
      if (!fits(s)) continue;
      out.push_back(describe(layers, n, layers));
      break;
    }
  s.engine.cpu_moe_layers = 0;
  for (int g = layers - 1; g >= 0; --g) {
    s.engine.gpu_layers = g;
    if (!fits(s)) continue;
    out.push_back(describe(g, 0, layers));
    break;
  }
  return out;
}

}  // namespace vramsim::cli
