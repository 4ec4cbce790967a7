// Output files and stdout: the one atomic writer (core/output_file.h), and every command's
// writes failing loudly, with the reason, rather than exiting 0 with the output lost.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/output_file.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using vramsim::test::run_vramsim;
using namespace vramsim;

namespace {

std::string read(const fs::path& p) { return vramsim::test::read_file(p); }

fs::path fresh(const std::string& name) { return vramsim::test::fresh_dir("outfile_" + name); }

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}));
}

const std::string kShared = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";

}  // namespace

TEST_CASE("output file: replaced atomically, its temporary file beside it with an unpredictable name", "[output]") {
  const fs::path dir = fresh("atomic");
  const fs::path target = dir / "out.txt";
  std::ofstream(target) << "old\n";
  ::chmod(target.c_str(), 0640);
  auto a = io::AtomicFile::open(target.string());
  auto b = io::AtomicFile::open(target.string());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const fs::path temp = (*a)->temp_path();
  CHECK(temp.parent_path() == dir);
  CHECK(temp != fs::path((*b)->temp_path()));                                        // a new name each time
  CHECK(temp.filename().string().find(std::to_string(::getpid())) == std::string::npos);  // not the pid
  CHECK(read(target) == "old\n");  // nothing replaced before commit
  (*a)->stream() << "new\n";
  REQUIRE((*a)->commit().ok());
  CHECK(read(target) == "new\n");
  CHECK((fs::status(target).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  (*b)->discard();
  CHECK(entries(dir) == 1);  // no temporary file left by either
}

TEST_CASE("output file: a symlink planted under a temporary name is never followed", "[output]") {
  const fs::path dir = fresh("planted");
  const fs::path victim = dir / "victim.txt";
  std::ofstream(victim) << "precious\n";
  // The names the earlier writers used (FILE.vramsim-PID.tmp, FILE.tmpPID), planted for this
  // process's pid and the next ones.
  const fs::path target = dir / "out.json";
  for (int pid = ::getpid(); pid < ::getpid() + 4; ++pid)
    for (const std::string& name : {target.string() + ".vramsim-" + std::to_string(pid) + ".tmp",
                                    target.string() + ".tmp" + std::to_string(pid)})
      fs::create_symlink(victim, name);
  REQUIRE(io::write_file(target.string(), "result\n").ok());
  CHECK(read(victim) == "precious\n");
  CHECK(read(target) == "result\n");
  CHECK_FALSE(fs::is_symlink(fs::symlink_status(target)));
  // A link the user named is followed to its file (the link stays).
  const fs::path link = dir / "link.json";
  fs::create_symlink("out.json", link);
  REQUIRE(io::write_file(link.string(), "again\n").ok());
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(read(target) == "again\n");
}

TEST_CASE("output file: a failed write or rename says why and leaves no temporary file", "[output]") {
  auto full = io::write_file("/dev/full", "x");
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().message == "cannot write /dev/full: No space left on device");
  CHECK(io::write_file("/dev/null", "x").ok());  // a device is written through, not replaced

  const fs::path dir = fresh("failing");
  fs::create_directories(dir / "busy" / "inside");  // a non-empty folder where the file goes
  auto busy = io::write_file((dir / "busy").string(), "x");
  REQUIRE_FALSE(busy.ok());
  CHECK_THAT(busy.error().message, Catch::Contains("it is a directory"));
  auto missing = io::write_file((dir / "no" / "such" / "out.txt").string(), "x");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::EndsWith(": No such file or directory"));
  CHECK(entries(dir) == 1);

  // The rename refused (a directory replaced by a file) removes the temporary file.
  auto file = io::AtomicFile::open((dir / "x").string());
  REQUIRE(file.ok());
  fs::create_directories(dir / "x" / "sub");
  (*file)->stream() << "text";
  auto committed = (*file)->commit();
  REQUIRE_FALSE(committed.ok());
  CHECK_THAT(committed.error().message, Catch::StartsWith("cannot write " + (dir / "x").string() + ": "));
  CHECK(entries(dir) == 2);  // busy/ and x/: no temporary file
}

TEST_CASE("output file: stdout to a full disk is an error with the reason, for every command", "[output][cli]") {
  const std::string study = vramsim::test::data_path("sweeps/mini.yaml");
  const fs::path dir = fresh("stdout");
  const std::string commands[] = {
      "list models",
      "fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M",
      "fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json",
      "run " + kShared + " --set workload.requests=1 --json",
      "sweep " + study + " -o " + (dir / "sweep").string() + " -j 2 --json",
      "version",
  };
  for (const auto& command : commands) {
    INFO(command);
    const auto r = run_vramsim(command + " > /dev/full");
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("error: cannot write the output to stdout: No space left on device"));
  }
}

TEST_CASE("output file: every output option fails with the reason, writes nothing half-done, and says no 'wrote'", "[output][cli]") {
  const fs::path dir = fresh("options");
  // import-model -o: no "wrote FILE" with an empty file.
  const std::string config = vramsim::test::data_path("hf/qwen3-30b-a3b.json");
  {
    const auto r = run_vramsim("import-model " + config + " --name x -o /dev/full");
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("cannot write /dev/full: No space left on device"));
    CHECK_THAT(r.err, !Catch::Contains("wrote"));
    REQUIRE(run_vramsim("import-model " + config + " --name x -o " + (dir / "x.yaml").string()).status == 0);
    CHECK_THAT(read(dir / "x.yaml"), Catch::Contains("name:"));
    fs::remove(dir / "x.yaml");
  }
  // run's output files say why.
  for (const char* option : {"--requests-out", "--trace"}) {
    INFO(option);
    const auto r = run_vramsim("run " + kShared + " --set workload.requests=1 " + option + " /dev/full");
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("cannot write /dev/full: No space left on device"));
  }
  const auto missing = run_vramsim("run " + kShared + " --set workload.requests=1 --requests-out " + (dir / "no/such.jsonl").string());
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains("no/such.jsonl: No such file or directory"));
  // calibrate --records-out.
  const std::string log = vramsim::test::data_path("logs/sim-shared-20.log");
  {
    const auto r = run_vramsim("calibrate --from-log " + log + " --draft-tokens 4 --records-out /dev/full");
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("cannot write /dev/full: No space left on device"));
  }
  CHECK(entries(dir) == 0);
}
