// The step executor's single-card paths: one activity per step, overlapped slots layer by
// layer, and the prefill passes. The multi-card paths are in split_step.cc.
#include "sim/step_executor.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

namespace {
// GPU and CPU hosts run at 1e9 "flops" per second, so an activity's amount is its duration in
// nanoseconds at full speed; concurrent activities on one host share it fairly.
constexpr double kSpeed = 1e9;
}  // namespace

StepExecutor::StepExecutor(const Scenario& s, RunRecorder& recorder) : s_(s), rec_(recorder) {
  const RunResult& out = rec_.out();
  models_.reserve(out.cards.size());
  for (std::size_t c = 0; c < out.cards.size(); ++c) models_.emplace_back(s, out.cards[c], static_cast<int>(c));
  // Each card's expert cache holds its own layers' experts, hottest first.
  if (s.model.moe && s.engine.expert_cache)
    for (std::size_t c = 0; c < out.cards.size(); ++c) {
      const auto& plan = out.cards[c];
      // Popularity is per MoE layer; a model's dense layers come first (ModelSpec::first_moe_layer).
      const int d = s.model.first_moe_layer();
      LayerPopularity mine(out.popularity.begin() + std::max(plan.first_layer - d, 0),
                           out.popularity.begin() + std::max(plan.end_layer - d, 0));
      if (s.engine.split == Split::Expert)  // this card's ranks: c, c + N, ...
        for (auto& layer : mine) layer = layer.strided(static_cast<int>(c), static_cast<int>(out.cards.size()));
      caches_.push_back(std::make_unique<ExpertCache>(s.engine.policy, plan.slots, s.engine.dynamic_share, mine));
    }
  // The host CPU's layers come first (llama.cpp runs the first layers on the CPU).
  if (out.host_plan) {
    if (!s.host.fp32_flops) throw std::invalid_argument("hardware.host: CPU layers need the host's cpu.fp32_throughput");
    host_card_ = s.cards.front();
    host_card_.gpu.spec.name = "cpu";
    host_card_.gpu.spec.memory_bandwidth = s.host.memory_bandwidth;
    host_card_.gpu.spec.dense_fp16_flops = *s.host.fp32_flops;
    host_card_.gpu.spec.dense_fp8_flops = 0;  // a CPU has no FP8 matrix units
    host_card_.gpu.spec.mma_sync_share = 1;   // nor tensor-core instruction paths
    host_model_ = std::make_unique<StepModel>(s, *out.host_plan, host_card_);
    stages_.push_back(Stage{out.host_plan->first_layer, out.host_plan->end_layer, host_model_.get(), nullptr, -1, 0});
  }
  const int cpu_moe_end = s.engine.expert_cache ? 0 : s.engine.cpu_moe_layers;
  for (std::size_t c = 0; c < out.cards.size(); ++c)
    if (out.cards[c].layers() > 0 || s.cards.size() == 1)
      stages_.push_back(Stage{out.cards[c].first_layer, out.cards[c].end_layer, &models_[c],
                              caches_.empty() ? nullptr : caches_[c].get(), static_cast<int>(c), cpu_moe_end});
}

void StepExecutor::build_platform() {
  // The host's worker groups are its cores; a core's speed is one group's expert throughput
  // (bytes of expert weights per second), so an expert is an exec of its size in bytes.
  spec_.gpu_speed = kSpeed;
  spec_.host_speed = s_.model.moe ? model().host_worker_rate() : kSpeed;
  spec_.host_cores = std::max(1, s_.engine.physics.host_expert_workers);
  for (std::size_t c = 0; c < s_.cards.size(); ++c)
    spec_.card_links.push_back(LinkParams{"pcie" + std::to_string(c), s_.cards[c].link.h2d_bandwidth, s_.cards[c].link.spec.latency_s});
  if (s_.pcie_switch) spec_.pcie_switch = LinkParams{"switch", s_.pcie_switch->h2d_bandwidth, s_.pcie_switch->spec.latency_s};
  if (s_.gpu_link) {
    spec_.gpu_link = LinkParams{"gpulink", s_.gpu_link->h2d_bandwidth, s_.gpu_link->spec.latency_s};
    spec_.gpu_link_switch = s_.gpu_link->spec.topology == hw::NvlinkTopology::Switch;
  }
  spec_.peer_to_peer = true;
  for (const auto& c : s_.cards) spec_.peer_to_peer = spec_.peer_to_peer && c.gpu.spec.peer_to_peer;
  platform_ = sim::build_platform(spec_);
  fabric_ = std::make_unique<Fabric>(platform_, spec_.pcie_switch.has_value(), spec_.gpu_link.has_value());
  std::vector<double> staged, latency;
  for (const auto& c : s_.cards) {
    staged.push_back(c.link.spec.staged_peer_latency_s);
    latency.push_back(c.link.spec.latency_s);
  }
  fabric_->set_staged_peer_latency(std::move(staged), std::move(latency));
  for (std::size_t c = 0; c < s_.cards.size(); ++c) card_lock_.push_back(s4u::Mutex::create());
  host_lock_ = s4u::Mutex::create();
  engine_loop_ = s4u::Mutex::create();
}

