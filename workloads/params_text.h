// Parameter counts written into a model file (`vramsim import-model`): four significant digits,
// "8.03e9", and more where the catalogue's checks on the written figures need them.
#pragma once

#include <string>

#include "workloads/model.h"

namespace vramsim::workloads {

// `p` as a YAML number with `digits` significant digits: mantissa in [1, 10) and a plain
// exponent, whatever the size ("%g" alone switches to "e+04" forms that would not parse as one
// number once a suffix is appended).
std::string format_params(double p, int digits = 4);

struct ParamsText {
  std::string total, active, expert;
};
// The model's params.total, params.active and moe.expert_params as written. Each has four
// significant digits unless the figures read back would break the catalogue's checks (the routed
// experts of the written expert_params within params.total, their top-k within params.active,
// active within total: decode_model): then a count is written with as many more digits as it
// takes, or at the sum it must hold when rounding moved that sum above it. Each written figure
// is within 5e-4 of its exact value.
ParamsText params_text(const ModelSpec& m);

// `text` as a YAML double-quoted scalar (quotes and backslashes escaped, control bytes as \xNN).
std::string yaml_quoted(const std::string& text);

}  // namespace vramsim::workloads
