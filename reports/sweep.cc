#include "reports/sweep.h"

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace vramsim::reports {
namespace {

std::optional<int> env_int(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) return std::nullopt;
  try {
    std::size_t used = 0;
    const int n = std::stoi(v, &used);
    if (used != std::string(v).size()) throw std::invalid_argument(v);
    return n;
  } catch (const std::exception&) {
    throw std::runtime_error(std::string("bad ") + name + "=\"" + v + "\" in the environment");
  }
}

SweepTally tally(const Study& study, const std::map<std::string, PointRecord>& records) {
  SweepTally t;
  t.points = study.point_count();
  for (const auto& p : study.points()) {
    auto it = records.find(point_key(p));
    if (it == records.end()) continue;
    (it->second.ok ? t.completed : t.failed) += 1;
  }
  return t;
}

// The last `max` characters of a child's stderr, trimmed: the part that says what went wrong.
std::string tail_of(const std::string& err, std::size_t max = 2000) {
  std::string s = err.size() > max ? "..." + err.substr(err.size() - max) : err;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Rank detect_rank(const std::function<const char*(const char*)>& getenv) {
  // Each launcher's own pair, most specific first. Slurm comes last: under `mpirun` inside a
  // Slurm allocation SLURM_PROCID/SLURM_NTASKS describe mpirun's daemons, not the MPI ranks.
  struct Launcher {
    const char* rank_name;
    const char* size_name;
  };
  const Launcher launchers[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},  // Open MPI 4 and 5 (PRRTE)
                                {"PMI_RANK", "PMI_SIZE"},                          // MPICH, Intel MPI (Hydra)
                                {"SLURM_PROCID", "SLURM_NTASKS"}};                 // srun, any --mpi
  const auto pmix_rank = env_int(getenv, "PMIX_RANK");
  for (const auto& [rank_name, size_name] : launchers) {
    const auto rank = env_int(getenv, rank_name);
    if (!rank) continue;  // a size without its rank is no launch
    const auto size = env_int(getenv, size_name);
    if (!size)
      throw std::runtime_error(std::string(rank_name) + "=" + std::to_string(*rank) + " is set but " + size_name +
                               " is not: cannot tell how many ranks share the sweep");
    if (*size < 1 || *rank < 0 || *rank >= *size)
      throw std::runtime_error(std::string(rank_name) + "=" + std::to_string(*rank) + " is outside [0, " +
                               size_name + "=" + std::to_string(*size) + ")");
    // PMIx launchers (PRRTE's mpirun, srun --mpi=pmix) also set PMIX_RANK, the same rank.
    if (pmix_rank && *pmix_rank != *rank)
      throw std::runtime_error("PMIX_RANK=" + std::to_string(*pmix_rank) + " disagrees with " + rank_name + "=" +
                               std::to_string(*rank) + ": the environment mixes two launches");
    return {*rank, *size};
  }
  // PMIx publishes the job size only through its API, not in the environment.
  if (pmix_rank)
    throw std::runtime_error("PMIX_RANK=" + std::to_string(*pmix_rank) +
                             " is set but no world size (OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS with its "
                             "rank): launch with Open MPI's mpirun, MPICH's mpiexec or srun (docs/studies.md)");
  return {};
}

json::Value record_for(const Point& p, const PointOutcome& outcome) {
  if (outcome.exit_code != 0) {
    std::string error = tail_of(outcome.err);
    if (error.empty()) error = "vramsim run exited with status " + std::to_string(outcome.exit_code);
    return failed_record(p, outcome.exit_code, error);
  }
  auto summary = json::parse(outcome.out);
  if (!summary || !summary->is_object())
    return failed_record(p, outcome.exit_code,
                         "unreadable output of vramsim run: " + (summary ? std::string("not an object") : summary.error().message));
  return ok_record(p, *summary);
}

SweepTally run_sweep(const Study& study, ResultsStore& store, const SweepOptions& options, const PointRunner& runner) {
  const auto start = std::chrono::steady_clock::now();
  const auto recorded = store.load();
  std::vector<Point> todo;
  std::size_t resumed = 0;
  for (auto& p : study.points()) {
    if (recorded.count(point_key(p))) {
      ++resumed;
      continue;
    }
    if (static_cast<int>(p.index % static_cast<std::size_t>(options.rank.size)) == options.rank.rank)
      todo.push_back(std::move(p));
  }

  std::mutex progress_mutex;
  SweepProgress progress;
  progress.todo = todo.size();
  auto report = [&](bool failed) {
    std::lock_guard<std::mutex> lock(progress_mutex);
    progress.done += 1;
    if (failed) progress.failed += 1;
    progress.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.on_progress) options.on_progress(progress);
  };
  if (options.on_progress) options.on_progress(progress);

  const int jobs = std::max(1, options.jobs);
  // Workers spend their time waiting for a child; allow more of them than there are cores.
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(jobs));
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, todo.size(), 1),
        [&](const tbb::blocked_range<std::size_t>& range) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) {
            const Point& p = todo[i];
            PointOutcome outcome;
            try {
              outcome = runner(study, p);
            } catch (const std::exception& e) {
              outcome.exit_code = -1;
              outcome.err = std::string("cannot run the point: ") + e.what();
            }
            const json::Value record = record_for(p, outcome);
            json::Value timing = json::Value::object();
            timing.set("point", p.overrides());
            timing.set("rank", json::Value::number_text(std::to_string(options.rank.rank)));
            timing.set("wall_s", json::Value::number_text(std::to_string(outcome.wall_s)));
            auto summary = json::parse(outcome.out);
            const json::Value* sim_wall = summary ? summary->at_path("sim.wall_s") : nullptr;
            timing.set("sim_wall_s", sim_wall ? *sim_wall : json::Value());
            store.append(study, record, timing);
            report(record.find("status")->text() != "ok");
          }
        },
        tbb::simple_partitioner());
  });

  SweepTally t = tally(study, store.load());
  t.resumed = resumed;
  t.ran = todo.size();
  return t;
}

SweepTally wait_for_all(const Study& study, ResultsStore& store) {
  while (true) {
    SweepTally t = tally(study, store.load());
    if (t.completed + t.failed == t.points) return t;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace vramsim::reports
