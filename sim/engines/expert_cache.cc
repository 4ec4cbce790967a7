// vramsim's own MoE engines, which no other program runs: an expert cache in VRAM over PCIe
// whose misses the host computes or the GPU reads in place (expert-cache), and its variant with
// a GPU hot set and every other routed expert computed by the CPU (hybrid-cpu-experts,
// kTransformers-style).
#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "core/units.h"
#include "sim/cache_policy.h"
#include "sim/engines/engine_family.h"
#include "workloads/layer_split.h"

namespace vramsim::sim::engines {
namespace {

using config::Lower;
using config::MapReader;
using units::Dimension;

// `expert_cache.policy`: a row of the policy table (cache_policy.h).
const CachePolicyTraits& decode_cache_policy(MapReader& cache) {
  const CachePolicyTraits* row = find_cache_policy(cache.string("policy"));
  if (!row) cache.fail_at("policy", "expected one of " + cache_policy_names() + ", got " + cache.any("policy").describe());
  return *row;
}

// engine.expert_cache {size, reserve, policy, dynamic_share, misses} into `s`.
// REQUIRES: s.split decoded (an expert split takes the profile policy only).
void decode_expert_cache(MapReader& c, EngineSetup& s) {
  const config::Node& size = c.any("size");
  // `auto`, a slot count, or a VRAM amount (a number with a unit, e.g. 8GiB).
  const bool amount = size.is_scalar() && size.text().find_first_not_of("0123456789") != std::string::npos;
  if (size.is_scalar() && size.text() == "auto") {
    // the most slots the free VRAM holds (vram_plan.h)
  } else if (amount)
    s.cache_size_bytes = c.quantity("size", Dimension::Bytes, Lower::NonNegative);
  else
    s.cache_slots = c.integer("size", 0, std::int64_t{1} << 40);
  s.misses_on_cpu = c.has("misses") && c.choice("misses", {"split", "cpu"}) == "cpu";
  s.cache_reserve = c.quantity("reserve", Dimension::Bytes, Lower::NonNegative);
  const CachePolicyTraits& policy = decode_cache_policy(c);
  s.policy = policy.id;
  const std::string name(policy.name);
  s.dynamic_share = c.optional_number("dynamic_share", Lower::NonNegative).value_or(0.0);
  if (s.dynamic_share > 1) c.fail_at("dynamic_share", "a share is at most 1");
  const bool shared = policy.dynamic == DynamicSlots::Share;
  if (shared && s.dynamic_share <= 0)
    c.fail_at("policy", name + " needs `dynamic_share` (0 < share <= 1): the part of the slots managed by " +
                            (policy.eviction == Eviction::LeastFrequent ? "LFU" : "LRU"));
  if (!shared && s.dynamic_share > 0)
    c.fail_at("dynamic_share", "only a policy with a dynamic part (profile-lru) has a dynamic share");
  // An expert split deals a fixed hot set over the cards; a miss is read for the step and not
  // admitted (no card's cache changes), so an adaptive policy would pay its copies for nothing.
  if (s.split == Split::Expert && !policy.with_expert_split)
    c.fail_at("policy", "an expert split deals the profile's hot set over the cards and does not admit misses: "
                        "policy " + name + " is not modelled with split: expert (use profile)");
  c.finish();
}

// A pipeline's layers (engine.layer_split, else in proportion to each card's free memory at
// engine start before any weights).
std::vector<int> pipeline_layers(const Scenario& s) {
  if (!s.engine.layer_split.empty()) return s.engine.layer_split;
  std::vector<double> free;
  for (const auto& c : s.cards)
    free.push_back(std::max(1.0, c.gpu.free_vram.value_or(card_total(c) - c.gpu.vram_used_by_others) - s.engine.physics.runtime_vram));
  return workloads::layers_by_capacity(s.model.layers, free);
}

// vram_plan.h's slots: each card's layers (all of them on a tensor or expert split or one
// card; a pipeline's range), then as many expert slots as its free VRAM holds past the
// reserve and the draft head, or the size asked (engine.expert_cache.size, per card), refused
// when larger. An expert split deals each layer's experts by popularity rank (rank r to card
// r mod N), each card caching its own share.
Result<std::vector<VramPlan>> plan_cached(const Scenario& s) {
  const auto& m = s.model;
  const int n = static_cast<int>(s.cards.size());
  const bool expert = s.engine.split == Split::Expert;
  const bool whole = s.engine.split == Split::Tensor || expert || n == 1;
  const std::vector<int> layers = whole ? std::vector<int>{} : pipeline_layers(s);
  std::vector<VramPlan> plans;
  int first = 0;
  for (int c = 0; c < n; ++c) {
    const int end = whole ? m.layers : first + layers[static_cast<std::size_t>(c)];
    VramPlan p = card_plan(s, c, whole ? 0 : first, end);
    first = end;
    p.reserve = s.engine.cache_reserve;
    const int mine = expert ? (m.moe->experts - c + n - 1) / n : m.moe->experts;
    p.total_experts = static_cast<std::int64_t>(m.moe_layers_in(p.first_layer, p.end_layer)) * mine;
    p.expert_bytes = m.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0;
    const double align = s.engine.physics.slot_alignment;
    p.slot_bytes = std::ceil(p.expert_bytes / align) * align;
    const std::string on = n > 1 ? " on card " + std::to_string(c) : "";
    const double available = p.free_at_start - p.reserve - p.draft_head;
    if (available < 0)
      return Error{"the engine's fixed allocations do not fit" + on + ": " + units::format_gib(p.card_total) + " card - " +
                   units::format_gib(p.others) + " other tenants - " + units::format_gib(p.fixed) +
                   " fixed (weights outside the experts, KV cache, runtime) leaves " + units::format_gib(p.free_at_start) +
                   ", less than the reserve and draft head (" + units::format_gib(p.reserve + p.draft_head) + ")"};
    const auto fit = static_cast<std::int64_t>(std::floor(available / p.slot_bytes));
    // A size given as a VRAM amount holds the whole slots that fit in it.
    const std::optional<std::int64_t> asked =
        s.engine.cache_size_bytes ? std::optional<std::int64_t>(static_cast<std::int64_t>(std::floor(*s.engine.cache_size_bytes / p.slot_bytes)))
                                  : s.engine.cache_slots;
    if (asked && *asked > 0) {  // an explicit size is per card
      if (*asked > fit)
        return Error{"engine.expert_cache.size: " +
                     (s.engine.cache_size_bytes ? units::format_gib(*s.engine.cache_size_bytes) + " (" : std::string()) +
                     std::to_string(*asked) + " slots" + (s.engine.cache_size_bytes ? ")" : "") + " need " +
                     units::format_gib(static_cast<double>(*asked) * p.slot_bytes) + " but only " +
                     units::format_gib(available) + " is free" + on + " (" + std::to_string(fit) + " slots)"};
      p.slots = std::min(*asked, p.total_experts);
    } else if (asked && *asked == 0) {
      p.slots = 0;
    } else {
      p.slots = std::min(fit, p.total_experts);
    }
    p.cache_bytes = static_cast<double>(p.slots) * p.slot_bytes;
    plans.push_back(p);
  }
  return plans;
}

// The cache (hot-set) sizes worth simulating: 0, 1/4, 1/2, 3/4 and all of the slots that fit
// (a model without routing statistics has no hot set to choose: 0 only; none when nothing fits).
std::vector<std::int64_t> cache_sizes(Scenario s) {
  if (!s.model.moe || !s.model.moe->routing) return {0};
  s.engine.cache_slots.reset();
  s.engine.cache_size_bytes.reset();
  const auto plans = plan_memory(s);
  if (!plans) return {};
  const std::int64_t most = plans->front().slots;
  std::vector<std::int64_t> out;
  for (int quarter = 0; quarter <= 4; ++quarter) {
    const std::int64_t n = most * quarter / 4;
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  return out;
}

class ExpertCacheFamily final : public EngineFamily {
 public:
  explicit ExpertCacheFamily(bool misses_on_cpu) : misses_on_cpu_(misses_on_cpu) {}

  std::string_view name() const override { return misses_on_cpu_ ? "hybrid-cpu-experts" : "expert-cache"; }

  // A dense model has no experts to cache: every weight stays with its layer.
  Result<std::vector<VramPlan>> plan_memory(const Scenario& s) const override {
    return s.model.moe ? plan_cached(s) : plan_resident(s);
  }

  void decode(MapReader& e, EngineSetup& s, const workloads::ModelSpec&, int) const override {
    if (e.has("kv_pool"))
      e.fail_at("kv_pool", "family " + std::string(name()) + " has no paged KV pool: its VRAM holds the weights but the "
                           "routed experts, an expert cache and per-slot KV (preset: vllm has a pool)");
    auto cache = e.optional_map("expert_cache");
    if (!cache)
      e.fail_at("expert_cache", "family " + std::string(name()) + " keeps its experts in an expert cache: give expert_cache "
                                "{size, reserve, policy} (preset: llama.cpp keeps experts with their layers)");
    decode_expert_cache(*cache, s);
    s.expert_cache = true;
    if (misses_on_cpu_ && !s.misses_on_cpu)
      e.fail_at("expert_cache", "family hybrid-cpu-experts computes every expert outside its hot set on the CPU: "
                                "expert_cache.misses must be cpu");
  }

  // The cache's size: none, a quarter, ... all of the slots that fit (cache_sizes).
  SearchSpace search_space(const Scenario& base) const override {
    SearchSpace space;
    for (const std::int64_t slots : cache_sizes(base)) {
      SearchPoint point{base, {}, {"engine.expert_cache.size=" + std::to_string(slots)}, slots};
      point.placement.gpu_layers = base.model.layers;
      point.placement.description = base.engine.misses_on_cpu ? "routed experts on the CPU, " + (slots ? std::to_string(slots) + " hot experts on the GPU"
                                                                                          : std::string("no hot set"))
                                                   : std::to_string(slots) + " expert-cache slots";
      point.scenario.engine.cache_slots = slots;
      point.scenario.engine.cache_size_bytes.reset();
      space.points.push_back(std::move(point));
    }
    if (space.points.empty()) space.none_fits = "the weights kept on the GPU do not fit it";
    return space;
  }

  // --engine E --quant Q (or both weights' formats) --context C [--set engine.expert_cache.size=N]
  // --set engine.kv_type=X [--set engine.parallel=N].
  EngineCommand command(const Scenario& s) const override {
    const EngineSetup& e = s.engine;
    std::ostringstream f;
    f << "--engine " << e.preset;
    if (e.expert_format.name == e.other_format.name)
      f << " --quant " << e.expert_format.name;
    else
      f << " --set engine.weights.experts=" << e.expert_format.name << " --set engine.weights.other=" << e.other_format.name;
    f << " --context " << e.context;
    if (e.cache_slots)
      f << " --set engine.expert_cache.size=" << *e.cache_slots;
    else if (e.cache_size_bytes)
      f << " --set engine.expert_cache.size=" << static_cast<long long>(*e.cache_size_bytes / units::kMiB) << "MiB";
    else if (e.misses_on_cpu)  // hybrid-cpu-experts: its preset has no hot set; this one was sized to the card
      f << " --set engine.expert_cache.size=auto";
    f << " --set engine.kv_type=" << e.kv.name;
    if (e.parallel != 1) f << " --set engine.parallel=" << e.parallel;
    return {"vramsim", f.str()};
  }

 private:
  bool misses_on_cpu_;
};

}  // namespace

const EngineFamily& expert_cache_family() {
  static const ExpertCacheFamily family(false);
  return family;
}

const EngineFamily& hybrid_cpu_experts_family() {
  static const ExpertCacheFamily family(true);
  return family;
}

}  // namespace vramsim::sim::engines
