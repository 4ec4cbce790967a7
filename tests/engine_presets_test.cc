// The llama.cpp preset's placement: CPU layers (engine.gpu_layers, -ngl) and CPU experts
// (engine.cpu_moe_layers, --n-cpu-moe / --cpu-moe). Runs the real binary.
#include <catch2/catch.hpp>

#include <algorithm>

#include <regex>
#include <string>

#include "scenario_runs.h"
#include "tests/json_matchers.h"

using vramsim::test::all_flags;
using vramsim::test::check_usage_error;
using vramsim::test::json_number;
using vramsim::test::plan_json;
using vramsim::test::run_json;
using vramsim::test::run_ok;
using vramsim::test::run_vramsim;

namespace {

const std::string kConfigs = VRAMSIM_TEST_CONFIGS_DIR;
const std::string kMixtral = kConfigs + "/scenarios/mixtral-3090-offload.yaml";
const std::string kGptOss = kConfigs + "/scenarios/gpt-oss-20b-4080-cpu-moe.yaml";

double decode(const std::string& json) { return vramsim::test::decode_p50(json); }

}  // namespace

TEST_CASE("llama.cpp: each layer moved to the CPU slows decode, and CPU only streams the active weights from RAM",
          "[engines][llama.cpp]") {
  double previous = 1e9;
  for (int gpu_layers : {28, 24, 16, 8, 0}) {
    INFO("gpu_layers " << gpu_layers);
    const double d = decode(run_json(kMixtral, "--set engine.gpu_layers=" + std::to_string(gpu_layers)));
    CHECK(d < previous);
    previous = d;
  }
  // CPU only: the bytes a token reads (12.9e9 active parameters at Q4_K_M's 4.85 bits) over the
  // host's 51.2 GB/s at the preset's 0.75; attention over a short context adds little.
  CHECK(previous == Approx(51.2e9 * 0.75 / (12.9e9 * 4.85 / 8)).epsilon(0.03));
}

TEST_CASE("llama.cpp: --cpu-moe keeps the experts in RAM and off the card", "[engines][llama.cpp]") {
  const std::string on_cpu = run_json(kGptOss, "");
  const std::string on_gpu = run_json(kGptOss, "--set engine.cpu_moe_layers=0");
  CHECK(json_number(on_cpu, "fixed_mib") < 0.3 * json_number(on_gpu, "fixed_mib"));
  CHECK(decode(on_cpu) < 0.5 * decode(on_gpu));
  // Half of the layers' experts on the CPU: in between.
  const double half = decode(run_json(kGptOss, "--set engine.cpu_moe_layers=12"));
  CHECK(half > decode(on_cpu));
  CHECK(half < decode(on_gpu));
  // A long prompt copies the RAM-resident experts to the GPU once per micro-batch: the
  // scenario's -ub 2048 copies them once for its 2,048 tokens, -ub 512 four times.
  CHECK(json_number(on_cpu, "p50", "prefill_tok_s") >
        2 * json_number(run_json(kGptOss, "--set engine.prefill_ubatch=512"), "p50", "prefill_tok_s"));
}

TEST_CASE("llama.cpp: --cpu-moe decode waits for the CPU to stream the active experts at its share of RAM bandwidth",
          "[engines][llama.cpp]") {
  // Closed form: per token, 4 active experts x 24 layers, each 24.8832e6 weights at MXFP4's
  // 4.25 bits, over the host's 96 GB/s at the scenario's calibrated cpu_expert_share 0.567.
  const double expert_bytes = 24.8832e6 * 4.25 / 8;
  const double host_seconds = 4 * 24 * expert_bytes / (96e9 * 0.567);
  const std::string out = run_json(kGptOss, "");
  const double step_ms = json_number(out, "decode_step_ms");
  CHECK(step_ms * json_number(out, "cpu_experts", "step_time_breakdown") == Approx(host_seconds * 1e3).epsilon(0.002));
  // The CPU's time scales with the inverse of its share; the GPU's part does not change.
  const std::string half = run_json(kGptOss, "--set engine.cpu_expert_share=0.2835");
  CHECK(json_number(half, "decode_step_ms") - step_ms == Approx(host_seconds * 1e3).epsilon(0.002));
}

