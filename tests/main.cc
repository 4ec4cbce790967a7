// The suite's entry point. Tests write their scratch files (scenarios, traces, sweep folders)
// to the working directory, so the suite always runs in the build's tests folder, where ctest
// runs it: the binary started by hand from the source tree leaves nothing there.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <system_error>

int main(int argc, char* argv[]) {
  std::error_code ec;
  std::filesystem::current_path(VRAMSIM_TEST_WORK_DIR, ec);
  if (ec) {
    std::fprintf(stderr, "vramsim_tests: cannot enter %s: %s\n", VRAMSIM_TEST_WORK_DIR, ec.message().c_str());
    return 2;
  }
  return Catch::Session().run(argc, argv);
}
