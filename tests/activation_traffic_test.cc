// A prompt micro-batch's activation traffic outside the GEMMs (sim/activation_traffic.h,
// engine.prefill_activation_traffic): the layer widths from the model's counts, the bytes of
// llama.cpp's graph per token and layer, and what they add to a prefill.
#include <catch2/catch.hpp>

#include "sim/activation_traffic.h"
#include "sim/kernel_rates.h"
#include "tests/sim_fixture.h"

using namespace vramsim;
using namespace vramsim::sim;

TEST_CASE("layer widths come from the model's counts: Llama 3.1 8B's FFN is 14,336 wide", "[step][prefill][activations]") {
  const Scenario s = test::bundled_scenario("llama-bench-tg128", {"model=llama-3.1-8b"});
  const LayerWidths w = layer_widths(s.model);
  CHECK(w.hidden == 4096);
  CHECK(w.query == 4096);  // 32 heads x 128
  CHECK(w.kv == 1024);     // 8 KV heads x 128
  // (8.03e9 - 2 x 128,256 x 4,096) / 32 layers - attention (2 x 4096^2 + 2 x 4096 x 1024), over
  // 3 x 4096: config.json's intermediate_size is 14,336.
  CHECK(w.dense_ffn == Approx(14336).epsilon(0.005));
  CHECK(w.routed_ffn == 0);
}

TEST_CASE("an MoE layer's FFN width is its k routed experts' plus what stays dense", "[step][prefill][activations]") {
  const Scenario s = test::bundled_scenario("llama-bench-tg128", {"model=qwen3-30b-a3b"});
  const auto& m = s.model;
  REQUIRE(m.moe);
  const LayerWidths w = layer_widths(m);
  CHECK(w.experts_per_token == m.moe->experts_per_token);
  CHECK(w.routed_ffn == Approx(static_cast<double>(m.moe->layers) / m.layers * m.moe->experts_per_token * m.moe->expert_params /
                               (3.0 * m.hidden_size)));
  CHECK(w.dense_ffn >= 0);
}

TEST_CASE("llama.cpp's graph moves about 0.8 MB a token and layer on MMQ, more on cuBLAS, less in-kernel", "[step][prefill][activations]") {
  LayerWidths w;
  w.hidden = 4096, w.query = 4096, w.kv = 1024, w.dense_ffn = 14336;
  const double mmq = activation_bytes_per_token_layer(w, GemmPath::Mmq, true, 2.0);
  const double cublas = activation_bytes_per_token_layer(w, GemmPath::Cublas, true, 2.0);
  const double metal = activation_bytes_per_token_layer(w, GemmPath::InKernel, true, 2.0);
  // Element-wise: 32h + 8q + 8kv + 12kv + 8q + 24h + 20f; inputs 5h + q + f at 5.125 (MMQ) or 6
  // bytes (cuBLAS), cuBLAS's outputs 6 x (2h + q + 2kv + 2f).
  const double elementwise = 56.0 * 4096 + 16.0 * 4096 + 20.0 * 1024 + 20.0 * 14336;
  const double inputs = 5.0 * 4096 + 4096 + 14336;
  CHECK(metal == Approx(elementwise));
  CHECK(mmq == Approx(elementwise + 5.125 * inputs));
  CHECK(cublas == Approx(elementwise + 6.0 * inputs + 6.0 * (2.0 * 4096 + 4096 + 2048 + 2.0 * 14336)));
  CHECK(mmq == Approx(0.80e6).epsilon(0.02));
  CHECK(cublas == Approx(1.09e6).epsilon(0.02));
  // A fused attention keeps its output in place: no cont.
  CHECK(activation_bytes_per_token_layer(w, GemmPath::Mmq, false, 2.0) == Approx(mmq - 8.0 * 4096));
}

TEST_CASE("with the traffic on, a compute-bound prefill pays its bytes at the card's bandwidth on top", "[step][prefill][activations]") {
  const std::vector<std::string> base = {"engine.prefill_ubatch=512", "workload.prompt_tokens=512"};
  std::vector<std::string> on = base;
  on.push_back("engine.prefill_activation_traffic=true");
  const Scenario off_s = test::bundled_scenario("llama-bench-tg128", base), on_s = test::bundled_scenario("llama-bench-tg128", on);
  REQUIRE_FALSE(off_s.engine.physics.prefill_activation_traffic);  // the preset's default (configs/engines/llama.cpp.yaml)
  const StepModel off(off_s, plan_vram(off_s)), with(on_s, plan_vram(on_s));
  const StepCosts a = off.prefill(PrefillPass{{{512, 0}}}), b = with.prefill(PrefillPass{{{512, 0}}});
  REQUIRE(a.compute > a.launch_sync);  // compute-bound
  const double per_token_layer = activation_bytes_per_token_layer(layer_widths(on_s.model), GemmPath::Mmq, false,
                                                                  on_s.engine.kv.bytes_per_element);
  const double bw = on_s.cards[0].gpu.spec.memory_bandwidth * on_s.engine.physics.gpu_bandwidth_efficiency;
  CHECK(b.compute - a.compute == Approx(512.0 * on_s.model.layers * per_token_layer / bw));
  // Decode steps do not change: their per-layer cost (layer_launch) was fitted with these kernels in it.
  CHECK(with.layer(LayerExperts{}, 1, 100).total() == Approx(off.layer(LayerExperts{}, 1, 100).total()));
}
