#include "sim/row_split.h"

#include <algorithm>
#include <cmath>

namespace vramsim::sim {

bool row_split_q8_1_input(bool quantized_weights, std::int64_t tokens, int mmq_max_rows) {
  return quantized_weights && (mmq_max_rows <= 0 || tokens <= mmq_max_rows);
}

std::array<RowSplitProduct, kLayerProducts> row_split_products(const workloads::ModelSpec& m, bool q8_1_input) {
  const double hidden = m.hidden_size;
  const double q_dim = static_cast<double>(m.attention.query_heads) * m.attention.head_dim;
  const double kv_dim = static_cast<double>(m.attention.kv_heads) * m.attention.head_dim;
  const double embeddings = static_cast<double>(m.vocab_size) * hidden * (m.tied_embeddings ? 1.0 : 2.0);
  const double per_layer = (m.params_total - embeddings) / m.layers;
  const double ffn = std::max(0.0, std::round((per_layer - hidden * (2.0 * q_dim + 2.0 * kv_dim)) / (3.0 * hidden)));
  // ggml-cuda.cu (b1700): src1 as q8_1 takes GGML_PAD(ne10, MATRIX_ROW_PADDING = 512) * 36 / 32
  // bytes a token (block_q8_1: 32 int8 values, a half-precision scale and sum); fp32, 4 x ne10.
  auto in = [&](double values) { return q8_1_input ? std::ceil(values / 512.0) * 512.0 * 36.0 / 32.0 : values * 4.0; };
  const double out = 4.0;  // fp32 results
  return {{
      {in(hidden), q_dim * out},   // Q
      {in(hidden), kv_dim * out},  // K
      {in(hidden), kv_dim * out},  // V
      {in(q_dim), hidden * out},   // attention output
      {in(hidden), ffn * out},     // gate
      {in(hidden), ffn * out},     // up
      {in(ffn), hidden * out},     // down
  }};
}

}  // namespace vramsim::sim
