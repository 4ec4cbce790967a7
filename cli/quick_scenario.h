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
#include "core/result.h"
#include "sim/engines/placement.h"
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

// named_scenario() with the placement that fits and the flags to type; an Error with the reason
// when nothing fits even with every layer on the CPU. Throws UsageError or ConfigError (the
// options themselves are wrong).
Result<QuickScenario> quick_scenario(const Args& args);

// llama.cpp's placements and their search (sim/engines/placement.h), by their short names.
using sim::engines::apply_placement;
using sim::engines::describe;
using sim::engines::fits;
using sim::engines::fitting_placements;
using sim::engines::fitting_split;
using sim::engines::Placement;
using sim::engines::placement_sets;
using sim::engines::why_nothing_fits;

}  // namespace vramsim::cli
