// Fitting the simulator's engine-level parameters from an inference engine's own telemetry:
// the per-step overhead and the per-miss (slow-path) cost, which microbenchmarks cannot see.
//
// Two log formats are read (docs/calibration.md shows them):
// - the case study's engine ("strata"): per request, a generation line
//     strata serve: prompt 26 tokens = 0 reused + 26 read in 43 ms, 192 generated in 1367 ms (140.5 tok/s), drafts accepted ...
//   and, on the very next line, its cache line
//     strata serve: decode expert cache hit rate: 86.3% (23414 hits / 27131 lookups); 412 more read by the GPU over PCIe or from another GPU (2.31% of all 17850 routed)
//   (`vramsim run --log-format strata` writes the same lines, sim/telemetry.cc);
// - llama.cpp's server timings: `prompt eval time = ... ms / N tokens (...)` and, on the very
//   next line, `eval time = ... ms / N tokens (...)` (or `runs`).
// Pairs are strictly adjacent lines: a cache line that does not immediately follow a
// generation line, or a generation line not immediately followed by one, is unpaired: counted
// and reported, never guessed. A line may carry any prefix (timestamps, container names).
//
// Plain C++ without CUDA or the rest of vramsim, tested without a GPU. Units: seconds, tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/report.h"

namespace vramsim::calibrate {

// One request read from a log.
struct LogRecord {
  std::size_t line = 0;             // the generation line (1-based)
  std::string format;               // "strata" | "llama.cpp"
  std::int64_t prompt_tokens = 0;
  double prompt_s = 0;              // prompt read (prefill) time
  std::int64_t gen_tokens = 0;
  double decode_s = 0;              // time to generate gen_tokens
  // llama-server's eval line counts "N tokens", the first one (from the prompt's pass) included,
  // and times the N - 1 decode steps after it; llama_print_timings' "N runs" are the steps.
  bool eval_counts_first_token = false;
  double decode_tok_s = 0;          // gen_tokens / decode_s
  std::optional<std::int64_t> accepted, drafted;  // MTP drafts, when the line gives them
  // The optional draft field written in a form the reader does not know (not "A/D" nor "..."):
  // its text, quoted; the record then has no draft figures (ParsedLog::unread).
  std::string unread_drafts;
  double steps = 0;                 // decode steps (see LogOptions)
  double step_s = 0;                // decode_s / steps
  bool has_cache = false;           // a strata cache line was paired (the rest below is set)
  std::int64_t hits = 0, lookups = 0, pcie_reads = 0, routed = 0;
  double hit_rate = 0;              // hits / lookups (the engine's printed figure is not used: it is rounded)
  double pcie_overflow = 0;         // pcie_reads / routed
  double misses_per_step = 0;       // (lookups - hits) / steps
  double pcie_reads_per_step = 0;   // pcie_reads / steps
};

// A line that names a request figure but has no partner.
struct UnpairedLine {
  std::size_t line = 0;
  std::string kind;  // "generation without a cache line" | "cache line without a generation line" | ...
};

struct ParsedLog {
  std::vector<LogRecord> records;
  std::vector<UnpairedLine> unpaired;
  // Requests left out of every statistic: no decode step (a single token, the prefill's, or
  // none), so no decode rate or step time to give.
  std::vector<UnpairedLine> skipped;
  // Optional fields in a form the reader does not know, left out of their records (each named
  // with its line), never a reason to refuse the log.
  std::vector<UnpairedLine> unread;
  std::size_t lines = 0;
};

struct LogOptions {
  // How many tokens a decode step generates, when the generation line gives no draft figures
  // (1 without speculative decoding).
  double tokens_per_step = 1.0;
  // Draft tokens proposed per step. When set, steps = drafted / draft_tokens (exact); else
  // steps = generated - accepted (each step emits one token plus its accepted drafts; the last
  // step's surplus drafts make it undercount by at most draft_tokens steps per request).
  std::optional<int> draft_tokens;
};

// Reads a log. Throws InputError for a line that carries a known marker but malformed numbers.
// Never throws for an unpaired line (see ParsedLog::unpaired).
ParsedLog parse_log(std::istream& in, const std::string& file, const LogOptions& options = {});

// Ordinary least squares y = b0 + b1 x1 + ... with standard errors.
struct LinearFit {
  bool ok = false;                   // false with too few points or a singular system
  std::size_t n = 0;                 // points
  std::size_t dof = 0;               // n - coefficients
  std::vector<double> coef;          // b0 (intercept), b1, ...
  std::vector<double> stderr_;       // their standard errors: sqrt(s^2 (X'X)^-1), s^2 = SSR / dof
  std::vector<double> residuals;     // y - prediction, per point
  double residual_rms = 0;           // sqrt(SSR / n)
  double r2 = 0;
};

// `columns[j][i]` is regressor j at point i; all columns as long as y. Needs n > regressors + 1.
LinearFit least_squares(const std::vector<std::vector<double>>& columns, const std::vector<double>& y);

// The engine-level fit: step time against slow-path work per step, over the records that have
// cache figures: t_step = t_fast + c * x, where x is misses per step (regressor "misses") or
// GPU reads over PCIe per step ("pcie_reads"). With `max_misses_per_step`, only requests with
// at most that many misses per step take part: the cost of a miss falls once most layers
// already wait for one (docs/calibration.md), so the low-miss regime is fitted on its own.
struct StepFit {
  std::string regressor;             // "misses" | "pcie_reads"
  LinearFit fit;                     // coef[0] = t_fast (s), coef[1] = c (s per miss / per read)
  double x_min = 0, x_max = 0;       // the regressor's range over the fitted requests (t_fast is
                                     // an extrapolation when x_min is far from 0)
};

StepFit fit_step_time(const std::vector<LogRecord>& records, const std::string& regressor,
                      std::optional<double> max_misses_per_step = std::nullopt);

// Whether a record takes part in such a fit.
bool in_step_fit(const LogRecord& record, std::optional<double> max_misses_per_step);

}  // namespace vramsim::calibrate
