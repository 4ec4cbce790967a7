// `vramsim validate --report DIR`: a validation dataset's results as a page, DIR/report.md and a
// self-contained DIR/report.html (inline style and SVG, opens offline), with DIR/charts/*.svg for
// the Markdown, by the machinery of a sweep's report (charts.h, page.h). It opens with the
// prediction-only summary (by kind, by engine, by card); then, per kind, a log-log chart of
// predicted against measured (one series per engine, the calibration rows apart, the lines
// predicted = measured and +-25%) for each unit its rows measure (tokens/s, seconds), and the
// kind's rows; the rows not simulated close it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "reports/page.h"
#include "reports/validation.h"

namespace vramsim::reports {

struct ValidationReportOutcome {
  std::filesystem::path markdown, html;
  std::size_t charts = 0;
  std::vector<std::string> warnings;  // gnuplot missing: the page then has tables only
};

// The unit a case's metric is in, from its name: "tokens/s" (`*tok_s*`), "seconds" (`*_s`,
// `*_s.*`), or "" (a count, a share, watts: not charted).
std::string metric_unit(const std::string& metric);

// The rows of one kind's table (every case of that kind, skipped ones left out).
ReportTable validation_kind_table(const std::vector<CaseResult>& results, const std::string& kind);

// Writes the page into `dir` (created if absent). REQUIRES: `results` evaluate `set`.
// Throws std::runtime_error when a file cannot be written.
ValidationReportOutcome write_validation_report(const std::filesystem::path& dir, const ValidationSet& set,
                                                const std::vector<CaseResult>& results);

}  // namespace vramsim::reports
