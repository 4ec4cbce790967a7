// The step model against closed-form expectations.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "sim/request_runner.h"
#include "sim/step_model.h"
#include "workloads/model.h"
#include "tests/sim_fixture.h"

using namespace vramsim;
using namespace vramsim::sim;

TEST_CASE("the engine's split comes from the link: pcie_frac 0.38 on Gen3, 0.55 near Gen4", "[step]") {
  Scenario s = test::case_study("shared");
  VramPlan plan = plan_vram(s);
  StepModel m(s, plan);
  CHECK(m.pcie_frac() == Approx(13.9 / (13.9 + 22.7)));
  CHECK(std::round(m.pcie_frac() * 100) == 38);  // the engine's log line
  CHECK(m.host_expert_slots() == 6);             // round(10 x 0.62)
  CHECK(m.split_misses(6) == 0);
  CHECK(m.split_misses(9) == 3);
  Scenario gen4 = test::case_study("shared", {"hardware.link.preset=pcie-gen4-x16", "hardware.link.measured_h2d=27.7GB/s"});
  StepModel m4(gen4, plan_vram(gen4));
  CHECK(m4.pcie_frac() == Approx(0.55).margin(0.005));  // the engine's default
  CHECK(m4.host_expert_slots() == std::lround(10 * (1 - m4.pcie_frac())));  // 5: a faster link takes more
  CHECK(m4.host_expert_slots() < m.host_expert_slots());
}

TEST_CASE("a layer without misses: attention + hits + launch", "[step]") {
  Scenario s = test::case_study("exclusive");
  VramPlan plan = plan_vram(s);
  StepModel m(s, plan);
  const double bw = 1792e9 * s.engine.physics.gpu_bandwidth_efficiency;
  const double head = 151936.0 * 2048 * 2;
  const double layer_bytes = (plan.non_expert_weights - 2 * head) / 48;
  const double kv = 2.0 * 2 * 256 * 1.06 * 1000;  // one layer's KV for 1000 tokens (K and V)
  StepCosts c = m.layer(LayerExperts{20, 0, 0}, 5, 1000);
  CHECK(c.compute == Approx((layer_bytes + kv) / bw + 20 * plan.expert_bytes / bw));
  CHECK(c.launch_sync == Approx(15e-6));
  CHECK(c.stall == 0);
  CHECK(c.total() == Approx(c.compute + c.launch_sync));
}

TEST_CASE("a layer with misses waits for the bubble and the slower of host and PCIe", "[step]") {
  Scenario s = test::case_study("shared");
  VramPlan plan = plan_vram(s);
  StepModel m(s, plan);
  const auto& ph = s.engine.physics;
  const double bw = 1792e9 * ph.gpu_bandwidth_efficiency;
  const double expert = plan.expert_bytes;
  // The host's expert kernels are compute-bound: 2.4 TFLOPS x bytes per FLOP (51.4 GB/s).
  const double wave = expert * ph.host_expert_workers / (2.4e12 * ph.cpu_expert_bytes_per_flop);
  const double activations = 2.0 * 5 * 2048 * 2 / 13.9e9;
  // 4 misses: all on the host, one wave.
  StepCosts host_only = m.layer(LayerExperts{25, 4, 0}, 5, 100);
  const double hits = 25 * expert / bw;
  CHECK(host_only.stall == Approx(ph.miss_sync));
  CHECK(host_only.cpu_experts == Approx(ph.miss_sync + wave + activations - hits - ph.miss_sync));
  CHECK(host_only.transfer == 0);
  // 12 misses: 6 on the host, 6 read over PCIe in place; PCIe is the slower path.
  StepCosts both = m.layer(LayerExperts{25, 12, 6}, 5, 100);
  const double pcie = 2e-6 + 6 * expert / (13.9e9 * ph.zero_copy_efficiency);
  REQUIRE(pcie > wave + activations);
  CHECK(both.transfer == Approx(ph.miss_sync + pcie - hits - ph.miss_sync));
  CHECK(both.pcie_bytes == Approx(6 * expert + 2.0 * 5 * 2048 * 2));
}

// The host's expert rate follows its arithmetic (cores x clock x SIMD: cpu.fp32_throughput)
// while the kernels are compute-bound, and its memory bandwidth only when that binds.
TEST_CASE("the expert-cache host rate follows the host's fp32 peak, capped by its memory bandwidth", "[step]") {
  auto rate = [](std::vector<std::string> sets) {
    Scenario s = test::case_study("shared", std::move(sets));
    StepModel m(s, plan_vram(s));
    return m.host_worker_rate() * s.engine.physics.host_expert_workers;
  };
  const double base = rate({});
  CHECK(base == Approx(2.4e12 * 0.02143));  // 51.4 GB/s, the calibrated figure
  // Faster DIMMs, same cores: no change. Twice the cores: twice the rate.
  CHECK(rate({"hardware.host.memory.bandwidth=400GB/s"}) == Approx(base));
  CHECK(rate({"hardware.host.cpu.fp32_throughput=4.8TFLOPS"}) == Approx(2 * base));
  // Few channels under many cores: the memory ceiling (0.75 of 51.2 GB/s) binds.
  CHECK(rate({"hardware.host.memory.bandwidth=51.2GB/s"}) == Approx(0.75 * 51.2e9));
  // Without the key the rate is the memory-bound share alone (the other engines' model).
  CHECK(rate({"engine.cpu_expert_bytes_per_flop=", "engine.cpu_expert_share=0.201"}) == Approx(0.201 * 255.9e9));
}

