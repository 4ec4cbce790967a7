#include "reports/report.h"

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/output_file.h"
#include "reports/charts.h"
#include "reports/report_sections.h"

namespace vramsim::reports {
namespace {
namespace fs = std::filesystem;
using page::md_table;
using page::write_file;

std::string value_text(const SetValue& v) { return v ? *v : "(unset)"; }

// A fence for `text` as a Markdown code block: longer than any run of backticks in it.
std::string fence_for(const std::string& text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) longest = std::max(longest, run = c == '`' ? run + 1 : 0);
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

// The study's inputs: scenario, seed, fixed overrides, axes, the files verbatim.
void inputs(const Study& s, std::string& md) {
  ReportTable axes;
  axes.header = {"axis", "key", "values", "labels"};
  for (const auto& d : s.dimensions)
    for (const auto& a : d.axes) {
      std::string values, labels;
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        values += (i ? ", " : "") + value_text(a.values[i]);
        labels += (i ? ", " : "") + d.labels[i];
      }
      axes.rows.push_back({d.name, a.key, values, labels});
    }
  ReportTable fixed;
  fixed.header = {"key", "value"};
  fixed.rows.push_back({"scenario", s.scenario});
  fixed.rows.push_back({"seed", s.seed ? std::to_string(*s.seed) : "the scenario's"});
  for (const auto& [k, v] : s.set) fixed.rows.push_back({k, value_text(v)});
  md += "## Inputs\n\nEvery point runs `vramsim run` on the scenario with these overrides, plus one value of each axis.\n\n" +
        md_table(fixed) + "\n" + md_table(axes) + "\n";
  for (const auto& [path, text] : s.inputs) {
    const std::string fence = fence_for(text);
    md += "### " + path + "\n\n" + fence + "yaml\n" + text + (text.ends_with("\n") ? "" : "\n") + fence + "\n\n";
  }
}

}  // namespace

ReportTable section_table(const Study& study, const Section& section, const std::map<std::string, PointRecord>& records) {
  const std::vector<Point> points = study.points();
  return section_view(study, report_rows(points, records), section).table;
}

ReportOutcome write_report(const fs::path& dir) {
  ResultsStore store(dir);
  const Study study = read_manifest(dir);
  const auto records = store.load();
  const std::vector<Point> points = study.points();
  const std::vector<ReportRow> rows = report_rows(points, records);
  ReportOutcome outcome;
  if (const auto& bad = store.unreadable_lines(); !bad.empty()) {
    std::string lines;
    for (std::size_t i = 0; i < bad.size() && i < 10; ++i) lines += (i ? ", " : "") + std::to_string(bad[i]);
    outcome.warnings.push_back((dir / "results.jsonl").string() + ": " + std::to_string(bad.size()) + " line" +
                               (bad.size() > 1 ? "s are" : " is") + " not a record (line " + lines + (bad.size() > 10 ? ", ..." : "") +
                               "), ignored: a point with no readable record counts as not run, and the next sweep runs it");
  }

  std::size_t ok = 0, failed = 0;
  for (const auto& r : rows) (r.ok() ? ok : failed) += r.record ? 1 : 0;
  const std::size_t missing = study.point_count() - ok - failed;
  std::string status = std::to_string(study.point_count()) + " points: " + std::to_string(ok) + " completed, " +
                       std::to_string(failed) + " failed" + (missing ? ", " + std::to_string(missing) + " not run yet" : "");

  std::string md = "# " + study.title + "\n\n";
  if (!study.description.empty()) md += study.description + "\n\n";
  md += "Study `" + study.name + "` (" + study.source + "): " + status + ". Made by `vramsim report`.\n\n";

  page::ChartWriter charts(dir);
  for (std::size_t i = 0; i < study.sections.size(); ++i) {
    const SectionView v = section_view(study, rows, study.sections[i]);
    md += "## " + v.title + "\n\n" + v.intro + "\n\n";
    for (std::size_t k = 0; k < v.charts.size(); ++k) {
      std::string id = "chart-";
      id += std::to_string(i + 1);
      if (v.charts.size() > 1) (id += '-') += std::to_string(k + 1);
      charts.add(v.charts[k], id, md);
    }
    md += md_table(v.table) + "\n";
  }
  charts.left_out_note(md);
  outcome.charts = charts.charts();
  outcome.warnings.insert(outcome.warnings.end(), charts.warnings().begin(), charts.warnings().end());

  ReportTable failures;
  failures.header = {"point", "error"};
  for (const auto& r : rows)
    if (r.record && !r.ok()) {
      const std::string label = study.label(*r.point);
      failures.rows.push_back({label.empty() ? study.name : label, r.record->find("error") ? r.record->find("error")->text() : ""});
    }
  if (!failures.rows.empty()) md += "## Failed points\n\n" + md_table(failures) + "\n";
  inputs(study, md);
  outcome.markdown = dir / "report.md";
  outcome.html = dir / "report.html";
  write_file(outcome.markdown, md);
  write_file(outcome.html, page::html_page(study.title, md, &charts));
  return outcome;
}

}  // namespace vramsim::reports
