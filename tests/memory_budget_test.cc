// The memory-budget model against the reference's worked figures (docs/memory-model.md) and
// closed-form KV sizes for each attention layout.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/config_reader.h"
#include "hw/gpu.h"
#include "tests/test_support.h"
#include "workloads/memory_budget.h"

using namespace vramsim;
using namespace vramsim::workloads;

namespace {

ModelSpec model(const std::string& name) {
  config::Node ref = config::Node::scalar(name, config::Origin{"test", 0, 0});
  return decode_model(test::catalogue().resolve("models", "model", ref, "model"), "model");
}

hw::GpuSpec gpu(const std::string& name) {
  config::Node ref = config::Node::scalar(name, config::Origin{"test", 0, 0});
  return hw::decode_gpu(test::catalogue().resolve("gpus", "GPU", ref, "gpu"), "gpu");
}

BudgetRequest request(double bpw, std::int64_t context) {
  BudgetRequest r;
  r.bits_per_weight = bpw;
  r.context_tokens = context;
  return r;
}

double gib(double bytes) { return bytes / units::kGiB; }
double round1(double v) { return std::round(v * 10) / 10; }

}  // namespace

TEST_CASE("Llama 3.1 8B Q4_K_M at 8K, the reference's worked example", "[budget]") {
  Footprint f = footprint(model("llama-3.1-8b"), request(4.85, 8192));
  CHECK(f.weights == Approx(8.03e9 * 4.85 / 8));
  CHECK(gib(f.weights) == Approx(4.53).margin(0.005));
  CHECK(f.kv == 2.0 * 32 * 8 * 128 * 8192 * 2);
  CHECK(gib(f.kv) == Approx(1.00).margin(0.005));
  CHECK(gib(f.overhead) == Approx(1.09).margin(0.005));
  CHECK(gib(f.total) == Approx(6.63).margin(0.005));
}

TEST_CASE("Llama 3.1 8B at 2K, 128K and in BF16, the reference's further checks", "[budget]") {
  // The reference quotes one decimal (5.8, 22.8, 17.9); the exact model gives the second.
  double at2k = gib(footprint(model("llama-3.1-8b"), request(4.85, 2048)).total);
  double at128k = gib(footprint(model("llama-3.1-8b"), request(4.85, 131072)).total);
  double bf16 = gib(footprint(model("llama-3.1-8b"), request(16, 8192)).total);
  CHECK(at2k == Approx(5.82).margin(0.005));
  CHECK(round1(at2k) == Approx(5.8));
  CHECK(at128k == Approx(22.83).margin(0.005));
  CHECK(round1(at128k) == Approx(22.8));
  CHECK(bf16 == Approx(17.88).margin(0.005));
  CHECK(round1(bf16) == Approx(17.9));
}

TEST_CASE("decode estimate: 8B Q4_K_M on an RTX 4090 and on a 90 GB/s CPU", "[budget]") {
  ModelSpec m = model("llama-3.1-8b");
  BudgetRequest r = request(4.85, 8192);
  CHECK(bytes_read_per_token(m, r) / 1e9 == Approx(5.94).margin(0.01));  // "~5.9 GB per token"
  hw::GpuSpec g = gpu("rtx-4090");
  double tok_s = decode_tokens_per_second(m, r, g, 1);
  CHECK(tok_s == Approx(1008e9 * 0.75 / bytes_read_per_token(m, r)));
  CHECK(std::round(tok_s) == 127);  // "~127 tok/s"
  // CPU alone at 90 GB/s: resident share 0 -> all bytes over host bandwidth x 0.75.
  double cpu = 90e9 * budget::kHostDecodeEfficiency / bytes_read_per_token(m, r);
  CHECK(std::round(cpu) == 11);  // "~11 tok/s"
}

TEST_CASE("usable memory by class and card count", "[budget]") {
  CHECK(gib(usable_bytes(gpu("rtx-4090"), 1)) == Approx(22.32).margin(0.005));  // "~22.3 GiB"
  CHECK(usable_share(hw::GpuClass::Workstation, 1) == 0.95);
  CHECK(usable_share(hw::GpuClass::Datacenter, 1) == 0.95);
  CHECK(usable_share(hw::GpuClass::Consumer, 2) == 0.90);
  CHECK(gib(usable_bytes(gpu("m4-max-128gb"), 1)) == Approx(96.0));  // 128 GB -> ~96 GB
  CHECK(gib(usable_bytes(gpu("rtx-4090"), 2)) == Approx(2 * 24 * 0.90));
}