// The premise of docs/cliff.md's bound on single-stream requests: past the host's share, each
// expert read over PCIe lengthens a layer by at most its own link time (never shortens it), so
// 1 / decode speed grows at most linearly in the overflow ratio.
TEST_CASE("each expert read over PCIe adds at most its link time to a layer and never removes time", "[step]") {
  Scenario s = test::case_study("shared");
  VramPlan plan = plan_vram(s);
  StepModel m(s, plan);
  const int host = m.host_expert_slots();
  const double per_read = plan.expert_bytes / (13.9e9 * s.engine.physics.zero_copy_efficiency);
  const double link_latency = 2e-6;
  const double base = m.layer(LayerExperts{25, host, 0}, 5, 100).total();
  double previous = base;
  for (int reads = 1; reads <= 30; ++reads) {
    const double t = m.layer(LayerExperts{25, host + reads, reads}, 5, 100).total();
    CHECK(t >= previous);
    CHECK(t - base <= link_latency + reads * per_read + 1e-12);
    previous = t;
  }
  // Far past the host's wave the bound is reached: the link is the critical path.
  const double far = m.layer(LayerExperts{25, host + 30, 30}, 5, 100).total() - m.layer(LayerExperts{25, host + 29, 29}, 5, 100).total();
  CHECK(far == Approx(per_read));
}

TEST_CASE("copy-in policies pay latency + bytes / bandwidth per missed expert", "[step]") {
  Scenario s = test::case_study("shared", {"engine.expert_cache.policy=lru"});
  VramPlan plan = plan_vram(s);
  StepModel m(s, plan);
  const double bw = 1792e9 * s.engine.physics.gpu_bandwidth_efficiency;
  StepCosts c = m.layer(LayerExperts{10, 3, 0}, 5, 0);
  const double copy = 3 * (2e-6 + plan.slot_bytes / 13.9e9);
  CHECK(c.transfer == Approx(copy - 10 * plan.expert_bytes / bw));
  CHECK(c.pcie_bytes == Approx(3 * plan.slot_bytes));
}

TEST_CASE("MTP: drafts accepted per step match the acceptance rate", "[step]") {
  const double a = conditional_acceptance(4, 0.64);
  CHECK(a + a * a + a * a * a + a * a * a * a == Approx(4 * 0.64));
  CHECK(conditional_acceptance(4, 0.0) == 0.0);
}

// llama.cpp's server caps a step's draft at the tokens still to generate after the step's own
// (server_slot::get_n_draft_max: n_remaining - 1): a request's last steps verify fewer positions,
// and read fewer draft heads.
TEST_CASE("MTP: a step never drafts past the request's last token", "[step]") {
  test::CaseStudyCard card;
  for (std::int64_t gen : {2, 3, 7, 192}) {
    INFO(gen);
    RequestRunner r = card.runner(11, 26, gen);
    r.take_prefill_token();
    std::int64_t drafted = 0;
    while (!r.done()) {
      const std::int64_t remaining = gen - r.generated();
      CHECK(r.next_drafts() == std::min<std::int64_t>(4, remaining - 1));
      const StepResult step = r.step(false);
      CHECK(step.positions == 1 + step.drafts);
      CHECK(step.drafts == std::min<std::int64_t>(4, remaining - 1));
      CHECK(step.tokens_out <= remaining);
      drafted += step.drafts;
    }
    CHECK(r.counters().drafted == drafted);
    CHECK(r.generated() == gen);
  }
  // One token after the prefill's: a plain step, one position, no draft head read.
  RequestRunner two = card.runner(12, 26, 2);
  two.take_prefill_token();
  const StepResult last = two.step(false);
  CHECK(last.positions == 1);
  CHECK(card.model.step_fixed(1, 0).vram_bytes < card.model.step_fixed(5, 4).vram_bytes);
  // A batch: each request verifies its own positions; the draft passes run for the longest.
  RequestRunner a = card.runner(13, 26, 192), b = card.runner(14, 26, 2);
  a.take_prefill_token();
  b.take_prefill_token();
  BatchStep stepper;
  const StepResult both = stepper.run({&a, &b}, false);
  CHECK(both.positions == 5 + 1);
  CHECK(both.drafts == 4);
}

// Sliding-window layers read at most their window of KV: Gemma 3 27B keeps 1,024 tokens on 52 of
// its 62 layers, gpt-oss-20b 128 on 12 of 24; a model without windows reads the whole context.
TEST_CASE("attended KV positions: windowed layers are capped at their window", "[step]") {
  auto model = [](const std::string& name) {
    return workloads::decode_model(test::catalogue().resolve("models", "model", config::Node::scalar(name, {"t", 0, 0}), "model"),
                                   "model");
  };
  const auto gemma = model("gemma-3-27b");
  REQUIRE(gemma.attention.sliding_window);
  CHECK(attended_tokens(gemma, 1000) == 1000);  // inside the window every layer reads it all
  CHECK(attended_tokens(gemma, 32768) == std::llround((10.0 * 32768 + 52.0 * 1024) / 62));
  const auto oss = model("gpt-oss-20b");
  CHECK(attended_tokens(oss, 2048) == (2048 + 128) / 2);
  CHECK(attended_tokens(model("llama-3.1-8b"), 100000) == 100000);
}

