// `vramsim plan --model M --gpu G --host H [...]`: searches an engine's knobs by simulation and
// prints the best configurations with the flags to type. The candidates: weights format (the
// given one, else a few llama.cpp levels and the model's own quantized format; a format whose
// scenario is refused, e.g. experts too large for the host's RAM, is skipped with a note),
// KV-cache type (f16, q8_0), and for each, with
// llama.cpp, the placements that fit (quick_scenario.h: every layer on the GPU; every layer on
// the GPU with the fewest layers' experts on the CPU; the most layers on the GPU), or, with an
// engine that has an expert cache (expert-cache, hybrid-cpu-experts), the cache / hot-set
// sizes 0, 1/4, 1/2, 3/4 and all of what fits, or, with vLLM (every weight on the GPU, a paged
// KV pool), the weights (the model's own dtype or FP8) and the KV dtype (auto or fp8) that fit.
// Each candidate runs as its own `vramsim run` process (one SimGrid engine per process), in a
// TBB pool. Its flags come from its own decoded scenario (engine_flags, shared with `run
// --model`); a --set on a key plan chooses is refused. With --clients N, llama.cpp gets N slots.
#include <tbb/task_arena.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/plan_candidates.h"
#include "cli/plan_space.h"
#include "cli/quick_scenario.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "reports/parallel_children.h"
#include "sim/vram_plan.h"
#include "workloads/formats.h"
#include "core/units.h"

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
                     512 + 128 tokens. llama.cpp gets one slot per client (-np N; -c is
                     the context x N, llama-server's slots share it); its slots' tokens
                     are batched into each decode step (continuous batching)
  --context N        context window in tokens (default 4096); each result also says the
                     largest context its placement still fits
  --engine E         llama.cpp (default) | expert-cache | hybrid-cpu-experts | vllm
  --quant Q          only this weights format (default: Q4_K_M, Q6_K, Q8_0 and the model's
                     own format when it is not 16-bit, or its native-only format such as
                     MXFP4; vllm: the model's dtype and FP8). With llama.cpp, when none of
                     these keeps every layer on the GPUs, the formats below Q4_K_M (Q3_K_M,
                     then Q2_K) are tried in turn down to the first that does, and named as
                     lower in quality. A format whose weights do not fit the host is skipped
                     with a note
  --lowest-quant Q   the lowest of those rungs to try (default Q2_K; IQ2_XXS or IQ1_S go
                     further down the ladder)
  --gpus N --link L  as for `vramsim run`; --gpu takes a comma list of cards for a mixed
                     machine (rtx-3090,rtx-5090), each in its own slot, its layer split planned
  --host H           the host (required for a discrete card; an Apple unified-memory part's
                     host is its own CPU: no --host, and only every layer on its GPU is tried)
  --set KEY=VALUE    a fixed override for every candidate (repeatable), e.g.
                     --set hardware.host.expert_memory=interleave; not a key plan chooses
                     (engine.kv_type, gpu_layers, cpu_moe_layers, expert_cache.size,
                     weights; workload.clients, requests): those are refused
  --top N            how many to print (default 5)
  -j N, --jobs N     parallel simulations (default: the cores)
  --json             print one JSON object: goal, clients, candidates, failed, skipped,
                     best[{flags, engine, decode_tok_s, prefill_tok_s, ttft_s,
                     throughput_tok_s, fits, max_context, ...}] (docs/json-schema.md)
  --configs DIR      catalogue directory
)";


using units::fixed;

// A figure of run's JSON output (`section.key`, or `section` alone). Throws std::runtime_error
// when it is missing or null (no request completed), except that `null_is_none` reads a null
// as NaN (no such figure, e.g. no decode step in one-token requests).
double number_at(const config::Node& root, const char* section, const char* key = nullptr, bool null_is_none = false) {
  const config::Node* s = root.find(section);
  const config::Node* v = s && key ? s->find(key) : s;
  if (null_is_none && v && v->is_null()) return std::numeric_limits<double>::quiet_NaN();
  const std::string name = std::string(section) + (key ? std::string(".") + key : std::string());
  if (!v || !v->is_scalar()) throw std::runtime_error("no " + name + " in run's output");
  try {
    return std::stod(v->text());
  } catch (const std::logic_error&) {  // null: nothing to measure
    throw std::runtime_error(name + " is " + v->text() + ": no request completed");
  }
}

// The keys plan chooses itself: a --set on one would win in the simulation while the printed
// flags said otherwise. Refused (exit 2), with what sets the key instead.
void refuse_searched_keys(const std::vector<std::string>& sets) {
  struct Searched {
    const char* key;
    const char* instead;
  };
  static const Searched searched[] = {
      {"engine.kv_type", "plan tries each KV-cache type (f16 and q8_0; vllm: bf16 and fp8)"},
      {"engine.gpu_layers", "plan searches the placement; `vramsim run --model ... --set engine.gpu_layers=N` simulates one"},
      {"engine.cpu_moe_layers", "plan searches the placement; `vramsim run --model ... --set engine.cpu_moe_layers=N` simulates one"},
      {"engine.layer_split", "plan sets a pipeline's split (-ts) with each placement; `vramsim run --model ... --set "
                             "engine.layer_split=[...]` simulates one"},
      {"engine.expert_cache.size", "plan searches the expert cache's size; `vramsim run --model ... --set engine.expert_cache.size=N` simulates one"},
      {"engine.weights", "use --quant"},
      {"workload.clients", "use --clients"},
      {"workload.requests", "--clients sets it (4 requests per client)"},
      {"engine.context", "use --context"},
      {"hardware.gpu.count", "use --gpus"},
      {"hardware.gpu.preset", "use --gpu"},
      {"hardware.host.preset", "use --host"},
  };
  for (const auto& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    for (const auto& s : searched) {
      const std::string k = s.key;
      const bool same = key == k || key.rfind(k + ".", 0) == 0 || k.rfind(key + ".", 0) == 0;
      if (!same) continue;
      if (k.rfind(key + ".", 0) == 0)  // a whole mapping that holds a searched key
        throw UsageError("--set " + key + ": it would replace " + k + ", which plan chooses itself (" + s.instead +
                         "); set the keys inside it one by one");
      throw UsageError("--set " + key + ": plan chooses " + k + " itself (" + s.instead + ")");
    }
  }
}

// The formats' ladder below Q4_K_M down to `lowest` (configs/formats/weights.yaml). Throws
// UsageError when `lowest` is not one of those rungs.
std::vector<std::string> lower_rungs(const workloads::FormatTables& formats, const std::string& lowest) {
  std::vector<std::string> rungs;
  for (auto rung = formats.one_level_lower("Q4_K_M"); rung; rung = formats.one_level_lower(*rung)) {
    rungs.push_back(*rung);
    if (workloads::upper(*rung) == workloads::upper(lowest)) return rungs;
  }
  std::string names;
  for (const auto& r : rungs) names += (names.empty() ? "" : ", ") + r;
  throw UsageError("--lowest-quant: \"" + lowest + "\" is not a rung of the formats' ladder below Q4_K_M (" + names + ")");
}

}  // namespace

