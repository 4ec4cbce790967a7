#include "workloads/model.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <fmt/format.h>

#include "core/config_reader.h"

namespace vramsim::workloads {

using config::fail;
using config::MapReader;

namespace {

Attention decode_attention(MapReader a, int layers) {
  Attention at;
  const std::string layout = a.choice("layout", {"gqa", "mha", "mla"});
  at.layout = layout == "gqa" ? AttentionLayout::Gqa : layout == "mha" ? AttentionLayout::Mha : AttentionLayout::Mla;
  at.query_heads = static_cast<int>(a.integer("query_heads", 1, model_limits::kHeads));
  if (at.layout == AttentionLayout::Mla) {
    at.latent_dim = static_cast<int>(a.integer("latent_dim", 1, model_limits::kLatentDim));
    at.kv_heads = static_cast<int>(a.optional_integer("kv_heads", 1, model_limits::kHeads).value_or(at.query_heads));
    at.head_dim = static_cast<int>(a.optional_integer("head_dim", 1, model_limits::kHeadDim).value_or(0));
  } else {
    at.kv_heads = static_cast<int>(a.integer("kv_heads", 1, model_limits::kHeads));
    at.head_dim = static_cast<int>(a.integer("head_dim", 1, model_limits::kHeadDim));
    if (at.layout == AttentionLayout::Mha && at.kv_heads != at.query_heads)
      a.fail_at("kv_heads",
           "full multi-head attention has one KV head per query head (" + std::to_string(at.query_heads) +
               "), got " + std::to_string(at.kv_heads) + "; use layout: gqa for grouped-query attention");
    if (at.query_heads % at.kv_heads != 0)
      a.fail_at("kv_heads",
           "query heads (" + std::to_string(at.query_heads) + ") must be a multiple of KV heads (" +
               std::to_string(at.kv_heads) + ")");
  }
  if (auto sw = a.optional_map("sliding_window")) {
    // The latent cache of an MLA model is sized for every layer at the full context
    // (memory_budget.cc): a window there would be read and then ignored.
    if (at.layout == AttentionLayout::Mla)
      a.fail_at("sliding_window", "sliding-window layers are modelled for gqa and mha attention, not for mla");
    SlidingWindow w;
    w.window_tokens = sw->integer("window", 1, model_limits::kContext);
    w.layers = static_cast<int>(sw->integer("layers", 0, layers));
    sw->finish();
    at.sliding_window = w;
  }
  a.finish();
  return at;
}

MoeSpec decode_moe(MapReader m, int layers) {
  MoeSpec moe;
  moe.layers = static_cast<int>(m.integer("layers", 1, layers));
  moe.experts = static_cast<int>(m.integer("experts", 1, model_limits::kExperts));
  moe.experts_per_token = static_cast<int>(m.integer("experts_per_token", 1, model_limits::kExperts));
  if (moe.experts_per_token > moe.experts)
    m.fail_at("experts_per_token",
         "top-k (" + std::to_string(moe.experts_per_token) + ") cannot exceed the number of experts (" +
             std::to_string(moe.experts) + ")");
  moe.shared_experts = static_cast<int>(m.optional_integer("shared_experts", 0, model_limits::kSharedExperts).value_or(0));
  moe.expert_params = m.number("expert_params");
  // params.total's bound (1e15): one expert cannot be larger than the largest model.
  if (moe.expert_params > model_limits::kParams) m.fail_at("expert_params", "more than 1e15 parameters in one expert is not a model this tool can size");
  if (auto r = m.optional_map("routing")) {
    RoutingSpec routing;
    if (auto profile = r->optional_string("profile")) {
      const config::Node& at = *r->node().find("profile");
      routing.profile = config::resolve_path(at.origin(), *profile);
      if (r->has("coverage_points")) r->fail_at("coverage_points", "give either coverage_points or a profile, not both");
    }
    const config::Node* points_node = routing.profile.empty() ? &r->any("coverage_points") : nullptr;
    const config::Node& points = points_node ? *points_node : config::Node();
    if (points_node && (!points.is_sequence() || points.items().size() != 2))
      fail(points, r->key_path("coverage_points"), "expected a list of two {coverage, hit_rate} points");
    for (std::size_t i = 0; i < points.items().size(); ++i) {
      MapReader p(points.items()[i], r->key_path("coverage_points") + "[" + std::to_string(i) + "]");
      double coverage = p.number("coverage");
      double hit = p.number("hit_rate");
      if (coverage >= 1 || hit >= 1 || hit <= coverage)
        p.fail_at("hit_rate", "expected 0 < coverage < hit_rate < 1 (a hottest-first cache beats its coverage)");
      p.ignore("source");
      p.finish();
      routing.coverage_points.emplace_back(coverage, hit);
    }
    if (points_node && routing.coverage_points[1].first <= routing.coverage_points[0].first)
      fail(points, r->key_path("coverage_points"), "the second point must have the higher coverage");
    if (auto spread = r->optional_map("request_share")) {
      routing.request_share_median = spread->number("median", config::Lower::NonNegative);
      routing.request_share_sigma = spread->number("sigma", config::Lower::NonNegative);
      if (routing.request_share_median >= 1) spread->fail_at("median", "a share must be below 1");
      spread->finish();
    }
    routing.locality = r->optional_number("locality", config::Lower::NonNegative).value_or(0.0);
    if (routing.locality >= 1) r->fail_at("locality", "a probability must be below 1");
    r->ignore("source");
    r->finish();
    moe.routing = routing;
  }
  m.finish();
  return moe;
}

// A parameter count for a message: the whole number while a double holds it exactly (below
// 2^53), else "2.4e+19" (a cast to an integer type past its range is undefined: it printed
// -9223372036854775808).
std::string count_text(double count) {
  if (std::fabs(count) < 9e15) return std::to_string(static_cast<long long>(std::llround(count)));
  return fmt::format("{:.3g}", count);
}

}  // namespace

ModelSpec decode_model(const config::Node& node, const std::string& key_path) {
  MapReader r(node, key_path);
  ModelSpec m;
  m.name = r.string("name");
  m.display_name = r.optional_string("display_name").value_or(m.name);
  r.ignore("source");
  const std::string family = r.choice("family", {"dense", "moe"});
  {
    MapReader p = r.map("params");
    // At most 1e15 parameters, hundreds of times the largest published models: beyond that the
    // figures are no model's, only overflow (1e308 would make every size infinite).
    m.params_total = p.number("total");
    if (m.params_total > model_limits::kParams) p.fail_at("total", "more than 1e15 parameters is not a model this tool can size");
    m.params_active = p.number("active");
    if (m.params_active > m.params_total)
      p.fail_at("active", "active parameters cannot exceed the total");
    p.finish();
  }
  m.layers = static_cast<int>(r.integer("layers", 1, model_limits::kLayers));
  m.hidden_size = static_cast<int>(r.integer("hidden_size", 1, model_limits::kHiddenSize));
  m.vocab_size = static_cast<int>(r.integer("vocab_size", 1, model_limits::kVocabSize));
  m.tied_embeddings = r.boolean("tied_embeddings", false);
  m.max_context = r.integer("max_context", 1, model_limits::kContext);
  m.native_format = r.string("native_format");
  m.native_expert_format = r.optional_string("native_expert_format").value_or("");
  if (auto ff = r.optional_map("file_formats")) {
    for (const auto& [name, value] : ff->node().entries()) {
      MapReader f = ff->map(name);
      WeightFormat w{name, f.number("bits_per_weight"), false};
      if (w.bits_per_weight > 64) f.fail_at("bits_per_weight", "more than 64 bits per weight");
      f.ignore("source");
      f.finish();
      m.file_formats.push_back(w);
    }
    ff->finish();
  }
  m.lineage = r.optional_string("lineage").value_or(m.name);
  m.mtp_head = r.boolean("mtp_head", false);
  m.attention = decode_attention(r.map("attention"), m.layers);
  if (family == "moe") {
    if (!r.has("moe")) fail(node, key_path, "family: moe needs a \"moe\" section (experts, experts_per_token, ...)");
    m.moe = decode_moe(r.map("moe"), m.layers);
    double routed = m.moe->expert_params * m.moe->experts * m.moe->layers;
    if (routed > m.params_total)
      r.fail_at("moe",
           "the routed experts alone (" + count_text(routed) + " parameters) exceed params.total (" + count_text(m.params_total) + ")");
    // A token runs its top-k routed experts on every MoE layer: they are part of params.active.
    const double routed_active = m.moe->expert_params * m.moe->experts_per_token * m.moe->layers;
    if (routed_active > m.params_active)
      r.fail_at("moe", "a token's top-" + std::to_string(m.moe->experts_per_token) + " routed experts alone (" +
                           count_text(routed_active) + " parameters) exceed params.active (" + count_text(m.params_active) + ")");
  } else if (r.has("moe")) {
    fail(*r.optional_any("moe"), r.key_path("moe"), "a dense model has no experts; set family: moe");
  }
  r.finish();
  return m;
}

}  // namespace vramsim::workloads
