#include "sim/request_source.h"

#include <cmath>

namespace vramsim::sim {

RequestShape request_shape(const workloads::WorkloadSetup& w, std::uint64_t seed, std::uint64_t index) {
  RequestShape r;
  if (w.arrival == workloads::Arrival::Trace) {
    const workloads::TraceRow& row = w.trace[index];
    r.prompt_tokens = row.prompt_tokens;
    r.gen_tokens = row.gen_tokens;
    r.prefix_id = row.prefix_id;
    r.prefix_tokens = row.prefix_tokens >= 0 ? row.prefix_tokens : w.shared_prefix_tokens;
    return r;
  }
  const CounterRng rng = CounterRng(seed).with(0x4C454E475448ULL).with(index);  // "LENGTH"
  r.prompt_tokens = w.prompt.sample(rng.uniform(0), rng.uniform(1));
  r.gen_tokens = w.gen.sample(rng.uniform(2), rng.uniform(3));
  if (w.shared_prefix_tokens > 0) {
    r.prefix_id = 0;
    r.prefix_tokens = w.shared_prefix_tokens;
  }
  return r;
}

ArrivalClock::ArrivalClock(const workloads::WorkloadSetup& w, std::uint64_t seed)
    : w_(w),
      gaps_(CounterRng(seed).with(0x415252495645ULL)),  // "ARRIVE": the Poisson stream
      switches_(CounterRng(seed).with(0x4255525354ULL)) {  // "BURST"
  if (w_.arrival == workloads::Arrival::Bursty) left_s_ = exponential(switches_, switch_count_++, 1.0 / w_.burst_s);
}

double ArrivalClock::exponential(const CounterRng& rng, std::uint64_t counter, double rate) const {
  return -std::log1p(-rng.uniform(counter)) / rate;
}

double ArrivalClock::next_gap() {
  if (w_.arrival != workloads::Arrival::Bursty) return exponential(gaps_, arrivals_++, w_.arrival_rate);
  // The process is memoryless within a state, so a gap that crosses a switch is redrawn at
  // the new state's rate from the switch on.
  double gap = 0;
  while (true) {
    const double rate = burst_ ? w_.arrival_rate : w_.idle_rate;
    if (rate > 0) {
      const double g = exponential(gaps_, draws_++, rate);
      if (g < left_s_) {
        left_s_ -= g;
        ++arrivals_;
        return gap + g;
      }
    }
    gap += left_s_;
    burst_ = !burst_;
    left_s_ = exponential(switches_, switch_count_++, 1.0 / (burst_ ? w_.burst_s : w_.idle_s));
  }
}

}  // namespace vramsim::sim
