#include "workloads/hf_import.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/config_reader.h"

namespace vramsim::workloads {
namespace {

using config::Node;

// Read-only view of the JSON object with typed, optional lookups (HF configs carry many keys
// we do not need, so unknown keys are not errors here).
class Fields {
 public:
  Fields(const Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  const Node* get(const char* key) const {
    const Node* n = node_.find(key);
    return (n && !n->is_null()) ? n : nullptr;
  }
  std::optional<double> number(const char* key) const {
    const Node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_scalar()) config::fail(*n, key, "expected a number, got " + n->describe());
    try {
      std::size_t used = 0;
      double v = std::stod(n->text(), &used);
      if (used != n->text().size() || !std::isfinite(v)) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      config::fail(*n, key, "expected a number, got " + n->describe());
    }
  }
  double require(const char* key) const {
    auto v = number(key);
    if (!v) config::fail(node_, key, std::string("missing field \"") + key + "\" in " + path_);
    return *v;
  }
  int integer(const char* key, int fallback) const {
    auto v = number(key);
    return v ? static_cast<int>(*v) : fallback;
  }
  bool flag(const char* key, bool fallback) const {
    const Node* n = get(key);
    return n ? n->text() == "true" : fallback;
  }
  std::string text(const char* key, std::string fallback) const {
    const Node* n = get(key);
    return (n && n->is_scalar()) ? n->text() : fallback;
  }

