// Importing Hugging Face config.json files (written from the published fields) reproduces
// the catalogue's hand-checked descriptions.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/config_reader.h"
#include "core/json_value.h"
#include "tests/test_support.h"
#include "workloads/hf_import.h"
#include "workloads/params_text.h"

using namespace vramsim;
using namespace vramsim::workloads;

namespace {

ModelSpec catalogue_model(const std::string& name) {
  config::Node ref = config::Node::scalar(name, config::Origin{"test", 0, 0});
  return decode_model(test::catalogue().resolve("models", "model", ref, "model"), "model");
}

ModelSpec imported(const std::string& name) {
  auto r = import_hf_config(test::data_path("hf/" + name + ".json"), name);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  // The YAML it writes must load back to the same description.
  auto node = config::parse_yaml(r->yaml, name + ".yaml");
  REQUIRE(node.ok());
  ModelSpec reloaded = decode_model(*node, "model");
  CHECK(reloaded.layers == r->spec.layers);
  CHECK(reloaded.params_total == Approx(r->spec.params_total).epsilon(1e-3));
  return r->spec;
}

// `active_tolerance`: against the catalogue's (publisher's) active figure. The import counts
// the LM head but not the input embedding table (one row of it is read per token); Mistral
// and Qwen publish counts that include the input embeddings (`published_with_input_embeddings`),
// OpenAI and DeepSeek leave them out.
void check_same_architecture(const std::string& name, double params_tolerance, double active_tolerance = 0.012,
                             bool published_with_input_embeddings = false) {
  INFO(name);
  ModelSpec a = imported(name);
  ModelSpec b = catalogue_model(name);
  CHECK(a.layers == b.layers);
  CHECK(a.attention.layout == b.attention.layout);
  CHECK(a.attention.query_heads == b.attention.query_heads);
  CHECK(a.attention.head_dim == b.attention.head_dim);
  if (a.attention.layout == AttentionLayout::Mla) {
    CHECK(a.attention.latent_dim == b.attention.latent_dim);
  } else {
    CHECK(a.attention.kv_heads == b.attention.kv_heads);
  }
  CHECK(a.attention.sliding_window.has_value() == b.attention.sliding_window.has_value());
  if (a.attention.sliding_window && b.attention.sliding_window) {
    CHECK(a.attention.sliding_window->window_tokens == b.attention.sliding_window->window_tokens);
    CHECK(a.attention.sliding_window->layers == b.attention.sliding_window->layers);
  }
  CHECK(a.is_moe() == b.is_moe());
  if (a.moe && b.moe) {
    CHECK(a.moe->experts == b.moe->experts);
    CHECK(a.moe->experts_per_token == b.moe->experts_per_token);
    CHECK(a.moe->layers == b.moe->layers);
    CHECK(a.moe->expert_params == Approx(b.moe->expert_params).epsilon(0.01));
    const double input_embeddings = published_with_input_embeddings ? double(a.vocab_size) * a.hidden_size : 0.0;
    CHECK(a.params_active + input_embeddings == Approx(b.params_active).epsilon(active_tolerance));
  }
  CHECK(a.params_total == Approx(b.params_total).epsilon(params_tolerance));
}

// A scratch directory for configs written by the tests (one per test process, removed at exit).
std::filesystem::path scratch_dir() {
  struct Scratch {
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("vramsim_hf_import_" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static Scratch scratch;
  std::filesystem::create_directories(scratch.dir);
  return scratch.dir;
}

std::string write_config(const std::string& file, const std::string& json) {
  auto path = scratch_dir() / file;
  std::ofstream(path) << json;
  return path.string();
}

// A small Llama-shaped config with `extra` (JSON members, comma-led) appended, or with
// `replace` substituted for one of its members.
std::string llama_like(const std::string& extra = "") {
  return R"({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
             "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 1000, "max_position_embeddings": 4096)" +
         extra + "}";
}

Result<ImportedModel> import_json(const std::string& json, const std::string& name = "test-model") {
  return import_hf_config(write_config("config.json", json), name);
}

// The import of `json` must fail with a message containing every one of `words`.
void check_refused_json(const std::string& json, std::initializer_list<const char*> words) {
  INFO(json);
  auto r = import_json(json);
  REQUIRE_FALSE(r.ok());
  for (const char* w : words) CHECK_THAT(r.error().message, Catch::Contains(w));
}

}  // namespace

TEST_CASE("import: Llama 3.1 8B counts 8.03e9 parameters", "[import]") {
  ModelSpec m = imported("llama-3.1-8b");
  CHECK(m.params_total == Approx(8.03e9).epsilon(0.002));
  check_same_architecture("llama-3.1-8b", 0.01);
}

TEST_CASE("import: Mixtral's and Qwen3's active counts match once their input embeddings are added",
          "[import]") {
  check_same_architecture("mixtral-8x7b", 0.01, 0.005, true);
  check_same_architecture("qwen3-30b-a3b", 0.02, 0.02, true);
}
TEST_CASE("import: Qwen3 30B-A3B, 128 experts", "[import]") {
  ModelSpec m = imported("qwen3-30b-a3b");
  // 48 layers x (attention 18.87e6 + 8 x 4.72e6 experts + router) + LM head 0.311e9.
  CHECK(m.params_active == Approx(3.042e9).epsilon(0.002));
}
TEST_CASE("import: DeepSeek V3, latent attention and dense first layers", "[import]") {
  check_same_architecture("deepseek-v3", 0.02);
  ModelSpec m = imported("deepseek-v3");
  CHECK(m.attention.head_dim == 128);  // v_head_dim, as the catalogue uses for attention FLOPs (not 128 + 64)
}
TEST_CASE("import: DeepSeek-V2-Lite, MLA without a query low-rank, 2.4B active", "[import]") {
  check_same_architecture("deepseek-v2-lite", 0.01, 0.025);  // 2.451e9 vs the model card's rounded "2.4B"
}
TEST_CASE("import: Gemma 3 27B as published (no window pattern: the class default, one global in 6)", "[import]") {
  check_same_architecture("gemma-3-27b", 0.03);  // the catalogue also counts the 0.417e9 vision tower
  ModelSpec m = imported("gemma-3-27b");
  REQUIRE(m.attention.sliding_window);
  CHECK(m.attention.sliding_window->layers == 52);  // 62 layers, every 6th global
  CHECK(m.attention.sliding_window->window_tokens == 1024);
  CHECK(m.params_active == Approx(m.params_total));  // tied: the embedding table is the LM head
  CHECK(m.tied_embeddings);
  CHECK_FALSE(imported("qwen3-30b-a3b").tied_embeddings);
}
TEST_CASE("import: Gemma 3 4B as published, heads and head_dim from the class defaults", "[import]") {
  ModelSpec m = imported("gemma-3-4b");
  CHECK(m.layers == 34);
  CHECK(m.attention.query_heads == 8);
  CHECK(m.attention.kv_heads == 4);
  CHECK(m.attention.head_dim == 256);
  CHECK(m.vocab_size == 262208);
  REQUIRE(m.attention.sliding_window);
  CHECK(m.attention.sliding_window->layers == 29);  // 34 - 5 global
  CHECK(m.params_total == Approx(3.88e9).epsilon(0.005));  // 4.3B less the 0.417e9 vision tower
}
TEST_CASE("import: gpt-oss-20b, explicit layer types", "[import]") {
  check_same_architecture("gpt-oss-20b", 0.02, 0.005);  // model card: 3.61B active
}

TEST_CASE("import: a config without the essentials is refused with the field's name", "[import]") {
  auto r = import_hf_config(test::data_path("hf/missing-layers.json"), "broken");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("num_hidden_layers"));
  auto none = import_hf_config(test::data_path("hf/does-not-exist.json"), "x");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("cannot open"));
}