TEST_CASE("llama.cpp placement errors are clear", "[engines][errors]") {
  const std::string shared = kConfigs + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
  const std::pair<std::string, std::string> cases[] = {
      {"run " + shared + " --set engine.gpu_layers=40",
       "engine.gpu_layers: an engine with an expert cache keeps every layer on the GPU"},
      {"run " + kConfigs + "/scenarios/llama70b-2x4090-pipeline.yaml --set engine.cpu_moe_layers=4",
       "llama-3.3-70b is a dense model: it has no routed experts to keep on the CPU"},
      {"run " + kMixtral + " --set engine.gpu_layers=32", "mixtral-8x7b does not fit this card"},
      {"run " + kMixtral + " --set engine.gpu_layers=29", "fewer engine.gpu_layers or more engine.cpu_moe_layers"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    auto r = run_vramsim(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(message));
  }
}

TEST_CASE("validate: the llama.cpp offload cases (all within tolerance but gpt-oss-20b's prefill with its expert biases in RAM)",
          "[engines][validate]") {
  auto r = run_vramsim("validate llama-cpp --json");
  CHECK(r.status == 1);  // the one case the preset does not model (docs/engines.md)
  CHECK_THAT(r.out, vramsim::test::HasMember("failed", "1"));
}

TEST_CASE("run --model --gpu: a scenario from catalogue names, with the placement that fits", "[engines][quick]") {
  auto r = run_vramsim("run --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("every layer on the GPU, the routed experts of the first"));
  CHECK_THAT(r.out, Catch::Contains("llama.cpp flags: -ngl 99 --n-cpu-moe "));
  CHECK_THAT(r.out, Catch::Contains("decode tok/s"));
  auto fits = run_vramsim("run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json");
  REQUIRE(fits.status == 0);
  CHECK(json_number(fits.out, "p50", "decode_tok_s") > 100);
  auto bad = run_vramsim("run --model no-such-model --gpu rtx-4090");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("no-such-model"));
}

TEST_CASE("plan: a 30B-A3B MoE on a 12 GB card: experts to the CPU win when the head would go too, not when it stays", "[engines][plan]") {
  // A build that offloads the output layer last: moving whole layers to the CPU takes the LM
  // head there too, and the CPU reads it every token.
  auto r = run_vramsim("plan --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ddr5-dual-channel --quant Q4_K_M --json -j 2 "
                       "--set engine.ngl_output_first=false");
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The best configuration's flags keep every layer on the GPU and put some layers' experts on the CPU.
  CHECK_THAT(vramsim::test::json_text(r.out, "flags", "best"), Catch::StartsWith("-ngl 99 --n-cpu-moe "));
  CHECK(json_number(r.out, "experts_on_cpu_vs_layers_on_cpu") > 1.0);
  CHECK(json_number(r.out, "decode_tok_s", "best") > 0);
  CHECK(json_number(r.out, "max_context", "best") >= 4096);
  // A current build keeps the head on the card either way: both placements are simulated and
  // compared, and the experts' placement no longer gains the head's read.
  auto now = run_vramsim("plan --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ddr5-dual-channel --quant Q4_K_M --json -j 2");
  REQUIRE(now.status == 0);
  CHECK_THAT(now.out, Catch::Contains("-ngl 99 --n-cpu-moe ") && Catch::Contains("layers and the LM head on the GPU, the first"));
  CHECK(json_number(now.out, "experts_on_cpu_vs_layers_on_cpu") < json_number(r.out, "experts_on_cpu_vs_layers_on_cpu"));
}

// engine.moe_layer_sync: a fixed cost of each MoE layer whose experts run on a GPU (llama.cpp's
// expert path), none for a layer whose experts are on the CPU (--n-cpu-moe: it pays miss_sync).
TEST_CASE("llama.cpp: each GPU MoE layer adds moe_layer_sync to the step, CPU-expert layers do not", "[engines][llama.cpp]") {
  auto step_s = [](const std::string& scenario, const std::string& extra) {
    auto r = run_vramsim("run " + scenario + " --set workload.requests=1 --json " + extra);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return 1.0 / json_number(r.out, "p50", "decode_tok_s");
  };
  const std::string bench = kConfigs + "/scenarios/llama-bench-tg128.yaml --set model=qwen3-30b-a3b";
  const double none = step_s(bench, "--set engine.moe_layer_sync=0us");
  const double with = step_s(bench, "--set engine.moe_layer_sync=100us");
  CHECK(with - none == Approx(48 * 100e-6).epsilon(1e-4));  // 48 MoE layers
  // gpt-oss-20b with --cpu-moe: every layer's experts on the CPU.
  const double cpu_none = step_s(kGptOss, "--set engine.moe_layer_sync=0us");
  const double cpu_with = step_s(kGptOss, "--set engine.moe_layer_sync=100us");
  CHECK(cpu_with == Approx(cpu_none).epsilon(1e-9));
}

// engine.layer_launch_cycles: the per-layer cost is latency-bound kernels, so it runs at the
// card's boost clock (compute.boost_clock); a layer_launch the engine gives wins at any clock.
TEST_CASE("llama.cpp: the per-layer cost is cycles at the card's boost clock, unless layer_launch is given", "[engines][llama.cpp]") {
  auto step_s = [](const std::string& extra) {
    auto r = run_vramsim("run " + kConfigs + "/scenarios/llama-bench-tg128.yaml --set workload.requests=1 --json " + extra);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return 1.0 / json_number(r.out, "p50", "decode_tok_s");
  };
  // The scenario's card is an RTX 3090 (1,695 MHz); at half its clock each of llama 8B's 32
  // layers pays the preset's 177,173 cycles once more.
  const double base = step_s(""), slow = step_s("--set hardware.gpu.compute.boost_clock=847.5MHz");
  CHECK(slow - base == Approx(32 * 177173 / 1.695e9).epsilon(1e-3));
  const double given = step_s("--set engine.layer_launch=50us");
  CHECK(step_s("--set engine.layer_launch=50us --set hardware.gpu.compute.boost_clock=847.5MHz") == Approx(given).epsilon(1e-9));
  CHECK(base - given == Approx(32 * (177173 / 1.695e9 - 50e-6)).epsilon(1e-3));
  // A card without a clock cannot take a cost in cycles; a clock is refused out of range.
  auto bare = run_vramsim("run " + kConfigs + "/scenarios/llama-bench-tg128.yaml --set hardware.gpu.compute.boost_clock=");
  CHECK(bare.status == 2);
  CHECK_THAT(bare.err, Catch::Contains("gives no compute.boost_clock, which the engine's layer_launch_cycles needs"));
  auto slip = run_vramsim("run " + kConfigs + "/scenarios/llama-bench-tg128.yaml --set hardware.gpu.compute.boost_clock=25GHz");
  CHECK(slip.status == 2);
  CHECK_THAT(slip.err, Catch::Contains("boost_clock") && Catch::Contains("between 100 MHz and 10 GHz"));
}

// engine.expert_sort_sync (llama.cpp builds before PR 15525): each of an MoE layer's three expert
// products over two positions or more idles the GPU while the host sorts the expert ids, on top
// of whatever the micro-batch's kernels take; a one-token micro-batch (matrix-vector kernels over
// the ids on the GPU) and a dense model do not pay it.
TEST_CASE("llama.cpp: expert_sort_sync adds three host sorts per GPU MoE layer and multi-token micro-batch",
          "[engines][llama.cpp]") {
  auto prefill_s = [](const std::string& model, int ubatch, const std::string& sort) {
    auto r = run_vramsim("run " + kConfigs + "/scenarios/llama-bench-tg128.yaml --set model=" + model +
                         " --set workload.prompt_tokens=512 --set workload.gen_tokens=1 --set engine.prefill_ubatch=" +
                         std::to_string(ubatch) + " --set engine.expert_sort_sync=" + sort + " --json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    return 512.0 / json_number(r.out, "p50", "prefill_tok_s");
  };
  // DeepSeek-V2-Lite: 26 MoE layers (its first layer is dense), 512 / 8 = 64 micro-batches.
  const double none = prefill_s("deepseek-v2-lite", 8, "0us"), with = prefill_s("deepseek-v2-lite", 8, "30us");
  CHECK(with - none == Approx(64 * 26 * 3 * 30e-6).epsilon(1e-3));
  // Large micro-batches are compute-bound, and the sorts still add in full: 4 of 128 tokens.
  CHECK(prefill_s("deepseek-v2-lite", 128, "30us") - prefill_s("deepseek-v2-lite", 128, "0us") ==
        Approx(4 * 26 * 3 * 30e-6).epsilon(1e-3));
  CHECK(prefill_s("deepseek-v2-lite", 1, "30us") == Approx(prefill_s("deepseek-v2-lite", 1, "0us")).epsilon(1e-9));
  CHECK(prefill_s("llama-3.1-8b", 8, "30us") == Approx(prefill_s("llama-3.1-8b", 8, "0us")).epsilon(1e-9));
  // A unit slip is refused with the key's location.
  auto bad = run_vramsim("run " + kConfigs + "/scenarios/llama-bench-tg128.yaml --set engine.expert_sort_sync=30ms");
  CHECK(bad.status != 0);
  CHECK_THAT(bad.err, Catch::Contains("expert_sort_sync") && Catch::Contains("10 ms or more is not physical"));
}

// llama.cpp copies the RAM-resident experts each micro-batch touches: a 1-token last batch
// touches few of them, so a 513-token prompt costs little more than a 512-token one, while a
// second full batch costs as much again.
TEST_CASE("llama.cpp: each prompt micro-batch copies only the experts it touches", "[engines][llama.cpp]") {
  auto ttft = [](int prompt) {
    const std::string out = run_json("", "--model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M --context 8192 "
                                         "--set workload.requests=1 --set workload.prompt_tokens=" + std::to_string(prompt));
    return json_number(out, "p50", "ttft_s");
  };
  const double one = ttft(512), one_more = ttft(513), two = ttft(1024);
  CHECK(one_more > one);
  CHECK(one_more - one < 0.1 * (two - one));
}

// The flags printed are those of the scenario simulated, every --set included (cli/quick_scenario.h,
// engine_flags): a quantized KV cache needs -ctk/-ctv and, for V, Flash Attention.
TEST_CASE("run --model: llama.cpp's flags carry the KV type, Flash Attention and the slots simulated", "[engines][quick]") {
  CHECK_THAT(run_ok("run --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ryzen-7950x-ddr5 --quant Q4_K_M "
                    "--set engine.kv_type=q8_0 --set engine.gpu_layers=99 --set engine.cpu_moe_layers=18"),
             Catch::Contains("llama.cpp flags: -ngl 99 --n-cpu-moe 18 -c 4096 -ctk q8_0 -ctv q8_0 -fa on\n"));
  // Two slots of 2048 tokens each: llama-server's -c is shared by its -np slots.
  CHECK_THAT(run_ok("run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --context 2048 --set engine.parallel=2 "
                    "--set workload.clients=2"),
             Catch::Contains("llama.cpp flags: -ngl 99 -c 4096 -np 2\n"));
  // A micro-batch other than llama.cpp's 512 (-b too above its 2048), and a layer split set.
  const std::string llama = "run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --set workload.requests=1 ";
  CHECK_THAT(run_ok(llama + "--set engine.prefill_ubatch=64"), Catch::Contains("llama.cpp flags: -ngl 99 -c 4096 -ub 64\n"));
  CHECK_THAT(run_ok(llama + "--set engine.prefill_ubatch=4096"), Catch::Contains("-c 4096 -b 4096 -ub 4096\n"));
  // -ts deals the offloaded layers, the output layer among them (the last card's): 20 and 12 + 1.
  CHECK_THAT(run_ok(llama + "--gpus 2 --set 'engine.layer_split=[20, 12]'"), Catch::Contains("llama.cpp flags: -ngl 99 -ts 20,13 -c 4096\n"));
}

TEST_CASE("plan: a --set on a key plan chooses is refused, naming the option that sets it", "[engines][plan][errors]") {
  const std::string plan = "plan --model qwen3-14b --gpu rtx-4090 --host ryzen-7950x-ddr5 ";
  struct Refused {
    const char* args;
    const char* message;
  };
  const Refused refused[] = {
      {"--set engine.gpu_layers=10", "--set engine.gpu_layers: plan chooses engine.gpu_layers itself"},
      {"--set engine.kv_type=q8_0", "--set engine.kv_type: plan chooses"},
      {"--set workload.clients=4", "use --clients"},
      {"--set engine.weights.experts=Q8_0", "use --quant"},
      {"--engine hybrid-cpu-experts --set engine.expert_cache.size=10", "engine.expert_cache.size"},
      {"--set 'engine={preset: llama.cpp}'", "--set engine: it would replace engine.kv_type, which plan chooses"},
      // With several clients llama-server gets one slot each: -np is plan's, as its header says.
      {"--clients 2 --set engine.parallel=3", "--set engine.parallel: with --clients 2 plan gives llama-server one slot per client (-np 2)"},
      // The options that set these: the header and the flags follow them.
      {"--set hardware.gpu.count=2", "--set hardware.gpu.count: plan chooses hardware.gpu.count itself (use --gpus)"},
      {"--set engine.context=100", "--set engine.context: plan chooses engine.context itself (use --context)"},
      {"--set hardware.gpu.preset=rtx-3090", "use --gpu"},
      {"--set hardware.host.preset=ddr4-dual-channel", "use --host"},
      {"--gpus 2 --set 'engine.layer_split=[20,20]'", "plan sets a pipeline's split (-ts) with each placement"},
  };
  for (const Refused& r : refused) check_usage_error(plan + r.args, r.message);
  // Options under which no candidate can be timed: a usage error that says why, not an internal one.
  check_usage_error(plan + "--quant Q4_K_M -j 1 --set workload.gen_tokens=1",
                    "no configuration could be simulated (2 tried); the first, -ngl 99 -c 4096: no decode step to time");
}

TEST_CASE("plan: a native format too large for the host RAM is not judged but the formats tried are", "[engines][plan]") {
  // Qwen3-235B-A22B's BF16 experts (423 GiB) exceed the host's 384 GiB; Q4_K_M's do not.
  CHECK_THAT(run_ok("plan --model qwen3-235b-a22b --gpu rtx-3090 --host epyc-9554-ddr5 --json -j 2 --top 50"),
             vramsim::test::HasMember("quant", "\"Q4_K_M\""));
  // With 200 GiB of RAM Q8_0's experts do not fit: skipped with a note, not the end of the plan.
  const std::string small = run_ok("plan --model qwen3-235b-a22b --gpu rtx-3090 --host epyc-9554-ddr5 --json -j 2 --top 50 "
                                   "--set hardware.host.memory.capacity=200GiB");
  CHECK_THAT(small, vramsim::test::HasMember("quant", "\"Q4_K_M\""));
  const vramsim::json::Value doc = vramsim::test::parse_json(small);
  REQUIRE(doc.find("skipped"));
  // Both KV types are skipped (one note each: their KV sizes, in the reason, differ).
  std::vector<std::string> q8_kv;
  for (const auto& note : doc.find("skipped")->items()) {
    CHECK(note.find("quant")->text() != "Q4_K_M");
    CHECK_THAT(note.find("reason")->text(), Catch::Contains("do not fit in epyc-9554-ddr5's RAM"));
    if (note.find("quant")->text() == "Q8_0")
      for (const auto& kv : note.find("kv_types")->items()) q8_kv.push_back(kv.text());
  }
  CHECK(std::count(q8_kv.begin(), q8_kv.end(), "f16") == 1);
  CHECK(std::count(q8_kv.begin(), q8_kv.end(), "q8_0") == 1);
  // No format left: nothing fits, with the reasons.
  auto none = run_vramsim("plan --model qwen3-235b-a22b --gpu rtx-3090 --host epyc-9554-ddr5 --quant Q8_0 "
                          "--set hardware.host.memory.capacity=200GiB");
  CHECK(none.status == 2);
  CHECK_THAT(none.err, Catch::Contains("RAM"));
}

// A user whose model does not fit the card at Q4_K_M steps down the formats' ladder; plan does
// too, to the first rung that keeps every layer on the GPU, and only when one does.
TEST_CASE("plan: formats below Q4_K_M are tried down to the first that keeps every layer on the GPU", "[engines][plan]") {
  const std::string big = run_ok("plan --model llama-3.3-70b --gpu rtx-5090 --host ryzen-7950x-ddr5 --json -j 2 --top 50");
  CHECK(std::regex_search(big, std::regex("\"lower_quants_tried\": \\[\\s*\"Q3_K_M\",\\s*\"Q2_K\"\\s*\\]")));
  // The fastest is the rung that keeps everything on the card.
  CHECK_THAT(vramsim::test::json_text(big, "flags", "best"), Catch::StartsWith("-ngl 99 -c"));
  CHECK(vramsim::test::json_text(big, "quant", "best") == "Q2_K");
  CHECK_THAT(big, vramsim::test::HasMember("quant", "\"Q4_K_M\""));
  // A model that fits at Q4_K_M, and one that fits at no rung, get no lower format.
  CHECK_THAT(run_ok("plan --model llama-3.1-8b --gpu rtx-5090 --host ryzen-7950x-ddr5 --json -j 2"),
             vramsim::test::HasMember("lower_quants_tried", "[]"));
  const std::string huge = run_ok("plan --model qwen3-235b-a22b --gpu rtx-3090 --host epyc-9554-ddr5 --json -j 2 --top 50");
  CHECK_THAT(huge, vramsim::test::HasMember("lower_quants_tried", "[]") && !vramsim::test::HasMember("quant", "\"Q2_K\""));
  // Q2_K is the lowest rung tried unless --lowest-quant goes further down: Qwen3-30B-A3B fits a
  // 12 GB card with every layer on it at IQ2_XXS only.
  CHECK_THAT(run_ok("plan --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ddr5-dual-channel --json -j 2"),
             vramsim::test::HasMember("lower_quants_tried", "[]"));
  CHECK(std::regex_search(run_ok("plan --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ddr5-dual-channel --json -j 2 "
                                 "--lowest-quant iq2_xxs"),
                          std::regex("\"lower_quants_tried\": \\[\\s*\"Q3_K_M\",\\s*\"Q2_K\",\\s*\"IQ2_XXS\"\\s*\\]")));
  vramsim::test::check_usage_error("plan --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ddr5-dual-channel --lowest-quant Q5_K_M",
                                   "--lowest-quant: \"Q5_K_M\" is not a rung of the formats' ladder below Q4_K_M (Q3_K_M, Q2_K, IQ2_XXS, IQ1_S)");
  vramsim::test::check_usage_error("plan --model qwen3-30b-a3b --gpu rtx-3060-12gb --host ddr5-dual-channel --quant Q4_K_M --lowest-quant Q2_K",
                                   "plan steps down from Q4_K_M only without --quant");
  // The table says why it tried them.
  CHECK_THAT(run_ok("plan --model llama-3.3-70b --gpu rtx-5090 --host ryzen-7950x-ddr5 -j 2"),
             Catch::Contains("so plan also tried Q3_K_M, Q2_K (below Q4_K_M"));
}

TEST_CASE("plan --clients N: llama.cpp gets one slot per client, -np N and -c shared by them", "[engines][plan]") {
  const std::string out = plan_json("--model llama-3.1-8b --gpu rtx-4090 --host ddr5-dual-channel --quant Q4_K_M --clients 2 "
                                    "--goal throughput");
  for (const auto& f : all_flags(out)) {
    INFO(f);
    CHECK(std::regex_search(f, std::regex(" -c 8192 -np 2( |$)")));
  }
  CHECK_THAT(out, vramsim::test::HasMember("engine", "\"llama.cpp\""));
  CHECK(json_number(out, "failed") == 0);
}

TEST_CASE("plan: the largest context is exact to the token", "[engines][plan]") {
  // llama-3.1-8b Q8_0 on a 12 GB card, every layer on the GPU: the largest -c that fits.
  const std::string out = plan_json("--model llama-3.1-8b --gpu rtx-3060-12gb --host ddr5-dual-channel --quant Q8_0 --context 8192");
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("\"flags\": \"-ngl 99 -c 8192\"[^}]*\"max_context\": ([0-9]+)")));
  const std::string most = m[1];
  // `run` keeps every layer on the GPU at that context by the memory-budget model, and a token
  // beyond it by llama.cpp's own accounting only.
  const std::string base = "run --model llama-3.1-8b --gpu rtx-3060-12gb --quant Q8_0 --set workload.requests=1 ";
  auto at = run_vramsim(base + "--context " + most);
  INFO(at.err);
  CHECK_THAT(at.out, Catch::Contains("rtx-3060-12gb: every layer on the GPU\n"));
  auto over = run_vramsim(base + "--context " + std::to_string(std::stoll(most) + 1));
  INFO(over.err);
  CHECK_THAT(over.out, Catch::Contains("rtx-3060-12gb: every layer on the GPU (by llama.cpp's own accounting"));
}

