#include "calibrate/report.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/json.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace vramsim::calibrate {

InputError::InputError(const std::string& file, std::size_t line, std::size_t column, const std::string& message)
    : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: " + message) {}

// ---- statistics -------------------------------------------------------------------------

Stats summarize(const std::vector<double>& samples) {
  Stats s;
  if (samples.empty()) return s;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.min = v.front();
  s.max = v.back();
  const std::size_t mid = v.size() / 2;
  s.median = (v.size() % 2 == 1) ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
  double sum = 0.0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, bool relative) {
  LineFit f;
  const std::size_t n = std::min(x.size(), y.size());
  // Weighted normal equations: minimise sum w_i (y_i - a - b x_i)^2.
  double sw = 0.0, swx = 0.0, swy = 0.0, swxx = 0.0, swxy = 0.0;
  std::size_t used = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    double w = 1.0;
    if (relative) {
      if (y[i] <= 0.0) continue;
      w = 1.0 / (y[i] * y[i]);
    }
    sw += w;
    swx += w * x[i];
    swy += w * y[i];
    swxx += w * x[i] * x[i];
    swxy += w * x[i] * y[i];
    ++used;
  }
  f.n = used;
  if (used < 2) return f;
  const double det = sw * swxx - swx * swx;
  // Relative tolerance: det is zero when all x are equal.
  if (!(std::fabs(det) > 1e-12 * sw * swxx)) return f;
  f.slope = (sw * swxy - swx * swy) / det;
  f.intercept = (swy - f.slope * swx) / sw;
  // Unweighted R^2 of the fitted line on the points used.
  double mean_y = 0.0;
  std::size_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || (relative && y[i] <= 0.0)) continue;
    mean_y += y[i];
    ++m;
  }
  mean_y /= static_cast<double>(m);
  double ss_res = 0.0, ss_tot = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]) || (relative && y[i] <= 0.0)) continue;
    const double r = y[i] - (f.intercept + f.slope * x[i]);
    ss_res += r * r;
    ss_tot += (y[i] - mean_y) * (y[i] - mean_y);
  }
  f.r2 = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : 1.0;
  f.ok = true;
  return f;
}

TransferFit fit_transfer(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  TransferFit t;
  const LineFit f = fit_line(bytes, seconds, /*relative=*/true);
  if (!f.ok) return t;
  t.t0_s = f.intercept;
  t.bandwidth_Bps = f.slope > 0.0 ? 1.0 / f.slope : 0.0;
  t.r2 = f.r2;
  t.ok = f.slope > 0.0;
  return t;
}

// ---- unit formatting ----------------------------------------------------------------------