TEST_CASE("import: newer transformers' _sliding_window_pattern is read", "[import]") {
  auto r = import_json(R"({"model_type": "gemma3_text", "hidden_size": 1024, "num_hidden_layers": 4,
                            "intermediate_size": 2048, "sliding_window": 512, "_sliding_window_pattern": 2})");
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  CHECK(r->spec.attention.query_heads == 8);  // Gemma3TextConfig defaults
  CHECK(r->spec.attention.head_dim == 256);
  REQUIRE(r->spec.attention.sliding_window);
  CHECK(r->spec.attention.sliding_window->layers == 2);
}

TEST_CASE("import: Qwen2's window applies from max_window_layers on", "[import]") {
  auto r = import_json(llama_like(R"(, "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 3)"));
  REQUIRE(r.ok());
  REQUIRE(r->spec.attention.sliding_window);
  CHECK(r->spec.attention.sliding_window->layers == 1);
  auto none = import_json(llama_like(R"(, "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 4)"));
  REQUIRE(none.ok());
  CHECK_FALSE(none->spec.attention.sliding_window);
}

TEST_CASE("import: out-of-range fields are refused with the key's name", "[import]") {
  REQUIRE(import_json(llama_like()).ok());
  check_refused_json(llama_like(R"(, "sliding_window": 128, "sliding_window_pattern": 0)"), {"sliding_window_pattern"});
  check_refused_json(llama_like(R"(, "sliding_window": 128, "sliding_window_pattern": 0.5)"), {"sliding_window_pattern"});
  check_refused_json(llama_like(R"(, "sliding_window": -5, "sliding_window_pattern": 2)"), {"sliding_window"});
  // A small dense config with one field replaced: the field named in the error.
  const auto small = [](const std::string& hidden, const std::string& layers, const std::string& heads, const std::string& kv,
                        const std::string& vocab) {
    return R"({"hidden_size": )" + hidden + R"(, "num_hidden_layers": )" + layers + R"(, "num_attention_heads": )" + heads +
           (kv.empty() ? "" : R"(, "num_key_value_heads": )" + kv) + R"(, "intermediate_size": 2048, "vocab_size": )" + vocab + "}";
  };
  check_refused_json(small("1024", "4", "0", "", "1000"), {"num_attention_heads", "whole number"});
  check_refused_json(small("-1024", "4", "8", "", "1000"), {"hidden_size"});
  check_refused_json(small("1e30", "4", "8", "", "1000"), {"hidden_size"});
  check_refused_json(small("1024", "0", "8", "", "1000"), {"num_hidden_layers"});
  check_refused_json(small("1024", "4", "8", "", "0"), {"vocab_size"});
  check_refused_json(small("1024", "4", "8", "0", "1000"), {"num_key_value_heads"});
  check_refused_json(small("1024", "4", "8", "3", "1000"), {"num_key_value_heads", "divide"});
  check_refused_json(llama_like(R"(, "head_dim": 0)"), {"head_dim"});
  check_refused_json(llama_like(R"(, "num_local_experts": -8, "num_experts_per_tok": 2)"), {"num_local_experts"});
  check_refused_json(llama_like(R"(, "n_routed_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 6)"),
                     {"first_k_dense_replace"});
  check_refused_json(llama_like(R"(, "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention",
      "sliding_attention", "full_attention", "sliding_attention"])"),
                     {"layer_types", "num_hidden_layers"});
}

// Dense layers among the MoE ones: a leading run is imported (as first_k_dense_replace is),
// interleaved ones are refused rather than imported as all-MoE; an unknown dtype is refused.
TEST_CASE("import: dense layers other than leading ones, and unknown dtypes, are refused", "[import]") {
  const std::string moe = R"(, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 512)";
  auto leading = import_json(llama_like(moe + R"(, "mlp_only_layers": [1, 0])"));
  REQUIRE(leading.ok());
  CHECK(leading->spec.moe->layers == 2);  // 4 layers, the first 2 dense
  auto none = import_json(llama_like(moe + R"(, "mlp_only_layers": [], "decoder_sparse_step": 1)"));
  REQUIRE(none.ok());
  CHECK(none->spec.moe->layers == 4);
  check_refused_json(llama_like(moe + R"(, "mlp_only_layers": [0, 2])"), {"mlp_only_layers", "layer 2"});
  check_refused_json(llama_like(moe + R"(, "mlp_only_layers": [0, 9])"), {"mlp_only_layers", "from 0 to 3", "\"9\""});
  check_refused_json(llama_like(moe + R"(, "decoder_sparse_step": 2)"), {"decoder_sparse_step", "every 2 layers"});
  check_refused_json(llama_like(moe + R"(, "decoder_sparse_step": 0)"), {"decoder_sparse_step"});
  check_refused_json(llama_like(moe + R"(, "moe_layer_freq": 2)"), {"moe_layer_freq"});
  check_refused_json(llama_like(R"(, "torch_dtype": "banana")"), {"torch_dtype", "expected one of bfloat16"});
  auto fp8 = import_json(llama_like(R"(, "torch_dtype": "float8_e4m3fn")"));
  REQUIRE(fp8.ok());
  CHECK(fp8->spec.native_format == "FP8");
}

TEST_CASE("import: the name must be a catalogue name, and the source path is quoted", "[import]") {
  auto bad = import_json(llama_like(), "my: model");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("catalogue name"));
  CHECK_FALSE(import_json(llama_like(), ".hidden").ok());
  CHECK_FALSE(import_json(llama_like(), std::string(101, 'a')).ok());
  CHECK(import_json(llama_like(), "My_model-1.5+q").ok());

  auto odd_dir = scratch_dir() / "a: b # \"c\"";
  std::filesystem::create_directories(odd_dir);
  const std::string path = (odd_dir / "config.json").string();
  std::ofstream(path) << llama_like();
  auto r = import_hf_config(path, "odd");
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());  // the import re-reads what it writes, so a bad quote would fail here
  auto node = config::parse_yaml(r->yaml, "odd.yaml");
  REQUIRE(node.ok());
  const config::Node* source = node->find("source");
  REQUIRE(source);
  CHECK(source->text() == path);
}

