// The step executor's multi-card paths: a pipeline's cards in turn (and its micro-batched
// prefill), a tensor split's shards with their all-reduces, an expert split's exchanges, and
// the host CPU's layers as a stage of their own.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/kernel_rates.h"
#include "sim/row_split.h"
#include "sim/step_executor.h"

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

// Hands `bytes` of hidden states from card `from` (-1: the host) to card `to`: the sender's
// synchronisation, then the transfer on the platform. Returns the seconds it took.
double StepExecutor::hand_off(int from, int to, double bytes) {
  const double t0 = now();
  s4u::this_actor::sleep_for(s_.engine.physics.handoff_sync);
  if (from < 0)
    fabric_->host_to_card(to, bytes);
  else
    fabric_->card_to_card(from, to, bytes);
  return now() - t0;
}

// llama.cpp's pipeline parallelism splits a prompt into micro-batches (prefill_ubatch) and
// runs them through the cards like a pipeline: card 1 works on micro-batch k while card 0 runs
// k + 1 (ggml's scheduler keeps several copies of its buffers for this, ggml-org/llama.cpp PR
// 6017). llama.cpp turns it on only when no tensor is overridden to the CPU (--n-cpu-moe,
// --cpu-moe and -ot are overrides) and every layer is on a GPU, so here: a layer split whose
// stages each have a GPU of their own (CPU layers stream their weights to the first card,
// sharing it), no routed experts on the CPU, a prompt pass of two micro-batches or more.
// Overlapped slots keep the cards in turn, one card held at a time, so that other slots'
// steps still fill the gaps.
bool StepExecutor::pipelines_micro_batches(std::int64_t tokens) const {
  // stages_: the host's layers first (card -1) when there are any, then each card holding layers, once.
  const bool cards_only = stages_.size() > 1 && stages_.front().card >= 0;
  const bool overlapped_slots = s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Overlapped;
  return cards_only && !tensor() && !expert_split() && s_.engine.cpu_moe_layers == 0 && !overlapped_slots &&
         model().ubatches(tokens) >= 2;
}

// A prompt's micro-batches through a pipeline's cards: micro-batch j starts on card i once
// card i - 1 has handed it over and card i is free; a hand-off runs on the sending card's
// stream, so that card is free after it. Each micro-batch takes an equal share of a card's
// prefill costs and of its hidden states. The first hand-off between two cards runs over the
// platform; the others reuse its time (nothing else uses the fabric: one decode loop runs, its
// cards held) and are counted on the links. The pass takes the schedule's makespan; each card
// is busy for all its costs; `handoff_s` adds every hand-off's time, mostly hidden.
void StepExecutor::run_pipelined_prefill(const std::vector<StepCosts>& cards, std::int64_t tokens) {
  RunResult& out = rec_.out();
  const auto m = static_cast<std::int64_t>(model().ubatches(tokens));
  const double share = 1.0 / static_cast<double>(m);
  const double bytes = static_cast<double>(tokens) * model().activation_bytes() * share;
  const bool one_loop = serial_loop();  // other slots wait; batched slots are one loop already
  if (one_loop) engine_loop_->lock();
  const double t0 = now();
  std::vector<double> handoff(cards.size(), 0.0);  // into card i (i >= 1), one micro-batch's
  for (std::size_t i = 1; i < cards.size(); ++i) {
    const int from = stages_[i - 1].card, to = stages_[i].card;
    handoff[i] = hand_off(from, to, bytes);
    fabric_->count_card_to_card(from, to, bytes * static_cast<double>(m - 1));
    out.handoff_s += handoff[i] * static_cast<double>(m);
  }
  std::vector<double> free(cards.size(), 0.0);  // when card i can take its next micro-batch
  for (std::int64_t j = 0; j < m; ++j) {
    double arrived = 0;  // when micro-batch j's hidden states are on card i
    for (std::size_t i = 0; i < cards.size(); ++i) {
      const double end = std::max(arrived, free[i]) + cards[i].total() * share;
      arrived = i + 1 < cards.size() ? end + handoff[i + 1] : end;
      free[i] = arrived;
    }
  }
  const double spent = now() - t0;  // the first hand-offs, already simulated
  s4u::this_actor::sleep_for(std::max(0.0, free.back() - spent));
  rec_.activities();
  if (one_loop) engine_loop_->unlock();
  for (std::size_t i = 0; i < cards.size(); ++i) rec_.use_card(stages_[i].card, cards[i]);
}

