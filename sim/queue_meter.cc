#include "sim/queue_meter.h"

#include <algorithm>
#include <cmath>

namespace vramsim::sim {

QueueMeter::QueueMeter(int max_points, double first_interval_s)
    : max_points_(std::max(2, max_points - max_points % 2)), width_(first_interval_s) {}

void QueueMeter::integrate(double from, double to, double level) {
  if (to <= from) return;
  // Widen the intervals until `to` falls inside the last allowed one.
  while (to > width_ * max_points_) {
    std::vector<double> merged((area_per_bucket_.size() + 1) / 2, 0.0);
    for (std::size_t i = 0; i < area_per_bucket_.size(); ++i) merged[i / 2] += area_per_bucket_[i];
    area_per_bucket_ = std::move(merged);
    width_ *= 2;
  }
  area_ += (to - from) * level;
  if (level == 0) return;
  auto bucket = static_cast<std::size_t>(std::floor(from / width_));
  const auto last = std::min(static_cast<std::size_t>(max_points_ - 1), static_cast<std::size_t>(std::floor(to / width_)));
  if (area_per_bucket_.size() <= last) area_per_bucket_.resize(last + 1, 0.0);
  for (; bucket <= last; ++bucket) {
    const double lo = std::max(from, static_cast<double>(bucket) * width_);
    const double hi = std::min(to, static_cast<double>(bucket + 1) * width_);
    if (hi > lo) area_per_bucket_[bucket] += (hi - lo) * level;
  }
}

void QueueMeter::set(double now_s, int length) {
  integrate(now_, now_s, length_);
  if (now_s > now_) max_ = std::max(max_, length_);  // a length held for no time (a hand-over) is no queue
  now_ = std::max(now_, now_s);
  length_ = length;
}

void QueueMeter::finish(double end_s) {
  integrate(now_, end_s, length_);
  if (end_s > now_) max_ = std::max(max_, length_);
  now_ = end_s_ = std::max(now_, end_s);
}

std::vector<double> QueueMeter::series() const {
  if (end_s_ <= 0) return {};
  const auto points = std::min(static_cast<std::size_t>(max_points_), static_cast<std::size_t>(std::ceil(end_s_ / width_)));
  std::vector<double> out(points, 0.0);
  for (std::size_t i = 0; i < points; ++i) {
    const double span = std::min(width_, end_s_ - static_cast<double>(i) * width_);
    out[i] = i < area_per_bucket_.size() && span > 0 ? area_per_bucket_[i] / span : 0.0;
  }
  return out;
}

}  // namespace vramsim::sim
