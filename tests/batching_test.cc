// Continuous batching (engine.slot_scheduling: batched) and the vllm preset's paged KV pool:
// the batched step against the serial one, its laws, and the pool's closed form.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "scenario_runs.h"
#include "sim/expert_cache.h"
#include "sim/request_runner.h"
#include "sim/routing_trace.h"
#include "sim/step_model.h"
#include "tests/sim_fixture.h"

using namespace vramsim;
using namespace vramsim::sim;
using vramsim::test::all_flags;
using vramsim::test::CaseStudyCard;
using vramsim::test::check_usage_error;
using vramsim::test::json_member;
using vramsim::test::json_number;
using vramsim::test::parse_json;
using vramsim::test::plan_json;
using vramsim::test::run_json;
using vramsim::test::run_ok;
using vramsim::test::run_vramsim;

namespace {

const std::string kConfigs = VRAMSIM_TEST_CONFIGS_DIR;
const std::string kShared = kConfigs + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
const std::string kVllm = kConfigs + "/scenarios/llama8b-h100-vllm.yaml";
// A dense model on one card with llama.cpp's physics; 8 slots' KV fit the card at Q4_K_M.
const std::string kDense = "--model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --set workload.requests=32";

// The run's JSON without what differs by design (the batching section and the wall clock),
// read with core's JSON reader and written back on one line.
std::string without_batch(const std::string& json) {
  vramsim::json::Value v = parse_json(json);
  v.erase("batch");
  if (const auto* sim = v.find("sim")) {
    vramsim::json::Value without_wall = *sim;
    without_wall.erase("wall_s");
    v.set("sim", without_wall);
  }
  return vramsim::json::to_line(v);
}

double per_request_decode(const std::string& json) { return json_number(json, "p50", "decode_tok_s"); }
double throughput(const std::string& json) { return json_number(json, "throughput_tok_s"); }

}  // namespace

TEST_CASE("batching: with one request the batched step is the serial step, step by step", "[batching]") {
  CaseStudyCard serial, batched;
  RequestRunner a = serial.runner(7), b = batched.runner(7);
  BatchStep stepper;
  int steps = 0;
  while (!a.done()) {
    const StepResult x = a.step(false);
    const StepResult y = stepper.run({&b}, false);
    REQUIRE(x.costs.total() == y.costs.total());  // exact: the same arithmetic
    CHECK(x.costs.pcie_bytes == y.costs.pcie_bytes);
    CHECK(x.tokens_out == y.tokens_out);
    ++steps;
  }
  CHECK(b.done());
  CHECK(steps > 20);
  CHECK(a.counters().lookups == b.counters().lookups);
  CHECK(a.counters().lookup_hits == b.counters().lookup_hits);
  CHECK(a.counters().distinct_lookups == b.counters().distinct_lookups);
  CHECK(a.counters().pcie_reads == b.counters().pcie_reads);
  CHECK(a.counters().cpu_experts == b.counters().cpu_experts);
  CHECK(a.counters().accepted == b.counters().accepted);
  CHECK(stepper.union_experts() == stepper.request_experts());
}

TEST_CASE("batching: one client gives the serial run's figures to the last digit", "[batching]") {
  for (const std::string& scenario : {kShared, kConfigs + "/scenarios/llama70b-2x4090-pipeline.yaml",
                                      kConfigs + "/scenarios/gpt-oss-20b-4080-cpu-moe.yaml"}) {
    INFO(scenario);
    const std::string serial = run_json(scenario, "--set workload.requests=4");
    const std::string batched = run_json(scenario, "--set workload.requests=4 --set engine.slot_scheduling=batched");
    CHECK(without_batch(batched) == without_batch(serial));
    CHECK(json_number(batched, "mean", "batch") == 1);
  }
}

