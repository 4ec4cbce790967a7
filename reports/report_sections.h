// The sections of a sweep's report (report.h): for each kind of section (decode, cliff,
// concurrency, links, breakdown), its charts and the table of the numbers behind them, read
// from the study's points and their records. Internal to reports/ (report.cc writes them).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/json_value.h"
#include "reports/charts.h"
#include "reports/report.h"

namespace vramsim::reports {

// The points of the study with their record (nullptr: not run yet).
struct ReportRow {
  const Point* point;
  const json::Value* record;
  bool ok() const;
  // REQUIRES: `path` is a metric of the table (run_metrics.h): a chart cannot name a field
  // the run does not write.
  double metric(const char* path) const;
};

// The study's points (REQUIRES: `points` outlives the rows) with their records, in order.
std::vector<ReportRow> report_rows(const std::vector<Point>& points, const std::map<std::string, PointRecord>& records);

struct SectionView {
  std::string title;
  std::string intro;
  std::vector<Chart> charts;
  ReportTable table;
};

// One section's charts and table.
SectionView section_view(const Study& study, const std::vector<ReportRow>& rows, const Section& section);

}  // namespace vramsim::reports