// FP8 tensor cores serve a product only when its weights are FP8: a dense model's weights are
// `weights.other`, an MoE model's also its experts.
TEST_CASE("the FP8 tensor rate applies when every weight is FP8", "[step]") {
  Scenario s = test::case_study("exclusive");
  hw::GpuSpec gpu;
  gpu.dense_fp16_flops = 1e15;
  gpu.dense_fp8_flops = 2e15;
  s.engine.other_format.name = "FP8";
  s.engine.expert_format.name = "Q2_0";
  CHECK(gemm_peak(gpu, s) == 1e15);  // MoE, experts not FP8
  s.engine.expert_format.name = "FP8";
  CHECK(gemm_peak(gpu, s) == 2e15);
  s.model.moe.reset();
  s.engine.expert_format.name = "BF16";  // a dense model has no experts: only `other` counts
  CHECK(gemm_peak(gpu, s) == 2e15);
  gpu.dense_fp8_flops = 0;  // Ampere: no FP8 tensor cores
  CHECK(gemm_peak(gpu, s) == 1e15);
}

// engine.gemm_half_rows = h: a prefill GEMM of r rows runs at r / (r + h) of the rate, micro-batch
// by micro-batch; a routed expert's GEMM has tokens x top-k / experts rows.
TEST_CASE("prefill GEMMs fill their tiles by rows: small micro-batches and routed experts run slower", "[step]") {
  Scenario s = test::case_study("exclusive", {"engine.prefill_ubatch=512"});
  const double rate = 1e14;
  const double plain = StepModel(s, plan_vram(s)).prefill_gemm_seconds(2048, 1.0, rate);
  CHECK(plain == Approx(2.0 * s.model.params_active * 2048 / rate));  // h = 0: every GEMM at the rate
  s.engine.physics.gemm_half_rows = 62;
  auto seconds = [&](int ubatch, std::int64_t tokens, double share = 1.0) {
    s.engine.physics.prefill_ubatch = ubatch;
    return StepModel(s, plan_vram(s)).prefill_gemm_seconds(tokens, share, rate);
  };
  // Smaller micro-batches fill fewer rows: slower, and never faster than the rate.
  CHECK(seconds(2048, 2048) > plain);
  CHECK(seconds(512, 2048) > seconds(2048, 2048));
  CHECK(seconds(128, 2048) > seconds(512, 2048));
  // The routed experts (10 of 512 per token: 10 rows each in a 512-token micro-batch) lose far
  // more than the dense weights alone would (512 rows: (512 + 62) / 512).
  CHECK(seconds(512, 2048) / plain > 1.5 * (512.0 + 62) / 512);
  // A prompt's last, shorter micro-batch costs more per token than a full one.
  CHECK((seconds(512, 600) - seconds(512, 512)) / 88 > seconds(512, 512) / 512);
  CHECK(seconds(512, 600, 0.5) == Approx(seconds(512, 600) / 2));  // a card's share
}

// A dense model's prefill (llama-bench-tg128: Llama 3.1 8B Q4_0 on an RTX 3090, llama.cpp)
// micro-batch by micro-batch.
namespace {
Scenario llama_bench(const std::vector<std::string>& overrides) { return test::bundled_scenario("llama-bench-tg128", overrides); }
// The time of one dense decode-like pass of one token over all layers at `kv` cached positions:
// each layer's weights and KV, and its per-layer cost (StepModel::layer).
double layers_pass(const StepModel& m, const Scenario& s, std::int64_t kv) {
  return s.model.layers * m.layer(LayerExperts{}, 1, kv).total();
}
}  // namespace

// llama-bench -ub 1: each prompt token is its own micro-batch, run as a decode step is but
// without the LM head, which reads once for the prompt's last logits.
TEST_CASE("a one-token micro-batch streams the weights and its KV and pays the per-layer cost, as a decode step does", "[step][prefill]") {
  const Scenario s = llama_bench({"engine.prefill_ubatch=1"});
  const StepModel m(s, plan_vram(s));
  const StepCosts c = m.prefill(PrefillPass{{{512, 0}}});
  double expected = m.step_fixed(1, 0).compute + s.engine.physics.step_overhead;  // LM head, sampling
  for (std::int64_t kv = 1; kv <= 512; ++kv) expected += layers_pass(m, s, kv);
  CHECK(c.total() == Approx(expected));
  CHECK(c.launch_sync == Approx(512 * s.model.layers * s.engine.physics.layer_launch + s.engine.physics.step_overhead));
  // The same tokens after 32,768 cached positions: each micro-batch also reads those positions' KV.
  const StepCosts deep = m.prefill(PrefillPass{{{512, 32768}}});
  const double kv_read = layers_pass(m, s, 32768) - layers_pass(m, s, 0);  // 32,768 positions, every layer
  CHECK(kv_read > 0);
  CHECK(deep.total() - c.total() == Approx(512 * kv_read));
}

TEST_CASE("compute-bound micro-batches hide the per-layer cost, and each one reads the weights again", "[step][prefill]") {
  const Scenario s = llama_bench({"engine.prefill_ubatch=512"});
  const StepModel m(s, plan_vram(s));
  const StepCosts c = m.prefill(PrefillPass{{{2048, 0}}});
  CHECK(c.launch_sync == Approx(s.engine.physics.step_overhead));  // none of the 4 x 32 layers' launches
  CHECK(c.compute > m.prefill_gemm_seconds(2048, 1.0, gemm_peak(s.cards[0].gpu.spec, s) * s.engine.physics.gpu_compute_efficiency));
  // Bytes: the weights once per micro-batch, each micro-batch's KV up to its last position,
  // and the LM head once.
  const double weights = s.model.layers * m.layer(LayerExperts{}, 1, 0).vram_bytes;
  const double kv_position = s.model.layers * m.layer(LayerExperts{}, 1, 1).vram_bytes - weights;
  const double head = m.step_fixed(1, 0).vram_bytes;
  CHECK(kv_position > 0);
  CHECK(c.vram_bytes == Approx(4 * weights + (512 + 1024 + 1536 + 2048) * kv_position + head));
}

