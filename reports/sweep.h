// Running a study: the points a process owns, a local pool of workers (TBB), one child process
// per point (the caller's PointRunner), each result appended to the results store as it
// finishes; points already recorded are skipped, so rerunning resumes (docs/studies.md).
//
// Distribution over MPI ranks needs no MPI library: each rank reads its rank and the world size
// from the launcher's environment and owns the points whose index modulo the size is its rank.
// Every point runs the same command whichever rank runs it, so results do not depend on the
// number of ranks or workers. Ranks tell rank 0 they are alive through heartbeat files in the
// results directory, so that rank 0 stops with an error instead of waiting forever for the
// points of a rank that died.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "reports/results_store.h"
#include "reports/study.h"

namespace vramsim::reports {

struct Rank {
  int rank = 0;
  int size = 1;
};

// The first launcher whose rank variable is set: OMPI_COMM_WORLD_RANK/SIZE (Open MPI 4 and 5,
// PRRTE), PMI_RANK/PMI_SIZE (MPICH, Intel MPI), SLURM_PROCID/SLURM_NTASKS (srun, including
// --mpi=pmix); rank 0 of 1 when none is. A rank and a size always come from the same launcher.
// PMIX_RANK, when set, must equal the rank found. `getenv` is a parameter so that tests can
// supply an environment. Throws std::runtime_error on a rank without its size (PMIX_RANK alone
// included: PMIx does not export the size), a rank outside [0, size), a malformed number, or
// a PMIX_RANK that disagrees.
Rank detect_rank(const std::function<const char*(const char*)>& getenv);

// What running one point's child process gave.
struct PointOutcome {
  int exit_code = 0;
  std::string out;      // the `vramsim run --json` object
  std::string err;
  double wall_s = 0;    // process start to exit
};
using PointRunner = std::function<PointOutcome(const Study&, const Point&)>;

struct SweepProgress {
  std::size_t done = 0;     // points this process finished in this run
  std::size_t todo = 0;     // points this process had to run
  std::size_t failed = 0;   // of `done`
  double elapsed_s = 0;
};

struct SweepTally {
  std::size_t points = 0;     // in the study
  std::size_t completed = 0;  // recorded with a result
  std::size_t failed = 0;     // recorded as failed
  std::size_t resumed = 0;    // found recorded when this process started
  std::size_t ran = 0;        // run by this process
};

struct SweepOptions {
  int jobs = 1;          // local workers
  Rank rank;
  // A recorded failed point is run again when its child died by a signal (kill -9, the OOM
  // killer: status 128 + N) or could not be started; with `retry_failed`, any failed point.
  bool retry_failed = false;
  std::function<void(const SweepProgress&)> on_progress;  // called from worker threads, serialised
};

// Runs the points this rank owns that are not yet recorded (or are to be retried: see
// SweepOptions). Returns the tally of the whole results directory as this process left it.
SweepTally run_sweep(const Study& study, ResultsStore& store, const SweepOptions& options, const PointRunner& runner);

// A rank's heartbeat: DIR/ranks/rank-R.json, one JSON object {"rank", "ranks", "host", "pid",
// "started_ns", "beat", "state"} replaced atomically (written aside, then renamed) at every
// beat. `state` is "running" while the rank works, "done" once it has recorded every point it
// owns, "exited" when it stopped before that (an error). Rank 0 never compares clocks of
// different machines: it times how long a rank's file has gone without changing on its own
// clock, and every beat changes the file (`beat` counts up; `host`, `pid` and `started_ns` tell
// one run's file from an earlier run's).
std::filesystem::path heartbeat_path(const std::filesystem::path& dir, int rank);

// The contents of the heartbeat files of ranks [0, ranks) now, by rank; a missing or
// unreadable file is left out.
std::map<int, std::string> read_heartbeats(const std::filesystem::path& dir, int ranks);

// Beats for one rank for the lifetime of the object: the first beat when constructed, then one
// every `interval_s` seconds from a thread of its own. Throws std::runtime_error when the first
// beat cannot be written; a later failed beat is skipped (rank 0 will see the beats stop).
class Heartbeat {
 public:
  Heartbeat(std::filesystem::path dir, Rank rank, double interval_s);
  ~Heartbeat();  // stops beating; the last state is "exited" unless finish() was called
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Stops beating and writes the state "done": every point this rank owns is recorded.
  void finish();

 private:
  void write(const char* state);  // one beat; throws std::runtime_error
  void stop();

  std::filesystem::path dir_;
  Rank rank_;
  std::string host_;
  long long started_ns_ = 0;
  long long beat_ = 0;
  bool finished_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// The interval between beats for a staleness limit: a fifth of it, at most 10 s, so that a
// live rank beats several times within the limit.
double beat_interval_s(double stale_after_s);

inline constexpr double kDefaultStaleAfterS = 300;  // --rank-timeout's default, seconds

struct WaitOptions {
  int ranks = 1;                               // the world size; this process is rank 0
  double stale_after_s = kDefaultStaleAfterS;  // a rank whose heartbeat has not changed for this long is lost
  // read_heartbeats() when this process started: a file that has not changed since may be
  // left over from an earlier run, so its state ("done", "exited") is not believed.
  std::map<int, std::string> at_start;
  std::function<double()> now_s;    // a monotonic clock, seconds; steady_clock when empty
  std::function<void()> pause;      // between two looks at DIR; sleeps 200 ms when empty
  std::function<void(const SweepProgress&)> on_progress;  // each look: points recorded of all
  std::function<void(const std::string&)> on_lost;         // once per rank found lost while others still work
};

// Some points are missing and every rank that owns one is lost. what() names the points and
// the ranks and why each is taken as lost.
class RanksLost : public std::runtime_error {
 public:
  RanksLost(const std::string& what, SweepTally at_loss) : std::runtime_error(what), tally(at_loss) {}
  SweepTally tally;  // the results directory when rank 0 gave up
};

// Blocks until every point of the study is recorded (other ranks still running), looking at
// DIR every pause. A rank that owns a missing point is lost when its heartbeat has not changed
// for `stale_after_s` (or never appeared in that time), when it says it ended ("done",
// "exited") in this run, or when it runs with another number of ranks. A rank found lost while
// others still work is reported through `on_lost`; once every rank that owns a missing point is
// lost, throws RanksLost. Rank 0 owns no missing point when this is called after its run_sweep().
SweepTally wait_for_all(const Study& study, ResultsStore& store, const WaitOptions& options);

// Whether a recorded point is run again: a failure that says nothing of the point (its child
// was killed by a signal or never started), or any failure with `retry_failed`.
bool should_retry(const PointRecord& recorded, bool retry_failed);

// The record for one point from its child's outcome (failed when it exited non-zero or printed
// no readable summary).
json::Value record_for(const Point& p, const PointOutcome& outcome);

}  // namespace vramsim::reports