// A dense 70B in Q8_0 on an 8 GB card and 16 GiB of RAM: no placement holds it, and the reason
// is the host's RAM (the all-CPU placement's numbers), not "even with every layer on the CPU".
TEST_CASE("plan and run --model: when nothing fits because of the host's RAM, they say so with the numbers", "[engines][plan][errors]") {
  const std::string args = "--model llama-3.3-70b --gpu rtx-2080 --host ddr4-dual-channel --quant Q8_0 "
                           "--set hardware.host.memory.capacity=16GiB";
  check_usage_error("run " + args, "fits in no placement: the cards do not hold enough of it, and with every layer on the CPU "
                                   "the CPU layers' weights (69.86 GiB)");
  check_usage_error("plan " + args, "do not fit in ddr4-dual-channel's RAM (16.00 GiB)");
}

// `run --model` builds its scenario from the options: an error names the option a part came
// from, never a line of the text it built.
TEST_CASE("run --model: errors point at the option, not at a generated line", "[engines][quick][errors]") {
  auto r = run_vramsim("run --model qwen3-235b-a22b --gpu rtx-3090 --quant Q2_K --engine expert-cache");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--model qwen3-235b-a22b: error: model.moe.routing"));
  CHECK(r.err.find("<command line>") == std::string::npos);
  auto plan = run_vramsim("plan --model deepseek-v3 --gpu rtx-3060-12gb --host ddr5-dual-channel");
  CHECK(plan.status == 2);
  CHECK(plan.err.find("<command line>:") == std::string::npos);
}

