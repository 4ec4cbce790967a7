#include "workloads/fit.h"

#include <algorithm>
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
  if (!q.mixed.empty() && q.mixed.size() != static_cast<std::size_t>(q.gpus))
    throw std::invalid_argument("a mixed machine names each of its " + std::to_string(q.gpus) + " cards");
  if (q.gpus > 1 && q.gpu.unified())
    throw std::invalid_argument(q.gpu.name + " is a unified-memory part: it cannot be combined with other cards");
  for (const auto& g : q.mixed)
    if (g.unified()) throw std::invalid_argument(g.name + " is a unified-memory part: it cannot be combined with other cards");
  if (const std::string why = native_only_refusal(q.quant, q.model.name, q.model.native_format); !why.empty())
    throw std::invalid_argument(why);
  if (q.host && q.gpu.unified())
    throw std::invalid_argument(q.gpu.name + " is a unified-memory part: its memory is the host's, there is no other "
                                "host RAM to offload to (leave out --host)");
}

// Each card's usable bytes by the calculator (its share of its own memory, the multi-card share
// when there are several), device 0 first.
std::vector<double> usable_per_card(const FitQuery& q) {
  if (q.mixed.empty()) return std::vector<double>(static_cast<std::size_t>(q.gpus), usable_bytes(q.gpu, q.gpus) / q.gpus);
  std::vector<double> per_card;
  for (const auto& g : q.mixed) per_card.push_back(usable_bytes(g, q.gpus) / q.gpus);
  return per_card;
}

// Whether `f` (of `model`) fits the query's cards by the calculator: the total, and with
// several cards each card's whole layers (dealt by count in proportion to the cards' room).
bool fits_cards(const FitQuery& q, const ModelSpec& model, const Footprint& f, double usable) {
  if (f.total > usable) return false;
  if (q.gpus == 1) return true;
  const std::vector<double> per_card = usable_per_card(q);
  for (const auto& c : split_footprint(f, model.layers, layers_by_capacity(model.layers, per_card), per_card))
    if (!c.fits()) return false;
  return true;
}

// The cards' bandwidth as a token's pass sees it (FitReport::pace_bandwidth): with several
// different cards each reads the share of the layers the calculator deals it, one after another,
// so 1 / sum(share_i / bandwidth_i); identical cards (or one) their own.
double pace_bandwidth(const FitQuery& q, const ModelSpec& model) {
  if (q.mixed.empty()) return q.gpu.memory_bandwidth;
  const std::vector<int> layers = layers_by_capacity(model.layers, usable_per_card(q));
  double seconds_per_byte = 0;
  for (std::size_t c = 0; c < q.mixed.size(); ++c)
    seconds_per_byte += static_cast<double>(layers[c]) / model.layers / q.mixed[c].memory_bandwidth;
  return 1.0 / seconds_per_byte;
}

// The query's first card with the machine's pace: what the bandwidth-bound formulas take.
hw::GpuSpec paced(const FitQuery& q, const ModelSpec& model) {
  hw::GpuSpec g = q.gpu;
  g.memory_bandwidth = pace_bandwidth(q, model);
  return g;
}

// One question's two accountings and the verdict of the one that decides.
struct Judged {
  Footprint footprint;
  bool calculator_fits = false;
  std::optional<EngineAccount> engine;
  bool fits = false;
};

struct Judge {
  const FitQuery& q;
  const EngineAccounting& engine;
  double usable;
  bool by_engine;  // the query's own accounting came back: the engine decides every variant

