// Engine families: one interface, one implementation per file, registered by name in
// registry.cc and named by an engine file's `family:` key (configs/engines/*.yaml).
//   llama.cpp           llama_cpp.cc     layers and experts placed by -ngl / --n-cpu-moe / -ts
//   vllm                vllm.cc          every weight on the GPU(s), a paged KV pool, batching
//   expert-cache        expert_cache.cc  an MoE expert cache over PCIe, misses split host/PCIe
//   hybrid-cpu-experts  expert_cache.cc  a GPU hot set, every other routed expert on the CPU
// Adding a family: a file with its class, a line in registry.cc, an engine file naming it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config_reader.h"
#include "sim/scenario.h"

namespace vramsim::sim::engines {

// The program a scenario's engine runs as, and the flags that make it run what was simulated.
struct EngineCommand {
  std::string program;  // "llama.cpp", "vllm serve", "vramsim"
  std::string flags;
};

class EngineFamily {
 public:
  virtual ~EngineFamily() = default;
  // The `family:` value that names it.
  virtual std::string_view name() const = 0;
  // Refuses a decoded engine section whose keys this family does not have (a KV pool on
  // llama.cpp, say): throws config::ConfigError at the key in `e`, naming the family.
  virtual void check(config::MapReader& e, const EngineSetup& setup) const = 0;
  // The command that runs the decoded scenario's engine (REQUIRES: s.engine.family is this one).
  virtual EngineCommand command(const Scenario& s) const = 0;
};

// The family `id` names (registry.cc).
const EngineFamily& family(EngineFamilyId id);
// The family named `name`, or nullptr; and every family's name, in registry order.
const EngineFamily* find_family(std::string_view name, EngineFamilyId* id = nullptr);
std::vector<std::string> family_names();

// llama.cpp's placement flags: "-ngl N" and "--n-cpu-moe N" or "--cpu-moe" (llama_cpp.cc).
std::string llama_cpp_placement_flags(int gpu_layers, int cpu_moe_layers, int layers, bool head_on_cpu, bool ngl_output_first);

// Families defined in their files (registry.cc lists them).
const EngineFamily& llama_cpp_family();
const EngineFamily& vllm_family();
const EngineFamily& expert_cache_family();
const EngineFamily& hybrid_cpu_experts_family();

}  // namespace vramsim::sim::engines
