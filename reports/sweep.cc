#include "reports/sweep.h"


#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <fmt/format.h>

#include "core/json.h"
#include "reports/parallel_children.h"

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

// Seconds as a person reads them: "300 s", "0.5 s".
std::string seconds(double s) { return fmt::format("{:g} s", s); }

// What rank 0 knows of one other rank's heartbeat file.
struct RankWatch {
  std::optional<std::string> seen;  // the content at the last look; nullopt: no file
  double since_s = 0;               // when rank 0 first saw `seen`, on its own clock
  bool this_run = false;            // the file changed after rank 0 started: this run wrote it
  bool reported = false;            // on_lost was called for this rank
};

void look(RankWatch& w, const std::map<int, std::string>& beats, const std::map<int, std::string>& at_start, int rank,
          double now_s) {
  auto it = beats.find(rank);
  std::optional<std::string> now = it == beats.end() ? std::nullopt : std::optional<std::string>(it->second);
  if (now == w.seen) return;
  w.seen = now;
  w.since_s = now_s;
  auto old = at_start.find(rank);
  if (now && (old == at_start.end() || old->second != *now)) w.this_run = true;
}

// "rank 1 (host h, pid 42)": the rank, and the process its heartbeat names when there is one.
std::string who(int rank, const RankWatch& w) {
  std::string s = "rank " + std::to_string(rank);
  if (!w.this_run || !w.seen) return s;
  auto v = json::parse(*w.seen);
  if (v && v->is_object() && v->find("host") && v->find("pid"))
    s += " (host " + v->find("host")->text() + ", pid " + v->find("pid")->text() + ")";
  return s;
}

// Why a rank that owns missing points is lost; empty while it may still record them.
std::string lost_reason(const RankWatch& w, int ranks, double now_s, double stale_after_s) {
  if (w.this_run && w.seen) {
    auto v = json::parse(*w.seen);
    if (v && v->is_object()) {
      const json::Value* n = v->find("ranks");
      const json::Value* state = v->find("state");
      if (n && n->text() != std::to_string(ranks))
        return "it runs with " + n->text() + " ranks, rank 0 with " + std::to_string(ranks);
      if (state && state->text() != "running") return "it ended (state \"" + state->text() + "\") without recording them";
    }
  }
  if (now_s - w.since_s <= stale_after_s) return {};
  if (!w.seen) return "no heartbeat file appeared in " + seconds(stale_after_s);
  if (!w.this_run) return "its heartbeat has not changed since rank 0 started (limit " + seconds(stale_after_s) + ")";
  return "its heartbeat stopped: unchanged for " + seconds(stale_after_s);
}

// "points 1 (Gen3, 2), 3 (Gen5, 2)": at most `max` of them, then how many more.
std::string describe(const Study& study, const std::vector<Point>& points, std::size_t max = 8) {
  std::string s = points.size() == 1 ? "point " : "points ";
  for (std::size_t i = 0; i < points.size() && i < max; ++i)
    s += (i ? ", " : "") + std::to_string(points[i].index) + " (" + study.label(points[i]) + ")";
  if (points.size() > max) s += " and " + std::to_string(points.size() - max) + " more";
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
  auto summary = json::parse(outcome.out);
  const bool summarised = summary && summary->is_object();
  // A failed run, except one whose every request was rejected: that exits 1 with its summary,
  // which says why (below).
  if (outcome.exit_code > 1 || (outcome.exit_code != 0 && !summarised)) {
    std::string error = tail_of(outcome.err);
    if (error.empty()) error = "vramsim run exited with status " + std::to_string(outcome.exit_code);
    return failed_record(p, outcome.exit_code, error);
  }
  if (!summarised)
    return failed_record(p, outcome.exit_code,
                         "unreadable output of vramsim run: " + (summary ? std::string("not an object") : summary.error().message));
  // No speed to report: a failed point, with the run's own reason, rather than a row of cache
  // figures beside empty speeds.
  if (const json::Value* completed = summary->at_path("requests.completed"); completed && completed->number() == 0) {
    // The reasons, from the run's rejected_by_reason.
    std::string why;
    const std::pair<const char*, const char*> reasons[] = {{"prompt_exceeds_context", "prompt over the context window"},
                                                           {"prompt_plus_output_exceeds_context", "prompt + output over it"},
                                                           {"prompt_exceeds_kv_pool", "prompt over the KV pool"},
                                                           {"queue_full", "queue full"}};
    for (const auto& [key, words] : reasons)
      if (const json::Value* n = summary->at_path(std::string("requests.rejected_by_reason.") + key); n && n->number() > 0)
        why += (why.empty() ? "" : ", ") + n->text() + ": " + words;
    const json::Value* rejected = summary->at_path("requests.rejected");
    json::Value record = failed_record(p, outcome.exit_code,
                                       "no request completed: all " + (rejected ? rejected->text() : std::string("?")) +
                                           " were rejected" + (why.empty() ? std::string() : " (" + why + ")"));
    // The run's request counts stay with the point (results.csv's requests columns, the report).
    if (const json::Value* requests = summary->at_path("requests")) record.set("requests", *requests);
    return record;
  }
  if (outcome.exit_code != 0)
    return failed_record(p, outcome.exit_code, "vramsim run exited with status " + std::to_string(outcome.exit_code) + ": " + tail_of(outcome.err));
  return ok_record(p, *summary);
}

bool should_retry(const PointRecord& recorded, bool retry_failed) {
  if (recorded.ok) return false;
  if (retry_failed) return true;
  const json::Value* code = recorded.record.find("exit_code");
  const double status = code ? code->number() : 0;
  return status < 0 || (status > 128 && status < 128 + 65);  // not started, or killed by signal N
}

