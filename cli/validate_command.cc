// `vramsim validate [DATASET] [--json]`: runs every simulation a validation dataset names (one
// process each: SimGrid allows one engine per process; a TBB pool runs them in parallel),
// compares predictions with measurements and exits 1 when a case is out of tolerance.
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <optional>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "cli/write_error.h"
#include "core/config_reader.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "reports/parallel_children.h"
#include "reports/validation.h"
#include "reports/validation_report.h"
#include "sim/stats.h"

namespace vramsim::cli {
namespace {
// fmt::format to std::cout: stdout is written only through std::cout (main checks that it was written).
template <class... Args>
void say(fmt::format_string<Args...> format, Args&&... args) {
  std::cout << fmt::format(format, std::forward<Args>(args)...);
}
}  // namespace

namespace {
namespace fs = std::filesystem;

// Runs one simulation in its own process; returns its outputs or throws with its stderr.
reports::RunOutput run_one(const reports::ValidationRun& run, const config::Catalogue& catalogue, const fs::path& dir) {
  const fs::path requests = dir / (run.name + ".jsonl");
  std::vector<std::string> argv = {proc::self_executable(), "run", (catalogue.root() / run.scenario).string(),
                                   "--configs", catalogue.root().string(), "--json", "--requests-out",
                                   requests.string()};
  for (const auto& s : run.set) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  const proc::ProcessResult child = proc::run(argv);
  // A run whose every request was rejected exits 1 with its summary: a case may check those
  // rejections (requests.rejected_by_reason).
  auto summary = config::parse_yaml(child.out, run.name + " output");
  const config::Node* counts = summary ? summary->find("requests") : nullptr;
  const config::Node* completed = counts ? counts->find("completed") : nullptr;
  const bool all_rejected = child.exit_code == 1 && completed && completed->text() == "0";
  if (child.exit_code != 0 && !all_rejected) throw std::runtime_error("run " + run.name + " failed: " + child.err);
  reports::RunOutput out;
  if (!summary) throw std::runtime_error("run " + run.name + ": unreadable output: " + summary.error().message);
  out.summary = std::move(summary).value();
  std::ifstream lines(requests);
  for (std::string line; std::getline(lines, line);) {
    auto rec = config::parse_yaml(line, requests.string());
    if (!rec) continue;
    const auto* o = rec->find("pcie_overflow");
    const auto* d = rec->find("decode_tok_s");
    // null: no decode step, or no expert looked up (a dense model): no point for the buckets
    if (o && d && o->is_scalar() && d->is_scalar())
      out.requests.emplace_back(std::stod(o->text()), std::stod(d->text()));
  }
  return out;
}

std::string figure(double v) { return units::fixed(v, std::fabs(v) >= 100 ? 1 : std::fabs(v) >= 1 ? 3 : 4); }

// validate's --json document (also DIR/validation.json of --report).
std::string validation_json(const reports::ValidationSet& set, const std::vector<reports::CaseResult>& results,
                            const reports::PredictionSummary& summary, int failed, double median, double worst) {
  json::Writer j;
  j.begin_object().field("dataset", set.name).field("cases", static_cast<std::int64_t>(results.size()))
      .field("failed", failed).field("median_abs_error", median).field("max_abs_error", worst);
  j.key("rows").begin_array();
  for (const auto& r : results) {
    j.begin_object().field("name", r.spec->name).field("role", r.spec->role).field("measured", r.spec->measured);
    j.key("predicted").value(r.predicted);
    j.field("error", r.error).field("tolerance", r.spec->tolerance.value)
        .field("tolerance_kind", r.spec->tolerance.absolute ? "absolute" : "relative").field("pass", r.pass);
    if (r.spec->bucket) j.field("requests", static_cast<std::int64_t>(r.samples));
    if (!r.spec->kind.empty()) j.field("kind", r.spec->kind);
    if (!r.spec->engine.empty()) j.field("engine", r.spec->engine);
    if (!r.card.empty()) j.field("card", r.card);
    if (r.skipped) j.field("skip", r.spec->skip);
    j.end_object();
  }
  j.end_array();
  if (summary.present) {
    auto group = [&j](const reports::ErrorGroup& g) {
      j.begin_object().field("group", g.group).field("rows", static_cast<std::int64_t>(g.rows))
          .field("median_abs_error", g.median).field("max_abs_error", g.max).end_object();
    };
    j.key("predictions").begin_object();
    j.field("calibration_cases", static_cast<std::int64_t>(summary.calibration))
        .field("skipped_cases", static_cast<std::int64_t>(summary.skipped));
    j.key("all");
    group(summary.all);
    j.key("by_kind").begin_array();
    for (const auto& g : summary.by_kind) group(g);
    j.end_array();
    j.key("by_engine").begin_array();
    for (const auto& g : summary.by_engine) group(g);
    j.end_array();
    j.key("by_card").begin_array();
    for (const auto& c : summary.by_card) {
      j.begin_object().field("card", c.all.group).field("rows", static_cast<std::int64_t>(c.all.rows))
          .field("median_abs_error", c.all.median).field("max_abs_error", c.all.max);
      j.key("by_kind").begin_array();
      for (const auto& g : c.by_kind) group(g);
      j.end_array().end_object();
    }
    j.end_array().end_object();
  }
  j.end_object();
  return j.str();
}

// validate --report DIR: the page (reports/validation_report.h) and DIR/validation.json, the
// --json document, which marks the folder as validate's. A folder that holds files but no
// validation.json is refused: a typo in DIR must not overwrite a user's files.
void check_report_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw UsageError("--report " + dir.string() + ": not a folder");
  if (fs::is_empty(dir, ec) || fs::exists(dir / "validation.json", ec)) return;
  throw UsageError("--report " + dir.string() + ": the folder holds files and no validation.json (no report of validate's): "
                   "name an empty or new folder");
}

void write_report_files(const fs::path& dir, const reports::ValidationSet& set, const std::vector<reports::CaseResult>& results,
                        const std::string& json_text) {
  const auto outcome = reports::write_validation_report(dir, set, results);
  reports::page::write_file(dir / "validation.json", json_text + "\n");
  for (const auto& w : outcome.warnings) std::cerr << "vramsim validate: warning: " << w << "\n";
  std::cerr << "vramsim validate: wrote " << outcome.html.string() << " and " << outcome.markdown.string() << " (" << outcome.charts
            << " chart" << (outcome.charts == 1 ? "" : "s") << ")\n";
}

}  // namespace

