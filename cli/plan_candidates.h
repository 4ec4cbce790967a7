// plan's candidates: for a weights format and a KV-cache type, the configurations that fit
// (the memory plan is arithmetic: nothing is simulated here), each with the flags that run it,
// or the reason none does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/quick_scenario.h"

namespace vramsim::cli {

struct Candidate {
  std::int64_t max_context = 0;  // the largest context this placement still fits (tokens)
  std::string quant, kv;
  Placement placement;
  std::optional<std::int64_t> hot_slots;  // engines with an expert cache: its size in slots
  std::vector<std::string> sets;          // the overrides its `vramsim run` gets (key=value)
  // One card of a mixed machine alone (CandidateSpace::one_card): that card (its --gpu) and its
  // device index; empty: the whole machine plan was given.
  std::string gpu;
  int device = -1;
  std::string flags, engine;  // engine_flags(): the flags and the program they are for
  std::string context_note;  // "-c up to N fits"
  double decode = 0, prefill = 0, ttft = 0, throughput = 0;
  // Energy per generated token: the GPU boards, and with the host's CPU packages (NaN: none).
  double j_per_token = 0, j_per_token_with_host = 0;
  std::string error;
};

// A note for a weights format and KV type plan did not simulate.
struct Skipped {
  std::string quant;
  std::vector<std::string> kv;
  std::string reason;
};

// What every candidate shares: plan's own options (--model, --gpu, --set, ...) and the
// workload's --set assignments.
struct CandidateSpace {
  const Args& args;
  const std::vector<std::string>& workload;
  // One card of a mixed machine, the others idle (llama.cpp's -sm none -mg DEVICE: one GPU
  // only): a model that fits the faster card alone decodes faster there than split with a
  // slower one. Empty: every card of --gpu.
  std::string one_card;
  int device = -1;
};

// Adds the candidates of `quant` with KV type `kv` that fit (the scenario `run` would build for
// each, its placements, cache sizes or pool), or a note in `skipped` saying why none does.
// Returns whether one of them keeps every layer and the LM head on the GPUs.
bool add_candidates(const CandidateSpace& space, const std::string& quant, const std::string& kv,
                    std::vector<Candidate>& candidates, std::vector<Skipped>& skipped);

// "Q4_K_M (KV f16, q8_0): the reason".
std::string note(const Skipped& s);

}  // namespace vramsim::cli