namespace {

// Three significant digits without exponent notation: 4823 -> "4823", 13.94 -> "13.9",
// 2.134 -> "2.13", 0.5123 -> "0.512".
std::string three_digits(double v) {
  const double a = std::fabs(v);
  if (a >= 100.0 || a == 0.0) return fmt::format("{:.0f}", v);
  if (a >= 10.0) return fmt::format("{:.1f}", v);
  if (a >= 1.0) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string format_bandwidth(double bytes_per_second) {
  return three_digits(bytes_per_second / 1e9) + "GB/s";
}

std::string format_time(double seconds) {
  const double a = std::fabs(seconds);
  if (a < 1e-6) return three_digits(seconds * 1e9) + "ns";
  if (a < 1e-3) return three_digits(seconds * 1e6) + "us";
  if (a < 1.0) return three_digits(seconds * 1e3) + "ms";
  return three_digits(seconds) + "s";
}

std::string format_power(double watts) { return three_digits(watts) + "W"; }

std::string format_bytes_mib(double bytes) {
  return fmt::format("{:.0f}MiB", bytes / (1024.0 * 1024.0));
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return "null";
  return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:.10g}", v);
}

// ---- value tree ---------------------------------------------------------------------------

Value number_array(const std::vector<double>& v) {
  Value a = Value::array();
  for (double d : v) a.push(Value::number(d));
  return a;
}

Value stats_value(const Stats& s) {
  Value o = Value::object();
  o["n"] = Value::number(static_cast<double>(s.n));
  o["min"] = Value::number(s.min);
  o["median"] = Value::number(s.median);
  o["max"] = Value::number(s.max);
  o["mean"] = Value::number(s.mean);
  return o;
}

// ---- JSON and YAML -------------------------------------------------------------------------

namespace {

bool is_scalar(const Value& v) { return v.kind() != Value::Kind::Array && v.kind() != Value::Kind::Object; }

// Whether YAML would misread `s` written plain: a null, boolean or number word, a leading
// indicator, a ": " or " #", a control character. Such a string is written double-quoted.
bool yaml_needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* const kReserved[] = {"null", "Null", "NULL", "~",   "true", "True", "TRUE",
                                          "false", "False", "FALSE", "yes", "Yes", "YES", "no",
                                          "No",   "NO",   "on",   "On",   "ON",  "off", "Off", "OFF",
                                          "y",    "Y",    "n",    "N"};
  for (const char* r : kReserved)
    if (s == r) return true;
  const char first = s.front();
  if (std::string("-?:,[]{}#&*!|>'\"%@` ").find(first) != std::string::npos) return true;
  if (s.back() == ' ' || s.back() == ':') return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  for (unsigned char c : s)
    if (c < 0x20) return true;
  char* end = nullptr;  // would it read as a number ("1.5", "1e3", ".5")?
  (void)std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

void emit_string(YAML::Emitter& e, const std::string& s) {
  if (yaml_needs_quotes(s)) e << YAML::DoubleQuoted;
  e << s;
}

// A value through yaml-cpp's emitter: mappings in block style, lists of scalars (sample lists)
// and the items of a list of mappings in flow style, so that a file stays short and scannable.
void emit(YAML::Emitter& e, const Value& v, bool flow) {
  switch (v.kind()) {
    case Value::Kind::Null: e << YAML::Null; break;
    case Value::Kind::Bool: e << v.truth(); break;
    case Value::Kind::Number: e << v.text(); break;  // the shortest text that reads back (json::Value::number)
    case Value::Kind::String: emit_string(e, v.text()); break;
    case Value::Kind::Array: {
      const bool items_flow = flow || std::all_of(v.items().begin(), v.items().end(), is_scalar);
      if (items_flow) e << YAML::Flow;
      e << YAML::BeginSeq;
      for (const auto& item : v.items()) emit(e, item, true);
      e << YAML::EndSeq;
      break;
    }
    case Value::Kind::Object:
      if (flow || v.members().empty()) e << YAML::Flow;
      e << YAML::BeginMap;
      for (const auto& [key, member] : v.members()) {
        e << YAML::Key;
        emit_string(e, key);
        e << YAML::Value;
        emit(e, member, flow);
      }
      e << YAML::EndMap;
      break;
  }
}

}  // namespace

void write_json(std::ostream& out, const Value& v) {
  json::Writer w;
  json::write(w, v);
  out << w.str() << '\n';
}

void write_yaml(std::ostream& out, const Value& v) {
  YAML::Emitter e;
  e.SetNullFormat(YAML::LowerNull);  // `null`, as the files have always said (not `~`)
  emit(e, v, false);
  out << e.c_str() << '\n';
}

std::string to_json(const Value& v) {
  std::ostringstream s;
  write_json(s, v);
  return s.str();
}

std::string to_yaml(const Value& v) {
  std::ostringstream s;
  write_yaml(s, v);
  return s.str();
}

std::string series_line(const std::string& name, const Value& params, const std::string& unit, const Stats& s) {
  auto figure = [&](double v) {
    if (unit == "s") return format_time(v);
    if (unit == "W") return format_power(v);
    return format_number(v) + " " + unit;
  };
  std::string line = name;
  for (const auto& [key, value] : params.members()) {
    if (value.kind() == Value::Kind::Number) line += " " + key + "=" + format_number(value.number());
    else if (value.kind() == Value::Kind::String) line += " " + key + "=" + value.text();
  }
  line += ": median " + figure(s.median) + " (min " + figure(s.min) + ", n " + std::to_string(s.n) + ")";
  return line;
}

YamlFigure latency_figure(const TransferFit& fit) {
  YamlFigure f;
  if (!fit.ok) {
    f.why = "the transfer fit failed (fewer than two distinct sizes or no positive slope): latency not measured";
    return f;
  }
  const std::string text = format_time(fit.t0_s);
  const auto back = units::parse(text, units::Dimension::Time);
  if (!(fit.t0_s > 0.0) || !back || !(*back > 0.0)) {
    f.why = "fitted intercept t0 = " + format_number(fit.t0_s) +
            " s is not a positive time (below the timer's resolution, or a fitting artefact): latency written as null";
    return f;
  }
  f.value = Value::string(text);
  return f;
}

YamlFigure efficiency_figure(double zero_copy_Bps, double h2d_Bps) {
  YamlFigure f;
  if (!(zero_copy_Bps > 0.0) || !(h2d_Bps > 0.0)) {
    f.why = "zero-copy or pinned H2D bandwidth not measured: efficiency written as null";
    return f;
  }
  const double ratio = zero_copy_Bps / h2d_Bps;
  double v = std::min(1.0, ratio);
  const double rounded = std::round(v * 1000.0) / 1000.0;
  if (rounded > 0.0) v = rounded;  // a ratio below 0.0005 keeps its digits rather than becoming 0
  if (ratio > 1.0)
    f.why = "zero-copy read / pinned H2D bandwidth = " + format_number(ratio) + " > 1: efficiency clamped to 1";
  f.value = Value::number(v);
  return f;
}

}  // namespace vramsim::calibrate
