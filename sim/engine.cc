#include "sim/engine.h"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <unordered_set>
#include <stdexcept>

#include "sim/expert_cache.h"
#include "sim/fabric.h"
#include "sim/platform.h"
#include "sim/queue_meter.h"
#include "sim/request_source.h"
#include "sim/routing_trace.h"  // scenario_popularity
#include "sim/request_runner.h"

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

namespace {

// GPU and CPU hosts run at 1e9 "flops" per second, so an activity's amount is its duration in
// nanoseconds at full speed; concurrent activities on one host share it fairly.
constexpr double kSpeed = 1e9;

struct Job {
  std::uint64_t id = 0;
  int client = 0;
  double arrival = 0;
  s4u::Mailbox* reply = nullptr;
  RequestShape shape;
  bool queued = true;  // counted as waiting; false when an idle slot took it on arrival
};

LayerPopularity build_popularity(const Scenario& s) {
  if (!s.model.moe) return {};
  const auto& moe = *s.model.moe;
  if (!moe.routing)  // no routing statistics (an engine without a cache): every expert alike
    return LayerPopularity(static_cast<std::size_t>(moe.layers),
                           Popularity::power_law_cutoff(moe.experts, moe.experts_per_token, 0.0, 1e12));
  return scenario_popularity(s);
}

class Simulation {
 public:
  Simulation(const Scenario& s, const RunOptions& o, RunResult& out) : s_(s), options_(o), out_(out) {
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
      host_model_ = std::make_unique<StepModel>(s, *out.host_plan, host_card_);
      stages_.push_back(Stage{out.host_plan->first_layer, out.host_plan->end_layer, host_model_.get(), nullptr, -1, 0});
    }
    const int cpu_moe_end = s.engine.expert_cache ? 0 : s.engine.cpu_moe_layers;
    for (std::size_t c = 0; c < out.cards.size(); ++c)
      if (out.cards[c].layers() > 0 || s.cards.size() == 1)
        stages_.push_back(Stage{out.cards[c].first_layer, out.cards[c].end_layer, &models_[c],
                                caches_.empty() ? nullptr : caches_[c].get(), static_cast<int>(c), cpu_moe_end});
    out.card_use.assign(out.cards.size(), RunResult::CardUse{});
    link_bytes_.assign(out.cards.size(), 0.0);
  }

  void run() {
    auto engine = make_exact_engine();
    // The host's worker groups are its cores; a core's speed is one group's expert throughput
    // (bytes of expert weights per second), so an expert is an exec of its size in bytes.
    PlatformSpec spec;
    spec.gpu_speed = kSpeed;
    spec.host_speed = s_.model.moe ? model().host_worker_rate() : kSpeed;
    spec.host_cores = std::max(1, s_.engine.physics.host_expert_workers);
    for (std::size_t c = 0; c < s_.cards.size(); ++c)
      spec.card_links.push_back(LinkParams{"pcie" + std::to_string(c), s_.cards[c].link.h2d_bandwidth, s_.cards[c].link.spec.latency_s});
    if (s_.pcie_switch)
      spec.pcie_switch = LinkParams{"switch", s_.pcie_switch->h2d_bandwidth, s_.pcie_switch->spec.latency_s};
    if (s_.gpu_link) {
      spec.gpu_link = LinkParams{"gpulink", s_.gpu_link->h2d_bandwidth, s_.gpu_link->spec.latency_s};
      spec.gpu_link_switch = s_.gpu_link->spec.topology == hw::NvlinkTopology::Switch;
    }
    spec.peer_to_peer = true;
    for (const auto& c : s_.cards) spec.peer_to_peer = spec.peer_to_peer && c.gpu.spec.peer_to_peer;
    platform_ = build_platform(spec);
    fabric_ = std::make_unique<Fabric>(platform_, spec.pcie_switch.has_value(), spec.gpu_link.has_value());
    host_ = platform_.host;
    gpu_ = platform_.gpu;
    for (std::size_t c = 0; c < s_.cards.size(); ++c) card_lock_.push_back(s4u::Mutex::create());
    host_lock_ = s4u::Mutex::create();

    queue_ = s4u::Mailbox::by_name("queue");
    engine_loop_ = s4u::Mutex::create();
    client_use_.assign(static_cast<std::size_t>(s_.workload.clients), ClientUse{});
    if (s_.workload.open_loop)
      s4u::Actor::create("arrivals", host_, [this] { arrivals(); });
    for (int c = 0; c < s_.workload.clients; ++c)
      s4u::Actor::create("client" + std::to_string(c), host_, [this, c] { client(c); });
    // Every slot starts idle, ready for the first requests.
    idle_slots_ = s_.engine.parallel;
    if (s_.engine.scheduling == SlotScheduling::Batched)
      s4u::Actor::create("batch", gpu_, [this] { batch_loop(); })->daemonize();
    else
      for (int slot = 0; slot < s_.engine.parallel; ++slot)
        s4u::Actor::create("slot" + std::to_string(slot), gpu_, [this] { slot_loop(); })->daemonize();
    engine->run();
    out_.makespan_s = s4u::Engine::get_clock();
    queue_meter_.finish(out_.makespan_s);
    out_.queue = RunResult::QueueLength{queue_meter_.mean(), queue_meter_.max(), queue_meter_.interval_s(), queue_meter_.series()};
    for (const auto& c : client_use_)
      out_.client_tok_s.push_back(c.last_end > c.first_send ? static_cast<double>(c.tokens) / (c.last_end - c.first_send) : 0.0);
    out_.simgrid_activities += fabric_->communications();
    report_links(spec);
  }