TEST_CASE("import: a directory is named as such", "[import]") {
  auto r = import_hf_config(scratch_dir().string(), "x");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("is a directory"));
}

TEST_CASE("import-model: -o writes the file, and errors exit 2 and write nothing", "[import]") {
  const std::string config = write_config("cli.json", llama_like());
  const std::string out = (scratch_dir() / "short.yaml").string();
  std::filesystem::remove(out);
  test::run_ok("import-model '" + config + "' --name cli-model -o '" + out + "'");
  CHECK(std::filesystem::exists(out));
  test::check_usage_error("import-model '" + config + "' --name cli-model -o '" + out + "' --output '" + out + "'",
                          "once");
  const std::string bad = write_config("bad.json", llama_like(R"(, "sliding_window": 128, "sliding_window_pattern": 0)"));
  const std::string not_written = (scratch_dir() / "never.yaml").string();
  test::check_usage_error("import-model '" + bad + "' --name bad -o '" + not_written + "'", "sliding_window_pattern");
  CHECK_FALSE(std::filesystem::exists(not_written));
  test::check_usage_error("import-model '" + config + "' --name 'my: model'", "catalogue name");
}

TEST_CASE("import: a tiny test model's parameter count is one YAML number at any size", "[import]") {
  // 8 hidden units, 1 layer, 16 tokens: a few thousand parameters, which "%ge9" once printed as
  // "4.6e-06e9" and then refused to load.
  auto tiny = import_json(R"({"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 16})");
  REQUIRE(tiny.ok());
  CHECK(tiny->spec.params_total > 100);
  CHECK(tiny->spec.params_total < 1e4);
  CHECK_THAT(tiny->yaml, Catch::Matches("(.|\n)*total: [0-9.]+e[0-9]+\n(.|\n)*"));
}