TEST_CASE("batching: a batched MoE step looks up the union of its requests' experts", "[batching]") {
  CaseStudyCard card;
  std::vector<RequestRunner> runners;
  for (std::uint64_t id = 0; id < 4; ++id) runners.push_back(card.runner(id));
  std::vector<RequestRunner*> batch;
  for (auto& r : runners) batch.push_back(&r);
  BatchStep stepper;
  for (int step = 0; step < 10; ++step) stepper.run(batch, false);
  CHECK(stepper.moe_layer_steps() == 10 * card.s.model.layers);
  CHECK(stepper.union_experts() < stepper.request_experts());
  // Each request's own distinct look-ups add up to the sum.
  std::int64_t sum = 0;
  for (const auto& r : runners) sum += r.counters().distinct_lookups;
  CHECK(sum == stepper.request_experts());
  // The union is at least the largest request's share and at most the layer's experts.
  CHECK(stepper.union_experts() >= stepper.request_experts() / 4);
  CHECK(stepper.union_experts() <= stepper.moe_layer_steps() * card.s.model.moe->experts);
  // Through the engine: 4 slots, 4 clients.
  const std::string json = run_json(kShared, "--set workload.requests=12 --set workload.clients=4 --set engine.parallel=4 "
                                             "--set engine.slot_scheduling=batched");
  CHECK(json_number(json, "max", "batch") == 4);
  CHECK(json_number(json, "union", "experts_per_layer") < json_number(json, "requests_sum", "experts_per_layer"));
}

