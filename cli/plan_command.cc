// `vramsim plan --model M --gpu G --host H [...]`: searches an engine's knobs by simulation and
// prints the best configurations with the flags to type. The candidates: weights format (the
// given one, else a few llama.cpp levels), KV-cache type (f16, q8_0), and for each, with
// llama.cpp, the placements that fit (quick_scenario.h: every layer on the GPU; every layer on
// the GPU with the fewest layers' experts on the CPU; the most layers on the GPU), or, with an
// engine that has an expert cache (expert-cache, hybrid-cpu-experts), the cache / hot-set
// sizes 0, 1/4, 1/2, 3/4 and all of what fits, or, with vLLM (every weight on the GPU, a paged
// KV pool), the weights (the model's own dtype or FP8) and the KV dtype (auto or fp8) that fit.
// Each candidate runs as its own `vramsim run` process (one SimGrid engine per process), in a
// TBB pool.
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/quick_scenario.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "sim/vram_plan.h"

namespace vramsim::cli {
namespace {

const char* kHelp = R"(usage: vramsim plan --model M --gpu G --host H [options]

Searches an engine's knobs by simulation and prints the best configurations with the flags to
type and their predicted speed. llama.cpp (the default): GPU layers, CPU-MoE layers, weights
format, KV-cache type. expert-cache and hybrid-cpu-experts: the expert cache's (hot set's)
size, weights format, KV-cache type. vllm: weights (the model's dtype or FP8) and KV-cache
dtype (auto or fp8), everything on the GPU.

  --goal G           decode (default: one request's decode tok/s, p50) | prefill | ttft |
                     throughput (all clients' generated tokens per second)
  --clients N        concurrent closed-loop clients (default 1); each runs 4 requests of
                     512 + 128 tokens
  --context N        context window in tokens (default 4096); each result also says the
                     largest context its placement still fits
  --engine E         llama.cpp (default) | expert-cache | hybrid-cpu-experts | vllm
  --quant Q          only this weights format (default: Q4_K_M, Q6_K, Q8_0, or the model's
                     native-only format; vllm: the model's dtype and FP8)
  --gpus N --link L  as for `vramsim run`
  --set KEY=VALUE    a fixed override for every candidate (repeatable), e.g.
                     --set hardware.host.expert_memory=interleave
  --top N            how many to print (default 5)
  -j N, --jobs N     parallel simulations (default: the cores)
  --json             print one JSON object: goal, candidates, best[{flags, decode_tok_s,
                     prefill_tok_s, ttft_s, throughput_tok_s, fits}]
  --configs DIR      catalogue directory
)";

struct Candidate {
  std::int64_t max_context = 0;  // the largest context this placement still fits (tokens)
  std::string quant, kv;
  Placement placement;
  std::optional<std::int64_t> hot_slots;  // engines with an expert cache: its size in slots
  std::vector<std::string> sets;          // the overrides its `vramsim run` gets (key=value)
  std::string flags;
  double decode = 0, prefill = 0, ttft = 0, throughput = 0;
  std::string error;
};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A figure of run's JSON output (`section.key`, or `section` alone). Throws std::runtime_error
// when it is missing or null (no request completed).
double number_at(const config::Node& root, const char* section, const char* key = nullptr) {
  const config::Node* s = root.find(section);
  const config::Node* v = s && key ? s->find(key) : s;
  const std::string name = std::string(section) + (key ? std::string(".") + key : std::string());
  if (!v || !v->is_scalar()) throw std::runtime_error("no " + name + " in run's output");
  try {
    return std::stod(v->text());
  } catch (const std::logic_error&) {  // null: nothing to measure
    throw std::runtime_error(name + " is " + v->text() + ": no request completed");
  }
}

// The cache (hot-set) sizes worth simulating: 0, 1/4, 1/2, 3/4 and all of the slots that fit
// (a model without routing statistics has no hot set to choose: 0 only).
std::vector<std::int64_t> cache_sizes(sim::Scenario s) {
  if (!s.model.moe || !s.model.moe->routing) return {0};
  s.engine.cache_slots.reset();
  s.engine.cache_size_bytes.reset();
  if (!fits(s)) return {};
  const std::int64_t most = sim::plan_cards(s).front().slots;
  std::vector<std::int64_t> out;
  for (int quarter = 0; quarter <= 4; ++quarter) {
    const std::int64_t n = most * quarter / 4;
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  return out;
}

// The largest context (tokens, up to the model's maximum) with which `p` (or a cache of
// `slots`) still fits: a bisection over the memory plan (arithmetic, no simulation).
std::int64_t max_context(sim::Scenario s, const Placement& p, std::optional<std::int64_t> slots = std::nullopt) {
  s.engine.gpu_layers = p.gpu_layers;
  s.engine.cpu_moe_layers = p.cpu_moe_layers;
  if (slots) {
    s.engine.cache_slots = *slots;
    s.engine.cache_size_bytes.reset();
  }
  auto fits_with = [&](std::int64_t context) {
    s.engine.context = context;
    return fits(s);
  };
  std::int64_t lo = s.engine.context, hi = s.model.max_context;
  if (fits_with(hi)) return hi;
  while (hi - lo > 256) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits_with(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

int plan_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--model", "--gpu", "--gpus", "--host", "--link", "--quant", "--context", "--goal", "--top",
                     "-j",      "--jobs", "--configs", "--engine", "--clients"};
  spec.flags = {"--json", "--help"};
  spec.repeated = {"--set"};
  Args args(argv, spec);
  if (args.answered_help(kHelp)) return 0;
  if (!args.positional().empty()) throw UsageError("unexpected argument \"" + args.positional()[0] + "\" (see --help)");
  args.require("--host");
  const std::string goal = args.get("--goal").value_or("decode");
  if (goal != "decode" && goal != "prefill" && goal != "ttft" && goal != "throughput")
    throw UsageError("--goal: expected decode, prefill, ttft or throughput, got \"" + goal + "\"");
  const auto top = static_cast<std::size_t>(args.integer("--top", 5, 1, 1000));
  // Each candidate is timed on quick_scenario.h's requests: the window must hold one.
  if (args.integer("--context", kDefaultContext, 1, std::int64_t{1} << 32) < kPromptTokens + kGenTokens)
    throw UsageError("--context: at least " + std::to_string(kPromptTokens + kGenTokens) + " tokens, the " +
                     std::to_string(kPromptTokens) + "-token prompt and " + std::to_string(kGenTokens) +
                     " generated tokens each candidate is timed on");

  // The formats to try.
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  const sim::Scenario named = named_scenario(args);  // validates the names
  const bool paged = named.engine.kv_pool.has_value();
  std::vector<std::string> quants;
  if (auto q = args.get("--quant")) {
    quants = {*q};
  } else {
    const std::string& native = named.model.native_format;
    if (paged)  // vLLM: the checkpoint's dtype, or its online FP8 quantization
      quants = native == "BF16" || native == "F16" ? std::vector<std::string>{native, "FP8"} : std::vector<std::string>{native};
    else
      quants = native == "MXFP4" ? std::vector<std::string>{native} : std::vector<std::string>{"Q4_K_M", "Q6_K", "Q8_0"};
  }
  const std::int64_t clients = args.integer("--clients", 1, 1, 4096);
  const std::vector<std::string> workload = {"workload.clients=" + std::to_string(clients),
                                             "workload.requests=" + std::to_string(4 * clients)};
  const std::vector<std::string> kv_types = paged ? std::vector<std::string>{"bf16", "fp8"}
                                                  : std::vector<std::string>{"f16", "q8_0"};
  // The candidates that fit, found without simulating (the memory plan is arithmetic).
  std::vector<Candidate> candidates;
  for (const auto& quant : quants)
    for (const std::string& kv : kv_types) {
      // The scenario `run` would build for this candidate.
      const std::string kv_set = "engine.kv_type=" + kv;
      std::vector<std::string> a = {"--quant", quant, "--set", kv_set};
      for (const auto& set : args.all("--set")) a.insert(a.end(), {"--set", set});
      for (const char* key : {"--model", "--gpu", "--gpus", "--host", "--link", "--context", "--configs", "--engine"})
        if (auto v = args.get(key)) a.insert(a.end(), {key, *v});
      OptionSpec s2;
      s2.with_value = {"--model", "--gpu", "--gpus", "--host", "--link", "--context", "--configs", "--quant", "--engine"};
      s2.repeated = {"--set"};
      Args with(a, s2);
      sim::Scenario base = named_scenario(with);
      const std::string kv_flags = kv == "f16" ? std::string() : " -ctk " + kv + " -ctv " + kv;
      if (base.engine.kv_pool) {  // vLLM: no placement to choose; the weights and the pool fit, or not
        if (!fits(base)) continue;
        Candidate c;
        c.quant = quant;
        c.kv = kv;
        c.sets = {kv_set};
        c.placement.gpu_layers = base.model.layers;
        c.placement.description = "every layer on the GPU, a paged KV pool";
        c.flags = (base.cards.size() > 1 ? "--tensor-parallel-size " + std::to_string(base.cards.size()) + " " : std::string()) +
                  (quant == "FP8" ? "--quantization fp8 " : "") + std::string(kv == "fp8" ? "--kv-cache-dtype fp8 " : "") +
                  "--max-model-len " + std::to_string(base.engine.context) + " --gpu-memory-utilization " +
                  fixed(base.engine.kv_pool->gpu_memory_utilization, 2);
        c.max_context = max_context(base, c.placement);
        candidates.push_back(c);
        continue;
      }
      if (base.engine.expert_cache) {  // expert-cache, hybrid-cpu-experts: the cache's size
        for (const std::int64_t slots : cache_sizes(base)) {
          Candidate c;
          c.quant = quant;
          c.kv = kv;
          c.hot_slots = slots;
          c.sets = {kv_set, "engine.expert_cache.size=" + std::to_string(slots)};
          c.placement.gpu_layers = base.model.layers;
          c.placement.description = base.engine.misses_on_cpu
                                        ? "routed experts on the CPU, " + (slots ? std::to_string(slots) + " hot experts on the GPU"
                                                                                 : std::string("no hot set"))
                                        : std::to_string(slots) + " expert-cache slots";
          c.flags = "--engine " + base.engine.preset + " --set engine.expert_cache.size=" + std::to_string(slots) +
                    " --context " + std::to_string(base.engine.context) +
                    (kv == "f16" ? std::string() : " --set engine.kv_type=" + kv);
          c.max_context = max_context(base, c.placement, slots);
          candidates.push_back(c);
        }
        continue;
      }
      base.engine.gpu_layers = base.model.layers;
      base.engine.cpu_moe_layers = 0;
      for (const auto& p : fitting_placements(base)) {
        Candidate c;
        c.quant = quant;
        c.kv = kv;
        c.placement = p;
        c.sets = {kv_set, "engine.gpu_layers=" + std::to_string(p.gpu_layers)};
        if (p.cpu_moe_layers > 0)  // a dense model has no such key
          c.sets.push_back("engine.cpu_moe_layers=" + std::to_string(p.cpu_moe_layers));
        c.flags = p.flags + " -c " + std::to_string(base.engine.context) + kv_flags;
        c.max_context = max_context(base, p);
        candidates.push_back(c);
      }
    }
  if (candidates.empty())
    throw UsageError(paged ? "nothing fits: the weights and one sequence's KV need more than gpu_memory_utilization x "
                             "the card in every weights format and KV dtype tried"
                           : "nothing fits, even with every layer on the CPU");

  // Simulate each in its own process.
  const int jobs = static_cast<int>(args.integer("--jobs", tbb::this_task_arena::max_concurrency(), 1, 1024));
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, candidates.size(), [&](std::size_t i) {
      Candidate& c = candidates[i];
      std::vector<std::string> run = {proc::self_executable(), "run", "--model", args.require("--model"), "--gpu",
                                      args.require("--gpu"), "--host", args.require("--host"), "--quant", c.quant,
                                      "--configs", catalogue.root().string(), "--json"};
      for (const auto& set : workload) run.insert(run.end(), {"--set", set});
      for (const auto& set : c.sets) run.insert(run.end(), {"--set", set});
      for (const auto& set : args.all("--set")) run.insert(run.end(), {"--set", set});
      for (const char* key : {"--gpus", "--link", "--context", "--engine"})
        if (auto v = args.get(key)) run.insert(run.end(), {key, *v});
      const proc::ProcessResult child = proc::run(run);
      if (child.exit_code != 0) {
        c.error = child.err;
        return;
      }
      auto out = config::parse_yaml(child.out, "run output");
      if (!out) {
        c.error = out.error().message;
        return;
      }
      try {
        c.decode = number_at(*out, "decode_tok_s", "p50");
        c.prefill = number_at(*out, "prefill_tok_s", "p50");
        c.ttft = number_at(*out, "ttft_s", "p50");
        c.throughput = number_at(*out, "throughput_tok_s");
      } catch (const std::runtime_error& e) {
        c.error = std::string(e.what()) + "\n";
      }
    });
  });
  std::vector<Candidate> ok;
  for (const auto& c : candidates) {
    if (c.error.empty())
      ok.push_back(c);
    else
      std::cerr << "vramsim plan: warning: " << c.flags << ": " << c.error;
  }
  if (ok.empty()) throw std::runtime_error("every candidate failed to simulate");
  // Smaller is better: the negated speeds, the time to first token.
  auto cost = [&](const Candidate& c) {
    return goal == "decode" ? -c.decode : goal == "prefill" ? -c.prefill : goal == "throughput" ? -c.throughput : c.ttft;
  };
  auto better = [&](const Candidate& a, const Candidate& b) {
    return cost(a) != cost(b) ? cost(a) < cost(b) : a.flags < b.flags;
  };
  std::sort(ok.begin(), ok.end(), better);
  // For an MoE model: the best "experts on the CPU" against the best "whole layers on the CPU".
  const Candidate* experts = nullptr;
  const Candidate* whole = nullptr;
  for (const auto& c : ok) {
    if (!experts && c.placement.cpu_moe_layers > 0) experts = &c;
    if (!whole && c.placement.layers_on_cpu && c.placement.cpu_moe_layers == 0) whole = &c;
  }

  if (args.flag("--json")) {
    json::Writer j;
    j.begin_object().field("model", args.require("--model")).field("gpu", args.require("--gpu")).field("goal", goal)
        .field("clients", clients)
        .field("candidates", static_cast<std::int64_t>(candidates.size()));
    j.key("best").begin_array();
    for (std::size_t i = 0; i < std::min(top, ok.size()); ++i) {
      j.begin_object().field("flags", ok[i].flags).field("quant", ok[i].quant).field("kv_type", ok[i].kv)
          .field("decode_tok_s", ok[i].decode)
          .field("prefill_tok_s", ok[i].prefill).field("ttft_s", ok[i].ttft)
          .field("throughput_tok_s", ok[i].throughput).field("fits", true)
          .field("max_context", ok[i].max_context)
          .field("placement", ok[i].placement.description);
      if (ok[i].hot_slots) j.field("hot_set_slots", *ok[i].hot_slots);
      j.end_object();
    }
    j.end_array();
    if (experts && whole && whole->decode > 0)
      j.field("experts_on_cpu_vs_layers_on_cpu", experts->decode / whole->decode);
    j.end_object();
    std::cout << j.str() << "\n";
    return 0;
  }
  std::cout << "vramsim plan: " << args.require("--model") << " on " << args.get("--gpus").value_or("1") << " x "
            << args.require("--gpu") << ", host " << args.require("--host") << ", goal " << goal << " ("
            << candidates.size() << " configurations simulated)\n\n";
  for (std::size_t i = 0; i < std::min(top, ok.size()); ++i)
    std::cout << "  " << i + 1 << ". " << ok[i].quant << "  " << ok[i].flags << "\n     decode " << fixed(ok[i].decode, 1)
              << " tok/s, prefill " << fixed(ok[i].prefill, 0) << " tok/s, TTFT " << fixed(1e3 * ok[i].ttft, 0)
              << " ms" << (clients > 1 ? ", " + fixed(ok[i].throughput, 0) + " tok/s over " + std::to_string(clients) + " clients" : std::string())
              << "  (" << ok[i].placement.description << "; " << (paged ? "--max-model-len" : "-c") << " up to "
              << ok[i].max_context << " fits)\n";
  if (experts && whole && whole->decode > 0)
    std::cout << "\n  Keeping every layer on the GPU and the experts of " << experts->placement.cpu_moe_layers
              << " layers on the CPU (" << experts->flags << ") decodes " << fixed(experts->decode / whole->decode, 2)
              << "x as fast as moving whole layers to the CPU (" << whole->flags << ").\n";
  return 0;
}

}  // namespace vramsim::cli
