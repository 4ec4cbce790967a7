// One request's life on one engine slot, in plain C++ (the hot path): routing per token and
// layer, cache look-ups, the miss split and the step model. The engine (engine.h) asks it for
// the next phase and turns each into SimGrid activities.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/expert_cache.h"
#include "sim/routing.h"
#include "sim/step_model.h"

namespace vramsim::sim {

// Per-layer detail of one step, kept for the first steps of a run (the trace).
struct LayerTrace {
  StepCosts costs;
  LayerExperts experts;
};

struct StepResult {
  StepCosts costs;                    // the step on one card, or summed over a pipeline's cards
  std::vector<StepCosts> stage_costs; // per card (stage)
  std::vector<int> exchanges;         // expert split: per card, layers whose hidden states went to it and back
  double exchange_s = 0;              // expert split: per layer the longest exchange (they run at once), summed
  int tokens_out = 0;                 // tokens this step adds to the output
  int positions = 0;                  // positions it verified: 1 + its drafts, summed over a batch's requests
  int drafts = 0;                     // draft passes it ran (a batch: its longest draft)
  std::vector<LayerTrace> layers;     // filled only when asked
};

// A pipeline step's floor from its cards' link work: stage i starts once the stages before it
// are done, and the step ends no earlier than start_i + link_busy_i (a card's reads, copies and
// profile-lru's background copies); the wait is booked as transfer on the last stage.
void pipeline_link_floor(StepResult& out);

// Counters of one request.
struct RequestCounters {
  std::int64_t lookups = 0;           // (token, layer, expert) look-ups at every verified position
  std::int64_t lookup_hits = 0;       // ... whose expert was resident
  std::int64_t distinct_lookups = 0;  // distinct experts per layer and step
  std::int64_t distinct_hits = 0;
  std::int64_t pcie_reads = 0;        // distinct experts read by the GPU over PCIe
  std::int64_t cpu_experts = 0;       // distinct experts computed by the host
  std::int64_t copies = 0;            // experts copied into the cache (lru/lfu)
  std::int64_t steps = 0;
  std::int64_t drafted = 0;
  std::int64_t accepted = 0;
};

// One card's part of every step: its layers, its step model and (MoE) its expert cache, which
// holds the card's layers only (layer index - first_layer).
struct Stage {
  int first_layer = 0;
  int end_layer = 0;
  const StepModel* model = nullptr;
  ExpertCache* cache = nullptr;  // null without an expert cache (dense, or experts with their layer)
  int card = 0;                  // -1: the host CPU's layers
  // Without a cache: layers below this keep their experts in RAM (--n-cpu-moe), computed by the
  // host; the rest are resident with their layer.
  int cpu_moe_end = 0;
};

class RequestRunner {
 public:
  // `stages` in card order. A pipeline's stages hold disjoint layer ranges and run one after
  // the other; a tensor split's stages each run every layer (a shard of it) side by side, and
  // the step's `costs` are then its slowest card's. An expert split's first stage runs the
  // attention and the rest; every stage holds the experts of ranks r = card (mod N) of every
  // layer (its cache indexed by r / N), computed on its card while the first card waits:
  // layer = attention + max(first card's experts, max over cards c of exchange_s[c] + its
  // experts), where `exchange_s` (set_exchange) is the round trip of the hidden states. The
  // host's miss capacity per layer (the first card's host_expert_slots) is shared by all
  // cards, first card first. `popularity` is unused for a dense model.
  RequestRunner(const Scenario& scenario, std::vector<Stage> stages, const LayerPopularity& popularity,
                std::uint64_t request_id, std::int64_t prompt_tokens, std::int64_t gen_tokens,
                Split split = Split::Single);

  // Expert split: seconds to send one step's hidden states to card c and back (c >= 1).
  void set_exchange(std::vector<double> exchange_s) { exchange_s_ = std::move(exchange_s); }

  // Prompt tokens taken from a cached shared prefix (0 <= tokens < prompt): prefill runs over
  // the rest only; decode still attends to the whole prompt.
  void set_reused(std::int64_t tokens) { reused_ = tokens; }
  std::int64_t prefill_tokens() const { return prompt_tokens_ - reused_ + recomputed_; }
  // Its tokens so far, prompt and output: what the next decode step's positions attend to, and
  // what a recompute prefill after a preemption refills.
  std::int64_t context() const { return prompt_tokens_ + generated_; }
  // Positions in its KV cache: its tokens but the last output one, which the next decode step
  // feeds (the last token of all is never fed). At most prompt + gen_tokens - 1.
  std::int64_t kv_positions() const { return prompt_tokens_ + decoded(); }
  // Tokens generated after the first (the prefill's): the decode steps' output.
  std::int64_t decoded() const { return std::max<std::int64_t>(0, generated_ - 1); }
  std::int64_t prompt_tokens() const { return prompt_tokens_; }
  std::int64_t gen_tokens() const { return gen_tokens_; }  // the output it will generate
  // Prefill of the prompt's new tokens; per card in `per_stage` when given.
  StepCosts prefill(std::vector<StepCosts>* per_stage = nullptr);
  // Positions already in the KV cache when its prefill starts: the reused prefix.
  std::int64_t cached_before_prefill() const { return reused_; }
  // One sequence of a prefill pass: its new tokens and the positions before them in its cache.
  using PrefillSequence = PromptSequence;
  // This request's sequence in its next prefill pass.
  PrefillSequence prefill_sequence() const { return {prefill_tokens(), cached_before_prefill()}; }
  // Several sequences prefilled in one pass (an engine batching prompts, as vLLM's scheduler
  // does): the weights and the experts the tokens touch are read once for all of them, the
  // GEMMs run over all their tokens, and each sequence's attention covers itself only. Uses
  // this request's routing model; per card in `per_stage` when given.
  StepCosts prefill_of(const std::vector<PrefillSequence>& sequences, std::vector<StepCosts>* per_stage = nullptr) const;
  bool done() const { return generated_ >= gen_tokens_; }
  // Drafts its next decode step verifies: engine.draft_tokens, but never more than the tokens it
  // still has to generate after the step's own (llama.cpp's server_slot::get_n_draft_max caps the
  // draft at n_remaining - 1 when the request sets n_predict / max_tokens; a simulated request
  // always has its gen_tokens); 0 without speculative decoding.
  int next_drafts() const {
    if (!s_.engine.speculative) return 0;
    return static_cast<int>(std::clamp<std::int64_t>(gen_tokens_ - generated_ - 1, 0, s_.engine.draft_tokens));
  }
  // A prefill pass over this request has finished: its last position's logits give the next
  // output token (the first one, or after a preemption the next), without a decode step.
  // The experts its prompt touched enter a copy-in (lru, lfu) cache: StepModel::prefill charged
  // their copies (admit_prompt_experts).
  void take_prefill_token();
  // One decode step; `keep_layers` asks for the per-layer detail.
  StepResult step(bool keep_layers);

