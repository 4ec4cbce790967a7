// `vramsim sweep` and `vramsim report`: studies, their expansion and errors, the results store,
// rank detection, and the commands as users run them (real processes, real mpirun, a real
// headless Chromium). Test names start with "sweep" (ctest -R sweep).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/config_reader.h"
#include "core/json_value.h"
#include "core/subprocess.h"
#include "reports/charts.h"
#include "reports/results_store.h"
#include "reports/study.h"
#include "reports/sweep.h"
#include "tests/test_support.h"

extern char** environ;

namespace fs = std::filesystem;
using vramsim::test::run_vramsim;
using namespace vramsim;

namespace {

std::string read(const fs::path& p) { return vramsim::test::read_file(p); }

fs::path write_study(const std::string& name, const std::string& text) {
  const fs::path p = fs::current_path() / ("sweep_study_" + name + ".yaml");
  std::ofstream(p) << text;
  return p;
}

reports::Study study_from(const std::string& name, const std::string& text) {
  return reports::load_study(write_study(name, text).string(), VRAMSIM_TEST_CONFIGS_DIR);
}

std::string study_error(const std::string& name, const std::string& text) {
  try {
    study_from(name, text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string fresh_dir(const std::string& name) {
  const fs::path p = fs::current_path() / ("sweep_out_" + name);
  fs::remove_all(p);
  return p.string();
}

std::string mini() { return vramsim::test::data_path("sweeps/mini.yaml"); }

// results.jsonl as point -> line; fails the test on a point recorded twice.
std::map<std::string, std::string> records(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::istringstream lines(read(fs::path(dir) / "results.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    auto v = json::parse(line);
    REQUIRE(v.ok());
    const std::string key = json::to_line(*v->find("point"));
    INFO(key);
    CHECK(out.emplace(key, line).second);
  }
  return out;
}

// A heartbeat file as a rank of another process writes it (the format of reports/sweep.h).
void beat(const std::string& dir, int rank, int ranks, int n, const std::string& state, const std::string& host = "test") {
  fs::create_directories(fs::path(dir) / "ranks");
  std::ofstream(reports::heartbeat_path(dir, rank)) << "{\"rank\":" << rank << ",\"ranks\":" << ranks << ",\"host\":\""
                                                     << host << "\",\"pid\":1,\"started_ns\":1,\"beat\":" << n
                                                     << ",\"state\":\"" << state << "\"}\n";
}

// Rank 0's view of a multi-rank sweep, on a clock of its own: every pause is 10 s, and the
// test's `step` plays the other ranks at each pause (its argument counts the pauses from 1).
struct WaitRig {
  reports::Study study;
  std::string dir;
  reports::ResultsStore store;
  reports::WaitOptions options;
  double t = 0;
  int pauses = 0;
  std::vector<std::string> lost;
  std::function<void(int)> step = [](int) {};

  WaitRig(const std::string& name, int ranks)
      : study(study_from(name, "study: " + name + "\nscenario: moe125b-rtx5090-gen3-shared\naxes:\n"
                               "  - { key: workload.clients, values: [1, 2, 3, 4, 5, 6] }\n")),
        dir(fresh_dir(name)),
        store(dir) {
    store.open_study(study);
    options.ranks = ranks;
    options.stale_after_s = 30;
    options.now_s = [this] { return t; };
    options.pause = [this] {
      t += 10;
      step(++pauses);
    };
    options.on_lost = [this](const std::string& m) { lost.push_back(m); };
  }
  // Records the points `rank` owns, as that rank would.
  void record(int rank) {
    for (const auto& p : study.points())
      if (static_cast<int>(p.index) % options.ranks == rank)
        store.append(study, reports::ok_record(p, json::Value::object()), json::Value::object());
  }
  std::string wait_error() {
    try {
      reports::wait_for_all(study, store, options);
    } catch (const reports::RanksLost& e) {
      return e.what();
    }
    return "no error";
  }
};

// Starts `args` (args[0] the binary) with stdout discarded and `extra_env` added to this
// process's environment, without waiting: the caller kills or waits for the pid.
pid_t spawn_quiet(std::vector<std::string> args, const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> env = extra_env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);
  return pid;
}

}  // namespace

TEST_CASE("sweep: study grid, zipped axes, ranges and labels expand in a fixed order", "[sweep]") {
  const auto s = study_from("grid", R"(study: grid
scenario: moe125b-rtx5090-gen3-shared
set: { workload.requests: 5, hardware.link.measured_h2d: null }
axes:
  - key: hardware.gpu.memory.capacity
    range: { from: 12GiB, to: 20GiB, step: 4GiB }
  - name: link
    zip:
      - { key: hardware.link.preset, values: [pcie-gen3-x16, pcie-gen5-x16] }
      - { key: engine.parallel, values: [1, 2] }
    labels: [Gen3, Gen5]
  - key: workload.clients
    range: { from: 1, to: 8, factor: 2 }
sections: [decode, { chart: links, x: link }]
)");
  REQUIRE(s.point_count() == 3 * 2 * 4);
  CHECK(s.dimensions[0].name == "capacity");
  CHECK(s.dimensions[0].labels == std::vector<std::string>{"12GiB", "16GiB", "20GiB"});
  CHECK(s.dimensions[2].labels == std::vector<std::string>{"1", "2", "4", "8"});
  CHECK(s.sections[1].kind == "links");
  CHECK(s.sections[1].x == 1);
  const auto points = s.points();
  CHECK(json::to_line(points[0].overrides()) ==
        R"({"workload.requests":"5","hardware.link.measured_h2d":null,"hardware.gpu.memory.capacity":"12GiB",)"
        R"("hardware.link.preset":"pcie-gen3-x16","engine.parallel":"1","workload.clients":"1"})");
  CHECK(json::to_line(points[13].overrides()) ==
        R"({"workload.requests":"5","hardware.link.measured_h2d":null,"hardware.gpu.memory.capacity":"16GiB",)"
        R"("hardware.link.preset":"pcie-gen5-x16","engine.parallel":"2","workload.clients":"2"})");
  CHECK(s.label(points[13]) == "16GiB, Gen5, 2");
  CHECK(s.label(points[13], 1) == "16GiB, 2");
  // The manifest carries the same points back.
  const auto back = reports::study_from_manifest(reports::study_manifest(s));
  CHECK(json::to_line(reports::study_manifest(back).find("points") ? *reports::study_manifest(back).find("points")
                                                                  : json::Value()) ==
        json::to_line(*reports::study_manifest(s).find("points")));
}

TEST_CASE("sweep: study errors read like a compiler's", "[sweep][errors]") {
  const std::string head = "study: bad\nscenario: moe125b-rtx5090-gen3-shared\n";
  struct Case {
    const char* name;
    std::string study;
    const char* message;
  };
  const Case cases[] = {
      {"e1", head + "axes:\n  - { key: workload.clients, values: [1, 2], lables: [a, b] }\n",
       "sweep_study_e1.yaml:4:46: error: axes[0].lables: unknown key (did you mean \"labels\"?)"},
      {"e2", head + "axes:\n  - key: hardware.gpu.memory.capacity\n    range: { from: 12GiB, to: 48GB, step: 4GiB }\n",
       "sweep_study_e2.yaml:5:31: error: axes[0].range.to: the unit must be that of `from` (\"GiB\"), got \"GB\""},
      {"e3", head + "axes:\n  - zip:\n      - { key: a.b, values: [1, 2] }\n      - { key: c.d, values: [1] }\n",
       "sweep_study_e3.yaml:6:9: error: axes[0].zip[1]: zipped axes step together: 1 values here, 2 in the first"},
      {"e4", head + "axes:\n  - { key: workload.clients, values: [1] }\nsections: [histogram]\n",
       "sweep_study_e4.yaml:5:12: error: sections[0]: expected one of decode, cliff, concurrency, links, breakdown"},
      {"e5", head + "axes:\n  - { key: workload.clients, values: [1] }\nsections: [{ chart: decode, x: vram }]\n",
       "sweep_study_e5.yaml:5:32: error: sections[0].x: no axis has the key or name \"vram\""},
      {"e6", "study: bad\nscenario: no-such-scenario\naxes: [{ key: a, values: [1] }]\n",
       "sweep_study_e6.yaml:2:11: error: scenario: no scenario file"},
      {"e7", head + "set: { workload.clients: 2 }\naxes:\n  - { key: workload.clients, values: [1] }\n",
       "error: axes[0]: key \"workload.clients\" is set twice"},
      {"e8", head + "axes:\n  - { key: workload.clients, values: [1], range: { from: 1, to: 2, step: 1 } }\n",
       "sweep_study_e8.yaml:4:38: error: axes[0].values: give either `values: [...]` or `range: {from, to, step}`"},
      {"e10", head + "axes:\n  - { key: workload.clients, values: [1, 2, 1] }\n",
       "sweep_study_e10.yaml:4:5: error: axes[0]: step 3 repeats an earlier step's values"},
      // One value in two spellings is one point too.
      {"e12", head + "axes:\n  - { key: workload.clients, values: [8, 8.0] }\n",
       "sweep_study_e12.yaml:4:5: error: axes[0]: step 2 repeats an earlier step's values"},
      {"e13", head + "axes:\n  - { key: hardware.gpu.memory.capacity, values: [12GiB, 12.0GiB] }\n",
       "error: axes[0]: step 2 repeats an earlier step's values"},
      // Values that differ past 12 significant digits are distinct steps, not a repeat.
      {"e14", head + "axes:\n  - { key: seed, values: [1000000000001, 1000000000002, 1000000000001.0] }\n",
       "error: axes[0]: step 3 repeats an earlier step's values"},
      {"e11", head + "axes:\n  - { key: workload.requests, name: x, values: [2] }\n  - { key: workload.clients, name: x, values: [1] }\n",
       "sweep_study_e11.yaml:5:36: error: axes[1].name: axis name \"x\" is axes[0]'s too"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK_THAT(study_error(c.name, c.study), Catch::Contains(c.message));
  }
  // The command exits 2 with the same message.
  auto r = run_vramsim("sweep " + write_study("e9", head + "axes: []\n").string() + " -o " + fresh_dir("e9"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("sweep_study_e9.yaml:3:7: error: axes: expected a list of axes"));
}

TEST_CASE("sweep: the JSON reader gives back the writer's bytes", "[sweep]") {
  const std::string text = R"({"a":1.5e-07,"b":[true,false,null,"x\"y\\z\n\u00e9"],"c":{"d":-0,"e":12345678901234567890}})";
  auto v = json::parse(text);
  REQUIRE(v.ok());
  CHECK(json::to_line(*v) == "{\"a\":1.5e-07,\"b\":[true,false,null,\"x\\\"y\\\\z\\n\xc3\xa9\"],\"c\":{\"d\":-0,\"e\":12345678901234567890}}");
  CHECK(v->at_path("c.e")->text() == "12345678901234567890");
  CHECK_FALSE(json::parse(R"({"a":1,"b":)").ok());
  CHECK_FALSE(json::parse(R"({"a":1} x)").ok());
}

TEST_CASE("sweep: the results store cuts a torn last line and reads each point once", "[sweep]") {
  const auto s = study_from("store", "study: store\nscenario: moe125b-rtx5090-gen3-shared\naxes:\n  - { key: workload.clients, values: [1, 2, 3] }\n");
  const std::string dir = fresh_dir("store");
  reports::ResultsStore store(dir);
  store.open_study(s);
  const auto points = s.points();
  json::Value summary = json::Value::object();
  summary.set("decode_tok_s", json::Value::number_text("1"));
  json::Value sim = json::Value::object();
  sim.set("wall_s", json::Value::number_text("0.5"));
  sim.set("decode_steps", json::Value::number_text("7"));
  summary.set("sim", sim);
  store.append(s, reports::ok_record(points[0], summary), json::Value::object());
  std::ofstream(fs::path(dir) / "results.jsonl", std::ios::app) << R"({"point":{"workload.clients":"2"},"ind)";  // a crash mid-write
  auto loaded = store.load();
  CHECK(loaded.size() == 1);
  CHECK(read(fs::path(dir) / "results.jsonl").back() == '\n');
  store.append(s, reports::failed_record(points[1], 2, "bad"), json::Value::object());
  loaded = store.load();
  REQUIRE(loaded.size() == 2);
  const auto& first = loaded.at(reports::point_key(points[0])).record;
  CHECK(json::to_line(first) == R"({"point":{"workload.clients":"1"},"index":0,"status":"ok","decode_tok_s":1,"sim":{"decode_steps":7}})");
  CHECK_FALSE(loaded.at(reports::point_key(points[1])).ok);
  // Another study in the same directory is refused.
  const auto other = study_from("store2", "study: store\nscenario: moe125b-rtx5090-gen3-shared\naxes:\n  - { key: workload.clients, values: [4] }\n");
  CHECK_THROWS_WITH(store.open_study(other), Catch::Contains("holds the results of another study"));
}

TEST_CASE("sweep: ranks come from the launcher's environment", "[sweep]") {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  CHECK(reports::detect_rank(lookup).size == 1);
  env = {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"}};
  CHECK(reports::detect_rank(lookup).rank == 1);
  CHECK(reports::detect_rank(lookup).size == 3);
  env = {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}};
  CHECK(reports::detect_rank(lookup).size == 2);
  env = {{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}};
  CHECK_THROWS(reports::detect_rank(lookup));
}

TEST_CASE("sweep: PMIx launchers give a rank and a size from one launcher, or an error", "[sweep]") {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto detected = [&] {
    const auto r = reports::detect_rank(lookup);
    return std::to_string(r.rank) + "/" + std::to_string(r.size);
  };
  auto error = [&]() -> std::string {
    try {
      reports::detect_rank(lookup);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "no error";
  };
  // Open MPI 5 (PRRTE's mpirun): PMIX_RANK and OMPI_COMM_WORLD_*, no PMI_SIZE.
  env = {{"PMIX_RANK", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}};
  CHECK(detected() == "2/4");
  // srun --mpi=pmix: PMIX_RANK and SLURM_PROCID/SLURM_NTASKS.
  env = {{"PMIX_RANK", "1"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "3"}};
  CHECK(detected() == "1/3");
  // mpirun inside a Slurm allocation: Slurm's variables describe mpirun's daemons; Open MPI's win.
  env = {{"PMIX_RANK", "3"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
         {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}};
  CHECK(detected() == "3/4");
  // A size without its rank is no launch.
  env = {{"SLURM_NTASKS", "4"}};
  CHECK(detected() == "0/1");
  // A rank without a size is an error, never a one-rank sweep that every rank would run whole.
  env = {{"PMIX_RANK", "1"}};
  CHECK_THAT(error(), Catch::Contains("PMIX_RANK=1 is set but no world size"));
  env = {{"PMIX_RANK", "0"}, {"PMI_SIZE", "2"}};  // PMI_SIZE without PMI_RANK is another launcher's
  CHECK_THAT(error(), Catch::Contains("PMIX_RANK=0 is set but no world size"));
  env = {{"OMPI_COMM_WORLD_RANK", "1"}};
  CHECK_THAT(error(), Catch::Contains("OMPI_COMM_WORLD_RANK=1 is set but OMPI_COMM_WORLD_SIZE is not"));
  // A PMIX_RANK that disagrees with the launcher's rank: two launches mixed.
  env = {{"PMIX_RANK", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}};
  CHECK_THAT(error(), Catch::Contains("PMIX_RANK=0 disagrees with SLURM_PROCID=1"));
  env = {{"PMIX_RANK", "x"}, {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
  CHECK_THAT(error(), Catch::Contains("bad PMIX_RANK=\"x\""));
  env = {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "3"}};
  CHECK_THAT(error(), Catch::Contains("SLURM_PROCID=3 is outside [0, SLURM_NTASKS=3)"));
}

TEST_CASE("sweep: rank 0 gives up on a rank whose heartbeat stopped, naming its points", "[sweep][mpi]") {
  WaitRig rig("stale", 2);
  rig.record(0);
  rig.step = [&](int pause) {
    if (pause == 1) beat(rig.dir, 1, 2, 1, "running");  // rank 1 starts, then dies
  };
  const std::string error = rig.wait_error();
  CHECK_THAT(error, Catch::StartsWith("3 of 6 points are missing and no rank that owns one is still working:\n"));
  CHECK_THAT(error, Catch::Contains("\n  rank 1 (host test, pid 1): its heartbeat stopped: unchanged for 30 s; "
                                    "missing points 1 (2), 3 (4), 5 (6)\n"));
  CHECK_THAT(error, Catch::EndsWith("rerun the same command to run the missing points (the recorded ones are kept)"));
  CHECK(rig.t == 50);  // first seen at 10 s: lost at the first look more than 30 s later, not before
  CHECK(rig.lost.empty());  // no other rank to wait for: the error says it all
}

TEST_CASE("sweep: rank 0 waits for a rank that keeps beating, however long", "[sweep][mpi]") {
  WaitRig rig("alive", 2);
  rig.record(0);
  rig.step = [&](int pause) {
    beat(rig.dir, 1, 2, pause, "running");
    if (pause == 20) {  // 200 s: well past the 30 s limit
      rig.record(1);
      beat(rig.dir, 1, 2, pause + 1, "done");
    }
  };
  std::vector<std::size_t> seen;
  rig.options.on_progress = [&](const reports::SweepProgress& p) { seen.push_back(p.done * 100 + p.todo); };
  const auto t = reports::wait_for_all(rig.study, rig.store, rig.options);
  CHECK(t.completed == 6);
  CHECK(rig.pauses == 20);
  CHECK(rig.lost.empty());
  REQUIRE(seen.size() == 21);  // progress at every look: of the study's 6 points, 3 then 6 recorded
  CHECK(seen.front() == 306);
  CHECK(seen.back() == 606);
}

TEST_CASE("sweep: rank 0 stops at once on a rank that ended without its points or has another size", "[sweep][mpi]") {
  WaitRig rig("ended", 2);
  rig.record(0);
  rig.step = [&](int pause) {
    if (pause == 1) beat(rig.dir, 1, 2, 9, "exited");
  };
  CHECK_THAT(rig.wait_error(), Catch::Contains("rank 1 (host test, pid 1): it ended (state \"exited\") without recording them; "
                                               "missing points 1 (2), 3 (4), 5 (6)"));
  CHECK(rig.t == 10);
  WaitRig sizes("sizes", 2);
  sizes.record(0);
  sizes.step = [&](int pause) {
    if (pause == 1) beat(sizes.dir, 1, 3, 1, "running");
  };
  CHECK_THAT(sizes.wait_error(), Catch::Contains("rank 1 (host test, pid 1): it runs with 3 ranks, rank 0 with 2"));
  CHECK(sizes.t == 10);
}

TEST_CASE("sweep: a heartbeat left by an earlier run is not taken for this run's", "[sweep][mpi]") {
  WaitRig rig("leftover", 2);
  rig.record(0);
  beat(rig.dir, 1, 2, 7, "done", "earlier");  // an earlier run's rank 1 finished
  rig.options.at_start = reports::read_heartbeats(rig.dir, 2);
  REQUIRE(rig.options.at_start.size() == 1);
  SECTION("this run's rank 1 starts late and finishes") {
    rig.step = [&](int pause) {
      if (pause == 2) beat(rig.dir, 1, 2, 1, "running");
      if (pause == 4) {
        rig.record(1);
        beat(rig.dir, 1, 2, 2, "done");
      }
    };
    CHECK(reports::wait_for_all(rig.study, rig.store, rig.options).completed == 6);
    CHECK(rig.lost.empty());
  }
  SECTION("this run's rank 1 never starts") {
    const std::string error = rig.wait_error();
    CHECK_THAT(error, Catch::Contains("\n  rank 1: its heartbeat has not changed since rank 0 started (limit 30 s); missing points 1 (2)"));
    CHECK(rig.t == 40);
  }
}

TEST_CASE("sweep: rank 0 waits for the ranks still working before it reports the lost ones", "[sweep][mpi]") {
  WaitRig rig("some_lost", 3);
  rig.record(0);
  rig.step = [&](int pause) {
    if (pause == 1) beat(rig.dir, 1, 3, 1, "done");  // finished without its points
    beat(rig.dir, 2, 3, pause, "running");
    if (pause == 8) {
      rig.record(2);
      beat(rig.dir, 2, 3, pause + 1, "done");
    }
  };
  const std::string error = rig.wait_error();
  REQUIRE(rig.lost.size() == 1);  // said as soon as found...
  CHECK_THAT(rig.lost[0], Catch::StartsWith("rank 1 (host test, pid 1) is lost: it ended (state \"done\") without recording them; "
                                            "its missing points 1 (2), 4 (5); waiting for the other ranks"));
  CHECK(rig.pauses == 8);  // ...and the error once rank 2 had recorded its points
  CHECK_THAT(error, Catch::StartsWith("2 of 6 points are missing"));
  CHECK_THAT(error, !Catch::Contains("rank 2"));
  CHECK(rig.store.load().size() == 4);
}

TEST_CASE("sweep: a rank's heartbeat says running, then done or exited", "[sweep][mpi]") {
  const std::string dir = fresh_dir("heartbeat");
  auto state = [&](int rank) {
    auto v = json::parse(reports::read_heartbeats(dir, 3).at(rank));
    REQUIRE(v.ok());
    return v->find("state")->text() + " " + v->find("ranks")->text() + " " + v->find("pid")->text();
  };
  const std::string pid = std::to_string(::getpid());
  {
    reports::Heartbeat one(dir, {1, 3}, 3600);
    CHECK(state(1) == "running 3 " + pid);
    one.finish();
    CHECK(state(1) == "done 3 " + pid);
  }
  CHECK(state(1) == "done 3 " + pid);
  { reports::Heartbeat two(dir, {2, 3}, 3600); }  // left without finish(): an error path
  CHECK(state(2) == "exited 3 " + pid);
  CHECK(reports::beat_interval_s(300) == 10);
  CHECK(reports::beat_interval_s(1) == 0.2);
}

TEST_CASE("sweep: results do not depend on -j", "[sweep][determinism]") {
  const std::string a = fresh_dir("j1"), b = fresh_dir("j2");
  auto r1 = run_vramsim("sweep " + mini() + " -o " + a + " -j 1 --json");
  auto r2 = run_vramsim("sweep " + mini() + " -o " + b + " -j2 --json");
  REQUIRE(r1.status == 0);
  REQUIRE(r2.status == 0);
  CHECK(vramsim::test::json_number(r1.out, "points") == 8);
  CHECK(vramsim::test::json_number(r1.out, "completed") == 8);
  CHECK(vramsim::test::json_number(r1.out, "failed") == 0);
  CHECK(vramsim::test::json_member(vramsim::test::parse_json(r1.out), "wall_s"));
  const auto ra = records(a), rb = records(b);
  CHECK(ra.size() == 8);
  CHECK(ra == rb);
  CHECK(read(fs::path(a) / "results.csv") == read(fs::path(b) / "results.csv"));
  CHECK(read(fs::path(a) / "report.md") == read(fs::path(b) / "report.md"));
  // A record is the point's overrides, then the run's summary without its wall time.
  const json::Value first = vramsim::test::parse_json(ra.begin()->second);
  const auto& members = first.members();
  REQUIRE(members.size() > 3);
  CHECK(members[0].first == "point");
  CHECK(members[0].second.find("workload.requests")->text() == "30");
  const auto status = std::find_if(members.begin(), members.end(), [](const auto& m) { return m.first == "status"; });
  REQUIRE(status != members.end());
  CHECK(status->second.text() == "ok");
  REQUIRE(status + 1 != members.end());
  CHECK((status + 1)->first == "scenario");  // the run's summary follows the point's own fields
  CHECK_FALSE(vramsim::test::json_member(first, "wall_s"));
  // results.csv: a header and one row per point, in point order.
  const std::string csv = read(fs::path(a) / "results.csv");
  CHECK_THAT(csv, Catch::StartsWith("index,status,hardware.link.preset,hardware.link.measured_h2d,"
                                    "hardware.gpu.vram_used_by_others,workload.clients,decode_tok_s.p50,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 9);
  CHECK_THAT(csv, Catch::Contains("\n7,ok,pcie-gen5-x16,56GB/s,12GiB,2,"));
}

TEST_CASE("sweep: resuming after kill -9 loses and duplicates nothing", "[sweep][resume]") {
  const std::string reference = fresh_dir("resume_ref"), dir = fresh_dir("resume");
  REQUIRE(run_vramsim("sweep " + mini() + " -o " + reference + " -j 2").status == 0);

  // Start the sweep, kill it with SIGKILL once a point or more is recorded, then tear the
  // last line as a crash in the middle of a write would.
  const std::string binary = VRAMSIM_BINARY, study = mini();
  const pid_t pid = spawn_quiet({binary, "sweep", study, "-o", dir, "-j", "1"});
  const fs::path results = fs::path(dir) / "results.jsonl";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto lines = [&] {
    const std::string t = read(results);
    return std::count(t.begin(), t.end(), '\n');
  };
  while (lines() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto before = lines();
  INFO("points recorded before the kill: " << before);
  REQUIRE(before >= 2);
  REQUIRE(before < 8);  // killed mid-sweep
  std::ofstream(results, std::ios::app) << R"({"point":{"workload.requests":"30","hardware.link.pre)";

  auto r = run_vramsim("sweep " + mini() + " -o " + dir + " -j 2 --json");
  REQUIRE(r.status == 0);
  CHECK(vramsim::test::json_number(r.out, "completed") == 8);
  CHECK(vramsim::test::json_number(r.out, "resumed") == static_cast<double>(before));
  CHECK(vramsim::test::json_number(r.out, "ran") == static_cast<double>(8 - before));
  CHECK(records(dir) == records(reference));  // each point once, the same results as an uninterrupted sweep
  CHECK(read(fs::path(dir) / "results.csv") == read(fs::path(reference) / "results.csv"));
  // A third run finds everything done.
  auto again = run_vramsim("sweep " + mini() + " -o " + dir + " --json");
  CHECK(vramsim::test::json_number(again.out, "ran") == 0);
  CHECK(records(dir).size() == 8);
}

namespace {
using vramsim::test::children_of;

// Running (not gone, not a zombie left for a reaper).
bool alive(pid_t pid) {
  const std::string stat = read("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}
}  // namespace

// A kill (or a batch scheduler's time limit) sends SIGTERM to the sweep alone: the sweep passes
// it on to the simulations it started, which would otherwise run on, orphaned.
TEST_CASE("sweep: SIGTERM to a sweep stops its running simulations too", "[sweep][signals]") {
  const std::string dir = fresh_dir("sigterm");
  const pid_t pid = spawn_quiet({VRAMSIM_BINARY, "sweep", vramsim::test::data_path("sweeps/slow.yaml"), "-o", dir, "-j", "2"});
  std::vector<pid_t> children;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (children.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    children = children_of(pid);
  }
  REQUIRE(children.size() == 2);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto any_alive = [&] { return std::any_of(children.begin(), children.end(), alive); };
  while (any_alive() && std::chrono::steady_clock::now() < gone_by) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(any_alive());
}

TEST_CASE("sweep: mpirun -np 2 gives the local results", "[sweep][mpi]") {
  REQUIRE(proc::on_path("mpirun"));  // CI installs openmpi-bin (scripts/install-deps.sh)
  const std::string local = fresh_dir("mpi_local"), mpi = fresh_dir("mpi");
  REQUIRE(run_vramsim("sweep " + mini() + " -o " + local + " -j 2").status == 0);
  const auto r = proc::run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", VRAMSIM_BINARY, "sweep",
                            mini(), "-o", mpi, "-j", "1", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(vramsim::test::json_number(r.out, "ranks") == 2);
  CHECK(vramsim::test::json_number(r.out, "ran") == 4);  // rank 0's half
  CHECK(vramsim::test::json_number(r.out, "completed") == 8);
  CHECK(records(mpi) == records(local));
  CHECK(read(fs::path(mpi) / "results.csv") == read(fs::path(local) / "results.csv"));
  CHECK(read(fs::path(mpi) / "report.md") == read(fs::path(local) / "report.md"));
}

// Ranks started by hand, with the variables Open MPI sets: rank 0 alone sees no heartbeat of
// rank 1 and gives up after --rank-timeout; running rank 1, then rank 0 again, completes the
// sweep with the results of a one-rank sweep.
TEST_CASE("sweep: rank 0 exits 3 naming the points of a rank that never started, and a rerun completes", "[sweep][mpi]") {
  const std::string local = fresh_dir("lost_local"), dir = fresh_dir("lost");
  REQUIRE(run_vramsim("sweep " + mini() + " -o " + local + " -j 2").status == 0);
  auto as_rank = [&](int rank) {
    return proc::run({"env", "OMPI_COMM_WORLD_RANK=" + std::to_string(rank), "OMPI_COMM_WORLD_SIZE=2", VRAMSIM_BINARY,
                      "sweep", mini(), "-o", dir, "-j", "2", "--rank-timeout", "1", "--json"});
  };
  const auto alone = as_rank(0);
  INFO(alone.err);
  CHECK(alone.exit_code == 3);
  CHECK(alone.out.empty());
  CHECK_THAT(alone.err, Catch::Contains("vramsim sweep: error: 4 of 8 points are missing and no rank that owns one is still working:\n"
                                        "  rank 1: no heartbeat file appeared in 1 s; missing points 1 (Gen3, 18106MiB, 2), 3 ("));
  CHECK(records(dir).size() == 4);
  CHECK(fs::exists(fs::path(dir) / "report.md"));  // the partial report
  const auto one = as_rank(1);
  INFO(one.err);
  CHECK(one.exit_code == 0);
  const auto again = as_rank(0);
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(vramsim::test::json_number(again.out, "completed") == 8);
  CHECK(vramsim::test::json_number(again.out, "ran") == 0);
  CHECK(records(dir) == records(local));
  CHECK(read(fs::path(dir) / "results.csv") == read(fs::path(local) / "results.csv"));
  CHECK(read(fs::path(dir) / "report.md") == read(fs::path(local) / "report.md"));
}

TEST_CASE("sweep: rank 0 exits 3 when another rank is killed with SIGKILL", "[sweep][mpi]") {
  const std::string dir = fresh_dir("killed");
  const std::string binary = VRAMSIM_BINARY, study = mini();
  // Rank 1 by hand, killed once its heartbeat is written, before it can record its 4 points.
  const pid_t pid = spawn_quiet({binary, "sweep", study, "-o", dir, "-j", "1", "--rank-timeout", "1"},
                                {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(reports::heartbeat_path(dir, 1)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(fs::exists(reports::heartbeat_path(dir, 1)));

  const auto r = proc::run({"env", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", binary, "sweep", study, "-o", dir,
                            "-j", "2", "--rank-timeout", "1"});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("  rank 1"));
  CHECK_THAT(r.err, Catch::Contains("; missing point"));
}

TEST_CASE("sweep: --rank-timeout takes whole seconds", "[sweep][errors]") {
  vramsim::test::check_usage_error("sweep " + mini() + " -o " + fresh_dir("timeout") + " --rank-timeout 0", "--rank-timeout");
}

// Sweeps tests/data/sweeps/STUDY.yaml (two points) into a fresh directory, which it returns:
// the sweep exits 1 with one point completed and one failed.
static std::string sweep_one_failing(const std::string& study) {
  const std::string dir = fresh_dir(study);
  auto r = run_vramsim("sweep " + vramsim::test::data_path("sweeps/" + study + ".yaml") + " -o " + dir + " --json");
  CHECK(r.status == 1);
  CHECK(vramsim::test::json_number(r.out, "completed") == 1);
  CHECK(vramsim::test::json_number(r.out, "failed") == 1);
  return dir;
}

TEST_CASE("sweep: a failing point is recorded with its error and the sweep goes on", "[sweep][errors]") {
  const std::string dir = sweep_one_failing("failing");
  const auto recs = records(dir);
  REQUIRE(recs.size() == 2);
  const std::string failed = recs.at(R"({"workload.requests":"5","engine.expert_cache.policy":"fifo"})");
  CHECK(vramsim::test::json_text(failed, "status") == "failed");
  CHECK(vramsim::test::json_number(failed, "exit_code") == 2);
  CHECK_THAT(vramsim::test::json_text(failed, "error"), Catch::Contains("expected one of profile, lru, lfu, profile-lru, got \"fifo\""));
  const std::string md = read(fs::path(dir) / "report.md");
  CHECK_THAT(md, Catch::Contains("## Failed points"));
  CHECK_THAT(md, Catch::Contains("| fifo | --set engine.expert_cache.policy=fifo"));
  CHECK_THAT(read(fs::path(dir) / "results.csv"), Catch::Contains("\n1,failed,fifo,"));
}

// A run that completes no request has no speed to report: the point fails with the run's reason
// instead of a row of cache figures beside empty speeds.
TEST_CASE("sweep: a point whose every request is rejected is a failed point with the reason", "[sweep][errors]") {
  const std::string dir = sweep_one_failing("all-rejected");
  const std::string md = read(fs::path(dir) / "report.md");
  CHECK_THAT(md, Catch::Contains("| 16 | failed |") &&
                     Catch::Contains("no request completed: all 4 were rejected (4: prompt over the context window)"));
  // The run's request counts stay with the failed point.
  const std::string csv = read(fs::path(dir) / "results.csv");
  CHECK(csv.find(",failed,") != std::string::npos);
  const std::string jsonl = read(fs::path(dir) / "results.jsonl");
  std::istringstream lines(jsonl);
  std::size_t failed_with_counts = 0;
  for (std::string line; std::getline(lines, line);)
    failed_with_counts += vramsim::test::json_text(line, "status") == "failed" && vramsim::test::json_number(line, "rejected") == 4;
  CHECK(failed_with_counts == 1);
}

TEST_CASE("sweep: the report opens offline in headless Chromium with its charts visible and no console error", "[sweep][report]") {
  // CI installs Debian's chromium (scripts/install-deps.sh): a missing browser fails this test.
  REQUIRE(proc::on_path("chromium"));
  const std::string dir = fresh_dir("chromium");
  REQUIRE(run_vramsim("sweep " + mini() + " -o " + dir).status == 0);
  const fs::path html = fs::absolute(fs::path(dir) / "report.html");
  const std::string page = read(html);
  // Self-contained: nothing to fetch (namespace URIs inside the SVG are names, not requests).
  for (const char* fetch : {"src=\"http", "href=\"http", "<link ", "@import", "<img "}) CHECK_THAT(page, !Catch::Contains(fetch));
  CHECK(std::count(page.begin(), page.end(), '\n') > 100);
  CHECK_THAT(page, Catch::Contains("<h2>Decode speed vs others</h2>"));
  CHECK_THAT(page, Catch::Contains("<h2>Inputs</h2>"));

  const auto r = proc::run({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--user-data-dir=" + (fs::current_path() / "sweep_chromium_profile").string(),
                            "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
                            "--virtual-time-budget=5000", "--dump-dom", "file://" + html.string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // 6 charts (concurrency has two), each an SVG with a size and drawn paths.
  CHECK_THAT(r.out, Catch::Contains("data-charts-visible=\"6/6\""));
  CHECK_THAT(r.err, !Catch::Contains("CONSOLE"));
  CHECK_THAT(r.err, !Catch::Contains("Uncaught"));
  CHECK_THAT(r.err, !Catch::Contains("ERR_NAME_NOT_RESOLVED"));
  CHECK_THAT(r.err, !Catch::Contains("ERR_FILE_NOT_FOUND"));
}

TEST_CASE("sweep: vramsim report rewrites a results directory's report", "[sweep][report]") {
  const std::string dir = fresh_dir("report");
  REQUIRE(run_vramsim("sweep " + vramsim::test::data_path("sweeps/failing.yaml") + " -o " + dir).status == 1);
  fs::remove(fs::path(dir) / "report.md");
  auto r = run_vramsim("report " + dir);
  CHECK(r.status == 0);
  CHECK(fs::exists(fs::path(dir) / "report.md"));
  CHECK(fs::exists(fs::path(dir) / "charts" / "chart-1.svg"));
  // A record damaged in the middle of results.jsonl (not a torn last line) is named, not
  // silently counted as a point not run.
  const fs::path results = fs::path(dir) / "results.jsonl";
  std::string text = read(results);
  text.insert(0, "x");
  std::ofstream(results, std::ios::trunc) << text;
  auto damaged = run_vramsim("report " + dir);
  CHECK(damaged.status == 0);
  CHECK_THAT(damaged.err, Catch::Contains("results.jsonl: 1 line is not a record (line 1), ignored: a point with no readable "
                                          "record counts as not run"));
  CHECK_THAT(read(fs::path(dir) / "report.md"), Catch::Contains("1 not run yet"));
  auto bad = run_vramsim("report " + fresh_dir("nothing"));
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("not a sweep's results directory"));
}

// A results directory is reused only for the same inputs: another seed (or other scenario text)
// would otherwise be reported under results computed before it changed.
TEST_CASE("sweep: a rerun with another seed refuses the old results directory", "[sweep][resume]") {
  const std::string head = "study: reseed\nscenario: moe125b-rtx5090-gen3-exclusive\nset: { workload.requests: 2 }\n"
                           "axes:\n  - { key: workload.clients, values: [1] }\n";
  const std::string dir = fresh_dir("reseed");
  auto first = run_vramsim("sweep " + write_study("reseed1", head + "seed: 1\n").string() + " -o " + dir + " -j 1");
  INFO(first.err);
  REQUIRE(first.status == 0);
  auto same = run_vramsim("sweep " + write_study("reseed1", head + "seed: 1\n").string() + " -o " + dir + " -j 1");
  CHECK(same.status == 0);
  auto other = run_vramsim("sweep " + write_study("reseed7", head + "seed: 7\n").string() + " -o " + dir + " -j 1");
  CHECK(other.status != 0);
  CHECK_THAT(other.err, Catch::Contains("holds the results of another study (they differ in: seed)"));
}

// A typo in an axis's key is refused at the study's line before any point runs.
TEST_CASE("sweep: an axis key that names no scenario key is refused at load, at its line", "[sweep][errors]") {
  const fs::path dir = fresh_dir("typo");
  fs::create_directories(dir);
  const std::string study = (dir / "typo.yaml").string();
  std::ofstream(study) << "study: typo\nscenario: mixtral-3090-offload\naxes:\n  - key: engine.gpu_layerz\n    values: [20, 24]\n";
  auto r = vramsim::test::run_vramsim("sweep " + study + " -o " + (dir / "typo-out").string() + " -j 1");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("typo.yaml:4:10: error: axes[0].key:") &&
                        Catch::Contains("unknown key (did you mean \"gpu_layers\"?)"));
  CHECK_FALSE(std::filesystem::exists(dir / "typo-out" / "results.jsonl"));
  // A typo in `set` is blamed on its own line.
  std::ofstream(dir / "set.yaml") << "study: set\nscenario: mixtral-3090-offload\nset:\n  engine.gpu_layerz: 20\n"
                                     "axes:\n  - key: engine.context\n    values: [2048, 4096]\n";
  auto set = vramsim::test::run_vramsim("sweep " + (dir / "set.yaml").string() + " -o " + (dir / "set-out").string() + " -j 1");
  CHECK(set.status == 2);
  CHECK_THAT(set.err, Catch::Contains("set.yaml:4:3: error: set.engine.gpu_layerz:"));
  // A key that exists only with another axis's value (a bursty process's burst) is not refused.
  const std::string mixtral = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/mixtral-3090-offload.yaml";
  std::ofstream(dir / "bursty.yaml") << "study: bursty\nscenario: " << mixtral << "\nset:\n  workload.requests: 2\n"
                                        "  workload.clients: null\n  workload.arrival.rate: 2/s\naxes:\n"
                                        "  - key: workload.arrival.process\n    values: [bursty]\n"
                                        "  - key: workload.arrival.burst\n    values: [5s, 10s]\n"
                                        "  - key: workload.arrival.idle\n    values: [1s]\n";
  auto bursty = vramsim::test::run_vramsim("sweep " + (dir / "bursty.yaml").string() + " -o " + (dir / "bursty-out").string() + " -j 1");
  INFO(bursty.err);
  CHECK(bursty.status == 0);
}

// A line chart whose points all sit at one x (the exclusive run's 0% overflow at every point)
// keeps a share axis non-negative, where gnuplot's own autoscale would span -1.5 to 1.5.
TEST_CASE("charts: every point at one x keeps a non-negative axis non-negative", "[sweep][report]") {
  vramsim::reports::Chart c;
  c.series.push_back({"a", {0.0, 0.0}, {100.0, 120.0}, {}, {}});
  CHECK_THAT(vramsim::reports::gnuplot_script(c), Catch::Contains("set xrange [0:1]"));
  c.series.front().x = {0.0, 0.5};
  CHECK_THAT(vramsim::reports::gnuplot_script(c), !Catch::Contains("set xrange"));
}

// Issue 25: series of a chart must be told apart, also where their points coincide.
TEST_CASE("charts: each series has its own marker, scattered points a smaller one than the series before", "[sweep][report]") {
  vramsim::reports::Chart c;
  c.kind = vramsim::reports::Chart::Kind::Points;
  c.series.push_back({"gen3", {10.0}, {100.0}, {}, {}});
  c.series.push_back({"gen5", {10.0}, {100.0}, {}, {}});
  const std::string script = vramsim::reports::gnuplot_script(c);
  CHECK_THAT(script, Catch::Contains("with points lt 1 pt 7 ps 1.6 title 'gen3'"));
  CHECK_THAT(script, Catch::Contains("with points lt 2 pt 5 ps 1.4 title 'gen5'"));
}