SweepTally run_sweep(const Study& study, ResultsStore& store, const SweepOptions& options, const PointRunner& runner) {
  const auto start = std::chrono::steady_clock::now();
  const auto recorded = store.load();
  std::vector<Point> todo;
  std::size_t resumed = 0;
  for (auto& p : study.points()) {
    if (auto it = recorded.find(point_key(p)); it != recorded.end() && !should_retry(it->second, options.retry_failed)) {
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

  for_each_in_parallel(options.jobs, todo.size(), [&](std::size_t i) {
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
  });

  SweepTally t = tally(study, store.load());
  t.resumed = resumed;
  t.ran = todo.size();
  return t;
}

std::filesystem::path heartbeat_path(const std::filesystem::path& dir, int rank) {
  return dir / "ranks" / ("rank-" + std::to_string(rank) + ".json");
}

std::map<int, std::string> read_heartbeats(const std::filesystem::path& dir, int ranks) {
  std::map<int, std::string> beats;
  for (int r = 0; r < ranks; ++r)
    if (std::string text = read_text(heartbeat_path(dir, r)); !text.empty()) beats[r] = std::move(text);
  return beats;
}

double beat_interval_s(double stale_after_s) { return std::min(10.0, stale_after_s / 5); }

Heartbeat::Heartbeat(std::filesystem::path dir, Rank rank, double interval_s) : dir_(std::move(dir)), rank_(rank) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  host_ = host;
  started_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::error_code ec;
  std::filesystem::create_directories(dir_ / "ranks", ec);
  if (ec) throw std::runtime_error("cannot create " + (dir_ / "ranks").string() + ": " + ec.message());
  write("running");
  const auto interval = std::chrono::duration<double>(std::max(interval_s, 0.001));
  thread_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
      try {
        write("running");
      } catch (const std::runtime_error&) {
        // Skipped: if beats keep failing, rank 0 sees them stop and says so.
      }
    }
  });
}

Heartbeat::~Heartbeat() {
  stop();
  if (finished_) return;
  try {
    write("exited");
  } catch (const std::runtime_error&) {
    // Rank 0 then finds the heartbeat stale instead.
  }
}

void Heartbeat::finish() {
  stop();
  write("done");
  finished_ = true;
}

void Heartbeat::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::write(const char* state) {
  ++beat_;
  json::Writer j(false);
  j.begin_object()
      .field("rank", rank_.rank)
      .field("ranks", rank_.size)
      .field("host", host_)
      .field("pid", static_cast<std::int64_t>(::getpid()))
      .field("started_ns", static_cast<std::int64_t>(started_ns_))
      .field("beat", static_cast<std::int64_t>(beat_))
      .field("state", state)
      .end_object();
  write_atomically(heartbeat_path(dir_, rank_.rank), j.str() + "\n");
}

SweepTally wait_for_all(const Study& study, ResultsStore& store, const WaitOptions& options) {
  const auto clock_start = std::chrono::steady_clock::now();
  auto now_s = [&] {
    return options.now_s ? options.now_s()
                         : std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start).count();
  };
  const int ranks = std::max(1, options.ranks);
  const double first_s = now_s();
  std::map<int, RankWatch> watch;
  for (int r = 1; r < ranks; ++r) {
    auto old = options.at_start.find(r);
    if (old != options.at_start.end()) watch[r].seen = old->second;
    watch[r].since_s = first_s;
  }
  const std::vector<Point> all_points = study.points();  // the grid, built once for every look
  while (true) {
    const double now = now_s();
    // The heartbeats before the records: a rank writes "done" only after its last record, so a
    // "done" read here means its records are in the load below.
    const auto beats = read_heartbeats(store.dir(), ranks);
    const auto records = store.load();
    SweepTally t = tally(study, records);
    const std::size_t recorded = t.completed + t.failed;
    if (options.on_progress) {
      // The points recorded of the whole study ("0/0 points" once rank 0's own were done, when
      // it counted only those missing at the start).
      SweepProgress progress;
      progress.done = recorded;
      progress.todo = t.points;
      progress.failed = t.failed;
      progress.elapsed_s = now - first_s;
      options.on_progress(progress);
    }
    if (recorded == t.points) return t;

    std::map<int, std::vector<Point>> missing;  // by the rank that owns them
    for (const auto& p : all_points)
      if (!records.count(point_key(p))) missing[static_cast<int>(p.index % static_cast<std::size_t>(ranks))].push_back(p);
    std::vector<std::string> lost;
    std::vector<std::string> newly_lost;  // told through on_lost while other ranks still work
    bool alive = false;
    for (const auto& [r, points] : missing) {
      std::string why = "it ended without recording them";  // rank 0: this process, past its run_sweep()
      std::string name = "rank 0 (this process)";
      if (r != 0) {
        RankWatch& w = watch[r];
        look(w, beats, options.at_start, r, now);
        why = lost_reason(w, ranks, now, options.stale_after_s);
        if (why.empty()) {
          alive = true;
          continue;
        }
        name = who(r, w);
        if (!w.reported)
          newly_lost.push_back(name + " is lost: " + why + "; its missing " + describe(study, points) +
                               "; waiting for the other ranks");
        w.reported = true;
      }
      lost.push_back(name + ": " + why + "; missing " + describe(study, points));
    }
    if (!alive) {
      std::string what = std::to_string(t.points - recorded) + " of " + std::to_string(t.points) +
                         " points are missing and no rank that owns one is still working:";
      for (const auto& line : lost) what += "\n  " + line;
      what += "\nrerun the same command to run the missing points (the recorded ones are kept)";
      throw RanksLost(what, t);
    }
    if (options.on_lost)
      for (const auto& line : newly_lost) options.on_lost(line);
    if (options.pause) options.pause();
    else std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace vramsim::reports
