// Physical quantities written as strings with units, as every vramsim config does:
// "13.9GB/s", "1.318MiB", "2us", "575W", "165.2TFLOPS".
// Decimal prefixes are powers of 1000 (GB = 1e9 bytes), binary ones powers of 1024
// (GiB = 2^30 bytes); both are accepted and never confused. Values are returned in SI base
// units: bytes, bytes per second, seconds, watts, floating-point operations per second.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vramsim::units {

enum class Dimension { Bytes, Bandwidth, Time, Power, FlopRate, Rate };  // Rate: events per second

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// Parses `text` as a quantity of `dim`. Returns nullopt when the text is not a finite,
// non-negative number followed by a unit of that dimension (a bare number is rejected:
// the unit is part of the value). Whitespace between number and unit is allowed.
std::optional<double> parse(std::string_view text, Dimension dim);

// A phrase for error messages: `a bandwidth like "13.9GB/s"`.
std::string expectation(Dimension dim);

// The dimension's name: "bandwidth".
std::string_view name(Dimension dim);

// The range a quantity of `dim` can physically take in this simulator's world, in SI units
// (bytes, B/s, s, W, FLOP/s, 1/s): a positive value below `least` or any value above `most`
// describes no real part or workload (a 1e-300 B/s link, a 1e300 s latency) and is refused.
struct PhysicalRange {
  double least;  // smallest positive value
  double most;
  std::string_view least_text, most_text;
};
PhysicalRange physical_range(Dimension dim);

// Bytes as GiB with two decimals ("4.53 GiB"), and friends used by the human tables.
std::string format_gib(double bytes);
std::string format_bandwidth(double bytes_per_second);  // "13.9 GB/s"
std::string format_flops(double flop_per_second);       // "2.4 TFLOPS"
// `v` with `decimals` digits after the point ("%.*f"): tables and messages.
std::string fixed(double v, int decimals);

}  // namespace vramsim::units
