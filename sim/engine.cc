#include "sim/engine.h"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <stdexcept>

#include "sim/expert_cache.h"
#include "sim/platform.h"
#include "sim/routing_profile.h"
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
};

LayerPopularity build_popularity(const Scenario& s) {
  const auto& moe = *s.model.moe;
  const auto& r = *moe.routing;
  if (!r.profile.empty()) {
    auto profile = load_routing_profile(r.profile, moe.layers, moe.experts, moe.experts_per_token);
    if (!profile) throw std::invalid_argument(profile.error().message);
    return std::move(profile).value();
  }
  // Fit the global shape so that the median request (share alpha_median routed by its own
  // preference, which catches `coverage` of its look-ups in expectation) has the measured hit
  // rate: h = (1 - a) H(c) + a c  =>  H(c) = (h - a c) / (1 - a).
  auto global = [&](std::pair<double, double> p) {
    const double a = r.request_share_median;
    return CoveragePoint{p.first, (p.second - a * p.first) / (1.0 - a)};
  };
  auto fitted = fit_popularity(moe.experts, moe.experts_per_token, global(r.coverage_points[0]), global(r.coverage_points[1]));
  if (!fitted)
    throw std::invalid_argument("model.moe.routing.coverage_points: " + fitted.error().message);
  return LayerPopularity(static_cast<std::size_t>(moe.layers), std::move(fitted).value());
}

class Simulation {
 public:
  Simulation(const Scenario& s, const RunOptions& o, RunResult& out)
      : s_(s), options_(o), out_(out), model_(s, out.plan) {}

  void run() {
    auto engine = make_exact_engine();
    // The host's worker groups are its cores; a core's speed is one group's expert throughput
    // (bytes of expert weights per second), so an expert is an exec of its size in bytes.
    const Platform platform = build_host_gpu_platform(kSpeed, model_.host_worker_rate(),
                                                      s_.engine.physics.host_expert_workers,
                                                      s_.link.h2d_bandwidth, s_.link.spec.latency_s);
    host_ = platform.host;
    gpu_ = platform.gpu;

    queue_ = s4u::Mailbox::by_name("queue");
    engine_loop_ = s4u::Mutex::create();
    if (s_.workload.open_loop)
      s4u::Actor::create("arrivals", host_, [this] { arrivals(); });
    for (int c = 0; c < s_.workload.clients; ++c)
      s4u::Actor::create("client" + std::to_string(c), host_, [this, c] { client(c); });
    for (int slot = 0; slot < s_.engine.parallel; ++slot)
      s4u::Actor::create("slot" + std::to_string(slot), gpu_, [this] { slot_loop(); })->daemonize();
    engine->run();
    out_.makespan_s = s4u::Engine::get_clock();
  }

 private:
  // Sends request `r` and waits for its completion, unless the engine turns it away at
  // arrival: a prompt longer than its context window, or (admission control) `max_queue`
  // requests already waiting.
  void submit(int r, int c, s4u::Mailbox* reply) {
    const double now = s4u::Engine::get_clock();
    const char* reason = nullptr;
    if (s_.workload.prompt_tokens > s_.engine.context) {
      reason = "prompt_exceeds_context";
      ++out_.rejected_context;
    } else if (s_.engine.max_queue && waiting_ >= *s_.engine.max_queue) {
      reason = "queue_full";
      ++out_.rejected_queue;
    }
    if (reason) {
      if (options_.on_reject)
        options_.on_reject(RejectedRequest{static_cast<std::uint64_t>(r), c, s_.workload.prompt_tokens, now, reason});
      if (options_.on_progress)
        options_.on_progress(static_cast<int>(out_.completed + out_.rejected()), s_.workload.requests);
      return;
    }
    ++waiting_;
    queue_->put(new Job{static_cast<std::uint64_t>(r), c, now, reply}, 0);
    ++out_.simgrid_activities;
    delete reply->get<Job>();  // the completed job comes back
    ++out_.simgrid_activities;
  }

  // A closed-loop client: sends its next request when the previous one ends.
  void client(int c) {
    s4u::Mailbox* reply = s4u::Mailbox::by_name("client" + std::to_string(c));
    for (int r = c; r < s_.workload.requests; r += s_.workload.clients) submit(r, c, reply);
  }

  // Open loop: requests arrive as a Poisson process (exponential gaps, counter-based draws);
  // each is submitted by its own actor so that arrivals never wait for completions.
  void arrivals() {
    const CounterRng rng = CounterRng(s_.seed).with(0x415252495645ULL);
    for (int r = 0; r < s_.workload.requests; ++r) {
      const double u = rng.uniform(static_cast<std::uint64_t>(r));
      s4u::this_actor::sleep_for(-std::log1p(-u) / s_.workload.arrival_rate);
      ++out_.simgrid_activities;
      s4u::Actor::create("request" + std::to_string(r), host_, [this, r] {
        submit(r, -1, s4u::Mailbox::by_name("request" + std::to_string(r)));
      });
    }
  }

