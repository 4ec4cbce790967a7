#include "core/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>
#include <fmt/format.h>

namespace vramsim::units {
namespace {

struct Suffix {
  std::string_view text;
  double scale;
};

// Longest suffixes first within a group is not needed: lookup is by exact match.
constexpr std::array kByteSuffixes{
    Suffix{"B", 1.0},        Suffix{"kB", 1e3},       Suffix{"KB", 1e3},   Suffix{"MB", 1e6},
    Suffix{"GB", 1e9},       Suffix{"TB", 1e12},      Suffix{"KiB", kKiB}, Suffix{"MiB", kMiB},
    Suffix{"GiB", kGiB},     Suffix{"TiB", kGiB * 1024.0},
};
constexpr std::array kTimeSuffixes{
    Suffix{"ns", 1e-9}, Suffix{"us", 1e-6}, Suffix{"\xC2\xB5s", 1e-6}, Suffix{"ms", 1e-3},
    Suffix{"s", 1.0},   Suffix{"min", 60.0},
};
constexpr std::array kPowerSuffixes{Suffix{"mW", 1e-3}, Suffix{"W", 1.0}, Suffix{"kW", 1e3}};
constexpr std::array kRateSuffixes{Suffix{"/s", 1.0}, Suffix{"/min", 1.0 / 60.0}, Suffix{"/h", 1.0 / 3600.0},
                                   Suffix{"Hz", 1.0},  Suffix{"kHz", 1e3},   Suffix{"MHz", 1e6},   Suffix{"GHz", 1e9}};
constexpr std::array kFlopSuffixes{
    Suffix{"FLOPS", 1.0},   Suffix{"GFLOPS", 1e9},    Suffix{"TFLOPS", 1e12}, Suffix{"PFLOPS", 1e15},
    Suffix{"FLOP/s", 1.0},  Suffix{"GFLOP/s", 1e9},   Suffix{"TFLOP/s", 1e12}, Suffix{"PFLOP/s", 1e15},
};

template <std::size_t N>
std::optional<double> scale_of(std::string_view unit, const std::array<Suffix, N>& table) {
  for (const auto& s : table)
    if (s.text == unit) return s.scale;
  return std::nullopt;
}

std::optional<double> unit_scale(std::string_view unit, Dimension dim) {
  switch (dim) {
    case Dimension::Bytes: return scale_of(unit, kByteSuffixes);
    case Dimension::Bandwidth: {
      if (unit.size() < 3 || unit.substr(unit.size() - 2) != "/s") return std::nullopt;
      return scale_of(unit.substr(0, unit.size() - 2), kByteSuffixes);
    }
    case Dimension::Time: return scale_of(unit, kTimeSuffixes);
    case Dimension::Power: return scale_of(unit, kPowerSuffixes);
    case Dimension::FlopRate: return scale_of(unit, kFlopSuffixes);
    case Dimension::Rate: return scale_of(unit, kRateSuffixes);
  }
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<double> parse(std::string_view text, Dimension dim) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  double number = 0.0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (*begin == '+') ++begin;  // from_chars rejects a leading '+'
  auto [ptr, ec] = std::from_chars(begin, end, number, std::chars_format::general);
  if (ec != std::errc{} || !std::isfinite(number) || number < 0.0) return std::nullopt;
  std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (unit.empty()) return std::nullopt;
  auto scale = unit_scale(unit, dim);
  if (!scale) return std::nullopt;
  double value = number * *scale;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::string_view name(Dimension dim) {
  switch (dim) {
    case Dimension::Bytes: return "size";
    case Dimension::Bandwidth: return "bandwidth";
    case Dimension::Time: return "duration";
    case Dimension::Power: return "power";
    case Dimension::FlopRate: return "compute rate";
    case Dimension::Rate: return "rate";
  }
  return "quantity";
}

std::string expectation(Dimension dim) {
  switch (dim) {
    case Dimension::Bytes: return "a size like \"1.318MiB\" or \"24GiB\"";
    case Dimension::Bandwidth: return "a bandwidth like \"13.9GB/s\"";
    case Dimension::Time: return "a duration like \"2us\"";
    case Dimension::Power: return "a power like \"575W\"";
    case Dimension::FlopRate: return "a compute rate like \"165.2TFLOPS\"";
    case Dimension::Rate: return "a rate like \"2/s\" or \"90/min\"";
  }
  return "a quantity with a unit";
}

std::string format_gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / kGiB); }

std::string format_bandwidth(double bytes_per_second) { return fmt::format("{:.1f} GB/s", bytes_per_second / kGB); }

std::string format_flops(double flop_per_second) { return fmt::format("{:.3g} TFLOPS", flop_per_second / 1e12); }

std::string fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

PhysicalRange physical_range(Dimension dim) {
  switch (dim) {
    case Dimension::Bytes: return {1.0, 1e18, "1 B", "1 EB"};
    case Dimension::Bandwidth: return {1e3, 1e15, "1 kB/s", "1 PB/s"};
    case Dimension::Time: return {1e-12, 1e7, "1 ps", "10^7 s (116 days)"};
    case Dimension::Power: return {1e-3, 1e6, "1 mW", "1 MW"};
    case Dimension::FlopRate: return {1e6, 1e19, "1 MFLOPS", "10 EFLOPS"};
    case Dimension::Rate: return {1e-9, 1e11, "1e-9/s", "100 GHz"};
  }
  return {0.0, 0.0, "", ""};
}

}  // namespace vramsim::units