TEST_CASE("a pass's sequences are cut in order into micro-batches", "[step][prefill]") {
  const Scenario s = llama_bench({"engine.prefill_ubatch=1"});
  const StepModel m(s, plan_vram(s));
  // Two prompts of 3 tokens at -ub 1: six micro-batches, each paying every layer's cost.
  const StepCosts two = m.prefill(PrefillPass{{{3, 0}, {3, 100}}});
  CHECK(two.launch_sync == Approx(6 * s.model.layers * s.engine.physics.layer_launch + s.engine.physics.step_overhead));
  // ... whose KV reads are each sequence's own: the second's 100 cached positions cost it alone.
  const StepCosts first = m.prefill(PrefillPass{{{3, 0}}}), second = m.prefill(PrefillPass{{{3, 100}}});
  const double head = m.step_fixed(1, 0).compute + s.engine.physics.step_overhead;
  CHECK(two.total() == Approx(first.total() + second.total() - head));
}

// llama.cpp multiplies a batch of at most 8 tokens with matrix-vector kernels (MMVQ_MAX_BATCH_SIZE).
TEST_CASE("micro-batches within matvec_max_rows skip the GEMM fill curve", "[step][prefill]") {
  Scenario s = llama_bench({});
  s.engine.physics.gemm_half_rows = 62;
  s.engine.physics.matvec_max_rows = 8;
  s.engine.physics.matvec_compute_efficiency = 0;  // no rate of their own: the GEMM rate, unfilled
  const StepModel m(s, plan_vram(s));
  const double rate = 1e14;
  auto plain = [&](double tokens) { return 2.0 * s.model.params_active * tokens / rate; };
  CHECK(m.ubatch_gemm_seconds(8, 1.0, rate) == Approx(plain(8)));
  CHECK(m.ubatch_gemm_seconds(1, 1.0, rate) == Approx(plain(1)));
  CHECK(m.ubatch_gemm_seconds(9, 1.0, rate) == Approx(plain(9) * (9 + 62) / 9.0));
}

// engine.matvec_compute_efficiency: the matrix-vector kernels' arithmetic rate, a share of the
// dense fp16 rate, for micro-batches and decode steps of at most matvec_max_rows positions.
TEST_CASE("a few positions run at the matrix-vector rate, in prefill micro-batches and decode steps alike", "[step][prefill]") {
  Scenario s = llama_bench({"engine.matvec_max_rows=8", "engine.matvec_compute_efficiency=0.1"});
  const StepModel m(s, plan_vram(s));
  const double matvec = s.cards[0].gpu.spec.dense_fp16_flops * 0.1;
  const double flops = 2.0 * s.model.params_active;  // per position
  CHECK(m.matvec_rate() == Approx(matvec));
  CHECK(m.ubatch_gemm_seconds(4, 1.0, 1e14) == Approx(4 * flops / matvec));
  CHECK(m.ubatch_gemm_seconds(9, 1.0, 1e14) == Approx(9 * flops * (9 + 62) / 9 / 1e14));  // tiles, filled 9 / (9 + 62)
  // ... never slower than the matrix-vector arithmetic (at the card's own GEMM rate, 9 tiled rows are).
  const double gemm = gemm_peak(s.cards[0].gpu.spec, s) * s.engine.physics.gpu_compute_efficiency;
  CHECK(m.ubatch_gemm_seconds(9, 1.0, gemm) == Approx(std::min(9 * flops * (9 + 62) / 9 / gemm, 9 * flops / matvec)));
  CHECK(m.ubatch_gemm_seconds(9, 1.0, gemm) <= 9 * flops / matvec);
  // A decode step's floor is the same arithmetic: continuous across the kernels' boundary.
  const double rate = gemm_peak(s.cards[0].gpu.spec, s) * s.engine.physics.gpu_compute_efficiency;
  CHECK(m.compute_floor(4) == Approx(4 * flops / matvec));
  CHECK(m.compute_floor(16) == Approx(m.ubatch_gemm_seconds(16, 1.0, rate)));
  // A compute-bound micro-batch of 8 takes its arithmetic's time; one of 1 reads the weights.
  s.engine.physics.prefill_ubatch = 8;
  const StepModel eight(s, plan_vram(s));
  const StepCosts c = eight.prefill(PrefillPass{{{512, 0}}});
  CHECK(c.compute == Approx(64 * 8 * flops / matvec + eight.step_fixed(1, 0).compute).epsilon(0.002));  // + attention
}

// Where llama.cpp switches from matrix-vector to tiled kernels (8 positions for dense weights,
// 4 for routed experts), one more position costs at most its share: no step in time.
TEST_CASE("the compute floor has no step where the kernels switch", "[step][prefill]") {
  const Scenario dense = llama_bench({});
  const StepModel d(dense, plan_vram(dense));
  CHECK(d.compute_floor(9) <= d.compute_floor(8) * 9 / 8 * (1 + 1e-12));
  const Scenario moe = llama_bench({"model=gpt-oss-20b"});
  const StepModel e(moe, plan_vram(moe));
  CHECK(e.compute_floor(5) <= e.compute_floor(4) * 5 / 4 * (1 + 1e-12));
  for (int t = 1; t < 64; ++t) CHECK(e.compute_floor(t + 1) >= e.compute_floor(t) * 0.999);  // more positions, no less work
}