  // Runs a whole step (or a prefill) of `seconds`. With one slot nothing competes, so one
  // activity of the step's duration is exact (the step model holds the link's time on the
  // critical path). A serial engine runs one slot's step at a time: the loop is a mutex.
  void run_whole_step(double seconds) {
    if (s_.engine.parallel > 1) engine_loop_->lock();
    s4u::this_actor::sleep_for(seconds);
    ++out_.simgrid_activities;
    if (s_.engine.parallel > 1) engine_loop_->unlock();
  }

  // With several slots, a step runs layer by layer as separate activities so that the slots
  // contend for the GPU, the host's worker groups and the link as the layers interleave:
  // per layer, attention on the GPU; then the resident experts on the GPU while (after the
  // bubble's fixed part) the host's groups compute their experts and the link carries the
  // rest; the layer ends when all three have.
  void run_step_contended(const StepResult& step, int tokens, std::int64_t context) {
    const StepCosts fixed = model_.step_fixed(tokens);
    s4u::this_actor::sleep_for(fixed.host_idle);
    s4u::this_actor::execute((fixed.total() - fixed.host_idle) * kSpeed);
    out_.simgrid_activities += 2;
    for (const auto& layer : step.layers) {
      const StepModel::LayerDemand d = model_.layer_demand(layer.experts, tokens, context);
      s4u::this_actor::execute(d.gpu_before * kSpeed);
      ++out_.simgrid_activities;
      if (d.sync == 0 && d.pcie_bytes == 0) {
        if (d.gpu_hits > 0) s4u::this_actor::execute(d.gpu_hits * kSpeed);
        ++out_.simgrid_activities;
        continue;
      }
      s4u::ExecPtr hits = d.gpu_hits > 0 ? gpu_->exec_async(d.gpu_hits * kSpeed) : nullptr;
      if (d.sync > 0) s4u::this_actor::sleep_for(d.sync);
      s4u::CommPtr reads =
          d.pcie_bytes > 0 ? s4u::Comm::sendto_async(host_, gpu_, static_cast<std::uint64_t>(d.pcie_bytes)) : nullptr;
      s4u::ExecPtr host = nullptr;
      if (d.host_experts > 0)
        host = s4u::Exec::init()
                   ->set_flops_amount(model_.expert_bytes())  // per thread: one expert per worker group
                   ->set_host(host_)
                   ->set_thread_count(d.host_experts)
                   ->start();
      if (hits) hits->wait();
      if (reads) reads->wait();
      if (host) host->wait();
      out_.simgrid_activities += 4;
    }
  }

  void slot_loop() {
    while (true) {
      std::unique_ptr<Job> job(queue_->get<Job>());
      --waiting_;
      ++out_.simgrid_activities;
      serve(*job);
      job->reply->put(job.release(), 0);
      ++out_.simgrid_activities;
    }
  }

