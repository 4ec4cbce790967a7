#include "workloads/fit.h"

#include <stdexcept>
#include <utility>

#include "workloads/layer_split.h"

#include "core/units.h"

namespace vramsim::workloads {
namespace {

BudgetRequest request_of(const FitQuery& q) {
  BudgetRequest r;
  r.bits_per_weight = q.quant.bits_per_weight;
  r.context_tokens = q.context_tokens;
  r.kv_bytes_per_element_k = q.kv_k.bytes_per_element;
  r.kv_bytes_per_element_v = q.kv_v.bytes_per_element;
  r.concurrent_sequences = q.concurrency;
  return r;
}

void validate(const FitQuery& q) {
  if (q.context_tokens <= 0)
    throw std::invalid_argument("context must be at least 1 token, got " + std::to_string(q.context_tokens));
  if (q.context_tokens > q.model.max_context)
    throw std::invalid_argument("context " + std::to_string(q.context_tokens) + " exceeds " + q.model.name +
                                "'s maximum of " + std::to_string(q.model.max_context) + " tokens");
  if (q.concurrency < 1) throw std::invalid_argument("concurrency must be at least 1");
  if (q.gpus < 1) throw std::invalid_argument("--gpus must be at least 1");
  if (q.gpus > q.model.layers)
    throw std::invalid_argument("--gpus " + std::to_string(q.gpus) + " exceeds " + q.model.name + "'s " +
                                std::to_string(q.model.layers) + " layers: a pipeline split gives each card whole layers");
  if (q.gpus > 1 && q.gpu.unified())
    throw std::invalid_argument(q.gpu.name + " is a unified-memory part: several of them cannot be combined");
  if (const std::string why = native_only_refusal(q.quant, q.model.name, q.model.native_format); !why.empty())
    throw std::invalid_argument(why);
  if (q.host && q.gpu.unified())
    throw std::invalid_argument(q.gpu.name + " is a unified-memory part: its memory is the host's, there is no other "
                                "host RAM to offload to (leave out --host)");
}

// Whether `f` (of `q`'s model, or of `model` when given) fits the query's cards: the total, and
// with several cards each card's whole layers (the split `vramsim run` uses).
bool fits_cards(const FitQuery& q, const ModelSpec& model, const Footprint& f, double usable) {
  if (f.total > usable) return false;
  if (q.gpus == 1) return true;
  const std::vector<double> per_card(static_cast<std::size_t>(q.gpus), usable / q.gpus);
  for (const auto& c : split_footprint(f, model.layers, layers_by_capacity(model.layers, per_card), per_card))
    if (!c.fits()) return false;
  return true;
}

Suggestion evaluate(std::string kind, std::string change, const FitQuery& q, const BudgetRequest& r, double usable) {
  Suggestion s;
  s.kind = std::move(kind);
  s.change = std::move(change);
  s.footprint = footprint(q.model, r);
  s.fits = fits_cards(q, q.model, s.footprint, usable);
  s.decode_tok_s = s.fits ? decode_tokens_per_second(q.model, r, q.gpu, q.gpus) : 0.0;
  return s;
}

}  // namespace

FitReport analyse_fit(const FitQuery& q, const FormatTables& formats, const std::vector<ModelSpec>& alternatives) {
  validate(q);
  FitReport rep;
  rep.query = q;
  const BudgetRequest r = request_of(q);
  rep.footprint = footprint(q.model, r);
  rep.usable_bytes = usable_bytes(q.gpu, q.gpus);
  rep.fits = rep.footprint.total <= rep.usable_bytes;
  if (q.gpus > 1) {
    // Layers are whole: each card must hold its share (the same split `vramsim run` uses).
    const std::vector<double> per_card(static_cast<std::size_t>(q.gpus), rep.usable_bytes / q.gpus);
    rep.cards = split_footprint(rep.footprint, q.model.layers, layers_by_capacity(q.model.layers, per_card), per_card);
    for (const auto& c : rep.cards) rep.fits = rep.fits && c.fits();
  }
  rep.headroom_bytes = rep.usable_bytes - rep.footprint.total;
  rep.kv_bytes_per_1k_tokens = rep.footprint.kv / static_cast<double>(q.context_tokens) * 1024.0;
  rep.max_context_tokens =
      max_context_that_fits(q.model, r, [&](const Footprint& f) { return fits_cards(q, q.model, f, rep.usable_bytes); });
  BudgetRequest one_token = r;
  one_token.context_tokens = 1;
  rep.fits_without_context = footprint(q.model, one_token).total <= rep.usable_bytes;
  rep.bytes_per_token = bytes_read_per_token(q.model, r);
  rep.decode_efficiency = decode_efficiency(q.gpus);
  rep.gpu_decode_tok_s = decode_tokens_per_second(q.model, r, q.gpu, q.gpus);
  rep.resident_fraction = std::min(1.0, rep.usable_bytes / rep.footprint.total);
  if (!rep.cards.empty()) {  // whole layers per card: what each card can hold of its own share
    double resident = 0;
    for (const auto& c : rep.cards) resident += std::min(c.need, c.usable);
    rep.resident_fraction = std::min(1.0, resident / rep.footprint.total);
  }
  if (rep.fits) {
    rep.resident_fraction = 1.0;  // exactly: the per-card sum above can round to 1 - 1 ulp
    rep.decode_tok_s = rep.gpu_decode_tok_s;
    return rep;
  }
  // Offloaded: the share the cards actually hold (whole layers per card) runs from VRAM, the
  // rest (its weights, KV and overhead) from the host's RAM, which must hold it (as `vramsim run`
  // counts the CPU layers' bytes against hardware.host's memory).
  if (q.host) {
    rep.host_bytes = rep.footprint.total * (1.0 - rep.resident_fraction);
    if (rep.host_bytes <= q.host->memory_bytes)
      rep.decode_tok_s = offload_decode_tok_s(q.model, r, q.gpu, q.gpus, q.host->memory_bandwidth, rep.resident_fraction);
  }

  // 1. A shorter context.
  if (rep.max_context_tokens > 0) {
    BudgetRequest shorter = r;
    shorter.context_tokens = rep.max_context_tokens;
    rep.suggestions.push_back(
        evaluate("context", "--context " + std::to_string(rep.max_context_tokens), q, shorter, rep.usable_bytes));
  }
  // 2. An 8-bit KV cache.
  if (const KvType* q8 = formats.kv("q8_0");
      q8 && (q.kv_k.bytes_per_element > q8->bytes_per_element || q.kv_v.bytes_per_element > q8->bytes_per_element)) {
    BudgetRequest smaller_kv = r;
    smaller_kv.kv_bytes_per_element_k = std::min(r.kv_bytes_per_element_k, q8->bytes_per_element);
    smaller_kv.kv_bytes_per_element_v = std::min(r.kv_bytes_per_element_v, q8->bytes_per_element);
    // --kv-type-k / --kv-type-v take precedence over --kv-type: name the sides that change.
    std::string change = "--kv-type q8_0";
    if (q.kv_per_side) {
      change.clear();
      if (smaller_kv.kv_bytes_per_element_k < r.kv_bytes_per_element_k) change = "--kv-type-k q8_0";
      if (smaller_kv.kv_bytes_per_element_v < r.kv_bytes_per_element_v) change += (change.empty() ? "" : " ") + std::string("--kv-type-v q8_0");
    }
    // Only a KV cache that shrinks is worth suggesting: an MLA model's latent cache is stored
    // in the K type alone, so --kv-type-v changes nothing there.
    if (Suggestion kv = evaluate("kv_cache", change, q, smaller_kv, rep.usable_bytes); kv.footprint.kv < rep.footprint.kv)
      rep.suggestions.push_back(std::move(kv));
  }
  // 3. One quantisation level lower.
  if (!q.quant.native_only) {
    if (auto lower = formats.one_level_lower(q.quant.name)) {
      BudgetRequest smaller_w = r;
      smaller_w.bits_per_weight = formats.weight(*lower)->bits_per_weight;
      rep.suggestions.push_back(evaluate("quant", "--quant " + *lower, q, smaller_w, rep.usable_bytes));
    }
  }
  // 4. The largest smaller catalogue model that fits with the same settings.
  double best_params = 0;
  for (const auto& alt : alternatives) {
    if (alt.params_total >= q.model.params_total || alt.name == q.model.name) continue;
    FitQuery aq = q;
    aq.model = alt;
    BudgetRequest ar = r;
    ar.context_tokens = std::min(r.context_tokens, alt.max_context);
    // The options that change: the model, the context when capped at the model's window, and
    // the weights format when it is not the model's own (fit's default for --quant).
    std::string change = "--model " + alt.name;
    if (ar.context_tokens < r.context_tokens) change += " --context " + std::to_string(ar.context_tokens);
    if (!native_only_refusal(q.quant, alt.name, alt.native_format).empty()) continue;
    if (upper(q.quant.name) != upper(alt.native_format)) change += " --quant " + q.quant.name;
    Suggestion s = evaluate("smaller_model", change, aq, ar, rep.usable_bytes);
    if (!s.fits) continue;
    s.moe = alt.moe.has_value();
    if (alt.params_total > best_params) {
      best_params = alt.params_total;
      rep.smaller_model = s;
    }
  }
  if (rep.smaller_model && rep.decode_tok_s) rep.smaller_model_faster = rep.smaller_model->decode_tok_s > *rep.decode_tok_s;
  return rep;
}

}  // namespace vramsim::workloads
