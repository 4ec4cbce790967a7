// Where each card's memory goes when the engine starts, and how many expert slots fit.
//
//   free at start = driver-reported total - other tenants - fixed allocations
//   fixed         = this card's non-expert weights + its KV cache (its layers, context x kv
//                   type x parallel slots) + runtime
//   slots (auto)  = floor((free at start - reserve - draft head) / slot), slot = expert rounded
//                   up to the slot alignment; at most every expert of the card's layers
// When the scenario gives the measured free VRAM (hardware.gpu.free_vram), it replaces the
// derivation, as the engine's own log line does.
//
// Several cards (engine.split): a pipeline gives each card a contiguous range of layers, in
// proportion to its free memory (or engine.layer_split), the embedding table to the first and
// the LM head to the last; a tensor split gives every card 1/N of every layer; an expert split
// keeps everything but the routed experts on the first card and deals each layer's experts by
// popularity rank (rank r to card r mod N), each card caching its own share. A dense model
// has no expert cache: it must fit, judged by the memory-budget model exactly as
// `vramsim fit --gpus N` judges it (workloads/layer_split.h). Units: bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "sim/scenario.h"
#include "workloads/layer_split.h"

namespace vramsim::sim {

struct VramPlan {
  double card_total = 0;          // driver-reported total (or nominal capacity)
  double others = 0;              // other tenants
  double non_expert_weights = 0;  // on this card
  double kv_cache = 0;            // on this card
  double runtime = 0;
  double fixed = 0;               // non-expert weights + KV + runtime
  double free_at_start = 0;
  bool free_measured = false;     // free_at_start came from the scenario
  double reserve = 0;
  double draft_head = 0;
  double expert_bytes = 0;        // one routed expert in the expert format (0 for a dense model)
  double slot_bytes = 0;          // one cache slot
  std::int64_t total_experts = 0; // the card's layers x experts
  std::int64_t slots = 0;
  double cache_bytes = 0;
  // The card's part of the model.
  int first_layer = 0;            // layers [first_layer, end_layer)
  int end_layer = 0;
  double shard = 1;               // share of each of its layers' weights (tensor: 1 / cards)
  double attention_share = 1;     // ... of its layers' attention and KV cache (tensor: 1 / cards; row split: 1 on card 0, else 0)
  double layer_bytes = 0;         // non-expert weights of one layer on this card
  double head_bytes = 0;          // LM head on this card (the last card of a pipeline)
  // A paged KV pool (engine.kv_pool): kv_cache is the pool, in blocks of block_bytes.
  std::int64_t kv_blocks = 0;
  double kv_block_bytes = 0;
  double kv_budget = 0;           // gpu_memory_utilization x card_total
  double coverage() const {
    return total_experts ? static_cast<double>(slots) / static_cast<double>(total_experts) : 1.0;
  }
  int layers() const { return end_layer - first_layer; }
};

// A paged KV pool (engine.kv_pool, vLLM): every weight on the GPUs, and per card
//   budget = gpu_memory_utilization x driver-reported total
//   pool   = budget - weights - runtime, in blocks of block_size x KV bytes per token
// With N cards (split: tensor, vLLM's --tensor-parallel-size N) each card holds 1/N of every
// weight matrix (experts included) and of the KV heads, so its weights and a block's bytes are
// 1/N of one card's; every card has the same number of blocks (the smallest card's).
// Refused when other tenants leave less than the budget free, when the weights and the
// runtime do not fit the budget, or when the pool cannot hold one sequence of engine.context
// tokens (each refusal as vLLM refuses to start).
//
// One plan per card, in card order; or an Error with a user-facing reason when what the
// placement keeps in host RAM does not fit it (host_ram), when a card's fixed allocations do
// not fit, an explicit cache size exceeds the free VRAM, or a model without an expert cache
// does not fit its cards. "Does not fit" is an answer here, not an exception: plan's search
// and the decoder's checks ask it. The host's RAM is checked here; the cards are planned by
// the scenario's engine family (EngineFamily::plan_memory, sim/engines/).
Result<std::vector<VramPlan>> plan_memory(const Scenario& scenario);

// ---- Parts of a plan the families share (sim/engines/) ------------------------------------

// A model's bytes in the engine's formats: the embedding table / LM head (one each; tied, the
// total holds the matrix once), and the non-expert weights of one layer (the rest spread evenly
// over the layers).
struct LayerBytes {
  double head = 0;
  double per_layer = 0;
};
LayerBytes layer_bytes(const Scenario& scenario);

// What the driver reports as the card's total (its nominal capacity when unknown).
double card_total(const CardSetup& card);

// Card `card`'s plan for layers [first_layer, end_layer), experts aside: its share of each
// matrix (tensor split: 1/N), the non-expert weights, KV cache and runtime it holds (an expert
// split keeps them all on card 0), the embedding table and LM head where the placement puts
// them, its free VRAM at start (measured, or what the fixed part leaves). The family adds
// the experts.
VramPlan card_plan(const Scenario& scenario, int card, int first_layer, int end_layer);

// Every weight with its layer, on the card that runs it or in RAM (llama.cpp; any family's
// dense model): the cards' shares as resident_shares deals them, refused when one overflows,
// each MoE layer's experts past --n-cpu-moe on its card.
Result<std::vector<VramPlan>> plan_resident(const Scenario& scenario);

// plan_memory's plans for a scenario known to fit (decode_scenario checked it): throws
// std::invalid_argument with the reason otherwise.
std::vector<VramPlan> plan_cards(const Scenario& scenario);

// An engine without an expert cache (llama.cpp): what each card must hold of the placement
// (its layers' weights, KV and experts past --n-cpu-moe, the LM head on the last card, the
// runtime) against what it has, card by card, as plan_cards judges it. A pipeline deals the GPU
// layers by engine.layer_split, or in proportion to the cards' room. An Error when
// engine.layer_split does not add up to the GPU layers.
Result<std::vector<workloads::CardShare>> resident_shares(const Scenario& scenario);

// Whether plan_cards judges an engine without an expert cache by the engine's own accounting
// (weights + KV + runtime against the card's total: CPU layers, CPU experts, the LM head on
// the CPU, or engine.vram_rule: engine) rather than by the memory-budget model (every layer and expert on
// the GPUs). The two differ at the edge (docs/memory-model.md).
bool judged_by_engine_accounting(const Scenario& scenario);

// Whether the LM head runs on the host CPU: EngineSetup::head_on_cpu (how the build's -ngl
// places the output layer: EngineSetup::ngl_output_first), or no layer on the GPUs (-ngl 0).
bool head_on_cpu(const Scenario& scenario);

// The host CPU's part when the engine runs the first layers on the CPU (engine.gpu_layers
// below the model's layers): those layers' weights, KV and experts in RAM ("card_total" is
// the host's RAM). nullopt when every layer is on the GPUs.
std::optional<VramPlan> plan_host(const Scenario& scenario);

// What the placement keeps in the host's RAM (docs/memory-model.md, "Host RAM"):
//   layer weights = the CPU layers' non-expert weights + the embedding table + the LM head
//                   (llama.cpp keeps its output layer on the CPU unless every layer is on the
//                   GPUs; plan_host)
//   kv            = the CPU layers' KV cache
//   experts       = with an expert cache, every routed expert (the cache's backing store);
//                   without one (llama.cpp), the experts the CPU computes: those of the CPU
//                   layers and of --n-cpu-moe; 0 for a dense model or a paged-KV engine
// The GPU layers' weights are not counted: the engine copies them to VRAM and the OS may drop
// their (mmap'd) pages. Nor are the OS and other processes: `capacity` is the host's whole RAM.
struct HostRam {
  double layer_weights = 0;
  double kv = 0;
  double experts = 0;
  double capacity = 0;
  double total() const { return layer_weights + kv + experts; }
  bool fits() const { return total() <= capacity; }
  // "the CPU layers' weights (a) + their KV (b) + the experts kept in RAM (c) = t exceed <host>'s RAM (r)"
  std::string refusal(const std::string& host) const;
};
HostRam host_ram(const Scenario& scenario);

// The one card of a one-card scenario (the first card's plan otherwise).
inline VramPlan plan_vram(const Scenario& scenario) { return plan_cards(scenario).front(); }

}  // namespace vramsim::sim