int plan_command(const std::vector<std::string>& argv) {
  proc::forward_termination_signals();  // a kill stops the simulations it started too
  OptionSpec spec;
  spec.with_value = {"--model", "--gpu", "--gpus", "--host", "--link", "--quant", "--lowest-quant", "--context", "--goal", "--top",
                     "-j",      "--jobs", "--configs", "--engine", "--clients"};
  spec.flags = {"--json", "--help"};
  spec.repeated = {"--set"};
  Args args(argv, spec);
  if (args.answered_help(kHelp)) return 0;
  if (!args.positional().empty()) throw UsageError("unexpected argument \"" + args.positional()[0] + "\" (see --help)");
  const std::string goal = args.get("--goal").value_or("decode");
  if (goal != "decode" && goal != "prefill" && goal != "ttft" && goal != "throughput")
    throw UsageError("--goal: expected decode, prefill, ttft or throughput, got \"" + goal + "\"");
  const auto top = static_cast<std::size_t>(args.integer("--top", 5, 1, 1000));
  // Each candidate is timed on quick_scenario.h's requests: the window must hold one.
  if (args.integer("--context", kDefaultContext, 1, std::int64_t{1} << 32) < kPromptTokens + kGenTokens)
    throw UsageError("--context: at least " + std::to_string(kPromptTokens + kGenTokens) + " tokens, the " +
                     std::to_string(kPromptTokens) + "-token prompt and " + std::to_string(kGenTokens) +
                     " generated tokens each candidate is timed on");

  refuse_searched_keys(args.all("--set"));

  // The names, validated. The model's own format is judged by the candidates that use it: a
  // format plan tries may fit where the model's native one does not (e.g. its experts in RAM).
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  if (args.get("--lowest-quant") && args.get("--quant"))
    throw UsageError("--lowest-quant: plan steps down from Q4_K_M only without --quant");
  // The rungs plan may step down to (checked here, before anything is simulated).
  const std::vector<std::string> rungs =
      lower_rungs(workloads::FormatTables::load(catalogue), args.get("--lowest-quant").value_or("Q2_K"));
  sim::Scenario named;
  try {
    named = named_scenario(args, "plan");
  } catch (const config::ConfigError&) {
    if (args.get("--quant")) throw;
    std::vector<std::string> with_quant = argv;
    with_quant.insert(with_quant.end(), {"--quant", "Q4_K_M"});
    named = named_scenario(Args(with_quant, spec), "plan");
  }
  // A unified-memory part's host is its own CPU; a discrete card's host is the user's to name.
  if (!named.gpu.spec.unified()) args.require("--host");
  const bool paged = named.engine.kv_pool.has_value();
  const bool llama = !paged && !named.engine.expert_cache;  // llama.cpp-style placement
  // The formats to try.
  std::vector<std::string> quants;
  if (auto q = args.get("--quant")) {
    quants = {*q};
  } else {
    const std::string native = workloads::upper(named.model.native_format);  // format names compare case-insensitively
    const bool sixteen_bit = native == "BF16" || native == "F16";
    if (paged)  // vLLM: the checkpoint's dtype, or its online FP8 quantization
      quants = sixteen_bit ? std::vector<std::string>{native, "FP8"} : std::vector<std::string>{native};
    else if (native == "MXFP4" || !named.model.file_formats.empty())  // MXFP4, or a file's own formats (a GGUF file)
      quants = {native};
    else {
      quants = {"Q4_K_M", "Q6_K", "Q8_0"};
      // The model's own quantized format: what `run` without --quant simulates.
      if (!sixteen_bit && std::find(quants.begin(), quants.end(), native) == quants.end()) quants.push_back(native);
    }
  }
  const std::int64_t clients = args.integer("--clients", 1, 1, 4096);
  // llama-server gets one slot per client (-np = --clients), which the header and flags state.
  if (llama && clients > 1)
    for (const auto& set : args.all("--set"))
      if (set.substr(0, set.find('=')) == "engine.parallel")
        throw UsageError("--set engine.parallel: with --clients " + std::to_string(clients) +
                         " plan gives llama-server one slot per client (-np " + std::to_string(clients) + ")");
  std::vector<std::string> workload = {"workload.clients=" + std::to_string(clients),
                                       "workload.requests=" + std::to_string(4 * clients)};
  // llama-server serves concurrent clients with one slot each (-np).
  if (llama && clients > 1) workload.push_back("engine.parallel=" + std::to_string(clients));
  const std::vector<std::string> kv_types = paged ? std::vector<std::string>{"bf16", "fp8"}
                                                  : std::vector<std::string>{"f16", "q8_0"};
  // The candidates that fit, found without simulating (the memory plan is arithmetic). Each one's
  // flags come from its own decoded scenario (engine_flags).
  std::vector<Candidate> candidates;
  std::vector<Skipped> skipped;
  // The whole machine, and on a mixed one (llama.cpp) each kind of card alone, its first device.
  std::vector<CandidateSpace> spaces = {CandidateSpace{args, workload, "", -1}};
  const bool mixed = std::any_of(named.cards.begin(), named.cards.end(),
                                 [&](const auto& k) { return k.gpu.spec.name != named.cards.front().gpu.spec.name; });
  if (llama && mixed)
    for (std::size_t c = 0; c < named.cards.size(); ++c) {
      const std::string& card = named.cards[c].gpu.spec.name;
      const auto earlier = named.cards.begin() + static_cast<std::ptrdiff_t>(c);
      if (std::none_of(named.cards.begin(), earlier, [&](const auto& k) { return k.gpu.spec.name == card; }))
        spaces.push_back(CandidateSpace{args, workload, card, static_cast<int>(c)});
    }
  bool all_gpu = false;  // some candidate keeps every layer and the LM head on the GPUs
  for (const auto& space : spaces)
    for (const auto& quant : quants)
      for (const std::string& kv : kv_types) all_gpu = add_candidates(space, quant, kv, candidates, skipped) || all_gpu;
  // Below Q4_K_M: when no format tried keeps every layer on the GPUs (llama.cpp), a user steps
  // down the formats' ladder (configs/formats/weights.yaml) rung by rung, to the first one that
  // does, trading output quality for the GPU's speed; plan tries the same rungs. When no rung
  // does, none is tried: offloading a lower format only trades quality for a little speed.
  std::vector<std::string> lower;
  if (llama && !args.get("--quant") && !all_gpu) {
    std::vector<Candidate> lower_candidates;
    std::vector<Skipped> lower_skipped;
    for (const auto& rung : rungs) {
      if (all_gpu) break;
      lower.push_back(rung);
      for (const auto& space : spaces)
        for (const std::string& kv : kv_types)
          all_gpu = add_candidates(space, rung, kv, lower_candidates, lower_skipped) || all_gpu;
    }
    if (all_gpu) {
      candidates.insert(candidates.end(), lower_candidates.begin(), lower_candidates.end());
      skipped.insert(skipped.end(), lower_skipped.begin(), lower_skipped.end());
    } else {
      lower.clear();
    }
  }
  if (candidates.empty()) {
    std::string why = paged ? "nothing fits: the weights and one sequence's KV need more than gpu_memory_utilization x "
                              "the card in every weights format and KV dtype tried"
                            : "nothing fits";
    for (const auto& s : skipped) why += "\n  " + note(s);
    throw UsageError(why);
  }

  // Simulate each in its own process.
  const int jobs = static_cast<int>(args.integer(args.spelling("-j", "--jobs"), tbb::this_task_arena::max_concurrency(), 1, 1024));
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::atomic<int> finished{0};
  std::mutex progress_mutex;
  reports::for_each_in_parallel(jobs, candidates.size(), [&](std::size_t i) {
    Candidate& c = candidates[i];
    std::vector<std::string> run = {proc::self_executable(), "run", "--model", args.require("--model"), "--gpu",
                                    c.gpu.empty() ? args.require("--gpu") : c.gpu, "--quant", c.quant, "--configs",
                                    catalogue.root().string(), "--json"};
    for (const auto& set : workload) run.insert(run.end(), {"--set", set});
    for (const auto& set : c.sets) run.insert(run.end(), {"--set", set});
    for (const auto& set : args.all("--set")) run.insert(run.end(), {"--set", set});
    for (const char* key : {"--gpus", "--host", "--link", "--context", "--engine"})
      if (auto v = args.get(key)) run.insert(run.end(), {key, *v});
    const proc::ProcessResult child = proc::run(run);
    const int done = ++finished;
    if (progress) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      std::cerr << "\r  simulated " << done << "/" << candidates.size() << " configurations"
                << (done == static_cast<int>(candidates.size()) ? "\n" : "") << std::flush;
    }
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
      // One-token requests have no decode step: no decode figure, which only a decode goal needs.
      const config::Node* decode = out->find("decode_tok_s");
      const config::Node* p50 = decode ? decode->find("p50") : nullptr;
      if (goal == "decode" && p50 && p50->is_null() && number_at(*out, "requests", "completed") > 0) {
        c.error = "no decode step to time (its requests generate one token each: --goal decode needs "
                  "workload.gen_tokens of 2 or more)\n";
        return;
      }
      c.decode = number_at(*out, "decode_tok_s", "p50", goal != "decode");
      c.prefill = number_at(*out, "prefill_tok_s", "p50");
      c.ttft = number_at(*out, "ttft_s", "p50");
      c.throughput = number_at(*out, "throughput_tok_s");
      c.j_per_token = number_at(*out, "energy", "j_per_token", true);
      c.j_per_token_with_host = number_at(*out, "energy", "j_per_token_with_host", true);
      // One card of a mixed machine alone: the others idle beside it the whole run, each at its
      // idle board power (hw::GpuSpec::idle_watts), spread over the run's generated tokens.
      if (c.device >= 0 && c.throughput > 0) {
        double idle_w = 0;
        for (std::size_t d = 0; d < named.cards.size(); ++d)
          if (static_cast<int>(d) != c.device) idle_w += named.cards[d].gpu.spec.idle_watts;
        c.j_per_token += idle_w / c.throughput;
        c.j_per_token_with_host += idle_w / c.throughput;
      }
    } catch (const std::runtime_error& e) {
      c.error = std::string(e.what()) + "\n";
    }
  });
  std::vector<Candidate> ok;
  for (const auto& c : candidates) {
    if (c.error.empty())
      ok.push_back(c);
    else
      std::cerr << "vramsim plan: warning: " << c.flags << ": " << c.error;
  }
  // Every candidate failing is the options' doing (e.g. a --set workload that generates one
  // token, which has no decode speed for --goal decode): say why, as the first one failed.
  if (ok.empty()) {
    std::string why = candidates.front().error;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw UsageError("no configuration could be simulated (" + std::to_string(candidates.size()) + " tried); the first, " +
                     candidates.front().flags + ": " + why);
  }
  const auto failed = static_cast<std::int64_t>(candidates.size() - ok.size());
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
        .field("candidates", static_cast<std::int64_t>(candidates.size()))
        .field("failed", failed);
    j.key("skipped").begin_array();
    for (const auto& s : skipped) {
      j.begin_object().field("quant", s.quant).key("kv_types").begin_array();
      for (const auto& kv : s.kv) j.value(kv);
      j.end_array().field("reason", s.reason).end_object();
    }
    j.end_array();
    j.key("lower_quants_tried").begin_array();
    for (const auto& q : lower) j.value(q);
    j.end_array();
    j.key("best").begin_array();
    for (std::size_t i = 0; i < std::min(top, ok.size()); ++i) {
      j.begin_object().field("flags", ok[i].flags).field("engine", ok[i].engine).field("quant", ok[i].quant)
          .field("kv_type", ok[i].kv)
          .field("decode_tok_s", ok[i].decode)
          .field("prefill_tok_s", ok[i].prefill).field("ttft_s", ok[i].ttft)
          .field("throughput_tok_s", ok[i].throughput).field("j_per_token", ok[i].j_per_token)
          .field("j_per_token_with_host", ok[i].j_per_token_with_host).field("fits", true)
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
  std::cout << "vramsim plan: " << args.require("--model") << " on " << machine_text(named) << ", host " << named.host.name << ", goal " << goal << " ("
            << candidates.size() << " configurations simulated"
            << (failed ? ", " + std::to_string(failed) + " of them failed (warnings above)" : std::string())
            << "; " << ok.front().engine << " flags)\n";
  if (llama && clients > 1)
    std::cout << "  One llama-server slot per client (-np " << clients << ", -c shared by the slots); every decode step "
              << "batches the active slots' tokens, as llama-server does.\n";
  if (clients > 1)
    std::cout << "  The " << clients << " clients start together and each sends its next request when its last ends: TTFT "
              << "includes waiting for the prompts ahead; `vramsim run` with an open-loop arrival rate "
              << "(docs/serving.md) gives it at a steady load.\n";
  std::cout << "\n";
  for (std::size_t i = 0; i < std::min(top, ok.size()); ++i)
    std::cout << "  " << i + 1 << ". " << ok[i].quant << "  " << ok[i].flags << "\n     decode "
              << (std::isnan(ok[i].decode) ? std::string("none (one-token requests)") : fixed(ok[i].decode, 1) + " tok/s")
              << ", prefill " << fixed(ok[i].prefill, 0) << " tok/s" << (clients > 1 ? " per request" : "") << ", TTFT "
              << fixed(1e3 * ok[i].ttft, 0)
              << " ms" << (clients > 1 ? ", " + fixed(ok[i].throughput, 0) + " tok/s over " + std::to_string(clients) + " clients" : std::string())
              << "  (" << ok[i].placement.description << "; " << ok[i].context_note << ")\n";
  // An engine preset with no fixed cost per step or layer (hybrid-cpu-experts: none measured)
  // ranks short steps by their bytes alone (as `run` notes).
  if (named.engine.physics.no_fixed_costs())
    std::cout << "\n  " << named.engine.preset << " has no fixed cost per step or layer (none measured): the fast "
              << "candidates' speeds are their bytes alone, upper bounds.\n";
  // The two ways of offloading compared, when the best placement offloads at all (else the
  // comparison is of placements not shown, and moot).
  const bool best_offloads = ok.front().placement.cpu_moe_layers > 0 || ok.front().placement.layers_on_cpu;
  if (best_offloads && experts && whole && whole->decode > 0)
    std::cout << "\n  Keeping every layer on the GPU and the experts of " << experts->placement.cpu_moe_layers
              << " layers on the CPU (" << experts->flags << ") decodes " << fixed(experts->decode / whole->decode, 2)
              << "x as fast as moving whole layers to the CPU (" << whole->flags << ").\n";
  if (!lower.empty()) {
    std::string tried;
    for (const auto& q : lower) tried += (tried.empty() ? "" : ", ") + q;
    std::cout << "\n  No format from Q4_K_M up keeps every layer on the GPU" << (named.cards.size() > 1 ? "s" : "")
              << ", so plan also tried " << tried << " (below Q4_K_M: smaller and faster, lower in output quality; "
              << "compare them on your task before you choose one).\n";
  }
  if (!skipped.empty()) {
    std::cout << "\n  Not simulated:\n";
    for (const auto& s : skipped) std::cout << "    " << note(s) << "\n";
  }
  return 0;
}

}  // namespace vramsim::cli