// The host CPU runs its layers (one decode loop at a time when slots compete).
void StepExecutor::run_on_host(const StepCosts& costs, bool trace) {
  const bool shared = s_.engine.parallel > 1;
  if (shared) host_lock_->lock();
  const double t0 = now();
  s4u::this_actor::sleep_for(costs.total());
  rec_.activities();
  if (shared) host_lock_->unlock();
  rec_.out().host_busy_s += costs.total();
  if (trace) rec_.trace("CPU layers", "CPU", t0, costs.total());
}

// Card `c` runs `costs` (its layers of a step or prefill); with several slots the card is held,
// so that slots' work on one card is serial while different cards overlap.
void StepExecutor::run_on_card(int c, const StepCosts& costs, bool trace, const char* what) {
  const bool shared = s_.engine.parallel > 1;
  if (shared) card_lock_[static_cast<std::size_t>(c)]->lock();
  const double t0 = now();
  s4u::this_actor::sleep_for(costs.total());
  rec_.activities();
  if (shared) card_lock_[static_cast<std::size_t>(c)]->unlock();
  rec_.use_card(c, costs);
  if (trace) rec_.trace(what, "GPU " + std::to_string(c), t0, costs.total());
}

// Holds every card (in order) while a slot's step uses them all, when slots compete.
void StepExecutor::hold_all_cards(bool hold) {
  if (s_.engine.parallel <= 1) return;
  if (hold)
    for (auto& lock : card_lock_) lock->lock();
  else
    for (auto it = card_lock_.rbegin(); it != card_lock_.rend(); ++it) (*it)->unlock();
}

// The first exchange of each size runs as SimGrid communications (its time is added to
// `credit`, for the caller's next step to subtract); the fabric is otherwise idle while the
// cards are held, so later ones reuse its duration. Each includes the synchronisation on both sides.
std::vector<double> StepExecutor::exchange_times(std::int64_t tokens, double& credit) {
  auto known = exchange_s_.find(tokens);
  if (known != exchange_s_.end()) return known->second;
  const double bytes = static_cast<double>(tokens) * model().activation_bytes();
  std::vector<double> times(s_.cards.size(), 0.0);
  hold_all_cards(true);
  for (std::size_t c = 1; c < s_.cards.size(); ++c) {
    const double t0 = now();
    fabric_->card_to_card(0, static_cast<int>(c), bytes);
    fabric_->card_to_card(static_cast<int>(c), 0, bytes);
    times[c] = now() - t0 + 2 * s_.engine.physics.handoff_sync;
    credit += now() - t0;
  }
  hold_all_cards(false);
  return exchange_s_.emplace(tokens, times).first->second;
}

// The critical path: attention on the first card, then the slowest card's experts and
// exchange per layer.
void StepExecutor::run_expert_step(const StepCosts& total, const std::vector<StepCosts>& cards, const std::vector<int>& exchanges,
                                   double handoff, std::int64_t tokens, bool trace, double& credit) {
  hold_all_cards(true);
  const double t0 = now();
  const double used = std::min(credit, total.total());
  credit -= used;
  s4u::this_actor::sleep_for(total.total() - used);
  rec_.activities();
  hold_all_cards(false);
  rec_.out().handoff_s += handoff;  // the cards' exchanges of a layer run at once
  const double bytes = static_cast<double>(tokens) * model().activation_bytes();
  for (std::size_t c = 0; c < cards.size(); ++c) {
    rec_.use_card(static_cast<int>(c), cards[c]);
    if (c < exchanges.size() && exchanges[c] > 0) {
      fabric_->count_card_to_card(0, static_cast<int>(c), exchanges[c] * bytes);
      fabric_->count_card_to_card(static_cast<int>(c), 0, exchanges[c] * bytes);
    }
    if (trace) rec_.trace("attention + experts", "GPU " + std::to_string(c), t0, cards[c].total());
  }
}

