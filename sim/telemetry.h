// Outputs in other tools' formats: the case-study engine's telemetry lines (so the same log
// tools read real and simulated runs) and a Chrome/Perfetto timeline trace.
#pragma once

#include <string>
#include <vector>

#include "sim/engine.h"

namespace vramsim::sim {

// The engine's start-up lines: expert cache sizing (one line per card, first card first), PCIe
// probe and split (the first card's link), pre-fill (the whole phase: slots and bytes summed
// over the cards, its wall time in seconds, and their rate in MB/s, 10^6 bytes per second).
std::string strata_startup_lines(const Scenario& scenario, const RunResult& run);
// The pair of lines the engine writes per request (generation, then hit rate / overflow).
std::string strata_request_lines(const Scenario& scenario, const RequestRecord& request);
// llama-server's timing lines for one request (tools/server/server.cpp, print_timings): the
// prompt tokens it processed (a reused prefix left out) and their time, then the generated
// tokens, the first one included, over the time from the first token to the last.
std::string llama_server_request_lines(const RequestRecord& request);
// {"traceEvents": [...]} with complete ("X") events in microseconds, one track per resource.
std::string chrome_trace(const std::vector<TraceEvent>& events);

}  // namespace vramsim::sim
