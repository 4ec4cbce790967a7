// What vramsim's pages share (a sweep's report, validate --report, compare's page): escaping,
// tables in Markdown and HTML, the style sheet and the headless-browser check of the report
// pages, and whole-file writes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace page
}  // namespace vramsim::reports
