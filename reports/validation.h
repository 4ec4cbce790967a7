// Validation datasets (configs/validation/*.yaml): measured figures, the simulations that
// predict them, and the comparison. Pure: running the simulations is the caller's job (one
// process per run, see cli/validate_command.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config_tree.h"

namespace vramsim::reports {

struct ValidationRun {
  std::string name;
  std::string scenario;            // path relative to the catalogue root
  std::vector<std::string> set;    // --set overrides
};

struct Tolerance {
  double value = 0;
  bool absolute = false;           // "0.015 abs" vs "10%"
};

struct ValidationCase {
  std::string name;
  std::string role;                // prediction | calibration (...) | fit input
  std::string run;                 // a run name, or "all" for bucket cases
  std::string metric;              // dotted path in the run's --json output
  config::Origin metric_origin;    // where `metric` was written, for an error about it
  std::string metric_key;          // its key path, "cases[3].metric"
  std::optional<std::pair<double, double>> bucket;  // [lo, hi) of pcie_overflow: decode p50 of those requests
  double measured = 0;
  Tolerance tolerance;
};

struct ValidationSet {
  std::string name;
  std::string source;
  std::vector<ValidationRun> runs;
  std::vector<ValidationCase> cases;
};

// Throws ConfigError on a malformed dataset.
ValidationSet decode_validation_set(const config::Node& root);

// What each run produced: its summary (the parsed --json object) and, per request, the
// (pcie_overflow, decode_tok_s) pairs from --requests-out.
struct RunOutput {
  config::Node summary;
  std::vector<std::pair<double, double>> requests;
};

struct CaseResult {
  const ValidationCase* spec = nullptr;
  std::optional<double> predicted;  // none: no request in the bucket, or the metric is missing
  double error = 0;                 // relative (predicted / measured - 1) or absolute difference
  std::size_t samples = 0;          // bucket cases: requests in the bucket
  bool pass = false;
};

// Throws ConfigError (at the case's `metric`) when a metric names no value in its run's output,
// or a value that is not a number (null, a figure the run has none of, is a prediction of none).
std::vector<CaseResult> evaluate(const ValidationSet& set, const std::map<std::string, RunOutput>& outputs);

}  // namespace vramsim::reports
