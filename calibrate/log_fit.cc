#include "calibrate/log_fit.h"

#include <fmt/printf.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

namespace vramsim::calibrate {

namespace {

// The markers that identify a line; the text before a marker is ignored.
constexpr std::string_view kStrataGeneration = "strata serve: prompt ";
constexpr std::string_view kStrataCache = "strata serve: decode expert cache hit rate:";
constexpr std::string_view kLlamaPrompt = "prompt eval time =";
constexpr std::string_view kLlamaEval = "eval time =";

enum class Kind { Other, StrataGeneration, StrataCache, LlamaPrompt, LlamaEval };

struct Classified {
  Kind kind = Kind::Other;
  std::size_t at = 0;  // where the text after the marker starts
};

// Whether the line ends inside a marker (a log cut short mid-line: "... strata serve: decode
// expert ca"): its tail, 9 characters or more, is the start of a marker but not all of it.
bool ends_inside_marker(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  for (std::string_view marker : {kStrataGeneration, kStrataCache, kLlamaPrompt, kLlamaEval})
    for (std::size_t n = std::min(line.size(), marker.size() - 1); n >= 9; --n)
      if (line.substr(line.size() - n) == marker.substr(0, n)) return true;
  return false;
}

Classified classify(std::string_view line) {
  if (auto p = line.find(kStrataGeneration); p != std::string_view::npos)
    return {Kind::StrataGeneration, p + kStrataGeneration.size()};
  if (auto p = line.find(kStrataCache); p != std::string_view::npos) return {Kind::StrataCache, p + kStrataCache.size()};
  if (auto p = line.find(kLlamaPrompt); p != std::string_view::npos) return {Kind::LlamaPrompt, p + kLlamaPrompt.size()};
  if (auto p = line.find(kLlamaEval); p != std::string_view::npos) return {Kind::LlamaEval, p + kLlamaEval.size()};
  return {};
}

// Reads one line left to right; every mismatch throws InputError at its column.
class Scanner {
 public:
  Scanner(std::string_view line, std::size_t at, const std::string& file, std::size_t line_no, const char* what)
      : s_(line), pos_(at), file_(file), line_no_(line_no), what_(what) {}

  // Matches `text`; a space in `text` matches any run of blanks (or none) in the line.
  Scanner& lit(std::string_view text) {
    skip_blanks();
    for (char c : text) {
      if (c == ' ') {
        skip_blanks();
        continue;
      }
      if (pos_ >= s_.size() || s_[pos_] != c) fail("expected \"" + std::string(text) + "\"");
      ++pos_;
    }
    return *this;
  }
  bool try_lit(std::string_view text) {
    const std::size_t save = pos_;
    skip_blanks();
    for (char c : text) {
      if (c == ' ') {
        skip_blanks();
        continue;
      }
      if (pos_ >= s_.size() || s_[pos_] != c) {
        pos_ = save;
        return false;
      }
      ++pos_;
    }
    return true;
  }
  double number() {
    skip_blanks();  // so that a failure points at the text, past the blanks
    if (const auto v = try_number()) return *v;
    fail("expected a non-negative number");
  }
  // A finite non-negative number, or nothing (the position kept).
  std::optional<double> try_number() {
    const std::size_t save = pos_;
    skip_blanks();
    double v = 0;
    const char* first = s_.data() + pos_;
    const auto [end, ec] = std::from_chars(first, s_.data() + s_.size(), v);
    if (ec != std::errc() || !std::isfinite(v) || v < 0) {
      pos_ = save;
      return std::nullopt;
    }
    pos_ += static_cast<std::size_t>(end - first);
    return v;
  }
  std::int64_t integer() {
    skip_blanks();
    std::int64_t v = 0;
    const char* first = s_.data() + pos_;
    const auto [end, ec] = std::from_chars(first, s_.data() + s_.size(), v);
    if (ec != std::errc() || v < 0) fail("expected a non-negative whole number");
    pos_ += static_cast<std::size_t>(end - first);
    return v;
  }
  [[noreturn]] void fail(const std::string& message) const {
    const std::size_t shown = std::min<std::size_t>(24, s_.size() - std::min(pos_, s_.size()));
    throw InputError(file_, line_no_, pos_ + 1,
                   std::string(what_) + ": " + message + ", got \"" + std::string(s_.substr(pos_, shown)) + "\"");
  }
  std::size_t column() const { return pos_ + 1; }  // 1-based, of the next character
  // The rest of the line past any blanks, at most `limit` characters (for a message).
  std::string rest(std::size_t limit) {
    skip_blanks();
    return std::string(s_.substr(std::min(pos_, s_.size()), limit));
  }
  std::size_t next_column() {                       // the same, past any blanks
    skip_blanks();
    return column();
  }
  [[noreturn]] void fail_at(std::size_t column, const std::string& message) const {
    throw InputError(file_, line_no_, column, std::string(what_) + ": " + message);
  }