int validate_command(const std::vector<std::string>& argv) {
  proc::forward_termination_signals();  // a kill stops the simulations it started too
  OptionSpec spec;
  spec.with_value = {"--configs", "-j", "--jobs", "--report"};
  spec.flags = {"--json", "--help"};
  Args args(argv, spec);
  if (args.flag("--help")) {
    std::cout << "usage: vramsim validate [DATASET] [--json] [--report DIR] [-j|--jobs N]\n\n"
                 "Runs the simulations of a validation dataset (configs/validation/DATASET.yaml, default\n"
                 "case-study) in parallel processes, prints prediction, measurement and error per case, and\n"
                 "exits 1 when a case is out of its tolerance. A dataset whose cases name a `kind` or an `engine`\n"
                 "(configs/validation/public-corpus.yaml) also gets the median and max |error| of its prediction\n"
                 "cases by kind, by engine and by card; a case with `skip: REASON` is listed, not simulated.\n"
                 "--report DIR also writes DIR/report.html and DIR/report.md: that summary, a log-log chart of\n"
                 "predicted against measured per kind (gnuplot), each kind's rows, and DIR/validation.json (the\n"
                 "--json document). DIR must be new, empty, or a report of validate's.\n";
    return 0;
  }
  if (args.positional().size() > 1) throw UsageError("expected at most one dataset (see --help)");
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  const std::string name = args.positional().empty() ? "case-study" : args.positional()[0];
  const fs::path file = name.ends_with(".yaml") ? fs::path(name) : catalogue.root() / "validation" / (name + ".yaml");
  if (!name.ends_with(".yaml") && !fs::exists(file)) {
    std::string known;
    for (const auto& n : catalogue.names("validation")) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("no validation dataset \"" + name + "\" (datasets: " + known + "; or a .yaml file)");
  }
  std::optional<fs::path> report_dir;
  if (auto r = args.get("--report")) {
    if (r->empty()) throw UsageError("--report needs a folder");
    report_dir = fs::path(*r);
    check_report_dir(*report_dir);  // before the runs: a refused folder costs no simulation
  }
  auto tree = config::load_yaml_file(file.string());
  if (!tree) throw config::ConfigError(tree.error());
  const reports::ValidationSet set = reports::decode_validation_set(*tree);

  // A folder of its own with an unpredictable name (mkdtemp: created 0700, never one planted
  // under a name guessed in advance), for the runs' request logs.
  std::string dir_template = (fs::temp_directory_path() / "vramsim-validate-XXXXXX").string();
  if (!::mkdtemp(dir_template.data()))
    throw WriteError("cannot create a temporary folder in " + fs::temp_directory_path().string() + ": " + std::strerror(errno));
  const fs::path dir = dir_template;
  std::map<std::string, reports::RunOutput> outputs;
  std::vector<reports::RunOutput> slots(set.runs.size());
  std::vector<std::string> failures(set.runs.size());
  const int jobs = static_cast<int>(args.integer(args.spelling("-j", "--jobs"), tbb::this_task_arena::max_concurrency(), 1, 1024));
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::atomic<int> finished{0};
  reports::for_each_in_parallel(jobs, set.runs.size(), [&](std::size_t i) {
    try {
      slots[i] = run_one(set.runs[i], catalogue, dir);
    } catch (const std::exception& e) {
      failures[i] = e.what();
    }
    const int done = ++finished;
    if (progress)
      std::cerr << "\r  simulated " << done << "/" << set.runs.size() << " runs" << (done == static_cast<int>(set.runs.size()) ? "\n" : "")
                << std::flush;
  });
  fs::remove_all(dir);
  for (std::size_t i = 0; i < set.runs.size(); ++i) {
    if (!failures[i].empty()) {
      std::cerr << "vramsim validate: " << failures[i] << "\n";
      return 1;
    }
    outputs[set.runs[i].name] = std::move(slots[i]);
  }

  const auto results = reports::evaluate(set, outputs);
  std::vector<double> rel_errors;
  int failed = 0;
  for (const auto& r : results) {
    if (!r.pass) ++failed;
    if (r.predicted && r.spec->measured != 0) rel_errors.push_back(std::fabs(*r.predicted / r.spec->measured - 1.0));
  }
  const double median = sim::percentile(rel_errors, 0.5);
  const double worst = rel_errors.empty() ? 0.0 : *std::max_element(rel_errors.begin(), rel_errors.end());
  // The corpus protocol's summary (prediction rows only, by kind, by engine and by card): printed only for
  // a dataset whose cases name a kind or an engine, so the other datasets' output is unchanged.
  const reports::PredictionSummary summary = reports::summarize_predictions(results);

  const std::string json_text = validation_json(set, results, summary, failed, median, worst);
  if (report_dir) {
    // The marker of a folder validate wrote: one without it that holds files is not overwritten.
    write_report_files(*report_dir, set, results, json_text);
  }
  if (args.flag("--json")) {
    std::cout << json_text << "\n";
  } else {
    std::cout << "vramsim validate: " << set.name << " (" << set.source << ")\n\n";
    say("  {:<44} {:>10} {:>10} {:>9} {:>9}  {:<4} {}\n", "case", "predicted", "measured", "error", "tolerance", "", "role");
    for (const auto& r : results) {
      const auto& c = *r.spec;
      const bool rel = !(c.tolerance.absolute || c.measured == 0);
      std::string err = r.predicted ? (rel ? figure(100 * r.error) + "%" : figure(r.error)) : "-";
      std::string tol = rel ? figure(100 * c.tolerance.value) + "%" : figure(c.tolerance.value);
      std::string label = c.name + (c.bucket ? " [" + std::to_string(r.samples) + " req]" : "");
      std::string role = c.role;
      if (!c.kind.empty()) role += " " + c.kind;
      if (!c.engine.empty()) role += " " + c.engine;
      if (r.skipped) role += " (" + c.skip + ")";
      say("  {:<44} {:>10} {:>10} {:>9} {:>9}  {:<4} {}\n", label, r.skipped ? "-" : r.predicted ? figure(*r.predicted) : "none",
          figure(c.measured), err, r.skipped ? "-" : tol, r.skipped ? "skip" : r.pass ? "ok" : "FAIL", role);
    }
    if (rel_errors.empty())
      say("\n  {} cases, {} failed; no relative error (no case has both a prediction and a non-zero measurement)\n",
                  results.size(), failed);
    else
      say("\n  {} cases, {} failed; median |error| {:.1f}%, max {:.1f}% (relative, cases with a non-zero measurement)\n",
                  results.size(), failed, 100 * median, 100 * worst);
    if (summary.present) {
      say("\n  predictions only ({} calibration cases and {} skipped cases left out): |error| by kind, by engine and by card\n",
                  summary.calibration, summary.skipped);
      say("  {:<14} {:>6} {:>9} {:>9}\n", "", "rows", "median", "max");
      auto line = [](const reports::ErrorGroup& g) {
        say("  {:<14} {:>6} {:>8.1f}% {:>8.1f}%\n", g.group, g.rows, 100 * g.median, 100 * g.max);
      };
      for (const auto& g : summary.by_kind) line(g);
      say("\n");
      for (const auto& g : summary.by_engine) line(g);
      say("\n");
      line(summary.all);
      say("\n  by card: median |error| (rows) of its prediction cases, all and by kind\n");
      say("  {:<24} {:>13}", "", "all");
      for (const auto& k : reports::case_kinds()) say(" {:>13}", k);
      say("\n");
      auto cell = [](const reports::ErrorGroup& g) {
        say(" {:>13}", fmt::format("{:.1f}% ({})", 100 * g.median, g.rows));
      };
      for (const auto& c : summary.by_card) {
        say("  {:<24}", c.all.group);
        cell(c.all);
        for (const auto& k : reports::case_kinds()) {
          auto it = std::find_if(c.by_kind.begin(), c.by_kind.end(), [&](const reports::ErrorGroup& g) { return g.group == k; });
          if (it == c.by_kind.end())
            say(" {:>13}", "-");
          else
            cell(*it);
        }
        say("\n");
      }
    }
  }
  return failed ? 1 : 0;
}

}  // namespace vramsim::cli