 private:
  // Sends request `r` and waits for its completion, unless the engine turns it away at
  // arrival: a prompt longer than its context window; with a paged KV pool (vLLM, whose
  // max_model_len bounds prompt + max_tokens), a prompt and requested output longer than it;
  // or (admission control) `max_queue` requests already waiting. Other engines generate until
  // the window is full: the KV holds the prompt and all outputs but the last, so at most
  // context - prompt + 1 tokens.
  void submit(int r, int c, s4u::Mailbox* reply) {
    const double now = s4u::Engine::get_clock();
    RequestShape shape = request_shape(s_.workload, s_.seed, static_cast<std::uint64_t>(r));
    if (c >= 0 && client_use_[static_cast<std::size_t>(c)].first_send < 0) client_use_[static_cast<std::size_t>(c)].first_send = now;
    const char* reason = nullptr;
    const std::int64_t room = s_.engine.context - shape.prompt_tokens + 1;  // outputs the window holds
    if (shape.prompt_tokens > s_.engine.context) {
      reason = "prompt_exceeds_context";
      ++out_.rejected_context;
    } else if (s_.engine.kv_pool && shape.prompt_tokens + shape.gen_tokens > s_.engine.context) {
      reason = "prompt_plus_output_exceeds_context";
      ++out_.rejected_output;
    } else if (s_.engine.kv_pool && blocks_for(shape.prompt_tokens) > out_.plan.kv_blocks - watermark_blocks()) {
      // vLLM V0's block manager can never allocate it ("exceeds the capacity of block_manager"):
      // it is ignored rather than admitted into a pool it would leave below the watermark.
      reason = "prompt_exceeds_kv_pool";
      ++out_.rejected_pool;
    } else if (s_.engine.max_queue && waiting_ >= *s_.engine.max_queue) {
      reason = "queue_full";
      ++out_.rejected_queue;
    }
    if (reason) {
      if (options_.on_reject)
        options_.on_reject(RejectedRequest{static_cast<std::uint64_t>(r), c, shape.prompt_tokens, now, reason});
      if (options_.on_progress)
        options_.on_progress(static_cast<int>(out_.completed + out_.rejected()), s_.workload.requests);
      return;
    }
    if (shape.gen_tokens > room) {
      shape.gen_tokens = room;
      ++out_.truncated;
    }
    // An idle slot takes it at once (the mailbox's hand-over is no wait); else it queues.
    const bool queued = idle_slots_ == 0;
    if (queued) {
      queue_meter_.set(now, ++waiting_);
    } else {
      --idle_slots_;
      ++claimed_pending_;
    }
    queue_->put(new Job{static_cast<std::uint64_t>(r), c, now, reply, shape, queued}, 0);
    ++out_.simgrid_activities;
    delete reply->get<Job>();  // the completed job comes back
    ++out_.simgrid_activities;
  }

  // A closed-loop client: sends its next request when the previous one ends.
  void client(int c) {
    s4u::Mailbox* reply = s4u::Mailbox::by_name("client" + std::to_string(c));
    for (int r = c; r < s_.workload.requests; r += s_.workload.clients) submit(r, c, reply);
  }

  // Open loop: requests arrive as a Poisson or bursty process (counter-based draws,
  // sim/request_source.h) or at a trace's times; each is submitted by its own actor so that
  // arrivals never wait for completions. Reply mailboxes are reused (SimGrid keeps every
  // mailbox until the end), so memory stays flat however many requests arrive.
  void arrivals() {
    ArrivalClock clock(s_.workload, s_.seed);
    const bool trace = s_.workload.arrival == workloads::Arrival::Trace;
    for (int r = 0; r < s_.workload.requests; ++r) {
      if (trace)
        s4u::this_actor::sleep_until(s_.workload.trace[static_cast<std::size_t>(r)].arrival_s);
      else
        s4u::this_actor::sleep_for(clock.next_gap());
      ++out_.simgrid_activities;
      s4u::Actor::create("request" + std::to_string(r), host_, [this, r] {
        s4u::Mailbox* reply = take_reply_box();
        submit(r, -1, reply);
        free_replies_.push_back(reply);
      });
    }
  }

  s4u::Mailbox* take_reply_box() {
    if (free_replies_.empty()) return s4u::Mailbox::by_name("reply" + std::to_string(reply_boxes_++));
    s4u::Mailbox* box = free_replies_.back();
    free_replies_.pop_back();
    return box;
  }

  // Runs a whole step (or a prefill) of `seconds`. With one slot nothing competes, so one
  // activity of the step's duration is exact (the step model holds the link's time on the
  // critical path). A serial engine runs one slot's step at a time: the loop is a mutex.
  // Returns when the step started (after waiting for the loop).
  // `idle`: the part of `seconds` with no kernel resident (StepCosts::host_idle), which
  // overlapped slots count as it runs (kernel_on/off); it comes first.
  double run_whole_step(double seconds, double idle = 0) {
    if (s_.engine.parallel > 1) engine_loop_->lock();
    const double start = s4u::Engine::get_clock();
    if (overlapped()) {  // a prefill beside the other slots' steps
      pause(idle);
      kernel_on();
      s4u::this_actor::sleep_for(seconds - idle);
      kernel_off();
    } else {
      s4u::this_actor::sleep_for(seconds);
    }
    ++out_.simgrid_activities;
    if (s_.engine.parallel > 1) engine_loop_->unlock();
    return start;
  }

  // Slots whose steps run at once on one card, contending layer by layer (run_step_contended).
  bool overlapped() const {
    return !staged() && s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Overlapped;
  }

  // With several slots, a step runs layer by layer as separate activities so that the slots
  // contend for the GPU, the host's worker groups and the link as the layers interleave:
  // per layer, attention on the GPU; then the resident experts on the GPU while (after the
  // bubble's fixed part) the host's groups compute their experts and the link carries the
  // rest; the layer ends when all three have (StepModel::LayerDemand).
  void run_step_contended(const StepResult& step, std::int64_t kv_tokens) {
    const int tokens = step.positions;
    const StepCosts fixed = model().step_fixed(tokens, step.drafts);
    s4u::this_actor::sleep_for(fixed.host_idle);
    kernel_on();
    s4u::this_actor::execute((fixed.total() - fixed.host_idle) * kSpeed);
    out_.simgrid_activities += 2;
    std::vector<s4u::CommPtr> prefetches;  // profile-lru's background copies: the step ends once they are in
    for (const auto& layer : step.layers) {
      const StepModel::LayerDemand d = model().layer_demand(layer.experts, tokens, kv_tokens);
      s4u::this_actor::execute(d.gpu_before * kSpeed);
      ++out_.simgrid_activities;
      if (d.sync == 0 && d.link_bytes == 0) {
        if (d.gpu_hits > 0) s4u::this_actor::execute(d.gpu_hits * kSpeed);
        ++out_.simgrid_activities;
        continue;
      }
      s4u::ExecPtr hits = d.gpu_hits > 0 ? gpu_->exec_async(d.gpu_hits * kSpeed) : nullptr;
      if (hits) ++out_.simgrid_activities;
      // The bubble: miss_sync_idle of it has no kernel resident, as in the step model (which
      // places that gap after the layer's hits, within a miss path longer than they are; it
      // is counted here at the bubble's start, the same time per layer).
      const double idle = std::min(d.sync, s_.engine.physics.miss_sync_idle);
      kernel_off();
      pause(idle);
      kernel_on();
      pause(d.sync - idle);
      // The link's and the host's paths each wait out their fixed part before their work: start
      // the one with the shorter wait first, the other after the difference.
      constexpr double kNever = std::numeric_limits<double>::infinity();
      const double reads_at = d.link_bytes > 0 ? d.link_wait : kNever;
      const double host_at = d.host_experts > 0 ? d.host_transfer : kNever;
      s4u::CommPtr reads = nullptr;
      s4u::ExecPtr host = nullptr;
      auto start_reads = [&] { reads = s4u::Comm::sendto_async(host_, gpu_, static_cast<std::uint64_t>(d.link_bytes)); };
      auto start_host = [&] {
        host = s4u::Exec::init()
                   ->set_flops_amount(model().expert_bytes())  // per thread: one expert per worker group
                   ->set_host(host_)
                   ->set_thread_count(d.host_experts)
                   ->start();
      };
      const bool reads_first = reads_at <= host_at;
      const double first = std::min(reads_at, host_at), second = std::max(reads_at, host_at);
      if (first < kNever) {
        pause(first);
        reads_first ? start_reads() : start_host();
        ++out_.simgrid_activities;
      }
      if (second < kNever) {
        pause(second - first);
        reads_first ? start_host() : start_reads();
        ++out_.simgrid_activities;
      }
      if (hits) hits->wait();
      if (reads) reads->wait();
      if (host) host->wait();
      if (d.prefetch_bytes > 0) {  // copied in behind the layer, sharing the link with what follows
        prefetches.push_back(s4u::Comm::sendto_async(host_, gpu_, static_cast<std::uint64_t>(d.prefetch_bytes)));
        ++out_.simgrid_activities;
      }
      if (d.gpu_after > 0) {
        s4u::this_actor::execute(d.gpu_after * kSpeed);
        ++out_.simgrid_activities;
      }
    }
    for (const auto& copy : prefetches) copy->wait();
    kernel_off();
  }