  Judged operator()(const ModelSpec& model, const BudgetRequest& r) const {
    Judged j;
    j.footprint = footprint(model, r);
    j.calculator_fits = fits_cards(q, model, j.footprint, usable);
    if (by_engine) j.engine = engine(model, r);
    j.fits = j.engine ? j.engine->fits() : j.calculator_fits;
    return j;
  }
  // The largest context (<= the model's maximum) that fits, or 0; the need grows with context.
  template <typename Fits>
  static std::int64_t largest_context(const ModelSpec& model, BudgetRequest r, Fits fits) {
    auto at = [&](std::int64_t ctx) {
      r.context_tokens = ctx;
      return fits(r);
    };
    if (!at(1)) return 0;
    if (at(model.max_context)) return model.max_context;
    std::int64_t lo = 1, hi = model.max_context;  // at(lo), !at(hi)
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (at(mid) ? lo : hi) = mid;
    }
    return lo;
  }
};

Suggestion evaluate(std::string kind, std::string change, const FitQuery& q, const ModelSpec& model, const BudgetRequest& r,
                    const Judge& judge) {
  Suggestion s;
  s.kind = std::move(kind);
  s.change = std::move(change);
  Judged j = judge(model, r);
  s.footprint = j.footprint;
  s.engine = std::move(j.engine);
  s.fits = j.fits;
  s.decode_tok_s = s.fits ? decode_tokens_per_second(model, r, paced(q, model), q.gpus) : 0.0;
  return s;
}

}  // namespace

bool EngineAccount::fits() const {
  for (const auto& c : cards)
    if (!c.fits()) return false;
  return true;
}
double EngineAccount::need() const {
  double n = 0;
  for (const auto& c : cards) n += c.need();
  return n;
}
double EngineAccount::usable() const {
  double u = 0;
  for (const auto& c : cards) u += c.usable;
  return u;
}

std::int64_t typed_context(std::int64_t tokens) {
  if (tokens < 1) return tokens;
  if (tokens >= 1024) return tokens / 1024 * 1024;
  std::int64_t p = 1;
  while (p * 2 <= tokens) p *= 2;
  return p;
}

