// The bytes a prompt token's activations move through VRAM in one layer outside the matrix
// products' own weight reads, as llama.cpp's CUDA backend runs its graph: the element-wise
// kernels (norms, RoPE, the KV-cache stores, residual adds, SiLU and the gate product) and each
// matrix product's input and output conversions. They are memory-bound kernels of their own, one
// after another on the card's stream, so a prompt micro-batch pays their bytes at the card's
// bandwidth on top of its GEMMs (engine.prefill_activation_traffic). Bytes per token and layer.
#pragma once

#include "workloads/model.h"

namespace vramsim::sim {

// A layer's widths, derived from the model file's own counts (no key of its own): the hidden
// size h, the query and KV projections' widths (heads x head_dim), and the FFN's intermediate
// width per token: a dense layer's from its parameters left after attention (3 matrices of h x
// f: (params per layer - attention) / 3h), a routed expert's from expert_params / 3h, k of them
// per token on an MoE layer.
struct LayerWidths {
  double hidden = 0;
  double query = 0;         // query_heads x head_dim
  double kv = 0;            // kv_heads x head_dim (K, and again V)
  double dense_ffn = 0;     // the dense FFN (and shared experts) per layer, averaged over the layers
  double routed_ffn = 0;    // top-k x one routed expert's width, averaged over the layers
  double moe_share = 0;     // the share of layers with routed experts
  int experts_per_token = 0;
};
LayerWidths layer_widths(const workloads::ModelSpec& model);

// The path a prompt micro-batch's matrix products take, which decides their conversions.
enum class GemmPath {
  Mmq,     // quantized weights, llama.cpp's MMQ kernels: each product quantizes its fp32 input to q8_1
  Cublas,  // 16-bit weights, or quantized ones dequantized for cuBLAS (engine.mmq_max_rows): the
           // fp32 input converted to fp16, the fp16 output back to fp32
  InKernel,  // a unified-memory part (Metal): ASSUMED to convert inside its product kernels
             // (kernel_mul_mm loads the fp32 input into threadgroup memory), no kernels of their own
  Sgemm,     // a row slice of llama.cpp's row split on cuBLAS's path: cublasSgemm reads the fp32
             // input and writes the fp32 output itself, no conversions (ggml_cuda_op_mul_mat_cublas)
};

// One token's bytes in one layer. From the graph llama.cpp builds for a llama layer
// (llm_build_llama; the node list behind configs/engines/llama.cpp.yaml's
// metal_dispatches_per_layer), fp32 activations of 4 bytes, each kernel reading its inputs and
// writing its output once:
//   rms_norm + mul, twice:                 2 x (8h + 8h)
//   rope on Q and K:                       8q + 8kv
//   cpy of K and V into the cache:         2 x (4 + c) kv, c the cache's bytes per element
//   cont of the attention output:          8q, when attention is unfused (unfused_attention)
//   residual adds, twice:                  2 x 12h
//   silu and mul on the FFN's width f:     8f + 12f
//   the products' inputs (Q, K, V, gate, up read h; the output projection q; down f):
//     MMQ: quantize_q8_1, 4 + 1.125 bytes per element; cuBLAS: to fp16, 4 + 2 (ggml-cuda.cu
//     ggml_cuda_op_mul_mat_cublas, 2024: "convert src0 and src1 to fp16, multiply as fp16,
//     convert dst to fp32")
//   the products' outputs, cuBLAS's fp16 path only: fp16 to fp32, 2 + 4 bytes per element of each output
//     (q + 2kv + h + 2f + h)
//   an MoE layer's combine: the routing weights' mul (8 k h) and the k - 1 adds of the experts'
//     outputs (12 h each).
// Not counted: the router's small product, softmax and top-k; the row gathers of the expert
// products (mul_mat_id); the attention scores (engine.attention_score_bytes).
double activation_bytes_per_token_layer(const LayerWidths& w, GemmPath path, bool unfused_attention,
                                        double kv_cache_bytes_per_element);

}  // namespace vramsim::sim
