// `vramsim run SCENARIO.yaml`: the event simulation of one scenario.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/progress_log.h"
#include "cli/commands.h"
#include "cli/quick_scenario.h"
#include "cli/write_error.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "reports/run_summary.h"
#include "sim/engine.h"
#include "sim/power.h"
#include "sim/stats.h"
#include "sim/telemetry.h"

namespace vramsim::cli {
namespace {


// For a llama.cpp-style scenario file whose every layer is on the cards and does not fit them:
// the placement `run --model` would pick, as the --set that gives it ("" when none fits, or the
// engine places by other means).
std::string placement_hint(const sim::Scenario& s) {
  if (s.engine.expert_cache || s.engine.kv_pool || s.engine.gpu_layers < s.model.layers || s.engine.cpu_moe_layers > 0 ||
      !s.engine.layer_split.empty() || fits(s))
    return {};
  const auto placements = fitting_placements(s);
  if (placements.empty()) return {};
  const Placement& p = placements.front();
  std::string set;
  for (const auto& a : placement_sets(p, s.model.layers)) set += (set.empty() ? "--set " : " --set ") + a;
  return "; this fits: " + set + " (" + p.description + ")";
}

const char* kHelp = R"(usage: vramsim run SCENARIO.yaml|SCENARIO-NAME [options]
       vramsim run --model M --gpu G [--gpus N] [--quant Q] [--link L] [--host H] [--engine E]
                   [--context N] [options]

Simulates the scenario (a file, or a catalogue scenario's name: vramsim list scenarios;
docs/scenarios.md): expert routing per token, the VRAM expert cache,
misses served over PCIe or on the host, decode steps with their bubbles, and the requests.

  --set key=value        override any scenario key, e.g. --set hardware.link.preset=pcie-gen5-x16
  --seed N               random seed (default: the scenario's `seed`, else 1)
  --json                 print one JSON object (docs/json-schema.md)
  --requests-out FILE    write one JSON line per request
  --trace FILE           write a Chrome/Perfetto trace of the first decode steps
  --trace-steps N        how many steps the trace covers (default 20)
  --log-format FORMAT    also write an engine's log lines (to --log FILE, else to stdout after
                         the summary): strata, the case-study engine's telemetry (MoE models
                         only); llama-server, its per-request timings (what `vramsim calibrate
                         --from-log` reads)
  --log FILE
  --configs DIR          catalogue directory

Without a scenario file the scenario is built from catalogue names (`vramsim list`): --gpu is
one card (--gpus N of it) or a comma list naming each card of a mixed machine
(rtx-3090,rtx-5090: a pipeline split, device 0 first, each card in its own slot); the card's
own PCIe generation at x16, host ddr5-dual-channel, engine llama.cpp, the model's native
format, a 4096-token context, 3 requests of 512 + 128 tokens. With an engine that has no
expert cache, run picks the placement that fits (docs/engines.md) and prints its flags.
)";

// An output file written under a temporary name beside it and renamed over `path` by commit()
// (io::AtomicFile): a run that fails before then (a scenario the simulation refuses) leaves
// `path` untouched. A path that exists and is not a regular file (/dev/stdout, a FIFO) is
// written directly. A path that cannot be opened is a usage error, a failed write an error
// with its reason (exit 1).
class PendingOutput {
 public:
  explicit PendingOutput(const std::string& path) {
    auto file = io::AtomicFile::open(path);
    if (!file) throw UsageError(file.error().message);
    file_ = std::move(*file);
  }
  std::ostream& stream() { return file_->stream(); }
  void commit() { commit_or_throw(*file_); }
  // The file this output replaces (a link's target): two outputs naming one file are refused.
  const std::string& target() const { return file_->target(); }

 private:
  std::unique_ptr<io::AtomicFile> file_;
};

}  // namespace