TEST_CASE("a pipeline step ends no earlier than each card's link work from that card's start", "[step][link]") {
  auto stage = [](double compute, double link_busy) {
    sim::StepCosts c;
    c.compute = compute;
    c.link_busy = link_busy;
    return c;
  };
  auto step_of = [](std::vector<sim::StepCosts> stages) {
    sim::StepResult out;
    for (const auto& c : stages) out.costs += c;
    out.stage_costs = std::move(stages);
    sim::pipeline_link_floor(out);
    return out;
  };
  // Card 0's 15 ms of copies overlap card 1's 10 ms of compute: 20 ms, no wait.
  auto hidden = step_of({stage(0.010, 0.015), stage(0.010, 0.0)});
  CHECK(hidden.costs.total() == Approx(0.020));
  CHECK(hidden.costs.transfer == 0);
  // 25 ms of them outlast both cards' 20 ms: the step waits 5 ms, booked on the last card.
  auto bound = step_of({stage(0.010, 0.025), stage(0.010, 0.0)});
  CHECK(bound.costs.total() == Approx(0.025));
  CHECK(bound.stage_costs.back().transfer == Approx(0.005));
  CHECK(bound.stage_costs.front().transfer == 0);
  // The last card's own link work counts from its start (10 ms) to 22 ms.
  auto last = step_of({stage(0.010, 0.0), stage(0.010, 0.012)});
  CHECK(last.costs.total() == Approx(0.022));
}

// llama.cpp builds before PR 8075 (engine.mmq_max_rows): a GEMM of more rows dequantizes the
// weights to fp16 (read q bits, write 2 bytes a parameter), then cuBLAS multiplies in fp16 at
// the card's fp16-accumulate rate, reading those 2 bytes.
TEST_CASE("an early-2024 llama.cpp build dequantizes large prefill GEMMs and runs them in fp16", "[step][prefill]") {
  Scenario s = llama_bench({"engine.mmq_max_rows=32", "engine.dequant_gemm_efficiency=0.5"});
  const StepModel m(s, plan_vram(s));
  const auto& gpu = s.cards[0].gpu.spec;
  REQUIRE(gpu.dense_fp16_accumulate_flops == Approx(2 * gpu.dense_fp16_flops));  // a GeForce card
  const double bw = gpu.memory_bandwidth * s.engine.physics.gpu_bandwidth_efficiency;
  const double params = s.model.params_active;  // a dense model: all of them
  const double bits = s.engine.other_format.bits_per_weight;
  const double tokens = 512;
  const double gemm = std::max(2 * tokens * params / (gpu.dense_fp16_accumulate_flops * 0.5), 2 * params / bw);
  CHECK(m.ubatch_gemm_seconds(tokens, 1.0, 1e14) == Approx(params * (bits / 8 + 2) / bw + gemm));
  // At most mmq_max_rows rows: the MMQ kernels as before (the given rate).
  Scenario mmq = llama_bench({});
  CHECK(m.ubatch_gemm_seconds(32, 1.0, 1e14) == Approx(StepModel(mmq, plan_vram(mmq)).ubatch_gemm_seconds(32, 1.0, 1e14)));
  // F16 weights are multiplied as they are: no conversion.
  Scenario f16 = llama_bench({"engine.mmq_max_rows=32", "engine.dequant_gemm_efficiency=0.5", "engine.weights.other=F16",
                              "engine.weights.experts=F16"});
  const StepModel mf(f16, plan_vram(f16));
  CHECK(mf.ubatch_gemm_seconds(tokens, 1.0, 1e14) == Approx(gemm));
}

// A build whose MMQ kernels compute a fixed 128-token tile whole (engine.mmq_tile_tokens,
// early-2024 LLAMA_CUDA_FORCE_MMQ): a micro-batch of 9 to 128 tokens costs one tile, one of 129
// to 256 two, at the fill of the rows computed.
TEST_CASE("a fixed MMQ tile is computed whole: micro-batches up to the tile cost one tile", "[step][prefill]") {
  Scenario s = llama_bench({"engine.mmq_tile_tokens=128"});
  const StepModel tiled(s, plan_vram(s));
  const double rate = 1e14;
  const double one_tile = tiled.ubatch_gemm_seconds(128, 1.0, rate);
  CHECK(tiled.ubatch_gemm_seconds(16, 1.0, rate) == Approx(one_tile));
  CHECK(tiled.ubatch_gemm_seconds(100, 1.0, rate) == Approx(one_tile));
  CHECK(tiled.ubatch_gemm_seconds(129, 1.0, rate) == Approx(tiled.ubatch_gemm_seconds(256, 1.0, rate)));
  // A multiple of the tile costs what the build without one charges (the same fill curve).
  Scenario plain = llama_bench({});
  const StepModel sized(plain, plan_vram(plain));
  CHECK(one_tile == Approx(sized.ubatch_gemm_seconds(128, 1.0, rate)));
  CHECK(tiled.ubatch_gemm_seconds(256, 1.0, rate) == Approx(sized.ubatch_gemm_seconds(256, 1.0, rate)));
  // 16 tokens computed as 128: (128 + 62) / 16 against (16 + 62) / 16 of the rate's time.
  CHECK(tiled.ubatch_gemm_seconds(16, 1.0, rate) > 2 * sized.ubatch_gemm_seconds(16, 1.0, rate));
  // The matrix-vector kernels' micro-batches are not tiled.
  CHECK(tiled.ubatch_gemm_seconds(4, 1.0, rate) == Approx(sized.ubatch_gemm_seconds(4, 1.0, rate)));
}

