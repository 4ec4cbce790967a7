// Expert-cache policies as one traits table: the cache (expert_cache.cc), the step model
// (step_model.cc), the request runner (request_runner.cc), the engine-section decoder and the
// run summary ask a policy's row what it does instead of testing its name. A new policy is a
// row here (and, when it evicts by a new rule, that rule in ExpertCache).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace vramsim::sim {

enum class CachePolicy { Profile, Lru, Lfu, ProfileLru };

// How a miss (a routed expert not resident in VRAM) is served in the step that needs it.
enum class MissPath {
  InPlace,         // computed by the host or read over PCIe in place (step_model.h's miss path)
  CopiedIn,        // copied into a slot over the link, then computed by the GPU like a hit
  InPlacePrefetch  // in place for this step, then copied into the dynamic part in the background
};

// Which resident expert makes room for an admitted miss.
enum class Eviction { None, LeastRecent, LeastFrequent };

// Which of the cache's slots the replacement rule manages (the rest are pinned hottest-first).
enum class DynamicSlots { None, All, Share };

struct CachePolicyTraits {
  CachePolicy id;
  std::string_view name;  // the engine YAML's `expert_cache.policy` spelling
  MissPath miss;
  Eviction eviction;
  DynamicSlots dynamic;    // Share: `expert_cache.dynamic_share` of the slots (0 < share <= 1)
  bool with_expert_split;  // usable with `split: expert` (its cards do not admit misses)
  std::string_view summary;  // one line, for docs and messages

  // Whether misses enter the cache at all (copied in now, or prefetched for later tokens).
  bool admits_misses() const { return miss != MissPath::InPlace; }
  // Whether resident experts keep recency / frequency bookkeeping.
  bool tracks_use() const { return eviction != Eviction::None; }
  // Every miss is copied in and computed on the GPU: no host work, no zero-copy read.
  bool copies_every_miss() const { return miss == MissPath::CopiedIn; }
};

// The row of `policy`.
const CachePolicyTraits& policy_traits(CachePolicy policy);
// Every policy, in the order the docs list them.
std::span<const CachePolicyTraits> cache_policies();
// The row spelled `name`, or nullptr.
const CachePolicyTraits* find_cache_policy(std::string_view name);
// "profile, lru, lfu, profile-lru": the spellings, for messages.
std::string cache_policy_names();

std::string_view to_string(CachePolicy policy);
inline bool copies_every_miss(CachePolicy policy) { return policy_traits(policy).copies_every_miss(); }

}  // namespace vramsim::sim
