// `vramsim run`: the event simulation of one scenario.
//
// SimGrid holds the platform (host CPU, the cards, their host links, an optional PCIe switch
// and card-to-card link; platform.h) and the actors: closed-loop clients and the engine's
// parallel slots. Several cards run a split (engine.split): a pipeline runs each card's layers
// in turn and hands the activations to the next card over the platform (slots' steps on
// different cards overlap, so concurrent requests fill the pipeline); a tensor split runs
// every layer on all cards at once and all-reduces twice per layer (fabric.h). Each decode step becomes a
// GPU activity (its duration from the step model) and, when it reads over PCIe, a transfer on
// the link, so that slots that run at once share the GPU and the link. Routing, cache look-ups
// and the step model stay in plain C++ (request_runner.h).
//
// One SimGrid engine per process: run_scenario() may be called once per process.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/routing.h"
#include "sim/scenario.h"
#include "sim/step_model.h"
#include "sim/vram_plan.h"

namespace vramsim::sim {

struct RequestRecord {
  std::uint64_t id = 0;
  int client = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t gen_tokens = 0;
  std::int64_t reused_tokens = 0;  // prompt tokens taken from a cached shared prefix (not prefilled)
  double arrival_s = 0;
  double start_s = 0;
  double first_token_s = 0;
  double end_s = 0;
  double hit_rate = 0;         // resident share of look-ups (every verified position); NaN: an MoE request without look-ups
  double pcie_overflow = 0;    // experts read by the GPU over PCIe / routed (top-k x layers x decoded tokens); NaN: none
  double decode_tok_s = 0;     // tokens of decode steps / their time (the first token, the prefill's, and its time excluded); NaN: none
  double ttft_s = 0;           // arrival to first token
  double prefill_s = 0;
  double request_share = 0;    // the routing's per-request share (alpha)
  std::int64_t lookups = 0, lookup_hits = 0, routed = 0, distinct_lookups = 0, distinct_hits = 0, pcie_reads = 0, steps = 0,
               drafted = 0, accepted = 0;
};

// One event of the timeline trace (Chrome/Perfetto "complete" events).
struct TraceEvent {
  std::string name;
  std::string track;
  double start_s = 0;
  double duration_s = 0;
};

// A request the engine turned away at arrival.
struct RejectedRequest {
  std::uint64_t id = 0;
  int client = 0;
  std::int64_t prompt_tokens = 0;
  double arrival_s = 0;
  const char* reason = "";  // rejected_by_reason's key: "prompt_exceeds_context", "queue_full", ...
};

struct RunOptions {
  int trace_steps = 0;  // keep per-layer detail for this many first decode steps
  std::function<void(const RequestRecord&)> on_request;  // called as each request completes
  std::function<void(const RejectedRequest&)> on_reject;  // called as a request is turned away
  std::function<void(int done, int total)> on_progress;  // for a progress indication
};

// The per-request figures the summary's percentiles need (24 bytes a request).
struct RequestSample {
  float hit_rate = 0;
  float pcie_overflow = 0;
  float decode_tok_s = 0;
  float ttft_s = 0;
  float e2e_s = 0;
  float prefill_tok_s = 0;
};

// One link's traffic over the run.
struct LinkUse {
  std::string name;        // "pcie0 (pcie-gen4-x16)", "nvlink", "switch uplink"
  double bandwidth = 0;    // bytes per second, per direction
  double bytes = 0;        // carried in the busier direction (each direction has `bandwidth`)
};

struct RunResult {
  VramPlan plan;                        // the first card's
  std::vector<VramPlan> cards;          // every card's
  std::optional<VramPlan> host_plan;    // the host CPU's layers (engine.gpu_layers), if any
  double host_busy_s = 0;               // time the host CPU spent running its layers
  struct CardUse {
    double busy_s = 0;      // time with a kernel resident
    double compute_s = 0;   // of which streaming weights and KV (useful)
    double vram_bytes = 0;  // streamed from this card's VRAM
    double flops = 0;       // computed on this card (its shard of the GEMMs and attention)
  };
  std::vector<CardUse> card_use;        // per card
  std::vector<LinkUse> links;           // per card host link, then the switch uplink and card-to-card links
  double handoff_s = 0;                 // pipeline: time spent handing activations between cards
  double collective_s = 0;              // tensor: time spent in all-reduces
  LayerPopularity popularity;  // one per MoE layer
  double pcie_frac = 0;
  // Per card: the missed experts per layer and step the host computes for it (its link sets
  // pcie_frac); the rest go over PCIe. Empty without such a split (no expert cache, misses all
  // on the CPU, or a copy-in policy that copies every miss).
  std::vector<int> host_expert_slots;
  double prefill_fill_s = 0;            // pre-filling the cache at start
  std::vector<RequestSample> samples;   // one per completed request, in completion order
  std::int64_t completed = 0;
  std::int64_t rejected_context = 0;    // prompt longer than the context window (HTTP 400)
  std::int64_t rejected_output = 0;     // paged KV (vLLM): prompt + requested output over the window (HTTP 400)
  std::int64_t rejected_queue = 0;      // admission control: the queue was at engine.max_queue
  std::int64_t rejected_pool = 0;       // paged KV (vLLM): the prompt's blocks exceed the pool less its watermark
  std::int64_t rejected() const { return rejected_context + rejected_output + rejected_queue + rejected_pool; }
  std::int64_t truncated = 0;           // output stopped where the context window was full
  std::int64_t prefix_hits = 0;         // requests that reused a cached shared prefix
  std::int64_t reused_tokens = 0;       // prompt tokens taken from the prefix cache
  std::int64_t prefilled_tokens = 0;    // prompt tokens prefilled
  std::vector<double> client_tok_s;     // closed loop, per client: generated tokens / (last completion - first send)
  struct QueueLength {                  // requests waiting for a slot, over the makespan
    double mean = 0;                    // time-weighted
    int max = 0;
    double interval_s = 0;              // of the series
    std::vector<double> series;         // time-weighted mean per interval, at most 100
  } queue;
  struct Batching {                     // continuous batching (engine.slot_scheduling: batched)
    std::int64_t steps = 0;             // decode steps, each for every running request
    std::int64_t requests = 0;          // summed over those steps: the requests in each
    int max = 0;                        // most requests in one step
    std::int64_t preempted = 0;         // paged KV pool: running requests preempted for blocks (recomputed)
    std::int64_t kv_blocks_peak = 0;    // paged KV pool: most blocks held at once
    // MoE, summed over every layer of every step: distinct experts the batch looked up (the
    // union), and each request's own distinct experts added up.
    std::int64_t union_experts = 0;
    std::int64_t request_experts = 0;
    std::int64_t moe_layer_steps = 0;
  } batch;
  StepCosts decode;                     // summed over all decode steps
  StepCosts prefill;
  double makespan_s = 0;
  std::int64_t generated_tokens = 0;
  std::int64_t decode_steps = 0;
  // Overlapped slots (slot_scheduling: overlapped): the steps' simulated wall time, each from
  // its start to its end with the other slots sharing the GPU and link (`decode` holds each
  // step's own, uncontended costs); 0 otherwise.
  double contended_step_s = 0;
  std::int64_t contended_steps = 0;
  std::int64_t simgrid_activities = 0;
  double gpu_resident_s = 0;            // time with a kernel resident
  double gpu_busy_useful_s = 0;         // time streaming weights/KV (useful)
  std::vector<TraceEvent> trace;
};

// Runs the scenario. Throws std::invalid_argument for impossible scenarios (see plan_vram).
RunResult run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace vramsim::sim