// Architectures the catalogue's model cannot describe are refused with the reason, not imported
// wrong: Llama 4's shared expert and interleaved MoE layers, Qwen3-Next's linear-attention layers.
TEST_CASE("import: Llama 4 and hybrid linear attention are refused with the reason", "[import]") {
  check_refused_json(R"({"text_config": {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48,
                         "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 202048,
                         "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1},
                         "model_type": "llama4"})",
                     {"model_type", "Llama 4 is not imported", "shared expert"});
  check_refused_json(llama_like(R"(, "full_attention_interval": 4, "linear_num_key_heads": 16)"),
                     {"full_attention_interval", "linear attention", "KV cache"});
  check_refused_json(llama_like(R"(, "layer_types": ["linear_attention", "full_attention", "full_attention", "full_attention"])"),
                     {"layer_types", "linear-attention layers are not imported"});
}

// A config without max_position_embeddings takes a default, said in a note (a fit at a longer
// context is then refused, which the user can only trace back to it through the note).
TEST_CASE("import: a missing max_position_embeddings is noted with the default taken", "[hf-import]") {
  auto none = import_json(R"({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
                              "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 1000, "torch_dtype": "bfloat16"})");
  REQUIRE(none);
  CHECK(none->spec.max_context == 4096);
  REQUIRE(none->notes.size() == 1);
  CHECK_THAT(none->notes[0], Catch::Contains("no max_position_embeddings: max_context is 4096") &&
                                 Catch::Contains("model_type \"llama\""));
  CHECK_THAT(none->yaml, Catch::Contains("# Note: the config gives no max_position_embeddings"));
}