 private:
  const Node& node_;
  std::string path_;
};

std::string format_params(double p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4ge9", p / 1e9);
  return buf;
}

std::string native_format_of(const Fields& f, const Fields& top) {
  const Node* quant = top.get("quantization_config");
  if (quant && quant->is_map()) {
    const Node* method = quant->find("quant_method");
    if (method && method->text() == "mxfp4") return "MXFP4";
    if (method && method->text() == "fp8") return "FP8";
  }
  std::string dtype = f.text("torch_dtype", top.text("torch_dtype", "bfloat16"));
  if (dtype == "float16") return "F16";
  if (dtype == "float32") return "F32";
  return "BF16";
}

// transformers' defaults for fields that configs of these types may omit.
struct ClassDefaults {
  double vocab_size = 0;
  double max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
};
ClassDefaults class_defaults(const std::string& model_type) {
  if (model_type == "gemma3_text" || model_type == "gemma3") return {262208, 131072, true};  // Gemma3TextConfig
  return {};
}

ImportedModel build(const Node& root, const std::string& path, const std::string& name) {
  if (!root.is_map()) config::fail(root, "", "expected a JSON object");
  Fields top(root, path);
  const Node* text_config = root.find("text_config");  // multimodal wrappers (Gemma 3)
  Fields f = (text_config && text_config->is_map()) ? Fields(*text_config, path) : top;

  ModelSpec m;
  m.name = name;
  m.display_name = name;
  const double hidden = f.require("hidden_size");
  m.hidden_size = static_cast<int>(hidden);
  m.layers = static_cast<int>(f.require("num_hidden_layers"));
  // Fields left at their transformers class defaults are absent from the file.
  const ClassDefaults defaults = class_defaults(f.text("model_type", top.text("model_type", "")));
  const auto vocab = f.number("vocab_size") ? f.number("vocab_size") : top.number("vocab_size");
  if (!vocab && defaults.vocab_size <= 0) config::fail(root, "vocab_size", "missing field \"vocab_size\" in " + path);
  m.vocab_size = static_cast<int>(vocab.value_or(defaults.vocab_size));
  m.max_context = static_cast<std::int64_t>(
      f.number("max_position_embeddings").value_or(defaults.max_position_embeddings));
  m.native_format = native_format_of(f, top);

  const int heads = static_cast<int>(f.require("num_attention_heads"));
  const int kv_heads = f.integer("num_key_value_heads", heads);
  const double head_dim = f.number("head_dim").value_or(hidden / heads);
  Attention& at = m.attention;
  at.query_heads = heads;
  at.kv_heads = kv_heads;
  at.head_dim = static_cast<int>(head_dim);

  // Attention parameters per layer.
  double attention_params = 0;
  if (auto kv_lora = f.number("kv_lora_rank")) {  // DeepSeek multi-head latent attention
    const double rope = f.require("qk_rope_head_dim");
    const double nope = f.require("qk_nope_head_dim");
    const double v_dim = f.require("v_head_dim");
    at.layout = AttentionLayout::Mla;
    at.latent_dim = static_cast<int>(*kv_lora + rope);
    at.head_dim = static_cast<int>(nope + rope);
    const double q_heads_dim = heads * (nope + rope);
    if (auto q_lora = f.number("q_lora_rank"))
      attention_params += hidden * *q_lora + *q_lora * q_heads_dim;
    else
      attention_params += hidden * q_heads_dim;
    attention_params += hidden * (*kv_lora + rope) + *kv_lora * heads * (nope + v_dim) + heads * v_dim * hidden;
  } else {
    at.layout = kv_heads == heads ? AttentionLayout::Mha : AttentionLayout::Gqa;
    attention_params = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2;
  }

  // Sliding windows: an explicit list of layer types, or a period ("one global every N").
  if (auto window = f.number("sliding_window")) {
    int windowed = 0;
    if (const Node* types = f.get("layer_types"); types && types->is_sequence()) {
      for (const auto& t : types->items()) windowed += t.text() == "sliding_attention" ? 1 : 0;
    } else if (auto pattern = f.number("sliding_window_pattern")) {
      for (int i = 0; i < m.layers; ++i) windowed += ((i + 1) % static_cast<int>(*pattern) != 0) ? 1 : 0;
    } else if (f.flag("use_sliding_window", false)) {
      windowed = m.layers;
    }
    if (windowed > 0) at.sliding_window = SlidingWindow{static_cast<std::int64_t>(*window), windowed};
  }

  // MLP / MoE parameters.
  const int experts = f.integer("num_local_experts", f.integer("num_experts", f.integer("n_routed_experts", 0)));
  const double dense_ffn = f.number("intermediate_size").value_or(0);
  double mlp_params_total = 0;
  double mlp_params_active = 0;
  if (experts > 0) {
    const int top_k = f.integer("num_experts_per_tok", f.integer("experts_per_token", 0));
    if (top_k <= 0) config::fail(root, "num_experts_per_tok", "an MoE config needs num_experts_per_tok");
    if (top_k > experts)
      config::fail(root, "num_experts_per_tok",
                   "top-k (" + std::to_string(top_k) + ") exceeds the expert count (" + std::to_string(experts) + ")");
    const double expert_ffn = f.number("moe_intermediate_size").value_or(dense_ffn);
    const double expert_params = 3 * hidden * expert_ffn;
    const int dense_layers = f.integer("first_k_dense_replace", 0);
    const int moe_layers = m.layers - dense_layers;
    int shared = f.integer("n_shared_experts", 0);
    double shared_params = shared * expert_params;
    if (auto shared_ffn = f.number("shared_expert_intermediate_size"); shared_ffn && *shared_ffn > 0) {
      shared = 1;
      shared_params = 3 * hidden * *shared_ffn;
    }
    const double router = hidden * experts;
    mlp_params_total = dense_layers * 3 * hidden * dense_ffn + moe_layers * (experts * expert_params + shared_params + router);
    mlp_params_active = dense_layers * 3 * hidden * dense_ffn + moe_layers * (top_k * expert_params + shared_params + router);
    m.moe = MoeSpec{moe_layers, experts, top_k, shared, expert_params, std::nullopt};
  } else {
    if (dense_ffn <= 0) config::fail(root, "intermediate_size", "missing field \"intermediate_size\" in " + path);
    mlp_params_total = mlp_params_active = m.layers * 3 * hidden * dense_ffn;
  }

  const bool tied = f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", defaults.tie_word_embeddings));
  const double embeddings = m.vocab_size * hidden * (tied ? 1 : 2);
  const double norms = m.layers * 2 * hidden + hidden;
  const double common = embeddings + norms + m.layers * attention_params;
  m.params_total = common + mlp_params_total;
  m.params_active = common + mlp_params_active;

  std::ostringstream y;
  y << "# Imported by `vramsim import-model` from " << path << ".\n"
    << "# Parameter counts are computed from the tensor shapes the config implies (biases ignored).\n"
    << "name: " << m.name << "\n"
    << "display_name: " << m.display_name << "\n"
    << "source: " << path << "\n"
    << "family: " << (m.is_moe() ? "moe" : "dense") << "\n"
    << "params:\n  total: " << format_params(m.params_total) << "\n  active: " << format_params(m.params_active) << "\n"
    << "layers: " << m.layers << "\n"
    << "hidden_size: " << m.hidden_size << "\n"
    << "vocab_size: " << m.vocab_size << "\n"
    << "max_context: " << m.max_context << "\n"
    << "native_format: " << m.native_format << "\n"
    << "attention:\n"
    << "  layout: " << (at.layout == AttentionLayout::Mla ? "mla" : at.layout == AttentionLayout::Mha ? "mha" : "gqa") << "\n"
    << "  query_heads: " << at.query_heads << "\n"
    << "  kv_heads: " << at.kv_heads << "\n"
    << "  head_dim: " << at.head_dim << "\n";
  if (at.layout == AttentionLayout::Mla) y << "  latent_dim: " << at.latent_dim << "\n";
  if (at.sliding_window)
    y << "  sliding_window:\n    window: " << at.sliding_window->window_tokens << "\n    layers: " << at.sliding_window->layers
      << "\n";
  if (m.moe)
    y << "moe:\n  layers: " << m.moe->layers << "\n  experts: " << m.moe->experts << "\n  experts_per_token: "
      << m.moe->experts_per_token << "\n  shared_experts: " << m.moe->shared_experts << "\n  expert_params: "
      << format_params(m.moe->expert_params) << "\n";
  return ImportedModel{m, y.str()};
}

}  // namespace

Result<ImportedModel> import_hf_config(const std::string& path, const std::string& name) {
  auto root = config::load_yaml_file(path);
  if (!root) return root.error();
  return config::decode<ImportedModel>([&] { return build(*root, path, name); });
}

}  // namespace vramsim::workloads
