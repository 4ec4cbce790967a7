// Turns a step's (or a prefill's) costs into SimGrid activities on the platform: one activity
// for a step nothing competes with; layer by layer for overlapped slots contending for the
// GPU, the host's worker groups and the link; each card in turn with hand-offs (pipeline);
// all cards at once with all-reduces (tensor); the experts dealt over the cards (expert
// split). Owns the platform, the fabric, the cards' locks, the per-card step models and
// expert caches. Every figure goes to the RunRecorder. Times in simulated seconds.
#pragma once

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "sim/engine.h"
#include "sim/expert_cache.h"
#include "sim/fabric.h"
#include "sim/platform.h"
#include "sim/request_queue.h"
#include "sim/request_runner.h"
#include "sim/run_recorder.h"

namespace vramsim::sim {

// A request in a prefill pass: its whole prefill, or (chunked prefill) `chunk`'s tokens of it
// after the positions before them, the prefill's last chunk when `last`.
struct Prefilled {
  const Job* job = nullptr;
  RequestRunner* runner = nullptr;
  std::optional<RequestRunner::PrefillSequence> chunk;  // none: the whole prefill (prefill_sequence())
  bool last = true;                                     // its next token comes from this pass
};

class StepExecutor {
 public:
  // REQUIRES: out.cards, out.host_plan and out.popularity planned (run_scenario).
  // Throws std::invalid_argument when CPU layers lack the host's cpu.fp32_throughput.
  StepExecutor(const Scenario& scenario, RunRecorder& recorder);

  // Builds the platform (once, inside the SimGrid engine, before any actor runs).
  void build_platform();
  const PlatformSpec& platform_spec() const { return spec_; }
  const Fabric& fabric() const { return *fabric_; }
  simgrid::s4u::Host* host() const { return platform_.host; }
  simgrid::s4u::Host* gpu() const { return platform_.gpu; }

  const std::vector<Stage>& stages() const { return stages_; }
  const StepModel& model() const { return models_.front(); }

  // Several stages (cards, or the host CPU's layers and a card) share a step.
  bool staged() const { return stages_.size() > 1 || s_.cards.size() > 1; }
  // Slots whose steps run at once on one card, contending layer by layer (run_step_contended).
  bool overlapped() const;
  bool expert_split() const { return s_.engine.split == Split::Expert; }

  // A whole step (or prefill) of `seconds`, `idle` of it first with no kernel resident; serial
  // slots take turns (the engine's loop is a mutex). Returns when it started.
  double run_whole_step(double seconds, double idle = 0);
  // Overlapped slots: the step layer by layer, contending; `kv_tokens` KV positions a layer reads.
  void run_step_contended(const StepResult& step, std::int64_t kv_tokens);
  // A step of `tokens` positions on several cards (pipeline or tensor). Returns the seconds
  // beyond the cards' own work (hand-offs, all-reduces), booked as transfer by the caller.
  double run_split_step(const std::vector<StepCosts>& cards, std::int64_t tokens, bool trace);
  // Expert split: holds every card for the step's critical path. `handoff`: the exchange
  // seconds on it; `credit`: exchange time the slot simulated already (exchange_times), used up.
  void run_expert_step(const StepCosts& total, const std::vector<StepCosts>& cards, const std::vector<int>& exchanges,
                       double handoff, std::int64_t tokens, bool trace, double& credit);
  // Expert split: per card c >= 1, seconds to send `tokens` positions to card c and back.
  std::vector<double> exchange_times(std::int64_t tokens, double& credit);

  // A request's prefill (its prompt's new tokens, or after a preemption its prompt and what it
  // generated), and one prefill pass over several requests' prompts (continuous batching).
  void run_prefill(const Job& job, RequestRunner& runner);
  void run_prefill_pass(const std::vector<Prefilled>& jobs);

  // Whether `job`'s shared prefix is in the engine's prompt cache (its prefill has finished).
  bool prefix_cached(const Job& job) const {
    return job.shape.prefix_id >= 0 && prefixes_.count(job.shape.prefix_id) > 0;
  }

 private:
  bool tensor() const { return s_.engine.split == Split::Tensor; }
  // llama.cpp's row split: one layer's split products' copies for a step of `tokens` positions
  // (sim/row_split.h), seconds; the bytes of every GPU layer's copies are counted on the links.
  double row_split_layer_copies(std::int64_t tokens);
  // Several slots taking turns in one decode loop (llama.cpp's): a slot's whole step runs alone.
  bool serial_loop() const { return s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Serial; }
  bool pipelines_micro_batches(std::int64_t tokens) const;
  void run_pipelined_prefill(const std::vector<StepCosts>& cards, std::int64_t tokens);
  void book_prefill(const StepCosts& pre, const std::vector<Prefilled>& jobs);
  void run_on_host(const StepCosts& costs, bool trace);
  void run_on_card(int c, const StepCosts& costs, bool trace, const char* what);
  void hold_all_cards(bool hold);
  double hand_off(int from, int to, double bytes);
  void pause(double seconds);
  double now() const { return simgrid::s4u::Engine::get_clock(); }

  const Scenario& s_;
  RunRecorder& rec_;
  std::vector<StepModel> models_;                     // per card
  std::vector<std::unique_ptr<ExpertCache>> caches_;  // per card (MoE)
  std::vector<Stage> stages_;
  CardSetup host_card_;                               // the host CPU seen as a "card" by its step model
  std::unique_ptr<StepModel> host_model_;
  PlatformSpec spec_;
  Platform platform_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<simgrid::s4u::MutexPtr> card_lock_;
  simgrid::s4u::MutexPtr host_lock_;
  simgrid::s4u::MutexPtr engine_loop_;
  std::map<double, double> all_reduce_s_;                    // tensor: all-reduce duration by bytes
  std::map<std::int64_t, double> row_split_s_;              // row split: one layer's copies, by tokens
  std::map<std::int64_t, std::vector<double>> exchange_s_;   // expert split: per tokens, per card
  std::unordered_set<std::int64_t> prefixes_;                // shared prefixes in the prompt cache
};

}  // namespace vramsim::sim
