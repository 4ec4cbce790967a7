#include "tests/test_support.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace vramsim::test {

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

}  // namespace vramsim::test
