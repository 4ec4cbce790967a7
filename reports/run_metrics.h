// The run summary's metric table: every field `vramsim run --json` writes, by its dotted path
// ("cache.slots"; "cards[].gpu" for a field of every element of an array), with its unit and a
// one-line definition. The JSON writer (run_summary.cc), results.csv's columns
// (results_store.cc), the sweep report's charts and tables (report.cc) and
// docs/json-schema.md are checked against it (tests/run_metrics_test.cc): a metric added to
// one of them and not to this table fails a test.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace vramsim::reports {

struct RunMetric {
  std::string_view path;        // dotted JSON path; "[]" marks an array's elements
  std::string_view unit;        // docs/json-schema.md's Unit column ("" for names, flags, counts)
  std::string_view definition;  // one line; docs/json-schema.md has the full meaning
};

// Every metric, in the order the JSON writes them.
std::span<const RunMetric> run_metrics();
// The metric at `path`, or nullptr. An object's path ("ttft_s") names no metric: its fields do.
const RunMetric* find_run_metric(std::string_view path);
// results.csv's metric columns, in their order: each a metric of the table.
const std::vector<std::string_view>& csv_metric_paths();

}  // namespace vramsim::reports
