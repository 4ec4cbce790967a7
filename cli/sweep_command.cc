// `vramsim sweep STUDY.yaml -o DIR [-j N] [--json]`: runs a study's points, one `vramsim run`
// process each, in a local pool of N workers (and over MPI ranks when started by mpirun),
// appends each result to DIR as it finishes, resumes when rerun, and ends with the report.
// `vramsim report DIR`: the report of what DIR holds. The logic lives in reports/.
#include <tbb/task_arena.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <fmt/format.h>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/write_error.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "reports/report.h"
#include "reports/sweep.h"
#include "sim/scenario.h"
#include "workloads/formats.h"

namespace vramsim::cli {
namespace {

const char* kSweepHelp = R"(usage: vramsim sweep STUDY.yaml -o DIR [-j N] [--json] [--retry-failed] [--rank-timeout S] [--configs DIR]

Runs every point of a study (configs/sweeps/, docs/studies.md), one `vramsim run` process per
point, N at a time (default: the cores). Each finished point is appended to DIR/results.jsonl
and DIR/results.csv; a failing point is recorded with its error and the sweep goes on.
Rerunning the same command resumes: recorded points are not run again, except a failed point
whose simulation was killed by a signal (kill -9, the OOM killer) or never started. Under `mpirun -np R`
or `srun -n R` each rank runs its share of the points (DIR must be shared by the ranks); every
rank beats in DIR/ranks/, and rank 0 waits for the others' points, then writes the report.
Ends by writing DIR/report.md and DIR/report.html (`vramsim report DIR`).

  -o, --output DIR   results directory (created when missing; an existing folder must be empty
                     or hold an earlier sweep's study.json)
  -j, --jobs N       local workers
  --json             print {points, completed, failed, resumed, wall_s, ...} (docs/json-schema.md)
  --retry-failed     run every recorded failed point again
  --rank-timeout S   MPI: rank 0 gives up on a rank whose heartbeat has not changed for S
                     seconds (default 300) once no rank that owns a missing point is working
  --configs DIR      catalogue directory
Exit status: 0 every point completed, 1 a point failed, 2 bad usage or a bad study,
3 (rank 0 under MPI) points missing because the ranks that own them died or never started:
the error names them; rerunning resumes.
)";

const char* kReportHelp = R"(usage: vramsim report DIR

Writes DIR/report.md and DIR/report.html (self-contained, opens offline) from a sweep's results:
one section per entry of the study's `sections`, each chart (gnuplot) with its table of
numbers, then the study's inputs. Works on a partial sweep too.
)";

std::string clock(double s) {
  const long t = std::lround(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

void draw_progress(const reports::SweepProgress& p) {
  const int width = 30;
  const int filled = p.todo ? static_cast<int>(width * p.done / p.todo) : width;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  std::string eta = p.done ? clock(p.elapsed_s / static_cast<double>(p.done) * static_cast<double>(p.todo - p.done)) : "?";
  std::fprintf(stderr, "\r  [%s] %zu/%zu points%s  %s elapsed, ETA %s ", bar.c_str(), p.done, p.todo,
               p.failed ? (", " + std::to_string(p.failed) + " failed").c_str() : "", clock(p.elapsed_s).c_str(),
               eta.c_str());
  if (p.done == p.todo) std::fputc('\n', stderr);
  std::fflush(stderr);
}

// Without a terminal (a CI log, nohup): a plain line when a point finishes, at most every 10 s,
// and at the end.
void log_progress(const reports::SweepProgress& p) {
  static double last = -1e9;
  if (p.done != p.todo && p.elapsed_s - last < 10.0) return;
  last = p.elapsed_s;
  std::fprintf(stderr, "vramsim sweep: %zu/%zu points%s, %s elapsed\n", p.done, p.todo,
               p.failed ? (", " + std::to_string(p.failed) + " failed").c_str() : "", clock(p.elapsed_s).c_str());
  std::fflush(stderr);
}

// Workers per process: the cores this process may use, shared by the ranks on this machine.
int default_jobs() {
  int local_ranks = 1;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name)) local_ranks = std::max(1, std::atoi(v));
  return std::max(1, tbb::this_task_arena::max_concurrency() / local_ranks);
}

reports::PointOutcome run_point(const reports::Study& study, const reports::Point& p, const std::string& configs) {
  std::vector<std::string> argv = {proc::self_executable(), "run", p.scenario, "--json", "--configs", configs};
  if (study.seed) {
    argv.push_back("--seed");
    argv.push_back(std::to_string(*study.seed));
  }
  for (const auto& [key, value] : p.set) {
    if (key == "scenario") continue;
    argv.push_back("--set");
    argv.push_back(key + "=" + value.value_or(""));
  }
  const proc::ProcessResult r = proc::run(argv);
  return {r.exit_code, r.out, r.err, r.wall_s};
}

void print_report_paths(const reports::ReportOutcome& report) {
  for (const auto& w : report.warnings) std::cerr << "vramsim report: warning: " << w << "\n";
}

}  // namespace

