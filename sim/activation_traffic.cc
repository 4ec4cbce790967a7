#include "sim/activation_traffic.h"

#include <algorithm>

namespace vramsim::sim {

LayerWidths layer_widths(const workloads::ModelSpec& m) {
  LayerWidths w;
  w.hidden = m.hidden_size;
  w.query = static_cast<double>(m.attention.query_heads) * m.attention.head_dim;
  w.kv = static_cast<double>(m.attention.kv_heads) * m.attention.head_dim;
  if (m.layers <= 0 || w.hidden <= 0) return w;
  const double h = w.hidden;
  const double embeddings = static_cast<double>(m.vocab_size) * h * (m.tied_embeddings ? 1.0 : 2.0);
  const double attention = 2.0 * h * w.query + 2.0 * h * w.kv;  // Q and O, K and V
  double per_layer = (m.params_active - embeddings) / m.layers - attention;
  if (m.moe) {
    const double routed = static_cast<double>(m.moe->experts_per_token) * m.moe->expert_params;
    w.moe_share = static_cast<double>(m.moe->layers) / m.layers;
    w.experts_per_token = m.moe->experts_per_token;
    w.routed_ffn = w.moe_share * routed / (3.0 * h);
    per_layer -= w.moe_share * routed;
  }
  w.dense_ffn = std::max(0.0, per_layer) / (3.0 * h);
  return w;
}

double activation_bytes_per_token_layer(const LayerWidths& w, GemmPath path, bool unfused_attention,
                                        double kv_cache_bytes_per_element) {
  const double h = w.hidden, q = w.query, kv = w.kv, f = w.dense_ffn + w.routed_ffn;
  double bytes = 2.0 * (8.0 * h + 8.0 * h)                 // rms_norm + mul, twice
                 + 8.0 * q + 8.0 * kv                      // rope on Q and K
                 + 2.0 * (4.0 + kv_cache_bytes_per_element) * kv  // K and V into the cache
                 + (unfused_attention ? 8.0 * q : 0.0)     // cont of the attention output
                 + 2.0 * 12.0 * h                          // residual adds
                 + 20.0 * f;                               // silu, mul
  const double inputs = 5.0 * h + q + f;                   // Q, K, V, gate, up; output; down
  if (path == GemmPath::Mmq) {
    bytes += (4.0 + 1.125) * inputs;                       // quantize_q8_1
  } else if (path == GemmPath::Cublas) {
    bytes += (4.0 + 2.0) * inputs;                         // to fp16
    bytes += (2.0 + 4.0) * (q + 2.0 * kv + h + 2.0 * f + h);  // fp16 outputs to fp32
  }
  if (w.experts_per_token > 0)  // the routing weights' mul and the adds of the k outputs
    bytes += w.moe_share * (8.0 * w.experts_per_token * h + 12.0 * h * (w.experts_per_token - 1));
  return bytes;
}

}  // namespace vramsim::sim