  // Overlapped slots: the driver's "kernel resident" time is the union of the slots' resident
  // spans, not their sum (one slot's wait may overlap another's kernels). Counted here as the
  // steps run, instead of from the step model's costs (account_gpu).
  void kernel_on() {
    if (resident_slots_++ == 0) resident_since_ = s4u::Engine::get_clock();
  }
  void kernel_off() {
    if (--resident_slots_ > 0) return;
    const double span = s4u::Engine::get_clock() - resident_since_;
    out_.gpu_resident_s += span;
    out_.card_use.front().busy_s += span;  // one card: overlapped slots are single-card only
  }

  // Hands `bytes` of hidden states from card `from` (-1: the host) to card `to`: the sender's
  // synchronisation, then the transfer on the platform. Returns the seconds it took.
  double hand_off(int from, int to, double bytes) {
    const double t0 = s4u::Engine::get_clock();
    s4u::this_actor::sleep_for(s_.engine.physics.handoff_sync);
    if (from < 0)
      fabric_->host_to_card(to, bytes);
    else
      fabric_->card_to_card(from, to, bytes);
    return s4u::Engine::get_clock() - t0;
  }

  // A wait with nothing resident (a SimGrid sleep activity when longer than zero).
  void pause(double seconds) {
    if (seconds <= 0) return;
    s4u::this_actor::sleep_for(seconds);
    ++out_.simgrid_activities;
  }

  void slot_loop() {
    while (true) {
      std::unique_ptr<Job> job(queue_->get<Job>());  // claimed already: on arrival, or below
      if (!job->queued) --claimed_pending_;
      ++out_.simgrid_activities;
      serve(*job);
      // The next: the oldest waiting request (no longer waiting from now), or idle until one
      // arrives; decided before the reply's hand-over, which is no wait for anyone.
      if (waiting_ > 0)
        queue_meter_.set(s4u::Engine::get_clock(), --waiting_);
      else
        ++idle_slots_;
      job->reply->put(job.release(), 0);
      ++out_.simgrid_activities;
    }
  }

  // Continuous batching (slot_scheduling: batched): one decode loop. Between steps it takes
  // the waiting requests in arrival order, up to engine.parallel running (with a paged KV pool,
  // while the prompt's blocks leave the watermark free: the first that does not fit stops
  // the admissions; and within the pass's prompt-token budget), prefills the admitted prompts
  // together in one pass, each getting its next token from it, then runs one decode step for
  // every running request together (BatchStep). A request leaves after its last token, right
  // after its prefill if it wants one token. With a paged pool each step's new positions take
  // blocks; when the pool runs out the most recently admitted request is preempted (its
  // blocks freed; it waits again at the head of the queue and, readmitted, prefills its prompt
  // and its tokens so far again, which gives its next token).
  // A request in a prefill pass.
  struct Prefilled {
    const Job* job = nullptr;
    RequestRunner* runner = nullptr;
  };

  struct Running {
    std::unique_ptr<Job> job;
    std::unique_ptr<RequestRunner> runner;  // from its first admission
    RequestRecord rec;
    std::int64_t prefilled = 0;             // prompt tokens of its first prefill
    std::int64_t blocks = 0;                // KV blocks held
    bool first = false;                     // admitted for the first time: its prefill gives its first token
  };

  std::int64_t blocks_for(std::int64_t tokens) const {
    const std::int64_t b = s_.engine.kv_pool->block_size;
    return (tokens + b - 1) / b;
  }
  // The free blocks the scheduler keeps: the pool's watermark share, rounded down (vLLM V0).
  std::int64_t watermark_blocks() const {
    return static_cast<std::int64_t>(s_.engine.kv_pool->watermark * static_cast<double>(out_.plan.kv_blocks));
  }
  // The blocks a running request holds after its next decode step: its KV positions plus the
  // step's (1 + draft tokens), never beyond prompt + gen_tokens - 1 (its last token is never fed).
  std::int64_t blocks_after_step(const RequestRunner& r) const {
    return blocks_for(std::min(r.kv_positions() + 1 + r.next_drafts(), r.prompt_tokens() + r.gen_tokens() - 1));
  }
  // Blocks the running requests' next decode step takes beyond those they hold.
  // The blocks one running request still needs for its next step.
  std::int64_t growth_of(const Running& r) const { return blocks_after_step(*r.runner) - r.blocks; }
  std::int64_t growth(const std::vector<std::unique_ptr<Running>>& running) const {
    std::int64_t need = 0;
    for (const auto& r : running) need += growth_of(*r);
    return need;
  }

