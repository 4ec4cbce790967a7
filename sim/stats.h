// Summary statistics over per-request samples. Percentiles use linear interpolation between
// order statistics (type 7, as numpy's default), on a copy: inputs are left untouched.
#pragma once

#include <vector>

namespace vramsim::sim {

double percentile(std::vector<double> values, double q);  // q in [0, 1]; NaN when empty
double mean(const std::vector<double>& values);

}  // namespace vramsim::sim
