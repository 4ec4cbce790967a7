#include "reports/report_sections.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/units.h"
#include "reports/run_metrics.h"

namespace vramsim::reports {

bool ReportRow::ok() const { return record && record->find("status") && record->find("status")->text() == "ok"; }

double ReportRow::metric(const char* path) const {
  if (!find_run_metric(path)) throw std::logic_error(std::string("the report reads ") + path + ", not in the metric table");
  const json::Value* v = ok() ? record->at_path(path) : nullptr;
  return v ? v->number() : NAN;
}

std::vector<ReportRow> report_rows(const std::vector<Point>& points, const std::map<std::string, PointRecord>& records) {
  std::vector<ReportRow> rows;
  rows.reserve(points.size());
  for (const auto& p : points) {
    auto it = records.find(point_key(p));
    rows.push_back({&p, it == records.end() ? nullptr : &it->second.record});
  }
  return rows;
}

namespace {

std::string fmt(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  return units::fixed(v, decimals);
}
std::string pct(double v) { return std::isfinite(v) ? fmt(100 * v, 1) + "%" : "-"; }

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


class SectionBuilder {
 public:
  SectionBuilder(const Study& s, const std::vector<ReportRow>& rows) : study_(s), rows_(rows) {}

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

 private:
  // Leading columns of every table: one per dimension, then the status.
  std::vector<std::string> label_header() const {
    std::vector<std::string> h;
    for (const auto& d : study_.dimensions) h.push_back(d.name);
    return h;
  }
  std::vector<std::string> label_cells(const ReportRow& r) const {
    std::vector<std::string> c;
    for (std::size_t d = 0; d < study_.dimensions.size(); ++d) c.push_back(study_.dimensions[d].labels[r.point->steps[d]]);
    return c;
  }
  void add_row(ReportTable& t, const ReportRow& r, std::vector<std::string> values) const {
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

  std::string series_name(const ReportRow& r, std::size_t x) const {
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
                                        [](const ReportRow& r) { return !std::isnan(r.metric("decode_step_contended_ms")); });
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
  const std::vector<ReportRow>& rows_;
};

}  // namespace

SectionView section_view(const Study& study, const std::vector<ReportRow>& rows, const Section& section) {
  return SectionBuilder(study, rows).section(section);
}

}  // namespace vramsim::reports
