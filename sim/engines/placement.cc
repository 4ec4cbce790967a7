// llama.cpp's placements (placement.h): what each one is, its flags and --set assignments,
// and the search for those that fit. Memory-plan arithmetic only, no simulation.
#include "sim/engines/placement.h"

#include "sim/engines/engine_family.h"
#include "sim/vram_plan.h"
#include "workloads/layer_split.h"

namespace vramsim::sim::engines {

bool fits(const Scenario& s) { return plan_memory(s).ok(); }

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
  p.flags = llama_cpp_placement_flags(gpu_layers, cpu_moe_layers, layers, head_on_cpu, ngl_output_first);
  if (cpu_moe_layers > 0)
    p.description += ", the routed experts of the first " + std::to_string(cpu_moe_layers) + " of " +
                     std::to_string(layers) + " layers on the CPU";
  return p;
}

std::vector<std::string> placement_sets(const Placement& p, int layers) {
  std::vector<std::string> sets = {
      "engine.gpu_layers=" + std::to_string(ngl_flag(p.gpu_layers, layers, p.head_on_cpu, p.ngl_output_first))};
  if (p.cpu_moe_layers > 0) sets.push_back("engine.cpu_moe_layers=" + std::to_string(p.cpu_moe_layers));
  if (p.engine_accounting) sets.push_back("engine.vram_rule=engine");
  if (!p.layer_split.empty()) sets.push_back("engine.layer_split=[" + workloads::counts_text(p.layer_split) + "]");
  return sets;
}

void apply_placement(const Placement& p, EngineSetup& e) {
  e.gpu_layers = p.gpu_layers;
  e.cpu_moe_layers = p.cpu_moe_layers;
  e.head_on_cpu = p.head_on_cpu;
  if (p.engine_accounting) e.engine_vram_rule = true;
  if (!p.layer_split.empty()) e.layer_split = p.layer_split;
}

std::optional<std::vector<int>> fitting_split(Scenario s) {
  if (fits(s)) return std::vector<int>{};
  const int cards = static_cast<int>(s.cards.size());
  if (cards < 2 || s.engine.split != Split::Pipeline || !s.engine.layer_split.empty() || s.engine.expert_cache ||
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
      if (const auto shares = resident_shares(s); shares && (*shares)[c].fits()) {
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

std::string why_nothing_fits(const Scenario& scenario) {
  // A row split has no CPU stage: every layer must be on the cards.
  if (scenario.cards.size() > 1 && scenario.engine.split != Split::Pipeline)
    return "fits in no placement with a row split (engine.split: " + std::string(to_string(scenario.engine.split)) +
           "), which keeps every layer on the cards: they do not hold it; a pipeline split (engine.split: pipeline) "
           "can run layers on the CPU";
  Scenario cpu = scenario;
  cpu.engine.gpu_layers = 0;
  cpu.engine.cpu_moe_layers = 0;
  const HostRam ram = host_ram(cpu);
  if (!ram.fits())
    return "fits in no placement: the cards do not hold enough of it, and with every layer on the CPU " + ram.refusal(scenario.host.name);
  return "does not fit even with every layer on the CPU";
}

std::vector<Placement> fitting_placements(Scenario s) {
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
  if (!output_first && (s.engine.split != Split::Tensor || s.cards.size() == 1)) {
    s.engine.head_on_cpu = true;
    add_if_fits(placement(true));
  }
  // Whole layers on the CPU: the head goes with them in builds that count it last, stays on
  // the GPUs in builds that offload it first. CPU layers combine with a pipeline split only.
  if (s.cards.size() > 1 && s.engine.split != Split::Pipeline) return out;
  s.engine.head_on_cpu = !output_first;
  for (int g = layers - 1; g >= 0; --g) {
    s.engine.gpu_layers = g;
    // No GPU layer: -ngl 0 keeps the head on the CPU too, in every build.
    if (g == 0) s.engine.head_on_cpu = true;
    if (add_if_fits(placement(s.engine.head_on_cpu))) break;
  }
  return out;
}

SearchSpace only_placement(const Scenario& base, const std::string& description, const std::string& refusal) {
  if (!fits(base)) return {{}, refusal};
  SearchPoint point{base, {}, {}, std::nullopt};
  point.placement.gpu_layers = base.model.layers;
  point.placement.description = description;
  return {{point}, {}};
}

}  // namespace vramsim::sim::engines