  void batch_loop() {
    std::deque<std::unique_ptr<Running>> waiting;   // taken from the queue (or preempted), not running
    std::vector<std::unique_ptr<Running>> running;  // in admission order
    std::vector<std::unique_ptr<Running>> admitted;  // this iteration's admissions, prefilled together
    std::vector<RequestRunner*> batch;
    BatchStep stepper;
    const auto& pool = s_.engine.kv_pool;
    // Prompt tokens one prefill pass may take: vLLM V0's max_num_batched_tokens without chunked
    // prefill, max(max_model_len, 2048) (vllm/config.py SchedulerConfig); other engines batch
    // every admitted prompt (llama-server splits them into its micro-batches).
    const std::int64_t prefill_budget = pool ? std::max<std::int64_t>(s_.engine.context, 2048) : std::numeric_limits<std::int64_t>::max();
    std::int64_t free_blocks = out_.plan.kv_blocks;
    const std::int64_t watermark = pool ? watermark_blocks() : 0;
    // A request with all its tokens: its record, its blocks back, its client answered.
    auto finish = [&](Running& r) {
      free_blocks += r.blocks;
      complete(*r.job, r.rec, *r.runner, r.prefilled);
      Job* job = r.job.release();
      job->reply->put_init(job, 0)->detach();
      ++out_.simgrid_activities;
    };
    auto take = [&] {
      auto r = std::make_unique<Running>();
      r->job.reset(queue_->get<Job>());
      if (!r->job->queued) --claimed_pending_;
      ++out_.simgrid_activities;
      waiting.push_back(std::move(r));
    };
    // The slots free for arrivals until the next admissions: those no running request holds and
    // no arrival has claimed; none while requests wait (they come first).
    auto free_slots = [&](std::size_t busy) {
      return waiting.empty() && waiting_ == 0 ? std::max(0, s_.engine.parallel - static_cast<int>(busy) - claimed_pending_) : 0;
    };
    while (true) {
      if (running.empty() && waiting.empty()) {  // idle: wait for a request
        idle_slots_ = free_slots(0);
        take();
      }
      while (queue_->listen()) take();
      // Admissions: in arrival order while a slot, the blocks (above the watermark, after the
      // running requests' next step) and the step's prompt-token budget allow; the first that
      // does not fit stops them. Their prompts are then prefilled together in one pass.
      admitted.clear();
      std::int64_t batched_tokens = 0;
      // `running` is fixed while admitting; nothing to admit, nothing to compute.
      const std::int64_t running_growth = pool && !waiting.empty() ? growth(running) : 0;
      while (!waiting.empty() && static_cast<int>(running.size() + admitted.size()) < s_.engine.parallel) {
        Running& next = *waiting.front();
        // Its prefill's tokens (a fresh request's prompt before any prefix reuse is known).
        const std::int64_t new_tokens = next.runner ? next.runner->prefill_tokens() : next.job->shape.prompt_tokens;
        if (!admitted.empty() && batched_tokens + new_tokens > prefill_budget) break;
        if (pool) {
          const std::int64_t need = blocks_for(next.runner ? next.runner->context() : next.job->shape.prompt_tokens);
          if (free_blocks - running_growth - need < watermark && !(running.empty() && admitted.empty())) break;
          free_blocks -= need;
          next.blocks = need;
        }
        batched_tokens += new_tokens;
        std::unique_ptr<Running> r = std::move(waiting.front());
        waiting.pop_front();
        if (r->job->queued) queue_meter_.set(s4u::Engine::get_clock(), --waiting_);
        if (!r->runner) {
          r->runner = std::make_unique<RequestRunner>(s_, stages_, out_.popularity, r->job->id, r->job->shape.prompt_tokens,
                                                      r->job->shape.gen_tokens, s_.engine.split);
          r->rec = start(*r->job, *r->runner);
          r->prefilled = r->runner->prefill_tokens();
          out_.prefilled_tokens += r->prefilled;
          r->first = true;
        }
        admitted.push_back(std::move(r));
      }
      // A request that claimed a slot on arrival and is not admitted (no blocks, or the prefill
      // budget) waits from now, as one that queued does.
      for (auto& r : waiting)
        if (!r->job->queued) {
          r->job->queued = true;
          queue_meter_.set(s4u::Engine::get_clock(), ++waiting_);
        }
      idle_slots_ = free_slots(running.size() + admitted.size());
      if (!admitted.empty()) {
        std::vector<Prefilled> passed;
        for (const auto& r : admitted) passed.push_back({r->job.get(), r->runner.get()});
        run_prefill_pass(passed);
        // The prompts' blocks are held now, also by a request that leaves right after its prefill.
        if (pool) out_.batch.kv_blocks_peak = std::max(out_.batch.kv_blocks_peak, out_.plan.kv_blocks - free_blocks);
        for (auto& r : admitted) {
          if (r->first) {
            r->rec.first_token_s = s4u::Engine::get_clock();
            r->rec.prefill_s = r->rec.first_token_s - r->rec.start_s;
            r->first = false;
          }
          if (r->runner->done())
            finish(*r);  // its one token came from the prefill
          else
            running.push_back(std::move(r));
        }
        admitted.clear();
        idle_slots_ = free_slots(running.size());  // a request done with its prefill freed its slot
      }
      if (running.empty()) continue;
      if (pool) {
        // This step's positions need blocks; preempt the latest admitted until they fit.
        std::int64_t need = growth(running);
        while (running.size() > 1 && need > free_blocks) {
          std::unique_ptr<Running> victim = std::move(running.back());
          running.pop_back();
          need -= growth_of(*victim);
          free_blocks += victim->blocks;
          victim->blocks = 0;
          victim->runner->preempt();
          ++out_.batch.preempted;
          queue_meter_.set(s4u::Engine::get_clock(), ++waiting_);
          victim->job->queued = true;
          waiting.push_front(std::move(victim));
        }
        for (auto& r : running) {
          const std::int64_t want = blocks_after_step(*r->runner);
          free_blocks -= want - r->blocks;
          r->blocks = want;
        }
        out_.batch.kv_blocks_peak = std::max(out_.batch.kv_blocks_peak, out_.plan.kv_blocks - free_blocks);
      }
      batch.clear();
      for (const auto& r : running) batch.push_back(r->runner.get());
      const bool trace = out_.decode_steps < options_.trace_steps;
      StepResult step = stepper.run(batch, trace);
      out_.batch.union_experts = stepper.union_experts();
      out_.batch.request_experts = stepper.request_experts();
      out_.batch.moe_layer_steps = stepper.moe_layer_steps();
      double t0 = s4u::Engine::get_clock();
      double linked = 0;  // hand-offs or all-reduces beyond the cards' work
      if (staged())
        linked = run_split_step(step.stage_costs, step.positions, trace);
      else
        t0 = run_whole_step(step.costs.total());
      out_.decode += step.costs;
      out_.decode.transfer += linked;
      account_gpu(step.costs);
      if (!staged() && trace) record_trace(t0, step);
      ++out_.decode_steps;
      ++out_.batch.steps;
      out_.batch.requests += static_cast<std::int64_t>(batch.size());
      out_.batch.max = std::max(out_.batch.max, static_cast<int>(batch.size()));
      // Finished requests leave the batch and free their blocks.
      for (auto it = running.begin(); it != running.end();) {
        if (!(*it)->runner->done()) {
          ++it;
          continue;
        }
        finish(**it);
        it = running.erase(it);
      }
      idle_slots_ = free_slots(running.size());  // the finished requests' slots take arrivals
    }
  }

