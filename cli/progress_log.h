// The progress lines of a long `vramsim run` when stderr is not a terminal (a CI log, nohup):
// the sweep's style ("vramsim sweep: 3/12 points, 0:40 elapsed"), for requests.
//
// A line when at least a tenth more of the requests are done AND at least 30 s of wall time
// have passed since the last one (whichever is rarer), and a last line at the end only when a
// line came before; so a run of under 30 s prints nothing. Once, after 10 s, an estimate of
// the whole run when it extrapolates past a minute: the time taken so far scaled by the
// requests still to do (honest only as far as later requests cost what earlier ones did, which
// the line says).
#pragma once

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <fmt/format.h>

namespace vramsim::cli {

// "m:ss" or "h:mm:ss".
inline std::string clock_text(double s) {
  const long t = std::lround(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

class RunProgressLog {
 public:
  static constexpr double kEvery_s = 30.0;        // at most one line per 30 s
  static constexpr double kEstimateAfter_s = 10.0;  // the estimate's sample
  static constexpr double kEstimateOver_s = 60.0;   // runs predicted longer get one

  // The line to print after `done` of `total` requests at `elapsed_s` of wall time, if any.
  std::optional<std::string> update(long long done, long long total, double elapsed_s) {
    if (total <= 0) return std::nullopt;
    std::string out;
    if (!estimated_ && elapsed_s >= kEstimateAfter_s && done > 0 && done < total) {
      estimated_ = true;
      const double whole = elapsed_s * static_cast<double>(total) / static_cast<double>(done);
      if (whole > kEstimateOver_s)
        out += "vramsim run: about " + clock_text(whole) + " in all to simulate " + std::to_string(total) +
               " requests (" + std::to_string(done) + " took " + clock_text(elapsed_s) +
               "; later requests may cost more or less)\n";
    }
    const bool end = done >= total;
    const bool tenth = static_cast<double>(done - last_done_) * 10.0 >= static_cast<double>(total);
    if ((end && printed_) || (!end && tenth && elapsed_s - last_s_ >= kEvery_s)) {
      printed_ = true;
      last_done_ = done;
      last_s_ = elapsed_s;
      std::string eta = done > 0 && !end ? ", ETA " + clock_text(elapsed_s / static_cast<double>(done) *
                                                                  static_cast<double>(total - done))
                                         : "";
      out += "vramsim run: " + std::to_string(done) + "/" + std::to_string(total) + " requests, " + clock_text(elapsed_s) +
             " elapsed" + eta + "\n";
    }
    if (out.empty()) return std::nullopt;
    return out;
  }

 private:
  bool estimated_ = false;
  bool printed_ = false;
  long long last_done_ = 0;
  double last_s_ = 0.0;
};

}  // namespace vramsim::cli
