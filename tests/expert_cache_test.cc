#include <catch2/catch.hpp>

#include "sim/expert_cache.h"

using namespace vramsim::sim;

namespace {
Popularity shape() { return Popularity::power_law_cutoff(8, 2, 1.0, 100.0); }
}  // namespace

TEST_CASE("profile: pre-filled hottest first, split evenly over layers, pinned", "[cache]") {
  ExpertCache c(CachePolicy::Profile, 7, 0.0, LayerPopularity(3, shape()));
  CHECK(c.resident_count() == 7);
  for (int layer = 0; layer < 3; ++layer) {
    CHECK(c.resident(layer, 0));
    CHECK(c.resident(layer, 1));
    CHECK_FALSE(c.resident(layer, 3));
  }
  CHECK(c.resident(0, 2));  // the 7th slot goes to the first layer's third-hottest
  CHECK_FALSE(c.resident(1, 2));
  c.insert(1, 5);  // pinned profile: misses are not admitted
  CHECK_FALSE(c.resident(1, 5));
  CHECK_FALSE(c.admits_misses());
}

TEST_CASE("lru: a miss evicts the least recently used", "[cache]") {
  ExpertCache c(CachePolicy::Lru, 2, 0.0, LayerPopularity(1, shape()));
  REQUIRE(c.resident(0, 0));
  REQUIRE(c.resident(0, 1));
  c.touch(0, 0);     // 0 is now the most recent
  c.insert(0, 5);    // evicts 1
  CHECK(c.resident(0, 0));
  CHECK_FALSE(c.resident(0, 1));
  CHECK(c.resident(0, 5));
  CHECK(c.evictions() == 1);
  CHECK(c.resident_count() == 2);
}

TEST_CASE("lfu: a miss evicts the least frequently used", "[cache]") {
  ExpertCache c(CachePolicy::Lfu, 2, 0.0, LayerPopularity(1, shape()));
  c.touch(0, 1);
  c.touch(0, 1);
  c.touch(0, 0);
  c.insert(0, 6);  // 0 used once, 1 twice: 0 goes
  CHECK_FALSE(c.resident(0, 0));
  CHECK(c.resident(0, 1));
  CHECK(c.resident(0, 6));
}

// The pre-filled entries have no uses yet: the first miss evicts the coldest of them (the last
// pre-filled), not the first layer's by index.
TEST_CASE("lfu: among unused pre-filled experts the coldest goes first", "[cache]") {
  ExpertCache c(CachePolicy::Lfu, 4, 0.0, LayerPopularity(2, shape()));
  // Pre-filled hottest first: (0,0), (1,0), (0,1), (1,1).
  c.insert(0, 7);
  CHECK_FALSE(c.resident(1, 1));
  CHECK(c.resident(0, 0));
  CHECK(c.resident(1, 0));
  CHECK(c.resident(0, 1));
  c.insert(1, 7);  // then (0,1), the next coldest
  CHECK_FALSE(c.resident(0, 1));
  CHECK(c.resident(0, 0));
}

// A card of a pipeline split can hold only dense layers: it has no experts to cache.
TEST_CASE("a cache over no MoE layers is empty", "[cache]") {
  ExpertCache c(CachePolicy::Profile, 0, 0.0, LayerPopularity{});
  CHECK(c.resident_count() == 0);
  CHECK(prefill_order(LayerPopularity{}).empty());
  CHECK_THROWS(ExpertCache(CachePolicy::Lru, 1, 0.0, LayerPopularity{}));
}

TEST_CASE("profile-lru: the pinned part survives any number of misses", "[cache]") {
  ExpertCache c(CachePolicy::ProfileLru, 4, 0.5, LayerPopularity(1, shape()));
  for (int e = 4; e < 8; ++e) c.insert(0, e);
  CHECK(c.resident(0, 0));
  CHECK(c.resident(0, 1));
  CHECK(c.resident_count() == 4);
  CHECK(c.resident(0, 7));
  CHECK(c.resident(0, 6));
  CHECK_FALSE(c.resident(0, 4));
}