// llama.cpp has no expert cache: its hit rate is the share of look-ups whose expert is in VRAM,
// whether the others are in RAM as a CPU layer's (-ngl) or as --n-cpu-moe's; the summary says
// how many experts the cards hold instead of a cache line, and strata writes no start-up lines.
TEST_CASE("llama.cpp MoE: the hit rate counts experts in VRAM, however the rest stay in RAM", "[engines][llama.cpp]") {
  const std::string base = "run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) +
                           "/scenarios/rtx2080-i9-10900x-llama-server.yaml --set model=qwen3-30b-a3b --set workload.requests=1 ";
  // Qwen3-30B-A3B: 48 MoE layers. -ngl 20: 20 layers' experts in VRAM; --n-cpu-moe 36: 12.
  for (const auto& [placement, share, in_vram] : {std::tuple{"--set engine.gpu_layers=20", 20.0 / 48, "2560 of 6144"},
                                                  std::tuple{"--set engine.cpu_moe_layers=36", 12.0 / 48, "1536 of 6144"}}) {
    INFO(placement);
    CHECK(json_number(run_ok(base + placement + " --json"), "p50", "expert_hit_rate") == Approx(share));
    const std::string table = run_ok(base + placement + " --log-format strata");
    CHECK_THAT(table, Catch::Contains(std::string("  experts ") + in_vram + " in VRAM") && !Catch::Contains("  cache "));
    CHECK_THAT(table, !Catch::Contains("strata generate:") && Catch::Contains("strata serve: decode expert cache hit rate"));
  }
  // Every expert on the cards: said so, once for a tensor split's shards (each card holds a
  // slice of every expert; they were summed to "12288 of 6144 (200%)").
  CHECK_THAT(run_ok("run --model qwen3-30b-a3b --gpu rtx-4090 --quant Q4_K_M --set workload.requests=1"),
             Catch::Contains("  experts all 6144 in VRAM, with their layers\n"));
  CHECK_THAT(run_ok("run --model qwen3-30b-a3b --gpu h100-sxm --gpus 2 --engine vllm --set workload.requests=2"),
             Catch::Contains("  experts all 6144 in VRAM, with their layers (each card a shard of each)\n"));
}

