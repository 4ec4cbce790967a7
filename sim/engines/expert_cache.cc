// vramsim's own MoE engines, which no other program runs: an expert cache in VRAM over PCIe
// whose misses the host computes or the GPU reads in place (expert-cache), and its variant with
// a GPU hot set and every other routed expert computed by the CPU (hybrid-cpu-experts,
// kTransformers-style).
#include <sstream>

#include "core/units.h"
#include "sim/engines/engine_family.h"

namespace vramsim::sim::engines {
namespace {

class ExpertCacheFamily final : public EngineFamily {
 public:
  explicit ExpertCacheFamily(bool misses_on_cpu) : misses_on_cpu_(misses_on_cpu) {}

  std::string_view name() const override { return misses_on_cpu_ ? "hybrid-cpu-experts" : "expert-cache"; }

  void check(config::MapReader& e, const EngineSetup& s) const override {
    if (!s.expert_cache)
      e.fail_at("expert_cache", "family " + std::string(name()) + " keeps its experts in an expert cache: give expert_cache "
                                "{size, reserve, policy} (preset: llama.cpp keeps experts with their layers)");
    if (misses_on_cpu_ && !s.misses_on_cpu)
      e.fail_at("expert_cache", "family hybrid-cpu-experts computes every expert outside its hot set on the CPU: "
                                "expert_cache.misses must be cpu");
  }

  // --engine E --quant Q (or both weights' formats) --context C [--set engine.expert_cache.size=N]
  // --set engine.kv_type=X [--set engine.parallel=N].
  EngineCommand command(const Scenario& s) const override {
    const EngineSetup& e = s.engine;
    std::ostringstream f;
    f << "--engine " << e.preset;
    if (e.expert_format.name == e.other_format.name)
      f << " --quant " << e.expert_format.name;
    else
      f << " --set engine.weights.experts=" << e.expert_format.name << " --set engine.weights.other=" << e.other_format.name;
    f << " --context " << e.context;
    if (e.cache_slots)
      f << " --set engine.expert_cache.size=" << *e.cache_slots;
    else if (e.cache_size_bytes)
      f << " --set engine.expert_cache.size=" << static_cast<long long>(*e.cache_size_bytes / units::kMiB) << "MiB";
    else if (e.misses_on_cpu)  // hybrid-cpu-experts: its preset has no hot set; this one was sized to the card
      f << " --set engine.expert_cache.size=auto";
    f << " --set engine.kv_type=" << e.kv.name;
    if (e.parallel != 1) f << " --set engine.parallel=" << e.parallel;
    return {"vramsim", f.str()};
  }

 private:
  bool misses_on_cpu_;
};

}  // namespace

const EngineFamily& expert_cache_family() {
  static const ExpertCacheFamily family(false);
  return family;
}

const EngineFamily& hybrid_cpu_experts_family() {
  static const ExpertCacheFamily family(true);
  return family;
}

}  // namespace vramsim::sim::engines
