#include "reports/validation_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>

#include "reports/charts.h"

namespace vramsim::reports {
namespace {
namespace fs = std::filesystem;

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

std::string figure(double v) {
  return std::fabs(v) >= 100 ? fmt::format("{:.1f}", v) : std::fabs(v) >= 1 ? fmt::format("{:.3f}", v) : fmt::format("{:.4g}", v);
}

// The kind a case is listed under: its own, or one group for a dataset that names none.
std::string kind_of(const CaseResult& r) { return r.spec->kind.empty() ? "all cases" : r.spec->kind; }

// The kinds present, in case_kinds() order, then "all cases" when some case names none.
std::vector<std::string> kinds_present(const std::vector<CaseResult>& results) {
  std::vector<std::string> kinds;
  auto present = [&](const std::string& k) {
    return std::any_of(results.begin(), results.end(), [&](const CaseResult& r) { return !r.skipped && kind_of(r) == k; });
  };
  for (const auto& k : case_kinds())
    if (present(k)) kinds.push_back(k);
  if (present("all cases")) kinds.push_back("all cases");
  return kinds;
}

ReportTable group_table(const std::string& what, const std::vector<ErrorGroup>& groups) {
  ReportTable t;
  t.header = {what, "prediction rows", "median |error|", "max |error|"};
  for (const auto& g : groups) t.rows.push_back({g.group, std::to_string(g.rows), percent(g.median), percent(g.max)});
  return t;
}

ReportTable card_table(const PredictionSummary& s) {
  ReportTable t;
  t.header = {"card", "all"};
  for (const auto& k : case_kinds()) t.header.push_back(k);
  auto cell = [](const ErrorGroup& g) { return percent(g.median) + " (" + std::to_string(g.rows) + ")"; };
  for (const auto& c : s.by_card) {
    std::vector<std::string> row = {c.all.group, cell(c.all)};
    for (const auto& k : case_kinds()) {
      auto it = std::find_if(c.by_kind.begin(), c.by_kind.end(), [&](const ErrorGroup& g) { return g.group == k; });
      row.push_back(it == c.by_kind.end() ? "-" : cell(*it));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// One kind's chart in one unit: x measured, y predicted, both logarithmic; a series per engine
// of its prediction rows (in first-appearance order) and one of its calibration rows.
Chart kind_chart(const std::vector<CaseResult>& results, const std::string& kind, const std::string& unit) {
  Chart c;
  c.kind = Chart::Kind::Points;
  c.log_scale = true;
  c.title = kind + ": predicted against measured (" + unit + ")";
  c.xlabel = "measured (" + unit + ")";
  c.ylabel = "predicted (" + unit + ")";
  c.references = {{1.0, "predicted = measured"}, {1.25, "+-25%"}, {0.75, ""}};
  auto series = [&c](const std::string& name) -> Chart::Series& {
    auto it = std::find_if(c.series.begin(), c.series.end(), [&](const Chart::Series& s) { return s.name == name; });
    if (it != c.series.end()) return *it;
    c.series.push_back({name, {}, {}, {}, {}});
    return c.series.back();
  };
  for (const auto& r : results) {
    if (r.skipped || !r.predicted || kind_of(r) != kind || metric_unit(r.spec->metric) != unit) continue;
    if (*r.predicted <= 0 || r.spec->measured <= 0) continue;  // no place on a logarithmic axis
    const bool prediction = r.spec->role == "prediction";
    const std::string engine = r.spec->engine.empty() ? "prediction rows" : r.spec->engine;
    Chart::Series& s = series(prediction ? engine : std::string("calibration rows"));
    s.x.push_back(r.spec->measured);
    s.y.push_back(*r.predicted);
  }
  // Calibration rows last: the prediction rows are what the chart is about.
  std::stable_partition(c.series.begin(), c.series.end(), [](const Chart::Series& s) { return s.name != "calibration rows"; });
  return c;
}

}  // namespace

std::string metric_unit(const std::string& metric) {
  const std::string head = metric.substr(0, metric.find('.'));
  if (head.find("tok_s") != std::string::npos) return "tokens/s";
  if (head.size() > 2 && head.ends_with("_s")) return "seconds";
  return "";
}

ReportTable validation_kind_table(const std::vector<CaseResult>& results, const std::string& kind) {
  ReportTable t;
  t.header = {"case", "role", "engine", "card", "measured", "predicted", "error", "within tolerance"};
  for (const auto& r : results) {
    if (r.skipped || kind_of(r) != kind) continue;
    const auto& c = *r.spec;
    const bool relative = !(c.tolerance.absolute || c.measured == 0);
    const std::string error = !r.predicted ? "-" : relative ? percent(r.error) : figure(r.error);
    t.rows.push_back({c.name, c.role, c.engine.empty() ? "-" : c.engine, r.card.empty() ? "-" : r.card, figure(c.measured),
                      r.predicted ? figure(*r.predicted) : "none", error, r.pass ? "yes" : "no"});
  }
  return t;
}

ValidationReportOutcome write_validation_report(const fs::path& dir, const ValidationSet& set, const std::vector<CaseResult>& results) {
  ValidationReportOutcome outcome;
  const PredictionSummary summary = summarize_predictions(results);
  const std::string title = "Validation: " + set.name;
  std::size_t failed = 0, skipped = 0;
  for (const auto& r : results) {
    if (r.skipped)
      ++skipped;
    else if (!r.pass)
      ++failed;
  }
  const std::string status = std::to_string(results.size()) + " cases, " + std::to_string(failed) + " out of tolerance, " +
                             std::to_string(skipped) + " not simulated";

  std::string md = "# " + title + "\n\n" + set.source + "\n\n" + status + ". Made by `vramsim validate " + set.name +
                   " --report`; |error| = |predicted / measured - 1|.\n\n";
  auto open_section = [&](const std::string& heading, const std::string& text) {
    md += "## " + heading + "\n\n" + (text.empty() ? "" : text + "\n\n");
  };
  auto section = [&](const std::string& heading, const std::string& text, const std::vector<ReportTable>& tables) {
    open_section(heading, text);
    for (const auto& t : tables) md += page::md_table(t) + "\n";
  };
  if (summary.present)
    section("Prediction rows",
            "Rows that calibrated nothing (" + std::to_string(summary.calibration) + " calibration rows and " +
                std::to_string(summary.skipped) + " rows not simulated left out): " + std::to_string(summary.all.rows) +
                " rows, median |error| " + percent(summary.all.median) + ", max " + percent(summary.all.max) + ".",
            {group_table("kind", summary.by_kind), group_table("engine", summary.by_engine), card_table(summary)});

  page::ChartWriter charts(dir);
  const auto kinds = kinds_present(results);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const std::string& kind = kinds[i];
    auto group = std::find_if(summary.by_kind.begin(), summary.by_kind.end(), [&](const ErrorGroup& g) { return g.group == kind; });
    const std::string intro = group == summary.by_kind.end()
                                  ? std::string()
                                  : std::to_string(group->rows) + " prediction rows: median |error| " + percent(group->median) +
                                        ", max " + percent(group->max) + ".";
    open_section(kind, intro);
    for (const std::string unit : {"tokens/s", "seconds"}) {
      const Chart chart = kind_chart(results, kind, unit);
      if (chart.series.empty()) continue;
      charts.add(chart, "chart-" + std::to_string(i + 1) + (unit == "seconds" ? "-s" : ""), md);
    }
    md += page::md_table(validation_kind_table(results, kind)) + "\n";
  }
  charts.left_out_note(md);
  outcome.charts = charts.charts();
  outcome.warnings = charts.warnings();
  ReportTable not_run;
  not_run.header = {"case", "kind", "engine", "measured", "why not simulated"};
  for (const auto& r : results)
    if (r.skipped) not_run.rows.push_back({r.spec->name, r.spec->kind, r.spec->engine, figure(r.spec->measured), r.spec->skip});
  if (!not_run.rows.empty()) section("Rows not simulated", "", {not_run});
  outcome.markdown = dir / "report.md";
  outcome.html = dir / "report.html";
  page::write_file(outcome.markdown, md);
  page::write_file(outcome.html, page::html_page(title, md, &charts));
  return outcome;
}

}  // namespace vramsim::reports