TEST_CASE("unfused attention moves its scores through VRAM: a long prompt's prefill slows", "[step][prefill]") {
  Scenario fused = llama_bench({"workload.prompt_tokens=4096", "engine.context=4608"});
  Scenario unfused = llama_bench({"workload.prompt_tokens=4096", "engine.context=4608", "engine.attention_score_bytes=16B"});
  const PrefillPass pass{{{4096, 0}}};
  const double a = StepModel(fused, plan_vram(fused)).prefill(pass).total();
  const double b = StepModel(unfused, plan_vram(unfused)).prefill(pass).total();
  const auto& m = unfused.model;
  const auto& ph = unfused.engine.physics;
  const auto& gpu = unfused.cards[0].gpu.spec;
  // Eight micro-batches of 512: the i-th computes 512 queries against all 512 x i keys of its view,
  // masked or not. So does the preset's FlashAttention below 1,024 tokens, with the scores on chip.
  REQUIRE(ph.prefill_ubatch == 512);
  const double view = 512.0 * 512.0 * 36;
  const double heads = static_cast<double>(m.layers) * m.attention.query_heads;
  // Every (query, key, head) score of the views, 16 bytes each, at the card's bandwidth.
  CHECK(b - a == Approx(heads * view * 16 / (gpu.memory_bandwidth * ph.gpu_bandwidth_efficiency)).epsilon(0.02));
}

// Which (query, key) pairs a micro-batch's attention computes: the causal ones (fused kernels
// that skip the masked keys), every key of the KV view (unfused: ggml's KQ product and softmax
// over n_kv; llama.cpp's FlashAttention below 1,024 tokens, where it does not scan the mask), or
// a sliding window's masked keys too (llama.cpp's FlashAttention trims only the keys after a
// query tile).
TEST_CASE("prefill attention computes the pairs its kernels do not skip", "[step][prefill]") {
  Scenario window = llama_bench({});
  window.engine.physics.attention_skips_window = true;
  window.engine.physics.attention_skip_min_rows = 0;
  Scenario masked = llama_bench({});
  REQUIRE_FALSE(masked.engine.physics.attention_skips_window);  // the llama.cpp preset
  REQUIRE(masked.engine.physics.attention_skip_min_rows == 1024);
  Scenario unfused = llama_bench({"engine.attention_score_bytes=16B"});
  const StepModel w(window, plan_vram(window)), k(masked, plan_vram(masked)), u(unfused, plan_vram(unfused));
  const std::int64_t big = 1024;  // a micro-batch at llama.cpp's threshold
  // A full layer: 100 queries after 300 cached positions.
  CHECK(w.attention_pairs(100, 300, std::nullopt, big) == Approx(100.0 * 300 + 100.0 * 101 / 2));
  CHECK(k.attention_pairs(100, 300, std::nullopt, big) == Approx(100.0 * 300 + 100.0 * 101 / 2));
  CHECK(u.attention_pairs(100, 300, std::nullopt, big) == Approx(100.0 * 400));
  // A layer of a 128-key window: the window's keys, or the view the cache keeps (128 + 100).
  CHECK(w.attention_pairs(100, 300, 128, big) == Approx(100.0 * 128));
  CHECK(k.attention_pairs(100, 300, 128, big) == Approx(100.0 * 128 + 100.0 * 101 / 2));
  CHECK(u.attention_pairs(100, 300, 128, big) == Approx(100.0 * 228));
  // Before the window fills, every kernel sees the same causal keys (unfused: its whole view).
  CHECK(w.attention_pairs(50, 0, 128, big) == Approx(50.0 * 51 / 2));
  CHECK(k.attention_pairs(50, 0, 128, big) == Approx(50.0 * 51 / 2));
  CHECK(u.attention_pairs(50, 0, 128, big) == Approx(50.0 * 50));
  // The window fills inside the micro-batch (100 cached, 50 new, window 128): query i sees
  // min(100 + i, 128) keys when skipped; the view holds all 100 cached keys.
  CHECK(w.attention_pairs(50, 100, 128, big) == Approx(28.0 * 100 + 28.0 * 29 / 2 + 22.0 * 128));
  CHECK(k.attention_pairs(50, 100, 128, big) == Approx(50.0 * 100 + 50.0 * 51 / 2));
  // Below llama.cpp's 1,024 tokens its FlashAttention computes the whole view, like unfused.
  CHECK(k.attention_pairs(100, 300, std::nullopt, 512) == Approx(100.0 * 400));
  CHECK(k.attention_pairs(100, 300, 128, 512) == Approx(100.0 * 228));
  CHECK(w.attention_pairs(100, 300, std::nullopt, 512) == Approx(100.0 * 300 + 100.0 * 101 / 2));
}

