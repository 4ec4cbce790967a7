#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vramsim::test {

void check_refused(const std::string& scenario, const std::string& assignment, const std::string& message) {
  INFO(assignment);
  check_usage_error("run " + scenario + " --set " + assignment, message);
}

std::string run_ok(const std::string& args) {
  auto r = run_vramsim(args);
  INFO("vramsim " << args << "\n" << r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

void check_usage_error(const std::string& args, const std::string& message) {
  INFO(args);
  auto r = run_vramsim(args);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(message));
  CHECK(r.out.empty());
}

Run run_vramsim(const std::string& args) {
  static int counter = 0;
  const std::string err_file = "vramsim_test_stderr_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string command = std::string(VRAMSIM_BINARY) + " " + args + " 2>" + err_file;
  Run run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return run;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  std::ostringstream text;
  text << err.rdbuf();
  run.err = text.str();
  std::remove(err_file.c_str());
  return run;
}

double json_number(const std::string& json, const std::string& key, const std::string& within) {
  const std::size_t from = within.empty() ? 0 : json.find("\"" + within + "\"");
  const std::string pattern = "\"" + key + "\": ";
  const std::size_t at = from == std::string::npos ? std::string::npos : json.find(pattern, from);
  if (at == std::string::npos) throw std::runtime_error("no " + pattern + " in the JSON output");
  return std::stod(json.substr(at + pattern.size()));
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path p = std::filesystem::current_path() / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(entry.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace vramsim::test
