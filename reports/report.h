// The report of a sweep: DIR/report.md and a self-contained DIR/report.html (inline CSS and
// SVG charts, no script or file it must fetch, opens offline), plus DIR/charts/*.svg for the
// Markdown. One section per entry of the study's `sections`; each has its chart(s) drawn by
// gnuplot and the table of the numbers behind them; the study's inputs close the report.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "reports/page.h"
#include "reports/results_store.h"
#include "reports/study.h"

namespace vramsim::reports {


// The numbers of one section (also what docs/studies.md quotes).
ReportTable section_table(const Study& study, const Section& section, const std::map<std::string, PointRecord>& records);

struct ReportOutcome {
  std::filesystem::path markdown, html;
  std::size_t charts = 0;
  std::vector<std::string> warnings;  // e.g. gnuplot missing: the report then has tables only
};

// Reads DIR/study.json and DIR/results.jsonl and writes the report files (atomically).
// Throws std::runtime_error when DIR is not a sweep's results directory.
ReportOutcome write_report(const std::filesystem::path& dir);

}  // namespace vramsim::reports
