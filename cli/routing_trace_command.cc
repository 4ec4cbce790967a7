// `vramsim routing-trace SCENARIO.yaml -o FILE [--tokens N]`: the scenario's expert routing,
// token by token, as the simulation draws it (sim/routing_trace.h), for the real-card replay.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/write_error.h"
#include "core/config_reader.h"
#include "sim/routing_trace.h"
#include "sim/scenario.h"
#include "workloads/formats.h"

namespace vramsim::cli {
namespace {

const char* kHelp = R"(usage: vramsim routing-trace SCENARIO.yaml -o FILE [--tokens N] [--set key=value ...]

Writes the scenario's expert routing (the simulation's router and random streams: per-request
preference, token locality) as a text trace: the model's shape, the hottest-first pre-fill
order, then each decode token's top-k experts at every MoE layer (format: sim/routing_trace.h,
docs/calibration.md). `vramsim-calibrate replay --trace FILE` replays it on a real card.

  -o FILE, --output FILE   the trace file
  --tokens N               decode tokens to write (default 1000; requests of workload.gen_tokens each)
  --set key=value          override any scenario key
  --seed N                 random seed (default: the scenario's)
  --configs DIR            catalogue directory
)";

}  // namespace

int routing_trace_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"-o", "--output", "--tokens", "--seed", "--configs"};
  spec.flags = {"--help"};
  spec.repeated = {"--set"};
  Args args(argv, spec);
  if (args.answered_help(kHelp)) return 0;
  if (args.positional().size() != 1) throw UsageError("routing-trace takes one scenario file (see --help)");
  const auto output = args.get(args.spelling("-o", "--output"));
  if (!output) throw UsageError("routing-trace needs -o FILE");
  const std::int64_t tokens = args.integer("--tokens", 1000, 1, 100'000'000);

  const sim::Scenario scenario = load_scenario(args, "routing-trace");

  // Written beside the output and renamed over it once complete (io::AtomicFile), so that a
  // refusal or a full disk leaves an existing trace as it was; a symlink's target is replaced,
  // the link kept; /dev/stdout or a pipe is written through.
  // Checked before anything is opened: a refusal truncates nothing written through.
  try {
    (void)sim::scenario_popularity(scenario);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  auto file = io::AtomicFile::open(*output);
  if (!file) throw UsageError(file.error().message);
  try {
    sim::write_routing_trace((*file)->stream(), scenario, tokens);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  commit_or_throw(**file);
  std::cerr << "vramsim routing-trace: wrote " << tokens << " tokens to " << *output << "\n";
  return 0;
}

}  // namespace vramsim::cli
