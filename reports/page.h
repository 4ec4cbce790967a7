// What vramsim's pages share (a sweep's report, validate --report, compare's page): each is
// written once in Markdown and rendered to HTML by md4c (html_page), with its charts inlined,
// the style sheet and the headless-browser check; tables in Markdown; whole-file writes.
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
std::string md_table(const ReportTable& t);  // cells' '|' escaped, newlines made spaces
// The report pages' inline style sheet (no file it must fetch: opens offline).
extern const char* const kStyle;
// A script that marks the page once laid out with the number of charts drawn and visible
// (data-charts-visible="N/M"); the page needs no script to be read, it only lets a headless
// browser check the charts.
extern const char* const kChartCheck;
// Writes `text` to `p` atomically (core/output_file.h); throws std::runtime_error with the reason.
void write_file(const std::filesystem::path& p, const std::string& text);

class ChartWriter;

// A report page written once, in Markdown, made a self-contained HTML page: `markdown` rendered
// by md4c (tables; raw HTML in the text is escaped, not passed through), titled `title`, styled
// by kStyle (and `style`, appended), each chart `charts` added inlined as an SVG figure where the
// Markdown links it, and kChartCheck.
std::string html_page(const std::string& title, const std::string& markdown, const ChartWriter* charts,
                      const std::string& style = {});

// Puts charts on a page: each drawn by gnuplot into DIR/charts/ID.svg and linked from the
// Markdown; html_page inlines them. After the first chart gnuplot cannot draw (it is missing,
// say) the rest are left out, and the page says why once (left_out_note).
class ChartWriter {
 public:
  explicit ChartWriter(std::filesystem::path dir);
  // Appends `chart` to `md` as figure `id`; false when it is left out.
  bool add(const Chart& chart, const std::string& id, std::string& md);
  // The "charts left out" line, when a chart was: appended to `md`.
  void left_out_note(std::string& md) const;
  std::size_t charts() const { return figures_.size(); }
  // "charts left out: WHY", once, or nothing.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // A chart added: its id, title and SVG as inlined in the HTML.
  struct Figure {
    std::string id, title, svg;
  };
  const std::vector<Figure>& figures() const { return figures_; }

 private:
  std::filesystem::path dir_;
  std::vector<Figure> figures_;
  std::vector<std::string> warnings_;
};

}  // namespace page
}  // namespace vramsim::reports
