// `vramsim run --model M --gpu G [...]` without a scenario file: a scenario built from catalogue
// names, and (for an engine without an expert cache, e.g. llama.cpp) the placement that fits:
// every layer on the GPUs if it can; for an MoE model, all layers on the GPUs with the fewest
// layers' experts on the CPU (--n-cpu-moe); else the most layers on the GPUs (-ngl). An engine
// with a paged KV pool (vllm) keeps every weight on the GPU or refuses, with its numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "sim/scenario.h"

namespace vramsim::cli {

// What a scenario built from names runs: a context of kDefaultContext tokens unless --context
// says otherwise, and requests of kPromptTokens + kGenTokens.
inline constexpr std::int64_t kDefaultContext = 4096;
inline constexpr std::int64_t kPromptTokens = 512;
inline constexpr std::int64_t kGenTokens = 128;

struct QuickScenario {
  sim::Scenario scenario;
  std::string placement;  // "every layer on the GPU", "-ngl 38 (42 of 80 layers on the CPU)", ...
  std::string flags;      // engine_flags(scenario).flags, e.g. "-ngl 99 --n-cpu-moe 12 -c 4096"
  std::string flags_for = "llama.cpp";  // engine_flags(scenario).engine
};

// A scenario's cards as the command lines print them: "2 x rtx-3090", or for a mixed machine
// "rtx-3090 + rtx-5090" (device 0 first).
std::string machine_text(const sim::Scenario& scenario);

// The flags that make an engine run what a decoded scenario simulates (used by `run --model`
// and `plan`; built from the final scenario, so that every --set shows):
// - llama.cpp (llama-server): -ngl N [--n-cpu-moe N | --cpu-moe] [--split-mode row] -c C [-np N]
//   [-ctk X -ctv X -fa on]. The scenario's context is per slot, llama-server's -c is shared by
//   its -np slots: -c = context x parallel. A quantized KV cache needs Flash Attention.
// - vllm serve: [--tensor-parallel-size N] [--quantization fp8] [--kv-cache-dtype X]
//   --max-model-len C --gpu-memory-utilization U --max-num-seqs N --block-size B.
// - vramsim (expert-cache, hybrid-cpu-experts: no other program runs them): --engine E --quant Q
//   (or both weights' formats) --context C [--set engine.expert_cache.size=N]
//   --set engine.kv_type=X [--set engine.parallel=N].
struct EngineFlags {
  std::string engine;  // "llama.cpp", "vllm serve", "vramsim"
  std::string flags;
};
EngineFlags engine_flags(const sim::Scenario& scenario);

// The scenario the options of `run` name (see run --help), decoded but not yet placed: the
// engine's own placement keys, whether or not they fit. Throws UsageError or ConfigError.
// `warn`: print the scenario's warnings (fit, which only sizes the scenario, keeps its own).
sim::Scenario named_scenario(const Args& args, const std::string& command = "run", bool warn = true);

// named_scenario() with the placement that fits and the flags to type. Throws UsageError or
// ConfigError; std::invalid_argument when nothing fits even with every layer on the CPU.
QuickScenario quick_scenario(const Args& args);

// One way to place the model (engines without an expert cache).
struct Placement {
  int gpu_layers = 0;
  int cpu_moe_layers = 0;
  std::string description;
  std::string flags;  // llama.cpp's, without -c
  bool layers_on_cpu = false;  // some whole layers run on the CPU
  bool head_on_cpu = false;    // the LM head on the CPU (sim::EngineSetup::head_on_cpu)
  bool ngl_output_first = true;  // the flags are for a build whose -ngl counts the output first
  bool engine_accounting = false;  // fits by llama.cpp's own accounting only (engine.vram_rule=engine)
  // GPU layers per card (engine.layer_split, llama.cpp's -ts) when the default split by free
  // memory does not fit the placement and this one does; empty: the default split.
  std::vector<int> layer_split;
};

// Whether the scenario's memory plan works out on its cards (sim::plan_cards does not refuse it).
bool fits(const sim::Scenario& scenario);

// The description and flags of a placement, the flags for a build whose -ngl counts the
// output layer first or last (sim::EngineSetup::ngl_output_first).
Placement describe(int gpu_layers, int cpu_moe_layers, int layers, bool head_on_cpu, bool ngl_output_first);

// The --set assignments that give a placement of a `layers`-layer model ("engine.gpu_layers=N",
// and "engine.cpu_moe_layers=M" when it has CPU experts), and the placement applied to an engine.
std::vector<std::string> placement_sets(const Placement& placement, int layers);
void apply_placement(const Placement& placement, sim::EngineSetup& engine);

// The GPU layers per card that let a pipeline hold the scenario's placement: empty when the
// default split (by free memory) fits; else each card filled with as many layers as it holds,
// in llama.cpp's --fit order (common/fit.cpp: a dense model's cards from the last, an MoE's with
// CPU experts from the first), the remaining card taking the rest; nullopt
// when no split fits, or the scenario sets engine.layer_split itself, or it is not a pipeline.
std::optional<std::vector<int>> fitting_split(sim::Scenario scenario);

// The placements worth simulating that fit: every layer on the GPUs; else, for an MoE model,
// every layer on the GPUs with the fewest layers' experts on the CPU; every layer on the GPUs
// but the LM head (builds whose -ngl counts the output last); and the most layers on the GPUs
// with the rest on the CPU (with the head on the GPUs in builds that offload it first). In that
// order; empty when none fits. Over a pipeline, each with the layer split that fits it
// (fitting_split).
std::vector<Placement> fitting_placements(sim::Scenario scenario);
// Why fitting_placements() found none: the host's RAM when even every layer on the CPU exceeds
// it (then neither the cards nor the RAM hold the model), else the cards.
std::string why_nothing_fits(const sim::Scenario& scenario);

}  // namespace vramsim::cli