// plan names the rule behind each "-c up to N fits": the memory-budget model for a dense model
// with every layer on the GPU, llama.cpp's own accounting for any other placement.
TEST_CASE("plan: each context bound names the rule that judged it", "[engines][plan]") {
  const std::string out = run_ok("plan --model qwen3-32b --gpu rtx-3090 --host ddr5-dual-channel --context 8192 --quant Q4_K_M -j 2");
  // ... and, for every layer on the GPU, the larger bound of the engine's own accounting that
  // run --model falls back to beyond it.
  CHECK_THAT(out, Catch::Contains("(every layer on the GPU; -c up to ") &&
                      Catch::Contains(" fits by the memory-budget model, up to ") &&
                      Catch::Contains(" by weights + KV + runtime (engine.vram_rule=engine))"));
  CHECK_THAT(out, Catch::Contains("(63 of 64 layers and the LM head on the GPU, layer 0 on the CPU; -c up to ") &&
                      Catch::Contains(" fits by weights + KV + runtime)"));
}

// llama.cpp runs an operation of 32 rows or more on the GPU even when its weights are in RAM,
// copying them in first (ggml-cuda's offload_op): a batched decode step of 32 positions copies
// the --n-cpu-moe experts it uses over the link, where 31 positions have the CPU compute them.
TEST_CASE("llama.cpp: a batched step of 32 positions copies its RAM experts to the GPU", "[engines][llama.cpp][batching]") {
  const auto step = [](int clients) {
    return run_ok("run --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M --set engine.cpu_moe_layers=24 "
                  "--context 1024 --set engine.kv_type=q8_0 --set engine.parallel=" + std::to_string(clients) +
                  " --set workload.clients=" + std::to_string(clients) + " --set workload.requests=" +
                  std::to_string(2 * clients) + " --json");
  };
  const std::string below = step(31), at = step(32);
  CHECK(json_number(below, "cpu_experts", "step_time_breakdown") > 0.5);
  CHECK(json_number(below, "transfer", "step_time_breakdown") == 0);
  CHECK(json_number(at, "cpu_experts", "step_time_breakdown") == 0);
  CHECK(json_number(at, "transfer", "step_time_breakdown") > 0.5);
  // Whole CPU layers (-ngl) likewise: from 32 positions their weights and KV stream to the first
  // card, which computes them; the CPU stays idle.
  const auto dense = [](int clients) {
    return run_ok("run --model llama-3.1-8b --gpu rtx-3060-12gb --quant Q8_0 --set engine.gpu_layers=20 --context 1024 "
                  "--set engine.kv_type=q8_0 --set engine.parallel=" + std::to_string(clients) + " --set workload.clients=" +
                  std::to_string(clients) + " --set workload.requests=" + std::to_string(2 * clients) + " --json");
  };
  const std::string cpu = dense(31), streamed = dense(32);
  CHECK(json_number(cpu, "cpu_layers", "step_time_breakdown") > 0.5);
  CHECK(json_number(cpu, "busy_s", "cpu_layers") > 0);
  CHECK(json_number(streamed, "cpu_layers", "step_time_breakdown") == 0);
  CHECK(json_number(streamed, "transfer", "step_time_breakdown") > 0.5);
  CHECK(json_number(streamed, "busy_s", "cpu_layers") == 0);
  // Its GEMMs count on the card: at 256 positions they take longer than the copies.
  const std::string wide = run_ok("run --model llama-3.1-8b --gpu rtx-3060-12gb --quant Q8_0 --set engine.gpu_layers=20 "
                                  "--context 600 --set engine.kv_type=q8_0 --set engine.parallel=256 --set workload.clients=256 "
                                  "--set workload.requests=512 --set workload.prompt_tokens=64 --json");
  CHECK(json_number(wide, "compute", "step_time_breakdown") > json_number(wide, "transfer", "step_time_breakdown"));
}