 private:
  void skip_blanks() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  std::string_view s_;
  std::size_t pos_;
  const std::string& file_;
  std::size_t line_no_;
  const char* what_;
};

struct Pending {
  Kind kind = Kind::Other;
  std::size_t line = 0;
  LogRecord record;
};

LogRecord read_strata_generation(Scanner& sc, std::size_t line_no) {
  LogRecord r;
  r.line = line_no;
  r.format = "strata";
  r.prompt_tokens = sc.integer();
  sc.lit("tokens =");
  sc.integer();
  sc.lit("reused +");
  sc.integer();
  sc.lit("read in");
  r.prompt_s = sc.number() * 1e-3;
  sc.lit("ms,");
  r.gen_tokens = sc.integer();
  sc.lit("generated in");
  const double ms = sc.number();
  r.decode_s = ms * 1e-3;
  sc.lit("ms (");
  r.decode_tok_s = sc.number();
  sc.lit("tok/s)");
  // The printed rate is generated / time, each rounded (the time to 1 ms, the rate to 0.1).
  // A time printed as 0 ms was under 0.5 ms: tokens decoded after the first (the prefill's)
  // in that time give at least generated / 0.5 ms.
  if (r.gen_tokens > 1 && ms <= 0 && r.decode_tok_s < static_cast<double>(r.gen_tokens) / 0.5e-3 - 0.05) {
    sc.fail_at(1, fmt::sprintf("%lld tokens generated in %g ms at %.1f tok/s: the tokens after the first need decode time, "
                  "the line contradicts itself", static_cast<long long>(r.gen_tokens), ms, r.decode_tok_s));
  }
  if (r.gen_tokens > 0 && ms > 0) {
    const double rate = static_cast<double>(r.gen_tokens) / r.decode_s;
    if (std::fabs(r.decode_tok_s - rate) > rate * std::max(0.01, 0.5 / ms) + 0.05) {
      sc.fail_at(1, fmt::sprintf("the rate (%.1f tok/s) is not %lld tokens in %g ms (%.1f tok/s): the line contradicts itself",
                                 r.decode_tok_s, static_cast<long long>(r.gen_tokens), ms, rate));
    }
  }
  // The draft figures are optional (the case study's published line elides them).
  if (sc.try_lit(", drafts accepted")) {
    Scanner probe = sc;
    if (probe.try_lit("...")) return r;
    // The published form is "A/D" (two whole numbers); another one (a percentage, say) is an
    // optional figure this reader does not know: left out of the record and reported.
    Scanner form = sc;
    if (!form.try_number() || !form.try_lit("/") || !form.try_number()) {
      r.unread_drafts = sc.rest(40);
      return r;
    }
    r.accepted = sc.integer();
    sc.lit("/");
    r.drafted = sc.integer();
    if (*r.accepted > *r.drafted)
      sc.fail_at(1, "more drafts accepted (" + std::to_string(*r.accepted) + ") than drafted (" + std::to_string(*r.drafted) + ")");
  }
  return r;
}

// A percentage printed to `decimals` places against the counts it was computed from.
void check_percent(Scanner& sc, const char* what, double printed, std::int64_t part, std::int64_t whole, int decimals) {
  // Nothing counted: the printed figure can only be 0 ("0.0% (0 hits / 0 lookups)").
  if (whole <= 0 && std::fabs(printed) <= 0.5 * std::pow(10.0, -decimals) + 1e-9) return;
  if (whole <= 0) {
    sc.fail_at(1, fmt::sprintf("the %s (%g%%) is of %lld / %lld: nothing was counted, the line contradicts itself", what,
                  printed, static_cast<long long>(part), static_cast<long long>(whole)));
  }
  const double pct = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  if (std::fabs(printed - pct) <= 0.5 * std::pow(10.0, -decimals) + 1e-9) return;
  sc.fail_at(1, fmt::sprintf("the %s (%g%%) is not %lld / %lld (%.*f%%): the line contradicts itself", what, printed,
                static_cast<long long>(part), static_cast<long long>(whole), decimals, pct));
}

void read_strata_cache(Scanner& sc, LogRecord& r) {
  const double hit_pct = sc.number();  // printed to 0.1
  sc.lit("% (");
  r.hits = sc.integer();
  sc.lit("hits /");
  r.lookups = sc.integer();
  sc.lit("lookups);");
  r.pcie_reads = sc.integer();
  sc.lit("more read by the GPU over PCIe or from another GPU (");
  const double overflow_pct = sc.number();  // printed to 0.01
  sc.lit("% of all");
  r.routed = sc.integer();
  sc.lit("routed)");
  if (r.hits > r.lookups) sc.fail_at(1, "more hits (" + std::to_string(r.hits) + ") than lookups (" + std::to_string(r.lookups) + ")");
  if (r.pcie_reads > r.routed)
    sc.fail_at(1, "more read over PCIe (" + std::to_string(r.pcie_reads) + ") than routed (" + std::to_string(r.routed) + ")");
  check_percent(sc, "hit rate", hit_pct, r.hits, r.lookups, 1);
  check_percent(sc, "PCIe share", overflow_pct, r.pcie_reads, r.routed, 2);
  // A request that looked no expert up has no hit rate (not 100%).
  r.has_cache = r.lookups > 0;
  r.hit_rate = r.lookups > 0 ? static_cast<double>(r.hits) / static_cast<double>(r.lookups) : 0.0;
  r.pcie_overflow = r.routed > 0 ? static_cast<double>(r.pcie_reads) / static_cast<double>(r.routed) : 0.0;
}

// llama.cpp: "= 41.08 ms / 13 tokens (...)" or "/ 13 runs".
struct LlamaTiming {
  double seconds = 0;
  std::int64_t count = 0;
  bool tokens = false;  // "tokens" (llama-server), not "runs" (llama_print_timings)
};

LlamaTiming read_llama_timing(Scanner& sc) {
  LlamaTiming t;
  const std::size_t time_at = sc.next_column();
  t.seconds = sc.number() * 1e-3;
  sc.lit("ms /");
  t.count = sc.integer();
  // The rate (count / time) is what the records give: a time so short that it overflows is no
  // engine's ("1e-300 ms"), and would put an infinite rate into every statistic.
  if (t.seconds > 0 && !std::isfinite(static_cast<double>(t.count) / t.seconds)) {
    sc.fail_at(time_at, fmt::sprintf("%lld in %g ms is an infinite rate: the time is too short for any engine to print",
                                     static_cast<long long>(t.count), t.seconds * 1e3));
  }
  t.tokens = sc.try_lit("tokens");
  if (!t.tokens && !sc.try_lit("runs")) sc.fail("expected \"tokens\" or \"runs\"");
  // "( X ms per token, Y tokens per second)": llama.cpp derives both from the time and the count
  // and prints each to 0.01. When both are there and finite (older builds print the first
  // alone; a zero count or time prints nan or inf), a line whose figures disagree with its
  // time and count beyond that rounding and 1% contradicts itself. Anything else after the
  // count is not read, as before.
  if (sc.try_lit("(")) {
    const std::size_t at = sc.column();
    const auto per_token_ms = sc.try_number();
    const auto per_second = per_token_ms && sc.try_lit("ms per token,") ? sc.try_number() : std::nullopt;
    if (per_second && sc.try_lit("tokens per second)") && t.count > 0 && t.seconds > 0) {
      // The time printed to 0.01 ms: the truth lies within 0.005 ms of it.
      const double ms = t.seconds * 1e3, n = static_cast<double>(t.count);
      const double lo_ms = std::max(ms - 0.005, 1e-9), hi_ms = ms + 0.005;
      auto within = [](double got, double lo, double hi) { return got >= 0.99 * lo - 0.006 && got <= 1.01 * hi + 0.006; };
      if (!within(*per_token_ms, lo_ms / n, hi_ms / n) || !within(*per_second, n * 1e3 / hi_ms, n * 1e3 / lo_ms)) {
        sc.fail_at(at, fmt::sprintf("%lld in %g ms is %.2f ms each and %.2f per second, not %.2f and %.2f: the line contradicts "
                                    "itself",
                                    static_cast<long long>(t.count), ms, ms / n, n * 1e3 / ms, *per_token_ms, *per_second));
      }
    }
  }
  return t;
}

void finish_record(LogRecord& r, const LogOptions& o) {
  // strata and llama-server count every generated token, the first one included, which the
  // prefill gave: G tokens come from G - 1 steps after it (llama-server starts its eval clock
  // at the first token). llama_print_timings' eval line counts the decode runs themselves.
  const bool first_counted = r.format == "strata" || r.eval_counts_first_token;
  const std::int64_t decoded = first_counted ? std::max<std::int64_t>(0, r.gen_tokens - 1) : r.gen_tokens;
  if (r.format == "strata" && r.drafted && o.draft_tokens && *o.draft_tokens > 0)
    r.steps = static_cast<double>(*r.drafted) / *o.draft_tokens;
  else if (r.format == "strata" && r.accepted)
    r.steps = static_cast<double>(decoded - std::min(*r.accepted, decoded));
  else
    r.steps = static_cast<double>(decoded) / o.tokens_per_step;
  if (r.format == "llama.cpp") r.decode_tok_s = r.decode_s > 0 ? static_cast<double>(r.gen_tokens) / r.decode_s : 0.0;
  r.step_s = r.steps > 0 ? r.decode_s / r.steps : 0.0;
  if (r.has_cache && r.steps > 0) {
    r.misses_per_step = static_cast<double>(r.lookups - r.hits) / r.steps;
    r.pcie_reads_per_step = static_cast<double>(r.pcie_reads) / r.steps;
  }
}

const char* unpaired_kind(Kind k) {
  switch (k) {
    case Kind::StrataGeneration: return "strata generation line without a cache line right after it";
    case Kind::StrataCache: return "strata cache line without a generation line right before it";
    case Kind::LlamaPrompt: return "llama.cpp prompt eval line without an eval line right after it";
    case Kind::LlamaEval: return "llama.cpp eval line without a prompt eval line right before it";
    case Kind::Other: break;
  }
  return "";
}

}  // namespace

ParsedLog parse_log(std::istream& in, const std::string& file, const LogOptions& options) {
  ParsedLog out;
  std::optional<Pending> pending;
  std::string line;
  std::size_t n = 0;
  auto drop_pending = [&] {
    if (pending) out.unpaired.push_back({pending->line, unpaired_kind(pending->kind)});
    pending.reset();
  };
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const Classified c = classify(line);
    const bool partner = pending && pending->line + 1 == n &&
                         ((pending->kind == Kind::StrataGeneration && c.kind == Kind::StrataCache) ||
                          (pending->kind == Kind::LlamaPrompt && c.kind == Kind::LlamaEval));
    if (partner) {
      LogRecord r = std::move(pending->record);
      pending.reset();
      if (c.kind == Kind::StrataCache) {
        Scanner sc(line, c.at, file, n, "strata cache line");
        read_strata_cache(sc, r);
      } else {
        Scanner sc(line, c.at, file, n, "llama.cpp eval time");
        const LlamaTiming eval = read_llama_timing(sc);
        r.decode_s = eval.seconds;
        r.gen_tokens = eval.count;
        r.eval_counts_first_token = eval.tokens;
      }
      finish_record(r, options);
      if (!r.unread_drafts.empty())
        out.unread.push_back({r.line, "drafts accepted written as \"" + r.unread_drafts +
                                          "\", not A/D: left out (no draft figures for this request)"});
      if (r.steps <= 0)
        out.skipped.push_back({r.line, "request with no decode step (" + std::to_string(r.gen_tokens) +
                                           " tokens generated): left out of every statistic"});
      else
        out.records.push_back(std::move(r));
      continue;
    }
    drop_pending();
    switch (c.kind) {
      case Kind::StrataGeneration: {
        Scanner sc(line, c.at, file, n, "strata generation line");
        pending = Pending{c.kind, n, read_strata_generation(sc, n)};
        break;
      }
      case Kind::LlamaPrompt: {
        Scanner sc(line, c.at, file, n, "llama.cpp prompt eval time");
        LogRecord r;
        r.line = n;
        r.format = "llama.cpp";
        const LlamaTiming prompt = read_llama_timing(sc);
        r.prompt_s = prompt.seconds;
        r.prompt_tokens = prompt.count;
        pending = Pending{c.kind, n, std::move(r)};
        break;
      }
      case Kind::StrataCache: {
        Scanner sc(line, c.at, file, n, "strata cache line");  // still checked: a malformed line is an error
        LogRecord ignored;
        read_strata_cache(sc, ignored);
        out.unpaired.push_back({n, unpaired_kind(c.kind)});
        break;
      }
      case Kind::LlamaEval: {
        Scanner sc(line, c.at, file, n, "llama.cpp eval time");
        read_llama_timing(sc);
        out.unpaired.push_back({n, unpaired_kind(c.kind)});
        break;
      }
      case Kind::Other:
        // A line cut short before its marker is whole is counted, never dropped unseen.
        if (ends_inside_marker(line)) out.unpaired.push_back({n, "line cut short inside a request line's marker (a truncated log?)"});
        break;
    }
  }
  drop_pending();
  out.lines = n;
  return out;
}