  void serve(const Job& job) {
    RequestRecord rec;
    rec.id = job.id;
    rec.client = job.client;
    rec.prompt_tokens = s_.workload.prompt_tokens;
    rec.gen_tokens = s_.workload.gen_tokens;
    rec.arrival_s = job.arrival;
    rec.start_s = s4u::Engine::get_clock();
    RequestRunner runner(s_, model_, out_.popularity, *cache_, job.id, rec.prompt_tokens, rec.gen_tokens);

    StepCosts pre = runner.prefill();
    run_whole_step(pre.total());
    out_.prefill += pre;
    rec.first_token_s = s4u::Engine::get_clock();
    rec.prefill_s = rec.first_token_s - rec.start_s;
    account_gpu(pre);

    const bool contended = s_.engine.parallel > 1 && s_.engine.scheduling == SlotScheduling::Overlapped;
    const int tokens = 1 + (s_.engine.speculative ? s_.engine.draft_tokens : 0);
    while (!runner.done()) {
      const bool keep = contended || out_.decode_steps < options_.trace_steps;
      const std::int64_t context = rec.prompt_tokens + runner.generated();
      StepResult step = runner.step(keep);
      const double t0 = s4u::Engine::get_clock();
      if (contended)
        run_step_contended(step, tokens, context);
      else
        run_whole_step(step.costs.total());
      out_.decode += step.costs;
      account_gpu(step.costs);
      if (out_.decode_steps < options_.trace_steps) record_trace(t0, step);
      ++out_.decode_steps;
    }
    rec.end_s = s4u::Engine::get_clock();
    const auto& c = runner.counters();
    rec.lookups = c.lookups;
    rec.lookup_hits = c.lookup_hits;
    // The engine's "routed": top-k look-ups per MoE layer for every generated token (480 per
    // token in the case study), the denominator of its PCIe overflow ratio.
    rec.routed = static_cast<std::int64_t>(s_.model.moe->experts_per_token) * s_.model.moe->layers * runner.generated();
    rec.distinct_lookups = c.distinct_lookups;
    rec.distinct_hits = c.distinct_hits;
    rec.pcie_reads = c.pcie_reads;
    rec.steps = c.steps;
    rec.drafted = c.drafted;
    rec.accepted = c.accepted;
    rec.request_share = runner.alpha();
    rec.hit_rate = c.lookups ? static_cast<double>(c.lookup_hits) / static_cast<double>(c.lookups) : 1.0;
    rec.pcie_overflow = rec.routed ? static_cast<double>(c.pcie_reads) / static_cast<double>(rec.routed) : 0.0;
    const double decode_time = rec.end_s - rec.first_token_s;
    rec.decode_tok_s = decode_time > 0 ? static_cast<double>(runner.generated()) / decode_time : 0.0;
    rec.ttft_s = rec.first_token_s - rec.arrival_s;
    out_.generated_tokens += runner.generated();
    ++out_.completed;
    out_.samples.push_back(RequestSample{static_cast<float>(rec.hit_rate), static_cast<float>(rec.pcie_overflow),
                                         static_cast<float>(rec.decode_tok_s), static_cast<float>(rec.ttft_s),
                                         static_cast<float>(rec.end_s - rec.arrival_s),
                                         static_cast<float>(rec.prefill_s > 0 ? static_cast<double>(rec.prompt_tokens) / rec.prefill_s : 0)});
    if (options_.on_request) options_.on_request(rec);
    if (options_.on_progress)
      options_.on_progress(static_cast<int>(out_.completed + out_.rejected()), s_.workload.requests);
  }

  void account_gpu(const StepCosts& c) {
    out_.gpu_resident_s += c.total() - c.host_idle;
    out_.gpu_busy_useful_s += c.compute;
  }

  void record_trace(double t0, const StepResult& step) {
    const StepCosts fixed = model_.step_fixed(0);
    double t = t0;
    out_.trace.push_back({"host step work", "host", t, fixed.host_idle});
    t += fixed.host_idle;
    out_.trace.push_back({"LM head + draft", "GPU", t, fixed.total() - fixed.host_idle});
    t += fixed.total() - fixed.host_idle;
    for (std::size_t l = 0; l < step.layers.size(); ++l) {
      const auto& layer = step.layers[l];
      const auto& c = layer.costs;
      const std::string name = "layer " + std::to_string(l);
      out_.trace.push_back({name + " compute", "GPU", t, c.compute + c.launch_sync});
      double after = t + c.compute + c.launch_sync;
      if (c.stall > 0) out_.trace.push_back({name + " bubble (" + std::to_string(layer.experts.misses) + " misses)", "GPU stall", after, c.stall});
      if (c.cpu_experts > 0) out_.trace.push_back({name + " host experts", "GPU stall", after + c.stall, c.cpu_experts});
      if (c.transfer > 0) out_.trace.push_back({name + " PCIe reads (" + std::to_string(layer.experts.pcie_reads) + ")", "PCIe", after + c.stall, c.transfer});
      t += c.total();
    }
  }

 public:
  std::unique_ptr<ExpertCache> cache_;

 private:
  const Scenario& s_;
  const RunOptions& options_;
  RunResult& out_;
  StepModel model_;
  s4u::Host* host_ = nullptr;
  s4u::Host* gpu_ = nullptr;
  s4u::Mailbox* queue_ = nullptr;
  s4u::MutexPtr engine_loop_;
  int waiting_ = 0;  // requests sent and not yet taken by a slot
};

}  // namespace

RunResult run_scenario(const Scenario& s, const RunOptions& options) {
  RunResult out;
  out.plan = plan_vram(s);
  out.popularity = build_popularity(s);
  Simulation sim(s, options, out);
  out.pcie_frac = StepModel(s, out.plan).pcie_frac();
  sim.cache_ = std::make_unique<ExpertCache>(s.engine.policy, out.plan.slots, s.engine.dynamic_share, out.popularity);
  // Pre-filling the cache at start: every slot copied over the link.
  out.prefill_fill_s = out.plan.cache_bytes / s.link.h2d_bandwidth;
  out.samples.reserve(static_cast<std::size_t>(s.workload.requests));
  sim.run();
  return out;
}

}  // namespace vramsim::sim
