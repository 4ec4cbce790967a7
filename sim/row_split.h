// llama.cpp's row split (--split-mode row): what one layer's split matrix products copy between
// the main card and the others. Each weight matrix of a repeating layer is split by rows over
// the cards; for each product the main card copies the product's input to every other card,
// each card multiplies its rows, and the slices of the result come back to the main card, which
// runs everything else (norms, RoPE, attention, the KV cache). A batch is multiplied 128 tokens
// at a time, each chunk with its own copies and events. Sources (ggml-cuda.cu at llama.cpp tag
// b1700, ggml_cuda_op_mul_mat, and at c392e509, 2025): docs/engine-code-notes.md ("Row split").
#pragma once

#include <array>
#include <cstdint>

#include "workloads/model.h"

namespace vramsim::sim {

inline constexpr int kLayerProducts = 7;             // Q, K, V, attention output, gate, up, down
inline constexpr std::int64_t kRowSplitChunk = 128;  // MUL_MAT_SRC1_COL_STRIDE: tokens per round of copies

// One split matrix product, per token: the bytes of its input sent to each other card and of
// its whole output (every card's slice together, fp32).
struct RowSplitProduct {
  double input_bytes = 0;
  double output_bytes = 0;
};

// Whether a product's input goes to the other cards quantized to q8_1 (36 bytes per 32 values,
// each row padded to 512 values; the main card quantizes it once): for quantized weights run by
// the MMQ/MMVQ kernels, i.e. every batch when `mmq_max_rows` is 0, else batches of at most
// `mmq_max_rows` tokens (larger ones go to cuBLAS, which takes fp32). F16 weights: fp32.
bool row_split_q8_1_input(bool quantized_weights, std::int64_t tokens, int mmq_max_rows);

// The split products of one layer of a dense model with a gated MLP (as llama.cpp's graph for
// the Llama family builds it: Q, K, V, output, gate, up, down, each its own product). The
// MLP's width is what the layer's parameters leave after attention:
//   ffn = (params per layer - hidden x (2 x q_dim + 2 x kv_dim)) / (3 x hidden),
// params per layer = (params_total - embedding table and LM head) / layers.
std::array<RowSplitProduct, kLayerProducts> row_split_products(const workloads::ModelSpec& model, bool q8_1_input);

}  // namespace vramsim::sim