double StepExecutor::row_split_layer_copies(std::int64_t tokens) {
  const int n = static_cast<int>(s_.cards.size());
  std::vector<std::pair<int, int>> out, back;  // main card -> each other card, and back
  for (int c = 1; c < n; ++c) {
    out.emplace_back(0, c);
    back.emplace_back(c, 0);
  }
  const auto products = row_split_products(s_.model, row_split_q8_1_input(dequantizing_gemms(s_), tokens, s_.engine.physics.mmq_max_rows));
  // Chunk by chunk (kRowSplitChunk tokens), product by product: each card's slice of the
  // output back after the input went out (an even split).
  auto copy = [&](bool simulate, double times) {
    for (std::int64_t done = 0; done < tokens; done += kRowSplitChunk) {
      const double t = static_cast<double>(std::min(kRowSplitChunk, tokens - done)) * times;
      for (const RowSplitProduct& p : products) {
        fabric_->card_copies(out, t * p.input_bytes, simulate);
        fabric_->card_copies(back, t * p.output_bytes / n, simulate);
      }
    }
  };
  // As the all-reduces: the cards are held, so the first layer of each size runs on the
  // platform and the others reuse its time.
  const double layers = s_.model.layers;
  auto known = row_split_s_.find(tokens);
  if (known == row_split_s_.end()) {
    const double t0 = now();
    copy(true, 1.0);
    known = row_split_s_.emplace(tokens, now() - t0).first;
    copy(false, layers - 1.0);
  } else {
    copy(false, layers);
  }
  return known->second;
}

// Pipeline: each card's layers in turn, the hidden states handed to the next card over the
// platform. Tensor: every layer on all cards at once (each its shard; the slowest sets the
// pace) and two all-reduces of the hidden states per layer (after attention, after the MLP).
double StepExecutor::run_split_step(const std::vector<StepCosts>& cards, std::int64_t tokens, bool trace) {
  RunResult& out = rec_.out();
  const double bytes = static_cast<double>(tokens) * model().activation_bytes();
  const auto& ph = s_.engine.physics;
  if (!tensor()) {
    // One decode loop (serial slots) runs a slot's whole step alone: the cards of a pipeline do
    // not work on two slots' steps at once. Overlapped slots may fill the pipeline.
    const bool one_loop = serial_loop();
    if (one_loop) engine_loop_->lock();
    double handoffs = 0;
    for (std::size_t i = 0; i < cards.size(); ++i) {
      // The host's layers run on the CPU, except a prompt batch's: their weights stream to the
      // first card, which computes them (StepModel::prefill), so it is that card's work.
      const bool streamed = stages_[i].card < 0 && host_work_on_card(cards[i]);
      const int card = streamed ? 0 : stages_[i].card;
      if (card < 0)
        run_on_host(cards[i], trace);
      else
        run_on_card(card, cards[i], trace, streamed ? "CPU layers' weights streamed" : "layers");
      if (i + 1 == cards.size()) break;
      const int next = stages_[i + 1].card;
      if (next == card) continue;  // already on that card
      const double t0 = now();
      const double took = hand_off(card, next, bytes);
      out.handoff_s += took;
      handoffs += took;
      if (trace) rec_.trace("hand-off", "link", t0, took);
    }
    if (one_loop) engine_loop_->unlock();
    return handoffs;
  }
  hold_all_cards(true);
  const int layers = s_.model.layers;
  double slowest = 0;
  for (const auto& c : cards) slowest = std::max(slowest, c.total());
  const double t0 = now();
  double collectives = 0;
  if (s_.engine.row_split) {
    // Each split product waits for its copies and, chunk by chunk, its events (collective_sync).
    const double chunks = std::ceil(static_cast<double>(tokens) / kRowSplitChunk);
    collectives = layers * (row_split_layer_copies(tokens) + chunks * kLayerProducts * ph.collective_sync);
  } else {
    // All cards are held and nothing else uses the fabric during a tensor step, so every
    // all-reduce of a given size takes the same time: the first of each size runs as SimGrid
    // communications, the rest reuse its measured duration (exact, and ~100x fewer activities).
    auto known = all_reduce_s_.find(bytes);
    double counted = 0;  // all-reduces whose bytes the fabric has already counted
    if (known == all_reduce_s_.end()) {
      const double a0 = now();
      fabric_->all_reduce(bytes);
      counted = 1;
      known = all_reduce_s_.emplace(bytes, now() - a0).first;
    }
    fabric_->count_all_reduces(bytes, layers * 2.0 - counted);
    collectives = layers * 2.0 * (ph.collective_sync + known->second);
  }
  s4u::this_actor::sleep_until(t0 + slowest + collectives);
  rec_.activities();
  out.collective_s += collectives;
  for (std::size_t c = 0; c < cards.size(); ++c) {
    rec_.use_card(static_cast<int>(c), cards[c]);
    // The all-reduces are kernels resident on every card, and a card that finishes its shard
    // first waits inside them for the slowest: busy for the whole step.
    out.card_use[c].busy_s += collectives + (slowest - cards[c].total());
    if (trace) rec_.trace("layers + all-reduces", "GPU " + std::to_string(c), t0, now() - t0);
  }
  hold_all_cards(false);
  return collectives;
}

}  // namespace vramsim::sim