FitReport analyse_fit(const FitQuery& q, const FormatTables& formats, const std::vector<ModelSpec>& alternatives,
                      const EngineAccounting& engine) {
  validate(q);
  FitReport rep;
  rep.query = q;
  const BudgetRequest r = request_of(q);
  rep.usable_bytes = usable_bytes(q.gpu, q.gpus);  // identical cards: n x one card's share
  if (!q.mixed.empty()) {
    rep.usable_bytes = 0;
    for (double u : usable_per_card(q)) rep.usable_bytes += u;
  }
  if (engine) rep.engine = engine(q.model, r);
  const Judge judge{q, engine, rep.usable_bytes, rep.engine.has_value()};
  rep.decided_by = rep.engine ? "engine" : "calculator";
  rep.footprint = footprint(q.model, r);
  rep.calculator_fits = fits_cards(q, q.model, rep.footprint, rep.usable_bytes);
  if (q.gpus > 1) {
    // Layers are whole: each card must hold its share.
    const std::vector<double> per_card = usable_per_card(q);
    rep.cards = split_footprint(rep.footprint, q.model.layers, layers_by_capacity(q.model.layers, per_card), per_card);
  }
  rep.fits = rep.engine ? rep.engine->fits() : rep.calculator_fits;
  rep.headroom_bytes = rep.engine ? rep.engine->usable() - rep.engine->need() : rep.usable_bytes - rep.footprint.total;
  rep.kv_bytes_per_1k_tokens = rep.footprint.kv / static_cast<double>(q.context_tokens) * 1024.0;
  rep.calculator_max_context_tokens = Judge::largest_context(q.model, r, [&](const BudgetRequest& x) {
    return fits_cards(q, q.model, footprint(q.model, x), rep.usable_bytes);
  });
  rep.max_context_tokens = rep.engine ? Judge::largest_context(q.model, r, [&](const BudgetRequest& x) {
    return judge(q.model, x).fits;
  })
                                      : rep.calculator_max_context_tokens;
  BudgetRequest one_token = r;
  one_token.context_tokens = 1;
  rep.fits_without_context = rep.engine ? judge(q.model, one_token).fits
                                        : footprint(q.model, one_token).total <= rep.usable_bytes;
  rep.bytes_per_token = bytes_read_per_token(q.model, r);
  rep.decode_efficiency = decode_efficiency(q.gpus);
  rep.pace_bandwidth = pace_bandwidth(q, q.model);
  rep.gpu_decode_tok_s = decode_tokens_per_second(q.model, r, paced(q, q.model), q.gpus);
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
  if (rep.engine) rep.resident_fraction = std::min(rep.resident_fraction, rep.engine->usable() / rep.engine->need());
  // Offloaded: the share the cards actually hold (whole layers per card) runs from VRAM, the
  // rest (its weights, KV and overhead) from the host's RAM, which must hold it (as `vramsim run`
  // counts the CPU layers' bytes against hardware.host's memory).
  if (q.host) {
    rep.host_bytes = rep.footprint.total * (1.0 - rep.resident_fraction);
    if (rep.host_bytes <= q.host->memory_bytes)
      rep.decode_tok_s = offload_decode_tok_s(q.model, r, paced(q, q.model), q.gpus, q.host->memory_bandwidth, rep.resident_fraction);
  }

  // 1. A shorter context, as a user types it (a multiple of 1,024, or a power of two below).
  if (rep.max_context_tokens > 0) {
    BudgetRequest shorter = r;
    shorter.context_tokens = typed_context(rep.max_context_tokens);
    rep.suggestions.push_back(
        evaluate("context", "--context " + std::to_string(shorter.context_tokens), q, q.model, shorter, judge));
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
    if (Suggestion kv = evaluate("kv_cache", change, q, q.model, smaller_kv, judge); kv.footprint.kv < rep.footprint.kv)
      rep.suggestions.push_back(std::move(kv));
  }
  // 3. One quantisation level lower.
  if (!q.quant.native_only) {
    if (auto lower = formats.lower_than(q.quant.bits_per_weight)) {
      BudgetRequest smaller_w = r;
      smaller_w.bits_per_weight = formats.weight(*lower)->bits_per_weight;
      rep.suggestions.push_back(evaluate("quant", "--quant " + *lower, q, q.model, smaller_w, judge));
    }
  }
  // 4. The largest smaller catalogue model that fits with the same settings: of the same lineage
  // (Llama for a Llama) when one fits, else of any.
  double best_params = 0;
  for (const auto& alt : alternatives) {
    if (alt.params_total >= q.model.params_total || alt.name == q.model.name) continue;
    BudgetRequest ar = r;
    ar.context_tokens = std::min(r.context_tokens, alt.max_context);
    // The options that change: the model, the context when capped at the model's window, and
    // the weights format when it is not the model's own (fit's default for --quant).
    std::string change = "--model " + alt.name;
    if (ar.context_tokens < r.context_tokens) change += " --context " + std::to_string(ar.context_tokens);
    if (!native_only_refusal(q.quant, alt.name, alt.native_format).empty()) continue;
    // A file's own format (a GGUF file's) is the table's nearest for a catalogue model.
    const std::string quant = q.quant.from_file ? formats.nearest_on_ladder(q.quant.bits_per_weight).value_or(q.quant.name) : q.quant.name;
    if (upper(quant) != upper(alt.native_format)) change += " --quant " + quant;
    const bool same = alt.lineage == q.model.lineage;
    const bool best_same = rep.smaller_model && rep.smaller_model->same_lineage;
    if (best_same && !same) continue;                                   // a same-lineage one is found: others never win
    if (rep.smaller_model && same == best_same && alt.params_total <= best_params) continue;
    Suggestion s = evaluate("smaller_model", change, q, alt, ar, judge);
    if (!s.fits) continue;
    s.moe = alt.moe.has_value();
    s.same_lineage = same;
    best_params = alt.params_total;
    rep.smaller_model = s;
  }
  if (rep.smaller_model && rep.decode_tok_s) rep.smaller_model_faster = rep.smaller_model->decode_tok_s > *rep.decode_tok_s;
  return rep;
}

}  // namespace vramsim::workloads
