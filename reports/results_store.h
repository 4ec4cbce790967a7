// A sweep's results directory: DIR/study.json (the study), DIR/results.jsonl (one record per
// finished point, appended as it finishes), DIR/results.csv (the same as a table) and
// DIR/timings.jsonl (wall times, which are not results: they differ from run to run).
//
// Several processes (the workers of one sweep, MPI ranks on other machines sharing DIR) append
// at once: every change happens under an exclusive flock on DIR/.lock, and each record is one
// write() of one whole line to a file opened O_APPEND. A line cut short by a crash (no newline,
// or not valid JSON) is ignored when reading, and cut off the file before the next append.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json_value.h"
#include "reports/study.h"

namespace vramsim::reports {

// A file's whole text ("" when it cannot be read).
std::string read_text(const std::filesystem::path& p);
// Replaces `p` with `text` atomically (io::write_file: a temporary file made with mkstemp beside
// it, fsynced, renamed; removed on failure). Throws std::runtime_error "cannot write P: REASON".
void write_atomically(const std::filesystem::path& p, const std::string& text);

// One line of results.jsonl: {"point": {...overrides}, "index": N, "status": "ok"|"failed",
// then the run's summary (ok) or "exit_code" and "error" (failed)}.
struct PointRecord {
  json::Value record;
  std::string key;   // the point's overrides on one line: what identifies a point across runs
  bool ok = false;
};

// The identity of a point in results.jsonl.
std::string point_key(const Point& p);

// The run's summary as stored: the `vramsim run --json` object minus `sim.wall_s` (a wall
// time is no result; it goes to timings.jsonl), after `point`, `index` and `status`.
json::Value ok_record(const Point& p, const json::Value& summary);
json::Value failed_record(const Point& p, int exit_code, const std::string& error);

// The columns of results.csv: index, status, one per axis key, csv_metric_paths()
// (run_metrics.h), error.
std::string csv_header(const Study& study);
std::string csv_row(const Study& study, const json::Value& record);

class ResultsStore {
 public:
  // Creates `dir` when missing. Throws std::runtime_error when it cannot.
  explicit ResultsStore(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }

  // Writes DIR/study.json, or checks that the one there describes the same points (a resumed
  // sweep); throws std::runtime_error when DIR holds another study's results.
  void open_study(const Study& study);

  // The records in results.jsonl, first occurrence of each point (a torn last line is cut
  // off the file). Keyed by point_key.
  std::map<std::string, PointRecord> load();

  // Appends one record to results.jsonl and its row to results.csv, and a timing line.
  void append(const Study& study, const json::Value& record, const json::Value& timing);

  // Rewrites results.csv from results.jsonl, in point order (atomically).
  void rewrite_csv(const Study& study);

  // The line numbers (1-based) of results.jsonl that the last load() could not read as records
  // (a torn last line aside, which is cut): their points count as not run.
  const std::vector<std::size_t>& unreadable_lines() const { return unreadable_; }

 private:
  std::map<std::string, PointRecord> load_locked();
  std::filesystem::path dir_;
  std::vector<std::size_t> unreadable_;
};

// Reads DIR/study.json. Throws std::runtime_error when it is missing or malformed.
Study read_manifest(const std::filesystem::path& dir);

}  // namespace vramsim::reports