TEST_CASE("batching: on a dense model, 8 clients batched give over 3x the serial throughput", "[batching]") {
  auto run = [](const std::string& args) {
    auto r = run_vramsim("run " + kDense + " --json " + args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return r.out;
  };
  const std::string one = run("--set workload.clients=1 --set engine.slot_scheduling=batched");
  const std::string serial = run("--set workload.clients=8 --set engine.parallel=8 --set engine.slot_scheduling=serial");
  const std::string batched = run("--set workload.clients=8 --set engine.parallel=8");  // llama.cpp's preset batches
  CHECK(json_number(batched, "max", "batch") == 8);
  CHECK(throughput(batched) > 3 * throughput(serial));
  // Each request decodes slower than alone: the step reads 8 contexts' KV and stalls for the others' prefills.
  CHECK(per_request_decode(batched) < per_request_decode(one));
  CHECK(json_number(batched, "max", "batch") == 8);
  // Determinism: the same scenario, the same figures.
  CHECK(without_batch(run("--set workload.clients=8 --set engine.parallel=8 --set engine.slot_scheduling=batched")) ==
        without_batch(batched));
}

TEST_CASE("batching: a large batch is held to the compute floor", "[batching]") {
  // The step cannot be faster than 2 x active parameters x positions over the card's dense
  // rate x gpu_compute_efficiency, however few bytes it reads.
  Scenario s = test::case_study("shared");
  const VramPlan plan = plan_vram(s);
  const StepModel model(s, plan);
  const double rate = s.gpu.spec.dense_fp16_flops * s.engine.physics.gpu_compute_efficiency;
  CHECK(model.compute_floor(256) == Approx(2.0 * s.model.params_active * 256 / rate));
  CHECK(model.compute_floor(1) * 256 == Approx(model.compute_floor(256)));
  // Through the engine: 256 requests of 16 + 16 tokens on an H100 read 6.3 ms of weights and KV
  // per step, but their FLOPs take 6.9 ms at 0.6 x 989 TFLOPS; the step adds 0.3 ms of host work.
  const std::string json = run_json(kVllm, "--set workload.clients=256 --set workload.requests=256 "
                                           "--set workload.prompt_tokens=16 --set workload.gen_tokens=16");
  CHECK(json_number(json, "mean", "batch") == 256);
  CHECK(json_number(json, "decode_step_ms") == Approx((2.0 * 8.03e9 * 256 / (989e12 * 0.6) + 0.3e-3) * 1e3));
}

TEST_CASE("vllm: the KV pool's size in closed form", "[batching][vllm]") {
  const std::string json = run_json(kVllm, "--set workload.requests=32");
  // 0.9 x the H100's 81,559 MiB, less Llama 3.1 8B's BF16 weights (8.03e9 x 2 bytes) and the
  // runtime (3.05 GiB), in blocks of 16 tokens x 131,072 bytes (32 layers x 8 KV heads x 128 x 2 x 2).
  const double pool = 0.9 * 81559.0 * 1024 * 1024 - 8.03e9 * 2 - 3.05 * 1024 * 1024 * 1024;
  const double block = 16.0 * 32 * 8 * 128 * 2 * 2;
  CHECK(json_number(json, "blocks", "kv_pool") == std::floor(pool / block));
  CHECK(json_number(json, "tokens", "kv_pool") == 16 * std::floor(pool / block));
  // vLLM's own log for the same model on an 80 GB card: 53.29 GiB for the KV cache (PR 10511).
  CHECK(json_number(json, "gib", "kv_pool") == Approx(53.29).epsilon(0.01));
}

TEST_CASE("vllm: weights that do not fit gpu_memory_utilization x VRAM are refused with the numbers", "[batching][vllm]") {
  auto big = run_vramsim("run --model llama-3.3-70b --gpu h100-sxm --engine vllm");
  CHECK(big.status == 2);
  CHECK_THAT(big.err, Catch::Contains("llama-3.3-70b does not fit this card: its weights (131.50 GiB)"));
  CHECK_THAT(big.err, Catch::Contains("exceed gpu_memory_utilization 0.90 x 79.65 GiB = 71.68 GiB"));
  auto window = run_vramsim("run " + kVllm + " --set hardware.gpu.preset=rtx-4090 --set engine.context=131072");
  CHECK(window.status == 2);
  CHECK_THAT(window.err, Catch::Contains("cannot hold one sequence of engine.context = 131072 tokens"));
  auto tenants = run_vramsim("run " + kVllm + " --set hardware.gpu.vram_used_by_others=20GiB");
  CHECK(tenants.status == 2);
  CHECK_THAT(tenants.err, Catch::Contains("other tenants leave"));
  auto serial = run_vramsim("run " + kVllm + " --set engine.slot_scheduling=serial");
  CHECK(serial.status == 2);
  CHECK_THAT(serial.err, Catch::Contains("slot_scheduling must be batched"));
}

TEST_CASE("vllm: concurrency is capped by the KV pool's free blocks", "[batching][vllm]") {
  // A 24 GB card: ~1,834 blocks. 6,000-token prompts take 375 blocks each: at most 4 run at
  // once (a fifth would leave less than the 1% watermark), whatever max_num_seqs allows.
  const std::string json = run_json(kVllm, "--set hardware.gpu.preset=rtx-4090 --set workload.requests=24 "
                                           "--set workload.prompt_tokens=6000 --set workload.gen_tokens=64");
  const double blocks = json_number(json, "blocks", "kv_pool");
  const double per_prompt = std::ceil(6000 / 16.0);
  CHECK(json_number(json, "max", "batch") == std::floor((blocks - std::floor(0.01 * blocks)) / per_prompt));
  CHECK(json_number(json, "max", "batch") < 32);
  CHECK(json_number(json, "peak_blocks", "kv_pool") <= blocks);
  CHECK(json_number(json, "completed", "requests") == 24);
  // The others wait in the queue for blocks (on the H100's pool the same requests hardly wait).
  CHECK(json_number(json, "mean", "queue_length") > 8);
  const std::string roomy = run_json(kVllm, "--set workload.requests=24 --set workload.prompt_tokens=6000 --set workload.gen_tokens=64");
  CHECK(json_number(roomy, "max", "batch") == 24);
  // Long generations outgrow the pool: the latest admitted request is preempted and recomputed.
  const std::string grow = run_json(kVllm, "--set hardware.gpu.preset=rtx-4090 --set workload.requests=12 "
                                           "--set workload.prompt_tokens=6000 --set workload.gen_tokens=1500");
  CHECK(json_number(grow, "preempted", "batch") > 0);
  CHECK(json_number(grow, "completed", "requests") == 12);
  // A recompute prefill gives the next token, counted once: every request ends with its 1,500,
  // and a preempted one still has a decode speed (its tokens after the first over their time).
  CHECK(json_number(grow, "generated_tokens") == 12 * 1500);
  CHECK(json_number(grow, "min", "decode_tok_s") > 0);
  CHECK(json_number(grow, "peak_blocks", "kv_pool") <= json_number(grow, "blocks", "kv_pool"));
}

TEST_CASE("vllm: continuous batching raises aggregate throughput", "[batching][vllm]") {
  const std::string one = run_json(kVllm, "--set workload.requests=8 --set workload.clients=1");
  const std::string many = run_json(kVllm, "--set workload.requests=128");
  CHECK(throughput(many) > 10 * throughput(one));
  CHECK(json_number(many, "mean", "batch") > 16);
  CHECK(per_request_decode(many) < per_request_decode(one));
}

// vLLM V0's scheduler prefills the prompts it admits together in one pass (weights read once),
// up to max_num_batched_tokens = max(max_model_len, 2048) prompt tokens, and all of them get
// their first token when the pass ends.
TEST_CASE("vllm: prompts admitted together share one prefill pass, up to the token budget", "[batching][vllm]") {
  const std::string shape = " --set workload.prompt_tokens=64 --set workload.gen_tokens=8";
  const std::string one = run_json(kVllm, "--set workload.requests=1 --set workload.clients=1" + shape);
  const std::string eight = run_json(kVllm, "--set workload.requests=8 --set workload.clients=8" + shape);
  // Short prompts: a pass reads the 15 GB of weights once for all 8 (14 ms against 6.3 ms for
  // one prompt, where 8 passes would take 50 ms).
  CHECK(json_number(eight, "max", "ttft_s") == json_number(eight, "p50", "ttft_s"));
  CHECK(json_number(eight, "max", "ttft_s") < 4 * json_number(one, "max", "ttft_s"));
  // vLLM V1: 16 prompts of 1,024 tokens, 4,096 tokens a step, the running requests' decode tokens
  // first, a prompt larger than what is left chunked into the next step. Step 1: prompts 1-4.
  // Step 2: 4 decodes, prompts 5-7 and 1,020 tokens of 8. Step 3: 7 decodes, the rest of 8, 9-11
  // and a chunk of 12. Step 4: 11 decodes, 12's rest, 13-15, a chunk of 16. Step 5: 16's rest.
  const std::string out = "batched_prefill.jsonl";
  auto r = run_vramsim("run " + kVllm + " --set workload.requests=16 --set workload.clients=16 --set workload.prompt_tokens=1024 "
                       "--set workload.gen_tokens=8 --set engine.max_num_batched_tokens=4096 --requests-out " + out);
  REQUIRE(r.status == 0);
  std::ifstream lines(out);
  std::map<double, int> by_ttft;  // first tokens by time, in time order
  for (std::string line; std::getline(lines, line);) ++by_ttft[json_number(line, "ttft_s")];
  std::vector<int> groups;
  for (const auto& [ttft, n] : by_ttft) groups.push_back(n);
  CHECK(groups == std::vector<int>{4, 3, 4, 4, 1});
}

// Prefill attention grows with the square of the prompt: Llama 3.1 8B spends ~1.5x per token on
// a 32K prompt what it spends on a 1K one (causal pairs 4 x 32 x 128 FLOPs each, 32 layers).
TEST_CASE("prefill: a long prompt costs more per token, its attention growing with its square", "[batching][vllm]") {
  auto per_token = [](int prompt) {
    const std::string json = run_json(kVllm, "--set engine.context=model --set workload.requests=1 --set workload.clients=1 "
                                             "--set workload.gen_tokens=4 --set workload.prompt_tokens=" + std::to_string(prompt));
    return json_number(json, "max", "ttft_s") / prompt;
  };
  const double short_prompt = per_token(1024), long_prompt = per_token(32000), longest = per_token(120000);
  CHECK(long_prompt > 1.3 * short_prompt);
  CHECK(longest > 2.5 * short_prompt);
}

// With MTP a step writes 1 + draft tokens positions, but never beyond the request's prompt and
// output: a sequence that fills the pool exactly (29,056 + 288 = 29,344 tokens, 1,834 blocks)
// must not be charged blocks it will never use (it peaked at 1,835).
TEST_CASE("vllm: a step's blocks stop at the request's last token", "[batching][vllm]") {
  const std::string json = run_json(kVllm, "--set hardware.gpu.preset=rtx-4090 --set engine.context=29344 --set workload.requests=1 "
                                           "--set workload.clients=1 --set workload.prompt_tokens=29056 --set workload.gen_tokens=288 --set model.mtp_head=true "
                                           "--set 'engine.speculative={kind: mtp, draft_tokens: 4, acceptance: 0.6, head: 100MiB}'");
  CHECK(json_number(json, "peak_blocks", "kv_pool") <= json_number(json, "blocks", "kv_pool"));
  CHECK(json_number(json, "completed", "requests") == 1);
}

TEST_CASE("vllm: run --model --gpu --engine vllm prints its pool and flags", "[batching][vllm][quick]") {
  auto r = run_vramsim("run --model llama-3.1-8b --gpu rtx-4090 --engine vllm");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("every layer on the GPU, a KV pool of "));
  // A 24 GB card: vLLM's smaller defaults (256 sequences, 2,048 tokens a step).
  CHECK_THAT(r.out, Catch::Contains("vllm serve flags: --max-model-len 4096 --gpu-memory-utilization 0.9 --max-num-seqs 256 "
                                    "--block-size 16 --max-num-batched-tokens 2048"));
  CHECK_THAT(r.out, Catch::Contains("batching        mean"));
}

