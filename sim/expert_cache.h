// The VRAM expert cache: which (layer, expert) pairs are resident.
//
// The policies and what each does are one table, sim/cache_policy.cc: which slots are pinned
// hottest first (all but the row's dynamic part), which rule evicts from the dynamic part
// (least recently / least frequently used), and whether misses are admitted. The step model
// charges a miss by the row's MissPath; copy-in policies also admit the experts a prompt
// touches (RequestRunner::admit_prompt_experts).
// Experts are identified by their popularity rank within the layer. Lookups are O(1);
// insertions O(1) for LRU and O(log n) for LFU.
#pragma once

#include <cstdint>
#include <list>
#include <set>
#include <tuple>
#include <vector>

#include "sim/routing.h"
#include "sim/scenario.h"

namespace vramsim::sim {

// A hottest-first cache's pre-fill order over all (layer, rank) pairs, as id = layer x experts
// + rank: by inclusion probability (a layer's probabilities sum to top-k, so they compare
// across layers); ties by rank, then layer (layers of the same shape alternate, so such slots
// split evenly).
std::vector<std::uint32_t> prefill_order(const LayerPopularity& popularity);

class ExpertCache {
 public:
  ExpertCache(CachePolicy policy, std::int64_t slots, double dynamic_share, const LayerPopularity& popularity);

  CachePolicy policy() const { return traits_.id; }
  const CachePolicyTraits& traits() const { return traits_; }
  bool resident(int layer, int expert) const { return resident_[index(layer, expert)] != 0; }
  // Records a use of a resident expert (recency / frequency bookkeeping).
  void touch(int layer, int expert);
  // Brings a missed expert in, evicting per the policy. No-op for the pinned profile policy.
  void insert(int layer, int expert);
  // Whether misses enter the cache (copied in now, or prefetched for later tokens).
  bool admits_misses() const { return traits_.admits_misses(); }
  std::int64_t resident_count() const { return count_; }
  std::int64_t evictions() const { return evictions_; }

 private:
  std::size_t index(int layer, int expert) const {
    return static_cast<std::size_t>(layer) * static_cast<std::size_t>(experts_) + static_cast<std::size_t>(expert);
  }
  void evict_one();

  const CachePolicyTraits& traits_;
  int experts_;
  std::int64_t dynamic_capacity_ = 0;  // slots managed by LRU/LFU
  std::vector<std::uint8_t> resident_;
  std::vector<std::uint8_t> pinned_;
  std::int64_t count_ = 0;
  std::int64_t dynamic_count_ = 0;
  std::int64_t evictions_ = 0;
  std::uint64_t clock_ = 0;
  // LRU: most recent at the front; iterators per entry for O(1) moves.
  std::list<std::uint32_t> lru_;
  std::vector<std::list<std::uint32_t>::iterator> lru_pos_;
  // LFU: (uses, last use, id), least at begin().
  std::set<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>> lfu_;
  std::vector<std::uint64_t> uses_;
  std::vector<std::uint64_t> last_use_;
};

}  // namespace vramsim::sim
