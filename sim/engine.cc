// run_scenario: plans the cards, then wires the run's parts and lets SimGrid run them.
//   RunRecorder     (run_recorder.h)   the results
//   StepExecutor    (step_executor.h)  the platform and a step's activities
//   RequestQueue    (request_queue.h)  clients, arrivals, admission control, the queue
//   Scheduler       (scheduler.h)      slots or continuous batching
#include "sim/engine.h"

#include <simgrid/s4u.hpp>

#include <algorithm>

#include "sim/routing_trace.h"  // scenario_popularity
#include "sim/scheduler.h"

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

namespace {

LayerPopularity build_popularity(const Scenario& s) {
  if (!s.model.moe) return {};
  const auto& moe = *s.model.moe;
  if (!moe.routing)  // no routing statistics (an engine without a cache): every expert alike
    return LayerPopularity(static_cast<std::size_t>(moe.layers),
                           Popularity::power_law_cutoff(moe.experts, moe.experts_per_token, 0.0, 1e12));
  return scenario_popularity(s);
}

// Pre-filling the caches at start: every slot copied over its card's link (cards at once;
// behind a switch they share its uplink). Seconds.
double cache_fill_s(const Scenario& s, const std::vector<VramPlan>& cards) {
  double fill = 0, all_caches = 0;
  for (std::size_t c = 0; c < cards.size(); ++c) {
    fill = std::max(fill, cards[c].cache_bytes / s.cards[c].link.experts_bandwidth);
    all_caches += cards[c].cache_bytes;
  }
  if (s.pcie_switch) fill = std::max(fill, all_caches / s.pcie_switch->h2d_bandwidth);
  return fill;
}

}  // namespace

RunResult run_scenario(const Scenario& s, const RunOptions& options) {
  RunResult out;
  out.cards = plan_cards(s);
  out.plan = out.cards.front();
  out.host_plan = plan_host(s);
  out.popularity = build_popularity(s);
  RunRecorder recorder(s, options, out);
  StepExecutor executor(s, recorder);
  out.pcie_frac = StepModel(s, out.plan).pcie_frac();
  if (s.model.moe && s.engine.expert_cache && !s.engine.misses_on_cpu && !copies_every_miss(s.engine.policy))
    // An expert split's cards share the first card's pool of host slots (request_runner.cc).
    for (std::size_t c = 0; c < (s.engine.split == Split::Expert ? 1 : out.cards.size()); ++c)
      out.host_expert_slots.push_back(StepModel(s, out.cards[c], static_cast<int>(c)).host_expert_slots());
  out.prefill_fill_s = cache_fill_s(s, out.cards);
  out.samples.reserve(static_cast<std::size_t>(s.workload.requests));

  auto engine = make_exact_engine();
  executor.build_platform();
  // Every slot starts idle, ready for the first requests.
  RequestQueue queue(s, recorder, s.engine.parallel);
  if (s.workload.open_loop) s4u::Actor::create("arrivals", executor.host(), [&queue] { queue.arrivals(); });
  for (int c = 0; c < s.workload.clients; ++c)
    s4u::Actor::create("client" + std::to_string(c), executor.host(), [&queue, c] { queue.client(c); });
  const std::unique_ptr<Scheduler> scheduler = make_scheduler(EngineParts{s, options, recorder, queue, executor});
  scheduler->start();
  engine->run();
  recorder.finish(s4u::Engine::get_clock(), executor.platform_spec(), executor.fabric());
  // The engine goes first (as each part's actors were made after it): ending the daemon actors
  // unwinds stacks that refer to the scheduler, the queue and the executor.
  engine.reset();
  return out;
}

}  // namespace vramsim::sim