// vLLM is modelled on a checkpoint's dtype or FP8; a GGUF format would have printed the 16-bit
// model's flags at a 4-bit speed.
TEST_CASE("vllm: a GGUF weights format is refused with the engine that runs it", "[engines][vllm][errors]") {
  for (const std::string cmd : {"run --model llama-3.1-8b --gpu rtx-4090 --engine vllm --quant Q4_K_M",
                                "plan --model llama-3.1-8b --gpu rtx-4090 --host ddr5-dual-channel --engine vllm --quant Q4_K_M"}) {
    auto r = run_vramsim(cmd);
    INFO(cmd);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("vLLM is modelled serving the checkpoint as it is (BF16) or quantized online to FP8") &&
                          Catch::Contains("not Q4_K_M") && Catch::Contains("--engine llama.cpp runs GGUF formats"));
  }
  // Every weight alike, and FP8 only from a 16-bit checkpoint: what the printed flags can say.
  const std::pair<const char*, const char*> refused[] = {
      {"--model gpt-oss-20b --quant FP8", "checkpoint as it is (MXFP4), every weight alike; not FP8"},
      {"--model qwen3-30b-a3b --set engine.weights.experts=FP8", "not experts FP8 with other weights BF16"},
      {"--model llama-3.1-8b --quant F32", "every weight alike; not F32"},
  };
  for (const auto& [args, message] : refused) {
    auto r = run_vramsim(std::string("run --gpu h100-sxm --engine vllm ") + args);
    INFO(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(message));
  }
  CHECK(run_vramsim("run --model gpt-oss-20b --gpu h100-sxm --engine vllm").status == 0);  // MXFP4 as it is
}

