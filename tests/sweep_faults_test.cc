// Sweeps under faults and misuse: a folder that is not a results directory, a scenario that is
// not YAML, points whose simulation was killed, the sweep itself killed with SIGKILL, the same
// study named by another path, and rank 0's progress. Test names start with "sweep" (ctest -R
// sweep).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/config_reader.h"
#include "core/json_value.h"
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

fs::path fresh(const std::string& name) { return vramsim::test::fresh_dir("sweep_faults_" + name); }

const char* kStudy = "study: faults\nscenario: moe125b-rtx5090-gen3-shared\naxes:\n  - { key: workload.clients, values: [1, 2, 3] }\n";

reports::Study study_at(const fs::path& path, const std::string& text = kStudy) {
  std::ofstream(path) << text;
  return reports::load_study(path.string(), VRAMSIM_TEST_CONFIGS_DIR);
}

// A child that printed a summary, or one that failed with `status`.
reports::PointOutcome outcome(int status) {
  reports::PointOutcome o;
  o.exit_code = status;
  if (status == 0) o.out = "{\"requests\": {\"completed\": 3}}";
  else o.err = status > 128 ? "" : "error: bad point";
  return o;
}

using vramsim::test::children_of;

bool alive(pid_t pid) {  // not gone, not a zombie left for a reaper
  const std::string stat = read("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

}  // namespace

TEST_CASE("sweep: -o a folder that holds files but no study.json is refused, its files untouched", "[sweep][errors]") {
  const fs::path dir = fresh("foreign");
  std::ofstream(dir / "results.csv") << "my own table\n";
  std::ofstream(dir / "report.md") << "# my notes\n";
  const auto r = run_vramsim("sweep " + vramsim::test::data_path("sweeps/mini.yaml") + " -o " + dir.string());
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(dir.string() + " is not empty (it holds report.md and 1 more) and holds no study.json"));
  CHECK(read(dir / "results.csv") == "my own table\n");
  CHECK(read(dir / "report.md") == "# my notes\n");
  CHECK_FALSE(fs::exists(dir / "study.json"));
  // An empty folder, or one with its own study, is a results directory.
  const fs::path empty = fresh("empty");
  const auto study = study_at(empty.parent_path() / "sweep_faults_empty.yaml");
  // Another MPI rank writing study.json leaves, for a moment, only the lock and the writer's
  // temporary file: that is no foreign folder.
  std::ofstream(empty / ".lock") << "";
  std::ofstream(empty / ".study.json.vramsim-a1B2c3") << "{";
  reports::ResultsStore store(empty);
  CHECK_NOTHROW(store.open_study(study));
  CHECK_NOTHROW(store.open_study(study));
}

TEST_CASE("sweep: a study whose scenario is not YAML is refused when read and only its start is quoted", "[sweep][errors]") {
  const fs::path dir = fresh("not_yaml");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "secret line " + std::to_string(i) + " of a file that is no scenario at all, only notes kept here\n";
  std::ofstream(dir / "notes.txt") << text;
  const fs::path study = dir / "study.yaml";
  std::ofstream(study) << "study: s\nscenario: ./notes.txt\naxes:\n  - { key: workload.clients, values: [1, 2] }\n";
  const auto r = run_vramsim("sweep " + study.string() + " -o " + (dir / "out").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith(study.string() + ":2:11: error: scenario: " + (dir / "notes.txt").string() +
                                      " is not a scenario: it reads as \"secret line 0"));
  CHECK_THAT(r.err, !Catch::Contains("secret line 1 "));
  CHECK(r.err.size() < 600);
  CHECK_FALSE(fs::exists(dir / "out" / "study.json"));
}