namespace {
// A study's keys must name scenario keys: a typo in `set` or in an axis is refused at the
// study's line before any point runs, rather than failing every point. A key is refused only
// when it is unknown in every context it can meet: each base scenario (the `scenario` axis's,
// or the study's), with its zipped siblings' values at the same step, alone or with one step of
// any other dimension (a key like workload.arrival.burst exists only once another axis sets a
// bursty process). Other refusals can depend on the whole point, so the points report them.
class StudyKeyCheck {
 public:
  StudyKeyCheck(const reports::Study& study, const config::Catalogue& catalogue)
      : study_(study), catalogue_(catalogue), formats_(workloads::FormatTables::load(catalogue)) {
    std::vector<std::string> bases;
    for (const auto& dim : study.dimensions) {
      auto& steps = steps_.emplace_back();
      for (std::size_t step = 0; step < dim.size(); ++step) {
        auto& at = steps.emplace_back();  // the dimension's zipped axes at this step
        for (const auto& axis : dim.axes)
          if (axis.key == "scenario")
            bases = axis.paths;
          else
            at.emplace_back(axis.key, axis.values[step]);
      }
    }
    if (bases.empty()) bases = {study.scenario};
    for (const auto& path : bases) {  // each read once
      auto tree = config::load_yaml_file(path);
      if (!tree) throw config::ConfigError(tree.error());
      bases_.emplace_back(path, std::move(*tree));
    }
  }

  void run() const {
    for (std::size_t k = 0; k < study_.set.size(); ++k)
      if (const auto why = unknown_everywhere(study_.set[k].first, {}, std::nullopt))
        throw config::ConfigError(study_.set_origins[k], "set." + study_.set[k].first, *why);
    for (std::size_t d = 0; d < study_.dimensions.size(); ++d)
      for (std::size_t step = 0; step < steps_[d].size(); ++step)
        for (const auto& axis : study_.dimensions[d].axes) {
          if (axis.key == "scenario") continue;
          if (const auto why = unknown_everywhere(axis.key, steps_[d][step], d))
            throw config::ConfigError(axis.origin, axis.key_path,
                                      axis.key + "=" + axis.values[step].value_or("") + " gives: " + *why);
        }
  }

 private:
  using Overrides = std::vector<std::pair<std::string, reports::SetValue>>;

  // The message when `key` is an unknown key in every context (with `own` applied; `own_dim`
  // the dimension they belong to, skipped among the others), else nothing.
  std::optional<std::string> unknown_everywhere(const std::string& key, const Overrides& own,
                                                std::optional<std::size_t> own_dim) const {
    std::vector<const Overrides*> others = {nullptr};  // none, or one step of another dimension
    for (std::size_t d = 0; d < steps_.size(); ++d)
      if (!own_dim || d != *own_dim)
        for (const auto& at : steps_[d])
          if (!at.empty()) others.push_back(&at);
    std::optional<std::string> first;
    for (const auto& base : bases_)
      for (const Overrides* other : others) {
        const std::optional<std::string> why = unknown_in(base, key, own, other);
        if (!why) return std::nullopt;
        if (!first) first = why;
      }
    return first;
  }

