#include "workloads/params_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace vramsim::workloads {

std::string format_params(double p, int digits) {
  if (!(p > 0)) return "0";
  const int exponent = static_cast<int>(std::floor(std::log10(p)));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*ge%d", digits, p / std::pow(10.0, exponent), exponent);
  return buf;
}

namespace {

// `p` at four significant digits, or more, so that it reads back as at least `floor`; `p` is
// first raised to `floor` (a sum of written figures that rounding moved above it).
std::string at_least(double p, double floor) {
  const double target = std::max(p, floor);
  for (int digits = 4; digits <= 17; ++digits) {
    std::string text = format_params(target, digits);
    if (std::stod(text) >= floor) return text;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", std::nextafter(target, INFINITY));
  return buf;
}

}  // namespace

ParamsText params_text(const ModelSpec& m) {
  ParamsText t;
  t.expert = m.moe ? format_params(m.moe->expert_params) : std::string();
  const double expert = m.moe ? std::stod(t.expert) : 0.0;
  const double routed = m.moe ? static_cast<double>(m.moe->layers) * m.moe->experts * expert : 0.0;
  const double routed_active = m.moe ? static_cast<double>(m.moe->layers) * m.moe->experts_per_token * expert : 0.0;
  t.active = at_least(m.params_active, routed_active);
  t.total = at_least(m.params_total, std::max(routed, std::stod(t.active)));
  return t;
}

std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace vramsim::workloads
