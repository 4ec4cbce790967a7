// The summary of one `vramsim run`: the table a user reads, the JSON object (docs/json-schema.md)
// and one JSON line per request (--requests-out). Pure formatting of a RunResult; no simulation.
#pragma once

#include <string>

#include "sim/engine.h"
#include "sim/power.h"

namespace vramsim::reports {

// The run's JSON object; `wall_s`: the simulation's wall-clock seconds (the only figure that is
// not simulated).
std::string run_summary_json(const sim::Scenario& s, const sim::RunResult& r, const sim::PowerSummary& p, double wall_s);
// The run's human-readable table.
std::string run_summary_table(const sim::Scenario& s, const sim::RunResult& r, const sim::PowerSummary& p, double wall_s);
// One request's JSON line (with its newline).
std::string request_json_line(const sim::RequestRecord& r);

}  // namespace vramsim::reports
