#include "cli/compare_spec.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <cstdio>

#include "core/config_reader.h"
#include "workloads/gguf_model.h"
#include "hw/gpu.h"
#include "reports/validation.h"
#include "core/units.h"

namespace vramsim::cli {
namespace {

using config::MapReader;
using config::Node;

using units::fixed;

// A speed as users read it: 3 significant figures at most, no trailing ".0" below 10.
std::string speed(double v) { return v >= 100 ? fixed(v, 0) : v >= 10 ? fixed(v, 1) : fixed(v, 2); }

std::string ratio(double a, double b) { return b > 0 ? fixed(a / b, a / b >= 10 ? 0 : 1) + "x" : "-"; }

// A catalogue name of `kind` that must exist: the error names the nearest.
std::string catalogue_name(const Node& node, const std::string& key_path, const config::Catalogue& catalogue,
                           const char* kind, const char* what) {
  if (!node.is_scalar() || node.text().empty()) config::fail(node, key_path, std::string("expected a ") + what + " name");
  const auto names = catalogue.names(kind);
  if (std::find(names.begin(), names.end(), node.text()) == names.end()) {
    std::string hint;
    for (const auto& n : config::nearest_names(node.text(), names)) hint += (hint.empty() ? "" : ", ") + n;
    config::fail(node, key_path, std::string("no ") + what + " \"" + node.text() + "\" in the catalogue" +
                                     (hint.empty() ? "" : " (did you mean " + hint + "?)") + "; see `vramsim list " + kind + "`");
  }
  return node.text();
}

// A model: a catalogue name, or a model file (a catalogue-style YAML, a GGUF file or the first
// part of a split one) relative to the compare file, which must exist. Returns what plan gets.
std::string model_ref(const Node& node, const std::string& key_path, const config::Catalogue& catalogue) {
  const std::string& t = node.is_scalar() ? node.text() : std::string();
  if (!workloads::is_model_file(t)) return catalogue_name(node, key_path, catalogue, "models", "model");
  const std::filesystem::path path = config::resolve_path(node.origin(), t);
  if (!config::path_exists(path)) config::fail(node, key_path, "no such model file \"" + t + "\" (" + path.string() + ")");
  return std::filesystem::absolute(path).lexically_normal().string();
}

hw::GpuSpec card_spec(const config::Catalogue& catalogue, const Node& at, const std::string& name, const std::string& key_path) {
  return hw::decode_gpu(catalogue.resolve("gpus", "GPU", Node::scalar(name, at.origin()), key_path), key_path);
}

CompareOption decode_option(const Node& node, const std::string& key_path, const config::Catalogue& catalogue) {
  if (!node.is_map())
    config::fail(node, key_path, "expected a mapping: {gpus: [CARD, ...], name: ..., price: ... | price_per_hour: ..., host: ...}");
  MapReader r(node, key_path);
  CompareOption o;
  const Node& gpus = r.any("gpus");
  if (gpus.is_scalar()) {
    o.gpus.push_back(catalogue_name(gpus, key_path + ".gpus", catalogue, "gpus", "GPU"));
  } else if (gpus.is_sequence() && !gpus.items().empty()) {
    for (std::size_t i = 0; i < gpus.items().size(); ++i)
      o.gpus.push_back(catalogue_name(gpus.items()[i], key_path + ".gpus[" + std::to_string(i) + "]", catalogue, "gpus", "GPU"));
  } else {
    config::fail(gpus, key_path + ".gpus", "expected a card or a list of cards");
  }
  std::string display;  // "2x RTX 3090", "RTX 3090 + RTX 5090"
  std::optional<hw::GpuSpec> front;
  for (const auto& card : o.gpus) {
    hw::GpuSpec spec = card_spec(catalogue, gpus, card, key_path + ".gpus");
    if (spec.unified() && o.gpus.size() > 1)
      config::fail(gpus, key_path + ".gpus", card + " is a unified-memory part: it cannot be combined with other cards");
    display += (display.empty() ? "" : " + ") + spec.display_name;
    if (!front) front = std::move(spec);
  }
  const hw::GpuSpec& first = *front;
  o.unified = first.unified();
  if (o.identical()) display = (o.gpus.size() > 1 ? std::to_string(o.gpus.size()) + "x " : "") + first.display_name;
  o.name = r.optional_string("name").value_or(display);
  if (const Node* h = r.optional_any("host")) {
    if (first.unified())
      r.fail_at("host", o.gpus.front() + " is a unified-memory part: its host is its own CPU (" + first.soc_host + "); leave host out");
    o.host = catalogue_name(*h, key_path + ".host", catalogue, "hosts", "host");
  }
  o.price = r.optional_number("price");
  o.price_per_hour = r.optional_number("price_per_hour");
  if (o.price && o.price_per_hour)
    r.fail_at("price_per_hour", "an option is bought (price) or rented (price_per_hour), not both");
  if (o.price_per_hour && !o.host && !first.unified())
    r.fail_at("price_per_hour", "a rented card runs in the provider's server: give this option's own host (e.g. epyc-9554-ddr5; "
                                "`vramsim list hosts`), not the file's");
  r.finish();
  return o;
}

// Generated tokens per second that a cost is spread over: the aggregate of spec.users clients
// when > 1, else one request's decode.
double serving_rate(const CompareSpec& spec, const CompareCell& c) { return spec.users > 1 ? c.users_tok_s.value_or(0) : c.decode_tok_s; }

// A count as words: "340 million", "1.2 billion".
std::string count_words(double n) {
  if (n >= 1e9) return speed(n / 1e9) + " billion";
  if (n >= 1e6) return speed(n / 1e6) + " million";
  return fixed(n, 0);
}

// A sum of money: two decimals below 10, one below 100, none from 100.
std::string money(double v) { return v >= 100 ? fixed(v, 0) : v >= 10 ? fixed(v, 1) : fixed(v, 2); }

std::string hours_words(double h) {
  if (h >= 48) return fixed(h / 24, h >= 240 ? 0 : 1) + " days";
  return fixed(h, h >= 10 ? 0 : 1) + " hours";
}

}  // namespace

CompareSpec decode_compare_spec(const Node& root, const config::Catalogue& catalogue) {
  if (!root.is_map()) config::fail(root, "", "expected a mapping (name, models, options, ...)");
  MapReader r(root, "");
  CompareSpec s;
  s.name = r.string("name");
  s.question = r.optional_string("question").value_or("");
  const Node& models = r.any("models");
  if (models.is_scalar()) {
    s.model_refs.push_back(model_ref(models, "models", catalogue));
    s.models.push_back(models.text());
  } else if (models.is_sequence() && !models.items().empty()) {
    for (std::size_t i = 0; i < models.items().size(); ++i) {
      s.model_refs.push_back(model_ref(models.items()[i], "models[" + std::to_string(i) + "]", catalogue));
      s.models.push_back(models.items()[i].text());
    }
  } else {
    config::fail(models, "models", "expected a model or a list of models");
  }
  if (const Node* h = r.optional_any("host")) s.host = catalogue_name(*h, "host", catalogue, "hosts", "host");
  s.engine = r.optional_string("engine").value_or("llama.cpp");
  if (s.engine != "llama.cpp" && s.engine != "vllm")
    r.fail_at("engine", "expected llama.cpp or vllm (the engine every option runs, its flags planned), got \"" + s.engine + "\"");
  s.currency = r.optional_string("currency").value_or("USD");
  s.context = r.optional_integer("context", 1024, std::int64_t{1} << 22).value_or(4096);
  s.users = static_cast<int>(r.optional_integer("users", 1, 4096).value_or(1));
  s.energy_price = r.optional_number("energy_price");
  if (s.energy_price && *s.energy_price > 100)
    r.fail_at("energy_price", "expected the price of one kWh in " + s.currency + " (at most 100), got " + fixed(*s.energy_price, 2));
  const Node& options = r.any("options");
  if (!options.is_sequence() || options.items().size() < 2)
    config::fail(options, "options", "expected a list of at least two options to compare");
  for (std::size_t i = 0; i < options.items().size(); ++i) {
    const std::string path = "options[" + std::to_string(i) + "]";
    CompareOption o = decode_option(options.items()[i], path, catalogue);
    const std::string& card = o.gpus.front();
    if (!o.unified && !o.host && !s.host)
      config::fail(options.items()[i], path + ".host", card + " is a discrete card: give its host (or a top-level host)");
    if (!o.unified && !o.host) o.host = s.host;
    if (s.engine == "vllm" && o.unified)
      config::fail(options.items()[i], path + ".gpus", card + " is a unified-memory part: vLLM does not run on it (engine: llama.cpp)");
    s.options.push_back(std::move(o));
  }
  r.finish();
  return s;
}

std::string CompareOption::gpu_flag() const {
  std::string flag;
  for (const auto& g : gpus) flag += (flag.empty() ? "" : ",") + g;
  return flag;
}
std::string CompareOption::label() const { return reports::cards_label(gpus); }
bool CompareOption::identical() const {
  return std::all_of(gpus.begin(), gpus.end(), [&](const std::string& g) { return g == gpus.front(); });
}

std::optional<TokenCost> token_cost(const CompareSpec& spec, const CompareOption& o, const CompareCell& c) {
  if (!c.ran) return std::nullopt;
  if (o.price_per_hour) {
    const double rate = serving_rate(spec, c);  // tokens per second
    if (rate <= 0) return std::nullopt;
    return TokenCost{*o.price_per_hour / (rate * 3600.0) * 1e6, true};
  }
  if (spec.energy_price && c.j_per_token) return TokenCost{*c.j_per_token * 1e6 / 3.6e6 * *spec.energy_price, false};
  return std::nullopt;
}

std::optional<double> break_even_tokens(const CompareSpec& spec, const CompareOption& o, const CompareCell& c,
                                        double rented_per_million) {
  if (!o.price || !c.ran) return std::nullopt;
  const auto own = token_cost(spec, o, c);
  const double own_per_token = own ? own->per_million / 1e6 : 0.0;
  const double saved_per_token = rented_per_million / 1e6 - own_per_token;
  if (saved_per_token <= 0) return std::nullopt;
  return *o.price / saved_per_token;
}

namespace {
// What a million tokens cost (token_cost), in words: the cheapest rented option and, when a
// bought one pays back against it, the one that does soonest and after how much work; else the
// cheapest electricity among the bought ones. "" when no option has a cost.
std::string cost_sentences(const CompareSpec& spec, const CompareResults::value_type& cells, const std::vector<std::size_t>& ran) {
  std::string p;
  const std::string users = spec.users > 1 ? " for " + std::to_string(spec.users) + " users" : "";
  std::optional<std::size_t> rent, power;
  std::optional<TokenCost> rent_cost, power_cost;
  for (std::size_t o : ran) {
    const auto t = token_cost(spec, spec.options[o], cells[o]);
    if (!t) continue;
    std::optional<std::size_t>& best = t->rented ? rent : power;
    std::optional<TokenCost>& cost = t->rented ? rent_cost : power_cost;
    if (!cost || t->per_million < cost->per_million) {
      best = o;
      cost = t;
    }
  }
  if (power)
    p += " At " + money(*spec.energy_price) + " " + spec.currency + " a kWh, the " + spec.options[*power].name +
         "'s electricity is the cheapest of the bought options: " + money(power_cost->per_million) + " " + spec.currency +
         " per million tokens" + users + ".";
  if (!rent) return p;
  const CompareOption& r = spec.options[*rent];
  p += " Rented, the " + r.name + " costs the least: " + money(rent_cost->per_million) + " " + spec.currency + " per million tokens (" +
       money(*r.price_per_hour) + " " + spec.currency + " an hour at " + speed(serving_rate(spec, cells[*rent])) + " tok/s" + users + ").";
  std::optional<std::size_t> soonest;
  double tokens = 0;
  for (std::size_t o : ran)
    if (auto t = break_even_tokens(spec, spec.options[o], cells[o], rent_cost->per_million); t && (!soonest || *t < tokens)) {
      soonest = o;
      tokens = *t;
    }
  if (soonest) {
    const CompareCell& c = cells[*soonest];
    p += " Bought, the " + spec.options[*soonest].name + " (" + money(*spec.options[*soonest].price) + " " + spec.currency +
         ") costs less than that after " + count_words(tokens) + " tokens, " + hours_words(tokens / serving_rate(spec, c) / 3600) +
         " of generating at " + speed(serving_rate(spec, c)) + " tok/s" +
         (spec.energy_price ? " (its electricity counted)." : " (its electricity not counted: give energy_price).");
  }
  return p;
}
}  // namespace

std::vector<std::string> compare_conclusion(const CompareSpec& spec, const CompareResults& results) {
  std::vector<std::string> out;
  for (std::size_t m = 0; m < spec.models.size(); ++m) {
    const auto& cells = results[m];
    std::vector<std::size_t> ran;
    for (std::size_t o = 0; o < cells.size(); ++o)
      if (cells[o].ran) ran.push_back(o);
    std::string p = "For " + spec.models[m] + " at 1 user";
    if (ran.empty()) {
      p += ", no option runs it.";
      for (std::size_t o = 0; o < cells.size(); ++o) p += " The " + spec.options[o].name + ": " + cells[o].why_not + ".";
      out.push_back(p);
      continue;
    }
    std::stable_sort(ran.begin(), ran.end(), [&](std::size_t a, std::size_t b) { return cells[a].decode_tok_s > cells[b].decode_tok_s; });
    const CompareCell& best = cells[ran.front()];
    // The weights format of each, when the options do not all run the same one.
    const bool one_quant = std::all_of(ran.begin(), ran.end(), [&](std::size_t o) { return cells[o].quant == best.quant; });
    auto at = [&](std::size_t o) {
      return one_quant ? std::string() : " in " + cells[o].quant + (cells[o].lower_quality ? " (below Q4_K_M, lower in quality)" : "");
    };
    p += ", the " + spec.options[ran.front()].name + " decodes fastest: " + speed(best.decode_tok_s) + " tok/s" + at(ran.front());
    for (std::size_t k = 1; k < ran.size(); ++k)
      p += std::string(k == 1 ? ", " : "; ") + ratio(best.decode_tok_s, cells[ran[k]].decode_tok_s) + " the " +
           spec.options[ran[k]].name + " at " + speed(cells[ran[k]].decode_tok_s) + at(ran[k]);
    p += ".";
    if (one_quant) p += " All run " + best.quant + (best.lower_quality ? " (below Q4_K_M, lower in quality)" : "") + ".";
    std::string off;
    for (std::size_t o : ran)
      if (!cells[o].all_on_gpu) off += (off.empty() ? "" : ", ") + spec.options[o].name + " (" + cells[o].placement + ")";
    if (!off.empty()) p += " Not all on the GPUs: " + off + ".";
    for (std::size_t o = 0; o < cells.size(); ++o)
      if (!cells[o].ran) p += " The " + spec.options[o].name + " does not run it: " + cells[o].why_not + ".";
    // Prompt processing, when another option leads it.
    std::size_t fastest_prefill = ran.front();
    for (std::size_t o : ran)
      if (cells[o].prefill_tok_s > cells[fastest_prefill].prefill_tok_s) fastest_prefill = o;
    if (fastest_prefill != ran.front())
      p += " The " + spec.options[fastest_prefill].name + " processes prompts fastest (" + speed(cells[fastest_prefill].prefill_tok_s) +
           " tok/s against " + speed(best.prefill_tok_s) + ").";
    if (spec.users > 1) {
      std::size_t top = ran.front();
      for (std::size_t o : ran)
        if (cells[o].users_tok_s.value_or(0) > cells[top].users_tok_s.value_or(0)) top = o;
      if (cells[top].users_tok_s)
        p += " At " + std::to_string(spec.users) + " users the " + spec.options[top].name + " serves the most: " +
             speed(*cells[top].users_tok_s) + " tok/s in all.";
    }
    // Energy per token, where each option's figure is the machine's (boards + host CPU, or an
    // Apple part's whole-machine figures): the least.
    std::optional<std::size_t> frugal;
    for (std::size_t o : ran)
      if (cells[o].j_per_token && cells[o].j_with_host && (!frugal || *cells[o].j_per_token < *cells[*frugal].j_per_token)) frugal = o;
    if (frugal && std::count_if(ran.begin(), ran.end(), [&](std::size_t o) { return cells[o].j_with_host; }) > 1)
      p += " The " + spec.options[*frugal].name + " uses the least energy: " + fixed(*cells[*frugal].j_per_token, 2) + " J a token (" +
           (std::any_of(spec.options.begin(), spec.options.end(), [](const CompareOption& o) { return !o.host; })
                ? "the GPU boards with the host's CPU; an Apple part's whole machine)."
                : "the GPU boards with the host's CPU).");
    // Decode per unit of price, over the options that have one.
    std::optional<std::size_t> value;
    auto per_price = [&](std::size_t o) { return cells[o].decode_tok_s / *spec.options[o].price * 1000; };
    for (std::size_t o : ran)
      if (spec.options[o].price && (!value || per_price(o) > per_price(*value))) value = o;
    if (value && std::count_if(ran.begin(), ran.end(), [&](std::size_t o) { return spec.options[o].price.has_value(); }) > 1)
      p += " Per " + spec.currency + " spent, the " + spec.options[*value].name + " gives the most decode: " + fixed(per_price(*value), 1) +
           " tok/s per 1,000 " + spec.currency + ".";
    p += cost_sentences(spec, cells, ran);
    // How far the tool has been off on these cards (the public corpus's prediction rows).
    std::string bars, none;
    for (std::size_t o : ran) {
      if (!spec.error_bars) break;
      if (cells[o].decode_error)
        bars += (bars.empty() ? "" : ", ") + spec.options[o].name + " " + fixed(100 * *cells[o].decode_error, 0) + "% (" +
                std::to_string(cells[o].decode_rows) + (cells[o].decode_rows == 1 ? " row" : " rows") + ")";
      else
        none += (none.empty() ? "" : ", ") + spec.options[o].name;
    }
    if (!bars.empty()) p += " The tool's median error on measured rows of these cards (decode; several cards: their multi-card rows): " + bars + ".";
    if (!none.empty()) p += " No measured row checks the " + none + ".";
    out.push_back(p);
  }
  return out;
}

}  // namespace vramsim::cli
