// Each request's shape and the open loop's arrival times, drawn from the counter-based
// generator (sim/counter_rng.h): a request's lengths are a pure function of (seed, request),
// so results never depend on the order in which actors, threads or processes ask for them.
#pragma once

#include <cstdint>

#include "sim/counter_rng.h"
#include "workloads/serving_workload.h"

namespace vramsim::sim {

struct RequestShape {
  std::int64_t prompt_tokens = 0;
  std::int64_t gen_tokens = 0;
  std::int64_t prefix_id = -1;     // -1: no shared prefix
  std::int64_t prefix_tokens = 0;  // tokens of the shared prefix, when prefix_id >= 0
};

// Request `index`'s lengths and prefix: the trace's row, else drawn from the workload's length
// distributions (a fixed length draws nothing).
RequestShape request_shape(const workloads::WorkloadSetup& w, std::uint64_t seed, std::uint64_t index);

// The open loop's gaps between arrivals, in order. Poisson: exponential gaps at `arrival_rate`.
// Bursty: a two-state Markov-modulated Poisson process that starts in a burst; bursts and idle
// spells last exponential times of mean `burst_s` and `idle_s`, with arrivals at
// `arrival_rate` within a burst and `idle_rate` between bursts. (Trace arrivals are the rows'
// own times.) Draws are keyed by (seed, arrival) and (seed, state switch).
class ArrivalClock {
 public:
  ArrivalClock(const workloads::WorkloadSetup& w, std::uint64_t seed);
  // Seconds from the previous arrival (or the start) to the next one.
  double next_gap();

 private:
  double exponential(const CounterRng& rng, std::uint64_t counter, double rate) const;

  const workloads::WorkloadSetup& w_;
  CounterRng gaps_;
  CounterRng switches_;
  std::uint64_t arrivals_ = 0;
  std::uint64_t draws_ = 0;
  std::uint64_t switch_count_ = 0;
  bool burst_ = true;
  double left_s_ = 0;  // of the current burst or idle spell
};

}  // namespace vramsim::sim
