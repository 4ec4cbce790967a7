#include "workloads/hf_import.h"

#include "core/catalogue.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "core/config_reader.h"
#include "core/json_value.h"
#include "workloads/params_text.h"

namespace vramsim::workloads {
namespace {

using config::Node;

// A field the import needs is absent from `path`'s object `at` (`note` says which use needs it).
[[noreturn]] void missing_field(const Node& at, const std::string& key, const std::string& path, const std::string& note = "") {
  config::fail(at, key, "missing field \"" + key + "\"" + note + " in " + path);
}

// Read-only view of the JSON object with typed, optional lookups (HF configs carry many keys
// we do not need, so unknown keys are not errors here).
class Fields {
 public:
  Fields(const Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  const Node* get(const char* key) const {
    const Node* n = node_.find(key);
    return (n && !n->is_null()) ? n : nullptr;
  }
  // The key's value even when it is null (get() treats null as absent).
  const Node* find(const char* key) const { return node_.find(key); }
  std::optional<double> number(const char* key) const {
    const Node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_scalar()) config::fail(*n, key, "expected a number, got " + n->describe());
    // JSON's "32" is a string: config.json was not written by transformers' own writer.
    if (n->quoted()) config::fail(*n, key, "expected a number, got the string " + n->describe());
    try {
      std::size_t used = 0;
      double v = std::stod(n->text(), &used);
      if (used != n->text().size() || !std::isfinite(v)) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      config::fail(*n, key, "expected a number, got " + n->describe());
    }
  }
  // A whole number in [min, max] (max defaults to 2^31 - 1); `fallback` when absent (the
  // fallback is not range-checked: callers pass class defaults or sentinels).
  std::optional<std::int64_t> whole(const char* key, std::int64_t min,
                                    std::int64_t max = std::numeric_limits<int>::max()) const {
    auto v = number(key);
    if (!v) return std::nullopt;
    if (*v != std::floor(*v) || *v < static_cast<double>(min) || *v > static_cast<double>(max))
      config::fail(*get(key), key,
                   "must be a whole number " +
                       (max == std::numeric_limits<int>::max()
                            ? ">= " + std::to_string(min)
                            : "from " + std::to_string(min) + " to " + std::to_string(max)) +
                       ", got " + get(key)->text());
    return static_cast<std::int64_t>(*v);
  }
  int integer(const char* key, int min, int fallback) const {
    auto v = whole(key, min);
    return v ? static_cast<int>(*v) : fallback;
  }
  int require_integer(const char* key, int min, int max = std::numeric_limits<int>::max()) const {
    auto v = whole(key, min, max);
    if (!v) missing_field(node_, key, path_);
    return static_cast<int>(*v);
  }
  [[noreturn]] void fail(const char* key, const std::string& message) const {
    const Node* n = get(key);
    config::fail(n ? *n : node_, key, message);
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

std::string quoted(const std::string& text) { return yaml_quoted(text); }

// The checkpoint's weights format. A quantization method the catalogue has no format for
// (AWQ, GPTQ, bitsandbytes, ...) leaves the unquantised dtype, with a note saying so.
std::string native_format_of(const Fields& f, const Fields& top, std::vector<std::string>& notes) {
  const Node* quant = top.get("quantization_config");
  if (quant && quant->is_map()) {
    const Node* method = quant->find("quant_method");
    if (method && method->text() == "mxfp4") return "MXFP4";
    if (method && method->text() == "fp8") return "FP8";
    const Node* bits = quant->find("bits");
    const Node* four = quant->find("load_in_4bit");
    const std::string width = bits && bits->is_scalar() && !bits->text().empty() &&
                                      bits->text().find_first_not_of("0123456789") == std::string::npos
                                  ? bits->text() + "-bit "
                              : four && four->is_scalar() && four->text() == "true" ? "4-bit "
                                                                                      : "";
    notes.push_back("quantization_config.quant_method " + (method && method->is_scalar() ? quoted(method->text()) : std::string("?")) +
                    " (" + width + "weights) is not one of the catalogue's formats: native_format is the unquantised dtype; "
                    "size the checkpoint with a weights format of as many bits (--quant Q4_0 for 4 bits, Q8_0 for 8)");
  }
  // transformers writes `dtype` since 4.56, `torch_dtype` before. A null one says the dtype is
  // unknown: the checkpoint's size depends on it, so it is not taken as BF16.
  const bool named = f.get("dtype") || top.get("dtype") || f.get("torch_dtype") || top.get("torch_dtype");
  if (!named)
    for (const Fields* fields : {&f, &top})
      for (const char* k : {"dtype", "torch_dtype"})
        if (const Node* n = fields->find(k); n && n->is_null())
          config::fail(*n, k, std::string("is null: the checkpoint's dtype (bfloat16, float16, float32 or float8_e4m3fn) is "
                                          "needed, its size depends on it"));
  // None at all (configs written before transformers recorded it): bfloat16, the dtype of
  // most released checkpoints, said in a note rather than assumed silently.
  if (!named)
    notes.push_back("the config names no dtype (torch_dtype): native_format is BF16, the dtype of most released "
                    "checkpoints; if the checkpoint's files are F16 or F32, edit native_format (its size depends on it)");
  const char* key = f.get("dtype") || top.get("dtype") ? "dtype" : "torch_dtype";
  const std::string dtype = f.text("dtype", top.text("dtype", f.text("torch_dtype", top.text("torch_dtype", "bfloat16"))));
  if (dtype == "bfloat16") return "BF16";
  if (dtype == "float16") return "F16";
  if (dtype == "float32") return "F32";
  if (dtype == "float8_e4m3fn") return "FP8";
  (f.get(key) ? f : top).fail(key, "expected one of bfloat16, float16, float32, float8_e4m3fn, got " + quoted(dtype) +
                                       ": the checkpoint's size depends on it");
}

// YAML double-quoted scalar: `text` with backslashes, quotes and control characters escaped.
// transformers' class defaults for fields that configs of these types may omit (the hub
// files only list what differs from them). Unset optionals: no default, the field is required.
struct ClassDefaults {
  std::optional<double> vocab_size;
  double max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
  std::optional<double> num_attention_heads, num_key_value_heads, head_dim, sliding_window, sliding_window_pattern;
};
ClassDefaults class_defaults(const std::string& model_type) {
  ClassDefaults d;
  if (model_type == "gemma3_text" || model_type == "gemma3") {  // Gemma3TextConfig.__init__
    d.vocab_size = 262208;
    d.max_position_embeddings = 131072;
    d.tie_word_embeddings = true;
    d.num_attention_heads = 8;
    d.num_key_value_heads = 4;
    d.head_dim = 256;
    d.sliding_window = 4096;
    d.sliding_window_pattern = 6;  // "one global layer in 6"; newer releases write _sliding_window_pattern
  }
  return d;
}

ImportedModel build(const Node& root, const std::string& path, const std::string& name) {
  if (!root.is_map()) config::fail(root, "", "expected a JSON object in " + path);
  Fields top(root, path);
  const Node* text_config = root.find("text_config");  // multimodal wrappers (Gemma 3)
  Fields f = (text_config && text_config->is_map()) ? Fields(*text_config, path) : top;
  // Architectures whose layers this import cannot describe: refused rather than imported wrong.
  const std::string model_type = f.text("model_type", top.text("model_type", ""));
  if (model_type == "llama4" || model_type == "llama4_text")
    f.fail("model_type", "Llama 4 is not imported: its MoE layers carry a shared expert beside the routed ones, "
                         "and interleave_moe_layer_step mixes dense and MoE layers, which the catalogue's model does not "
                         "describe (its active parameters would come out ~40% low); write the model file by hand");
  if (f.get("full_attention_interval") || f.get("linear_num_key_heads"))
    f.fail(f.get("full_attention_interval") ? "full_attention_interval" : "linear_num_key_heads",
           "hybrid linear attention (Qwen3-Next's Gated DeltaNet layers, full attention only every few layers) is not "
           "imported: those layers keep a fixed-size state, not a KV cache, and the catalogue's model would give every "
           "layer a KV cache; write the model file by hand");
  if (const Node* types = f.get("layer_types"); types && types->is_sequence())
    for (const auto& t : types->items())
      if (t.text() == "linear_attention")
        f.fail("layer_types", "linear-attention layers are not imported (they keep a fixed-size state, not a KV cache); "
                              "write the model file by hand");
  // Fields left at their transformers class defaults are absent from the file.
  const ClassDefaults defaults = class_defaults(model_type);
  // A whole number in [min, max] from the file, else the class default, else missing.
  auto count = [&](const char* key, int min, int max, std::optional<double> fallback) {
    if (auto v = f.whole(key, min, max)) return static_cast<int>(*v);
    if (!fallback) missing_field(root, key, path);
    return static_cast<int>(*fallback);
  };

  ModelSpec m;
  m.name = name;
  m.display_name = name;
  // Every count is held to the catalogue's bounds (model_limits) here, at its field: the model
  // written must load, and the arithmetic below is then far from overflow.
  m.hidden_size = f.require_integer("hidden_size", 1, model_limits::kHiddenSize);
  const double hidden = m.hidden_size;
  m.layers = f.require_integer("num_hidden_layers", 1, model_limits::kLayers);
  const double layers = m.layers;
  if (auto v = f.whole("vocab_size", 1, model_limits::kVocabSize))
    m.vocab_size = static_cast<int>(*v);
  else if (auto t = top.whole("vocab_size", 1, model_limits::kVocabSize))
    m.vocab_size = static_cast<int>(*t);
  else if (defaults.vocab_size)
    m.vocab_size = static_cast<int>(*defaults.vocab_size);
  else
    missing_field(root, "vocab_size", path);
  std::vector<std::string> notes;
  if (auto given = f.whole("max_position_embeddings", 1, model_limits::kContext)) {
    m.max_context = *given;
  } else {
    // The class's default, said in a note: a fit or run at a longer context is then refused.
    m.max_context = static_cast<std::int64_t>(defaults.max_position_embeddings);
    notes.push_back("the config gives no max_position_embeddings: max_context is " + std::to_string(m.max_context) +
                    ", the default this import takes for model_type " + quoted(model_type) +
                    "; edit max_context in the model file if the model was trained longer");
  }
  m.native_format = native_format_of(f, top, notes);

  const int heads = count("num_attention_heads", 1, model_limits::kHeads, defaults.num_attention_heads);
  const int kv_heads = count("num_key_value_heads", 1, model_limits::kHeads, defaults.num_key_value_heads.value_or(heads));
  if (kv_heads > heads || heads % kv_heads != 0)
    f.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(heads) + "), got " +
                                      std::to_string(kv_heads));
  std::optional<double> derived_head_dim;
  if (hidden / heads == std::floor(hidden / heads)) derived_head_dim = hidden / heads;
  const int head_dim_int =
      count("head_dim", 1, model_limits::kHeadDim, defaults.head_dim ? defaults.head_dim : derived_head_dim);
  if (head_dim_int > model_limits::kHeadDim)  // derived: hidden_size / num_attention_heads
    f.fail("num_attention_heads", "gives a head_dim of hidden_size (" + std::to_string(m.hidden_size) + ") / " +
                                      std::to_string(heads) + " = " + std::to_string(head_dim_int) + ", above " +
                                      std::to_string(model_limits::kHeadDim) + "; give head_dim");
  const double head_dim = head_dim_int;
  Attention& at = m.attention;
  at.query_heads = heads;
  at.kv_heads = kv_heads;
  at.head_dim = head_dim_int;

  // Attention parameters per layer.
  double attention_params = 0;
  if (auto kv_lora = f.whole("kv_lora_rank", 1)) {  // DeepSeek multi-head latent attention
    const double rope = f.require_integer("qk_rope_head_dim", 1, model_limits::kHeadDim);
    const double nope = f.require_integer("qk_nope_head_dim", 1, model_limits::kHeadDim);
    const double v_dim = f.require_integer("v_head_dim", 1, model_limits::kHeadDim);
    if (static_cast<double>(*kv_lora) + rope > model_limits::kLatentDim)
      f.fail("kv_lora_rank", "with qk_rope_head_dim (" + std::to_string(static_cast<int>(rope)) +
                                 ") gives a latent vector of " + std::to_string(*kv_lora + static_cast<int>(rope)) +
                                 " elements, above " + std::to_string(model_limits::kLatentDim));
    at.layout = AttentionLayout::Mla;
    at.latent_dim = static_cast<int>(static_cast<double>(*kv_lora) + rope);
    // The catalogue's per-head dimension for attention FLOPs is the value width
    // (v_head_dim, = qk_nope_head_dim in DeepSeek V2/V3), not the 192 of q/k with RoPE.
    at.head_dim = static_cast<int>(v_dim);
    const double q_heads_dim = heads * (nope + rope);
    if (auto q_lora = f.whole("q_lora_rank", 1))
      attention_params += hidden * static_cast<double>(*q_lora) + static_cast<double>(*q_lora) * q_heads_dim;
    else
      attention_params += hidden * q_heads_dim;
    const double kv = static_cast<double>(*kv_lora);
    attention_params += hidden * (kv + rope) + kv * heads * (nope + v_dim) + heads * v_dim * hidden;
  } else {
    at.layout = kv_heads == heads ? AttentionLayout::Mha : AttentionLayout::Gqa;
    attention_params = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2;
  }

  // Sliding windows: an explicit list of layer types, or a period ("one global every N"), or
  // Qwen2's use_sliding_window (layers from max_window_layers on).
  std::optional<std::int64_t> window = f.whole("sliding_window", 1, model_limits::kContext);
  if (!window && defaults.sliding_window) window = static_cast<std::int64_t>(*defaults.sliding_window);
  if (window) {
    int windowed = 0;
    const char* pattern_key = f.get("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    if (const Node* types = f.get("layer_types")) {
      if (!types->is_sequence()) f.fail("layer_types", "must be a list of layer types");
      if (types->items().size() != static_cast<std::size_t>(m.layers))
        f.fail("layer_types", "lists " + std::to_string(types->items().size()) + " layers, num_hidden_layers is " +
                                  std::to_string(m.layers));
      for (const auto& t : types->items()) windowed += t.text() == "sliding_attention" ? 1 : 0;
    } else if (auto pattern = f.whole(pattern_key, 1); pattern || defaults.sliding_window_pattern) {
      const int period = pattern ? static_cast<int>(*pattern) : static_cast<int>(*defaults.sliding_window_pattern);
      for (int i = 0; i < m.layers; ++i) windowed += ((i + 1) % period != 0) ? 1 : 0;
    } else if (f.flag("use_sliding_window", false)) {
      // transformers' Qwen2: layer i uses the window when i >= max_window_layers.
      const int first = f.integer("max_window_layers", 0, 0);
      windowed = first < m.layers ? m.layers - first : 0;
    }
    // The catalogue models windows for GQA and MHA caches only (decode_model refuses them on MLA).
    if (windowed > 0 && at.layout == AttentionLayout::Mla)
      f.fail(f.get("sliding_window") ? "sliding_window" : "kv_lora_rank",
             "sliding-window layers are modelled for gqa and mha attention, not for multi-head latent attention (kv_lora_rank)" +
                 std::string(f.get("sliding_window") ? "" : "; the window is model_type's default"));
    if (windowed > 0) at.sliding_window = SlidingWindow{*window, windowed};
  }

  // MLP / MoE parameters.
  int experts = 0;
  const char* zero_key = nullptr;  // an expert count written as 0
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"})
    if (auto v = f.whole(key, 0, model_limits::kExperts); v && experts == 0) {
      experts = static_cast<int>(*v);
      if (experts == 0 && !zero_key) zero_key = key;
    }
  // Zero experts beside a top-k is an MoE config missing its experts, not a dense model.
  if (experts == 0 && zero_key && (f.get("num_experts_per_tok") || f.get("experts_per_token")))
    if (const int top_k = f.integer("num_experts_per_tok", 0, f.integer("experts_per_token", 0, 0)); top_k > 0)
      f.fail(zero_key, "is 0, but num_experts_per_tok routes each token to " + std::to_string(top_k) +
                           " experts: an MoE config with no experts is not a dense model; give the expert count in " + path);
  const double dense_ffn = static_cast<double>(f.whole("intermediate_size", 1).value_or(0));
  double mlp_params_total = 0;
  double mlp_params_active = 0;
  if (experts > 0) {
    const int top_k = f.integer("num_experts_per_tok", 1, f.integer("experts_per_token", 1, 0));
    if (top_k <= 0) config::fail(root, "num_experts_per_tok", "an MoE config needs num_experts_per_tok in " + path);
    if (top_k > experts)
      config::fail(root, "num_experts_per_tok",
                   "top-k (" + std::to_string(top_k) + ") exceeds the expert count (" + std::to_string(experts) + ")");
    const double expert_ffn = static_cast<double>(f.whole("moe_intermediate_size", 1).value_or(dense_ffn));
    if (expert_ffn <= 0) missing_field(root, "moe_intermediate_size", path);
    const double expert_params = 3 * hidden * expert_ffn;
    int dense_layers = f.integer("first_k_dense_replace", 0, 0);
    // Dense layers among the MoE ones: the catalogue's model puts them first (DeepSeek's
    // first_k_dense_replace); Qwen's mlp_only_layers may say the same, a leading run of layers.
    // Interleaved ones (decoder_sparse_step, moe_layer_freq above 1, any other mlp_only_layers)
    // are refused rather than imported as all-MoE.
    for (const char* every : {"decoder_sparse_step", "moe_layer_freq"})
      if (f.get(every)) {
        const int step = f.integer(every, 1, 1);
        if (step != 1)
          f.fail(every, "MoE layers only every " + std::to_string(step) +
                            " layers are not imported: the catalogue's model has its dense layers first and every other "
                            "layer MoE; write the model file by hand");
      }
    if (const Node* only = f.get("mlp_only_layers"); only && !only->is_null()) {
      if (!only->is_sequence()) f.fail("mlp_only_layers", "expected a list of layer indices, got " + only->describe());
      std::vector<int> dense;
      for (const auto& item : only->items()) {
        char* end = nullptr;
        const long v = std::strtol(item.text().c_str(), &end, 10);
        if (item.text().empty() || *end != '\0' || v < 0 || v >= m.layers)
          config::fail(item, "mlp_only_layers", "expected a layer index from 0 to " + std::to_string(m.layers - 1) +
                                                     ", got " + quoted(item.text()));
        dense.push_back(static_cast<int>(v));
      }
      std::sort(dense.begin(), dense.end());
      dense.erase(std::unique(dense.begin(), dense.end()), dense.end());
      for (std::size_t i = 0; i < dense.size(); ++i)
        if (dense[i] != static_cast<int>(i))
          f.fail("mlp_only_layers", "dense layers other than the first ones (layer " + std::to_string(dense[i]) +
                                        ") are not imported: the catalogue's model has its dense layers first; "
                                        "write the model file by hand");
      dense_layers = std::max(dense_layers, static_cast<int>(dense.size()));
    }
    if (dense_layers >= m.layers)
      f.fail("first_k_dense_replace", "must be below num_hidden_layers (" + std::to_string(m.layers) +
                                          ") to leave an MoE layer, got " + std::to_string(dense_layers));
    if (dense_layers > 0 && dense_ffn <= 0)
      missing_field(root, "intermediate_size", path, " (dense layers)");
    const int moe_layers = m.layers - dense_layers;
    int shared = static_cast<int>(f.whole("n_shared_experts", 0, model_limits::kSharedExperts).value_or(0));
    double shared_params = shared * expert_params;
    if (auto shared_ffn = f.whole("shared_expert_intermediate_size", 0); shared_ffn && *shared_ffn > 0) {
      shared = 1;
      shared_params = 3 * hidden * static_cast<double>(*shared_ffn);
    }
    const double router = hidden * experts;
    const double dense_mlps = static_cast<double>(dense_layers) * 3 * hidden * dense_ffn;
    mlp_params_total = dense_mlps + moe_layers * (experts * expert_params + shared_params + router);
    mlp_params_active = dense_mlps + moe_layers * (top_k * expert_params + shared_params + router);
    m.moe = MoeSpec{moe_layers, experts, top_k, shared, expert_params, std::nullopt};
  } else {
    if (dense_ffn <= 0) missing_field(root, "intermediate_size", path);
    mlp_params_total = mlp_params_active = layers * 3 * hidden * dense_ffn;
  }

  // Per token every layer's active weights and the LM head are read; of the input embedding
  // table only the token's row. So the active count leaves the input embeddings out (as
  // OpenAI's and DeepSeek's published "active" figures do) and keeps the LM head, which is
  // the same matrix when the embeddings are tied.
  const bool tied = f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", defaults.tie_word_embeddings));
  const double table = static_cast<double>(m.vocab_size) * hidden;
  const double norms = layers * 2 * hidden + hidden;
  const double body = norms + layers * attention_params;
  m.params_total = table * (tied ? 1 : 2) + body + mlp_params_total;
  m.tied_embeddings = tied;
  m.params_active = table + body + mlp_params_active;
  if (m.params_total > model_limits::kParams)
    config::fail(root, "", "the shapes in " + path + " come to " + format_params(m.params_total) +
                               " parameters, more than the 1e15 a model this tool can size may have "
                               "(hidden_size " + std::to_string(m.hidden_size) + ", num_hidden_layers " +
                               std::to_string(m.layers) + ", vocab_size " + std::to_string(m.vocab_size) + ")");

  std::ostringstream y;
  y << "# Imported by `vramsim import-model` from " << quoted(path) << ".\n"
    << "# Parameter counts are computed from the tensor shapes the config implies (biases ignored);\n"
    << "# active = the layers' active weights + the LM head (input embedding rows are not counted).\n";
  for (const auto& n : notes) y << "# Note: " << n << "\n";
  const ParamsText written = params_text(m);
  y
    << "name: " << quoted(m.name) << "\n"
    << "display_name: " << quoted(m.display_name) << "\n"
    << "source: " << quoted(path) << "\n"
    << "family: " << (m.is_moe() ? "moe" : "dense") << "\n"
    << "params:\n  total: " << written.total << "\n  active: " << written.active << "\n"
    << "layers: " << m.layers << "\n"
    << "hidden_size: " << m.hidden_size << "\n"
    << "vocab_size: " << m.vocab_size << "\n"
    << (m.tied_embeddings ? "tied_embeddings: true\n" : "")
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
      << written.expert << "\n";
  return ImportedModel{m, y.str(), notes};
}

Error invalid_name(const std::string& name) {
  return Error{"invalid model name " + quoted(name) +
               ": a catalogue name is up to 100 of the characters a-z A-Z 0-9 . _ + -, not starting with a dot"};
}

}  // namespace

Result<ImportedModel> import_hf_config(const std::string& path, const std::string& name) {
  if (!config::is_catalogue_name(name)) return invalid_name(name);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Error{path + " is a directory; give the config.json file inside it"};
  if (auto ok = config::check_input_file(path); !ok) return ok.error();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": error: cannot open file"};
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return import_hf_config_text(text, path, name);
}

Result<ImportedModel> import_hf_config_text(std::string_view text, const std::string& path, const std::string& name) {
  if (!config::is_catalogue_name(name)) return invalid_name(name);
  // config.json is read through the YAML loader (for its line:col origins), which accepts what
  // JSON does not (a trailing comma, comments, unquoted words): the text must first be strict JSON.
  if (auto strict = json::check_strict(text, path); !strict) return strict.error();
  auto root = config::parse_yaml(text, path);
  if (!root) return root.error();
  auto imported = config::decode<ImportedModel>([&] { return build(*root, path, name); });
  if (!imported) return imported.error();
  // What gets written must load as a catalogue model: decode it as the catalogue would.
  auto node = config::parse_yaml(imported->yaml, name + ".yaml");
  if (!node) return Error{"internal error: the description imported from " + path + " is not valid YAML: " + node.error().message};
  auto reloaded = config::decode<ModelSpec>([&] { return decode_model(*node, "model"); });
  if (!reloaded)
    return Error{"the description imported from " + path + " is not a valid catalogue model: " + reloaded.error().message};
  return imported;
}

}  // namespace vramsim::workloads
