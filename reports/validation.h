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
  // The corpus protocol (configs/validation/public-corpus.yaml): what the row measures, which
  // engine measured it, and, for a row the catalogue cannot express yet, why it is not run.
  std::string kind;                // decode | prefill | offload | serving | multi-card, or "" (not given)
  std::string engine;              // the measuring engine ("llama.cpp", "ktransformers", ...), or ""
  std::string skip;                // non-empty: not simulated, not in any summary; the reason
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
  bool skipped = false;             // a `skip` case: neither simulated nor failed
  // The card(s) its run simulated, from the run's --json `cards`: "rtx-4090", "2x rtx-3090",
  // "rtx-4090 + rtx-3090"; "" for a bucket case (several runs) or a skipped one.
  std::string card;
};

// How a machine's cards are labelled (CaseResult::card, and compare's error-bar look-up):
// "rtx-4090", "2x rtx-3090", "rtx-4090 + rtx-3090" (in the cards' order); "" for none.
std::string cards_label(const std::vector<std::string>& cards);

// Throws ConfigError (at the case's `metric`) when a metric names no value in its run's output,
// or a value that is not a number (null, a figure the run has none of, is a prediction of none).
std::vector<CaseResult> evaluate(const ValidationSet& set, const std::map<std::string, RunOutput>& outputs);

// The kinds a case's `kind` may name, in the order summaries list them.
const std::vector<std::string>& case_kinds();

// Prediction-only |relative error| of one group of cases (a kind, an engine, or all).
struct ErrorGroup {
  std::string group;
  std::size_t rows = 0;             // prediction cases with a prediction and a non-zero measurement
  double median = 0;
  double max = 0;
};

// validate's summary over cases with `role: prediction` that were simulated (not skipped) and
// have a relative error; calibration cases and skipped ones are only counted. Kinds in
// case_kinds() order, engines in first-appearance order; a group with no such case is left out.
struct PredictionSummary {
  bool present = false;             // some case names a kind or an engine: the summary is printed
  ErrorGroup all;
  std::vector<ErrorGroup> by_kind;
  std::vector<ErrorGroup> by_engine;
  // Per card (CaseResult::card, in name order): all its rows, then each kind it has rows of
  // (case_kinds() order). The per-card table of docs/validation.md.
  struct Card {
    ErrorGroup all;                  // group: the card
    std::vector<ErrorGroup> by_kind;
  };
  std::vector<Card> by_card;
  std::size_t calibration = 0;      // simulated calibration cases
  std::size_t skipped = 0;
};
PredictionSummary summarize_predictions(const std::vector<CaseResult>& results);

}  // namespace vramsim::reports