// On an Apple part llama.cpp's Metal kernels skip every masked block, whatever the preset says
// of CUDA's: a scenario's own value is kept.
TEST_CASE("Metal's flash attention skips masked keys at any micro-batch", "[step][prefill][unified]") {
  const Scenario metal = test::bundled_scenario("llama-bench-mac");
  REQUIRE(metal.gpu.spec.unified());
  CHECK(metal.engine.physics.attention_skips_window);
  CHECK(metal.engine.physics.attention_skip_min_rows == 0);
  const Scenario given = test::bundled_scenario("llama-bench-mac", {"engine.attention_skip_min_rows=64"});
  CHECK(given.engine.physics.attention_skip_min_rows == 64);
}

// The unfused graph's view grows with the micro-batch: one 2,048-token micro-batch computes
// 2,048 x 2,048 scores where two of 1,024 compute 1,024 x (1,024 + 2,048): past some size a
// larger micro-batch prefills slower ([7716]'s and [7921]'s llama-bench sweeps fall from -ub 1024
// to 2048).
TEST_CASE("unfused attention: a larger micro-batch computes more masked scores", "[step][prefill]") {
  auto time = [](int ub, bool unfused) {
    std::vector<std::string> set{"workload.prompt_tokens=2048", "engine.prefill_ubatch=" + std::to_string(ub)};
    if (unfused) set.push_back("engine.attention_score_bytes=16B");
    Scenario s = llama_bench(set);
    return StepModel(s, plan_vram(s)).prefill(PrefillPass{{{2048, 0}}}).total();
  };
  const double fused_growth = time(2048, false) - time(1024, false);
  const double unfused_growth = time(2048, true) - time(1024, true);
  CHECK(unfused_growth > fused_growth);
  CHECK(unfused_growth > 0);
  // The difference is the views' scores: 2,048 x 2,048 against 1,024 x (1,024 + 2,048), 16 bytes
  // each through VRAM and their FLOPs; the fused kernels compute the causal pairs at both sizes
  // (1,024 tokens is llama.cpp's scan threshold).
  Scenario s = llama_bench({"engine.attention_score_bytes=16B"});
  const auto& m = s.model;
  const auto& gpu = s.cards[0].gpu.spec;
  const auto& ph = s.engine.physics;
  const double heads = static_cast<double>(m.layers) * m.attention.query_heads;
  const double unfused_extra = 2048.0 * 2048 - 1024.0 * 3072;
  const double flop = heads * 4 * m.attention.head_dim / (gpu.dense_fp16_flops * ph.gpu_compute_efficiency);
  const double byte = heads * 16 / (gpu.memory_bandwidth * ph.gpu_bandwidth_efficiency);
  CHECK(unfused_growth - fused_growth == Approx(unfused_extra * (flop + byte)).epsilon(0.02));
}

TEST_CASE("absorbed MLA decode attention is compute-bound, on the SMs its grid covers", "[step][mla]") {
  Scenario s = test::bundled_scenario("deepseek-v3-4090-ktransformers");
  const StepModel m(s, plan_vram(s));
  const auto& gpu = s.cards[0].gpu.spec;
  REQUIRE(gpu.sm_count == 128);                           // RTX 4090 (Ada whitepaper)
  REQUIRE(s.engine.physics.decode_attention_blocks == 32);  // kTransformers v0.2.1's Triton kernel
  const auto& a = s.model.attention;
  const double context = 8000;
  const double flops = 4.0 * a.query_heads * a.latent_dim * context;
  const double rate = gpu.dense_fp16_flops * s.engine.physics.gpu_compute_efficiency;
  CHECK(m.decode_attention_seconds(8000, 1) == Approx(flops / (rate * 32 / 128)));
  // Four sequences' grids cover the card: the full rate, and no more with eight.
  CHECK(m.decode_attention_seconds(4 * 8000, 4) == Approx(4 * flops / rate));
  CHECK(m.decode_attention_seconds(8 * 8000, 8) == Approx(8 * flops / rate));
  // Reading the latent cache takes less even at the full rate (~240 FLOP per cached byte; the
  // card reaches ~130 at the preset's efficiencies).
  const double read = 2.0 * a.latent_dim * context / (gpu.memory_bandwidth * s.engine.physics.gpu_bandwidth_efficiency);
  CHECK(4 * flops / rate > 4 * 1.5 * read);
  CHECK(m.decode_attention_seconds(8000, 1) > 6 * read);
  // A grouped-query model's decode attention is its cache read.
  Scenario gqa = test::case_study("exclusive");
  const StepModel g(gqa, plan_vram(gqa));
  CHECK(g.decode_attention_seconds(1000, 1) == Approx(g.decode_attention_seconds(2000, 1) / 2));
}

TEST_CASE("a few-block decode attention kernel needs the card's SM count", "[step][mla][errors]") {
  // The RTX 4090's description without compute.sm_count, as a user's file.
  std::ifstream in(test::catalogue().root() / "gpus" / "rtx-4090.yaml");
  std::ofstream out("gpu-without-sms.yaml");
  for (std::string line; std::getline(in, line);)
    if (line.find("sm_count") == std::string::npos) out << line << "\n";
  out.close();
  try {
    test::bundled_scenario("deepseek-v3-4090-ktransformers", {"hardware.gpu.preset=gpu-without-sms.yaml"});
    FAIL("accepted a card without sm_count");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("hardware.gpu: rtx-4090 gives no compute.sm_count, which "
                                         "engine.decode_attention_blocks needs for an MLA model"));
  }
}

