#include "reports/page.h"

#include <stdexcept>

#include <md4c-html.h>

#include "core/output_file.h"

namespace vramsim::reports::page {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

}  // namespace

// A table in Markdown. Built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on
// `" " + std::string`.
std::string md_table(const ReportTable& t) {
  std::string s = "|";
  for (const auto& h : t.header) ((s += ' ') += md_cell(h)) += " |";
  s += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i) s += "---|";
  s += "\n";
  for (const auto& row : t.rows) {
    s += "|";
    for (const auto& c : row) ((s += ' ') += md_cell(c)) += " |";
    s += "\n";
  }
  return s;
}

const char* const kStyle = R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td{white-space:nowrap}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure.chart{margin:1em 0}figure.chart svg{width:100%;height:auto;max-width:760px;display:block}
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em}details{margin:.5em 0}.warn{color:#a40}
)";

const char* const kChartCheck = R"(<script>
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('figure.chart svg'), shown = 0;
  charts.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && svg.querySelector('path, rect, polyline')) shown++;
    else console.error('chart not visible: ' + (svg.closest('figure').id || '?'));
  });
  document.documentElement.setAttribute('data-charts-visible', shown + '/' + charts.length);
});
</script>
)";

void write_file(const std::filesystem::path& p, const std::string& text) {
  if (auto written = io::write_file(p.string(), text); !written) throw std::runtime_error(written.error().message);
}

namespace {

// The page's <head> and the opening of its body.
std::string html_head(const std::string& title, const std::string& style) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html_escape(title) +
         "</title>\n<style>\n" + kStyle + style + "</style>\n</head>\n<body>\n";
}

// md4c's HTML of `markdown`: tables on, raw HTML escaped (a study's text cannot inject markup).
std::string render_markdown(const std::string& markdown) {
  std::string out;
  const int failed = md_html(
      markdown.data(), static_cast<MD_SIZE>(markdown.size()),
      [](const MD_CHAR* text, MD_SIZE size, void* sink) { static_cast<std::string*>(sink)->append(text, size); }, &out,
      MD_FLAG_TABLES | MD_FLAG_NOHTML, 0);
  if (failed) throw std::runtime_error("cannot render the page's Markdown to HTML (md4c failed)");
  return out;
}

// The paragraph md4c makes of a chart's image link, `<p><img src="charts/ID.svg" alt="..."></p>`,
// replaced by the chart's figure with its SVG inlined.
void inline_figure(std::string& html, const ChartWriter::Figure& f) {
  const std::string image = "<p><img src=\"charts/" + f.id + ".svg\"";
  const std::size_t at = html.find(image);
  if (at == std::string::npos) return;
  const std::size_t end = html.find("</p>", at);
  if (end == std::string::npos) return;
  html.replace(at, end + 4 - at,
               "<figure class=\"chart\" id=\"" + f.id + "\">\n" + f.svg + "\n<figcaption>" + html_escape(f.title) +
                   "</figcaption>\n</figure>");
}

}  // namespace

std::string html_page(const std::string& title, const std::string& markdown, const ChartWriter* charts, const std::string& style) {
  std::string body = render_markdown(markdown);
  if (charts)
    for (const auto& f : charts->figures()) inline_figure(body, f);
  return html_head(title, style) + body + (charts ? kChartCheck : "") + "</body>\n</html>\n";
}

ChartWriter::ChartWriter(std::filesystem::path dir) : dir_(std::move(dir)) { std::filesystem::create_directories(dir_ / "charts"); }

bool ChartWriter::add(const Chart& chart, const std::string& id, std::string& md) {
  if (!warnings_.empty()) return false;
  Result<std::string> svg = render_svg(chart);
  if (!svg) {
    warnings_.push_back("charts left out: " + svg.error().message);
    return false;
  }
  write_file(dir_ / "charts" / (id + ".svg"), *svg);
  md += "![" + chart.title + "](charts/" + id + ".svg)\n\n";
  figures_.push_back({id, chart.title, inline_svg(*svg, id + "-")});
  return true;
}

void ChartWriter::left_out_note(std::string& md) const {
  if (warnings_.empty()) return;
  md += "_Charts left out: " + warnings_.front() + "_\n\n";
}

}  // namespace vramsim::reports::page
