// The length of the engine's queue over simulated time, in O(1) memory: its time-weighted
// mean and maximum, and a coarse series of at most `max_points` time-weighted means over
// equal intervals (the interval doubles, and neighbours merge, whenever the run outgrows it).
#pragma once

#include <vector>

namespace vramsim::sim {

class QueueMeter {
 public:
  explicit QueueMeter(int max_points = 100, double first_interval_s = 1e-3);

  // The queue holds `length` requests from `now_s` on (times never decrease).
  void set(double now_s, int length);
  // Closes the record at `end_s`.
  void finish(double end_s);

  double mean() const { return end_s_ > 0 ? area_ / end_s_ : 0.0; }
  int max() const { return max_; }
  double interval_s() const { return width_; }
  // Time-weighted mean length per interval [i * interval_s, (i + 1) * interval_s), the last
  // interval cut at the end; valid after finish().
  std::vector<double> series() const;

 private:
  void integrate(double from, double to, double level);

  int max_points_;
  double width_;
  std::vector<double> area_per_bucket_;
  double area_ = 0;
  double now_ = 0;
  double end_s_ = 0;
  int length_ = 0;
  int max_ = 0;
};

}  // namespace vramsim::sim
