#include "sim/cache_policy.h"

#include <array>

namespace vramsim::sim {
namespace {

// One row per policy; the enum's order (policy_traits indexes by it).
constexpr std::array<CachePolicyTraits, 4> kPolicies{{
    {CachePolicy::Profile, "profile", MissPath::InPlace, Eviction::None, DynamicSlots::None, true,
     "pre-filled hottest first from the routing profile and pinned; misses served from host memory"},
    {CachePolicy::Lru, "lru", MissPath::CopiedIn, Eviction::LeastRecent, DynamicSlots::All, false,
     "pre-filled like profile; every miss copied in over the link, evicting the least recently used"},
    {CachePolicy::Lfu, "lfu", MissPath::CopiedIn, Eviction::LeastFrequent, DynamicSlots::All, false,
     "pre-filled like profile; every miss copied in over the link, evicting the least frequently used"},
    {CachePolicy::ProfileLru, "profile-lru", MissPath::InPlacePrefetch, Eviction::LeastRecent, DynamicSlots::Share, false,
     "a pinned profile part plus an LRU part (dynamic_share of the slots); misses served from host memory, "
     "then prefetched into the LRU part"},
}};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kPolicies.size(); ++i)
    if (static_cast<std::size_t>(kPolicies[i].id) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kPolicies must list the policies in CachePolicy's order");

}  // namespace

const CachePolicyTraits& policy_traits(CachePolicy policy) { return kPolicies[static_cast<std::size_t>(policy)]; }

std::span<const CachePolicyTraits> cache_policies() { return kPolicies; }

const CachePolicyTraits* find_cache_policy(std::string_view name) {
  for (const auto& row : kPolicies)
    if (row.name == name) return &row;
  return nullptr;
}

std::string cache_policy_names() {
  std::string out;
  for (const auto& row : kPolicies) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

std::string_view to_string(CachePolicy policy) { return policy_traits(policy).name; }

}  // namespace vramsim::sim
