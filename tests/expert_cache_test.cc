#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "sim/expert_cache.h"
#include "tests/sim_fixture.h"

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

// A prefill copies the experts its prompt touches into a copy-in cache (StepModel::prefill
// charges those copies): a long prompt touches nearly every expert, so in an LRU cache the
// prompt's cold experts push out hot ones; a pinned profile keeps its experts whatever the prompt.
// (Expected figures: the case study's shared card, 5,798 slots over 48 layers x 512 experts.)
TEST_CASE("lru: a prompt's touched experts enter the cache at its prefill, and profile: nothing moves", "[cache]") {
  auto resident_by_rank = [](const ExpertCache& c, int layers, int experts) {
    std::vector<int> per_rank(static_cast<std::size_t>(experts), 0);
    for (int l = 0; l < layers; ++l)
      for (int e = 0; e < experts; ++e) per_rank[static_cast<std::size_t>(e)] += c.resident(l, e) ? 1 : 0;
    return per_rank;
  };
  vramsim::test::CaseStudyCard lru({"engine.expert_cache.policy=lru"});
  const int layers = 48, experts = 512;
  const auto before = resident_by_rank(*lru.cache, layers, experts);
  const std::int64_t count = lru.cache->resident_count();
  auto runner = lru.runner(3, 8000);
  runner.take_prefill_token();
  const auto after = resident_by_rank(*lru.cache, layers, experts);
  CHECK(lru.cache->resident_count() == count);  // full before and after
  CHECK(lru.cache->evictions() > 0);
  int cold_before = 0, cold_after = 0;  // resident experts beyond the hottest quarter
  for (int e = experts / 4; e < experts; ++e) {
    cold_before += before[static_cast<std::size_t>(e)];
    cold_after += after[static_cast<std::size_t>(e)];
  }
  CHECK(cold_before == 0);  // pre-filled hottest first: ~120 of 512 per layer
  CHECK(cold_after > 1000);  // an 8,000-token prompt touches nearly all 512 experts of every layer
  // One pool for all layers, and the prompt's layers run in order: the first layers' experts,
  // used longest ago, make room for the last layers' (each touches ~450 of its 512 experts).
  CHECK_FALSE(lru.cache->resident(0, 0));
  CHECK(lru.cache->resident(layers - 1, 0));
  CHECK(after[0] < layers / 2);
  // A short prompt moves little; the same request draws the same experts.
  vramsim::test::CaseStudyCard a({"engine.expert_cache.policy=lru"}), b({"engine.expert_cache.policy=lru"});
  auto ra = a.runner(5), rb = b.runner(5);
  ra.take_prefill_token();
  rb.take_prefill_token();
  CHECK(a.cache->evictions() == b.cache->evictions());
  CHECK(resident_by_rank(*a.cache, layers, experts) == resident_by_rank(*b.cache, layers, experts));
  CHECK(a.cache->evictions() < lru.cache->evictions() / 5);

  vramsim::test::CaseStudyCard pinned;
  const auto pinned_before = resident_by_rank(*pinned.cache, layers, experts);
  auto rp = pinned.runner(3, 8000);
  rp.take_prefill_token();
  CHECK(resident_by_rank(*pinned.cache, layers, experts) == pinned_before);
  CHECK(pinned.cache->evictions() == 0);
}

TEST_CASE("the policy table: one row per policy, each spelled once, its traits consistent", "[cache]") {
  REQUIRE(cache_policies().size() == 4);
  for (const auto& row : cache_policies()) {
    INFO(row.name);
    CHECK(&policy_traits(row.id) == &row);
    CHECK(find_cache_policy(row.name) == &row);
    CHECK(to_string(row.id) == row.name);
    // A policy that admits no miss has nothing to evict and no dynamic slots.
    CHECK(row.admits_misses() == (row.dynamic != DynamicSlots::None));
    CHECK(row.tracks_use() == (row.eviction != Eviction::None));
    // The cache built from the row behaves as the row says.
    ExpertCache c(row.id, 2, row.dynamic == DynamicSlots::Share ? 0.5 : 0.0, LayerPopularity(1, shape()));
    c.insert(0, 6);
    CHECK(c.resident(0, 6) == row.admits_misses());
  }
  CHECK(find_cache_policy("fifo") == nullptr);
  CHECK(cache_policy_names() == "profile, lru, lfu, profile-lru");
}

TEST_CASE("the docs name every policy of the table where the engine keys are listed", "[cache]") {
  const std::string docs = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/../docs/";
  for (const char* page : {"scenarios.md", "json-schema.md"}) {
    std::ifstream in(docs + page);
    REQUIRE(in);
    std::string line, row;
    // The first such row: the engine keys (scenarios.md), the run's `cache` object (json-schema.md;
    // plan's later row lists only the policies it tries).
    while (row.empty() && std::getline(in, line))
      if (line.find("policy`") != std::string::npos && line.find("`profile`") != std::string::npos) row = line;
    INFO(page << ": the policy row " << row);
    REQUIRE_FALSE(row.empty());
    for (const auto& p : cache_policies()) CHECK(row.find("`" + std::string(p.name) + "`") != std::string::npos);
  }
}
