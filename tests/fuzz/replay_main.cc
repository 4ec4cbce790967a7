// Replays inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer, so that the
// normal and sanitizer builds run the kept inputs (tests/fuzz/regressions/TARGET/) as ctest
// tests: `TARGET_replay FILE_OR_FOLDER...`, a folder's regular files in name order. Each input's
// name is printed before it runs, so a crash names its input. Exit status 0 when every input
// ran, 1 when none was given or one could not be read (a target that aborts ends the process).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// The inputs an argument names: the file itself, or a folder's regular files sorted by name.
std::vector<fs::path> inputs_of(const fs::path& arg) {
  if (!fs::is_directory(arg)) return {arg};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(arg))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t replayed = 0;
  for (int i = 1; i < argc; ++i)
    for (const fs::path& file : inputs_of(argv[i])) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::cerr << file.string() << ": error: cannot read the input\n";
        return 1;
      }
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::cout << "replaying " << file.string() << " (" << bytes.size() << " bytes)" << std::endl;
      (void)LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  if (replayed == 0) {
    std::cerr << "no input to replay\n";
    return 1;
  }
  std::cout << "replayed " << replayed << " inputs\n";
  return 0;
}
