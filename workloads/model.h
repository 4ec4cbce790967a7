// A transformer model's architecture, as far as memory and bandwidth are concerned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config_tree.h"
#include "workloads/formats.h"

namespace vramsim::workloads {

// How the KV cache is laid out (see memory_budget.h for the byte counts).
enum class AttentionLayout {
  Gqa,  // grouped-query: kv_heads < query_heads
  Mha,  // full multi-head: kv_heads == query_heads
  Mla,  // multi-head latent: one compressed vector of latent_dim elements per token per layer
};

struct SlidingWindow {
  std::int64_t window_tokens = 0;  // windowed layers keep at most this many tokens
  int layers = 0;                  // how many layers are windowed; the others are global
};

struct Attention {
  AttentionLayout layout = AttentionLayout::Gqa;
  int query_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int latent_dim = 0;                         // MLA only
  std::optional<SlidingWindow> sliding_window;
};

// How tokens pick experts, as measured on a workload (see sim/routing.h for the model).
struct RoutingSpec {
  // Measured (coverage -> hit rate) points of a hottest-first cache, medians over requests.
  std::vector<std::pair<double, double>> coverage_points;
  // Or an engine's measured profile: CSV "layer,expert,count" (path resolved against the file
  // that names it). Exactly one of the two is given.
  std::string profile;
  double request_share_median = 0;  // share of a request's look-ups that follow its own preference
  double request_share_sigma = 0;   // lognormal spread of that share across requests
  double locality = 0;              // probability a token repeats the previous token's experts
};

struct MoeSpec {
  int layers = 0;             // layers with routed experts
  int experts = 0;            // routed experts per MoE layer
  int experts_per_token = 0;  // top-k
  int shared_experts = 0;     // always-on experts per MoE layer
  double expert_params = 0;   // parameters of one routed expert
  std::optional<RoutingSpec> routing;
};

struct ModelSpec {
  std::string name;
  std::string display_name;
  double params_total = 0;    // parameters, embeddings included
  double params_active = 0;   // parameters read per generated token
  int layers = 0;
  int hidden_size = 0;
  int vocab_size = 0;
  // The LM head is the embedding table (Hugging Face's tie_word_embeddings): params.total holds
  // that matrix once. llama.cpp still keeps the table in RAM and a copy on the output layer's
  // GPU (TENSOR_DUPLICATED), so the VRAM holds as much as for untied weights.
  bool tied_embeddings = false;
  std::int64_t max_context = 0;  // tokens
  std::string native_format;     // a weights format name
  // The routed experts' format when the released file stores them in another one than the rest
  // (a GGUF file's expert tensors); empty: native_format.
  std::string native_expert_format;
  // Formats the model file defines for itself (`file_formats:`): a GGUF file's own tensor types
  // as their exact average bits per weight, named GGUF and GGUF_EXPERTS.
  std::vector<WeightFormat> file_formats;
  const std::string& expert_format_name() const { return native_expert_format.empty() ? native_format : native_expert_format; }
  // The release line the model belongs to (`lineage: llama`, `qwen3`, `deepseek`; the file's
  // name when absent): `fit` suggests a smaller model of the same lineage first.
  std::string lineage;
  // The checkpoint carries a multi-token-prediction head (DeepSeek-V3's nextn layer): MTP
  // speculative decoding (engine.speculative.kind: mtp) needs one and is refused without it.
  bool mtp_head = false;
  Attention attention;
  std::optional<MoeSpec> moe;

  bool is_moe() const { return moe.has_value(); }
  // MoE layers are the last moe->layers ones: a model's dense layers come first (DeepSeek's
  // first_k_dense_replace). The first layer with routed experts (layers for a dense model).
  int first_moe_layer() const { return moe ? layers - moe->layers : layers; }
  // Layers with routed experts among [first, end).
  int moe_layers_in(int first, int end) const {
    const int lo = first > first_moe_layer() ? first : first_moe_layer();
    return end > lo ? end - lo : 0;
  }
};

// The bounds decode_model holds a model description to: far beyond any published model, so
// that what is past them is a typo or overflow, never a model (the HF import checks a
// config.json's fields against the same bounds, at the fields).
namespace model_limits {
inline constexpr int kLayers = 100000;
inline constexpr int kHiddenSize = 1 << 20;
inline constexpr int kVocabSize = 1 << 24;
inline constexpr std::int64_t kContext = std::int64_t{1} << 40;  // max_context, sliding windows
inline constexpr int kHeads = 1 << 16;                           // query heads, KV heads
inline constexpr int kHeadDim = 1 << 16;
inline constexpr int kLatentDim = 1 << 20;
inline constexpr int kExperts = 1 << 20;                         // routed experts, and top-k
inline constexpr int kSharedExperts = 1 << 10;
inline constexpr double kParams = 1e15;                          // params.total, one expert
}  // namespace model_limits

// Decodes a resolved model description (docs/config-reference.md). Throws ConfigError on
// impossible architectures: top-k > experts, MHA with kv_heads != query_heads, query heads
// not a multiple of kv heads, active > total parameters, routed experts larger than the model.
ModelSpec decode_model(const config::Node& node, const std::string& key_path);

}  // namespace vramsim::workloads
