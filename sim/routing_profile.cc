#include "sim/routing_profile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>

#include "core/config_tree.h"

namespace vramsim::sim {
namespace {

bool parse_field(std::string_view text, double& out) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size() && std::isfinite(out);
}

}  // namespace

Result<LayerPopularity> load_routing_profile(const std::string& path, int layers, int experts, int top_k) {
  std::ifstream in(path);
  // Diagnostics like a compiler's: FILE:LINE:COL: error: KEY: what was expected.
  const std::string key = "model.moe.routing.profile: ";
  if (!in) return Error{path + ": error: " + key + "cannot open the routing profile"};
  auto where = [&](int line, std::size_t col = 1) {
    return path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + key;
  };
  std::size_t col[3] = {1, 1, 1};  // where each field of the current row starts
  std::string line;
  if (!std::getline(in, line) || line.rfind("layer,expert,count", 0) != 0)
    return Error{where(1) + "expected the header \"layer,expert,count\""};
  std::vector<std::vector<double>> counts(static_cast<std::size_t>(layers), std::vector<double>(static_cast<std::size_t>(experts), -1.0));
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    double field[3];
    std::size_t start = 0;
    for (int f = 0; f < 3; ++f) {
      const std::size_t comma = f < 2 ? line.find(',', start) : line.size();
      col[f] = start + 1;
      if (comma == std::string::npos || !parse_field(std::string_view(line).substr(start, comma - start), field[f]))
        return Error{where(number, col[f]) + "expected \"layer,expert,count\" with numbers, got \"" +
                     config::printable(line.size() > 80 ? line.substr(0, 60) + "..." : line) + "\""};
      start = comma + 1;
    }
    const double layer = field[0], expert = field[1], count = field[2];
    if (layer < 0 || layer >= layers || std::floor(layer) != layer)
      return Error{where(number, col[0]) + "layer must be a whole number in [0, " + std::to_string(layers) + ")"};
    if (expert < 0 || expert >= experts || std::floor(expert) != expert)
      return Error{where(number, col[1]) + "expert must be a whole number in [0, " + std::to_string(experts) + ")"};
    if (count < 0) return Error{where(number, col[2]) + "a count cannot be negative"};
    double& slot = counts[static_cast<std::size_t>(layer)][static_cast<std::size_t>(expert)];
    if (slot >= 0) return Error{where(number, col[0]) + "pair (" + std::to_string(static_cast<int>(layer)) + ", " +
                                std::to_string(static_cast<int>(expert)) + ") given twice"};
    slot = count;
  }
  LayerPopularity out;
  for (int layer = 0; layer < layers; ++layer) {
    auto& w = counts[static_cast<std::size_t>(layer)];
    for (double& c : w) c = std::max(c, 0.0);
    std::sort(w.begin(), w.end(), std::greater<>());
    const auto routed = std::count_if(w.begin(), w.end(), [](double c) { return c > 0; });
    if (routed < top_k)
      return Error{path + ": error: " + key + "layer " + std::to_string(layer) + " has " + std::to_string(routed) +
                   " experts with a positive count; top-k needs at least " + std::to_string(top_k)};
    out.push_back(Popularity::from_weights(w, top_k));
  }
  return out;
}

}  // namespace vramsim::sim
