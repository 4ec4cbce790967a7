// vLLM (`vllm serve`): every weight on the GPU(s) (one, or a tensor split's), a paged KV pool
// allocated at start, continuous batching.
#include <cstdio>
#include <sstream>

#include "sim/engines/engine_family.h"
#include "workloads/formats.h"

namespace vramsim::sim::engines {
namespace {

class Vllm final : public EngineFamily {
 public:
  std::string_view name() const override { return "vllm"; }

  void check(config::MapReader& e, const EngineSetup& s) const override {
    if (!s.kv_pool)
      e.fail_at("kv_pool", "family vllm allocates a paged KV pool at start: give kv_pool "
                           "{gpu_memory_utilization, block_size} (the vllm preset has one)");
  }

  // [--tensor-parallel-size N] [--quantization fp8] [--kv-cache-dtype X] --max-model-len C
  // --gpu-memory-utilization U --max-num-seqs N --block-size B.
  EngineCommand command(const Scenario& s) const override {
    const EngineSetup& e = s.engine;
    const std::string kv = e.kv.name;
    std::ostringstream f;
    const std::string native = workloads::upper(s.model.native_format);
    const bool sixteen_bit_checkpoint = native == "BF16" || native == "F16";
    if (s.cards.size() > 1) f << "--tensor-parallel-size " << s.cards.size() << " ";
    if (sixteen_bit_checkpoint && workloads::upper(e.other_format.name) == "FP8") f << "--quantization fp8 ";
    // "auto" (the default) is the model's dtype: a 16-bit cache.
    if (workloads::upper(kv) != "BF16" && workloads::upper(kv) != "F16") f << "--kv-cache-dtype " << kv << " ";
    char utilization[32];
    std::snprintf(utilization, sizeof utilization, "%g", e.kv_pool->gpu_memory_utilization);
    f << "--max-model-len " << e.context << " --gpu-memory-utilization " << utilization << " --max-num-seqs " << e.parallel
      << " --block-size " << e.kv_pool->block_size;
    return {"vllm serve", f.str()};
  }
};

}  // namespace

const EngineFamily& vllm_family() {
  static const Vllm family;
  return family;
}

}  // namespace vramsim::sim::engines