TEST_CASE("sweep: a point whose child was killed is run again on resume, and --retry-failed reruns every failure", "[sweep][resume]") {
  const fs::path dir = fresh("retry");
  const auto study = study_at(dir / "study.yaml");
  reports::ResultsStore store(dir / "out");
  store.open_study(study);
  std::map<std::size_t, int> calls;
  std::map<std::size_t, int> status = {{0, 137}, {1, 2}, {2, 0}};  // killed (SIGKILL), failed, ok
  auto runner = [&](const reports::Study&, const reports::Point& p) {
    ++calls[p.index];
    return outcome(status[p.index]);
  };
  reports::SweepOptions options;
  auto t = reports::run_sweep(study, store, options, runner);
  CHECK(t.completed == 1);
  CHECK(t.failed == 2);

  status = {{0, 0}, {1, 0}, {2, 0}};
  t = reports::run_sweep(study, store, options, runner);  // a plain resume: the killed point only
  CHECK(calls == std::map<std::size_t, int>{{0, 2}, {1, 1}, {2, 1}});
  CHECK(t.completed == 2);
  CHECK(t.failed == 1);
  CHECK(t.resumed == 2);

  options.retry_failed = true;
  t = reports::run_sweep(study, store, options, runner);
  CHECK(calls == std::map<std::size_t, int>{{0, 2}, {1, 2}, {2, 1}});
  CHECK(t.completed == 3);
  CHECK(t.failed == 0);
  const auto records = store.load();
  CHECK(std::all_of(records.begin(), records.end(), [](const auto& r) { return r.second.ok; }));
  // The table has one row per point, the latest record's.
  store.rewrite_csv(study);
  const std::string csv = read(dir / "out" / "results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  CHECK_THAT(csv, !Catch::Contains("failed"));
}

TEST_CASE("sweep: kill -9 of a sweep takes its running simulations with it", "[sweep][signals]") {
  const fs::path dir = fresh("sigkill");
  std::vector<std::string> args = {VRAMSIM_BINARY, "sweep", vramsim::test::data_path("sweeps/slow.yaml"), "-o",
                                   (dir / "out").string(), "-j", "2"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  std::vector<pid_t> children;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (children.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    children = children_of(pid);
  }
  REQUIRE(children.size() == 2);
  ::kill(pid, SIGKILL);  // no handler runs: the children must die of their parent's death
  int wait_status = 0;
  ::waitpid(pid, &wait_status, 0);
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto any_alive = [&] { return std::any_of(children.begin(), children.end(), alive); };
  while (any_alive() && std::chrono::steady_clock::now() < gone_by) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(any_alive());
}

TEST_CASE("sweep: the same study named by another path resumes", "[sweep][resume]") {
  const fs::path dir = fresh("spelling");
  fs::copy_file(std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml", dir / "base.yaml");
  const std::string text = "study: spelled\nscenario: base.yaml\naxes:\n  - { key: workload.clients, values: [1, 2] }\n";
  std::ofstream(dir / "study.yaml") << text;
  const fs::path relative = fs::relative(dir, fs::current_path()) / "." / "study.yaml";
  const auto by_relative = reports::load_study(relative.string(), VRAMSIM_TEST_CONFIGS_DIR);
  const auto by_absolute = reports::load_study((dir / "study.yaml").string(), VRAMSIM_TEST_CONFIGS_DIR);
  REQUIRE(by_relative.inputs.at(1).first != by_absolute.inputs.at(1).first);  // two spellings of base.yaml
  reports::ResultsStore store(dir / "out");
  store.open_study(by_relative);
  CHECK_NOTHROW(store.open_study(by_absolute));
  // Another scenario text is another study, whatever the path.
  std::ofstream(dir / "base.yaml", std::ios::app) << "# changed\n";
  const auto changed = reports::load_study((dir / "study.yaml").string(), VRAMSIM_TEST_CONFIGS_DIR);
  CHECK_THROWS_WITH(store.open_study(changed), Catch::Contains("holds the results of another study"));
}

TEST_CASE("sweep: rank 0's progress counts the study's points, never 0/0", "[sweep][mpi]") {
  const fs::path dir = fresh("progress");
  const auto study = study_at(dir / "study.yaml");
  reports::ResultsStore store(dir / "out");
  store.open_study(study);
  for (const auto& p : study.points()) store.append(study, reports::ok_record(p, json::Value::object()), json::Value::object());
  reports::WaitOptions wait;
  wait.ranks = 2;
  std::vector<std::pair<std::size_t, std::size_t>> seen;
  wait.on_progress = [&](const reports::SweepProgress& p) { seen.emplace_back(p.done, p.todo); };
  wait.pause = [] {};
  const auto t = reports::wait_for_all(study, store, wait);
  CHECK(t.completed == 3);
  REQUIRE_FALSE(seen.empty());
  CHECK(seen.back() == std::pair<std::size_t, std::size_t>{3, 3});
}

// A write that fails in the results directory names the failing call's own reason (a full disk
// read "No such file or directory"): here a file-size limit makes the append fail with EFBIG.
TEST_CASE("sweep: a failed append to results.jsonl names the real errno", "[sweep][errors]") {
  const fs::path dir = fresh("efbig");
  const auto study = study_at(dir / "study.yaml");
  reports::ResultsStore store(dir / "out");
  store.open_study(study);
  const auto point = study.points().front();
  rlimit before{};
  ::getrlimit(RLIMIT_FSIZE, &before);
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = before;
  small.rlim_cur = 16;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string error = "no error";
  try {
    store.append(study, reports::ok_record(point, json::Value::object()), json::Value::object());
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &before);
  CHECK(error == "cannot append to " + (dir / "out" / "results.jsonl").string() + ": File too large");
  // The torn line is cut off when the store is next read: the point counts as not run.
  CHECK(store.load().empty());
}

TEST_CASE("sweep: report leaves no temporary file when it cannot write", "[sweep][report]") {
  const fs::path dir = fresh("report_fails");
  const auto study = study_at(dir / "study.yaml");
  {
    reports::ResultsStore store(dir / "out");
    store.open_study(study);
  }
  fs::create_directories(dir / "out" / "report.html" / "in-the-way");
  const auto r = run_vramsim("report " + (dir / "out").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot write " + (dir / "out" / "report.html").string()));
  for (const auto& entry : fs::directory_iterator(dir / "out")) {
    INFO(entry.path());
    CHECK(entry.path().filename().string().find("vramsim-") == std::string::npos);
  }
  fs::remove_all(dir / "out" / "report.html");
  CHECK(run_vramsim("report " + (dir / "out").string()).status == 0);
  CHECK(fs::exists(dir / "out" / "report.html"));
}
