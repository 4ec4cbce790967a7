// llama.cpp (llama-server, llama-bench): every weight with its layer, in VRAM or in RAM as the
// placement says (-ngl, --n-cpu-moe, -ts), serial slots sharing one decode loop or batched.
#include <sstream>

#include "sim/engines/engine_family.h"
#include "sim/vram_plan.h"
#include "workloads/layer_split.h"

namespace vramsim::sim::engines {

std::string llama_cpp_placement_flags(int gpu_layers, int cpu_moe_layers, int layers, bool head_on_cpu, bool ngl_output_first) {
  std::string flags = "-ngl " + std::to_string(ngl_flag(gpu_layers, layers, head_on_cpu, ngl_output_first));
  if (cpu_moe_layers > 0) flags += cpu_moe_layers == layers ? " --cpu-moe" : " --n-cpu-moe " + std::to_string(cpu_moe_layers);
  return flags;
}

namespace {

class LlamaCpp final : public EngineFamily {
 public:
  std::string_view name() const override { return "llama.cpp"; }

  void decode(config::MapReader& e, EngineSetup& s, const workloads::ModelSpec&, int) const override {
    s.row_split = s.split == Split::Tensor;  // llama.cpp's only tensor split (sim/row_split.h)
    if (e.has("expert_cache"))
      e.fail_at("expert_cache", "family llama.cpp keeps each layer's experts with it (in VRAM, or in RAM with --n-cpu-moe): "
                                "it has no expert cache (preset: expert-cache has one)");
    if (e.has("kv_pool")) e.fail_at("kv_pool", "family llama.cpp has no paged KV pool (preset: vllm has one)");
  }

  // Every weight with its layer (sim/vram_plan.h, plan_resident).
  Result<std::vector<VramPlan>> plan_memory(const Scenario& s) const override { return plan_resident(s); }

  // Every layer on the GPUs if it fits, then the placements with some on the CPU
  // (fitting_placements); an Apple part runs every layer on its GPU (sim/scenario.cc).
  SearchSpace search_space(const Scenario& scenario) const override {
    Scenario base = scenario;
    base.engine.gpu_layers = base.model.layers;
    base.engine.cpu_moe_layers = 0;
    if (base.gpu.spec.unified())
      return only_placement(base, "every layer on the GPU", "every layer on the GPU needs more than its share of the unified memory");
    SearchSpace space;
    for (const auto& p : fitting_placements(base)) {
      SearchPoint point{base, p, placement_sets(p, base.model.layers), std::nullopt};
      apply_placement(p, point.scenario.engine);
      space.points.push_back(std::move(point));
    }
    if (space.points.empty()) space.none_fits = why_nothing_fits(base);
    return space;
  }

  // -ngl N [--n-cpu-moe N | --cpu-moe] [--split-mode row] [-ts A,B] -c C [-b B] [-ub U] [-np N]
  // [-ctk X -ctv X -fa on]. The scenario's context is per slot, llama-server's -c is shared by
  // its -np slots: -c = context x parallel. A quantized KV cache needs Flash Attention.
  EngineCommand command(const Scenario& s) const override {
    const EngineSetup& e = s.engine;
    const std::string kv = e.kv.name;
    std::ostringstream f;
    f << llama_cpp_placement_flags(e.gpu_layers, e.cpu_moe_layers, s.model.layers, e.head_on_cpu, e.ngl_output_first);
    if (s.cards.size() > 1 && e.split == Split::Tensor) f << " --split-mode row";
    // A pipeline's layers per card as -ts proportions, always: the split simulated (the
    // scenario's, or the default the simulation took) is then the one the flags give. llama.cpp
    // deals min(-ngl, layers + 1) "layers" by -ts, the output layer among them when it is
    // offloaded (the last card's): counts that include it split exactly there.
    std::vector<int> split = e.gpu_layers > 0 ? e.layer_split : std::vector<int>{};  // -ngl 0: nothing to split
    if (split.empty() && s.cards.size() > 1 && e.split == Split::Pipeline && e.gpu_layers > 0)
      if (const auto shares = resident_shares(s))  // else no split to print: the placement does not deal
        for (const auto& share : *shares) split.push_back(share.end_layer - share.first_layer);
    if (!split.empty()) {
      std::size_t last = split.size() - 1;  // the card with the last layer holds the head
      while (last > 0 && split[last] == 0) --last;
      if (!e.head_on_cpu) ++split[last];
      f << " -ts " << workloads::counts_text(split);
    }
    f << " -c " << e.context * e.parallel;
    // -ub (llama.cpp's default 512); a micro-batch above the logical batch (-b, 2048) needs both.
    // 0, a whole prompt at once: both as large as the context.
    if (const int ub = e.physics.prefill_ubatch; ub != 512) {
      const std::int64_t size = ub > 0 ? ub : e.context * e.parallel;
      if (size > 2048) f << " -b " << size;
      f << " -ub " << size;
    }
    if (e.parallel != 1) f << " -np " << e.parallel;
    if (kv != "f16") f << " -ctk " << kv << " -ctv " << kv << " -fa on";
    return {"llama.cpp", f.str()};
  }
};

}  // namespace

const EngineFamily& llama_cpp_family() {
  static const LlamaCpp family;
  return family;
}

}  // namespace vramsim::sim::engines
