#include "workloads/params_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <fmt/format.h>

namespace vramsim::workloads {

std::string format_params(double p, int digits) {
  if (!(p > 0)) return "0";
  const int exponent = static_cast<int>(std::floor(std::log10(p)));
  return fmt::format("{:.{}g}e{}", p / std::pow(10.0, exponent), digits, exponent);
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
  return fmt::format("{:.17g}", std::nextafter(target, INFINITY));
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
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace vramsim::workloads