bool StepExecutor::overlapped() const {
  return !staged() && s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Overlapped;
}

// With one slot nothing competes, so one activity of the step's duration is exact (the step
// model holds the link's time on the critical path). `idle` (StepCosts::host_idle), which
// overlapped slots count as it runs (kernel_on/off), comes first.
double StepExecutor::run_whole_step(double seconds, double idle) {
  if (s_.engine.parallel > 1) engine_loop_->lock();
  const double start = now();
  if (overlapped()) {  // a prefill beside the other slots' steps
    pause(idle);
    rec_.kernel_on(now());
    s4u::this_actor::sleep_for(seconds - idle);
    rec_.kernel_off(now());
  } else {
    s4u::this_actor::sleep_for(seconds);
  }
  rec_.activities();
  if (s_.engine.parallel > 1) engine_loop_->unlock();
  return start;
}

// Per layer, attention on the GPU; then the resident experts on the GPU while (after the
// bubble's fixed part) the host's groups compute their experts and the link carries the rest;
// the layer ends when all three have (StepModel::LayerDemand).
void StepExecutor::run_step_contended(const StepResult& step, std::int64_t kv_tokens) {
  const int tokens = step.positions;
  const StepCosts fixed = model().step_fixed(tokens, step.drafts);
  s4u::this_actor::sleep_for(fixed.host_idle);
  rec_.kernel_on(now());
  s4u::this_actor::execute((fixed.total() - fixed.host_idle) * kSpeed);
  rec_.activities(2);
  s4u::Host* host = platform_.host;
  s4u::Host* gpu = platform_.gpu;
  std::vector<s4u::CommPtr> prefetches;  // profile-lru's background copies: the step ends once they are in
  for (const auto& layer : step.layers) {
    const StepModel::LayerDemand d = model().layer_demand(layer.experts, tokens, kv_tokens);
    s4u::this_actor::execute(d.gpu_before * kSpeed);
    rec_.activities();
    if (d.sync == 0 && d.link_bytes == 0) {
      if (d.gpu_hits > 0) s4u::this_actor::execute(d.gpu_hits * kSpeed);
      rec_.activities();
      continue;
    }
    s4u::ExecPtr hits = d.gpu_hits > 0 ? gpu->exec_async(d.gpu_hits * kSpeed) : nullptr;
    if (hits) rec_.activities();
    // The bubble: miss_sync_idle of it has no kernel resident, as in the step model (which
    // places that gap after the layer's hits, within a miss path longer than they are; it is
    // counted here at the bubble's start, the same time per layer).
    const double idle = std::min(d.sync, s_.engine.physics.miss_sync_idle);
    rec_.kernel_off(now());
    pause(idle);
    rec_.kernel_on(now());
    pause(d.sync - idle);
    // The link's and the host's paths each wait out their fixed part before their work: start
    // the one with the shorter wait first, the other after the difference.
    constexpr double kNever = std::numeric_limits<double>::infinity();
    const double reads_at = d.link_bytes > 0 ? d.link_wait : kNever;
    const double host_at = d.host_experts > 0 ? d.host_transfer : kNever;
    s4u::CommPtr reads = nullptr;
    s4u::ExecPtr on_host = nullptr;
    auto start_reads = [&] { reads = s4u::Comm::sendto_async(host, gpu, static_cast<std::uint64_t>(d.link_bytes)); };
    auto start_host = [&] {
      on_host = s4u::Exec::init()
                    ->set_flops_amount(model().expert_bytes())  // per thread: one expert per worker group
                    ->set_host(host)
                    ->set_thread_count(d.host_experts)
                    ->start();
    };
    const bool reads_first = reads_at <= host_at;
    const double first = std::min(reads_at, host_at), second = std::max(reads_at, host_at);
    if (first < kNever) {
      pause(first);
      reads_first ? start_reads() : start_host();
      rec_.activities();
    }
    if (second < kNever) {
      pause(second - first);
      reads_first ? start_host() : start_reads();
      rec_.activities();
    }
    if (hits) hits->wait();
    if (reads) reads->wait();
    if (on_host) on_host->wait();
    if (d.prefetch_bytes > 0) {  // copied in behind the layer, sharing the link with what follows
      prefetches.push_back(s4u::Comm::sendto_async(host, gpu, static_cast<std::uint64_t>(d.prefetch_bytes)));
      rec_.activities();
    }
    if (d.gpu_after > 0) {
      s4u::this_actor::execute(d.gpu_after * kSpeed);
      rec_.activities();
    }
  }
  for (const auto& copy : prefetches) copy->wait();
  rec_.kernel_off(now());
}

