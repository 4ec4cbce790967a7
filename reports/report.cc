#include "reports/report.h"

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/output_file.h"
#include "reports/charts.h"
#include "reports/run_metrics.h"

namespace vramsim::reports {
namespace {
namespace fs = std::filesystem;

// The points of the study with their record (nullptr: not run yet).
struct Row {
  const Point* point;
  const json::Value* record;
  bool ok() const { return record && record->find("status") && record->find("status")->text() == "ok"; }
  // REQUIRES: `path` is a metric of the table (run_metrics.h): a chart cannot name a field
  // the run does not write.
  double metric(const char* path) const {
    if (!find_run_metric(path)) throw std::logic_error(std::string("the report reads ") + path + ", not in the metric table");
    const json::Value* v = ok() ? record->at_path(path) : nullptr;
    return v ? v->number() : NAN;
  }
};

std::string fmt(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
std::string pct(double v) { return std::isfinite(v) ? fmt(100 * v, 1) + "%" : "-"; }

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

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

// A numeric x axis: every value of the dimension's first axis a number with the same unit.
std::optional<std::pair<std::vector<double>, std::string>> numeric_axis(const Dimension& d) {
  std::vector<double> xs;
  std::string unit;
  for (std::size_t i = 0; i < d.axes.front().values.size(); ++i) {
    const auto& v = d.axes.front().values[i];
    if (!v) return std::nullopt;
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(*v, &used);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    const std::string u = v->substr(used);
    if (i == 0) unit = u;
    else if (u != unit) return std::nullopt;
    xs.push_back(x);
  }
  return std::make_pair(xs, unit);
}

struct SectionView {
  std::string title;
  std::string intro;
  std::vector<Chart> charts;
  ReportTable table;
};

class Builder {
 public:
  Builder(const Study& s, const std::map<std::string, PointRecord>& records) : study_(s), points_(s.points()) {
    for (const auto& p : points_) {
      auto it = records.find(point_key(p));
      rows_.push_back({&p, it == records.end() ? nullptr : &it->second.record});
    }
  }

  SectionView section(const Section& sec) const {
    SectionView v;
    if (sec.kind == "decode") decode(sec, v);
    else if (sec.kind == "cliff") cliff(sec, v);
    else if (sec.kind == "concurrency") concurrency(sec, v);
    else if (sec.kind == "links") links(sec, v);
    else breakdown(sec, v);
    if (!sec.title.empty()) v.title = sec.title;
    return v;
  }

  const std::vector<Row>& rows() const { return rows_; }

 private:
  // Leading columns of every table: one per dimension, then the status.
  std::vector<std::string> label_header() const {
    std::vector<std::string> h;
    for (const auto& d : study_.dimensions) h.push_back(d.name);
    return h;
  }
  std::vector<std::string> label_cells(const Row& r) const {
    std::vector<std::string> c;
    for (std::size_t d = 0; d < study_.dimensions.size(); ++d) c.push_back(study_.dimensions[d].labels[r.point->steps[d]]);
    return c;
  }
  void add_row(ReportTable& t, const Row& r, std::vector<std::string> values) const {
    auto cells = label_cells(r);
    if (!r.ok()) {
      values.assign(values.size(), "-");
      values.front() = r.record ? "failed" : "not run";
    }
    cells.insert(cells.end(), values.begin(), values.end());
    t.rows.push_back(std::move(cells));
  }
  ReportTable table(std::initializer_list<const char*> columns) const {
    ReportTable t;
    t.header = label_header();
    t.header.insert(t.header.end(), columns.begin(), columns.end());
    return t;
  }

  std::string series_name(const Row& r, std::size_t x) const {
    const std::string s = study_.label(*r.point, x);
    return s.empty() ? study_.name : s;
  }

  // One series per combination of the other dimensions, over the x dimension's steps.
  std::vector<Chart::Series> series_over(std::size_t x, const char* metric, const char* lo = nullptr,
                                         const char* hi = nullptr) const {
    std::vector<Chart::Series> out;
    std::map<std::string, std::size_t> index;
    const auto numeric = numeric_axis(study_.dimensions[x]);
    for (const auto& r : rows_) {
      const std::string name = series_name(r, x);
      auto [it, fresh] = index.emplace(name, out.size());
      if (fresh) {
        out.push_back({name, {}, {}, {}, {}});
        out.back().y.assign(study_.dimensions[x].size(), NAN);
        if (numeric) out.back().x = numeric->first;
        if (lo) {
          out.back().lo.assign(study_.dimensions[x].size(), NAN);
          out.back().hi.assign(study_.dimensions[x].size(), NAN);
        }
      }
      auto& s = out[it->second];
      const std::size_t step = r.point->steps[x];
      s.y[step] = r.metric(metric);
      if (lo) {
        s.lo[step] = r.metric(lo);
        s.hi[step] = r.metric(hi);
      }
    }
    return out;
  }

  Chart line_chart(std::size_t x, std::string title, std::string ylabel) const {
    Chart c;
    c.kind = Chart::Kind::Lines;
    c.title = std::move(title);
    c.ylabel = std::move(ylabel);
    const Dimension& d = study_.dimensions[x];
    if (auto numeric = numeric_axis(d)) {
      c.xlabel = d.name + (numeric->second.empty() ? "" : " (" + numeric->second + ")");
    } else {
      c.xlabel = d.name;
      c.categories = d.labels;
    }
    return c;
  }

  void decode(const Section& sec, SectionView& v) const {
    const std::string& xname = study_.dimensions[sec.x].name;
    v.title = "Decode speed vs " + xname;
    v.intro = "Median decode speed per request (tok/s) against " + xname +
              "; the bars span the 5th to 95th percentile of requests.";
    Chart c = line_chart(sec.x, v.title, "decode tok/s (p50, p5-p95)");
    c.series = series_over(sec.x, "decode_tok_s.p50", "decode_tok_s.p5", "decode_tok_s.p95");
    v.charts.push_back(std::move(c));
    v.table = table({"decode tok/s p50", "p5", "p95", "expert hit rate", "PCIe overflow", "cache slots", "coverage"});
    for (const auto& r : rows_)
      add_row(v.table, r, {fmt(r.metric("decode_tok_s.p50"), 2), fmt(r.metric("decode_tok_s.p5"), 2),
                           fmt(r.metric("decode_tok_s.p95"), 2), pct(r.metric("expert_hit_rate.p50")),
                           pct(r.metric("pcie_overflow.p50")), fmt(r.metric("cache.slots"), 0),
                           pct(r.metric("cache.coverage"))});
  }

  void cliff(const Section& sec, SectionView& v) const {
    v.title = "Decode speed vs PCIe overflow (the cliff)";
    v.intro = "Each point is one configuration: the median share of expert reads that go over PCIe "
              "against the median decode speed.";
    Chart c;
    c.kind = Chart::Kind::Points;  // configurations, not a path: a line would join unrelated points
    c.title = v.title;
    c.xlabel = "PCIe overflow (% of expert reads, p50)";
    c.ylabel = "decode tok/s (p50)";
    std::map<std::string, std::size_t> index;
    for (const auto& r : rows_) {
      if (!r.ok()) continue;
      const std::string name = study_.dimensions.size() > 1 ? series_name(r, sec.x) : study_.name;
      auto [it, fresh] = index.emplace(name, c.series.size());
      if (fresh) c.series.push_back({name, {}, {}, {}, {}});
      auto& s = c.series[it->second];
      // Each series sorted by overflow, left to right.
      const double x = 100 * r.metric("pcie_overflow.p50");  // a percentage, as the table's column
      std::size_t at = 0;
      while (at < s.x.size() && s.x[at] <= x) ++at;
      s.x.insert(s.x.begin() + static_cast<std::ptrdiff_t>(at), x);
      s.y.insert(s.y.begin() + static_cast<std::ptrdiff_t>(at), r.metric("decode_tok_s.p50"));
    }
    v.charts.push_back(std::move(c));
    v.table = table({"PCIe overflow p50", "decode tok/s p50", "expert hit rate", "step ms"});
    for (const auto& r : rows_)
      add_row(v.table, r, {pct(r.metric("pcie_overflow.p50")), fmt(r.metric("decode_tok_s.p50"), 2),
                           pct(r.metric("expert_hit_rate.p50")), fmt(r.metric("decode_step_ms"), 2)});
  }

  void concurrency(const Section& sec, SectionView& v) const {
    const std::string& xname = study_.dimensions[sec.x].name;
    v.title = "Latency and throughput vs " + xname;
    v.intro = "Time to first token (median and 95th percentile) and total generated tokens per second "
              "against " + xname + ".";
    Chart ttft = line_chart(sec.x, "Time to first token vs " + xname, "TTFT (s)");
    for (auto& s : series_over(sec.x, "ttft_s.p50")) {
      s.name += " p50";
      ttft.series.push_back(std::move(s));
    }
    for (auto& s : series_over(sec.x, "ttft_s.p95")) {
      s.name += " p95";
      ttft.series.push_back(std::move(s));
    }
    Chart tput = line_chart(sec.x, "Throughput vs " + xname, "generated tok/s (all requests)");
    tput.series = series_over(sec.x, "throughput_tok_s");
    v.charts.push_back(std::move(ttft));
    v.charts.push_back(std::move(tput));
    v.table = table({"TTFT p50 s", "TTFT p95 s", "throughput tok/s", "decode tok/s p50", "e2e p50 s", "completed", "rejected"});
    for (const auto& r : rows_)
      add_row(v.table, r, {fmt(r.metric("ttft_s.p50"), 3), fmt(r.metric("ttft_s.p95"), 3),
                           fmt(r.metric("throughput_tok_s"), 2), fmt(r.metric("decode_tok_s.p50"), 2),
                           fmt(r.metric("e2e_s.p50"), 2), fmt(r.metric("requests.completed"), 0),
                           fmt(r.metric("requests.rejected"), 0)});
  }

  void links(const Section& sec, SectionView& v) const {
    const Dimension& d = study_.dimensions[sec.x];
    v.title = "Each " + d.name + " side by side";
    v.intro = "Median decode speed for each " + d.name + ", one bar per configuration of the other axes.";
    Chart c;
    c.kind = Chart::Kind::Bars;
    c.title = "Decode speed by " + d.name;
    c.xlabel = d.name;
    c.ylabel = "decode tok/s (p50)";
    c.categories = d.labels;
    c.series = series_over(sec.x, "decode_tok_s.p50");
    v.charts.push_back(std::move(c));
    v.table = table({"decode tok/s p50", "expert hit rate", "PCIe overflow", "transfer share", "bubble share",
                     "step ms", "J/token"});
    for (const auto& r : rows_)
      add_row(v.table, r, {fmt(r.metric("decode_tok_s.p50"), 2), pct(r.metric("expert_hit_rate.p50")),
                           pct(r.metric("pcie_overflow.p50")), pct(r.metric("step_time_breakdown.transfer")),
                           pct(r.metric("step_time_breakdown.stall")), fmt(r.metric("decode_step_ms"), 2),
                           fmt(r.metric("energy.j_per_token"), 3)});
  }

  void breakdown(const Section&, SectionView& v) const {
    v.title = "Where a decode step's time goes";
    v.intro = "Mean decode step time split into compute, PCIe transfer, bubble (the GPU stalled waiting "
              "for experts), experts computed on the host, launch/sync overhead, and the host CPU running "
              "the layers kept in RAM.";
    Chart c;
    c.kind = Chart::Kind::StackedBars;
    c.title = "Decode step time breakdown";
    c.ylabel = "ms per decode step";
    const std::pair<const char*, const char*> parts[] = {{"compute", "step_time_breakdown.compute"},
                                                         {"transfer", "step_time_breakdown.transfer"},
                                                         {"bubble", "step_time_breakdown.stall"},
                                                         {"host experts", "step_time_breakdown.cpu_experts"},
                                                         {"launch/sync", "step_time_breakdown.launch_sync"},
                                                         {"CPU layers", "step_time_breakdown.cpu_layers"}};
    for (const auto& [name, path] : parts) c.series.push_back({name, {}, {}, {}, {}});
    // Overlapped slots: the breakdown is a step's own costs; the contended time is another column.
    const bool overlapped = std::any_of(rows_.begin(), rows_.end(),
                                        [](const Row& r) { return !std::isnan(r.metric("decode_step_contended_ms")); });
    if (overlapped)
      v.intro += " With overlapped slots these are a step's own costs, alone on the card; \"overlapped step ms\" is "
                 "a step's time from start to end with the slots sharing the card and link.";
    v.table = table({"step ms", "compute ms", "transfer ms", "bubble ms", "host experts ms", "launch/sync ms", "CPU layers ms"});
    if (overlapped) v.table.header.push_back("overlapped step ms");
    for (const auto& r : rows_) {
      const std::string label = study_.label(*r.point);
      c.categories.push_back(label.empty() ? study_.name : label);
      const double step = r.metric("decode_step_ms");
      std::vector<std::string> cells = {fmt(step, 2)};
      for (std::size_t k = 0; k < std::size(parts); ++k) {
        // A share absent from a result (cpu_layers, in results written before it existed) is none;
        // a failed point has no step time, so its cells stay empty.
        const double share = r.metric(parts[k].second);
        const double ms = step * (std::isnan(share) ? 0.0 : share);
        c.series[k].y.push_back(ms);
        cells.push_back(fmt(ms, 2));
      }
      if (overlapped) cells.push_back(fmt(r.metric("decode_step_contended_ms"), 2));
      add_row(v.table, r, cells);
    }
    v.charts.push_back(std::move(c));
  }

  const Study& study_;
  std::vector<Point> points_;
  std::vector<Row> rows_;
};

std::string md_table(const ReportTable& t) {
  std::string s = "|";
  for (const auto& h : t.header) s += " " + md_cell(h) + " |";
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

std::string html_table(const ReportTable& t) {
  std::string s = "<table>\n<thead><tr>";
  for (const auto& h : t.header) s += "<th>" + html_escape(h) + "</th>";
  s += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (const auto& c : row) s += "<td>" + html_escape(c) + "</td>";
    s += "</tr>\n";
  }
  return s + "</tbody>\n</table>\n";
}

std::string value_text(const SetValue& v) { return v ? *v : "(unset)"; }

// The study's inputs: scenario, seed, fixed overrides, axes, the files verbatim.
void inputs(const Study& s, std::string& md, std::string& html) {
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
  html += "<section id=\"inputs\">\n<h2>Inputs</h2>\n<p>Every point runs <code>vramsim run</code> on the scenario with "
          "these overrides, plus one value of each axis.</p>\n" +
          html_table(fixed) + html_table(axes);
  for (const auto& [path, text] : s.inputs) {
    md += "### " + path + "\n\n```yaml\n" + text + (text.ends_with("\n") ? "" : "\n") + "```\n\n";
    html += "<details><summary>" + html_escape(path) + "</summary>\n<pre>" + html_escape(text) + "</pre></details>\n";
  }
  html += "</section>\n";
}

const char* kStyle = R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td{white-space:nowrap}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure.chart{margin:1em 0}figure.chart svg{width:100%;height:auto;max-width:760px;display:block}
pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:.85em}details{margin:.5em 0}.warn{color:#a40}
)";

// Marks the page once it has laid out: the number of charts with a drawn, visible SVG. The
// report needs no script to be read; this only lets a headless browser check the charts.
const char* kCheck = R"(<script>
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

void write_file(const fs::path& p, const std::string& text) {
  if (auto written = io::write_file(p.string(), text); !written) throw std::runtime_error(written.error().message);
}

}  // namespace

ReportTable section_table(const Study& study, const Section& section, const std::map<std::string, PointRecord>& records) {
  return Builder(study, records).section(section).table;
}

ReportOutcome write_report(const fs::path& dir) {
  ResultsStore store(dir);
  const Study study = read_manifest(dir);
  const auto records = store.load();
  Builder builder(study, records);
  ReportOutcome outcome;
  if (const auto& bad = store.unreadable_lines(); !bad.empty()) {
    std::string lines;
    for (std::size_t i = 0; i < bad.size() && i < 10; ++i) lines += (i ? ", " : "") + std::to_string(bad[i]);
    outcome.warnings.push_back((dir / "results.jsonl").string() + ": " + std::to_string(bad.size()) + " line" +
                               (bad.size() > 1 ? "s are" : " is") + " not a record (line " + lines + (bad.size() > 10 ? ", ..." : "") +
                               "), ignored: a point with no readable record counts as not run, and the next sweep runs it");
  }

  std::size_t ok = 0, failed = 0;
  for (const auto& r : builder.rows()) (r.ok() ? ok : failed) += r.record ? 1 : 0;
  const std::size_t missing = study.point_count() - ok - failed;
  std::string status = std::to_string(study.point_count()) + " points: " + std::to_string(ok) + " completed, " +
                       std::to_string(failed) + " failed" + (missing ? ", " + std::to_string(missing) + " not run yet" : "");

  std::string md = "# " + study.title + "\n\n";
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     html_escape(study.title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n<h1>" +
                     html_escape(study.title) + "</h1>\n";
  if (!study.description.empty()) {
    md += study.description + "\n\n";
    html += "<p>" + html_escape(study.description) + "</p>\n";
  }
  md += "Study `" + study.name + "` (" + study.source + "): " + status + ". Made by `vramsim report`.\n\n";
  html += "<p>Study <code>" + html_escape(study.name) + "</code> (" + html_escape(study.source) + "): " +
          html_escape(status) + ". Made by <code>vramsim report</code>.</p>\n";

  fs::create_directories(dir / "charts");
  bool gnuplot_ok = true;
  for (std::size_t i = 0; i < study.sections.size(); ++i) {
    const SectionView v = builder.section(study.sections[i]);
    md += "## " + v.title + "\n\n" + v.intro + "\n\n";
    html += "<section>\n<h2>" + html_escape(v.title) + "</h2>\n<p>" + html_escape(v.intro) + "</p>\n";
    for (std::size_t k = 0; k < v.charts.size(); ++k) {
      const std::string id = "chart-" + std::to_string(i + 1) + (v.charts.size() > 1 ? "-" + std::to_string(k + 1) : "");
      Result<std::string> svg = gnuplot_ok ? render_svg(v.charts[k]) : Result<std::string>(Error{""});
      if (!svg) {
        if (gnuplot_ok) outcome.warnings.push_back("charts left out: " + svg.error().message);
        gnuplot_ok = false;
        continue;
      }
      write_file(dir / "charts" / (id + ".svg"), *svg);
      md += "![" + v.charts[k].title + "](charts/" + id + ".svg)\n\n";
      html += "<figure class=\"chart\" id=\"" + id + "\">\n" + inline_svg(*svg, id + "-") + "\n<figcaption>" +
              html_escape(v.charts[k].title) + "</figcaption>\n</figure>\n";
      ++outcome.charts;
    }
    md += md_table(v.table) + "\n";
    html += html_table(v.table) + "</section>\n";
  }
  if (!gnuplot_ok) {
    md += "_Charts left out: " + outcome.warnings.front() + "_\n\n";
    html += "<p class=\"warn\">Charts left out: " + html_escape(outcome.warnings.front()) + "</p>\n";
  }

  ReportTable failures;
  failures.header = {"point", "error"};
  for (const auto& r : builder.rows())
    if (r.record && !r.ok()) {
      const std::string label = study.label(*r.point);
      failures.rows.push_back({label.empty() ? study.name : label, r.record->find("error") ? r.record->find("error")->text() : ""});
    }
  if (!failures.rows.empty()) {
    md += "## Failed points\n\n" + md_table(failures) + "\n";
    html += "<section id=\"failed\">\n<h2>Failed points</h2>\n" + html_table(failures) + "</section>\n";
  }
  inputs(study, md, html);
  html += kCheck;
  html += "</body>\n</html>\n";
  outcome.markdown = dir / "report.md";
  outcome.html = dir / "report.html";
  write_file(outcome.markdown, md);
  write_file(outcome.html, html);
  return outcome;
}

}  // namespace vramsim::reports
