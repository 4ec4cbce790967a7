#include "cli/compare_spec.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <cstdio>

#include "core/config_reader.h"
#include "workloads/gguf_model.h"
#include "hw/gpu.h"

namespace vramsim::cli {
namespace {

using config::MapReader;
using config::Node;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

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
  if (!node.is_map()) config::fail(node, key_path, "expected a mapping: {gpus: [CARD, ...], name: ..., price: ..., host: ...}");
  MapReader r(node, key_path);
  CompareOption o;
  const Node& gpus = r.any("gpus");
  std::vector<std::string> cards;
  if (gpus.is_scalar()) {
    cards.push_back(catalogue_name(gpus, key_path + ".gpus", catalogue, "gpus", "GPU"));
  } else if (gpus.is_sequence() && !gpus.items().empty()) {
    for (std::size_t i = 0; i < gpus.items().size(); ++i)
      cards.push_back(catalogue_name(gpus.items()[i], key_path + ".gpus[" + std::to_string(i) + "]", catalogue, "gpus", "GPU"));
  } else {
    config::fail(gpus, key_path + ".gpus", "expected a card or a list of cards");
  }
  if (std::any_of(cards.begin(), cards.end(), [&](const std::string& c) { return c != cards.front(); }))
    config::fail(gpus, key_path + ".gpus", "a mixed list of cards is not compared yet: `plan` searches identical cards "
                                           "(a scenario file with hardware.cards runs a mixed machine: vramsim run)");
  o.gpu = cards.front();
  o.count = static_cast<int>(cards.size());
  const hw::GpuSpec spec = card_spec(catalogue, gpus, o.gpu, key_path + ".gpus");
  if (spec.unified() && o.count > 1) config::fail(gpus, key_path + ".gpus", o.gpu + " is a unified-memory part: one of it");
  o.name = r.optional_string("name").value_or((o.count > 1 ? std::to_string(o.count) + "x " : "") + spec.display_name);
  if (const Node* h = r.optional_any("host")) {
    if (spec.unified())
      r.fail_at("host", o.gpu + " is a unified-memory part: its host is its own CPU (" + spec.soc_host + "); leave host out");
    o.host = catalogue_name(*h, key_path + ".host", catalogue, "hosts", "host");
  }
  o.price = r.optional_number("price");
  r.finish();
  return o;
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
  const Node& options = r.any("options");
  if (!options.is_sequence() || options.items().size() < 2)
    config::fail(options, "options", "expected a list of at least two options to compare");
  for (std::size_t i = 0; i < options.items().size(); ++i) {
    const std::string path = "options[" + std::to_string(i) + "]";
    CompareOption o = decode_option(options.items()[i], path, catalogue);
    const hw::GpuSpec spec = card_spec(catalogue, options.items()[i], o.gpu, path + ".gpus");
    if (!spec.unified() && !o.host && !s.host)
      config::fail(options.items()[i], path + ".host", o.gpu + " is a discrete card: give its host (or a top-level host)");
    if (!spec.unified() && !o.host) o.host = s.host;
    if (s.engine == "vllm" && spec.unified())
      config::fail(options.items()[i], path + ".gpus", o.gpu + " is a unified-memory part: vLLM does not run on it (engine: llama.cpp)");
    s.options.push_back(std::move(o));
  }
  r.finish();
  return s;
}

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
