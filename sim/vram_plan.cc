#include "sim/vram_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/units.h"
#include "workloads/layer_split.h"
#include "workloads/memory_budget.h"

namespace vramsim::sim {
namespace {

double card_total(const CardSetup& c) { return c.gpu.spec.driver_total_bytes.value_or(c.gpu.spec.memory_bytes); }

// A dense model must fit: the memory-budget model's verdict, card by card (as `vramsim fit`).
std::vector<workloads::CardShare> dense_shares(const Scenario& s) {
  const int n = static_cast<int>(s.cards.size());
  workloads::BudgetRequest r;
  r.bits_per_weight = s.engine.other_format.bits_per_weight;
  r.context_tokens = s.engine.context;
  r.kv_bytes_per_element_k = r.kv_bytes_per_element_v = s.engine.kv.bytes_per_element;
  r.concurrent_sequences = s.engine.parallel;
  const workloads::Footprint total = workloads::footprint(s.model, r);
  std::vector<double> usable;
  for (const auto& c : s.cards)
    usable.push_back(c.gpu.spec.memory_bytes * workloads::usable_share(c.gpu.spec.gpu_class, n) - c.gpu.vram_used_by_others);
  std::vector<int> layers;
  if (s.engine.split == Split::Tensor) {
    // Every card holds 1/N of every layer: as N cards of one layer-sized slice each.
    std::vector<workloads::CardShare> out;
    for (double u : usable) out.push_back({0, s.model.layers, total.total / n, u});
    return out;
  }
  layers = s.engine.layer_split.empty() ? workloads::layers_by_capacity(s.model.layers, usable) : s.engine.layer_split;
  return workloads::split_footprint(total, s.model.layers, layers, usable);
}

// Free memory at engine start before any weights: what a pipeline deals layers by.
std::vector<int> moe_layers(const Scenario& s) {
  if (!s.engine.layer_split.empty()) return s.engine.layer_split;
  std::vector<double> free;
  for (const auto& c : s.cards)
    free.push_back(std::max(1.0, c.gpu.free_vram.value_or(card_total(c) - c.gpu.vram_used_by_others) - s.engine.physics.runtime_vram));
  return workloads::layers_by_capacity(s.model.layers, free);
}

}  // namespace

std::vector<VramPlan> plan_cards(const Scenario& s) {
  const auto& m = s.model;
  const int n = static_cast<int>(s.cards.size());
  const bool tensor = s.engine.split == Split::Tensor;
  const bool expert = s.engine.split == Split::Expert;
  const double bpe_other = s.engine.other_format.bits_per_weight / 8.0;
  const double expert_params_all = m.moe ? m.moe->expert_params * m.moe->experts * static_cast<double>(m.layers) : 0.0;
  const double non_expert_all = (m.params_total - expert_params_all) * bpe_other;
  // The embedding table and the LM head (untied or tied, one read each): the rest is per layer.
  const double head = static_cast<double>(m.vocab_size) * m.hidden_size * bpe_other;
  const double per_layer = std::max(0.0, non_expert_all - 2.0 * head) / m.layers;
  const double kv_all = workloads::kv_cache_bytes(m, s.engine.context, s.engine.kv.bytes_per_element,
                                                  s.engine.kv.bytes_per_element, s.engine.parallel);

  std::vector<workloads::CardShare> dense;
  if (!m.moe) {
    dense = dense_shares(s);
    const std::string over = workloads::first_overfull_card(dense);
    if (!over.empty())
      throw std::invalid_argument(m.name + " does not fit " + (n > 1 ? "these cards" : "this card") + ": " + over +
                                  " (the memory-budget model; see `vramsim fit`)");
  }
  const std::vector<int> layers = tensor || expert || n == 1 ? std::vector<int>(static_cast<std::size_t>(n), m.layers)
                                  : m.moe          ? moe_layers(s)
                                                   : std::vector<int>{};
  std::vector<VramPlan> plans;
  int first = 0;
  for (int c = 0; c < n; ++c) {
    const CardSetup& card = s.cards[static_cast<std::size_t>(c)];
    VramPlan p;
    p.shard = tensor ? 1.0 / n : 1.0;
    if (tensor || expert || n == 1) {
      p.first_layer = 0;
      p.end_layer = m.layers;
    } else if (m.moe) {
      p.first_layer = first;
      p.end_layer = first + layers[static_cast<std::size_t>(c)];
    } else {
      p.first_layer = dense[static_cast<std::size_t>(c)].first_layer;
      p.end_layer = dense[static_cast<std::size_t>(c)].end_layer;
    }
    first = p.end_layer;
    // An expert split keeps everything but the routed experts on the first card.
    const bool holds_rest = !expert || c == 0;
    const bool holds_embedding = holds_rest && p.first_layer == 0, holds_head = holds_rest && p.end_layer == m.layers;
    p.layer_bytes = holds_rest ? per_layer * p.shard : 0.0;
    p.head_bytes = holds_head ? head * p.shard : 0.0;
    p.non_expert_weights = p.layer_bytes * p.layers() + p.shard * ((holds_embedding ? head : 0.0) + (holds_head ? head : 0.0));
    p.kv_cache = holds_rest ? kv_all * p.shard * p.layers() / m.layers : 0.0;
    p.card_total = card_total(card);
    p.others = card.gpu.vram_used_by_others;
    p.runtime = s.engine.physics.runtime_vram;
    p.fixed = p.non_expert_weights + p.kv_cache + p.runtime;
    p.free_measured = card.gpu.free_vram.has_value();
    p.free_at_start = p.free_measured ? *card.gpu.free_vram : p.card_total - p.others - p.fixed;
    p.draft_head = s.engine.speculative && holds_head ? s.engine.draft_head_bytes : 0.0;
    if (m.moe) {
      p.reserve = s.engine.cache_reserve;
      // An expert split deals each layer's experts by popularity rank: rank r to card r mod N.
      const int mine = expert ? (m.moe->experts - c + n - 1) / n : m.moe->experts;
      p.total_experts = static_cast<std::int64_t>(p.layers()) * mine;
      p.expert_bytes = m.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0;
      const double align = s.engine.physics.slot_alignment;
      p.slot_bytes = std::ceil(p.expert_bytes / align) * align;
      const std::string on = n > 1 ? " on card " + std::to_string(c) : "";
      const double available = p.free_at_start - p.reserve - p.draft_head;
      if (available < 0)
        throw std::invalid_argument(
            "the engine's fixed allocations do not fit" + on + ": " + units::format_gib(p.card_total) + " card - " +
            units::format_gib(p.others) + " other tenants - " + units::format_gib(p.fixed) +
            " fixed (weights outside the experts, KV cache, runtime) leaves " + units::format_gib(p.free_at_start) +
            ", less than the reserve and draft head (" + units::format_gib(p.reserve + p.draft_head) + ")");
      const auto fit = static_cast<std::int64_t>(std::floor(available / p.slot_bytes));
      if (s.engine.cache_slots && *s.engine.cache_slots > 0) {  // an explicit size is per card
        if (*s.engine.cache_slots > fit)
          throw std::invalid_argument("engine.expert_cache.size: " + std::to_string(*s.engine.cache_slots) + " slots need " +
                                      units::format_gib(static_cast<double>(*s.engine.cache_slots) * p.slot_bytes) +
                                      " but only " + units::format_gib(available) + " is free (" + std::to_string(fit) +
                                      " slots)");
        p.slots = std::min(*s.engine.cache_slots, p.total_experts);
      } else if (s.engine.cache_slots && *s.engine.cache_slots == 0) {
        p.slots = 0;
      } else {
        p.slots = std::min(fit, p.total_experts);
      }
      p.cache_bytes = static_cast<double>(p.slots) * p.slot_bytes;
    }
    plans.push_back(p);
  }
  return plans;
}

}  // namespace vramsim::sim
