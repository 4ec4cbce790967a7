// `vramsim fit`: will this model fit on this card, and how fast will it decode?
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/fit_output.h"
#include "cli/quick_scenario.h"
#include "core/config_reader.h"
#include "sim/vram_plan.h"
#include "workloads/fit.h"
#include "workloads/gguf_model.h"

namespace vramsim::cli {
namespace {

const char* kHelp = R"(usage: vramsim fit --model M --gpu G [options]

Will the model fit on the card, and how fast will it decode? (the memory-budget model,
docs/memory-model.md)

  --model M          catalogue name (vramsim list models) or a model YAML file
  --gpu G            catalogue name (vramsim list gpus) or a GPU YAML file
  --quant Q          weights format (default: the model's native format)
  --context N        context window in tokens (default 4096, as run and plan; capped at the model's maximum)
  --kv-type T        KV-cache element type for keys and values (default f16)
  --kv-type-k T      ... for keys only;  --kv-type-v T  ... for values only
  --concurrency N    concurrent sequences, each with its own KV cache (default 1)
  --gpus N           identical cards, model split by pipeline parallelism (default 1); a
                     mixed machine is a comma list in --gpu (rtx-3090,rtx-5090, device 0 first)
  --host H           host (vramsim list hosts): offload what does not fit to system RAM
  --set key=value    override any field, as run and plan spell it: hardware.gpu.*, hardware.host.*,
                     model.* (e.g. --set hardware.gpu.memory.capacity=48GiB; gpu.* and host.* are
                     accepted as aliases)
  --configs DIR      catalogue directory (default: the installed or source configs/)
  --json             print one JSON object (docs/json-schema.md)
)";

config::Node named(const std::string& value, const std::string& option) {
  return config::Node::scalar(value, config::Origin{option + " " + value, 0, 0});
}

std::string unknown_name(const std::string& what, const std::string& name, const std::vector<std::string>& known) {
  std::string message = "unknown " + what + " \"" + name + "\"";
  auto near = config::nearest_names(name, known);
  if (!near.empty()) {
    message += " (did you mean ";
    for (std::size_t i = 0; i < near.size(); ++i) message += (i ? ", " : "") + near[i];
    message += "?)";
  }
  message += "; known: ";
  for (std::size_t i = 0; i < known.size(); ++i) message += (i ? " " : "") + known[i];
  return message;
}

// `formats` gains the model file's own formats (a GGUF file's tensor types).
workloads::FitQuery build_query(const Args& args, const config::Catalogue& catalogue, workloads::FormatTables& formats) {
  // The scenario's own layout (model, hardware.gpu, hardware.host), so that a --set path is
  // the one run and plan take (gpu.* and host.* are aliases: canonical_set_path).
  // --gpu A,B: a mixed machine, each card decoded from the catalogue; a --set on hardware.gpu
  // would not say which card it means.
  const std::vector<std::string> cards = card_list(args.require("--gpu"));
  const bool mixed = std::any_of(cards.begin(), cards.end(), [&](const std::string& c) { return c != cards.front(); });
  if (cards.size() > 1 && args.get("--gpus"))
    throw UsageError("--gpus: --gpu " + args.require("--gpu") + " already names each card (a list names every card once)");
  if (mixed)
    for (const auto& a : args.all("--set"))
      if (canonical_set_path(a).starts_with("hardware.gpu."))
        throw UsageError("--set " + a + ": --gpu " + args.require("--gpu") + " names several cards; a scenario file "
                         "(hardware.gpu: [{preset: ..., ...}, ...]) sets one card's keys");
  config::Node root = config::Node::map(config::Origin{"command line", 0, 0});
  root.set("model", named(args.require("--model"), "--model"));
  config::Node hardware = config::Node::map(config::Origin{"command line", 0, 0});
  hardware.set("gpu", named(cards.front(), "--gpu"));
  if (auto host = args.get("--host")) hardware.set("host", named(*host, "--host"));
  root.set("hardware", std::move(hardware));
  apply_overrides(root, args.all("--set"));
  config::MapReader r(root, "");
  workloads::FitQuery q;
  {
    const config::Node model = workloads::resolve_model(catalogue, r.any("model"), "model");
    q.model = workloads::decode_model(model, "model");
    q.model_ref = r.any("model").is_scalar() ? r.any("model").text() : "";
    formats = formats.with_file_formats(q.model.file_formats, model, "model");
    workloads::check_native_format(model, "model", q.model.native_format, formats);
  }
  {
    config::MapReader hw_reader = r.map("hardware");
    q.gpu = hw::decode_gpu(catalogue.resolve("gpus", "GPU", hw_reader.any("gpu"), "hardware.gpu"), "hardware.gpu");
    if (const config::Node* host = hw_reader.optional_any("host"))
      q.host = hw::decode_host(catalogue.resolve("hosts", "host", *host, "hardware.host"), "hardware.host");
    hw_reader.finish();
  }
  r.finish();

  const std::string quant = args.get("--quant").value_or(q.model.native_format);
  const workloads::WeightFormat* w = formats.weight(quant);
  if (!w) throw UsageError("--quant: " + unknown_name("weights format", quant, formats.weight_names()));
  q.quant = *w;
  // A file whose routed experts have their own format (a GGUF file's *_exps tensors): the
  // calculator takes one format for every weight, so give it the file's whole average.
  if (!args.get("--quant") && !q.model.native_expert_format.empty() && q.model.moe) {
    const double routed = q.model.moe->expert_params * q.model.moe->experts * q.model.moe->layers;
    const double experts_bits = formats.weight(q.model.native_expert_format)->bits_per_weight;
    q.quant.bits_per_weight = (w->bits_per_weight * (q.model.params_total - routed) + experts_bits * routed) / q.model.params_total;
  }

  const std::string kv_both = args.get("--kv-type").value_or("f16");
  auto kv = [&](const std::string& option) {
    const std::string name = args.get(option).value_or(kv_both);
    const workloads::KvType* t = formats.kv(name);
    if (!t) throw UsageError(option + ": " + unknown_name("KV-cache type", name, formats.kv_names()));
    return *t;
  };
  q.kv_k = kv(args.get("--kv-type-k") ? "--kv-type-k" : "--kv-type");
  q.kv_v = kv(args.get("--kv-type-v") ? "--kv-type-v" : "--kv-type");
  q.kv_per_side = args.get("--kv-type-k") || args.get("--kv-type-v");
  q.context_tokens = args.integer("--context", std::min(kDefaultContext, q.model.max_context), 1, std::int64_t{1} << 40);
  q.concurrency = static_cast<int>(args.integer("--concurrency", 1, 1, 1 << 20));
  q.gpus = cards.size() > 1 ? static_cast<int>(cards.size()) : static_cast<int>(args.integer("--gpus", 1, 1, 1024));
  if (mixed)
    for (const auto& c : cards)
      q.mixed.push_back(hw::decode_gpu(catalogue.resolve("gpus", "GPU", named(c, "--gpu"), "hardware.gpu"), "hardware.gpu"));
  return q;
}

}  // namespace

// The engine's accounting (workloads::EngineAccounting) of fit's question: the scenario
// `vramsim run --model M --gpu G --gpus N --host H` builds (llama.cpp, with the same --set
// hardware.* and, for the asked model, model.* assignments), every layer and the LM head on the
// GPUs, judged by engine.vram_rule: engine (sim::resident_shares), the rule run and plan place
// by. Each model's scenario is built once; a request then only changes its formats' bits, KV
// bytes per element, context and sequences. Empty for a unified-memory part (run and plan judge
// its fit by the calculator: the OS keeps the rest of its memory); an accounting that cannot be built is nullopt, the reason in `why`.
workloads::EngineAccounting engine_accounting(const Args& args, const workloads::FitQuery& q, std::string& why) {
  if (q.gpu.unified()) return {};
  auto cache = std::make_shared<std::map<std::string, std::optional<sim::Scenario>>>();
  return [&args, &why, q, cache](const workloads::ModelSpec& model, const workloads::BudgetRequest& r)
             -> std::optional<workloads::EngineAccount> {
    const bool asked = model.name == q.model.name;
    auto [it, inserted] = cache->try_emplace(model.name);
    if (inserted) {
      // The same machine for run: a mixed one as its list, identical cards as one card and a count.
      std::vector<std::string> argv = {"--model", asked ? args.require("--model") : model.name, "--gpu",
                                       q.mixed.empty() ? q.gpu.name : args.require("--gpu"),
                                       "--context", std::to_string(std::min(kDefaultContext, model.max_context)),
                                       "--set", "engine.vram_rule=engine"};
      if (q.mixed.empty()) argv.insert(argv.end(), {"--gpus", std::to_string(q.gpus)});
      if (asked) argv.insert(argv.end(), {"--quant", q.quant.name});
      if (auto h = args.get("--host")) argv.insert(argv.end(), {"--host", *h});
      if (auto c = args.get("--configs")) argv.insert(argv.end(), {"--configs", *c});
      for (const auto& a : args.all("--set"))
        if (const std::string set = canonical_set_path(a); set.starts_with("hardware.") || (asked && set.starts_with("model.")))
          argv.insert(argv.end(), {"--set", set});
      OptionSpec spec;
      spec.with_value = {"--model", "--gpu", "--gpus", "--quant", "--context", "--host", "--configs"};
      spec.repeated = {"--set"};
      try {
        it->second = named_scenario(Args(argv, spec), "fit", false);
      } catch (const std::exception& e) {
        if (asked) why = e.what();
      }
    }
    if (!it->second) return std::nullopt;
    sim::Scenario s = *it->second;
    s.engine.gpu_layers = s.model.layers;  // every layer and the LM head (-ngl 99)
    s.engine.cpu_moe_layers = 0;
    s.engine.head_on_cpu = false;
    s.engine.layer_split.clear();
    s.engine.other_format.bits_per_weight = s.engine.expert_format.bits_per_weight = r.bits_per_weight;
    // The engine keeps one KV type: K and V apart are their mean for heads (K + V bytes per
    // element), the K type alone for an MLA latent cache, the same bytes either way.
    s.engine.kv.bytes_per_element = s.model.attention.layout == workloads::AttentionLayout::Mla
                                        ? r.kv_bytes_per_element_k
                                        : (r.kv_bytes_per_element_k + r.kv_bytes_per_element_v) / 2.0;
    s.engine.context = r.context_tokens;
    s.engine.parallel = r.concurrent_sequences;
    const auto dealt = sim::resident_shares(s);
    if (!dealt) {
      if (asked) why = dealt.error().message;
      return std::nullopt;
    }
    const std::vector<workloads::CardShare>& shares = *dealt;
    workloads::EngineAccount a;
    a.engine = s.engine.preset.empty() ? "llama.cpp" : s.engine.preset;
    const double kv_all = workloads::kv_cache_bytes(s.model, s.engine.context, s.engine.kv.bytes_per_element,
                                                    s.engine.kv.bytes_per_element, s.engine.parallel);
    for (const auto& c : shares) {
      workloads::EngineCard e;
      e.first_layer = c.first_layer;
      e.end_layer = c.end_layer;
      e.runtime = s.engine.physics.runtime_vram;
      e.kv = kv_all * (c.end_layer - c.first_layer) / s.model.layers;
      e.weights = c.need - e.runtime - e.kv;
      e.usable = c.usable;
      a.cards.push_back(e);
    }
    return a;
  };
}

int fit_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--model", "--gpu", "--quant", "--context", "--kv-type", "--kv-type-k", "--kv-type-v",
                     "--concurrency", "--gpus", "--host", "--configs"};
  spec.flags = {"--json", "--help"};
  spec.repeated = {"--set"};
  Args args(argv, spec);
  if (args.answered_help(kHelp)) return 0;
  if (!args.positional().empty()) throw UsageError("fit takes no positional arguments, got \"" + args.positional()[0] + "\"");
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  workloads::FormatTables formats = workloads::FormatTables::load(catalogue);
  workloads::FitQuery query = build_query(args, catalogue, formats);
  if (const std::string why = workloads::requantized_native_warning(query.quant, query.model.name, *formats.weight(query.model.native_format));
      !why.empty())
    print_warnings("fit", {why});
  std::string engine_why;
  const workloads::EngineAccounting engine = engine_accounting(args, query, engine_why);
  workloads::FitReport report;
  try {
    report = workloads::analyse_fit(query, formats, all_models(catalogue), engine);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (engine && !report.engine) std::cerr << "vramsim fit: warning: no engine accounting (" << engine_why << "): the calculator decides\n";
  std::cout << (args.flag("--json") ? to_json(report) : to_table(report));
  return 0;
}

}  // namespace vramsim::cli
