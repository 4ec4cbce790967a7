// Importing Hugging Face config.json files (written from the published fields) reproduces
// the catalogue's hand-checked descriptions.
#include <catch2/catch.hpp>

#include "core/config_reader.h"
#include "tests/test_support.h"
#include "workloads/hf_import.h"

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

void check_same_architecture(const std::string& name, double params_tolerance, double active_tolerance = 0.02) {
  INFO(name);
  ModelSpec a = imported(name);
  ModelSpec b = catalogue_model(name);
  CHECK(a.layers == b.layers);
  CHECK(a.attention.layout == b.attention.layout);
  CHECK(a.attention.query_heads == b.attention.query_heads);
  if (a.attention.layout == AttentionLayout::Mla) {
    CHECK(a.attention.latent_dim == b.attention.latent_dim);
  } else {
    CHECK(a.attention.kv_heads == b.attention.kv_heads);
    CHECK(a.attention.head_dim == b.attention.head_dim);
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
    // Publishers differ on whether embeddings count as active (OpenAI leaves them out).
    CHECK(a.params_active == Approx(b.params_active).epsilon(active_tolerance));
  }
  CHECK(a.params_total == Approx(b.params_total).epsilon(params_tolerance));
}

}  // namespace

TEST_CASE("import: Llama 3.1 8B counts 8.03e9 parameters", "[import]") {
  ModelSpec m = imported("llama-3.1-8b");
  CHECK(m.params_total == Approx(8.03e9).epsilon(0.002));
  check_same_architecture("llama-3.1-8b", 0.01);
}

TEST_CASE("import: Mixtral 8x7B, routed experts", "[import]") { check_same_architecture("mixtral-8x7b", 0.01); }
TEST_CASE("import: Qwen3 30B-A3B, 128 experts", "[import]") { check_same_architecture("qwen3-30b-a3b", 0.02); }
TEST_CASE("import: DeepSeek V3, latent attention and dense first layers", "[import]") {
  check_same_architecture("deepseek-v3", 0.02);
}
TEST_CASE("import: Gemma 3 27B, nested text config and a window pattern", "[import]") {
  check_same_architecture("gemma-3-27b", 0.03);
}
TEST_CASE("import: gpt-oss-20b, explicit layer types", "[import]") { check_same_architecture("gpt-oss-20b", 0.02, 0.17); }

TEST_CASE("import: a config without the essentials is refused with the field's name", "[import]") {
  auto r = import_hf_config(test::data_path("hf/missing-layers.json"), "broken");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("num_hidden_layers"));
  auto none = import_hf_config(test::data_path("hf/does-not-exist.json"), "x");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("cannot open"));
}
