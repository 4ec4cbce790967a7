#include "workloads/serving_workload.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/catalogue.h"

namespace vramsim::workloads {

using config::ConfigError;
using config::Lower;
using config::MapReader;
using config::Node;
using config::Origin;
using units::Dimension;

std::int64_t LengthDist::sample(double u1, double u2) const {
  switch (kind) {
    case Kind::Fixed: return min;
    case Kind::Uniform: return min + std::min(max - min, static_cast<std::int64_t>(u1 * static_cast<double>(max - min + 1)));
    case Kind::Lognormal: {
      // Box-Muller from two counters; rounded to whole tokens and held to [1, max].
      const double z = std::sqrt(-2.0 * std::log(std::max(u1, 1e-300))) * std::cos(2.0 * 3.14159265358979323846 * u2);
      const double v = std::round(median * std::exp(sigma * z));
      return static_cast<std::int64_t>(std::clamp(v, 1.0, static_cast<double>(max)));
    }
    case Kind::Empirical: {
      const auto at = std::upper_bound(cumulative.begin(), cumulative.end(), u1) - cumulative.begin();
      return values[std::min(static_cast<std::size_t>(at), values.size() - 1)];
    }
  }
  return min;
}

std::int64_t LengthDist::smallest() const {
  switch (kind) {
    case Kind::Lognormal: return 1;
    case Kind::Empirical: return values.front();
    default: return min;
  }
}

namespace {

// The latest arrival a workload may give, seconds: past Unix time for centuries, and a double
// keeps a resolution below 2 us up to it. A trace's times and an open loop's span are held to it.
constexpr double kLatestArrival_s = 1e10;

// One CSV table read for its named columns; every error points at file:row:column.
class CsvTable {
 public:
  CsvTable(std::string path, std::string key_path) : path_(std::move(path)), key_path_(std::move(key_path)), in_(path_) {
    std::error_code ec;
    if (std::filesystem::is_directory(path_, ec))
      throw ConfigError(Origin{path_, 0, 0}, key_path_, "\"" + path_ + "\" is a directory; expected a CSV file");
    if (!in_) throw ConfigError(Origin{path_, 0, 0}, key_path_, "cannot open \"" + path_ + "\"");
    if (!next_line()) fail(1, 1, "empty file: expected a header line naming the columns");
    header_ = fields_;
  }

  // The index of column `name` (-1 when absent and optional).
  int column(std::string_view name, bool required) const {
    for (std::size_t i = 0; i < header_.size(); ++i)
      if (header_[i].text == name) return static_cast<int>(i);
    if (required) fail(header_row_, 1, "missing column \"" + std::string(name) + "\" in the header");
    return -1;
  }
  void only(std::initializer_list<std::string_view> names) const {
    for (const auto& h : header_) {
      bool known = false;
      for (auto n : names) known = known || h.text == n;
      if (!known) {
        std::string list;
        for (auto n : names) list += (list.empty() ? "" : ", ") + std::string(n);
        fail(header_row_, h.column, "unknown column \"" + h.text + "\" (expected " + list + ")");
      }
    }
  }

  // Advances to the next data row (blank lines and # comments skipped); false at the end.
  bool next_row() {
    if (!next_line()) return false;
    if (fields_.size() != header_.size())
      fail(row_, 1, "expected " + std::to_string(header_.size()) + " fields (as the header), got " + std::to_string(fields_.size()));
    return true;
  }
  int row() const { return row_; }
  bool empty(int col) const { return col < 0 || fields_[static_cast<std::size_t>(col)].text.empty(); }

  std::int64_t integer(int col, std::int64_t lo, std::int64_t hi) const {
    const Field& f = fields_[static_cast<std::size_t>(col)];
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(f.text.data(), f.text.data() + f.text.size(), v);
    if (ec != std::errc{} || ptr != f.text.data() + f.text.size())
      fail(row_, f.column, header_[static_cast<std::size_t>(col)].text + ": expected a whole number, got \"" + f.text + "\"");
    if (v < lo || v > hi)
      fail(row_, f.column, header_[static_cast<std::size_t>(col)].text + ": must be between " + std::to_string(lo) + " and " +
                               std::to_string(hi) + ", got " + f.text);
    return v;
  }
  double number(int col) const {
    const Field& f = fields_[static_cast<std::size_t>(col)];
    double v = 0;
    auto [ptr, ec] = std::from_chars(f.text.data(), f.text.data() + f.text.size(), v);
    if (ec != std::errc{} || ptr != f.text.data() + f.text.size() || !std::isfinite(v) || v < 0)
      fail(row_, f.column, header_[static_cast<std::size_t>(col)].text + ": expected a number >= 0, got \"" + f.text + "\"");
    return v;
  }
  [[noreturn]] void fail_field(int col, const std::string& message) const {
    fail(row_, fields_[static_cast<std::size_t>(col)].column, header_[static_cast<std::size_t>(col)].text + ": " + message);
  }
  [[noreturn]] void fail(int row, int column, const std::string& message) const {
    throw ConfigError(Origin{path_, row, column}, key_path_, message);
  }

