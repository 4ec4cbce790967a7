#include "sim/expert_cache.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace vramsim::sim {

std::vector<std::uint32_t> prefill_order(const LayerPopularity& popularity) {
  if (popularity.empty()) return {};  // a card with only dense layers holds no experts
  const auto e = static_cast<std::uint32_t>(popularity.front().experts());
  std::vector<std::uint32_t> order(popularity.size() * e);
  std::iota(order.begin(), order.end(), 0u);
  auto pi = [&](std::uint32_t id) { return popularity[id / e].inclusion()[id % e]; };
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const double pa = pi(a), pb = pi(b);
    if (pa != pb) return pa > pb;
    return a % e < b % e;
  });
  return order;
}

ExpertCache::ExpertCache(CachePolicy policy, std::int64_t slots, double dynamic_share,
                         const LayerPopularity& popularity)
    : traits_(policy_traits(policy)), experts_(popularity.empty() ? 0 : popularity.front().experts()) {
  const int layers = static_cast<int>(popularity.size());
  const int experts = experts_;
  const std::size_t n = static_cast<std::size_t>(layers) * static_cast<std::size_t>(experts);
  if (slots < 0 || static_cast<std::size_t>(slots) > n) throw std::invalid_argument("cache slots out of range");
  resident_.assign(n, 0);
  pinned_.assign(n, 0);
  lru_pos_.resize(n);
  uses_.assign(n, 0);
  last_use_.assign(n, 0);
  switch (traits_.dynamic) {
    case DynamicSlots::None: break;
    case DynamicSlots::All: dynamic_capacity_ = slots; break;
    case DynamicSlots::Share: dynamic_capacity_ = static_cast<std::int64_t>(dynamic_share * static_cast<double>(slots)); break;
  }

  // Pre-fill hottest first. LFU's clock starts past the pre-filled entries' stamps.
  const std::vector<std::uint32_t> order = prefill_order(popularity);
  const bool lfu = traits_.eviction == Eviction::LeastFrequent;
  if (lfu) clock_ = static_cast<std::uint64_t>(slots);
  const std::int64_t pinned = slots - dynamic_capacity_;
  for (std::int64_t i = 0; i < slots; ++i) {
    std::uint32_t id = order[static_cast<std::size_t>(i)];
    resident_[id] = 1;
    ++count_;
    if (i < pinned) {
      pinned_[id] = 1;
      continue;
    }
    ++dynamic_count_;
    if (lfu) {
      // Unused yet: ties on use count go to the colder (later pre-filled) entry first.
      last_use_[id] = static_cast<std::uint64_t>(slots - i);
      lfu_.insert({0, last_use_[id], id});
    } else {
      lru_.push_back(id);  // colder entries toward the back: evicted first
      lru_pos_[id] = std::prev(lru_.end());
    }
  }
}

void ExpertCache::touch(int layer, int expert) {
  const std::size_t id = index(layer, expert);
  if (!resident_[id] || pinned_[id]) return;
  ++clock_;
  if (traits_.eviction == Eviction::LeastFrequent) {
    lfu_.erase({uses_[id], last_use_[id], static_cast<std::uint32_t>(id)});
    ++uses_[id];
    last_use_[id] = clock_;
    lfu_.insert({uses_[id], last_use_[id], static_cast<std::uint32_t>(id)});
  } else {
    lru_.splice(lru_.begin(), lru_, lru_pos_[id]);
  }
}

void ExpertCache::evict_one() {
  std::uint32_t victim = 0;
  if (traits_.eviction == Eviction::LeastFrequent) {
    victim = std::get<2>(*lfu_.begin());
    lfu_.erase(lfu_.begin());
  } else {
    victim = lru_.back();
    lru_.pop_back();
  }
  resident_[victim] = 0;
  --count_;
  --dynamic_count_;
  ++evictions_;
}

void ExpertCache::insert(int layer, int expert) {
  if (!admits_misses() || dynamic_capacity_ == 0) return;
  const std::size_t id = index(layer, expert);
  if (resident_[id]) return;
  if (dynamic_count_ >= dynamic_capacity_) evict_one();
  resident_[id] = 1;
  ++count_;
  ++dynamic_count_;
  ++clock_;
  if (traits_.eviction == Eviction::LeastFrequent) {
    uses_[id] = 1;
    last_use_[id] = clock_;
    lfu_.insert({uses_[id], last_use_[id], static_cast<std::uint32_t>(id)});
  } else {
    lru_.push_front(static_cast<std::uint32_t>(id));
    lru_pos_[id] = lru_.begin();
  }
}

}  // namespace vramsim::sim
