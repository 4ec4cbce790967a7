// Plain C++ (no CUDA) half of vramsim-calibrate: statistics over trials, the least-squares
// fit t = t0 + bytes / bandwidth, unit formatting in the project's style ("13.9GB/s",
// "2.1us", "575W"), and the outputs' value tree (core's JSON tree) written out as JSON (core's
// writer) or YAML (yaml-cpp's emitter). Kept free of CUDA headers so that it can be
// unit-tested on machines without a GPU, and C++17 (nvcc compiles it as C++17 where CMake does
// not know its C++20), as are the core headers it includes (json_value.h, json.h, result.h).
#pragma once

#include <cstddef>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/json_value.h"

namespace vramsim::calibrate {

// A malformed line of an input file (an engine log, a routing trace). what() is
// "FILE:LINE:COL: error: MESSAGE" (1-based line and column), as the project's config errors.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, std::size_t line, std::size_t column, const std::string& message);
};

// ---- statistics -------------------------------------------------------------------------

// Summary of repeated trials of one measurement. Units are those of the samples.
struct Stats {
  std::size_t n = 0;
  double min = 0.0;
  double median = 0.0;
  double max = 0.0;
  double mean = 0.0;
};

// Summary of `samples`; all fields zero when empty.
Stats summarize(const std::vector<double>& samples);

// Result of fitting y = intercept + slope * x.
struct LineFit {
  double intercept = 0.0;
  double slope = 0.0;
  double r2 = 0.0;        // coefficient of determination (unweighted, on the inputs)
  std::size_t n = 0;      // points used
  bool ok = false;        // false with fewer than 2 distinct x or a degenerate system
};

// Least squares fit of y = intercept + slope * x. With `relative` set, each point is
// weighted by 1/y^2, i.e. the fit minimises relative rather than absolute residuals, so
// that the many small transfers (which fix the intercept) are not swamped by the few
// large ones (which fix the slope). Points with y <= 0 are skipped in relative mode.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, bool relative);

// Fit of a transfer-time model t = t0 + bytes / bandwidth.
struct TransferFit {
  double t0_s = 0.0;               // fixed cost per transfer, seconds
  double bandwidth_Bps = 0.0;      // bytes per second (0 when the slope is not positive)
  double r2 = 0.0;
  bool ok = false;
};

// `bytes[i]` bytes took `seconds[i]` seconds; weighted relative least squares (see fit_line).
TransferFit fit_transfer(const std::vector<double>& bytes, const std::vector<double>& seconds);

// ---- unit formatting (strings the project's unit parser reads) ---------------------------

std::string format_bandwidth(double bytes_per_second);  // "13.9GB/s" (decimal GB)
std::string format_time(double seconds);                // "850ns", "2.1us", "3.40ms", "1.20s"
std::string format_power(double watts);                 // "575W"
std::string format_bytes_mib(double bytes);             // "24564MiB"
std::string format_number(double v);                    // shortest round-trip-ish text, JSON-safe

// ---- the value tree of the outputs -------------------------------------------------------

// The raw JSON and the YAML summary are built as core's ordered JSON tree (core/json_value.h):
// Value::object(), v["key"] = Value::number(1.5), list.push(...).
using Value = json::Value;

// Convenience: a number array from samples.
Value number_array(const std::vector<double>& v);

// Stats as an object {n, min, median, max, mean}.
Value stats_value(const Stats& s);

// One line for a recorded series, printed as each measurement ends so that a run cut short
// still shows its figures: "NAME k=v ...: median M (min m, n N)", numeric and string params as
// k=v, times ("s") and powers ("W") in the project's unit strings, other units as "number unit".
std::string series_line(const std::string& name, const Value& params, const std::string& unit, const Stats& s);

// JSON through core's writer (json::write); YAML through yaml-cpp's emitter, mappings in block
// style and lists of scalars in flow style, a string quoted only where YAML would misread it.
void write_json(std::ostream& out, const Value& v);
void write_yaml(std::ostream& out, const Value& v);

std::string to_json(const Value& v);
std::string to_yaml(const Value& v);

// ---- what the calibration YAML may say (hw/calibration.cc reads it back) -----------------

// The reader accepts a figure only when it is positive and, for an efficiency, at most 1; a
// figure it would refuse makes the whole file unusable, so the writer decides here, without
// CUDA, what each measured value becomes in the YAML.

// One figure as the YAML writes it.
struct YamlFigure {
  Value value;      // what the YAML writes: a string ("2.10us"), a number (0.812) or null
  std::string why;  // when the value is null or was altered: why (for the raw JSON's notes)
};

// pcie.<dir>.latency, the fitted intercept t0 of t = t0 + bytes / bandwidth (seconds): a time
// string when the fit is ok and t0 reads back as a positive time; otherwise null (unmeasured,
// the simulator keeps its own latency) with `why` set.
YamlFigure latency_figure(const TransferFit& fit);

// zero_copy.efficiency = zero-copy read bandwidth / pinned-copy H2D bandwidth (both bytes/s),
// rounded to 3 decimals and clamped to at most 1 (a zero-copy read faster than the copy fit's
// slope is measurement noise or a different path, not an efficiency above 1; the raw ratio
// stays in the raw JSON). Null when either bandwidth is not positive.
YamlFigure efficiency_figure(double zero_copy_Bps, double h2d_Bps);

}  // namespace vramsim::calibrate
