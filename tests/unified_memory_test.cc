// Apple Silicon (unified-memory parts) in `run` and `plan`: one part, no link, its own CPU as
// host, llama.cpp (Metal) with every layer on its GPU. Runs the real binary.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "tests/scenario_runs.h"
#include "tests/json_matchers.h"

using vramsim::test::check_usage_error;
using vramsim::test::json_number;
using vramsim::test::plan_json;
using vramsim::test::run_ok;
using vramsim::test::run_vramsim;

namespace {
const std::string kMac = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/llama-bench-mac.yaml";

double decode_of(const std::string& args) { return vramsim::test::decode_p50(run_ok("run " + args + " --json")); }
}  // namespace

TEST_CASE("run --model on an Apple part: decode and prefill from its unified memory, its own CPU as host", "[unified]") {
  const std::string out = run_ok("run --model llama-3.1-8b --gpu m4-max-128gb --quant Q4_K_M --json");
  CHECK(json_number(out, "p50", "decode_tok_s") > 0);
  CHECK(json_number(out, "p50", "prefill_tok_s") > 0);
  const std::string text = run_ok("run --model llama-3.1-8b --gpu m4-max-128gb --quant Q4_K_M");
  CHECK_THAT(text, Catch::Contains("unified memory at 546.0 GB/s, host apple-m4-max, engine llama.cpp"));
  CHECK_THAT(text, Catch::Contains("J/token (the whole machine's power figures)"));
  // Decode streams the weights from the unified memory: 800 GB/s beats 546 GB/s beats 120 GB/s.
  const double ultra = decode_of("--model llama-3.1-8b --gpu m2-ultra-192gb --quant Q4_K_M");
  const double max = decode_of("--model llama-3.1-8b --gpu m4-max-128gb --quant Q4_K_M");
  const double m4 = decode_of("--model llama-3.1-8b --gpu m4-16gb --quant Q4_K_M");
  CHECK(ultra > max);
  CHECK(max > 3 * m4);
}

TEST_CASE("an Apple part has no link, its host is its own CPU, and it is one part", "[unified][errors]") {
  check_usage_error("run --model llama-3.1-8b --gpu m4-16gb --host ddr5-dual-channel",
                    "--gpu m4-16gb is a unified-memory part: no --link (its GPU reads the memory it shares with the CPU) "
                    "and no --host (its host is its own CPU, apple-m4)");
  check_usage_error("run --model llama-3.1-8b --gpu m4-16gb --gpus 2", "several cannot be combined");
  check_usage_error("run " + kMac + " --set hardware.link.preset=pcie-gen4-x16",
                    "hardware.link: m2-ultra-192gb is a unified-memory part: its GPU reads the weights from the memory it "
                    "shares with the CPU, over no link (leave hardware.link out)");
  check_usage_error("run " + kMac + " --set hardware.host.preset=ryzen-7950x-ddr5",
                    "hardware.host: m2-ultra-192gb is a unified-memory part: its host is its own CPU, apple-m2-ultra");
  check_usage_error("run " + kMac + " --set engine.gpu_layers=20",
                    "m2-ultra-192gb is a unified-memory part: modelled with a llama.cpp engine and every layer on its GPU");
  check_usage_error("run " + kMac + " --set engine.preset=hybrid-cpu-experts --set model=qwen3-30b-a3b", "modelled with a llama.cpp engine");
}

TEST_CASE("a model beyond an Apple part's GPU share of its memory is refused, with the numbers", "[unified][errors]") {
  // 75% of 16 GiB is usable by the GPU (the memory-budget model's unified share).
  check_usage_error("run --model llama-3.3-70b --gpu m4-16gb --quant Q4_K_M", "needs 45.05 GiB of 12.00 GiB usable");
}

TEST_CASE("plan on an Apple part: no --host, every layer on its GPU, the formats that fit", "[unified][plan]") {
  const std::string out = plan_json("--model llama-3.3-70b --gpu m4-max-128gb");
  const auto flags = vramsim::test::all_flags(out);
  REQUIRE_FALSE(flags.empty());
  for (const auto& f : flags) {
    CHECK_THAT(f, Catch::StartsWith("-ngl 99"));
    CHECK_THAT(f, !Catch::Contains("--n-cpu-moe"));
  }
  CHECK_THAT(run_ok("plan --model llama-3.3-70b --gpu m4-max-128gb --top 1 -j 2"), Catch::Contains("host apple-m4-max"));
  // A discrete card still needs its host named.
  check_usage_error("plan --model llama-3.3-70b --gpu rtx-4090", "missing required option --host");
}

// Metal's own figures (sim/scenario.cc): a unified part streams at its memory.stream_share and
// pays compute.dispatch_latency x llama.cpp's metal_dispatches_per_layer (5.16 us x 23) per
// layer, not the preset's CUDA fit (0.948, 92.6 us); the same figures given to the engine give
// the same run, and an engine value the scenario sets is kept.
TEST_CASE("run on an Apple part: its measured stream share and kernel dispatches, not the CUDA fit", "[unified]") {
  const std::string base = "--model llama-3.1-8b --gpu m4-16gb --quant Q4_K_M";
  const double own = decode_of(base);
  CHECK(decode_of(base + " --set engine.gpu_bandwidth_efficiency=0.833 --set engine.layer_launch=118.68us") == Approx(own).epsilon(1e-9));
  CHECK(decode_of(base + " --set hardware.gpu.memory.stream_share=0.95") > own);
  CHECK(decode_of(base + " --set hardware.gpu.compute.dispatch_latency=2us") > own);
  CHECK(decode_of(base + " --set engine.layer_launch=200us") < own);  // given: kept
  check_usage_error("run " + base + " --set hardware.gpu.memory.stream_share=85", "not a percentage");
  check_usage_error("run " + base + " --set hardware.gpu.compute.dispatch_latency=5ms", "check the unit (us)");
}

// The host CPU's power beside the boards (sim/power.h): an offloaded run's host computes, a run
// with every weight on the GPU leaves it idle; on an Apple part the figures are the machine's.
TEST_CASE("run: the host CPU's power enters J/token where the host gives cpu.power", "[unified][power]") {
  using vramsim::test::json_truth;
  const std::string offload = run_ok("run --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M --json");
  CHECK(json_number(offload, "busy_share", "host_cpu") > 0.1);
  CHECK(json_number(offload, "j_per_token_with_host", "energy") > json_number(offload, "j_per_token", "energy"));
  const std::string gpu_only = run_ok("run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json");
  CHECK(json_number(gpu_only, "busy_share", "host_cpu") == 0);
  CHECK(json_number(gpu_only, "avg_power_w", "host_cpu") == Approx(20));  // ddr5-dual-channel's idle
  CHECK_THAT(run_ok("run --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M"), Catch::Contains("  host CPU        busy "));
  const std::string mac = run_ok("run --model llama-3.1-8b --gpu m4-16gb --quant Q4_K_M --json");
  CHECK_THAT(mac, vramsim::test::HasMember("j_per_token_with_host", "null"));
  check_usage_error("run --model llama-3.1-8b --gpu m4-16gb --quant Q4_K_M --set hardware.host.preset=apple-m4 --set hardware.host.cpu.power.full_load=60W "
                    "--set hardware.host.cpu.power.idle=5W",
                    "its power figures are the whole machine's");
}