  // The unknown-key message naming `key` (or a map on its path) in this context, else nothing.
  std::optional<std::string> unknown_in(const std::pair<std::string, config::Node>& base, const std::string& key,
                                        const Overrides& own, const Overrides* other) const {
    config::Node tree = base.second;
    const Overrides none;
    for (const Overrides* list : {&study_.set, other ? other : &none, &own})
      for (const auto& [k, v] : *list) {
        const std::string assignment = k + "=" + v.value_or("");
        if (auto applied = config::apply_override(tree, assignment, "the study's " + assignment); !applied) return std::nullopt;
      }
    try {
      (void)sim::decode_scenario(tree, catalogue_, formats_);
    } catch (const config::ConfigError& e) {
      const std::string what = e.what();
      std::vector<std::string> paths = {key};  // the key and the maps on its way: "a", "a.b", ...
      for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
        paths.push_back(key.substr(0, dot));
      for (const auto& path : paths)
        if (what.find(path + ": unknown key") != std::string::npos) return "applied to " + base.first + ": " + what;
    } catch (const std::exception&) {
      // a refusal that is not about the key: the point reports it
    }
    return std::nullopt;
  }

  const reports::Study& study_;
  const config::Catalogue& catalogue_;
  workloads::FormatTables formats_;
  std::vector<std::vector<Overrides>> steps_;                  // per dimension, per step: its axes' values
  std::vector<std::pair<std::string, config::Node>> bases_;    // each base scenario, parsed
};
}  // namespace