// A quantization method the catalogue has no format for is named, not silently read as BF16;
// transformers' newer `dtype` key is read as `torch_dtype` was.
TEST_CASE("import: AWQ or GPTQ weights are noted, and dtype is read", "[hf-import]") {
  auto awq = import_json(llama_like(R"(, "torch_dtype": "float16", "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128})"));
  REQUIRE(awq);
  CHECK(awq->spec.native_format == "F16");
  REQUIRE(awq->notes.size() == 1);
  CHECK_THAT(awq->notes[0], Catch::Contains("quant_method \"awq\" (4-bit weights) is not one of the catalogue's formats") &&
                                Catch::Contains("--quant Q4_0"));
  CHECK_THAT(awq->yaml, Catch::Contains("# Note: quantization_config.quant_method \"awq\""));
  // A method name with a line break stays one comment line.
  auto odd = import_json(llama_like(R"(, "quantization_config": {"quant_method": "a\nb: c"})"));
  REQUIRE(odd);
  CHECK_THAT(odd->yaml, Catch::Contains("quant_method \"a\\x0ab: c\""));
  auto mxfp4 = import_json(llama_like(R"(, "quantization_config": {"quant_method": "mxfp4"})"));
  REQUIRE(mxfp4);
  CHECK(mxfp4->spec.native_format == "MXFP4");
  CHECK(mxfp4->notes.empty());
  auto f16 = import_json(llama_like(R"(, "dtype": "float16")"));
  REQUIRE(f16);
  CHECK(f16->spec.native_format == "F16");
  CHECK(f16->notes.empty());
  // No dtype at all: BF16, with a note that says so (written into the YAML too).
  auto none = import_json(llama_like());
  REQUIRE(none);
  CHECK(none->spec.native_format == "BF16");
  REQUIRE(none->notes.size() == 1);
  CHECK_THAT(none->notes[0], Catch::Contains("the config names no dtype (torch_dtype): native_format is BF16"));
  CHECK_THAT(none->yaml, Catch::Contains("# Note: the config names no dtype"));
}

