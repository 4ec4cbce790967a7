// The floor under vramsim's configuration loading: yaml-cpp's own parser reading a file with
// an event handler that does nothing. Prints the wall seconds of the parse alone (the file read
// into memory first, as vramsim does). Built and run by bench/config_load.sh; not part of the
// project's build.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace {
struct Ignore : YAML::EventHandler {
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: yaml_events FILE\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  std::istringstream in(text.str());
  const auto start = std::chrono::steady_clock::now();
  YAML::Parser parser(in);
  Ignore ignore;
  parser.HandleNextDocument(ignore);
  std::printf("%.2f\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}