// llama.cpp's row split: a card's row slice of a weight matrix is not the whole matrix, so
// ggml's cuBLAS path converts it to fp32 and runs SGEMM on the CUDA cores, chunk by chunk
// (ggml_cuda_op_mul_mat_cublas: fp16 only when `row_diff == src0->ne[1]`).
TEST_CASE("row split: a prompt's row slices run fp32 SGEMM per 128-token chunk on the cuBLAS path", "[step][prefill][row_split]") {
  Scenario s = llama_bench({"hardware.gpu.count=2", "engine.split=tensor", "model=llama-2-7b", "engine.weights.experts=F16",
                            "engine.weights.other=F16", "engine.mmq_max_rows=32", "engine.dequant_gemm_efficiency=0.944"});
  REQUIRE(s.engine.row_split);
  const auto plans = plan_cards(s);
  const StepModel card(s, plans.at(1), 1);
  const auto& gpu = s.cards[1].gpu.spec;
  const auto& m = s.model;
  const double bw = gpu.memory_bandwidth * s.engine.physics.gpu_bandwidth_efficiency;
  const double rows = m.params_active * 0.5;  // the card's half of the weights (dense: every weight a product's)
  const double rate = gpu.dense_fp32_flops * 0.944;
  // 300 tokens: chunks of 128, 128 and 44, each converting the slice (2 bytes read, 4 written)
  // and running SGEMM, bound by its FLOPs or by reading the fp32 copy.
  double expected = 0;
  for (double t : {128.0, 128.0, 44.0}) expected += rows * 6 / bw + std::max(2 * t * rows / rate, 4 * rows / bw);
  CHECK(card.row_slice_sgemm_seconds(300, m.params_active, 0.5) == Approx(expected));
  CHECK(card.ubatch_gemm_seconds(300, 0.5, gemm_rate(gpu, s)) == Approx(expected));
  // At most matvec_max_rows tokens: the matrix-vector kernels (their arithmetic at matvec_rate), no fp32 path.
  CHECK_FALSE(card.row_slice_sgemm(8));
  CHECK(card.ubatch_gemm_seconds(8, 0.5, gemm_rate(gpu, s)) == Approx(2 * 8 * m.params_active * 0.5 / card.matvec_rate()));
  // Q4_0 past mmq_max_rows: the conversion reads its 4.5 bits a weight and writes 4 bytes.
  Scenario q4 = llama_bench({"hardware.gpu.count=2", "engine.split=tensor", "model=llama-2-7b", "engine.mmq_max_rows=32",
                             "engine.dequant_gemm_efficiency=0.944"});
  const StepModel q4card(q4, plan_cards(q4).at(1), 1);
  const double bits = q4.engine.other_format.bits_per_weight;
  REQUIRE(bits == Approx(4.5));
  double q4_expected = 0;
  for (double t : {128.0, 128.0, 44.0}) q4_expected += rows * (bits / 8 + 4) / bw + std::max(2 * t * rows / rate, 4 * rows / bw);
  CHECK(q4card.ubatch_gemm_seconds(300, 0.5, gemm_rate(gpu, q4)) == Approx(q4_expected));
  CHECK_FALSE(q4card.row_slice_sgemm(32));  // up to mmq_max_rows: MMQ on q8_1 input
  // A build with MMQ at every size sends quantized (Q4_0) slices to MMQ (q8_1 input): the tiled
  // GEMM's fill curve, no fp32 path.
  Scenario mmq = llama_bench({"hardware.gpu.count=2", "engine.split=tensor", "model=llama-2-7b"});
  const StepModel q(mmq, plan_cards(mmq).at(1), 1);
  const double r = 1e15, h = mmq.engine.physics.gemm_half_rows;
  CHECK_FALSE(q.row_slice_sgemm(300));
  CHECK(q.ubatch_gemm_seconds(300, 0.5, r) == Approx(2 * 300 * m.params_active * 0.5 * (300 + h) / 300 / r));
  // vLLM's tensor parallelism multiplies whole shards of every matrix: no SGEMM path.
  Scenario tp = test::bundled_scenario("llama8b-h100-vllm", {"hardware.gpu.count=2", "engine.split=tensor"});
  REQUIRE_FALSE(tp.engine.row_split);
  CHECK_FALSE(StepModel(tp, plan_cards(tp).at(1), 1).row_slice_sgemm(300));
}

TEST_CASE("row split: a card without its fp32 rate is refused", "[step][row_split][errors]") {
  // The RTX 4090's description without compute.dense_fp32, as a user's file.
  std::ifstream in(test::catalogue().root() / "gpus" / "rtx-4090.yaml");
  std::ofstream out("gpu-without-fp32.yaml");
  for (std::string line; std::getline(in, line);)
    if (line.find("dense_fp32") == std::string::npos) out << line << "\n";
  out.close();
  const std::vector<std::string> split{"hardware.gpu.preset=gpu-without-fp32.yaml", "hardware.gpu.count=2"};
  CHECK_NOTHROW(llama_bench(split));  // a layer split multiplies whole matrices
  std::vector<std::string> rows = split;
  rows.push_back("engine.split=tensor");
  CHECK_NOTHROW(llama_bench(rows));  // Q4_0 with MMQ at every size: no SGEMM
  rows.push_back("engine.weights.experts=F16");
  rows.push_back("engine.weights.other=F16");
  try {
    llama_bench(rows);
    FAIL("accepted a row split on a card without dense_fp32");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("hardware.gpu: rtx-4090 gives no compute.dense_fp32, which llama.cpp's row split "
                                         "(engine.split: tensor) needs"));
  }
}