// A wait with nothing resident (a SimGrid sleep activity when longer than zero).
void StepExecutor::pause(double seconds) {
  if (seconds <= 0) return;
  s4u::this_actor::sleep_for(seconds);
  rec_.activities();
}

void StepExecutor::run_prefill(const Job& job, RequestRunner& runner) {
  const std::int64_t prefilled = runner.prefill_tokens();
  if (!expert_split()) {
    run_prefill_pass({{&job, &runner, std::nullopt, true}});
    return;
  }
  double credit = 0;  // exchange time this slot has simulated already
  const std::vector<double> times = exchange_times(prefilled, credit);
  runner.set_exchange(times);
  std::vector<StepCosts> pre_cards;
  const StepCosts pre = runner.prefill(&pre_cards);
  // Every MoE layer of a prompt exchanges with every other card (RequestRunner::prefill
  // charges the longest exchange per MoE layer).
  const int moe_layers = s_.model.layers - s_.model.first_moe_layer();
  std::vector<int> exchanges(s_.cards.size(), moe_layers);
  exchanges.front() = 0;
  const double longest = *std::max_element(times.begin(), times.end());
  run_expert_step(pre, pre_cards, exchanges, longest * moe_layers, prefilled, false, credit);
  book_prefill(pre, {{&job, &runner, std::nullopt, true}});
}

// One prefill pass over `jobs`' sequences (RequestRunner::prefill_of with the first one's
// routing model: the tokens' GEMMs and the weights once, each prompt's attention over itself)
// on the card, or the cards in turn: continuous batching passes every prompt admitted together.
void StepExecutor::run_prefill_pass(const std::vector<Prefilled>& jobs) {
  std::vector<RequestRunner::PrefillSequence> sequences;
  for (const auto& j : jobs) sequences.push_back(j.chunk.value_or(j.runner->prefill_sequence()));
  std::vector<StepCosts> pre_cards;
  const StepCosts pre = jobs.front().runner->prefill_of(sequences, &pre_cards);
  std::int64_t tokens = 0;
  for (const auto& q : sequences) tokens += q.tokens;
  double linked = 0;  // hand-offs or all-reduces beyond the cards' work
  if (pipelines_micro_batches(tokens))
    run_pipelined_prefill(pre_cards, tokens);
  else if (staged())
    linked = run_split_step(pre_cards, tokens, false);
  else
    run_whole_step(pre.total(), pre.host_idle);
  book_prefill(pre, jobs);
  rec_.out().prefill.transfer += linked;
}

// A prefill pass run: its costs, the cards' use, each request's next token (its prefill's:
// RequestRunner::take_prefill_token) and the shared prefixes now cached.
void StepExecutor::book_prefill(const StepCosts& pre, const std::vector<Prefilled>& jobs) {
  rec_.out().prefill += pre;
  rec_.account_gpu(pre, staged(), overlapped());  // counted as it ran (run_whole_step)
  for (const auto& j : jobs) {
    if (!j.last) continue;  // a chunk of its prompt: the rest comes in later passes
    j.runner->take_prefill_token();
    if (j.job->shape.prefix_id >= 0 && j.job->shape.prefix_tokens > 0) prefixes_.insert(j.job->shape.prefix_id);
  }
}

}  // namespace vramsim::sim
