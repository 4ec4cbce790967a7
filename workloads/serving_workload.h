// The serving workload of a `vramsim run` scenario (the `workload:` section, docs/scenarios.md):
// who sends requests and when (closed-loop clients, Poisson or bursty open-loop arrivals, a
// replayed trace), how long each request's prompt and generation are (a fixed length or a
// distribution), and which requests share a cached prompt prefix.
//
// Pure descriptions and their decoding; the draws (counter-based, keyed by seed and request)
// and the event loop live in sim/ (sim/request_source.h, sim/engine.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config_reader.h"

namespace vramsim::workloads {

// A length in tokens, fixed or drawn per request.
struct LengthDist {
  enum class Kind { Fixed, Uniform, Lognormal, Empirical };
  Kind kind = Kind::Fixed;
  std::int64_t min = 0;              // Fixed: the length (min == max); Uniform: inclusive bounds
  std::int64_t max = 0;              // ... Lognormal: the cap; Empirical: the largest value
  double median = 0;                 // Lognormal: exp(mu)
  double sigma = 0;                  // Lognormal: standard deviation of the log
  std::vector<std::int64_t> values;  // Empirical: the lengths, ascending
  std::vector<double> cumulative;    // Empirical: cumulative weight up to each value, the last 1

  static LengthDist fixed(std::int64_t tokens) {
    LengthDist d;
    d.min = d.max = tokens;
    return d;
  }
  // The length for two independent uniform numbers in [0, 1) (u2 only used by lognormal).
  std::int64_t sample(double u1, double u2) const;
  std::int64_t smallest() const;
};

// One request of a replayed trace (24 bytes).
struct TraceRow {
  double arrival_s = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t gen_tokens = 0;
  std::int32_t prefix_id = -1;      // -1: no shared prefix
  std::int32_t prefix_tokens = -1;  // -1: workload.shared_prefix_tokens
};

enum class Arrival { Closed, Poisson, Bursty, Trace };

struct WorkloadSetup {
  // Closed loop: `clients` each send a request when their previous one ends. Open loop:
  // requests arrive whatever the engine does, as a Poisson process at `arrival_rate`, as an
  // on/off (Markov-modulated Poisson) process, or at the times of a trace.
  Arrival arrival = Arrival::Closed;
  bool open_loop = false;
  double arrival_rate = 0;  // requests per second: Poisson; bursty: within a burst
  double idle_rate = 0;     // bursty: requests per second between bursts (default 0)
  double burst_s = 0;       // bursty: mean burst duration, seconds (exponential)
  double idle_s = 0;        // bursty: mean time between bursts, seconds (exponential)
  int clients = 1;
  int requests = 1;
  LengthDist prompt;
  LengthDist gen;
  std::int64_t shared_prefix_tokens = 0;  // every request's (or every trace prefix id's) cached prefix
  std::string trace_file;
  std::vector<TraceRow> trace;            // the first `requests` rows, arrival times ascending
};

// Decodes the `workload:` mapping. `context` is engine.context: a length distribution must
// lie inside it (a fixed prompt may exceed it: the engine rejects such requests). Relative
// file names (trace, empirical lengths) are resolved against the directory of the file that
// names them. Throws config::ConfigError.
WorkloadSetup decode_workload(config::MapReader w, std::int64_t context);

// Reads a request trace: a CSV with the header columns arrival_s, prompt_tokens, output_tokens
// and optionally prefix_id and prefix_tokens, in any order. A malformed row throws a
// ConfigError at "file:row:column" naming the column.
std::vector<TraceRow> read_request_trace(const std::string& path, const std::string& key_path);

// Reads an empirical length table: a CSV with a `tokens` column and an optional `weight`
// column (default 1 a row). Lengths must lie in [1, context].
LengthDist read_empirical_lengths(const std::string& path, const std::string& key_path, std::int64_t context);

}  // namespace vramsim::workloads