int run_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--seed", "--requests-out", "--trace", "--trace-steps", "--log-format", "--log", "--configs",
                     "--model", "--gpu", "--gpus", "--quant", "--link", "--host", "--engine", "--context"};
  spec.flags = {"--json", "--help"};
  spec.repeated = {"--set"};
  Args args(argv, spec);
  if (args.answered_help(kHelp)) return 0;
  std::optional<QuickScenario> quick;
  if (args.positional().empty() && args.get("--model")) {
    auto placed = quick_scenario(args);
    if (!placed) throw UsageError(placed.error().message);
    quick = std::move(placed).value();
  } else if (args.positional().size() != 1) {
    throw UsageError("run takes one scenario file, or --model and --gpu (see --help)");
  } else {
    // Each option's key in a scenario file, for the hint.
    const std::pair<const char*, const char*> named_keys[] = {
        {"--model", "model=qwen3-30b-a3b"},          {"--gpu", "hardware.gpu.preset=rtx-4090"},
        {"--gpus", "hardware.gpu.count=2"},          {"--quant", "engine.weights.experts=Q4_K_M --set engine.weights.other=Q4_K_M"},
        {"--link", "hardware.link.preset=pcie-gen5-x16"}, {"--host", "hardware.host.preset=epyc-9554-ddr5"},
        {"--engine", "engine.preset=vllm"},         {"--context", "engine.context=8192"}};
    for (const auto& [named, key] : named_keys)
      if (args.get(named))
        throw UsageError(std::string(named) + " builds a scenario without a file; with " + args.positional()[0] +
                         " use --set instead (e.g. --set " + key + ")");
  }
  if (args.get("--log") && !args.get("--log-format")) throw UsageError("--log needs --log-format strata or llama-server");
  if (args.get("--trace-steps") && !args.get("--trace")) throw UsageError("--trace-steps needs --trace FILE");
  // Every option is checked, and the scenario decoded, before any output file is touched.
  const auto log_format = args.get("--log-format");
  if (log_format && *log_format != "strata" && *log_format != "llama-server")
    throw UsageError("--log-format: expected \"strata\" or \"llama-server\", got \"" + *log_format + "\"");
  const bool strata_log = log_format && *log_format == "strata";
  sim::RunOptions options;
  options.trace_steps = args.get("--trace") ? static_cast<int>(args.integer("--trace-steps", 20, 1, 100000)) : 0;
  sim::Scenario scenario = quick ? quick->scenario : load_scenario(args, "run");
  // A strata log pairs each generation line with its expert-cache line (what calibrate reads).
  if (strata_log && !scenario.model.moe)
    throw UsageError("--log-format strata: " + scenario.model.name +
                     " is a dense model; the strata log pairs each request's generation line with its expert-cache line, "
                     "which needs routed experts");

  // Output files are opened before the simulation, so that a bad path fails at once; each is
  // written under a temporary name and renamed over its path only once the run is done, so
  // that a scenario the simulation refuses leaves an existing file as it was.
  std::unique_ptr<PendingOutput> requests_out, trace_out, log_out;
  {  // Two outputs in one file would overwrite each other: refused before anything runs.
    std::vector<std::pair<const char*, const PendingOutput*>> opened;
    for (auto [option, out] : {std::pair{"--requests-out", &requests_out}, std::pair{"--trace", &trace_out},
                               std::pair{"--log", &log_out}})
      if (auto path = args.get(option)) {
        *out = std::make_unique<PendingOutput>(*path);
        for (const auto& [other, earlier] : opened)
          if (earlier->target() == (*out)->target())
            throw UsageError(std::string(option) + " " + *path + ": the same file as " + other);
        opened.emplace_back(option, out->get());
      }
  }
  std::ostringstream strata;
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  options.on_request = [&](const sim::RequestRecord& r) {
    if (requests_out) requests_out->stream() << reports::request_json_line(r);
    if (log_format) strata << (strata_log ? sim::strata_request_lines(scenario, r) : sim::llama_server_request_lines(r));
  };
  options.on_reject = [&](const sim::RejectedRequest& r) {
    if (!requests_out) return;
    json::Writer j(false);
    j.begin_object().field("id", static_cast<std::int64_t>(r.id)).field("client", r.client)
        .field("prompt_tokens", r.prompt_tokens).field("arrival_s", r.arrival_s).field("rejected", r.reason).end_object();
    requests_out->stream() << j.str() << "\n";
  };
  const auto start = std::chrono::steady_clock::now();
  RunProgressLog progress_log;  // without a terminal: a line now and then on long runs only
  options.on_progress = [&](int done, int total) {
    if (progress) {
      if (done % 10 == 0 || done == total)
        std::cerr << "\r  simulated " << done << "/" << total << " requests" << (done == total ? "\n" : "") << std::flush;
      return;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (auto line = progress_log.update(done, total, elapsed)) std::cerr << *line << std::flush;
  };

  sim::RunResult result;
  try {
    result = sim::run_scenario(scenario, options);
  } catch (const std::invalid_argument& e) {
    const std::string why = e.what();
    std::string hint = placement_hint(scenario);
    // The refusal already names the engine's accounting: a hint to the same rule adds nothing.
    if (why.find("engine.vram_rule=engine") != std::string::npos && hint.find("engine.vram_rule=engine") != std::string::npos)
      hint.clear();
    throw UsageError(why + hint);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const sim::PowerSummary power = sim::summarise_power(scenario, result);
  // A run whose every request was rejected failed (exit 1), its summary printed all the same.
  const bool none_completed = result.completed == 0 && result.rejected() > 0;
  if (none_completed)
    std::cerr << "vramsim run: no request completed: all " << result.rejected()
              << " were rejected (see requests.rejected_by_reason); there is no speed or power to report\n";

  if (trace_out) trace_out->stream() << sim::chrome_trace(result.trace);
  const bool json = args.flag("--json");
  if (quick && !json)
    std::cout << "vramsim run: " << scenario.model.name << " on " << machine_text(scenario)
              << ": " << quick->placement << "\n  " << quick->flags_for << " flags: " << quick->flags << "\n\n";
  std::cout << (json ? reports::run_summary_json(scenario, result, power, wall) : reports::run_summary_table(scenario, result, power, wall));
  if (log_format) {
    const std::string text = (strata_log ? sim::strata_startup_lines(scenario, result) : std::string()) + strata.str();
    if (log_out) {
      log_out->stream() << text;
    } else if (json) {
      std::cerr << text;
    } else {
      std::cout << "\n" << text;
    }
  }
  for (auto* out : {requests_out.get(), trace_out.get(), log_out.get()})
    if (out) out->commit();
  return none_completed ? 1 : 0;
}

}  // namespace vramsim::cli
