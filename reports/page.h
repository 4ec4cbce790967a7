// What vramsim's pages share (a sweep's report, validate --report, compare's page): escaping,
// tables in Markdown and HTML, the style sheet and the headless-browser check of the report
// pages, and whole-file writes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "reports/charts.h"

namespace vramsim::reports {

struct ReportTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

namespace page {

std::string html_escape(const std::string& s);
std::string md_table(const ReportTable& t);    // cells' '|' escaped, newlines made spaces
std::string html_table(const ReportTable& t);  // cells escaped
// The report pages' inline style sheet (no file it must fetch: opens offline).
extern const char* const kStyle;
// A script that marks the page once laid out with the number of charts drawn and visible
// (data-charts-visible="N/M"); the page needs no script to be read, it only lets a headless
// browser check the charts.
extern const char* const kChartCheck;
// Writes `text` to `p` atomically (core/output_file.h); throws std::runtime_error with the reason.
void write_file(const std::filesystem::path& p, const std::string& text);

// A report page's opening, up to its first heading: doctype, title, kStyle, <h1>title</h1>.
std::string html_head(const std::string& title);

// Puts charts on a page: each drawn by gnuplot into DIR/charts/ID.svg, linked from the
// Markdown and inlined in the HTML. After the first chart gnuplot cannot draw (it is missing,
// say) the rest are left out, and the page says why once (left_out_note).
class ChartWriter {
 public:
  explicit ChartWriter(std::filesystem::path dir);
  // Appends `chart` to `md` and `html` as figure `id`; false when it is left out.
  bool add(const Chart& chart, const std::string& id, std::string& md, std::string& html);
  // The "charts left out" line, when a chart was: appended to both.
  void left_out_note(std::string& md, std::string& html) const;
  std::size_t charts() const { return charts_; }
  // "charts left out: WHY", once, or nothing.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::filesystem::path dir_;
  std::size_t charts_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace page
}  // namespace vramsim::reports