// Issue 26, item 8: what JSON does not allow is refused, not read as YAML would.
TEST_CASE("import: a trailing comma is refused at its line and column", "[import][messages]") {
  auto r = import_json("{\"model_type\": \"llama\", \"hidden_size\": 1024,\n  \"num_hidden_layers\": 4,\n}\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::EndsWith("config.json:3:1: error: not strict JSON: expected a key (a trailing comma?)"));
  // The byte-order mark some editors write is not an error.
  CHECK(import_json("\xEF\xBB\xBF" + llama_like()).ok());
}

// JSON writes no leading zero: "0100000.0" is refused where YAML would have read a number.
TEST_CASE("import: a number with a leading zero is refused at its column", "[import][messages]") {
  auto r = import_json("{\"model_type\": \"llama\", \"hidden_size\": 01024}\n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::EndsWith("config.json:1:41: error: not strict JSON: expected a number without a leading zero"));
  for (const char* ok : {"0", "-0", "0.5", "-0.25e3", "10", "1e-05"}) {
    INFO(ok);
    CHECK(vramsim::json::parse(ok).ok());
  }
  CHECK_FALSE(vramsim::json::parse("-012").ok());
}

// A routed-expert count so large that the four-digit totals would read back below the routed
// experts' sum (a fuzzer's find): the written counts keep the catalogue's checks, within 5e-4.
TEST_CASE("import: written parameter counts hold the catalogue's checks when rounding would break them", "[import]") {
  vramsim::workloads::ModelSpec m;
  m.params_total = 563.7e12 + 1e9;
  m.params_active = 40e9;
  m.moe = vramsim::workloads::MoeSpec{};
  m.moe->layers = 32;
  m.moe->experts = 100000;
  m.moe->experts_per_token = 2;
  m.moe->expert_params = 3.0 * 4096 * 14336;  // 176,160,768, written 1.762e8 (rounded up)
  const auto t = vramsim::workloads::params_text(m);
  CHECK(t.expert == "1.762e8");
  const double routed = 32.0 * 100000 * std::stod(t.expert);
  CHECK(std::stod(t.total) >= routed);
  CHECK(std::fabs(std::stod(t.total) - m.params_total) <= 5e-4 * m.params_total);
  CHECK(std::stod(t.active) >= 32.0 * 2 * std::stod(t.expert));
  // An ordinary model keeps four digits.
  m.params_total = 46.7e9;
  m.moe->experts = 8;
  CHECK(vramsim::workloads::params_text(m).total == "4.67e10");
}

TEST_CASE("import: a number written as a string is refused", "[import][messages]") {
  auto r = import_json(R"({"model_type": "llama", "hidden_size": "1024", "num_hidden_layers": 4, "num_attention_heads": 8,
             "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 1000, "max_position_embeddings": 4096})");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("config.json:1:40: error: hidden_size: expected a number, got the string \"1024\""));
}

// Found by tests/fuzz/hf_import_fuzzer.cc: a count the catalogue refuses was imported, and
// only the written model's reload failed, at a line of the generated YAML. Each count is now
// held to the catalogue's bounds at its field of config.json; huge ones no longer overflow.
TEST_CASE("import: counts past the catalogue's bounds are refused at their field", "[import][messages]") {
  const auto small_dense = [](const std::string& hidden, const std::string& layers, const std::string& heads,
                              const std::string& vocab) {
    return R"({"hidden_size": )" + hidden + R"(, "num_hidden_layers": )" + layers + R"(, "num_attention_heads": )" + heads +
           R"(, "intermediate_size": 2048, "vocab_size": )" + vocab + "}";
  };
  auto vocab = import_json(llama_like().replace(llama_like().find("1000"), 4, "32256000"));
  REQUIRE_FALSE(vocab.ok());
  CHECK_THAT(vocab.error().message, Catch::Contains("config.json:2:") &&
                                        Catch::Contains("error: vocab_size: must be a whole number from 1 to 16777216, got 32256000"));
  check_refused_json(llama_like(R"(, "head_dim": 131072)"), {"head_dim", "from 1 to 65536"});
  // hidden_size / num_attention_heads past head_dim's bound: named, and a head_dim given is taken.
  check_refused_json(small_dense("1048576", "4", "8", "1000"), {"num_attention_heads", "head_dim of hidden_size (1048576) / 8 = 131072"});
  CHECK(import_json(small_dense("1048576", "4", "8", "1000").replace(0, 1, R"({"head_dim": 128, )")).ok());
  check_refused_json(small_dense("2147483647", "2147483647", "1", "2147483647"), {"hidden_size", "from 1 to 1048576"});
  check_refused_json(small_dense("1024", "100001", "8", "1000"), {"num_hidden_layers", "from 1 to 100000"});
  check_refused_json(llama_like(R"(, "num_local_experts": 2097152, "num_experts_per_tok": 2)"), {"num_local_experts"});
  check_refused_json(small_dense("1048576", "100000", "16", "16777216"),
                     {"config.json:1:1: error: the shapes in", "more than the 1e15 a model this tool can size may have"});
}

// A Gemma-class model_type brings a default sliding window; with DeepSeek's latent attention
// (kv_lora_rank) the import is refused, at the key that brought it (a fuzzer's find).
TEST_CASE("import: a sliding window on multi-head latent attention is refused where the config sets it", "[import][messages]") {
  const std::string mla = "{\"model_type\": \"gemma3_text\", \"hidden_size\": 1024, \"num_hidden_layers\": 4,\n"
                          " \"num_attention_heads\": 8, \"num_key_value_heads\": 8, \"vocab_size\": 1000,\n"
                          " \"intermediate_size\": 2048, \"kv_lora_rank\": 128, \"qk_rope_head_dim\": 32,\n"
                          " \"qk_nope_head_dim\": 64, \"v_head_dim\": 64";
  auto implied = import_json(mla + "}\n");
  REQUIRE_FALSE(implied.ok());
  CHECK_THAT(implied.error().message, Catch::Contains("kv_lora_rank: sliding-window layers are modelled for gqa and mha attention, "
                                                      "not for multi-head latent attention (kv_lora_rank); the window is "
                                                      "model_type's default"));
  auto given = import_json(mla + ", \"sliding_window\": 512}\n");
  REQUIRE_FALSE(given.ok());
  CHECK_THAT(given.error().message, Catch::Contains("error: sliding_window: sliding-window layers are modelled"));
}