LinearFit least_squares(const std::vector<std::vector<double>>& columns, const std::vector<double>& y) {
  LinearFit f;
  const std::size_t n = y.size();
  const std::size_t p = columns.size() + 1;
  f.n = n;
  if (n > p) f.dof = n - p;  // reported also when the fit cannot be made
  if (n <= p) return f;
  auto x = [&](std::size_t i, std::size_t j) { return j == 0 ? 1.0 : columns[j - 1][i]; };
  // Normal equations [X'X | I] reduced to [I | (X'X)^-1] by Gauss-Jordan with partial pivoting.
  std::vector<std::vector<double>> a(p, std::vector<double>(2 * p, 0.0));
  std::vector<double> xty(p, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < p; ++j) {
      xty[j] += x(i, j) * y[i];
      for (std::size_t k = 0; k < p; ++k) a[j][k] += x(i, j) * x(i, k);
    }
  double scale = 0;
  for (std::size_t j = 0; j < p; ++j) {
    a[j][p + j] = 1.0;
    scale = std::max(scale, std::fabs(a[j][j]));
  }
  for (std::size_t c = 0; c < p; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < p; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    if (!(std::fabs(a[pivot][c]) > 1e-12 * scale)) return f;  // singular: e.g. a regressor that never varies
    std::swap(a[c], a[pivot]);
    const double d = a[c][c];
    for (double& v : a[c]) v /= d;
    for (std::size_t r = 0; r < p; ++r) {
      if (r == c || a[r][c] == 0.0) continue;
      const double m = a[r][c];
      for (std::size_t k = 0; k < 2 * p; ++k) a[r][k] -= m * a[c][k];
    }
  }
  f.coef.assign(p, 0.0);
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t k = 0; k < p; ++k) f.coef[j] += a[j][p + k] * xty[k];
  double ssr = 0, mean = 0, sst = 0;
  for (double v : y) mean += v / static_cast<double>(n);
  f.residuals.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double pred = 0;
    for (std::size_t j = 0; j < p; ++j) pred += f.coef[j] * x(i, j);
    f.residuals[i] = y[i] - pred;
    ssr += f.residuals[i] * f.residuals[i];
    sst += (y[i] - mean) * (y[i] - mean);
  }
  f.dof = n - p;
  const double s2 = ssr / static_cast<double>(f.dof);
  f.stderr_.resize(p);
  for (std::size_t j = 0; j < p; ++j) f.stderr_[j] = std::sqrt(std::max(0.0, s2 * a[j][p + j]));
  f.residual_rms = std::sqrt(ssr / static_cast<double>(n));
  f.r2 = sst > 0 ? 1.0 - ssr / sst : 1.0;
  // An absurd record (a time of 1e300 ms) overflows the sums: no fit rather than infinities.
  f.ok = std::isfinite(ssr) && std::isfinite(f.r2) &&
         std::all_of(f.coef.begin(), f.coef.end(), [](double c) { return std::isfinite(c); }) &&
         std::all_of(f.stderr_.begin(), f.stderr_.end(), [](double e) { return std::isfinite(e); });
  return f;
}

bool in_step_fit(const LogRecord& r, std::optional<double> max_misses_per_step) {
  return r.has_cache && r.steps > 0 && r.decode_s > 0 && (!max_misses_per_step || r.misses_per_step <= *max_misses_per_step);
}

StepFit fit_step_time(const std::vector<LogRecord>& records, const std::string& regressor,
                      std::optional<double> max_misses_per_step) {
  if (regressor != "misses" && regressor != "pcie_reads")
    throw std::invalid_argument("fit_step_time: regressor must be \"misses\" or \"pcie_reads\", got \"" + regressor + "\"");
  StepFit out;
  out.regressor = regressor;
  std::vector<double> x, y;
  for (const auto& r : records) {
    if (!in_step_fit(r, max_misses_per_step)) continue;
    x.push_back(regressor == "misses" ? r.misses_per_step : r.pcie_reads_per_step);
    y.push_back(r.step_s);
  }
  out.fit = least_squares({x}, y);
  if (!x.empty()) {
    out.x_min = *std::min_element(x.begin(), x.end());
    out.x_max = *std::max_element(x.begin(), x.end());
  }
  return out;
}

}  // namespace vramsim::calibrate
