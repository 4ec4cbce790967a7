#include "sim/vram_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/units.h"
#include "sim/engines/engine_family.h"
#include "workloads/layer_split.h"
#include "workloads/memory_budget.h"

namespace vramsim::sim {

LayerBytes layer_bytes(const Scenario& s) {
  const auto& m = s.model;
  const double bpe_other = s.engine.other_format.bits_per_weight / 8.0;
  const double expert_params_all = m.moe ? m.moe->expert_params * m.moe->experts * static_cast<double>(m.moe->layers) : 0.0;
  LayerBytes b;
  b.head = static_cast<double>(m.vocab_size) * m.hidden_size * bpe_other;
  b.per_layer = std::max(0.0, (m.params_total - expert_params_all) * bpe_other - (m.tied_embeddings ? 1.0 : 2.0) * b.head) / m.layers;
  return b;
}

double card_total(const CardSetup& c) { return c.gpu.spec.driver_total_bytes.value_or(c.gpu.spec.memory_bytes); }

// No GPU layer (-ngl 0) keeps the output layer on the CPU in every build.
bool head_on_cpu(const Scenario& s) { return s.engine.head_on_cpu || s.engine.gpu_layers == 0; }

bool judged_by_engine_accounting(const Scenario& s) {
  return s.engine.gpu_layers < s.model.layers || head_on_cpu(s) || s.engine.cpu_moe_layers > 0 || s.engine.engine_vram_rule;
}

// An engine without an expert cache (a dense model, or llama.cpp-style MoE placement) must fit
// what it keeps on the GPUs. Every layer on the GPUs: the memory-budget model's verdict, card
// by card, exactly as `vramsim fit` gives it. CPU layers (gpu_layers) or CPU experts
// (cpu_moe_layers) are the engine's own placement, which the rule of thumb does not model:
// the resident weights + the GPU layers' KV + the engine's runtime_vram must fit the card's
// driver-reported total less other tenants. Layer ranges are in model layers, the GPU layers
// being the last ones.
Result<std::vector<workloads::CardShare>> resident_shares(const Scenario& s) {
  const auto& m = s.model;
  const int n = static_cast<int>(s.cards.size());
  const int gpu_layers = s.engine.gpu_layers, first_gpu = m.layers - gpu_layers;
  const bool engine_rule = judged_by_engine_accounting(s);
  std::vector<double> usable;
  for (const auto& c : s.cards)
    usable.push_back((engine_rule ? card_total(c) : c.gpu.spec.memory_bytes * workloads::usable_share(c.gpu.spec.gpu_class, n)) -
                     c.gpu.vram_used_by_others);
  std::vector<workloads::CardShare> out;
  if (gpu_layers == 0) {  // CPU only: the cards hold nothing
    for (double u : usable) out.push_back({m.layers, m.layers, 0.0, u});
    return out;
  }
  if (!s.engine.layer_split.empty()) {
    if (s.engine.layer_split.size() != s.cards.size()) return Error{"one layer count per card expected"};
    if (std::accumulate(s.engine.layer_split.begin(), s.engine.layer_split.end(), 0) != gpu_layers)
      return Error{"the layer counts do not add up to the model's layers"};
  } else if (s.engine.split != Split::Tensor &&
             std::none_of(usable.begin(), usable.end(), [](double u) { return u > 0; })) {
    return Error{"the cards have no free memory to split layers over"};
  }
  // A pipeline's layers: engine.layer_split (-ts), else llama.cpp's default split by free memory
  // for a placement judged by its own accounting, else (every layer on the GPUs, judged by the
  // memory-budget model) by count in proportion to the cards' room, as `vramsim fit --gpus` deals.
  auto dealt = [&] {
    if (!s.engine.layer_split.empty()) return s.engine.layer_split;
    return engine_rule ? workloads::llama_cpp_default_split(gpu_layers, !head_on_cpu(s), usable)
                       : workloads::layers_by_capacity(gpu_layers, usable);
  };
  if (!(m.moe || engine_rule)) {  // a dense model, every layer on the GPUs: the memory-budget model
    workloads::BudgetRequest r;
    r.bits_per_weight = s.engine.other_format.bits_per_weight;
    r.context_tokens = s.engine.context;
    r.kv_bytes_per_element_k = r.kv_bytes_per_element_v = s.engine.kv.bytes_per_element;
    r.concurrent_sequences = s.engine.parallel;
    const workloads::Footprint total = workloads::footprint(m, r);
    if (s.engine.split == Split::Tensor) {  // every card holds 1/N of every layer
      // llama.cpp's row split keeps the KV cache whole on the main card (card 0).
      const double kv_main = s.engine.row_split ? total.kv : 0.0;
      for (std::size_t c = 0; c < usable.size(); ++c)
        out.push_back({0, m.layers, (total.total - kv_main) / n + (c == 0 ? kv_main : 0.0), usable[c]});
      return out;
    }
    return workloads::split_footprint(total, gpu_layers, dealt(), usable);
  }
  // Otherwise card by card, as plan_cards counts each card: the non-expert weights and KV of
  // its layers, the experts of its layers past --n-cpu-moe (the CPU-expert layers come first,
  // so they do not spread evenly), the embedding table on the card with layer 0 and the LM head
  // on the last (every layer on the GPUs); plus the engine's runtime (its accounting) or, for an
  // MoE model with every layer and expert on the GPUs, the memory-budget model's overhead (its
  // fixed part dealt by the card's share of the layers, as for a dense model).
  const LayerBytes table = layer_bytes(s);  // named, not bound: the lambdas below capture them
  const double head = table.head, per_layer = table.per_layer;
  const double expert_bytes_per_layer =
      m.moe ? m.moe->expert_params * m.moe->experts * s.engine.expert_format.bits_per_weight / 8.0 : 0.0;
  const double kv_per_layer = workloads::kv_cache_bytes(m, s.engine.context, s.engine.kv.bytes_per_element,
                                                        s.engine.kv.bytes_per_element, s.engine.parallel) /
                              m.layers;
  // The bytes of layers [first, end) on the GPUs, and what a card holding them (`share` of
  // the GPU layers) needs.
  auto bytes_of = [&](int first, int end) {
    const bool holds = end > first;
    return (per_layer + kv_per_layer) * (end - first) +
           expert_bytes_per_layer * m.moe_layers_in(std::max(first, s.engine.cpu_moe_layers), end) +
           (holds && first == 0 && !engine_rule && !m.tied_embeddings ? head : 0.0) +
           (holds && end == m.layers && !head_on_cpu(s) ? head : 0.0);
  };
  auto need = [&](double bytes, double share) {
    return engine_rule ? s.engine.physics.runtime_vram + bytes
                       : bytes * (1.0 + workloads::budget::kOverheadShare) + workloads::budget::kOverheadFixedBytes * share;
  };
  if (s.engine.split == Split::Tensor) {  // every card holds 1/N of every GPU layer
    const double kv_main = s.engine.row_split ? kv_per_layer * (m.layers - first_gpu) : 0.0;  // as above
    const double each = (bytes_of(first_gpu, m.layers) - kv_main) / n;
    for (std::size_t c = 0; c < usable.size(); ++c)
      out.push_back({first_gpu, m.layers, need(each + (c == 0 ? kv_main : 0.0), 1.0 / n), usable[c]});
    return out;
  }
  const std::vector<int> layers = dealt();
  int first = first_gpu;
  for (std::size_t c = 0; c < s.cards.size(); ++c) {
    const int end = first + layers[c];
    out.push_back({first, end, need(bytes_of(first, end), layers[c] / static_cast<double>(gpu_layers)), usable[c]});
    first = end;
  }
  return out;
}

std::string HostRam::refusal(const std::string& host) const {
  std::string parts;
  auto add = [&](double bytes, const char* what) {
    if (bytes <= 0) return;
    parts += (parts.empty() ? "" : " + ") + std::string(what) + " (" + units::format_gib(bytes) + ")";
  };
  add(layer_weights, "the CPU layers' weights");
  add(kv, "their KV cache");
  add(experts, "the experts kept in RAM");
  const bool one = (layer_weights > 0) + (kv > 0) + (experts > 0) == 1;
  return one ? parts + " do not fit in " + host + "'s RAM (" + units::format_gib(capacity) + ")"
             : parts + " = " + units::format_gib(total()) + " do not fit in " + host + "'s RAM (" +
                   units::format_gib(capacity) + ")";
}

HostRam host_ram(const Scenario& s) {
  HostRam h;
  h.capacity = s.host.memory_bytes;
  if (const auto cpu = plan_host(s)) {
    h.layer_weights = cpu->non_expert_weights;
    h.kv = cpu->kv_cache;
  }
  if (s.model.moe && !s.engine.kv_pool) {
    // An expert cache's backing store is every expert; without a cache (llama.cpp) the RAM
    // keeps the experts it computes on the CPU: those of the CPU layers and of --n-cpu-moe.
    // The rest are copied to VRAM at load and their mmap'd pages may be dropped, as a GPU
    // layer's weights are.
    const auto& m = s.model;
    const int ram_layers = s.engine.expert_cache
                               ? m.moe->layers
                               : m.moe_layers_in(0, std::max(m.layers - s.engine.gpu_layers, s.engine.cpu_moe_layers));
    h.experts = m.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0 * m.moe->experts * ram_layers;
  }
  return h;
}

Result<std::vector<VramPlan>> plan_memory(const Scenario& s) {
  if (const HostRam ram = host_ram(s); !ram.fits())
    return Error{ram.refusal(s.host.name) +
                 (s.engine.gpu_layers < s.model.layers ? ": more engine.gpu_layers, a smaller weights format or a larger host"
                                                       : ": a smaller weights format or a larger host")};
  return engines::family(s.engine.family).plan_memory(s);
}

VramPlan card_plan(const Scenario& s, int c, int first_layer, int end_layer) {
  const auto& m = s.model;
  const int n = static_cast<int>(s.cards.size());
  const bool tensor = s.engine.split == Split::Tensor;
  const bool expert = s.engine.split == Split::Expert;
  // The embedding table and the LM head (untied or tied, one read each): the rest is per layer.
  const auto [head, per_layer] = layer_bytes(s);
  const double kv_all = workloads::kv_cache_bytes(m, s.engine.context, s.engine.kv.bytes_per_element,
                                                  s.engine.kv.bytes_per_element, s.engine.parallel);
  const CardSetup& card = s.cards[static_cast<std::size_t>(c)];
  VramPlan p;
  p.shard = tensor ? 1.0 / n : 1.0;
  p.attention_share = s.engine.row_split ? (c == 0 ? 1.0 : 0.0) : p.shard;
  p.first_layer = first_layer;
  p.end_layer = end_layer;
  // An expert split keeps everything but the routed experts on the first card.
  const bool holds_rest = !expert || c == 0;
  // llama.cpp keeps the embedding table in RAM (its input layer is the CPU's, whatever -ngl):
  // only the memory-budget model's accounting puts it on the first card (tied, that matrix is
  // the LM head's, counted once as the memory-budget model counts it).
  const bool holds_embedding =
      holds_rest && p.first_layer == 0 && p.layers() > 0 && !judged_by_engine_accounting(s) && !m.tied_embeddings;
  // With CPU layers (or -ngl equal to the layer count) the LM head runs on the CPU after the
  // last GPU layer (plan_host).
  const bool holds_head = holds_rest && p.end_layer == m.layers && p.layers() > 0 && !head_on_cpu(s);
  p.layer_bytes = holds_rest ? per_layer * p.shard : 0.0;
  p.head_bytes = holds_head ? head * p.shard : 0.0;
  p.non_expert_weights = p.layer_bytes * p.layers() + p.shard * ((holds_embedding ? head : 0.0) + (holds_head ? head : 0.0));
  p.kv_cache = holds_rest ? kv_all * p.attention_share * p.layers() / m.layers : 0.0;
  p.card_total = card_total(card);
  p.others = card.gpu.vram_used_by_others;
  p.runtime = s.engine.physics.runtime_vram;
  p.fixed = p.non_expert_weights + p.kv_cache + p.runtime;
  p.free_measured = card.gpu.free_vram.has_value();
  p.free_at_start = p.free_measured ? *card.gpu.free_vram : p.card_total - p.others - p.fixed;
  p.draft_head = s.engine.speculative && holds_head ? s.engine.draft_head_bytes : 0.0;
  return p;
}

Result<std::vector<VramPlan>> plan_resident(const Scenario& s) {
  const auto& m = s.model;
  const int n = static_cast<int>(s.cards.size());
  auto dealt = resident_shares(s);
  if (!dealt) return dealt.error();
  const std::vector<workloads::CardShare>& shares = *dealt;
  if (const std::string over = workloads::first_overfull_card(shares); !over.empty()) {
    // The memory-budget model refuses what the engine's own accounting may fit (the flat
    // spot of docs/memory-model.md): say so, with the key that judges by the latter.
    std::string engine_fits;
    if (!judged_by_engine_accounting(s) && !s.engine.expert_cache) {
      Scenario by_engine = s;
      by_engine.engine.engine_vram_rule = true;
      if (const auto by = resident_shares(by_engine); by && workloads::first_overfull_card(*by).empty())
        engine_fits = "; by the engine's own accounting (weights + KV + runtime against the card's total) it fits: "
                      "--set engine.vram_rule=engine";
    }
    return Error{m.name + " does not fit " + (n > 1 ? "these cards" : "this card") + ": " + over +
                 (judged_by_engine_accounting(s)
                      ? std::string(" (resident weights + KV + runtime against the card's total; fewer engine.gpu_layers "
                                    "or more engine.cpu_moe_layers keep more on the CPU") +
                            (n > 1 ? "; engine.layer_split, llama.cpp's -ts, gives a card fewer layers)" : ")")
                      : " (the memory-budget model; see `vramsim fit`" + engine_fits + ")")};
  }
  std::vector<VramPlan> plans;
  for (int c = 0; c < n; ++c) {
    const auto& share = shares[static_cast<std::size_t>(c)];
    VramPlan p = card_plan(s, c, share.first_layer, share.end_layer);
    if (m.moe) {
      // Experts live with their layer: the card holds every expert of its layers past the
      // CPU-expert ones (--n-cpu-moe); there is no cache to size.
      p.expert_bytes = m.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0;
      p.slot_bytes = p.expert_bytes;
      p.total_experts = static_cast<std::int64_t>(m.moe_layers_in(p.first_layer, p.end_layer)) * m.moe->experts;
      p.slots = static_cast<std::int64_t>(m.moe_layers_in(std::max(p.first_layer, s.engine.cpu_moe_layers), p.end_layer)) * m.moe->experts;
      p.cache_bytes = static_cast<double>(p.slots) * p.slot_bytes;
      p.fixed += p.cache_bytes;
      p.free_at_start -= p.free_measured ? 0.0 : p.cache_bytes;
    }
    plans.push_back(p);
  }
  return plans;
}

std::vector<VramPlan> plan_cards(const Scenario& s) {
  auto plans = plan_memory(s);
  if (!plans) throw std::invalid_argument(plans.error().message);
  return std::move(plans).value();
}

std::optional<VramPlan> plan_host(const Scenario& s) {
  const auto& m = s.model;
  const int cpu_layers = m.layers - s.engine.gpu_layers;
  if (cpu_layers == 0 && !head_on_cpu(s)) return std::nullopt;
  const auto [head, per_layer] = layer_bytes(s);
  VramPlan p;
  p.first_layer = 0;
  p.end_layer = cpu_layers;
  p.layer_bytes = per_layer;
  // The embedding table stays in RAM (llama.cpp's input layer is always on the CPU). The
  // output layer (LM head) is here when the placement leaves it on the CPU (EngineSetup::
  // head_on_cpu: -ngl N <= the layer count in builds before ggml-org/llama.cpp PR 18148, -ngl
  // 0 in later ones, which offload it first); then this stage samples. Otherwise the last
  // card holds it, and this plan exists only for CPU layers.
  p.head_bytes = head_on_cpu(s) ? head : 0.0;
  // Tied, the head on the CPU is the table itself (one tensor in RAM).
  p.non_expert_weights = p.layer_bytes * cpu_layers + head + (m.tied_embeddings ? 0.0 : p.head_bytes);
  p.kv_cache = workloads::kv_cache_bytes(m, s.engine.context, s.engine.kv.bytes_per_element, s.engine.kv.bytes_per_element,
                                         s.engine.parallel) * cpu_layers / m.layers;
  if (m.moe) {
    p.expert_bytes = p.slot_bytes = m.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0;
    p.total_experts = p.slots = static_cast<std::int64_t>(m.moe_layers_in(0, cpu_layers)) * m.moe->experts;  // all in RAM
    p.cache_bytes = static_cast<double>(p.slots) * p.slot_bytes;
  }
  p.card_total = s.host.memory_bytes;
  p.fixed = p.non_expert_weights + p.kv_cache + p.cache_bytes;
  p.free_at_start = p.card_total - p.fixed;
  return p;
}

}  // namespace vramsim::sim
