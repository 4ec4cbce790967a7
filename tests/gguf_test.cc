// GGUF headers read as models: small files the tests write (tests/gguf_writer.h), a dense llama
// and a Qwen3-MoE layout, their counts and exact sizes, the commands that take them, and the
// refusals of files that are not models this tool can size.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config_reader.h"
#include "tests/gguf_writer.h"
#include "tests/test_support.h"
#include "workloads/gguf.h"
#include "workloads/gguf_model.h"

using namespace vramsim;
using namespace vramsim::workloads;
using test::GgufWriter;

namespace {

constexpr std::uint32_t kF32 = 0, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14;

// Two llama blocks of hidden 256, 4 query and 2 KV heads, MLP 512, vocabulary 1000.
GgufWriter tiny_llama() {
  GgufWriter w;
  w.text("general.architecture", "llama").text("general.name", "Tiny Llama").u32("general.file_type", 15);
  w.u32("llama.block_count", 2).u32("llama.embedding_length", 256).u32("llama.context_length", 2048);
  w.u32("llama.attention.head_count", 4).u32("llama.attention.head_count_kv", 2);
  w.strings("tokenizer.ggml.tokens", {"<s>", "</s>", "a"});
  w.tensor("token_embd.weight", {256, 1000}, kQ4_K).tensor("output.weight", {256, 1000}, kQ6_K).tensor("output_norm.weight", {256}, kF32);
  for (int b = 0; b < 2; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    w.tensor(p + "attn_norm.weight", {256}, kF32).tensor(p + "attn_q.weight", {256, 256}, kQ4_K);
    w.tensor(p + "attn_k.weight", {256, 128}, kQ4_K).tensor(p + "attn_v.weight", {256, 128}, kQ6_K);
    w.tensor(p + "attn_output.weight", {256, 256}, kQ4_K).tensor(p + "ffn_norm.weight", {256}, kF32);
    w.tensor(p + "ffn_gate.weight", {256, 512}, kQ4_K).tensor(p + "ffn_up.weight", {256, 512}, kQ4_K);
    w.tensor(p + "ffn_down.weight", {512, 256}, kQ6_K);
  }
  return w;
}
constexpr double kLlamaElements = 256000.0 * 2 + 256 + 2 * (256 + 65536 + 32768 + 32768 + 65536 + 256 + 3 * 131072.0);

// Qwen3-MoE layout: 2 blocks, 8 experts of MLP 128, top-2, head_dim 64, tied embeddings.
GgufWriter tiny_moe() {
  GgufWriter w;
  w.text("general.architecture", "qwen3moe").text("general.basename", "Qwen3");
  w.u32("qwen3moe.block_count", 2).u32("qwen3moe.embedding_length", 256).u32("qwen3moe.context_length", 40960);
  w.u32("qwen3moe.attention.head_count", 4).u32("qwen3moe.attention.head_count_kv", 2).u32("qwen3moe.attention.key_length", 64);
  w.u32("qwen3moe.expert_count", 8).u32("qwen3moe.expert_used_count", 2);
  w.tensor("token_embd.weight", {256, 1000}, kQ8_0).tensor("output_norm.weight", {256}, kF32);
  for (int b = 0; b < 2; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    w.tensor(p + "attn_norm.weight", {256}, kF32).tensor(p + "attn_q.weight", {256, 256}, kQ8_0);
    w.tensor(p + "attn_k.weight", {256, 128}, kQ8_0).tensor(p + "attn_v.weight", {256, 128}, kQ8_0);
    w.tensor(p + "attn_output.weight", {256, 256}, kQ8_0).tensor(p + "ffn_norm.weight", {256}, kF32);
    w.tensor(p + "ffn_gate_inp.weight", {256, 8}, kF32);
    w.tensor(p + "ffn_gate_exps.weight", {256, 128, 8}, kQ4_K).tensor(p + "ffn_up_exps.weight", {256, 128, 8}, kQ4_K);
    w.tensor(p + "ffn_down_exps.weight", {128, 256, 8}, kQ8_0);
  }
  return w;
}

Result<GgufHeader> parse(const std::string& bytes) {
  std::istringstream in(bytes);
  return read_gguf_header(in, bytes.size(), "test.gguf");
}

ImportedModel import(const GgufWriter& w, const std::string& name = "tiny") {
  auto h = parse(w.header());
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  auto m = import_gguf_headers({*h}, "test.gguf", name);
  INFO((m.ok() ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return *m;
}

std::string refusal(const std::string& bytes) {
  auto h = parse(bytes);
  REQUIRE_FALSE(h.ok());
  return h.error().message;
}

}  // namespace

TEST_CASE("GGUF header: metadata and tensors, with each tensor's exact size from its ggml type") {
  const GgufWriter w = tiny_llama();
  auto h = parse(w.header());
  REQUIRE(h.ok());
  CHECK(h->version == 3);
  CHECK(h->find("general.architecture")->text == "llama");
  CHECK(h->find("llama.block_count")->number == 2);
  CHECK(h->find("tokenizer.ggml.tokens")->length == 3);  // a string array: its length, not its strings
  REQUIRE(h->tensors.size() == 3 + 2 * 9);
  CHECK(h->tensors[0].name == "token_embd.weight");
  CHECK(h->tensors[0].bytes == 1000 * 144);  // Q4_K: 144 bytes per 256 weights
  CHECK(h->tensors[1].bytes == 1000 * 210);  // Q6_K: 210 per 256
  double bytes = 0;
  for (const auto& t : h->tensors) bytes += t.bytes;
  CHECK(bytes == w.bytes());
}

TEST_CASE("GGUF model: a dense llama's counts, tied-ness and its own format hold the file's bytes") {
  const ImportedModel m = import(tiny_llama());
  CHECK(m.spec.layers == 2);
  CHECK(m.spec.hidden_size == 256);
  CHECK(m.spec.vocab_size == 1000);
  CHECK(m.spec.max_context == 2048);
  CHECK_FALSE(m.spec.tied_embeddings);
  CHECK(m.spec.attention.layout == AttentionLayout::Gqa);
  CHECK(m.spec.attention.kv_heads == 2);
  CHECK(m.spec.attention.head_dim == 64);  // embedding_length / head_count
  CHECK(m.spec.params_total == kLlamaElements);
  CHECK(m.spec.params_active == kLlamaElements - 256000);  // the input embeddings are not read whole
  CHECK_FALSE(m.spec.moe);
  REQUIRE(m.spec.file_formats.size() == 1);
  CHECK(m.spec.params_total * m.spec.file_formats[0].bits_per_weight / 8 == Approx(tiny_llama().bytes()).epsilon(1e-12));
  CHECK(m.yaml.find("file type Q4_K_M") != std::string::npos);
}

TEST_CASE("GGUF model: an MoE's routed experts get their own format, and active leaves out the unused experts") {
  const ImportedModel m = import(tiny_moe());
  REQUIRE(m.spec.moe);
  CHECK(m.spec.moe->experts == 8);
  CHECK(m.spec.moe->experts_per_token == 2);
  CHECK(m.spec.moe->layers == 2);
  CHECK(m.spec.moe->expert_params == 3 * 256 * 128);
  CHECK(m.spec.tied_embeddings);  // no output.weight
  CHECK(m.spec.attention.head_dim == 64);
  CHECK(m.spec.lineage == "qwen3");
  const double routed = 2 * 8 * 3 * 256 * 128.0;
  CHECK(m.spec.params_active == m.spec.params_total - routed * 6 / 8);
  REQUIRE(m.spec.file_formats.size() == 2);
  CHECK(m.spec.native_expert_format == "GGUF_EXPERTS");
  // Experts: two Q4_K tensors (4.5 bpw) and one Q8_0 (8.5) of equal size per block.
  CHECK(m.spec.file_formats[1].bits_per_weight == Approx((4.5 * 2 + 8.5) / 3).epsilon(1e-12));
  const double bytes = (m.spec.params_total - routed) * m.spec.file_formats[0].bits_per_weight / 8 +
                       routed * m.spec.file_formats[1].bits_per_weight / 8;
  CHECK(bytes == Approx(tiny_moe().bytes()).epsilon(1e-12));
}

TEST_CASE("GGUF model: MLA, MTP layers, sliding windows and per-layer head counts") {
  GgufWriter w = tiny_llama();
  w.text("general.architecture", "x");  // a second key: refused below
  CHECK(refusal(w.header()).find("a second value for the key") != std::string::npos);

  GgufWriter g;
  g.text("general.architecture", "gemma3").u32("gemma3.block_count", 12).u32("gemma3.embedding_length", 256);
  g.u32("gemma3.context_length", 131072).u32("gemma3.attention.head_count", 4).u32("gemma3.attention.head_count_kv", 1);
  g.u32("gemma3.attention.key_length", 256).u32("gemma3.attention.sliding_window", 1024);
  g.tensor("token_embd.weight", {256, 1000}, kQ8_0);
  const ImportedModel gm = import(g);
  REQUIRE(gm.spec.attention.sliding_window);
  CHECK(gm.spec.attention.sliding_window->layers == 10);  // 5 of every 6 (llama.cpp's gemma3 pattern)
  CHECK(gm.spec.attention.sliding_window->window_tokens == 1024);

  GgufWriter d;
  d.text("general.architecture", "deepseek2").u32("deepseek2.block_count", 3).u32("deepseek2.nextn_predict_layers", 1);
  d.u32("deepseek2.embedding_length", 256).u32("deepseek2.context_length", 163840);
  d.i32_array("deepseek2.attention.head_count", {16, 16, 16}).u32("deepseek2.attention.kv_lora_rank", 512);
  d.u32("deepseek2.rope.dimension_count", 64).u32("deepseek2.attention.key_length", 192);
  d.tensor("token_embd.weight", {256, 1000}, kQ8_0);
  const ImportedModel dm = import(d);
  CHECK(dm.spec.layers == 2);  // the MTP block is not a decoder layer
  CHECK(dm.spec.mtp_head);
  CHECK(dm.spec.attention.layout == AttentionLayout::Mla);
  CHECK(dm.spec.attention.latent_dim == 576);
  CHECK(dm.spec.attention.query_heads == 16);
}

TEST_CASE("GGUF header: malformed files are refused with the byte offset and what was expected") {
  CHECK(refusal("GGML\x03\0\0\0").find("not a GGUF file") != std::string::npos);
  CHECK(refusal(std::string("GGUF\x01\0\0\0", 8) + std::string(16, '\0')).find("version 1") != std::string::npos);
  CHECK(refusal(std::string("GGUF\0\0\0\x03", 8)).find("big-endian") != std::string::npos);
  const std::string full = tiny_llama().header();
  const std::string cut = refusal(full.substr(0, full.size() - 5));
  CHECK(cut.find("the file ends inside") != std::string::npos);
  CHECK(cut.find("tensor \"blk.1.ffn_down.weight\"") != std::string::npos);
  // Counts no file of this size could hold are refused before anything is allocated.
  std::string huge = std::string("GGUF\x03\0\0\0", 8);
  huge += std::string("\xff\xff\xff\xff\xff\xff\xff\x0f", 8) + std::string(8, '\0');
  CHECK(refusal(huge).find("tensors in") != std::string::npos);
  GgufWriter t;
  t.text("general.architecture", "llama").tensor("token_embd.weight", {256, 10}, kQ8_0);
  std::string bad_type = t.header();
  bad_type[bad_type.size() - 12] = 77;  // the tensor's type id
  CHECK(refusal(bad_type).find("unknown ggml type 77") != std::string::npos);
}

TEST_CASE("GGUF model: files that are not models this tool can size say why") {
  GgufWriter none;
  none.u32("llama.block_count", 2);
  auto h = parse(none.header());
  REQUIRE(h.ok());
  auto r = import_gguf_headers({*h}, "test.gguf", "x");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("general.architecture") != std::string::npos);

  GgufWriter mamba;
  mamba.text("general.architecture", "mamba").u32("mamba.block_count", 2).u32("mamba.ssm.state_size", 16);
  mamba.tensor("token_embd.weight", {256, 10}, kQ8_0);
  auto mh = parse(mamba.header());
  REQUIRE(mh.ok());
  auto mr = import_gguf_headers({*mh}, "test.gguf", "x");
  REQUIRE_FALSE(mr.ok());
  CHECK(mr.error().message.find("recurrent or linear-attention layers") != std::string::npos);

  GgufWriter missing;
  missing.text("general.architecture", "llama").u32("llama.block_count", 2).tensor("token_embd.weight", {256, 10}, kQ8_0);
  auto ms = parse(missing.header());
  REQUIRE(ms.ok());
  auto mm = import_gguf_headers({*ms}, "test.gguf", "x");
  REQUIRE_FALSE(mm.ok());
  CHECK(mm.error().message.find("llama.embedding_length") != std::string::npos);
}

TEST_CASE("GGUF model: fit, run and import-model take the file, its sizes the file's bytes") {
  const auto dir = test::fresh_dir("gguf-cli");
  tiny_llama().write(dir / "tiny-llama-Q4_K_M.gguf");
  tiny_moe().write(dir / "tiny-moe.gguf");
  const std::string llama = (dir / "tiny-llama-Q4_K_M.gguf").string(), moe = (dir / "tiny-moe.gguf").string();

  const std::string fit = test::run_ok("fit --model " + llama + " --gpu rtx-4090 --json");
  CHECK(test::json_text(fit, "quant") == "GGUF");
  CHECK(test::json_number(fit, "weights_gib") * 1024 * 1024 * 1024 == Approx(tiny_llama().bytes()).epsilon(1e-9));
  const std::string fit_moe = test::run_ok("fit --model " + moe + " --gpu rtx-4090 --json");
  CHECK(test::json_number(fit_moe, "weights_gib") * 1024 * 1024 * 1024 == Approx(tiny_moe().bytes()).epsilon(1e-9));
  // --quant still asks what another file of the same model would need.
  const std::string q8 = test::run_ok("fit --model " + moe + " --gpu rtx-4090 --quant Q8_0 --json");
  CHECK(test::json_number(q8, "bits_per_weight") == 8.5);

  const std::string run = test::run_ok("run --model " + moe + " --gpu rtx-4090 --json");
  CHECK(test::json_number(run, "p50", "decode_tok_s") > 0);
  CHECK(test::json_number(run, "p50", "prefill_tok_s") > 0);

  const std::string yaml = test::run_ok("import-model " + moe + " --name tiny-moe");
  CHECK(yaml.find("native_expert_format: GGUF_EXPERTS") != std::string::npos);
  CHECK(yaml.find("experts_per_token: 2") != std::string::npos);

  test::check_usage_error("fit --model " + (dir / "absent.gguf").string() + " --gpu rtx-4090", "no such file");
  std::ofstream(dir / "junk.gguf") << "not a model";
  test::check_usage_error("run --model " + (dir / "junk.gguf").string() + " --gpu rtx-4090", "not a GGUF file");
}

TEST_CASE("GGUF model: compare takes the file as a model, on the command line and in a compare file") {
  const auto dir = test::fresh_dir("gguf-compare");
  tiny_moe().write(dir / "tiny-moe.gguf");
  const std::string moe = (dir / "tiny-moe.gguf").string();
  const std::string out = test::run_ok("compare --model " + moe + " --option rtx-4090 --option rtx-3090 --host ddr4-dual-channel "
                                       "--no-error-bars --json");
  const auto doc = test::parse_json(out);
  const auto* models = doc.find("models");
  REQUIRE(models);
  REQUIRE(models->items().size() == 1);
  CHECK(models->items()[0].find("model")->text() == moe);
  CHECK(test::json_truth(out, "ran", "options"));
  // In a compare file: relative to the file.
  std::ofstream(dir / "question.yaml") << "name: tiny\nmodels: [tiny-moe.gguf]\nhost: ddr4-dual-channel\n"
                                          "options:\n  - { gpus: rtx-4090 }\n  - { gpus: rtx-3090 }\n";
  const std::string from_file = test::run_ok("compare " + (dir / "question.yaml").string() + " --no-error-bars --json");
  CHECK(test::json_truth(from_file, "ran", "options"));
  std::ofstream(dir / "missing.yaml") << "name: tiny\nmodels: [absent.gguf]\noptions:\n  - { gpus: rtx-4090 }\n";
  test::check_usage_error("compare " + (dir / "missing.yaml").string(), "missing.yaml:2:10: error: models[0]: no such model file \"absent.gguf\"");
}

TEST_CASE("GGUF model: a split model is read part by part from its first part") {
  const auto dir = test::fresh_dir("gguf-split");
  GgufWriter first = tiny_moe();
  first.u32("split.count", 2);
  GgufWriter second;
  second.u32("split.count", 2).tensor("blk.2.attn_norm.weight", {256}, kF32);
  first.write(dir / "m-00001-of-00002.gguf");
  second.write(dir / "m-00002-of-00002.gguf");
  auto r = import_gguf((dir / "m-00001-of-00002.gguf").string(), "m");
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  CHECK(r->spec.params_total == import(tiny_moe()).spec.params_total + 256);
  auto later = import_gguf((dir / "m-00002-of-00002.gguf").string(), "m");
  REQUIRE_FALSE(later.ok());
  CHECK(later.error().message.find("give its first part") != std::string::npos);
  std::filesystem::remove(dir / "m-00002-of-00002.gguf");
  auto missing = import_gguf((dir / "m-00001-of-00002.gguf").string(), "m");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("part 2 of 2") != std::string::npos);
}