// FP8 weights under vLLM run W8A8 GEMMs on FP8 tensor cores (Ada, Hopper): a compute-bound
// prefill goes at the FP8 rate, twice the fp16 one; an A100 has no FP8 tensor cores and
// multiplies in fp16. Decode streams the weights: half the bytes on either card.
TEST_CASE("vllm: FP8 weights prefill at the FP8 tensor rate where the card has one", "[engines][vllm]") {
  auto figures = [](const std::string& gpu, const std::string& quant) {
    auto r = run_vramsim("run --model llama-3.1-8b --gpu " + gpu + " --engine vllm --quant " + quant + " --json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    return std::pair{json_number(r.out, "p50", "prefill_tok_s"), json_number(r.out, "p50", "decode_tok_s")};
  };
  const auto [h100_bf16_prefill, h100_bf16_decode] = figures("h100-sxm", "BF16");
  const auto [h100_fp8_prefill, h100_fp8_decode] = figures("h100-sxm", "FP8");
  const auto [a100_bf16_prefill, a100_bf16_decode] = figures("a100-80gb", "BF16");
  const auto [a100_fp8_prefill, a100_fp8_decode] = figures("a100-80gb", "FP8");
  CHECK(h100_fp8_prefill > 1.8 * h100_bf16_prefill);
  CHECK(a100_fp8_prefill == Approx(a100_bf16_prefill).epsilon(0.01));
  CHECK(h100_fp8_decode > 1.7 * h100_bf16_decode);
  CHECK(a100_fp8_decode > 1.7 * a100_bf16_decode);
}

TEST_CASE("vllm: a model's dense first layers hold no experts in the weights", "[engines][vllm]") {
  // DeepSeek-V2-Lite: 27 layers, the first dense, 26 x 64 routed experts.
  const std::string out = run_json("", "--model deepseek-v2-lite --gpu h100-sxm --engine vllm");
  CHECK(json_number(out, "slots", "cache") == 26 * 64);
}

// vLLM's --tensor-parallel-size N: every weight matrix and the KV heads split over the cards,
// two all-reduces per layer; every card has the same blocks.
TEST_CASE("vllm: tensor parallel over two cards halves each card's weights and a block's bytes", "[batching][vllm][multi-card]") {
  // Llama 3.3 70B in BF16 (131.5 GiB) does not fit 0.9 x one H100; half of it per card does.
  auto one = run_vramsim("run --model llama-3.3-70b --gpu h100-sxm --engine vllm --json");
  CHECK(one.status == 2);
  CHECK_THAT(one.err, Catch::Contains("more cards"));
  const std::string two = run_json("", "--model llama-3.3-70b --gpu h100-sxm --gpus 2 --engine vllm");
  // Per card: 0.9 x 81,559 MiB - half the weights - the runtime, in blocks of 16 tokens x half
  // of 80 layers x 8 KV heads x 128 x 2 x 2 bytes.
  const double card_weights = json_number(two, "weights_gib") * units::kGiB;  // card 0's
  CHECK(card_weights == Approx(131.50 * units::kGiB / 2).epsilon(0.001));
  const double pool = 0.9 * 81559.0 * units::kMiB - card_weights - 3.05 * units::kGiB;
  const double block = 16.0 * 80 * 8 * 128 * 2 * 2 / 2;
  CHECK(json_number(two, "blocks", "kv_pool") == std::floor(pool / block));
  CHECK(json_number(two, "collective_s") > 0);
  CHECK_THAT(run_vramsim("run --model llama-3.3-70b --gpu h100-sxm --gpus 2 --engine vllm").out,
             Catch::Contains("vllm serve flags: --tensor-parallel-size 2 "));
}

TEST_CASE("vllm: a second card decodes faster, but not twice as fast (the all-reduces)", "[batching][vllm][multi-card]") {
  const std::string args = "--model llama-3.1-8b --gpu h100-sxm --engine vllm --set workload.clients=8 --set workload.requests=32";
  const double one = json_number(run_json("", args), "p50", "decode_tok_s");
  const double two = json_number(run_json("", args + " --gpus 2"), "p50", "decode_tok_s");
  CHECK(two > 1.2 * one);
  CHECK(two < 2.0 * one);
}

// Every card of a tensor split computes its shard of the experts the tokens route to: identical
// shards are equally busy (the first card alone used to be charged the experts' bytes).
TEST_CASE("vllm: a tensor split charges every card its shard of the experts", "[batching][vllm][multi-card]") {
  const std::string json = run_json("", "--model qwen3-30b-a3b --gpu h100-sxm --gpus 2 --engine vllm");
  const vramsim::json::Value root = parse_json(json);
  const vramsim::json::Value* cards = root.find("cards");
  REQUIRE(cards);
  std::vector<double> utils;
  for (const auto& card : cards->items()) utils.push_back(json_member(card, "util")->number());
  REQUIRE(utils.size() >= 2);
  CHECK(utils[1] == Approx(utils[0]).epsilon(1e-9));
  CHECK(json_number(json, "util", "gpu") == Approx(utils[0]).epsilon(1e-9));
}

TEST_CASE("vllm: a pipeline split and an MLA model over a tensor split are refused", "[batching][vllm][errors]") {
  check_usage_error("run --model llama-3.1-8b --gpu h100-sxm --gpus 2 --engine vllm --set engine.split=pipeline",
                    "a paged KV pool with a pipeline split");
  check_usage_error("run --model deepseek-v2-lite --gpu h100-sxm --gpus 2 --engine vllm", "MLA");
}

TEST_CASE("plan --engine vllm: the checkpoint's dtype and FP8 with each KV dtype, FP8 weights decode fastest", "[engines][plan][vllm]") {
  const std::string out = plan_json("--model llama-3.1-8b --gpu h100-sxm --host xeon-gold-6454s-x2 --engine vllm");
  const auto flags = all_flags(out);
  REQUIRE(flags.size() == 4);  // {BF16, FP8} x {auto, fp8}: an 8B model fits an 80 GB card every way
  CHECK(json_number(out, "candidates") == 4);
  for (const auto& f : flags)
    CHECK_THAT(f, Catch::EndsWith("--max-model-len 4096 --gpu-memory-utilization 0.9 --max-num-seqs 1024 --block-size 16 "
                                  "--max-num-batched-tokens 8192"));  // an 80 GB H100: vLLM's larger defaults
  // Decode streams the weights: half the bytes, the fastest step (the KV is small at 640 tokens).
  CHECK_THAT(flags.front(), Catch::StartsWith("--quantization fp8 "));
  bool fp8_kv = false;  // some candidate keeps its KV cache in FP8
  vramsim::test::visit_members(parse_json(out), [&](const std::string& key, const vramsim::json::Value& v) {
    fp8_kv = fp8_kv || (key == "kv_type" && v.text() == "fp8");
    return false;
  });
  CHECK(fp8_kv);
  CHECK(json_number(out, "max_context", "best") == 131072);  // the model's own window fits the pool
}

TEST_CASE("plan --engine vllm: a checkpoint too large for the card leaves FP8 alone, ranked by throughput", "[engines][plan][vllm]") {
  // Qwen3-30B-A3B in BF16 is 61 GB, over 0.9 x 48 GB of an L40S; in FP8 it fits.
  const std::string out = plan_json("--model qwen3-30b-a3b --gpu l40s --host xeon-gold-6454s-x2 --engine vllm "
                                    "--goal throughput --clients 8");
  const auto flags = all_flags(out);
  REQUIRE(flags.size() == 2);
  for (const auto& f : flags) CHECK_THAT(f, Catch::StartsWith("--quantization fp8 "));
  CHECK(json_number(out, "clients") == 8);
  // The best is the one with the most aggregate throughput; with 8 clients it is several
  // requests' worth of one request's decode.
  const double best = json_number(out, "throughput_tok_s", "best");
  CHECK(best > 3 * json_number(out, "decode_tok_s", "best"));
  const vramsim::json::Value root = parse_json(out);
  vramsim::test::visit_members(root, [&](const std::string& key, const vramsim::json::Value& v) {
    if (key == "throughput_tok_s") CHECK(v.number() <= best);
    return false;
  });
}

// The flags come from the scenario simulated: the weights' online FP8 quantization of a BF16
// checkpoint, the KV dtype, every --set (cli/quick_scenario.h, engine_flags).
TEST_CASE("run --model --engine vllm: the flags carry the FP8 weights, the KV dtype, the slots and the block size", "[engines][quick][vllm]") {
  CHECK_THAT(run_ok("run --model llama-3.1-8b --gpu h100-sxm --engine vllm --quant FP8 --set engine.kv_type=fp8 "
                    "--set engine.parallel=8 --set engine.kv_pool.block_size=32"),
             Catch::Contains("vllm serve flags: --quantization fp8 --kv-cache-dtype fp8 --max-model-len 4096 "
                                    "--gpu-memory-utilization 0.9 --max-num-seqs 8 --block-size 32 --max-num-batched-tokens 8192\n"));
}

TEST_CASE("plan: --goal, --clients and --context are checked", "[engines][plan][errors]") {
  const std::string plan = "plan --model llama-3.1-8b --gpu h100-sxm --host xeon-gold-6454s-x2 ";
  check_usage_error(plan + "--goal speed", "--goal: expected decode, prefill, ttft or throughput, got \"speed\"");
  check_usage_error(plan + "--clients 0", "--clients");
  check_usage_error(plan + "--engine vllm --context 256", "--context: at least 640 tokens");
}

// Host RAM holds the experts an engine computes or caches from there: none for vLLM, none for
// llama.cpp with every expert on the GPU (its copies to VRAM leave droppable mmap'd pages),
// those of --n-cpu-moe for llama.cpp, every one for an expert cache (run_cli_test: the case study on 16 GiB).
TEST_CASE("vllm: the experts need no room in host RAM, an engine that keeps them there does", "[engines][vllm][errors]") {
  const std::string args = "run --model qwen3-30b-a3b --gpu h200 --set hardware.host.memory.capacity=16GiB";
  auto vllm = run_vramsim(args + " --engine vllm");
  INFO(vllm.err);
  CHECK(vllm.status == 0);
  auto llama = run_vramsim(args + " --set workload.requests=2");
  INFO(llama.err);
  CHECK(llama.status == 0);
  auto on_cpu = run_vramsim(args + " --set engine.cpu_moe_layers=all");
  INFO(on_cpu.err);
  CHECK(on_cpu.status == 2);
  CHECK_THAT(on_cpu.err, Catch::Contains("the experts kept in RAM"));
}

// vLLM V0 ignores a prompt its block manager can never allocate (its blocks exceed the pool
// less the 1% watermark): with a 29,344-token window and pool (1,834 blocks, watermark 18),
// a 29,100-token prompt needs 1,819 blocks > 1,816; one of 29,000 tokens (1,813) is served.
TEST_CASE("vllm: a prompt the pool can hold only below its watermark is refused at arrival", "[batching][vllm][errors]") {
  const std::string base = "--set hardware.gpu.preset=rtx-4090 --set engine.context=29344 --set workload.requests=1 "
                           "--set workload.clients=1 --set workload.gen_tokens=8 --set workload.prompt_tokens=";
  auto refused = run_vramsim("run " + kVllm + " --json " + base + "29100");
  INFO(refused.err);
  REQUIRE(refused.status == 1);  // its one request refused: a failed run, with its summary
  const std::string over = refused.out;
  CHECK(json_number(over, "blocks", "kv_pool") == 1834);
  CHECK(json_number(over, "prompt_exceeds_kv_pool", "rejected_by_reason") == 1);
  CHECK(json_number(over, "completed", "requests") == 0);
  const std::string under = run_json(kVllm, base + "29000");
  CHECK(json_number(under, "prompt_exceeds_kv_pool", "rejected_by_reason") == 0);
  CHECK(json_number(under, "completed", "requests") == 1);
}