 private:
  struct Field {
    std::string text;
    int column = 1;  // 1-based character column where the field starts
  };

  bool next_line() {
    std::string line;
    while (std::getline(in_, line)) {
      ++row_;
      if (row_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const auto first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      if (header_.empty()) header_row_ = row_;
      fields_.clear();
      std::size_t start = 0;
      while (true) {
        const std::size_t comma = std::min(line.find(',', start), line.size());
        std::size_t b = start, e = comma;
        while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
        while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
        fields_.push_back(Field{line.substr(b, e - b), static_cast<int>(b) + 1});
        if (comma == line.size()) break;
        start = comma + 1;
      }
      return true;
    }
    return false;
  }

  std::string path_;
  std::string key_path_;
  std::ifstream in_;
  std::vector<Field> header_;
  std::vector<Field> fields_;
  int header_row_ = 1;
  int row_ = 0;
};

// `key`: a whole number, or {dist: uniform|lognormal|empirical, ...}.
LengthDist decode_length(MapReader& w, std::string_view key, std::int64_t context) {
  const Node& node = w.any(key);
  if (!node.is_map()) return LengthDist::fixed(w.integer(key, 1, std::int64_t{1} << 32));
  MapReader d = *w.optional_map(key);
  const std::string where = " (engine.context is " + std::to_string(context) + " tokens)";
  LengthDist out;
  const std::string dist = d.choice("dist", {"uniform", "lognormal", "empirical"});
  if (dist == "uniform") {
    out.kind = LengthDist::Kind::Uniform;
    out.min = d.integer("min", 1, std::int64_t{1} << 32);
    out.max = d.integer("max", 1, std::int64_t{1} << 32);
    if (out.min > out.max)
      d.fail_at("min", "min (" + std::to_string(out.min) + ") is greater than max (" + std::to_string(out.max) + ")");
  } else if (dist == "lognormal") {
    out.kind = LengthDist::Kind::Lognormal;
    out.median = d.number("median");
    out.sigma = d.number("sigma", Lower::NonNegative);
    out.max = d.integer("max", 1, std::int64_t{1} << 32);
    if (out.median > static_cast<double>(out.max))
      d.fail_at("median", "the median (" + d.node().find("median")->text() + ") is greater than max (" + std::to_string(out.max) + ")");
  } else {
    d.string("file");
    out = read_empirical_lengths(config::file_beside(*d.node().find("file")).lexically_normal().string(), d.key_path("file"), context);
  }
  if (out.kind != LengthDist::Kind::Empirical && out.max > context)
    d.fail_at("max", "lengths up to " + std::to_string(out.max) + " tokens lie outside the context window" + where);
  d.finish();
  return out;
}

}  // namespace

std::vector<TraceRow> read_request_trace(const std::string& path, const std::string& key_path) {
  CsvTable t(path, key_path);
  t.only({"arrival_s", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens"});
  const int arrival = t.column("arrival_s", true), prompt = t.column("prompt_tokens", true),
            output = t.column("output_tokens", true), prefix = t.column("prefix_id", false),
            prefix_tokens = t.column("prefix_tokens", false);
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  std::vector<TraceRow> rows;
  std::map<std::int32_t, std::pair<std::int32_t, int>> prefix_length;  // prefix_id -> (tokens, row)
  while (t.next_row()) {
    TraceRow r;
    r.arrival_s = t.number(arrival);
    if (r.arrival_s > kLatestArrival_s)
      t.fail_field(arrival, "expected seconds up to 1e10 (Unix time is fine: a trace's clock starts at its first row)");
    if (!rows.empty() && r.arrival_s < rows.back().arrival_s)
      t.fail_field(arrival, "earlier than the previous request's (a trace is in arrival order)");
    r.prompt_tokens = static_cast<std::int32_t>(t.integer(prompt, 1, kMax));
    r.gen_tokens = static_cast<std::int32_t>(t.integer(output, 1, kMax));
    if (!t.empty(prefix)) r.prefix_id = static_cast<std::int32_t>(t.integer(prefix, 0, kMax));
    if (!t.empty(prefix_tokens)) {
      if (r.prefix_id < 0) t.fail_field(prefix_tokens, "a prefix length without a prefix_id");
      r.prefix_tokens = static_cast<std::int32_t>(t.integer(prefix_tokens, 0, r.prompt_tokens));
      // One prefix, one length: the engine's prompt cache holds what the first row prefilled.
      const auto [it, first] = prefix_length.emplace(r.prefix_id, std::pair{r.prefix_tokens, t.row()});
      if (!first && it->second.first != r.prefix_tokens)
        t.fail_field(prefix_tokens, "prefix " + std::to_string(r.prefix_id) + " was " + std::to_string(it->second.first) +
                                        " tokens at row " + std::to_string(it->second.second) +
                                        ": rows sharing a prefix_id share its length");
    }
    rows.push_back(r);
  }
  if (rows.empty()) t.fail(t.row() + 1, 1, "no requests after the header");
  // The first row arrives at 0 s: throughput, utilisation and energy are measured from it, so
  // a trace with absolute times (Unix time in a production log) reads as one with relative ones.
  const double start = rows.front().arrival_s;
  for (auto& r : rows) r.arrival_s -= start;
  return rows;
}

LengthDist read_empirical_lengths(const std::string& path, const std::string& key_path, std::int64_t context) {
  CsvTable t(path, key_path);
  t.only({"tokens", "weight"});
  const int tokens = t.column("tokens", true), weight = t.column("weight", false);
  std::vector<std::pair<std::int64_t, double>> rows;
  while (t.next_row()) {
    const std::int64_t v = t.integer(tokens, 1, std::int64_t{1} << 32);
    if (v > context)
      t.fail_field(tokens, std::to_string(v) + " lies outside the context window (engine.context is " + std::to_string(context) + " tokens)");
    rows.emplace_back(v, t.empty(weight) ? 1.0 : t.number(weight));
  }
  if (rows.empty()) t.fail(t.row() + 1, 1, "no lengths after the header");
  std::sort(rows.begin(), rows.end());
  LengthDist d;
  d.kind = LengthDist::Kind::Empirical;
  double total = 0;
  for (const auto& [v, w] : rows) total += w;
  if (total <= 0) t.fail(1, 1, "the weights add up to zero");
  double sum = 0;
  for (const auto& [v, w] : rows) {
    sum += w;
    d.values.push_back(v);
    d.cumulative.push_back(sum / total);
  }
  d.cumulative.back() = 1.0;
  d.min = d.values.front();
  d.max = d.values.back();
  return d;
}

WorkloadSetup decode_workload(MapReader w, std::int64_t context) {
  WorkloadSetup s;
  std::string process = "closed";
  if (auto arrival = w.optional_map("arrival")) {
    process = arrival->choice("process", {"closed", "poisson", "bursty"});
    if (process == "poisson") {
      s.arrival = Arrival::Poisson;
      s.arrival_rate = arrival->quantity("rate", Dimension::Rate);
    } else if (process == "bursty") {
      s.arrival = Arrival::Bursty;
      s.arrival_rate = arrival->quantity("rate", Dimension::Rate);
      s.idle_rate = arrival->optional_quantity("idle_rate", Dimension::Rate, Lower::NonNegative).value_or(0.0);
      s.burst_s = arrival->quantity("burst", Dimension::Time);
      s.idle_s = arrival->quantity("idle", Dimension::Time);
      if (s.idle_rate > s.arrival_rate)
        arrival->fail_at("idle_rate", "the rate between bursts exceeds the rate within one (" +
                                          arrival->node().find("rate")->text() + ")");
    }
    arrival->finish();
  }
  const bool trace = w.has("trace");
  if (trace) {
    if (process != "closed") w.fail_at("arrival", "a trace gives every request's arrival time: unset workload.arrival");
    for (const char* key : {"prompt_tokens", "gen_tokens"})
      if (w.has(key)) w.fail_at(key, "a trace gives every request's lengths: unset it (`--set workload." + std::string(key) + "=`)");
    s.arrival = Arrival::Trace;
    w.string("trace");
    s.trace_file = config::file_beside(*w.node().find("trace")).lexically_normal().string();
    s.trace = read_request_trace(s.trace_file, w.key_path("trace"));
  }
  s.open_loop = s.arrival != Arrival::Closed;
  if (s.open_loop) {
    if (w.has("clients"))
      w.fail_at("clients", std::string("an open-loop (") + (trace ? "trace" : process) +
                               ") workload has no clients: requests arrive " + (trace ? "at the trace's times" : "at `arrival.rate`"));
    s.clients = 0;
  } else {
    // Each closed-loop client is a SimGrid actor with a stack of its own (two memory maps: the
    // stack and its guard page); Linux's default vm.max_map_count of 65,530 ends near 32,000
    // actors, with a crash. Far more clients are better modelled by an open-loop arrival rate.
    constexpr std::int64_t kMaxClients = 30000;
    const std::int64_t clients = w.integer("clients", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
    if (clients < 1) w.fail_at("clients", "must be between 1 and " + std::to_string(kMaxClients) + ", got " + std::to_string(clients));
    if (clients > kMaxClients)
      w.fail_at("clients", "at most " + std::to_string(kMaxClients) + " closed-loop clients (each is a simulated actor with "
                "its own stack, and the OS's memory-map limit ends near 32,000); for more, use an open-loop "
                "`arrival: { process: poisson, rate: ... }`");
    s.clients = static_cast<int>(clients);
  }
  for (const char* key : {"clients", "prompt_tokens", "gen_tokens", "trace"}) w.ignore(key);  // unset ones
  if (trace) {
    const auto rows = static_cast<std::int64_t>(s.trace.size());
    s.requests = static_cast<int>(w.optional_integer("requests", 1, rows).value_or(rows));
    s.trace.resize(static_cast<std::size_t>(s.requests));
    s.trace.shrink_to_fit();
  } else {
    s.requests = static_cast<int>(w.integer("requests", 1, 100000000));
    s.prompt = decode_length(w, "prompt_tokens", context);
    s.gen = decode_length(w, "gen_tokens", context);
  }
  if (s.arrival == Arrival::Poisson || s.arrival == Arrival::Bursty) {
    // The requests' expected span at the mean rate (a burst's rate for its length, then the idle one).
    const double mean_rate = s.arrival == Arrival::Poisson
                                 ? s.arrival_rate
                                 : (s.arrival_rate * s.burst_s + s.idle_rate * s.idle_s) / (s.burst_s + s.idle_s);
    if (const double span = s.requests / mean_rate; span > kLatestArrival_s) {
      config::fail(*w.node().find("arrival")->find("rate"), w.key_path("arrival.rate"),
                   fmt::format("{} requests at a mean of {:.3g} per second would arrive over {:.3g} years of simulated time "
                               "(more than 1e10 s); check the unit (e.g. 2/s, 30/min)", s.requests, mean_rate, span / 3.15576e7));
    }
  }
  s.shared_prefix_tokens = w.optional_integer("shared_prefix_tokens", 0, std::int64_t{1} << 32).value_or(0);
  if (!trace && s.shared_prefix_tokens >= s.prompt.smallest() && s.shared_prefix_tokens > 0)
    w.fail_at("shared_prefix_tokens", "the shared prefix (" + std::to_string(s.shared_prefix_tokens) +
                                          " tokens) must be shorter than the shortest prompt (" +
                                          std::to_string(s.prompt.smallest()) + ")");
  if (trace && s.shared_prefix_tokens == 0)
    for (const auto& r : s.trace)
      if (r.prefix_id >= 0 && r.prefix_tokens < 0)
        w.fail_at("trace", s.trace_file + ": a row has a prefix_id but no prefix length: add a prefix_tokens column or set "
                                          "workload.shared_prefix_tokens");
  if (trace && s.shared_prefix_tokens > 0)  // the length of the rows' prefixes without their own
    for (std::size_t i = 0; i < s.trace.size(); ++i) {
      const auto& r = s.trace[i];
      if (r.prefix_id >= 0 && r.prefix_tokens < 0 && s.shared_prefix_tokens > r.prompt_tokens)
        w.fail_at("shared_prefix_tokens", "the shared prefix (" + std::to_string(s.shared_prefix_tokens) +
                                              " tokens) is longer than request " + std::to_string(i + 1) + "'s prompt (" +
                                              std::to_string(r.prompt_tokens) + " tokens) in " + s.trace_file);
    }
  w.finish();
  return s;
}

}  // namespace vramsim::workloads
