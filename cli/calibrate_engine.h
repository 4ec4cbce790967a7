// `vramsim calibrate --from-log LLAMA.log --scenario S.yaml [--write-engine OUT.yaml]`: what a
// llama.cpp server log fixes about the engine on the machine the scenario describes. The log's
// fits (calibrate/llama_fit.h) give the decode step at the requests' mean context and the
// prompt rate at their mean prompt length; the scenario, simulated by `vramsim run` children at
// that request, gives the same figures as functions of two engine keys, which are solved for:
//   layer_launch            the decode step is linear in it (the GPU layers pay it once each)
//   gpu_compute_efficiency  the prompt rate rises with it (bisection), where the prompt is
//                           compute-bound at that length
// A figure the scenario cannot reach (a step shorter than its bytes alone, a rate above the
// card's full rate) is reported with the reason, not written. --write-engine writes an engine
// file (`preset:` the scenario's engine, its overrides, the solved keys with their fit) that a
// scenario names as its engine.
#pragma once

#include <string>

#include "calibrate/log_fit.h"
#include "cli/args.h"

namespace vramsim::cli {

// Prints the fits and the solved keys (text, or a JSON object with --json) and writes
// --write-engine. Throws UsageError / ConfigError.
int calibrate_engine(const Args& args, const calibrate::ParsedLog& log, const std::string& log_file);

}  // namespace vramsim::cli