  // A request taken by the engine: its record and, from the prompt cache, the prefix it reuses.
  RequestRecord start(const Job& job, RequestRunner& runner) {
    RequestRecord rec;
    rec.id = job.id;
    rec.client = job.client;
    rec.prompt_tokens = job.shape.prompt_tokens;
    rec.gen_tokens = job.shape.gen_tokens;
    rec.arrival_s = job.arrival;
    rec.start_s = s4u::Engine::get_clock();
    // A shared prefix whose prefill has finished is in the engine's prompt cache: "N reused +
    // M read" (at least the prompt's last token is always prefilled).
    const bool cached = job.shape.prefix_id >= 0 && prefixes_.count(job.shape.prefix_id) > 0;
    if (cached) {
      rec.reused_tokens = std::min(job.shape.prefix_tokens, rec.prompt_tokens - 1);
      runner.set_reused(rec.reused_tokens);
      out_.reused_tokens += rec.reused_tokens;
      out_.prefix_hits += rec.reused_tokens > 0 ? 1 : 0;
    }
    return rec;
  }

  // Runs a request's prefill (its prompt's new tokens, or after a preemption its prompt and
  // what it had generated) on the cards.
  void run_prefill(const Job& job, RequestRunner& runner) {
    const std::int64_t prefilled = runner.prefill_tokens();
    if (!expert_split()) {
      run_prefill_pass({{&job, &runner}});
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
    book_prefill(pre, {{&job, &runner}});
  }

  // One prefill pass over `jobs`' sequences (RequestRunner::prefill_of with the first one's
  // routing model: the tokens' GEMMs and the weights once, each prompt's attention over
  // itself) on the card, or the cards in turn: continuous batching passes every prompt
  // admitted together.
  void run_prefill_pass(const std::vector<Prefilled>& jobs) {
    std::vector<RequestRunner::PrefillSequence> sequences;
    for (const auto& j : jobs) sequences.push_back(j.runner->prefill_sequence());
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
    out_.prefill.transfer += linked;
  }

  // llama.cpp's pipeline parallelism splits a prompt into micro-batches (prefill_ubatch) and
  // runs them through the cards like a pipeline: card 1 works on micro-batch k while card 0
  // runs k + 1 (ggml's scheduler keeps several copies of its buffers for this, ggml-org/
  // llama.cpp PR 6017). llama.cpp turns it on only when no tensor is overridden to the CPU
  // (--n-cpu-moe, --cpu-moe and -ot are overrides) and every layer is on a GPU, so here: a
  // layer split whose stages each have a GPU of their own (CPU layers stream their weights to
  // the first card, sharing it), no routed experts on the CPU, a prompt pass of two
  // micro-batches or more. Overlapped slots keep the cards in turn, one card held at a time,
  // so that other slots' steps still fill the gaps.
  bool pipelines_micro_batches(std::int64_t tokens) const {
    // stages_ (the constructor): the host's layers first (card -1) when there are any, then each
    // card holding layers, once.
    const bool cards_only = stages_.size() > 1 && stages_.front().card >= 0;
    const bool overlapped_slots = s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Overlapped;
    return cards_only && !tensor() && !expert_split() && s_.engine.cpu_moe_layers == 0 && !overlapped_slots &&
           model().ubatches(tokens) >= 2;
  }

  // A prompt's micro-batches through a pipeline's cards: micro-batch j starts on card i once
  // card i - 1 has handed it over and card i is free; a hand-off runs on the sending card's
  // stream, so that card is free after it. Each micro-batch takes an equal share of a card's
  // prefill costs and of its hidden states. The first hand-off between two cards runs over the
  // platform; the others reuse its time (nothing else uses the fabric: one decode loop runs,
  // its cards held) and are counted on the links. The pass takes the schedule's makespan; each
  // card is busy for all its costs; `handoff_s` adds every hand-off's time, mostly hidden.
  void run_pipelined_prefill(const std::vector<StepCosts>& cards, std::int64_t tokens) {
    const auto m = static_cast<std::int64_t>(model().ubatches(tokens));
    const double share = 1.0 / static_cast<double>(m);
    const double bytes = static_cast<double>(tokens) * model().activation_bytes() * share;
    const bool one_loop = serial_loop();  // other slots wait; batched slots are one loop already
    if (one_loop) engine_loop_->lock();
    const double t0 = s4u::Engine::get_clock();
    std::vector<double> handoff(cards.size(), 0.0);  // into card i (i >= 1), one micro-batch's
    for (std::size_t i = 1; i < cards.size(); ++i) {
      const int from = stages_[i - 1].card, to = stages_[i].card;
      handoff[i] = hand_off(from, to, bytes);
      fabric_->count_card_to_card(from, to, bytes * static_cast<double>(m - 1));
      out_.handoff_s += handoff[i] * static_cast<double>(m);
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
    const double spent = s4u::Engine::get_clock() - t0;  // the first hand-offs, already simulated
    s4u::this_actor::sleep_for(std::max(0.0, free.back() - spent));
    ++out_.simgrid_activities;
    if (one_loop) engine_loop_->unlock();
    for (std::size_t i = 0; i < cards.size(); ++i) use_card(stages_[i].card, cards[i]);
  }

  // A prefill pass run: its costs, the cards' use, each request's next token (its prefill's:
  // RequestRunner::take_prefill_token) and the shared prefixes now cached.
  void book_prefill(const StepCosts& pre, const std::vector<Prefilled>& jobs) {
    out_.prefill += pre;
    account_gpu(pre, overlapped());  // counted as it ran (run_whole_step)
    for (const auto& [job, runner] : jobs) {
      runner->take_prefill_token();
      if (job->shape.prefix_id >= 0 && job->shape.prefix_tokens > 0) prefixes_.insert(job->shape.prefix_id);
    }
  }

  void serve(const Job& job) {
    RequestRunner runner(s_, stages_, out_.popularity, job.id, job.shape.prompt_tokens, job.shape.gen_tokens, s_.engine.split);
    RequestRecord rec = start(job, runner);
    const std::int64_t prefilled = runner.prefill_tokens();
    out_.prefilled_tokens += prefilled;
    run_prefill(job, runner);
    rec.first_token_s = s4u::Engine::get_clock();
    rec.prefill_s = rec.first_token_s - rec.start_s;

    const bool contended = overlapped();
    double credit = 0;  // exchange time this slot has simulated already
    while (!runner.done()) {
      const int tokens = 1 + runner.next_drafts();  // the step's verified positions
      if (expert_split()) runner.set_exchange(exchange_times(tokens, credit));
      const bool keep = contended || out_.decode_steps < options_.trace_steps;
      const std::int64_t kv_tokens = attended_tokens(s_.model, rec.prompt_tokens + runner.generated());  // KV positions a layer reads
      StepResult step = runner.step(keep);
      double t0 = s4u::Engine::get_clock();
      double linked = 0;  // hand-offs or all-reduces beyond the cards' work
      if (expert_split())
        run_expert_step(step.costs, step.stage_costs, step.exchanges, step.exchange_s, tokens,
                        out_.decode_steps < options_.trace_steps, credit);
      else if (staged())
        linked = run_split_step(step.stage_costs, tokens, out_.decode_steps < options_.trace_steps);
      else if (contended) {
        run_step_contended(step, kv_tokens);
        out_.contended_step_s += s4u::Engine::get_clock() - t0;
        ++out_.contended_steps;
      } else
        t0 = run_whole_step(step.costs.total());
      out_.decode += step.costs;
      out_.decode.transfer += linked;
      account_gpu(step.costs, contended);
      // Overlapped slots' steps run at once: each slot's uncontended layout on tracks of its own.
      if (!staged() && out_.decode_steps < options_.trace_steps)
        record_trace(t0, step, contended ? " (" + s4u::this_actor::get_name() + ")" : std::string());
      ++out_.decode_steps;
    }
    complete(job, rec, runner, prefilled);
  }

  // A request's last token: its record, the summary's sample, its client's figures.
  void complete(const Job& job, RequestRecord& rec, const RequestRunner& runner, std::int64_t prefilled) {
    rec.end_s = s4u::Engine::get_clock();
    const auto& c = runner.counters();
    rec.lookups = c.lookups;
    rec.lookup_hits = c.lookup_hits;
    // The engine's "routed": top-k look-ups per MoE layer for every decoded token (480 per
    // token in the case study; the first token is the prefill's), the denominator of its PCIe
    // overflow ratio.
    rec.routed = s_.model.moe ? static_cast<std::int64_t>(s_.model.moe->experts_per_token) * s_.model.moe->layers * runner.decoded()
                              : 0;  // a dense model routes nothing
    rec.distinct_lookups = c.distinct_lookups;
    rec.distinct_hits = c.distinct_hits;
    rec.pcie_reads = c.pcie_reads;
    rec.steps = c.steps;
    rec.drafted = c.drafted;
    rec.accepted = c.accepted;
    rec.request_share = runner.alpha();
    // A request that looked no expert up (a dense model, or an MoE request without a decode
    // step) has no figure: NaN, left out of the percentiles, null in the JSON.
    const double none = std::numeric_limits<double>::quiet_NaN();
    rec.hit_rate = c.lookups ? static_cast<double>(c.lookup_hits) / static_cast<double>(c.lookups) : none;
    rec.pcie_overflow = rec.routed ? static_cast<double>(c.pcie_reads) / static_cast<double>(rec.routed) : none;
    // The tokens after the first (the prefill's) over the time from the first to the last:
    // 1 / TPOT. None for a one-token request (NaN: no figure, left out of the percentiles).
    const double decode_time = rec.end_s - rec.first_token_s;
    rec.decode_tok_s = runner.decoded() > 0 && decode_time > 0 ? static_cast<double>(runner.decoded()) / decode_time
                                                               : std::numeric_limits<double>::quiet_NaN();
    rec.ttft_s = rec.first_token_s - rec.arrival_s;
    out_.generated_tokens += runner.generated();
    ++out_.completed;
    out_.samples.push_back(RequestSample{static_cast<float>(rec.hit_rate), static_cast<float>(rec.pcie_overflow),
                                         static_cast<float>(rec.decode_tok_s), static_cast<float>(rec.ttft_s),
                                         static_cast<float>(rec.end_s - rec.arrival_s),
                                         static_cast<float>(rec.prefill_s > 0 ? static_cast<double>(prefilled) / rec.prefill_s : 0)});
    if (job.client >= 0) {
      auto& use = client_use_[static_cast<std::size_t>(job.client)];
      use.tokens += runner.generated();
      use.last_end = rec.end_s;
    }
    if (options_.on_request) options_.on_request(rec);
    if (options_.on_progress)
      options_.on_progress(static_cast<int>(out_.completed + out_.rejected()), s_.workload.requests);
  }

  // `resident_measured`: the step's kernel-resident time was counted as it ran (kernel_on/off).
  void account_gpu(const StepCosts& c, bool resident_measured = false) {
    if (!resident_measured) out_.gpu_resident_s += c.total() - c.host_idle;
    out_.gpu_busy_useful_s += c.compute;
    if (!staged()) use_card(0, c, resident_measured);
  }

  void use_card(int card, const StepCosts& c, bool resident_measured = false) {
    // A card index past the cards is a placement the scenario decoder should have refused (CPU
    // layers under a row split): stop rather than write past the accounting.
    if (card < 0 || static_cast<std::size_t>(card) >= out_.card_use.size())
      throw std::logic_error("a step charged to card " + std::to_string(card) + " of " + std::to_string(out_.card_use.size()));
    auto& u = out_.card_use[static_cast<std::size_t>(card)];
    if (!resident_measured) u.busy_s += c.total() - c.host_idle;
    u.compute_s += c.compute;
    u.vram_bytes += c.vram_bytes;
    u.flops += c.flops;
    link_bytes_[static_cast<std::size_t>(card)] += c.pcie_bytes;
  }

  // Several stages (cards, or the host CPU's layers and a card) share a step.
  bool staged() const { return stages_.size() > 1 || s_.cards.size() > 1; }

  // The host CPU runs its layers (one decode loop at a time when slots compete).
  void run_on_host(const StepCosts& costs, bool trace) {
    const bool shared = s_.engine.parallel > 1;
    if (shared) host_lock_->lock();
    const double t0 = s4u::Engine::get_clock();
    s4u::this_actor::sleep_for(costs.total());
    ++out_.simgrid_activities;
    if (shared) host_lock_->unlock();
    out_.host_busy_s += costs.total();
    if (trace) out_.trace.push_back({"CPU layers", "CPU", t0, costs.total()});
  }
  bool expert_split() const { return s_.engine.split == Split::Expert; }

  // Several slots taking turns in one decode loop (llama.cpp's): a slot's whole step runs alone.
  bool serial_loop() const { return s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Serial; }

  // Holds every card (in order) while a slot's step uses them all, when slots compete.
  void hold_all_cards(bool hold) {
    if (s_.engine.parallel <= 1) return;
    if (hold)
      for (auto& lock : card_lock_) lock->lock();
    else
      for (auto it = card_lock_.rbegin(); it != card_lock_.rend(); ++it) (*it)->unlock();
  }

  // Expert split: per card c >= 1, seconds to send `tokens` positions' hidden states from the
  // first card to card c and back, with the synchronisation on each side. The first exchange
  // of each size runs as SimGrid communications (its time is added to `credit`, for the caller's
  // next step to subtract); the fabric is otherwise idle while the cards are held, so later ones
  // reuse its duration.
  std::vector<double> exchange_times(std::int64_t tokens, double& credit) {
    auto known = exchange_s_.find(tokens);
    if (known != exchange_s_.end()) return known->second;
    const double bytes = static_cast<double>(tokens) * model().activation_bytes();
    std::vector<double> times(s_.cards.size(), 0.0);
    hold_all_cards(true);
    for (std::size_t c = 1; c < s_.cards.size(); ++c) {
      const double t0 = s4u::Engine::get_clock();
      fabric_->card_to_card(0, static_cast<int>(c), bytes);
      fabric_->card_to_card(static_cast<int>(c), 0, bytes);
      times[c] = s4u::Engine::get_clock() - t0 + 2 * s_.engine.physics.handoff_sync;
      credit += s4u::Engine::get_clock() - t0;
    }
    hold_all_cards(false);
    return exchange_s_.emplace(tokens, times).first->second;
  }

  // Expert split: the step (or prefill) holds every card for its critical path (attention on
  // the first card, then the slowest card's experts and exchange per layer).
  // `handoff`: the step's exchange seconds on its critical path (per layer the longest).
  // `credit`: exchange time the calling slot simulated for it already (exchange_times), used up.
  void run_expert_step(const StepCosts& total, const std::vector<StepCosts>& cards, const std::vector<int>& exchanges,
                       double handoff, std::int64_t tokens, bool trace, double& credit) {
    hold_all_cards(true);
    const double t0 = s4u::Engine::get_clock();
    const double used = std::min(credit, total.total());
    credit -= used;
    s4u::this_actor::sleep_for(total.total() - used);
    ++out_.simgrid_activities;
    hold_all_cards(false);
    out_.handoff_s += handoff;  // the cards' exchanges of a layer run at once
    const double bytes = static_cast<double>(tokens) * model().activation_bytes();
    for (std::size_t c = 0; c < cards.size(); ++c) {
      use_card(static_cast<int>(c), cards[c]);
      if (c < exchanges.size() && exchanges[c] > 0) {
        fabric_->count_card_to_card(0, static_cast<int>(c), exchanges[c] * bytes);
        fabric_->count_card_to_card(static_cast<int>(c), 0, exchanges[c] * bytes);
      }
      if (trace) out_.trace.push_back({"attention + experts", "GPU " + std::to_string(c), t0, cards[c].total()});
    }
  }
  bool tensor() const { return s_.engine.split == Split::Tensor; }
  const StepModel& model() const { return models_.front(); }

  // Card `c` runs `costs` (its layers of a step or prefill); with several slots the card is
  // held, so that slots' work on one card is serial while different cards overlap.
  void run_on_card(int c, const StepCosts& costs, bool trace, const char* what) {
    const bool shared = s_.engine.parallel > 1;
    if (shared) card_lock_[static_cast<std::size_t>(c)]->lock();
    const double t0 = s4u::Engine::get_clock();
    s4u::this_actor::sleep_for(costs.total());
    ++out_.simgrid_activities;
    if (shared) card_lock_[static_cast<std::size_t>(c)]->unlock();
    use_card(c, costs);
    if (trace) out_.trace.push_back({what, "GPU " + std::to_string(c), t0, costs.total()});
  }

  // A step (or prefill) of `tokens` positions on several cards. Pipeline: each card's layers
  // in turn, the hidden states handed to the next card over the platform. Tensor: every layer
  // on all cards at once (each its shard; the slowest sets the pace) and two all-reduces of
  // the hidden states per layer (after attention, after the MLP).
  // Returns the seconds it took beyond the cards' own work (the pipeline's hand-offs, the tensor
  // split's all-reduces), for the caller's step-time breakdown (booked as transfer).
  double run_split_step(const std::vector<StepCosts>& cards, std::int64_t tokens, bool trace) {
    const double bytes = static_cast<double>(tokens) * model().activation_bytes();
    const auto& ph = s_.engine.physics;
    if (!tensor()) {
      // One decode loop (serial slots) runs a slot's whole step alone: the cards of a pipeline
      // do not work on two slots' steps at once. Overlapped slots may fill the pipeline.
      const bool one_loop = serial_loop();
      if (one_loop) engine_loop_->lock();
      double handoffs = 0;
      for (std::size_t i = 0; i < cards.size(); ++i) {
        // The host's layers run on the CPU, except a prompt batch's: their weights stream to
        // the first card, which computes them (StepModel::prefill), so it is that card's work.
        const bool streamed = stages_[i].card < 0 && host_work_on_card(cards[i]);
        const int card = streamed ? 0 : stages_[i].card;
        if (card < 0)
          run_on_host(cards[i], trace);
        else
          run_on_card(card, cards[i], trace, streamed ? "CPU layers' weights streamed" : "layers");
        if (i + 1 == cards.size()) break;
        const int next = stages_[i + 1].card;
        if (next == card) continue;  // already on that card
        const double t0 = s4u::Engine::get_clock();
        const double took = hand_off(card, next, bytes);
        out_.handoff_s += took;
        handoffs += took;
        if (trace) out_.trace.push_back({"hand-off", "link", t0, took});
      }
      if (one_loop) engine_loop_->unlock();
      return handoffs;
    }
    hold_all_cards(true);
    const int layers = s_.model.layers;
    double slowest = 0;
    for (const auto& c : cards) slowest = std::max(slowest, c.total());
    const double t0 = s4u::Engine::get_clock();
    // All cards are held and nothing else uses the fabric during a tensor step, so every
    // all-reduce of a given size takes the same time: the first of each size runs as SimGrid
    // communications, the rest reuse its measured duration (exact, and ~100x fewer activities).
    auto known = all_reduce_s_.find(bytes);
    double counted = 0;  // all-reduces whose bytes the fabric has already counted
    if (known == all_reduce_s_.end()) {
      const double a0 = s4u::Engine::get_clock();
      fabric_->all_reduce(bytes);
      counted = 1;
      known = all_reduce_s_.emplace(bytes, s4u::Engine::get_clock() - a0).first;
    }
    fabric_->count_all_reduces(bytes, layers * 2.0 - counted);
    const double collectives = layers * 2.0 * (ph.collective_sync + known->second);
    s4u::this_actor::sleep_until(t0 + slowest + collectives);
    ++out_.simgrid_activities;
    out_.collective_s += collectives;
    for (std::size_t c = 0; c < cards.size(); ++c) {
      use_card(static_cast<int>(c), cards[c]);
      // The all-reduces are kernels resident on every card, and a card that finishes its shard
      // first waits inside them for the slowest: busy for the whole step.
      out_.card_use[c].busy_s += collectives + (slowest - cards[c].total());
      if (trace) out_.trace.push_back({"layers + all-reduces", "GPU " + std::to_string(c), t0, s4u::Engine::get_clock() - t0});
    }
    hold_all_cards(false);
    return collectives;
  }

  // Each link's traffic in its busier direction: the expert path's bytes (inside the step
  // model's times; host to card, the activations' return being small) plus what the fabric
  // carried (hand-offs, all-reduces) in each direction.
  void report_links(const PlatformSpec& spec) {
    for (std::size_t c = 0; c < spec.card_links.size(); ++c) {
      const int card = static_cast<int>(c);
      out_.links.push_back(LinkUse{spec.card_links[c].name + " (" + s_.cards[c].link.spec.name + ")", spec.card_links[c].bandwidth,
                                   std::max(link_bytes_[c] + fabric_->card_link_down(card), fabric_->card_link_up(card))});
    }
    if (spec.pcie_switch)
      out_.links.push_back(LinkUse{"switch uplink (" + s_.pcie_switch->spec.name + ")", spec.pcie_switch->bandwidth,
                                   std::max(fabric_->switch_down() + std::accumulate(link_bytes_.begin(), link_bytes_.end(), 0.0),
                                            fabric_->switch_up())});
    if (spec.gpu_link)
      out_.links.push_back(LinkUse{"card-to-card (" + s_.gpu_link->spec.name + ")", spec.gpu_link->bandwidth,
                                   fabric_->gpu_link_busiest()});
  }

  // The step's layout from `t0` on the host, GPU, stall and PCIe tracks (each name + `suffix`).
  void record_trace(double t0, const StepResult& step, const std::string& suffix = "") {
    const StepCosts fixed = model().step_fixed(0, step.drafts);
    double t = t0;
    out_.trace.push_back({"host step work", "host" + suffix, t, fixed.host_idle});
    t += fixed.host_idle;
    out_.trace.push_back({"LM head + draft", "GPU" + suffix, t, fixed.total() - fixed.host_idle});
    t += fixed.total() - fixed.host_idle;
    for (std::size_t l = 0; l < step.layers.size(); ++l) {
      const auto& layer = step.layers[l];
      const auto& c = layer.costs;
      const std::string name = "layer " + std::to_string(l);
      out_.trace.push_back({name + " compute", "GPU" + suffix, t, c.compute + c.launch_sync});
      double after = t + c.compute + c.launch_sync;
      if (c.stall > 0)
        out_.trace.push_back({name + " bubble (" + std::to_string(layer.experts.misses) + " misses)", "GPU stall" + suffix, after, c.stall});
      if (c.cpu_experts > 0) out_.trace.push_back({name + " host experts", "GPU stall" + suffix, after + c.stall, c.cpu_experts});
      if (c.transfer > 0)
        out_.trace.push_back({name + " PCIe reads (" + std::to_string(layer.experts.pcie_reads) + ")", "PCIe" + suffix, after + c.stall, c.transfer});
      t += c.total();
    }
  }

 private:
  const Scenario& s_;
  const RunOptions& options_;
  RunResult& out_;
  std::vector<StepModel> models_;                     // per card
  std::vector<std::unique_ptr<ExpertCache>> caches_;  // per card (MoE)
  std::vector<Stage> stages_;
  Platform platform_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<s4u::MutexPtr> card_lock_;
  s4u::MutexPtr host_lock_;
  CardSetup host_card_;                               // the host CPU seen as a "card" by its step model
  std::unique_ptr<StepModel> host_model_;
  std::map<double, double> all_reduce_s_;             // tensor: all-reduce duration by bytes
  std::map<std::int64_t, std::vector<double>> exchange_s_;  // expert split: per tokens, per card
  std::vector<double> link_bytes_;                    // per card host link: expert-path bytes
  s4u::Host* host_ = nullptr;
  s4u::Host* gpu_ = nullptr;
  s4u::Mailbox* queue_ = nullptr;
  s4u::MutexPtr engine_loop_;
  int waiting_ = 0;      // requests sent that wait for a slot (not those an idle slot took at once)
  int idle_slots_ = 0;   // slots waiting for a request, not yet claimed by an arriving one
  int claimed_pending_ = 0;  // requests that claimed an idle slot on arrival, not yet taken from the queue
  int resident_slots_ = 0;       // overlapped slots with a kernel resident now (kernel_on/off)
  double resident_since_ = 0;    // when the first of them became resident
  QueueMeter queue_meter_;
  struct ClientUse {
    std::int64_t tokens = 0;
    double first_send = -1;
    double last_end = 0;
  };
  std::vector<ClientUse> client_use_;              // closed loop: per client
  std::unordered_set<std::int64_t> prefixes_;      // shared prefixes in the prompt cache
  std::vector<s4u::Mailbox*> free_replies_;        // open loop: reply mailboxes not in use
  int reply_boxes_ = 0;
};

}  // namespace

RunResult run_scenario(const Scenario& s, const RunOptions& options) {
  RunResult out;
  out.cards = plan_cards(s);
  out.plan = out.cards.front();
  out.host_plan = plan_host(s);
  out.popularity = build_popularity(s);
  Simulation sim(s, options, out);
  out.pcie_frac = StepModel(s, out.plan).pcie_frac();
  if (s.model.moe && s.engine.expert_cache && !s.engine.misses_on_cpu && !copies_every_miss(s.engine.policy))
    // An expert split's cards share the first card's pool of host slots (request_runner.cc).
    for (std::size_t c = 0; c < (s.engine.split == Split::Expert ? 1 : out.cards.size()); ++c)
      out.host_expert_slots.push_back(StepModel(s, out.cards[c], static_cast<int>(c)).host_expert_slots());
  // Pre-filling the caches at start: every slot copied over its card's link (cards at once;
  // behind a switch they share its uplink).
  double all_caches = 0;
  for (std::size_t c = 0; c < out.cards.size(); ++c) {
    out.prefill_fill_s = std::max(out.prefill_fill_s, out.cards[c].cache_bytes / s.cards[c].link.experts_bandwidth);
    all_caches += out.cards[c].cache_bytes;
  }
  if (s.pcie_switch) out.prefill_fill_s = std::max(out.prefill_fill_s, all_caches / s.pcie_switch->h2d_bandwidth);
  out.samples.reserve(static_cast<std::size_t>(s.workload.requests));
  sim.run();
  return out;
}

}  // namespace vramsim::sim
