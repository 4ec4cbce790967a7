// `vramsim fit`'s answer written out: one JSON object (docs/json-schema.md, "fit") or the
// table printed on a terminal.
#include "cli/fit_output.h"

#include <cstdio>
#include <sstream>

#include "core/json.h"
#include "core/units.h"

namespace vramsim::cli {
namespace {

using units::format_gib;

using units::fixed;

void write_footprint(json::Writer& j, const workloads::Footprint& f) {
  j.field("weights_gib", f.weights / units::kGiB)
      .field("kv_gib", f.kv / units::kGiB)
      .field("overhead_gib", f.overhead / units::kGiB)
      .field("total_gib", f.total / units::kGiB);
}

// The engine's accounting (workloads::EngineAccount) as an object, or null.
void write_engine(json::Writer& j, const std::optional<workloads::EngineAccount>& e) {
  if (!e) {
    j.null();
    return;
  }
  j.begin_object().field("engine", e->engine).field("fits", e->fits())
      .field("need_gib", e->need() / units::kGiB).field("usable_gib", e->usable() / units::kGiB);
  j.key("cards").begin_array();
  for (const auto& c : e->cards)
    j.begin_object().field("first_layer", static_cast<std::int64_t>(c.first_layer))
        .field("end_layer", static_cast<std::int64_t>(c.end_layer)).field("weights_gib", c.weights / units::kGiB)
        .field("kv_gib", c.kv / units::kGiB).field("runtime_gib", c.runtime / units::kGiB)
        .field("need_gib", c.need() / units::kGiB).field("usable_gib", c.usable / units::kGiB).field("fits", c.fits())
        .end_object();
  j.end_array().end_object();
}

void write_suggestion(json::Writer& j, const workloads::Suggestion& s) {
  j.begin_object().field("kind", s.kind).field("change", s.change);
  write_footprint(j, s.footprint);
  j.key("engine_need_gib");
  if (s.engine)
    j.value(s.engine->need() / units::kGiB);
  else
    j.null();
  if (s.kind == "smaller_model") j.field("same_lineage", s.same_lineage);
  j.field("fits", s.fits);
  j.key("decode_tok_s");
  if (s.fits)
    j.value(s.decode_tok_s);
  else
    j.null();
  j.end_object();
}

// The memory-budget formula reads an MoE model's active bytes at the dense decode efficiency;
// llama.cpp's MoE kernels (per-expert matmuls, more launches per layer) run well below it. The
// measured ratios (configs/validation/community.yaml: llama.cpp PR 16834's llama-bench table
// on an RTX 4090, gpt-oss-20b MXFP4 tg128 186.10 and Qwen3-30B-A3B Q4_0 161.55 t/s; the
// gpu_ext log on an RTX 5090, gpt-oss-20b tg128 362.59 t/s) against this formula's 375, 335
// and 667 tok/s at fit's default 4,096 tokens of context: 0.48-0.54. Shown, not applied: `vramsim run` simulates the per-layer costs.
// Offloaded, the formula streams the host's share of every active byte from RAM, where
// llama.cpp keeps whole layers' experts there (--n-cpu-moe) and the simulation can beat it:
// no bound either way, so the note says what `run` and `plan` do instead.
// Dense, the formula was checked on RTX 3080-4090 (760-1,008 GB/s): llama.cpp's measured
// Llama 3 8B Q4_K_M tg512 (configs/validation/community.yaml, XiongjieDai) is 0.81-0.99 of it.
// It has no fixed cost per layer, which weighs more the faster the card: past that range the
// note says the figure is bandwidth alone.
constexpr double kDenseCheckedBandwidth = 1008e9;  // bytes/s, the RTX 4090's

std::string decode_note(const workloads::FitReport& rep) {
  if (!rep.decode_tok_s) return {};  // no speed, nothing to qualify
  const std::string run =
      "`vramsim run --model " + (rep.query.model_ref.empty() ? rep.query.model.name : rep.query.model_ref) + " --gpu ...`";
  if (!rep.query.model.is_moe())
    return rep.query.gpu.memory_bandwidth > kDenseCheckedBandwidth && rep.resident_fraction >= 1.0
               ? "bandwidth alone: checked on RTX 3080-4090 (llama.cpp measured 0.81-0.99 of it), and with no fixed cost "
                 "per layer, which weighs more on a faster card; " + run + " simulates those costs"
               : std::string();
  if (rep.resident_fraction < 1.0)
    return "MoE offloaded: the formula reads its share of every active byte from RAM, not as llama.cpp's placements do "
           "(--n-cpu-moe keeps whole layers' experts in RAM); `vramsim plan` and " + run + " simulate them";
  return "MoE: an upper bound; llama.cpp's measured MoE decode runs at 0.48-0.54 of this formula at 4,096 tokens "
         "(RTX 4090: gpt-oss-20b 186 against 375 tok/s, Qwen3-30B-A3B 162 against 335; RTX 5090: gpt-oss-20b 363 "
         "against 667); " + run + " simulates it";
}

// The machine as the table names it: "2 x NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 +
// NVIDIA GeForce RTX 5090"; its memory as the usable line counts it: "2 x 24.00 GiB", "24.00 +
// 32.00 GiB"; the cards as --gpu takes them.
std::string machine_name(const workloads::FitQuery& q) {
  if (q.mixed.empty()) return std::to_string(q.gpus) + " x " + q.gpu.display_name;
  std::string text;
  for (const auto& g : q.mixed) text += (text.empty() ? "" : " + ") + g.display_name;
  return text;
}
std::string machine_memory(const workloads::FitQuery& q) {
  if (q.mixed.empty()) return std::to_string(q.gpus) + " x " + format_gib(q.gpu.memory_bytes);
  std::string text;
  for (const auto& g : q.mixed) text += (text.empty() ? "" : " + ") + format_gib(g.memory_bytes);
  return text;
}
std::string gpu_option(const workloads::FitQuery& q) {
  if (q.mixed.empty()) return q.gpu.name + (q.gpus > 1 ? " --gpus " + std::to_string(q.gpus) : std::string());
  std::string text;
  for (const auto& g : q.mixed) text += (text.empty() ? "" : ",") + g.name;
  return text;
}

std::string verdict(bool fits, double headroom, const std::string& overfull) {
  if (fits) return "yes, " + format_gib(headroom) + " headroom";
  if (headroom >= 0) return "NO: layers are whole, " + overfull;
  return "NO, " + format_gib(-headroom) + " short";
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// The two accountings side by side: the calculator's column, the engine's, a note.
void two_columns(std::ostringstream& o, const workloads::FitReport& rep) {
  const auto& q = rep.query;
  const auto& e = *rep.engine;
  double weights = 0, kv = 0, runtime = 0;
  for (const auto& c : e.cards) {
    weights += c.weights;
    kv += c.kv;
    runtime += c.runtime;
  }
  const std::string engine = e.engine + "'s own";
  auto row = [&](const std::string& label, const std::string& calc, const std::string& eng, const std::string& note) {
    o << "  " << padded(label, 13) << padded(calc, 20) << padded(eng, 20) << note << "\n";
  };
  std::string kv_growth = fixed(rep.kv_bytes_per_1k_tokens / units::kGiB, 4) + " GiB per 1,024 tokens";
  if (q.concurrency > 1)
    kv_growth += " of context: " + fixed(rep.kv_bytes_per_1k_tokens / q.concurrency / units::kGiB, 4) + " in each of " +
                 std::to_string(q.concurrency) + " sequences";
  row("", "calculator", engine, "");
  row("weights", format_gib(rep.footprint.weights), format_gib(weights), "(" + e.engine + " keeps the embedding table in RAM)");
  row("KV cache", format_gib(rep.footprint.kv), format_gib(kv), "(" + kv_growth + ")");
  row("overhead", format_gib(rep.footprint.overhead), format_gib(runtime),
      "(calculator: 0.65 GiB + 8% of weights and KV; " + e.engine + ": its runtime_vram, " + format_gib(e.cards.front().runtime) +
          " per card: compute buffer and CUDA context)");
  row("total", format_gib(rep.footprint.total), format_gib(e.need()), "");
  row("usable", format_gib(rep.usable_bytes), format_gib(e.usable()),
      "(calculator: " + fixed(100 * workloads::usable_share(q.gpu.gpu_class, q.gpus), 0) + "% of " + machine_memory(q) +
          ", " + std::string(hw::to_string(q.gpu.gpu_class)) + (q.gpus > 1 ? ", split" : "") +
          "; " + e.engine + ": the driver-reported total" + (q.gpus > 1 ? " of each card" : "") + ")");
  std::vector<workloads::CardShare> engine_cards;
  for (const auto& c : e.cards) engine_cards.push_back({c.first_layer, c.end_layer, c.need(), c.usable});
  o << "  " << padded("fits", 13) << "calculator " << verdict(rep.calculator_fits, rep.usable_bytes - rep.footprint.total,
                                                               workloads::first_overfull_card(rep.cards))
    << "; " << e.engine << " " << verdict(e.fits(), e.usable() - e.need(), workloads::first_overfull_card(engine_cards)) << "\n";
  for (std::size_t c = 0; c < e.cards.size() && q.gpus > 1; ++c) {
    const auto& ec = e.cards[c];
    std::string calc;
    if (c < rep.cards.size())
      calc = "layers " + std::to_string(rep.cards[c].first_layer) + "-" + std::to_string(rep.cards[c].end_layer - 1) + ": " +
             format_gib(rep.cards[c].need) + " of " + format_gib(rep.cards[c].usable);
    o << "  " << padded("card " + std::to_string(c), 13) << "calculator " << calc << "; " << e.engine << " layers "
      << ec.first_layer << "-" << ec.end_layer - 1 << ": " << format_gib(ec.need()) << " of " << format_gib(ec.usable) << "\n";
  }
  o << "  " << padded("decides", 13) << e.engine << "'s own accounting: " << (rep.fits ? "it fits" : "it does not fit")
    << " (`vramsim run` and `plan` place by it; the calculator is a public budget with fixed margins"
    << (rep.fits == rep.calculator_fits ? ", and agrees)" : ", and disagrees)") << "\n";
}

}  // namespace

std::string to_json(const workloads::FitReport& rep) {
  const auto& q = rep.query;
  json::Writer j;
  j.begin_object()
      .field("model", q.model.name)
      .field("gpu", q.mixed.empty() ? q.gpu.name : gpu_option(q))
      .field("gpus", q.gpus)
      .field("quant", q.quant.name)
      .field("bits_per_weight", q.quant.bits_per_weight)
      .field("context_tokens", static_cast<std::int64_t>(q.context_tokens))
      .field("kv_type_k", q.kv_k.name)
      .field("kv_type_v", q.kv_v.name)
      .field("concurrency", q.concurrency);
  write_footprint(j, rep.footprint);
  j.field("usable_gib", rep.usable_bytes / units::kGiB)
      .field("usable_share", workloads::usable_share(q.gpu.gpu_class, q.gpus))
      .field("decided_by", rep.decided_by)
      .field("fits", rep.fits)
      .field("calculator_fits", rep.calculator_fits)
      .field("headroom_gib", rep.headroom_bytes / units::kGiB);
  j.key("engine_accounting");
  write_engine(j, rep.engine);
  j.key("cards").begin_array();
  for (const auto& c : rep.cards)
    j.begin_object().field("first_layer", static_cast<std::int64_t>(c.first_layer))
        .field("end_layer", static_cast<std::int64_t>(c.end_layer)).field("need_gib", c.need / units::kGiB)
        .field("usable_gib", c.usable / units::kGiB).field("fits", c.fits()).end_object();
  j.end_array();
  j.field("kv_gib_per_1k_tokens", rep.kv_bytes_per_1k_tokens / units::kGiB)
      .field("max_context_tokens", static_cast<std::int64_t>(rep.max_context_tokens))
      .field("calculator_max_context_tokens", static_cast<std::int64_t>(rep.calculator_max_context_tokens))
      .field("bytes_per_token_gb", rep.bytes_per_token / units::kGB)
      .field("decode_efficiency", rep.decode_efficiency)
      .field("pace_bandwidth_gb_s", rep.pace_bandwidth / units::kGB)
      .field("gpu_decode_tok_s", rep.gpu_decode_tok_s)
      .field("decode_tok_s", rep.decode_tok_s)
      .field("resident_fraction", rep.resident_fraction);
  j.key("decode_note");
  if (const std::string note = decode_note(rep); !note.empty())
    j.value(note);
  else
    j.null();
  j.key("host");
  if (q.host)
    j.value(q.host->name);
  else
    j.null();
  j.key("host_gib");
  if (q.host && !rep.fits)
    j.value(rep.host_bytes / units::kGiB);
  else
    j.null();
  j.key("suggestions").begin_array();
  for (const auto& s : rep.suggestions) write_suggestion(j, s);
  j.end_array();
  j.key("smaller_model");
  if (rep.smaller_model)
    write_suggestion(j, *rep.smaller_model);
  else
    j.null();
  j.field("smaller_model_faster", rep.smaller_model_faster);
  j.key("fits_engine_accounting");
  if (rep.engine)
    j.value(rep.engine->fits());
  else
    j.null();
  j.end_object();
  return j.str() + "\n";
}

// "NO, 3.20 GiB short", "NO: layers are whole, card 1 needs ...", "yes, 4.10 GiB headroom".
std::string to_table(const workloads::FitReport& rep) {
  const auto& q = rep.query;
  std::ostringstream o;
  o << "vramsim fit: " << q.model.display_name << " on " << machine_name(q) << "\n"
    << "  " << q.quant.name << " (" << fixed(q.quant.bits_per_weight, 2) << " bits/weight), context "
    << q.context_tokens << " tokens, KV " << q.kv_k.name << "/" << q.kv_v.name << ", " << q.concurrency
    << (q.concurrency == 1 ? " sequence" : " sequences") << "\n\n";
  if (rep.engine) {
    two_columns(o, rep);
  } else {
    // The KV growth per 1,024 tokens of context (--context): every sequence has its own window,
    // so with several the figure is their sum, and the line says how much each one takes.
    std::string kv_growth = fixed(rep.kv_bytes_per_1k_tokens / units::kGiB, 4) + " GiB per 1,024 tokens";
    if (q.concurrency > 1)
      kv_growth += " of context: " + fixed(rep.kv_bytes_per_1k_tokens / q.concurrency / units::kGiB, 4) + " in each of " +
                   std::to_string(q.concurrency) + " sequences";
    o << "  weights      " << format_gib(rep.footprint.weights) << "\n"
      << "  KV cache     " << format_gib(rep.footprint.kv) << "   (" << kv_growth << ")\n"
      << "  overhead     " << format_gib(rep.footprint.overhead) << "   (0.65 GiB + 8% of weights and KV)\n"
      << "  total        " << format_gib(rep.footprint.total) << "\n"
      << "  usable       " << format_gib(rep.usable_bytes) << "   ("
      << fixed(100 * workloads::usable_share(q.gpu.gpu_class, q.gpus), 0) << "% of " << machine_memory(q)
      << ", " << hw::to_string(q.gpu.gpu_class) << (q.gpus > 1 ? ", split" : "") << ")\n";
    o << "  fits         " << verdict(rep.fits, rep.headroom_bytes, workloads::first_overfull_card(rep.cards)) << "\n";
    for (std::size_t c = 0; c < rep.cards.size(); ++c)
      o << "  card " << c << "       layers " << rep.cards[c].first_layer << "-" << rep.cards[c].end_layer - 1 << ": "
        << format_gib(rep.cards[c].need) << " of " << format_gib(rep.cards[c].usable) << "\n";
    o << "  decides      the calculator"
      << (q.gpu.unified() ? " (a unified-memory part: `run` and `plan` judge its fit by it too)" : " (the engine's accounting could not be built)")
      << "\n";
  }
  if (rep.max_context_tokens == 0)
    o << "  max context  none: "
      << (rep.fits_without_context ? "at any context, whole layers overfill a card"
                                   : "the weights and fixed overhead alone exceed the usable memory")
      << "\n";
  else
    o << "  max context  " << rep.max_context_tokens << " tokens"
      << (rep.max_context_tokens == q.model.max_context ? " (the model's maximum)" : "")
      << (rep.engine ? " (calculator: " + (rep.calculator_max_context_tokens ? std::to_string(rep.calculator_max_context_tokens)
                                                                            : std::string("none")) + ")"
                     : std::string())
      << "\n";
  o << "  decode       ";
  if (rep.fits) {
    o << fixed(rep.gpu_decode_tok_s, 1) << " tok/s   (" << units::format_bandwidth(rep.pace_bandwidth)
      << (q.mixed.empty() ? "" : " (the cards' bandwidths, weighted by the layers each reads)") << " x "
      << fixed(rep.decode_efficiency, 2) << " / " << fixed(rep.bytes_per_token / units::kGB, 2)
      << " GB read per token)\n";
  } else if (rep.decode_tok_s) {
    o << fixed(*rep.decode_tok_s, 1) << " tok/s with " << fixed(100 * rep.resident_fraction, 1) << "% resident, the rest from "
      << q.host->name << " RAM (" << units::format_bandwidth(q.host->memory_bandwidth) << "); all on the GPU it would be "
      << fixed(rep.gpu_decode_tok_s, 1) << " tok/s\n";
  } else if (q.host) {
    o << "does not run: the " << format_gib(rep.host_bytes) << (q.gpus > 1 ? " the cards cannot" : " the card cannot")
      << " hold do not fit in " << q.host->name << "'s RAM ("
      << format_gib(q.host->memory_bytes) << ") either\n";
  } else if (q.gpu.unified()) {
    o << "does not run: " << fixed(100 * rep.resident_fraction, 1) << "% would fit, and unified memory is the host's: "
      << "there is no other RAM to offload to (a lower --quant, a smaller model or a part with more memory)\n";
  } else {
    o << "does not run: " << fixed(100 * rep.resident_fraction, 1)
      << "% would be resident; pass --host to estimate offload to system RAM\n";
  }
  if (const std::string note = decode_note(rep); !note.empty()) o << "  note         " << note << "\n";
  // The reference's split efficiency (0.6) is its rule of thumb; measured layer splits run faster.
  if (q.gpus > 1 && rep.decode_tok_s && !q.model.is_moe())
    o << "  note         split over " << q.gpus << " cards: the rule of thumb's " << fixed(rep.decode_efficiency, 2)
      << " runs low against measured layer splits (2x RTX 4090, Llama 3 70B Q4_K_M, llama-bench: 19.22 tok/s, 0.82 of "
         "one card's bandwidth over this formula's 43.14 GB per token at 1,024 tokens of context); `vramsim run --model " << q.model.name << " --gpu "
      << gpu_option(q) << " --quant " << q.quant.name << " --context " << q.context_tokens
      << (q.host ? " --host " + q.host->name : std::string()) << "` simulates the split\n";
  if (!rep.fits) {
    o << "\n  to make it fit, cheapest first" << (rep.engine ? " (judged by " + rep.engine->engine + "'s own accounting)" : "")
      << ":\n";
    auto sizes = [&](const workloads::Suggestion& s) {
      if (s.engine) return "needs " + format_gib(s.engine->need()) + " of " + format_gib(s.engine->usable());
      return "total " + format_gib(s.footprint.total);
    };
    for (const auto& s : rep.suggestions) {
      o << "    " << s.change << ": " << sizes(s) << (s.fits ? ", fits" : ", still too large");
      if (s.fits) o << ", " << fixed(s.decode_tok_s, 1) << " tok/s";
      o << "\n";
    }
    if (rep.smaller_model) {
      o << "    " << rep.smaller_model->change
        << (rep.smaller_model->same_lineage ? " (a smaller model of the same family)"
                                            : " (a smaller model of another family: none of " + q.model.lineage + "'s fits)")
        << ": " << sizes(*rep.smaller_model) << ", fits, " << fixed(rep.smaller_model->decode_tok_s, 1) << " tok/s";
      if (rep.smaller_model->moe) o << " (MoE: the formula's upper bound, as its own `fit` notes)";
      if (rep.smaller_model_faster) o << ": faster than this model offloaded";
      o << "\n";
    }
  }
  return o.str();
}

}  // namespace vramsim::cli