  // Preempted by a paged KV pool (recompute): its next prefill runs over the prompt and the
  // tokens generated so far.
  void preempt() { recomputed_ = generated_; }

  const RequestCounters& counters() const { return counters_; }
  std::int64_t generated() const { return generated_; }
  double alpha() const { return router_ ? router_->alpha() : 0.0; }

 private:
  friend class BatchStep;
  // After a step's routing: the drafts accepted, the tokens added, the counters; returns the
  // tokens this step adds to the output.
  int advance(int tokens, int drafts);
  void route_layer(const Stage& stage, int layer, int tokens, LayerExperts& e);
  // The stage's cache index of model layer `layer`: the cache holds the stage's MoE layers only.
  int cache_layer(const Stage& stage, int layer) const { return layer - std::max(stage.first_layer, first_moe_); }
  // Whether the stage's misses are copied into its cache (lru, lfu) rather than served in place.
  bool copies_misses(const Stage& stage) const {
    return stage.cache && stage.cache->traits().copies_every_miss();
  }
  void step_expert_split(int tokens, int drafts, std::int64_t kv_tokens, StepResult& out);
  // A prefill of `tokens` into copy-in caches (lru, lfu): each expert of each of the stage's
  // MoE layers is drawn touched with its probability 1 - (1 - pi)^tokens (Popularity::touched_by,
  // the expectation StepModel::prefill charges), from this request's own counter stream; the
  // touched ones are used (resident) or copied in (missing), coldest first, so that the hottest,
  // which the prompt's last tokens most likely used, end up most recently used.
  void admit_prompt_experts(std::int64_t tokens);

  const Scenario& s_;
  std::vector<Stage> stages_;
  bool side_by_side_ = false;  // tensor split
  bool expert_split_ = false;
  std::vector<double> exchange_s_;
  std::vector<LayerExperts> card_experts_;  // expert split: per card, this layer's
  const LayerPopularity& popularity_;
  std::optional<RequestRouter> router_;  // MoE only; indexed by MoE layer (layer - first_moe_)
  int first_moe_ = 0;                    // the model's first layer with routed experts
  CounterRng rng_;
  std::int64_t prompt_tokens_;
  std::int64_t gen_tokens_;
  std::int64_t reused_ = 0;
  std::int64_t recomputed_ = 0;  // generated tokens to prefill again after a preemption
  std::int64_t generated_ = 0;
  std::uint64_t routed_tokens_ = 0;  // routing counter: every verified position gets a fresh token id
  double accept_probability_ = 0;    // per draft position, given the previous ones were accepted
  std::vector<std::uint32_t> seen_;  // per expert: the last (step, layer) stamp that looked it up
  std::uint32_t stamp_ = 0;
  std::vector<int> missed_;
  RequestCounters counters_;
};

// Continuous batching (engine.slot_scheduling: batched): one decode step for every running
// request together. Per card and layer: the non-expert weights are read once for the batch's
// positions (each request its 1 + next_drafts()), each request's KV at its own context, and (MoE) the experts looked up are
// the union of every request's tokens' experts (each request keeps its own router); the
// union's misses go to the host or over PCIe by the engine's usual rules, attributed to the
// request whose token touched each first. The per-step work (LM head, host step work) is paid
// once. A card's step is at least its FLOPs over its compute rate (StepModel::compute_floor).
// With one request the step is that request's own RequestRunner::step.
class BatchStep {
 public:
  StepResult run(const std::vector<RequestRunner*>& batch, bool keep_layers);
  // Summed over every MoE layer of every step: distinct experts the batch looked up, and the
  // sum of each request's own distinct experts (union <= sum).
  std::int64_t union_experts() const { return union_experts_; }
  std::int64_t request_experts() const { return request_experts_; }
  std::int64_t moe_layer_steps() const { return layer_steps_; }

 private:
  void route_layer(const std::vector<RequestRunner*>& batch, const Stage& stage, int layer, LayerExperts& e);
  std::vector<std::uint32_t> seen_;  // per expert: the last (step, layer) stamp the batch looked it up
  std::uint32_t stamp_ = 0;
  std::vector<std::pair<int, RequestRunner*>> missed_;  // expert, the request that touched it first
  std::int64_t union_experts_ = 0;
  std::int64_t request_experts_ = 0;
  std::int64_t layer_steps_ = 0;
};

// The per-position acceptance probability a with a + a^2 + ... + a^d = d x acceptance
// (engines report acceptance as accepted / drafted; drafting stops at the first rejection).
double conditional_acceptance(int draft_tokens, double acceptance);

}  // namespace vramsim::sim
