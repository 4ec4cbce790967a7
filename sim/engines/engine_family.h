// Engine families: one interface, one implementation per file, registered by name in
// registry.cc and named by an engine file's `family:` key (configs/engines/*.yaml).
//   llama.cpp           llama_cpp.cc     layers and experts placed by -ngl / --n-cpu-moe / -ts
//   vllm                vllm.cc          every weight on the GPU(s), a paged KV pool, batching
//   expert-cache        expert_cache.cc  an MoE expert cache over PCIe, misses split host/PCIe
//   hybrid-cpu-experts  expert_cache.cc  a GPU hot set, every other routed expert on the CPU
// Each decodes its own keys, plans its cards' memory, gives plan's search space and its
// command line. Adding a family: a file with its class, a line in registry.cc, an engine file
// naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_reader.h"
#include "core/result.h"
#include "sim/engines/placement.h"
#include "sim/scenario.h"
#include "sim/vram_plan.h"

namespace vramsim::sim::engines {

// The program a scenario's engine runs as, and the flags that make it run what was simulated.
struct EngineCommand {
  std::string program;  // "llama.cpp", "vllm serve", "vramsim"
  std::string flags;
};

// A configuration plan's search simulates: the base scenario with it applied, its placement
// (how it reads; every layer on the GPU for a family with no placement to choose), the --set
// assignments that give it to `vramsim run`, and an expert cache's size.
struct SearchPoint {
  Scenario scenario;
  Placement placement;
  std::vector<std::string> sets;
  std::optional<std::int64_t> hot_slots;
};
// The points worth simulating for a weights format and KV type, in the family's order of
// preference; none: `none_fits` says why (plan prints it as a note).
struct SearchSpace {
  std::vector<SearchPoint> points;
  std::string none_fits;
};

// plan's one point for an engine or a part that allows one placement, every layer on the GPU:
// `base` itself when it fits (described as `description`), else none, with `refusal` as the reason.
SearchSpace only_placement(const Scenario& base, const std::string& description, const std::string& refusal);

class EngineFamily {
 public:
  virtual ~EngineFamily() = default;
  // The `family:` value that names it.
  virtual std::string_view name() const = 0;
  // Decodes the family's own sections of the engine into `s` (the expert cache of the
  // expert-cache families; vLLM's paged KV pool and the weight formats it serves) and refuses
  // another family's (a KV pool on llama.cpp, say): config::ConfigError at the key, naming the
  // family. REQUIRES: the common keys read before it (context, kv_type, slot_scheduling, split,
  // weights) are in `s`; the placement (gpu_layers, cpu_moe_layers) is read after it.
  virtual void decode(config::MapReader& e, EngineSetup& s, const workloads::ModelSpec& model, int cards) const = 0;
  // Refuses what the family does not model once every key is in `s` (vLLM with layers on the
  // CPU, say), at the key.
  virtual void check(config::MapReader&, const EngineSetup&, const workloads::ModelSpec&, int /*cards*/) const {}
  // Defaults the family takes from the cards it runs on, once the hardware is decoded (vLLM's
  // max_num_seqs and max_num_batched_tokens by the card's memory and name); `at`: the engine
  // section, for an error. REQUIRES: s.cards decoded, s.engine from decode and check.
  virtual void fit_to_cards(Scenario&, const config::Node& /*at*/) const {}
  // Where each card's memory goes when the engine starts (sim/vram_plan.h): one plan per card,
  // or an Error with the reason it does not fit, as the engine refuses to start. REQUIRES: the
  // scenario decoded (s.engine.family is this one); the host's RAM is sim::plan_memory's to check.
  virtual Result<std::vector<VramPlan>> plan_memory(const Scenario& s) const = 0;
  // plan's search space over what the family lets a user choose (llama.cpp: the placements that
  // fit; an expert cache: its size; vLLM: nothing, its one configuration fits or not).
  // REQUIRES: `base` decoded with the candidate's weights format and KV type.
  virtual SearchSpace search_space(const Scenario& base) const = 0;
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
