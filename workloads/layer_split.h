// Spreading a model's layers over several cards, and whether each card's share fits.
//
// One function serves `vramsim fit --gpus N` and `vramsim run` (engine.split: pipeline), so
// that both give the same verdict: layers are dealt to the cards in proportion to each card's
// capacity (llama.cpp's default tensor-split is proportional to free memory), by largest
// remainder, every card at least one layer; a card's share of the footprint (weights, KV,
// overhead) follows its share of the layers. Units: bytes.
#pragma once

#include <string>
#include <vector>

#include "workloads/memory_budget.h"

namespace vramsim::workloads {

// Layers per card, in proportion to `capacity` (bytes), summing to `layers`: every card at
// least one when there are as many layers as cards, else the roomiest cards one each (the
// others none, as llama.cpp's -ngl 1 over two cards).
std::vector<int> layers_by_capacity(int layers, const std::vector<double>& capacity);

// Layer counts per card as llama.cpp's -ts and engine.layer_split write them: "20,13".
std::string counts_text(const std::vector<int>& counts);

// llama.cpp's own default split (-ts unset; src/llama-model.cpp, load_tensors): the offloaded
// "layers", the output layer among them when it is on a GPU, are items j = 0 .. n-1, item j on
// the first card whose cumulative share of `free` exceeds j / n (std::upper_bound). Returns
// the repeating layers per card: the output layer's item (the last) is not counted; it goes
// with the card that holds the last layer. `free`: each card's free memory, in any unit.
std::vector<int> llama_cpp_default_split(int gpu_layers, bool head_on_gpu, const std::vector<double>& free);

struct CardShare {
  int first_layer = 0;  // [first_layer, end_layer)
  int end_layer = 0;
  double need = 0;      // bytes of the footprint this card holds
  double usable = 0;    // bytes usable on this card
  bool fits() const { return need <= usable; }
};

// The footprint dealt over cards of `usable` bytes each, `layers_per_card` (from
// layers_by_capacity or the user's split) summing to `layers`.
std::vector<CardShare> split_footprint(const Footprint& total, int layers, const std::vector<int>& layers_per_card,
                                       const std::vector<double>& usable);

// "card 1 needs 22.4 GiB of 21.6 GiB usable" for the first card that does not fit; "" when all fit.
std::string first_overfull_card(const std::vector<CardShare>& shares);

}  // namespace vramsim::workloads
