// Counter-based random numbers: every draw is a pure function of (seed, stream keys), so a
// result never depends on the order in which threads or actors ask for numbers.
//
// The mixer is SplitMix64's finaliser applied to a running combination of the keys; it passes
// BigCrush as a generator of successive counters, and we use it the same way (a new counter per
// draw). Keys are typically (seed, request, token, layer, slot, attempt).
#pragma once

#include <cstdint>

namespace vramsim::sim {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A stream of draws identified by its keys; draw(i) is the i-th number of the stream.
class CounterRng {
 public:
  constexpr explicit CounterRng(std::uint64_t seed) : state_(splitmix64(seed)) {}
  constexpr CounterRng with(std::uint64_t key) const {
    CounterRng r(0);
    r.state_ = splitmix64(state_ ^ splitmix64(key + 0x632BE59BD9B4E019ULL));
    return r;
  }
  constexpr std::uint64_t bits(std::uint64_t counter) const { return splitmix64(state_ + counter * 0x9E3779B97F4A7C15ULL); }
  // Uniform in [0, 1) with 53 random bits.
  constexpr double uniform(std::uint64_t counter) const {
    return static_cast<double>(bits(counter) >> 11) * (1.0 / 9007199254740992.0);
  }

 private:
  std::uint64_t state_;
};

}  // namespace vramsim::sim