int sweep_command(const std::vector<std::string>& argv) {
  proc::forward_termination_signals();  // a kill stops the simulations it started too
  OptionSpec spec;
  spec.with_value = {"-o", "--output", "-j", "--jobs", "--configs", "--rank-timeout"};
  spec.flags = {"--json", "--help", "--retry-failed"};
  Args args(argv, spec);
  if (args.answered_help(kSweepHelp)) return 0;
  if (args.positional().size() != 1) throw UsageError("expected one study file (see --help)");
  const auto out = args.get(args.spelling("-o", "--output"));
  if (!out) throw UsageError("missing -o DIR (the results directory)");
  const int jobs = static_cast<int>(args.integer(args.spelling("-j", "--jobs"), default_jobs(), 1, 4096));
  const double stale_after_s = static_cast<double>(
      args.integer("--rank-timeout", static_cast<long long>(reports::kDefaultStaleAfterS), 1, 7 * 24 * 3600));
  const config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  const auto start = std::chrono::steady_clock::now();

  const reports::Study study = reports::load_study(args.positional()[0], catalogue.root());
  StudyKeyCheck(study, catalogue).run();
  reports::Rank rank;
  std::optional<reports::ResultsStore> store;
  std::optional<reports::Heartbeat> heartbeat;  // ranks of a multi-rank sweep only
  std::map<int, std::string> beats_at_start;     // rank 0: what DIR/ranks held before this run
  try {
    rank = reports::detect_rank([](const char* name) { return std::getenv(name); });
    store.emplace(*out);
    store->open_study(study);
    if (rank.rank == 0) store->rewrite_csv(study);  // rebuilt from results.jsonl after a crash
    if (rank.size > 1) {
      if (rank.rank == 0) beats_at_start = reports::read_heartbeats(*out, rank.size);
      heartbeat.emplace(*out, rank, reports::beat_interval_s(stale_after_s));
    }
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }

  reports::SweepOptions options;
  options.jobs = jobs;
  options.rank = rank;
  options.retry_failed = args.flag("--retry-failed");
  if (rank.size == 1) options.on_progress = ::isatty(STDERR_FILENO) ? draw_progress : log_progress;
  const std::string configs = catalogue.root().string();
  reports::SweepTally tally;
  try {
    tally = reports::run_sweep(study, *store, options, [&](const reports::Study& s, const reports::Point& p) {
      return run_point(s, p, configs);
    });
  } catch (const std::runtime_error& e) {
    // The results directory could not be written (a full disk): the reason, not an "internal
    // error"; the points recorded so far are kept and a rerun resumes.
    throw WriteError(std::string(e.what()) + " (the points recorded so far are kept; rerun to resume)");
  }
  if (heartbeat) heartbeat->finish();  // every point this rank owns is recorded
  if (rank.rank != 0) return 0;        // rank 0 waits for the others and reports
  if (rank.size > 1) {
    reports::WaitOptions wait;
    wait.ranks = rank.size;
    wait.stale_after_s = stale_after_s;
    wait.at_start = beats_at_start;
    const bool bar = ::isatty(STDERR_FILENO);
    wait.on_progress = bar ? draw_progress : log_progress;
    wait.on_lost = [bar](const std::string& m) {
      std::cerr << (bar ? "\n" : "") << "vramsim sweep: warning: " << m << "\n";
    };
    try {
      const reports::SweepTally all = reports::wait_for_all(study, *store, wait);
      tally.completed = all.completed;
      tally.failed = all.failed;
    } catch (const reports::RanksLost& e) {
      store->rewrite_csv(study);  // the partial results and their report, then the error
      print_report_paths(reports::write_report(*out));
      std::cerr << "vramsim sweep: error: " << e.what() << "\n";
      return 3;
    }
  }
  reports::ReportOutcome report;
  try {
    store->rewrite_csv(study);
    report = reports::write_report(*out);
  } catch (const std::runtime_error& e) {
    throw WriteError(e.what());
  }
  print_report_paths(report);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (args.flag("--json")) {
    json::Writer j;
    j.begin_object().field("study", study.name).field("dir", *out)
        .field("points", static_cast<std::int64_t>(tally.points))
        .field("completed", static_cast<std::int64_t>(tally.completed))
        .field("failed", static_cast<std::int64_t>(tally.failed))
        .field("resumed", static_cast<std::int64_t>(tally.resumed))
        .field("ran", static_cast<std::int64_t>(tally.ran))
        .field("jobs", jobs).field("ranks", rank.size).field("wall_s", wall)
        .field("report", report.html.string()).end_object();
    std::cout << j.str() << "\n";
  } else {
    std::cout << "vramsim sweep: " << study.name << ": " << tally.points << " points (" << tally.ran << " run now"
              << (rank.size > 1 ? " by rank 0 of " + std::to_string(rank.size) : std::string()) << ", " << tally.resumed
              << " already recorded) in " << clock(wall) << ": " << tally.completed << " completed, " << tally.failed
              << " failed\n"
              << "  results " << (*out) << "/results.jsonl, results.csv\n"
              << "  report  " << report.markdown.string() << ", " << report.html.string() << "\n";
    if (tally.failed) std::cout << "  the failed points and their errors are listed in the report\n";
  }
  return tally.failed ? 1 : 0;
}

int report_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.flags = {"--help"};
  Args args(argv, spec);
  if (args.answered_help(kReportHelp)) return 0;
  if (args.positional().size() != 1) throw UsageError("expected one results directory (see --help)");
  reports::ReportOutcome report;
  const std::string dir = args.positional()[0];
  try {
    (void)reports::read_manifest(dir);  // a folder that is no results directory: bad usage
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  try {
    report = reports::write_report(dir);
  } catch (const std::runtime_error& e) {
    throw WriteError(e.what());
  }
  print_report_paths(report);
  std::cout << "vramsim report: " << report.markdown.string() << ", " << report.html.string() << " (" << report.charts
            << " charts)\n";
  return 0;
}

}  // namespace vramsim::cli
