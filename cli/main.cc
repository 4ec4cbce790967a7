// The `vramsim` binary: dispatches to subcommands and is the one place that prints an error
// and chooses the exit status (0 success, 1 a run that failed, 2 bad usage or configuration).
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/write_error.h"
#include "core/config_reader.h"

namespace {

const char* kUsage = R"(usage: vramsim COMMAND [options]

commands:
  fit            will a model fit on a card, and how fast will it decode (memory-budget model)
  plan           search llama.cpp's knobs by simulation: the best flags for a model on a card
  compare        compare hardware options (cards, a Mac, prices) for models: the answer in words
  run            simulate a scenario: expert cache, PCIe, bubbles, requests (event simulation)
  validate       run a validation dataset and compare with measurements
  sweep          run a study's points in parallel processes and write its report
  report         write the report (Markdown, HTML) of a sweep's results directory
  calibrate      fit engine parameters from an engine's log (--from-log FILE)
  routing-trace  write a scenario's expert routing as a trace (for vramsim-calibrate replay)
  list           list the catalogue: gpus, links, hosts, models, formats
  import-model   write a catalogue model from a Hugging Face config.json
  version        print the version

Run `vramsim COMMAND --help` for a command's options. Docs: docs/ in the source tree.
)";

int dispatch(const std::string& command, const std::vector<std::string>& rest) {
  using namespace vramsim::cli;
  if (command == "fit") return fit_command(rest);
  if (command == "list") return list_command(rest);
  if (command == "run") return run_command(rest);
  if (command == "plan") return plan_command(rest);
  if (command == "validate") return validate_command(rest);
  if (command == "sweep") return sweep_command(rest);
  if (command == "report") return report_command(rest);
  if (command == "calibrate") return calibrate_command(rest);
  if (command == "compare") return compare_command(rest);
  if (command == "routing-trace") return routing_trace_command(rest);
  if (command == "import-model") return import_model_command(rest);
  if (command == "version" || command == "--version") {
    std::cout << "vramsim " << VRAMSIM_VERSION << "\n";
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  throw UsageError("unknown command \"" + command + "\"");
}

int run(const std::string& command, const std::vector<std::string>& args) {
  try {
    return dispatch(command, args);
  } catch (const vramsim::cli::UsageError& e) {
    std::cerr << "vramsim " << command << ": error: " << vramsim::config::printable(e.what(), true) << "\n";
    return 2;
  } catch (const vramsim::config::ConfigError& e) {
    std::cerr << vramsim::config::printable(e.what(), true) << "\n";
    return 2;
  } catch (const vramsim::cli::WriteError& e) {
    std::cerr << "vramsim " << command << ": error: " << vramsim::config::printable(e.what(), true) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "vramsim " << command << ": internal error: " << vramsim::config::printable(e.what(), true) << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  // Everything printed on stdout goes through std::cout into this buffer, which keeps the
  // errno of a failed write: output that did not reach stdout (a full disk, /dev/full, a closed
  // pipe) is an error with its reason, never an exit status of 0 with the output lost.
  vramsim::io::FdBuf out(STDOUT_FILENO, ::isatty(STDOUT_FILENO) == 1);
  std::streambuf* const original = std::cout.rdbuf(&out);
  int status = run(command, args);
  std::cout.flush();
  if (!out.flush_all()) {
    std::cerr << "vramsim " << command << ": error: cannot write the output to stdout: " << std::strerror(out.error())
              << "\n";
    if (status == 0) status = 1;
  }
  std::cout.rdbuf(original);
  return status;
}
