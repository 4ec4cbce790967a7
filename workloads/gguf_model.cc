#include "workloads/gguf_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <fmt/format.h>

#include "core/config_reader.h"
#include "workloads/params_text.h"

namespace vramsim::workloads {
namespace {

namespace fs = std::filesystem;

struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A whole count as text (%.0f: any double, no integer overflow).
std::string count_text(double n) { return fmt::format("{:.0f}", n); }

// The metadata of the first part, read by llama.cpp's key names.
class Keys {
 public:
  Keys(const GgufHeader& h, std::string path) : h_(h), path_(std::move(path)) {
    const GgufValue* a = h.find("general.architecture");
    if (!a || a->kind != GgufValue::Kind::String || a->text.empty())
      fail("general.architecture", "is missing: the file names no architecture (is it a model, not a LoRA adapter or vocabulary?)");
    arch_ = a->text;
  }
  const std::string& arch() const { return arch_; }
  std::string key(const std::string& suffix) const { return arch_ + "." + suffix; }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw Refused(path_ + ": metadata key \"" + key + "\" " + message);
  }
  const GgufValue* find(const std::string& suffix) const { return h_.find(key(suffix)); }
  // A whole number in [lo, hi]: a scalar, or the largest entry of a per-layer array (`varies`
  // says it varied).
  std::optional<std::int64_t> whole(const std::string& suffix, std::int64_t lo, std::int64_t hi, bool* varies = nullptr) const {
    const GgufValue* v = find(suffix);
    if (!v) return std::nullopt;
    double x = v->number;
    if (v->kind == GgufValue::Kind::Array && v->integer && !v->numbers.empty()) {
      x = *std::max_element(v->numbers.begin(), v->numbers.end());
      if (varies) *varies = *std::min_element(v->numbers.begin(), v->numbers.end()) != x;
    } else if (v->kind != GgufValue::Kind::Number || !v->integer) {
      fail(key(suffix), "is not a whole number");
    }
    if (x < static_cast<double>(lo) || x > static_cast<double>(hi) || x != std::floor(x))
      fail(key(suffix), "is " + count_text(x) + ", expected " + std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<std::int64_t>(x);
  }
  std::int64_t require(const std::string& suffix, std::int64_t lo, std::int64_t hi) const {
    auto v = whole(suffix, lo, hi);
    if (!v) fail(key(suffix), "is missing (" + arch_ + " models carry it)");
    return *v;
  }
  std::string text(const std::string& full_key) const {
    const GgufValue* v = h_.find(full_key);
    return v && v->kind == GgufValue::Kind::String ? v->text : "";
  }
  bool has_prefix(const std::string& prefix) const {
    auto it = h_.metadata.lower_bound(prefix);
    return it != h_.metadata.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }

 private:
  const GgufHeader& h_;
  std::string path_;
  std::string arch_;
};

// llama.cpp's llama_ftype (include/llama.h), for the description's comment only.
std::string file_type_name(std::int64_t t) {
  static const std::pair<int, const char*> names[] = {
      {0, "F32"},      {1, "F16"},     {2, "Q4_0"},     {3, "Q4_1"},     {7, "Q8_0"},    {8, "Q5_0"},     {9, "Q5_1"},
      {10, "Q2_K"},    {11, "Q3_K_S"}, {12, "Q3_K_M"},  {13, "Q3_K_L"},  {14, "Q4_K_S"}, {15, "Q4_K_M"},  {16, "Q5_K_S"},
      {17, "Q5_K_M"},  {18, "Q6_K"},   {19, "IQ2_XXS"}, {20, "IQ2_XS"},  {21, "Q2_K_S"}, {22, "IQ3_XS"},  {23, "IQ3_XXS"},
      {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},   {27, "IQ3_M"},   {28, "IQ2_S"},  {29, "IQ2_M"},   {30, "IQ4_XS"},
      {31, "IQ1_M"},   {32, "BF16"},   {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"}};
  for (const auto& [id, name] : names)
    if (id == t) return name;
  return "type " + std::to_string(t);
}

// llama.cpp's sliding-window layer pattern by architecture (src/llama-model.cpp load_hparams:
// hparams.set_swa_pattern(n): of every n layers the last is global): 0 when the family has none
// known here.
int swa_period(const std::string& arch) {
  if (arch == "gemma2" || arch == "gpt-oss" || arch == "gpt_oss") return 2;
  if (arch == "gemma3" || arch == "gemma3n") return 6;
  if (arch == "cohere2") return 4;
  return 0;
}

struct Sums {
  double elements = 0, bytes = 0;
  void add(const GgufTensor& t) {
    elements += t.elements;
    bytes += t.bytes;
  }
};

std::string bits_text(double bits) { return fmt::format("{:.12g}", bits); }

ImportedModel build(const std::vector<GgufHeader>& parts, const std::string& path, const std::string& name) {
  const Keys k(parts.front(), path);
  std::vector<std::string> notes;
  for (const char* prefix : {".ssm.", ".shortconv.", ".wkv.", ".time_mix", ".linear_attention"})
    if (k.has_prefix(k.arch() + prefix))
      throw Refused(path + ": the " + k.arch() + " architecture has recurrent or linear-attention layers (" + k.arch() + prefix +
                    "* keys); the catalogue models attention layers with a KV cache only");

  ModelSpec m;
  m.name = name;
  m.display_name = k.text("general.name").empty() ? name : k.text("general.name");
  const int blocks = static_cast<int>(k.require("block_count", 1, model_limits::kLayers));
  const int nextn = static_cast<int>(k.whole("nextn_predict_layers", 0, blocks - 1).value_or(0));
  m.layers = blocks - nextn;
  m.mtp_head = nextn > 0;
  m.hidden_size = static_cast<int>(k.require("embedding_length", 1, model_limits::kHiddenSize));
  m.max_context = k.require("context_length", 1, model_limits::kContext);

  // Tensors of every part, grouped.
  Sums all, routed, embeddings;
  bool has_output = false;
  std::set<int> moe_blocks;
  std::int64_t vocab = 0;
  static const std::regex exps(R"(blk\.(\d{1,6})\.ffn_(gate|up|down|gate_up)_exps\.weight)");
  std::smatch match;
  for (const auto& part : parts)
    for (const auto& t : part.tensors) {
      all.add(t);
      if (std::regex_match(t.name, match, exps)) {
        routed.add(t);
        moe_blocks.insert(std::stoi(match[1].str()));
      }
      if (t.name == "token_embd.weight") {
        embeddings.add(t);
        if (t.dims.size() >= 2) vocab = t.dims[1];
      }
      if (t.name == "output.weight") has_output = true;
    }
  if (all.elements == 0) throw Refused(path + ": the file holds no tensors (a vocabulary-only GGUF?)");
  if (embeddings.elements == 0) throw Refused(path + ": no token_embd.weight tensor: not a language model this reader knows");
  if (vocab <= 0 || vocab > model_limits::kVocabSize) throw Refused(path + ": token_embd.weight has no vocabulary dimension in range");
  m.vocab_size = static_cast<int>(vocab);
  m.tied_embeddings = !has_output;

  Attention& at = m.attention;
  bool heads_vary = false, kv_vary = false;
  at.query_heads = static_cast<int>(k.whole("attention.head_count", 1, model_limits::kHeads, &heads_vary).value_or(0));
  if (at.query_heads == 0) k.fail(k.key("attention.head_count"), "is missing (" + k.arch() + " models carry it)");
  at.kv_heads = static_cast<int>(k.whole("attention.head_count_kv", 1, model_limits::kHeads, &kv_vary).value_or(at.query_heads));
  if (heads_vary || kv_vary)
    notes.push_back("the head counts vary by layer; the largest (" + std::to_string(at.query_heads) + " query, " +
                    std::to_string(at.kv_heads) + " KV heads) is taken for every layer, an upper bound on the KV cache");
  at.head_dim = static_cast<int>(k.whole("attention.key_length", 1, model_limits::kHeadDim).value_or(m.hidden_size / at.query_heads));
  if (at.head_dim <= 0) k.fail(k.key("attention.head_count"), "is larger than embedding_length and no key_length is given");
  if (auto rank = k.whole("attention.kv_lora_rank", 1, model_limits::kLatentDim)) {
    at.layout = AttentionLayout::Mla;
    at.latent_dim = static_cast<int>(*rank + k.whole("rope.dimension_count", 0, model_limits::kHeadDim).value_or(0));
  } else {
    at.layout = at.kv_heads == at.query_heads ? AttentionLayout::Mha : AttentionLayout::Gqa;
  }
  if (auto window = k.whole("attention.sliding_window", 1, model_limits::kContext)) {
    int windowed = 0;
    const GgufValue* pattern = k.find("attention.sliding_window_pattern");
    if (pattern && pattern->kind == GgufValue::Kind::Array && !pattern->numbers.empty()) {
      for (double on : pattern->numbers) windowed += on != 0 ? 1 : 0;  // per layer: 1 = windowed
      windowed = std::min(windowed, m.layers);
    } else if (const int period = swa_period(k.arch()); period > 0) {
      for (int i = 0; i < m.layers; ++i) windowed += ((i + 1) % period != 0) ? 1 : 0;
    } else {
      notes.push_back("attention.sliding_window is " + std::to_string(*window) + " but which layers use it is not known for " +
                      k.arch() + ": every layer is taken as global (an upper bound on the KV cache)");
    }
    if (windowed > 0 && at.layout != AttentionLayout::Mla) at.sliding_window = SlidingWindow{*window, windowed};
  }

  if (!moe_blocks.empty()) {
    MoeSpec moe;
    moe.experts = static_cast<int>(k.require("expert_count", 1, model_limits::kExperts));
    moe.experts_per_token = static_cast<int>(k.require("expert_used_count", 1, moe.experts));
    moe.shared_experts = static_cast<int>(k.whole("expert_shared_count", 0, model_limits::kSharedExperts).value_or(0));
    moe.layers = static_cast<int>(moe_blocks.size());
    moe.expert_params = routed.elements / (static_cast<double>(moe.layers) * moe.experts);
    if (*moe_blocks.begin() < m.layers - moe.layers)
      notes.push_back("the MoE layers are not the last " + std::to_string(moe.layers) + " (the first is block " +
                      std::to_string(*moe_blocks.begin()) + "); the catalogue places them last, which changes no size");
    m.moe = moe;
  }
  const double unused_experts = m.moe ? routed.elements * (1.0 - static_cast<double>(m.moe->experts_per_token) / m.moe->experts) : 0.0;
  m.params_total = all.elements;
  m.params_active = all.elements - unused_experts - (m.tied_embeddings ? 0.0 : embeddings.elements);
  if (m.params_total > model_limits::kParams) throw Refused(path + ": the tensors come to more than 1e15 parameters");

  const Sums other{all.elements - routed.elements, all.bytes - routed.bytes};
  const double other_bits = 8.0 * other.bytes / other.elements;
  m.native_format = "GGUF";
  m.file_formats.push_back(WeightFormat{"GGUF", other_bits, false});
  if (m.moe) {
    m.native_expert_format = "GGUF_EXPERTS";
    m.file_formats.push_back(WeightFormat{"GGUF_EXPERTS", 8.0 * routed.bytes / routed.elements, false});
  }
  const std::string basename = k.text("general.basename");
  m.lineage = basename.empty() ? k.arch() : basename;
  std::transform(m.lineage.begin(), m.lineage.end(), m.lineage.begin(), [](unsigned char c) { return std::tolower(c); });

  const GgufValue* ftype = parts.front().find("general.file_type");
  const std::string file_type =
      ftype && ftype->kind == GgufValue::Kind::Number && ftype->number >= 0 && ftype->number < 1e6
          ? ", file type " + file_type_name(static_cast<std::int64_t>(ftype->number))
          : "";
  std::ostringstream y;
  y << "# Read by vramsim from the header of " << yaml_quoted(path) << " (GGUF v" << parts.front().version << ", "
    << parts.size() << (parts.size() == 1 ? " file" : " parts") << ", architecture " << k.arch()
    << file_type << ").\n"
    << "# Counts are the tensors' elements; active = total - the routed experts a token does not use"
    << (m.tied_embeddings ? "" : " - the input embeddings") << ".\n"
    << "# The formats are the file's own: its tensors' exact bytes over their weights.\n";
  for (const auto& n : notes) y << "# Note: " << n << "\n";
  // Exact counts (whole numbers: the routed experts' share a token uses is a whole number of
  // experts), so the sizes are the file's bytes.
  const ParamsText written{count_text(m.params_total), count_text(m.params_active),
                           m.moe ? count_text(m.moe->expert_params) : std::string()};
  y << "name: " << yaml_quoted(m.name) << "\n"
    << "display_name: " << yaml_quoted(m.display_name) << "\n"
    << "source: " << yaml_quoted(path) << "\n"
    << "family: " << (m.moe ? "moe" : "dense") << "\n"
    << "lineage: " << yaml_quoted(m.lineage) << "\n"
    << "params:\n  total: " << written.total << "\n  active: " << written.active << "\n"
    << "layers: " << m.layers << "\n"
    << "hidden_size: " << m.hidden_size << "\n"
    << "vocab_size: " << m.vocab_size << "\n"
    << (m.tied_embeddings ? "tied_embeddings: true\n" : "") << (m.mtp_head ? "mtp_head: true\n" : "")
    << "max_context: " << m.max_context << "\n"
    << "native_format: GGUF\n" << (m.moe ? "native_expert_format: GGUF_EXPERTS\n" : "")
    << "file_formats:\n"
    << "  GGUF: { bits_per_weight: " << bits_text(other_bits) << ", source: \"" << count_text(other.bytes) << " bytes in "
    << count_text(other.elements) << " weights" << (m.moe ? ", every tensor but the routed experts" : "") << "\" }\n";
  if (m.moe)
    y << "  GGUF_EXPERTS: { bits_per_weight: " << bits_text(m.file_formats.back().bits_per_weight) << ", source: \""
      << count_text(routed.bytes) << " bytes in " << count_text(routed.elements) << " weights of the *_exps tensors\" }\n";
  y << "attention:\n"
    << "  layout: " << (at.layout == AttentionLayout::Mla ? "mla" : at.layout == AttentionLayout::Mha ? "mha" : "gqa") << "\n"
    << "  query_heads: " << at.query_heads << "\n  kv_heads: " << at.kv_heads << "\n  head_dim: " << at.head_dim << "\n";
  if (at.layout == AttentionLayout::Mla) y << "  latent_dim: " << at.latent_dim << "\n";
  if (at.sliding_window)
    y << "  sliding_window:\n    window: " << at.sliding_window->window_tokens << "\n    layers: " << at.sliding_window->layers << "\n";
  if (m.moe)
    y << "moe:\n  layers: " << m.moe->layers << "\n  experts: " << m.moe->experts << "\n  experts_per_token: "
      << m.moe->experts_per_token << "\n  shared_experts: " << m.moe->shared_experts << "\n  expert_params: " << written.expert << "\n";
  return ImportedModel{m, y.str(), notes};
}

// The other parts of a split model: llama.cpp's llama_split_path names them
// PREFIX-%05d-of-%05d.gguf; the first part's split.count says how many there are.
Result<std::vector<GgufHeader>> read_parts(const std::string& path) {
  auto first = read_gguf_header(path);
  if (!first) return first.error();
  std::vector<GgufHeader> parts{std::move(*first)};
  const GgufValue* count = parts.front().find("split.count");
  if (!count || count->kind != GgufValue::Kind::Number || !(count->number > 1)) return parts;
  if (count->number > 9999) return Error{path + ": split.count " + count_text(count->number) + " is more parts than a split model has"};
  static const std::regex split(R"((.*)-(\d{5})-of-(\d{5})\.gguf)", std::regex::icase);
  std::smatch m;
  const std::string file = fs::path(path).filename().string();
  if (!std::regex_match(file, m, split) || std::stoi(m[2].str()) != 1)
    return Error{path + ": part of a split model (split.count " + count_text(count->number) +
                 "): give its first part, NAME-00001-of-NNNNN.gguf"};
  const int n = static_cast<int>(count->number);
  for (int i = 2; i <= n; ++i) {
    const std::string tail = fmt::format("-{:05}-of-{:05}.gguf", i, n);
    const std::string other = (fs::path(path).parent_path() / (m[1].str() + tail)).string();
    auto part = read_gguf_header(other);
    if (!part) return Error{part.error().message + " (part " + std::to_string(i) + " of " + std::to_string(n) + " of " + path + ")"};
    parts.push_back(std::move(*part));
  }
  return parts;
}

// The file's stem as a catalogue name: characters a name may not have become '-'.
std::string name_of(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '+' && c != '-') c = '-';
  if (stem.empty() || stem.front() == '.') stem = "gguf-" + stem;
  return stem.substr(0, 100);
}

}  // namespace

bool is_gguf_path(std::string_view text) {
  if (text.size() < 5) return false;
  std::string tail(text.substr(text.size() - 5));
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
  return tail == ".gguf";
}

Result<ImportedModel> import_gguf_headers(const std::vector<GgufHeader>& parts, const std::string& path, const std::string& name) {
  if (!config::is_catalogue_name(name))
    return Error{"invalid model name " + yaml_quoted(name) + ": a catalogue name is up to 100 of the characters a-z A-Z 0-9 . _ + -"};
  if (parts.empty()) return Error{path + ": no header"};
  ImportedModel imported;
  try {
    imported = build(parts, path, name);
  } catch (const Refused& e) {
    return Error{e.what()};
  } catch (const config::ConfigError& e) {
    return Error{e.what()};
  }
  // What is returned must load as a catalogue model.
  auto node = config::parse_yaml(imported.yaml, name + ".yaml");
  if (!node) return Error{"internal error: the description read from " + path + " is not valid YAML: " + node.error().message};
  auto reloaded = config::decode<ModelSpec>([&] { return decode_model(*node, "model"); });
  if (!reloaded) return Error{path + ": not a model this tool can size: " + reloaded.error().message};
  return imported;
}

Result<ImportedModel> import_gguf(const std::string& path, const std::string& name) {
  auto parts = read_parts(path);
  if (!parts) return parts.error();
  return import_gguf_headers(*parts, path, name);
}

bool is_model_file(std::string_view text) { return config::looks_like_path(text) || is_gguf_path(text); }

config::Node resolve_model(const config::Catalogue& catalogue, const config::Node& ref, const std::string& key_path) {
  if (!ref.is_scalar() || !is_gguf_path(ref.text())) return catalogue.resolve("models", "model", ref, key_path);
  const std::string file = config::file_beside(ref).string();
  auto imported = import_gguf(file, name_of(file));
  if (!imported) config::fail(ref, key_path, imported.error().message);
  auto node = config::parse_yaml(imported->yaml, file);
  if (!node) config::fail(ref, key_path, node.error().message);
  return std::move(*node);
}

}  // namespace vramsim::workloads