TEST_CASE("KV cache, full multi-head attention: every head pays", "[budget][kv]") {
  ModelSpec m = model("command-r-35b");
  REQUIRE(m.attention.layout == AttentionLayout::Mha);
  double expected = 2.0 * m.layers * m.attention.query_heads * m.attention.head_dim * 8192 * 2.0;
  CHECK(kv_cache_bytes(m, 8192, 2.0, 2.0, 1) == expected);
}

TEST_CASE("KV cache, sliding window: windowed layers stop growing at the window", "[budget][kv]") {
  ModelSpec m = model("gemma-3-27b");
  REQUIRE(m.attention.sliding_window);
  const auto& sw = *m.attention.sliding_window;
  CHECK(sw.window_tokens == 1024);
  CHECK(sw.layers == 52);  // 62 layers, one global in every 6
  double per_token_layer = 2.0 * m.attention.kv_heads * m.attention.head_dim * 2.0;
  double expected = per_token_layer * (10.0 * 32768 + 52.0 * 1024);
  CHECK(kv_cache_bytes(m, 32768, 2.0, 2.0, 1) == expected);
  // Below the window every layer holds the whole context.
  CHECK(kv_cache_bytes(m, 512, 2.0, 2.0, 1) == per_token_layer * 62 * 512);
}

TEST_CASE("KV cache, multi-head latent attention: one 576-element vector per token per layer", "[budget][kv]") {
  ModelSpec m = model("deepseek-v3");
  REQUIRE(m.attention.layout == AttentionLayout::Mla);
  CHECK(m.attention.latent_dim == 576);
  CHECK(kv_cache_bytes(m, 4096, 2.0, 2.0, 1) == 61.0 * 576 * 4096 * 2.0);
}

TEST_CASE("KV cache: quantised types, separate K and V, and concurrency", "[budget][kv]") {
  ModelSpec m = model("llama-3.1-8b");
  double per_elem_layer_token = 32.0 * 8 * 128;
  CHECK(kv_cache_bytes(m, 1000, 1.06, 1.06, 1) == Approx(per_elem_layer_token * 1000 * 2 * 1.06));
  CHECK(kv_cache_bytes(m, 1000, 2.0, 0.56, 1) == Approx(per_elem_layer_token * 1000 * (2.0 + 0.56)));
  CHECK(kv_cache_bytes(m, 1000, 2.0, 2.0, 4) == 4 * kv_cache_bytes(m, 1000, 2.0, 2.0, 1));
}

TEST_CASE("MoE: fit by total size, speed by active parameters", "[budget]") {
  ModelSpec m = model("qwen3-30b-a3b");
  REQUIRE(m.moe);
  BudgetRequest r = request(4.85, 4096);
  CHECK(footprint(m, r).weights == Approx(m.params_total * 4.85 / 8));
  CHECK(bytes_read_per_token(m, r) == Approx(m.params_active * 4.85 / 8 + kv_cache_bytes(m, 4096, 2, 2, 1)));
}

TEST_CASE("largest context that fits is the exact boundary", "[budget]") {
  ModelSpec m = model("llama-3.3-70b");
  BudgetRequest r = request(4.85, 8192);
  double usable = usable_bytes(gpu("rtx-6000-ada"), 1);
  std::int64_t best = max_context_that_fits(m, r, usable);
  REQUIRE(best > 0);
  REQUIRE(best < m.max_context);
  r.context_tokens = best;
  CHECK(footprint(m, r).total <= usable);
  r.context_tokens = best + 1;
  CHECK(footprint(m, r).total > usable);
}

TEST_CASE("offload: resident share and the two bandwidths add as times", "[budget]") {
  ModelSpec m = model("llama-3.3-70b");
  BudgetRequest r = request(4.85, 8192);
  hw::GpuSpec g = gpu("rtx-4090");
  OffloadEstimate e = offload_estimate(m, r, g, 1, 89.6e9);
  double share = usable_bytes(g, 1) / footprint(m, r).total;
  CHECK(e.resident_fraction == Approx(share));
  double bytes = bytes_read_per_token(m, r);
  double t = share * bytes / (g.memory_bandwidth * 0.75) + (1 - share) * bytes / (89.6e9 * 0.75);
  CHECK(e.decode_tokens_per_second == Approx(1 / t));
  CHECK(e.decode_tokens_per_second < 89.6e9 * 0.75 / bytes * 2);  // the host dominates
}
