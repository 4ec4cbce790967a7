#include "workloads/layer_split.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "core/units.h"

namespace vramsim::workloads {

std::vector<int> layers_by_capacity(int layers, const std::vector<double>& capacity) {
  const int cards = static_cast<int>(capacity.size());
  if (cards < 1) throw std::invalid_argument("no cards to split layers over");
  if (layers < 0) throw std::invalid_argument("a negative layer count");
  // A card with no room (its tenants hold more than its share) gets only its one layer.
  std::vector<double> room(capacity.size());
  std::transform(capacity.begin(), capacity.end(), room.begin(), [](double c) { return std::max(0.0, c); });
  const double total = std::accumulate(room.begin(), room.end(), 0.0);
  if (!(total > 0)) throw std::invalid_argument("the cards have no free memory to split layers over");
  // Every card one layer, the rest by largest remainder (ties to the lower index: deterministic).
  // Fewer layers than cards (llama.cpp's -ngl 1 on two cards): no floor, the roomiest cards
  // get them and the others none.
  const int floor = layers < cards ? 0 : 1;
  std::vector<int> out(capacity.size(), floor);
  const int rest = layers - floor * cards;
  std::vector<std::pair<double, int>> remainder;
  int dealt = 0;
  for (int c = 0; c < cards; ++c) {
    const double exact = rest * room[static_cast<std::size_t>(c)] / total;
    const int whole = static_cast<int>(std::floor(exact));
    out[static_cast<std::size_t>(c)] += whole;
    dealt += whole;
    remainder.emplace_back(-(exact - whole), c);
  }
  std::sort(remainder.begin(), remainder.end());
  for (int i = 0; i < rest - dealt; ++i) ++out[static_cast<std::size_t>(remainder[static_cast<std::size_t>(i)].second)];
  return out;
}

std::string counts_text(const std::vector<int>& counts) {
  std::string out;
  for (int n : counts) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

std::vector<int> llama_cpp_default_split(int gpu_layers, bool head_on_gpu, const std::vector<double>& free) {
  if (free.empty()) throw std::invalid_argument("no cards to split layers over");
  std::vector<double> cumulative;
  double sum = 0;
  for (double f : free) cumulative.push_back(sum += std::max(0.0, f));
  if (!(sum > 0)) throw std::invalid_argument("the cards have no free memory to split layers over");
  for (double& c : cumulative) c /= sum;
  const int items = gpu_layers + (head_on_gpu && gpu_layers > 0 ? 1 : 0);
  std::vector<int> out(free.size(), 0);
  for (int j = 0; j < items; ++j) {
    const double at = static_cast<double>(j) / items;
    const auto card = std::upper_bound(cumulative.begin(), cumulative.end(), at) - cumulative.begin();
    ++out[static_cast<std::size_t>(std::min<std::ptrdiff_t>(card, static_cast<std::ptrdiff_t>(free.size()) - 1))];
  }
  if (items > gpu_layers) {  // the output layer's item: the last card that got one
    std::size_t last = out.size() - 1;
    while (out[last] == 0) --last;
    --out[last];
  }
  return out;
}

std::vector<CardShare> split_footprint(const Footprint& total, int layers, const std::vector<int>& layers_per_card,
                                       const std::vector<double>& usable) {
  if (layers_per_card.size() != usable.size()) throw std::invalid_argument("one layer count per card expected");
  std::vector<CardShare> out;
  int first = 0;
  for (std::size_t c = 0; c < usable.size(); ++c) {
    CardShare s;
    s.first_layer = first;
    s.end_layer = first + layers_per_card[c];
    s.need = total.total * layers_per_card[c] / static_cast<double>(layers);
    s.usable = usable[c];
    first = s.end_layer;
    out.push_back(s);
  }
  if (first != layers) throw std::invalid_argument("the layer counts do not add up to the model's layers");
  return out;
}

std::string first_overfull_card(const std::vector<CardShare>& shares) {
  for (std::size_t c = 0; c < shares.size(); ++c)
    if (!shares[c].fits() && shares[c].end_layer > shares[c].first_layer) {
      const std::string need = units::format_gib(shares[c].need), usable = units::format_gib(shares[c].usable);
      // Figures that round alike say by how much the card is short.
      std::string over;
      const double short_by = shares[c].need - shares[c].usable;
      if (need == usable)
        over = short_by < units::kMiB ? fmt::format(" ({:.0f} KiB short)", short_by / 1024.0)
                                      : fmt::format(" ({:.1f} MiB short)", short_by / units::kMiB);
      return "card " + std::to_string(c) + " (layers " + std::to_string(shares[c].first_layer) + "-" +
             std::to_string(shares[c].end_layer - 1) + ") needs " + need + " of " + usable + " usable" + over;
    }
  return "";
}

}  // namespace vramsim::workloads
