// `vramsim fit`'s answer written out (fit_output.cc).
#pragma once

#include <string>

#include "workloads/fit.h"

namespace vramsim::cli {

// One JSON object, the fit section of docs/json-schema.md, ending in a newline.
std::string to_json(const workloads::FitReport& rep);
// The table printed on a terminal: the verdict, the calculator and llama.cpp's accounting
// side by side, the suggestions.
std::string to_table(const workloads::FitReport& rep);

}  // namespace vramsim::cli
