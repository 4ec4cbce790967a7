// Running a study: the points a process owns, a local pool of workers (TBB), one child process
// per point (the caller's PointRunner), each result appended to the results store as it
// finishes; points already recorded are skipped, so rerunning resumes (docs/studies.md).
//
// Distribution over MPI ranks needs no MPI library: each rank reads its rank and the world size
// from the launcher's environment and owns the points whose index modulo the size is its rank.
// Every point runs the same command whichever rank runs it, so results do not depend on the
// number of ranks or workers.
#pragma once

#include <functional>
#include <string>

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
  std::function<void(const SweepProgress&)> on_progress;  // called from worker threads, serialised
};

// Runs the points this rank owns that are not yet recorded. Returns the tally of the whole
// results directory as this process left it.
SweepTally run_sweep(const Study& study, ResultsStore& store, const SweepOptions& options, const PointRunner& runner);

// Blocks until every point of the study is recorded (other ranks still running), polling.
SweepTally wait_for_all(const Study& study, ResultsStore& store);

// The record for one point from its child's outcome (failed when it exited non-zero or printed
// no readable summary).
json::Value record_for(const Point& p, const PointOutcome& outcome);

}  // namespace vramsim::reports
