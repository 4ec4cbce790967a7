// `vramsim run` and `vramsim validate` as a user runs them (each a real process with its own
// SimGrid engine).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "cli/progress_log.h"
#include "core/json_value.h"
#include "tests/json_matchers.h"
#include "tests/test_support.h"

using vramsim::test::check_usage_error;
using vramsim::test::json_number;
using vramsim::test::run_vramsim;

namespace {
std::string scenario(const std::string& run) {
  return std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-" + run + ".yaml";
}
std::string without_wall_time(const std::string& json) {
  return std::regex_replace(json, std::regex("\"wall_s\": [^,\\n]*"), "\"wall_s\": X");
}
std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST_CASE("run --json carries the documented fields", "[run]") {
  auto r = run_vramsim("run " + scenario("shared") + " --set workload.requests=5 --json");
  REQUIRE(r.status == 0);
  for (const char* key : {"\"cache\"", "\"slots\": 5798", "\"coverage\"", "\"expert_hit_rate\"", "\"pcie_overflow\"",
                          "\"decode_tok_s\"", "\"p50\"", "\"p5\"", "\"p95\"", "\"step_time_breakdown\"", "\"compute\"",
                          "\"transfer\"", "\"stall\"", "\"cpu_experts\"", "\"launch_sync\"", "\"util\"",
                          "\"useful_fraction\"", "\"avg_power_w\"", "\"j_per_token\"", "\"completed\": 5",
                          "\"rejected\": 0", "\"throughput_tok_s\"", "\"wall_s\"", "\"simgrid_activities\""})
    CHECK_THAT(r.out, Catch::Contains(key));
}

TEST_CASE("same scenario and seed: identical results, and another seed: different", "[run][determinism]") {
  auto a = run_vramsim("run " + scenario("shared") + " --set workload.requests=8 --json --requests-out det_a.jsonl");
  auto b = run_vramsim("run " + scenario("shared") + " --set workload.requests=8 --json --requests-out det_b.jsonl");
  auto c = run_vramsim("run " + scenario("shared") + " --set workload.requests=8 --seed 2 --json");
  REQUIRE(a.status == 0);
  CHECK(without_wall_time(a.out) == without_wall_time(b.out));
  CHECK(read("det_a.jsonl") == read("det_b.jsonl"));
  CHECK(without_wall_time(a.out) != without_wall_time(c.out));
}

TEST_CASE("requests-out, trace and strata telemetry are written", "[run]") {
  auto r = run_vramsim("run " + scenario("shared") + " --set workload.requests=3 --requests-out run_req.jsonl " +
                       "--trace run_trace.json --trace-steps 2 --log-format strata --log run_strata.log");
  REQUIRE(r.status == 0);
  const std::string req = read("run_req.jsonl");
  CHECK(std::count(req.begin(), req.end(), '\n') == 3);
  for (const char* key : {"\"hit_rate\"", "\"pcie_overflow\"", "\"decode_tok_s\"", "\"prompt_tokens\":26",
                          "\"gen_tokens\":192", "\"ttft_s\""})
    CHECK_THAT(req, Catch::Contains(key));
  const std::string trace = read("run_trace.json");
  CHECK_THAT(trace, Catch::StartsWith("{\"traceEvents\":["));
  CHECK_THAT(trace, Catch::Contains("bubble"));
  const std::string log = read("run_strata.log");
  CHECK_THAT(log, Catch::Contains("strata generate: expert cache auto: 8.33 GiB free, 700 MiB reserved (+184 MiB for the draft head) -> 5798 slots"));
  CHECK_THAT(log, Catch::Contains("pcie_frac 0.38 (default 0.55 )"));
  CHECK_THAT(log, Catch::Contains("strata serve: decode expert cache hit rate: "));
  CHECK_THAT(log, Catch::Contains("more read by the GPU over PCIe or from another GPU"));
}

TEST_CASE("bad scenarios are refused with exit 2 and one clear message", "[run][errors]") {
  const std::pair<const char*, const char*> cases[] = {
      {"hardware.link.measured_h2d=0GB/s", "hardware.link.measured_h2d: must be greater than zero"},
      {"engine.expert_cache.policy=fifo", "expected one of profile, lru, lfu, profile-lru, got \"fifo\""},
      {"engine.expert_cache.size=9000", "engine.expert_cache.size: 9000 slots need"},
      {"engine.mmq_max_rows=32", "engine.mmq_max_rows: a build that dequantizes larger GEMMs to fp16 (mmq_max_rows > 0) needs dequant_gemm_efficiency"},
      {"engine.dequant_gemm_efficiency=0.5", "engine.dequant_gemm_efficiency: applies only with mmq_max_rows > 0"},
      {"hardware.gpu.compute.dense_fp16_accumulate=1TFLOPS", "the fp16-accumulate tensor rate cannot be below the fp32-accumulate one"},
      {"hardware.gpu.compute.dense_fp32=0TFLOPS", "hardware.gpu.compute.dense_fp32: must be greater than zero"},
      {"model.moe.experts_per_token=600", "top-k (600) cannot exceed the number of experts (512)"},
      {"hardware.host.memory.capacity=16GiB", "do not fit in xeon-gold-5218-x2's RAM"},
      {"model=llama-3.1-8b --set engine.speculative.kind=none", "llama-3.1-8b does not fit this card: card 0 (layers 0-31) needs"},
      {"model=llama-3.1-8b", "engine.speculative.kind: kind: mtp drafts with the model's multi-token-prediction head, and llama-3.1-8b has none"},
      {"hardware.gpu.count=2 --set engine.split=tensor", "a tensor split of an MoE expert cache is not modelled"},
      {"hardware.gpu.count=2 --set engine.split=ring", "expected one of single, pipeline, tensor, expert, got \"ring\""},
      {"hardware.gpu.count=2 --set engine.layer_split=[10,10]", "the counts add up to 20 layers"},
      {"engine.contxt=4096", "engine.contxt: unknown key (did you mean \"context\"?)"},
      {"hardware.gpu.power.tdp=450kW", "hardware.gpu.power.tdp: a card's TDP is at most 2,000 W"},
      {"hardware.gpu.vram_used_by_other=1GiB", "unknown key (did you mean \"vram_used_by_others\"?)"},
      {"hardware.link.measured=1GB/s", "unknown key (did you mean \"measured_h2d\"?)"},
      {"engine.matvec_max_rows=-1", "engine.matvec_max_rows: must be between 0 and 1048576, got \"-1\""},
      {"engine.step_overhead=100s", "engine.step_overhead: a fixed cost per step of 1 s or more is not physical"},
      {"engine.layer_launch=999ms", "engine.layer_launch: a fixed cost per layer or hand-off of 10 ms or more is not physical"},
      {"engine.gpu_bandwidth_efficiency=1e-9", "engine.gpu_bandwidth_efficiency: an efficiency below 0.01 (1% of the peak)"},
      {"engine.matvec_max_rows_experts=-2", "engine.matvec_max_rows_experts: must be between 0 and 1048576, got \"-2\""},
      {"engine.matvec_compute_efficiency=2", "engine.matvec_compute_efficiency: an efficiency is at most 1"},
      {"hardware.gpu.power.tdp=5W", "idle power (30 W) must be below the TDP (5 W, set at --set hardware.gpu.power.tdp=5W)"},
      {"engine.ngl_output_first=false", "engine.ngl_output_first: a llama.cpp build's -ngl convention; this engine keeps every layer"},
      {"engine.host_expert_workers=64", "--set engine.host_expert_workers=64: error: engine.host_expert_workers: 64 worker groups need at least a core each: xeon-gold-5218-x2 has 32 cores"},
      {"hardware.link.numa_node=9", "--set hardware.link.numa_node=9: error: hardware.link.numa_node: node 9 does not exist"},
      {"engine.cpu_expert_bytes_per_flop=2", "engine.cpu_expert_bytes_per_flop: at most 0.5 (one 8-bit weight per multiply-add"},
      {"hardware.host.cpu.fp32_throughput=", "cpu.fp32_throughput is missing in xeon-gold-5218-x2: the engine's host expert kernels are compute-bound"},
  };
  for (const auto& [assignment, message] : cases) vramsim::test::check_refused(scenario("shared"), assignment, message);
}

TEST_CASE("what-ifs move the answer the right way: Gen5 and a 48 GB card", "[run]") {
  auto base = run_vramsim("run " + scenario("shared") + " --set workload.requests=20 --json");
  auto gen5 = run_vramsim("run " + scenario("shared") +
                          " --set workload.requests=20 --set hardware.link.preset=pcie-gen5-x16 --set hardware.link.measured_h2d=56GB/s --json");
  auto big = run_vramsim("run " + scenario("shared") + " --set workload.requests=20 --set hardware.gpu.vram_used_by_others=2106MiB --json");
  REQUIRE(base.status == 0);
  REQUIRE(gen5.status == 0);
  REQUIRE(big.status == 0);
  auto p50 = [](const std::string& json) { return vramsim::test::json_number(json, "p50", "decode_tok_s"); };
  CHECK(p50(gen5.out) > p50(base.out));
  CHECK(p50(big.out) > 1.3 * p50(base.out));  // 16 GB more for the cache
  CHECK(gen5.err.find("warning") == std::string::npos);
}

// The llama.cpp preset's known decode bias on a card is said with the figures (stderr and the
// JSON's warnings), and only for that card.
TEST_CASE("a card the out-of-sample data show biased gets the preset's note", "[run][validate]") {
  auto fast = run_vramsim("run --model llama-3.1-8b --gpu rtx-5090 --set workload.requests=2 --json");
  REQUIRE(fast.status == 0);
  CHECK_THAT(fast.err, Catch::Contains("warning: llama.cpp on rtx-5090: one request's decode with 2026 builds measured 16-31% faster than predicted"));
  const vramsim::json::Value fast_doc = vramsim::test::parse_json(fast.out);
  REQUIRE(fast_doc.find("warnings"));
  REQUIRE_FALSE(fast_doc.find("warnings")->items().empty());
  CHECK_THAT(fast_doc.find("warnings")->items().front().text(),
             Catch::StartsWith("llama.cpp on rtx-5090: one request's decode with 2026 builds"));
  auto plain = run_vramsim("run --model llama-3.1-8b --gpu rtx-4090 --set workload.requests=2 --json");
  REQUIRE(plain.status == 0);
  CHECK_THAT(plain.err, !Catch::Contains("warning"));
  const vramsim::json::Value plain_doc = vramsim::test::parse_json(plain.out);
  REQUIRE(plain_doc.find("warnings"));
  CHECK(plain_doc.find("warnings")->items().empty());
  CHECK_THAT(run_vramsim("plan --model llama-3.1-8b --gpu rtx-5090 --host ddr5-dual-channel --quant Q4_K_M -j 2").err,
             Catch::Contains("warning: llama.cpp on rtx-5090: one request's decode"));
  // The A100's note went when the per-layer cost became cycles at each card's clock.
  CHECK_THAT(run_vramsim("plan --model llama-3.1-8b --gpu a100-80gb --host xeon-gold-6454s-x2 --quant Q4_K_M -j 2").err,
             !Catch::Contains("warning: llama.cpp on a100-80gb"));
}

// The strata log is the expert-cache engine's: a dense model has no cache line to pair.
TEST_CASE("run --log-format strata is refused for a dense model", "[run][errors]") {
  vramsim::test::check_usage_error("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/llama70b-2x4090-pipeline.yaml "
                                   "--set workload.requests=2 --log-format strata",
                                   "--log-format strata: llama-3.3-70b is a dense model");
}

// A per-card link list: an error in the second card's link points at that card's key.
TEST_CASE("a NUMA node error points at the card's own link entry", "[run][errors]") {
  auto r = run_vramsim("run " + vramsim::test::data_path("scenarios/numa-node-card1.yaml"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("numa-node-card1.yaml:8:42: error: hardware.link.numa_node: node 5 does not exist"));
}

// With no host workers the engine's pcie_frac no longer splits anything: the summary says so.
TEST_CASE("no host workers: the summary says every miss is read over PCIe", "[run]") {
  const std::string none = vramsim::test::run_ok("run " + scenario("shared") + " --set workload.requests=2 --set engine.host_expert_workers=0");
  CHECK_THAT(none, Catch::Contains("pcie_frac 0.38 (no host workers: every miss is read over PCIe)"));
  const std::string split = vramsim::test::run_ok("run " + scenario("shared") + " --set workload.requests=2");
  CHECK_THAT(split, !Catch::Contains("no host workers") &&
                        Catch::Contains("pcie_frac 0.38: the host computes up to 6 missed experts a layer, PCIe reads the rest"));
  CHECK(vramsim::test::json_number(vramsim::test::run_ok("run " + scenario("shared") + " --set workload.requests=2 --json"),
                                   "host_expert_slots") == 6);
  // A copy-in policy has no split to speak of; two cards may split differently (the x4 card's
  // slower link gives its host more).
  CHECK_THAT(vramsim::test::run_ok("run " + scenario("shared") + " --set workload.requests=2 --set engine.expert_cache.policy=lru"),
             Catch::Contains("pcie_frac 0.38 (unused: this policy copies every miss into the cache)"));
  CHECK_THAT(vramsim::test::run_ok("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-2x5090-x16-x4.yaml "
                                   "--set workload.requests=2"),
             Catch::Contains("the host computes up to 6 missed experts a layer (card 1: 9), PCIe reads the rest"));
}

// The host's fp32 peak is needed only where the host computes experts, and a share the
// arithmetic cap overrides is flagged rather than silently ignored.
TEST_CASE("the expert-cache host rate: fp32 needed only for host work, and a share that does not bind is flagged", "[run]") {
  const std::string base = "run " + scenario("shared") + " --set workload.requests=2 --set hardware.host.cpu.fp32_throughput= ";
  for (const char* no_host_work : {"--set engine.host_expert_workers=0", "--set engine.expert_cache.policy=lru"}) {
    auto r = run_vramsim(base + no_host_work);
    INFO(no_host_work << "\n" << r.err);
    CHECK(r.status == 0);
  }
  auto share = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --set engine.cpu_expert_share=0.3");
  REQUIRE(share.status == 0);
  CHECK_THAT(share.err, Catch::Contains("warning: engine.cpu_expert_share (0.3) does not bind: the host's expert kernels are "
                                        "compute-bound at 51.4 GB/s"));
  // Cleared, the share sets the rate: 0.201 of 255.9 GB/s is the calibrated 51.4 GB/s again.
  auto memory = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --set engine.cpu_expert_bytes_per_flop= "
                            "--set engine.cpu_expert_share=0.201 --json");
  auto compute = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --json");
  REQUIRE(memory.status == 0);
  CHECK_THAT(memory.err, !Catch::Contains("does not bind"));
  CHECK(vramsim::test::json_number(memory.out, "p50", "decode_tok_s") ==
        Approx(vramsim::test::json_number(compute.out, "p50", "decode_tok_s")).epsilon(0.001));
  // More cores alone leave the arithmetic as it was: the run says what sets it.
  auto cores = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --set hardware.host.cpu.cores=64");
  REQUIRE(cores.status == 0);
  CHECK_THAT(cores.err, Catch::Contains("warning: hardware.host.cpu.cores set without cpu.fp32_throughput: the host's arithmetic "
                                        "stays 2.4 TFLOPS"));
}

// The preset's 10 worker groups are its 32-core machine's: a smaller host gets one per core,
// with a warning; a count the scenario sets beyond the cores is refused (above).
TEST_CASE("the preset's host worker groups shrink to the host's cores, with a warning", "[run]") {
  auto small = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --set hardware.host.preset=ddr5-dual-channel");
  REQUIRE(small.status == 0);
  CHECK_THAT(small.err, Catch::Contains("warning: the engine preset's 10 host worker groups exceed ddr5-dual-channel's 8 cores: "
                                        "one group per core (8)"));
  auto big = run_vramsim("run " + scenario("shared") + " --set workload.requests=2");
  CHECK_THAT(big.err, !Catch::Contains("worker groups"));
}

// The scenario's measured rate is the Gen3 slot's: a new preset alone keeps it, and the run says so.
TEST_CASE("a measured link rate kept for a faster preset is flagged", "[run][link]") {
  auto gen4 = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --set hardware.link.preset=pcie-gen4-x16");
  REQUIRE(gen4.status == 0);
  CHECK_THAT(gen4.err, Catch::Contains("measured_h2d (13.9 GB/s) is under 3/4 of pcie-gen4-x16's typical 26.0 GB/s") &&
                           Catch::Contains("--set hardware.link.measured_h2d="));
  auto own = run_vramsim("run " + scenario("shared") + " --set workload.requests=2");
  REQUIRE(own.status == 0);
  CHECK(own.err.find("under 3/4") == std::string::npos);
}

// The run's GPU utilisation: "util" of the top-level "gpu" object (cards and links have their own).
static double gpu_util(const std::string& json) {
  const vramsim::json::Value run = vramsim::test::parse_json(json);
  const vramsim::json::Value* util = run.at_path("gpu.util");
  REQUIRE(util);
  return util->number();
}

TEST_CASE("parallel slots: overlapped steps with one client keep the single-slot clock", "[run][parallel]") {
  // Per-layer activities (GPU, host worker groups, link) reproduce the step model when nothing
  // contends: the same requests decode at the same speed as with one slot. Also with copies
  // into an LRU cache (a latency per copy, computed after it lands) and with the experts in the
  // other socket's memory (read at the NUMA rate, below a Gen5 link's).
  const std::string common = " --set workload.requests=6 --set engine.expert_cache.size=4500 --json";
  for (const std::string variant : {"", " --set engine.expert_cache.policy=lru",
                                    " --set hardware.link=pcie-gen5-x16 --set hardware.host.expert_memory=1"}) {
    INFO(variant);
    auto one = run_vramsim("run " + scenario("shared") + common + variant);
    auto two = run_vramsim("run " + scenario("shared") + common + variant +
                           " --set engine.parallel=2 --set engine.slot_scheduling=overlapped");
    REQUIRE(one.status == 0);
    REQUIRE(two.status == 0);
    auto p50 = [](const std::string& json) { return vramsim::test::json_number(json, "p50", "decode_tok_s"); };
    CHECK(p50(two.out) == Approx(p50(one.out)).epsilon(0.002));
    // One client: the second slot idles, so the driver sees what one slot shows.
    const auto util = [](const std::string& json) { return gpu_util(json); };
    CHECK(util(two.out) == Approx(util(one.out)).epsilon(0.01));
  }
}

TEST_CASE("overlapped slots: GPU utilisation is the union of the slots' resident time, not its sum", "[run][parallel][power]") {
  // Two clients on two overlapped slots: each slot's waits overlap the other's kernels, so
  // summing the slots' resident times would exceed the makespan (it once did, clamped to 100%).
  auto two = vramsim::test::run_ok("run " + scenario("shared") + " --set workload.requests=6 --set workload.clients=2 "
                                   "--set engine.parallel=2 --set engine.slot_scheduling=overlapped --json");
  using vramsim::test::json_number;
  const double util = gpu_util(two);
  CHECK(util < 1.0);
  CHECK(util > json_number(two, "useful_fraction"));
  CHECK(json_number(two, "util", "cards") == Approx(util));  // the card's own figure agrees
}

TEST_CASE("parallel slots on the case study's card: serial slots do not raise throughput", "[run][parallel]") {
  auto throughput = [](const std::string& json) { return vramsim::test::json_number(json, "throughput_tok_s"); };
  auto one = run_vramsim("run " + scenario("shared") + " --set workload.requests=20 --set workload.clients=2 --json");
  auto two = run_vramsim("run " + scenario("shared") +
                         " --set workload.requests=20 --set workload.clients=2 --set engine.parallel=2 --json");
  auto overlapped = run_vramsim("run " + scenario("shared") +
                                " --set workload.requests=20 --set workload.clients=2 --set engine.parallel=2 "
                                "--set engine.slot_scheduling=overlapped --json");
  REQUIRE(one.status == 0);
  REQUIRE(two.status == 0);
  REQUIRE(overlapped.status == 0);
  CHECK(throughput(two.out) < throughput(one.out));         // the report's finding
  CHECK(throughput(overlapped.out) > throughput(two.out));  // an engine that overlaps slots gains
}

TEST_CASE("a prompt over the 32K window is rejected, and no admission control means all complete", "[run][serving]") {
  auto long_prompt = run_vramsim("run " + scenario("shared") +
                                 " --set workload.requests=2 --set workload.prompt_tokens=34941 --json --requests-out rej.jsonl");
  REQUIRE(long_prompt.status == 1);  // every request rejected: exit 1, with the summary
  CHECK(json_number(long_prompt.out, "completed") == 0);
  CHECK(json_number(long_prompt.out, "prompt_exceeds_context") == 2);
  std::istringstream rejected(read("rej.jsonl"));
  for (std::string line; std::getline(rejected, line);)
    CHECK(vramsim::test::json_text(line, "rejected") == "prompt_exceeds_context");
  auto overload = run_vramsim("run " + scenario("shared") + " --set workload.requests=32 --set workload.clients=32 --json");
  REQUIRE(overload.status == 0);
  CHECK_THAT(overload.out, vramsim::test::HasMember("completed", "32"));
  CHECK_THAT(overload.out, vramsim::test::HasMember("rejected", "0"));
}

TEST_CASE("admission control turns away requests beyond engine.max_queue", "[run][serving]") {
  auto capped = run_vramsim("run " + scenario("shared") +
                            " --set workload.requests=32 --set workload.clients=32 --set engine.max_queue=4 --json");
  REQUIRE(capped.status == 0);
  // The idle slot takes the first at once; four more wait; the other 27 find the queue full.
  CHECK(json_number(capped.out, "completed") == 5);
  CHECK(json_number(capped.out, "queue_full") == 27);
  // A batched engine's free slots each take an arrival at once, as serial slots do: 4 slots
  // and 4 waiting serve 8 of 32 sent together, whichever way the slots are scheduled.
  for (const char* scheduling : {"batched", "serial"}) {
    auto four = run_vramsim(std::string("run --model llama-3.1-8b --gpu rtx-4090 --set engine.parallel=4 --set workload.clients=32 "
                                        "--set workload.requests=32 --set engine.max_queue=4 --json --set engine.slot_scheduling=") +
                            scheduling);
    INFO(scheduling << "\n" << four.err);
    REQUIRE(four.status == 0);
    CHECK(json_number(four.out, "completed") == 8);
    CHECK(json_number(four.out, "queue_full") == 24);
  }
  // A queue of 0 would turn every request away, even on an idle engine: refused.
  vramsim::test::check_usage_error("run " + scenario("shared") + " --set engine.max_queue=0",
                                   "engine.max_queue: must be between 1 and");
}

TEST_CASE("closed-loop concurrency: aggregate throughput flat, time to first token grows", "[run][serving]") {
  double throughput_c2 = 0, ttft_c1 = 0;
  for (int c : {1, 2, 4, 16}) {
    auto r = run_vramsim("run " + scenario("exclusive") + " --set workload.requests=32 --set workload.clients=" +
                         std::to_string(c) + " --json");
    REQUIRE(r.status == 0);
    const double throughput = vramsim::test::json_number(r.out, "throughput_tok_s");
    const double ttft = vramsim::test::json_number(r.out, "p50", "ttft_s");
    if (c == 1) ttft_c1 = ttft;
    if (c == 2) throughput_c2 = throughput;
    if (c > 2) CHECK(throughput == Approx(throughput_c2).epsilon(0.15));
    if (c == 16) CHECK(ttft > 8 * ttft_c1);
  }
}

TEST_CASE("open-loop Poisson arrivals: light load waits for nobody, overload queues", "[run][serving]") {
  const std::string open = " --set workload.requests=40 --set workload.clients= --set workload.arrival.process=poisson";
  auto light = run_vramsim("run " + scenario("exclusive") + open + " --set workload.arrival.rate=6/min --json --requests-out poisson.jsonl");
  auto heavy = run_vramsim("run " + scenario("exclusive") + open + " --set workload.arrival.rate=2/s --json");
  REQUIRE(light.status == 0);
  REQUIRE(heavy.status == 0);
  auto ttft_p50 = [](const std::string& json) { return vramsim::test::json_number(json, "p50", "ttft_s"); };
  CHECK(ttft_p50(light.out) < 0.1);   // arrivals 10 s apart, a request takes ~0.8 s: no queue
  CHECK(ttft_p50(heavy.out) > 1.0);   // 2 per second against ~1.2 per second served
  // 40 exponential gaps of mean 10 s: the last arrival near 400 s (within 4 standard deviations).
  const std::string lines = read("poisson.jsonl");
  const std::string last_line = lines.substr(lines.rfind('\n', lines.size() - 2) + 1);
  const double last_arrival = json_number(last_line, "arrival_s");
  CHECK(last_arrival > 400 - 4 * 63);
  CHECK(last_arrival < 400 + 4 * 63);
}

TEST_CASE("an open-loop workload with clients is refused", "[run][errors]") {
  auto r = run_vramsim("run " + scenario("shared") + " --set workload.arrival.process=poisson --set workload.arrival.rate=1/s");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("workload.clients: an open-loop (poisson) workload has no clients"));
}

// Options that build a scenario without a file, or that depend on another, are refused rather
// than ignored; an output file that cannot be written fails before the simulation runs.
TEST_CASE("run refuses options it would ignore and unwritable outputs up front", "[run][errors]") {
  const std::string shared = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
  check_usage_error("run " + shared + " --gpu rtx-3060-12gb", "--gpu builds a scenario without a file; with ");
  check_usage_error("run " + shared + " --log out.log", "--log needs --log-format strata");
  check_usage_error("run " + shared + " --seed -1", "--seed -1: error: seed:");
  check_usage_error("run " + shared + " --seed ''", "--seed: expected a whole number");
  check_usage_error("run " + shared + " --seed '[1'", "--seed [1: the value is not valid YAML");
  check_usage_error("validate case-study extra", "expected at most one dataset");
  check_usage_error("run " + shared + " --trace-steps 5", "--trace-steps needs --trace FILE");
  // Refused before the run: nothing on stdout.
  check_usage_error("run " + shared + " --trace /no/such/dir/trace.json", "cannot write /no/such/dir/trace.json");
}

// Command-line names are values, never YAML: a brace or a comma in one is a bad name.
TEST_CASE("run --model: option values cannot inject YAML", "[run][errors]") {
  check_usage_error("run --model llama-3.1-8b --gpu rtx-4090 --host 'x }'", "\"x }\" is not a host name");
  check_usage_error("run --model llama-3.1-8b --gpu rtx-4090 --quant 'Q4_K_M, extra: 1'",
                    "unknown weights format \"Q4_K_M, extra: 1\"");
}

// Values no real part has are refused where they are written, not left to overflow a run.
TEST_CASE("physically impossible quantities and a capacity without its driver total are refused", "[run][errors]") {
  const std::string shared = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
  const std::pair<std::string, std::string> cases[] = {
      {"hardware.gpu.memory.bandwidth=1e-300B/s", "hardware.gpu.memory.bandwidth: a bandwidth of 1e-300B/s is not physical (expected 1 kB/s to 1 PB/s)"},
      {"hardware.link.latency=1e300s", "hardware.link.latency: a duration of 1e300s is not physical"},
      {"hardware.host.cpu.fp32_throughput=1e-300FLOPS", "is not physical (expected 1 MFLOPS to 10 EFLOPS)"},
      // The simulation takes the driver's total as the card's: a what-if capacity must bring its own.
      {"hardware.gpu.memory.capacity=48GiB", "hardware.gpu.memory.driver_total: the driver's total (31.84 GiB) does not belong to a card of 48.00 GiB"},
      // Clearing a required key blames the --set that cleared it, not the catalogue file.
      {"hardware.link.latency=", "--set hardware.link.latency=: error: hardware.link.latency: required, but cleared here"},
      // A PCIe link's nominal rate is its generation's lane rate x its lanes.
      {"hardware.link.lanes=8", "15.75 GB/s is not the nominal rate of a PCIe Gen3 x8 link (7.88 GB/s per direction)"},
      {"hardware.link.generation=5", "15.75 GB/s is not the nominal rate of a PCIe Gen5 x16 link (63.02 GB/s per direction)"},
      // A unified-memory part has no VRAM beside RAM and no PCIe link.
      {"hardware.gpu.preset=m4-max-128gb", "hardware.link: m4-max-128gb is a unified-memory part: its GPU reads the weights from the memory it shares with the CPU, over no link"},
      // Sizes beyond any model, and top-k experts that do not fit in the active parameters.
      {"model.params.total=1e308", "model.params.total: more than 1e15 parameters"},
      {"model.params.active=1e9", "a token's top-10 routed experts alone (2122787520 parameters) exceed params.active"},
      {"model.native_format=Q9_Z", "model.native_format: unknown weights format \"Q9_Z\""},
      // A bound between two keys names the other one and where it was set.
      {"engine.miss_sync=0us", "engine.miss_sync_idle: cannot exceed miss_sync (0us, at --set engine.miss_sync=0us)"},
  };
  for (const auto& [assignment, message] : cases) vramsim::test::check_refused(shared, assignment, message);
  auto cleared = run_vramsim("run " + shared + " --set hardware.gpu.memory.capacity=48GiB --set hardware.gpu.memory.driver_total= "
                             "--set workload.requests=2 --json");
  INFO(cleared.err);
  CHECK(cleared.status == 0);
  // An MLA model's latent cache has no sliding-window layers in the model: refused, not ignored.
  vramsim::test::check_usage_error("run --model deepseek-v2-lite --gpu h200 --set 'model.attention.sliding_window={window: 128, layers: 10}'",
                                   "sliding-window layers are modelled for gqa and mha attention, not for mla");
  // --set cannot reach into a list: the two-card scenario's links.
  vramsim::test::check_refused(std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-2x5090-x16-x4.yaml",
                               "hardware.link.1.measured_h2d=3GB/s", "hardware.link is a list; --set can replace it whole");
}

TEST_CASE("a slot faster or wider than the card trains at the card's generation and width", "[run][link]") {
  const std::string rig = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/rtx2080-i9-10900x-llama-server.yaml";
  // The RTX 2080 is a Gen3 x16 card: a Gen5 x16 slot runs it at Gen3 x16, and says so.
  auto gen5 = run_vramsim("run " + rig + " --set hardware.link.preset=pcie-gen5-x16 --set workload.requests=1 --json");
  auto gen3 = run_vramsim("run " + rig + " --set hardware.link.preset=pcie-gen3-x16 --set workload.requests=1 --json");
  REQUIRE(gen5.status == 0);
  REQUIRE(gen3.status == 0);
  CHECK_THAT(gen5.err, Catch::Contains("the rtx-2080 is a PCIe Gen3 x16 card, so the pcie-gen5-x16 slot trains at "
                                       "pcie-gen3-x16: simulated as pcie-gen3-x16"));
  CHECK(vramsim::test::json_number(gen5.out, "bandwidth_gb_s", "links") == Approx(13.9));
  // The same run but for its warning (and the wall time).
  auto same_run = [](const std::string& json) {
    vramsim::json::Value v = vramsim::test::parse_json(json);
    v.erase("warnings");
    vramsim::json::Value sim = *v.find("sim");
    sim.erase("wall_s");
    v.set("sim", sim);
    return vramsim::json::to_line(v);
  };
  CHECK(same_run(gen5.out) == same_run(gen3.out));
  CHECK_THAT(gen5.out, Catch::Contains("slot trains at pcie-gen3-x16"));
  // A narrower slot is the link: x8 stays x8. A measured rate above the trained link's nominal is refused.
  auto x8 = run_vramsim("run " + rig + " --set hardware.link.preset=pcie-gen3-x8 --set workload.requests=1 --json");
  REQUIRE(x8.status == 0);
  CHECK(x8.err.find("trains at") == std::string::npos);
  vramsim::test::check_refused(rig, "hardware.link.preset=pcie-gen5-x16 --set hardware.link.measured_h2d=40GB/s",
                               "the link trains at Gen3 x16, whose nominal 15.8 GB/s is below the measured 40.0 GB/s");
}

TEST_CASE("the host CPU's layers are their own share of a decode step, not GPU compute", "[run][llama.cpp]") {
  // Mixtral on an RTX 3090 with its first layers in RAM (-ngl below the layer count).
  const std::string offload = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/mixtral-3090-offload.yaml";
  const std::string out = vramsim::test::run_ok("run " + offload + " --set workload.requests=3 --json");
  using vramsim::test::json_number;
  const double cpu = json_number(out, "cpu_layers", "step_time_breakdown");
  const double compute = json_number(out, "compute", "step_time_breakdown");
  CHECK(cpu > 0.3);
  // One card, so the GPU's useful time is the compute share of the decode steps (and the
  // prefill's, which is small here).
  CHECK(compute == Approx(json_number(out, "useful_fraction", "gpu")).epsilon(0.1));
  double sum = 0;
  for (const char* part : {"compute", "transfer", "stall", "cpu_experts", "launch_sync", "cpu_layers"})
    sum += json_number(out, part, "step_time_breakdown");
  CHECK(sum == Approx(1.0));
  // Every layer and the LM head on the card (-ngl 99): no CPU share.
  const std::string all_gpu = vramsim::test::run_ok("run " + offload + " --set workload.requests=1 --set engine.gpu_layers=99 "
                                                    "--set hardware.gpu.count=2 --json");
  CHECK(json_number(all_gpu, "cpu_layers", "step_time_breakdown") == 0);
}

// llama.cpp counts the output layer as layer n_layer + 1. Builds before ggml-org/llama.cpp PR
// 18148 offload it last: -ngl 32 on a 32-layer model offloads every layer but leaves the LM head
// on the CPU ("offloaded 32/33 layers to GPU"). Later builds offload it first: -ngl 32 is the
// head and 31 layers, layer 0 on the CPU. -ngl 99 is every layer and the head in both.
TEST_CASE("llama.cpp's -ngl places the LM head as the build counts it, and -ngl 99 puts it on the GPU", "[run][llama.cpp]") {
  using vramsim::test::json_number;
  const std::string llama = "run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --set workload.requests=1 ";
  const std::string last = "--set engine.ngl_output_first=false ";
  const std::string ngl32 = vramsim::test::run_ok(llama + last + "--set engine.gpu_layers=32 --json");
  const std::string ngl99 = vramsim::test::run_ok(llama + last + "--set engine.gpu_layers=99 --json");
  const std::string unset = vramsim::test::run_ok(llama + "--json");
  CHECK(json_number(unset, "p50", "decode_tok_s") == json_number(ngl99, "p50", "decode_tok_s"));
  // The CPU reads the head every token: a share of the step, and a slower decode.
  CHECK(json_number(ngl32, "cpu_layers", "step_time_breakdown") > 0.2);
  CHECK(json_number(ngl99, "cpu_layers", "step_time_breakdown") == 0);
  CHECK(json_number(ngl32, "p50", "decode_tok_s") < 0.8 * json_number(ngl99, "p50", "decode_tok_s"));
  // No CPU layer, but the head and embedding table in RAM; the card holds neither.
  CHECK(json_number(ngl32, "end_layer", "cpu_layers") == 0);
  CHECK(json_number(ngl32, "ram_gib", "cpu_layers") > 0.3);
  CHECK(json_number(ngl32, "weights_gib", "cards") < json_number(ngl99, "weights_gib", "cards") - 0.2);
  CHECK_THAT(vramsim::test::run_ok(llama + last + "--set engine.gpu_layers=32"),
             Catch::Contains("llama.cpp flags: -ngl 32 ") && Catch::Contains("CPU   no layer (-ngl 32), the embedding table and the LM head"));
  // A current build: layer 0 on the CPU, the head on the card. The CPU reads one layer (0.11 GB)
  // instead of the head (0.43 GB): faster than the other build's -ngl 32; the card holds the
  // head and one layer fewer.
  const std::string first32 = vramsim::test::run_ok(llama + "--set engine.gpu_layers=32 --json");
  CHECK(json_number(first32, "end_layer", "cpu_layers") == 1);
  CHECK(json_number(first32, "p50", "decode_tok_s") > json_number(ngl32, "p50", "decode_tok_s"));
  CHECK(json_number(first32, "p50", "decode_tok_s") < json_number(ngl99, "p50", "decode_tok_s"));
  CHECK(json_number(first32, "ram_gib", "cpu_layers") < json_number(ngl32, "ram_gib", "cpu_layers"));
  CHECK(json_number(first32, "weights_gib", "cards") > json_number(ngl32, "weights_gib", "cards"));
  CHECK_THAT(vramsim::test::run_ok(llama + "--set engine.gpu_layers=32"),
             Catch::Contains("llama.cpp flags: -ngl 32 ") && Catch::Contains("31 of 32 layers and the LM head on the GPU, layer 0 on the CPU") &&
                 Catch::Contains("CPU   layer 0, the embedding table from RAM (") && !Catch::Contains("and the LM head from RAM"));
  // -ngl 0 keeps the head on the CPU in both builds.
  CHECK(json_number(vramsim::test::run_ok(llama + "--set engine.gpu_layers=0 --json"), "end_layer", "cpu_layers") == 32);
  // When every layer and the head do not fit, run --model in a build that offloads the head last
  // tries the head alone on the CPU before a whole layer: Gemma 3 27B's LM head (262k x 5376) is
  // larger than one of its layers. At 4K every layer and the head fit by llama.cpp's own
  // accounting (the memory-budget model refuses them), which judges the head-on-CPU placement
  // too: that comes first; at 32K only the latter fits (Gemma ties its embeddings: the card
  // holds the head's copy). A current build cannot leave the head alone on the CPU with -ngl:
  // whole layers go there, the head stays on the card.
  const std::string gemma = "run --model gemma-3-27b --gpu rtx-4090 --quant Q6_K --set workload.requests=1 --set workload.gen_tokens=1";
  CHECK_THAT(vramsim::test::run_ok(gemma),
             Catch::Contains("every layer on the GPU (by llama.cpp's own accounting; the memory-budget model refuses it: "
                             "engine.vram_rule=engine)") && Catch::Contains("llama.cpp flags: -ngl 99 "));
  CHECK_THAT(vramsim::test::run_ok(gemma + " --context 32768 --set engine.ngl_output_first=false"),
             Catch::Contains("every layer on the GPU but the LM head on the CPU") && Catch::Contains("llama.cpp flags: -ngl 62 "));
  CHECK_THAT(vramsim::test::run_ok(gemma + " --context 32768"),
             Catch::Contains("layers and the LM head on the GPU, the first ") && !Catch::Contains("-ngl 62 "));
  // A row split has no CPU stage to put it on: refused with the way out.
  vramsim::test::check_usage_error(llama + last + "--gpus 2 --set engine.split=tensor --set engine.gpu_layers=32",
                                   "keeps the LM head on the CPU, which is modelled with a pipeline split only; gpu_layers: 99");
  vramsim::test::check_usage_error(llama + "--gpus 2 --set engine.split=tensor --set engine.gpu_layers=32",
                                   "CPU layers combine with a pipeline split only");
}

TEST_CASE("profile-lru's background copies use the link: counted, and never beyond its bandwidth", "[run][cache]") {
  const std::string base = "run " + scenario("shared") + " --set workload.requests=4 --json ";
  const std::string prefetch = "--set engine.expert_cache.policy=profile-lru --set engine.expert_cache.dynamic_share=1 ";
  using vramsim::test::json_number;
  const std::string pinned = vramsim::test::run_ok(base);
  const std::string copied = vramsim::test::run_ok(base + prefetch);
  const std::string overlapped = vramsim::test::run_ok(base + prefetch + "--set workload.clients=2 --set engine.parallel=2 "
                                                       "--set engine.slot_scheduling=overlapped");
  // With every slot in the LRU part the cache admits and evicts as lru does in decode (lru also
  // copies in its prompts' experts at prefill; profile-lru's host computes them), and every
  // miss is copied in as lru's are, besides being read or computed for the step: more bytes.
  const std::string lru = vramsim::test::run_ok(base + "--set engine.expert_cache.policy=lru");
  CHECK(json_number(copied, "p50", "expert_hit_rate") == Approx(json_number(lru, "p50", "expert_hit_rate")).margin(0.01));
  CHECK(json_number(copied, "gb", "links") > json_number(lru, "gb", "links"));
  CHECK(json_number(copied, "gb", "links") > 2 * json_number(pinned, "gb", "links"));
  // ... and the link carries them within its bandwidth, whether a step's link work sets a floor
  // (one slot) or the copies are link transfers of their own (overlapped slots).
  CHECK(json_number(copied, "util", "links") <= 1.0);
  CHECK(json_number(overlapped, "util", "links") <= 1.0);
  CHECK(json_number(overlapped, "gb", "links") > 2 * json_number(pinned, "gb", "links"));
}

// llama.cpp: a prompt batch of 32 tokens or more streams the CPU layers' weights to the first
// card once per micro-batch; the card's link carries them.
TEST_CASE("a long prompt's CPU layers stream over the first card's link, once per micro-batch", "[run][llama.cpp]") {
  const std::string mixtral = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/mixtral-3090-offload.yaml";
  auto r = run_vramsim("run " + mixtral + " --set engine.gpu_layers=24 --set engine.context=4096 "
                       "--set workload.prompt_tokens=2048 --set workload.requests=1 --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  // 8 CPU layers of Mixtral Q4_K_M (6.64 GiB) x 4 micro-batches of 512 tokens.
  CHECK(json_number(r.out, "gb", "links") == Approx(4 * 6.64 * 1.073741824).epsilon(0.02));
}

TEST_CASE("power: a compute-bound prefill pays its FLOPs, and a run over the TDP says so", "[run][power]") {
  const std::string h100 = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/llama8b-h100-vllm.yaml";
  // Prefill only: 4,096-token prompts, one token out. (TDP - idle - wait) / dense fp16 per FLOP
  // puts the H100 (463 W / 989 TFLOPS) well above idle + wait (70 + 0.265 x 630 = 237 W) at
  // ~100% utilisation.
  auto pre = run_vramsim("run " + h100 +
                         " --set workload.prompt_tokens=4096 --set workload.gen_tokens=1 --set workload.clients=1"
                         " --set workload.requests=4 --json");
  REQUIRE(pre.status == 0);
  CHECK(json_number(pre.out, "avg_power_w") > 400.0);
  CHECK(json_number(pre.out, "avg_power_w") <= 700.0);
  CHECK_FALSE(vramsim::test::json_truth(pre.out, "power_capped"));
  // Batch-1 decode streams at ~95% of the time: with the H100's own energy per byte, (700 - 70 -
  // 167) W / 3350 GB/s = 138 pJ/B, it stays under the TDP; 304 pJ/B set by hand would exceed it:
  // capped and reported.
  const std::string decode = "run " + h100 + " --set workload.clients=1 --set workload.requests=2";
  auto own = run_vramsim(decode + " --json");
  REQUIRE(own.status == 0);
  const double watts = json_number(own.out, "avg_power_w");
  CHECK(watts > 70.0 + 0.265 * 630);  // above idle + wait: it streams
  CHECK(watts < 700.0);
  CHECK_FALSE(vramsim::test::json_truth(own.out, "power_capped"));
  auto gddr7 = run_vramsim(decode + " --set engine.energy_per_byte_pj=304");
  REQUIRE(gddr7.status == 0);
  CHECK_THAT(gddr7.out, Catch::Contains("mean power 700 W (TDP-limited; model"));
  CHECK_THAT(gddr7.out, Catch::Contains("(GPU boards only)"));
}

// A resident kernel streaming at full bandwidth is the card at its rated power: the wait share
// comes out of the same TDP - idle, so a memory-bound decode on any card stays under its TDP
// (it used to add the wait on top of a whole (TDP - idle) per byte, and every card was capped).
TEST_CASE("power: dense decode stays under each card's TDP, and the old wait_power key is refused", "[run][power]") {
  for (const char* gpu : {"rtx-3060-12gb", "rtx-3090", "rtx-4090", "l40s", "a100-80gb", "h100-sxm"}) {
    INFO(gpu);
    auto r = run_vramsim(std::string("run --model llama-3.1-8b --quant Q4_K_M --gpu ") + gpu + " --json");
    REQUIRE(r.status == 0);
    CHECK_FALSE(vramsim::test::json_truth(r.out, "power_capped"));
    CHECK(json_number(r.out, "util", "gpu") > 0.9);
  }
  vramsim::test::check_refused(scenario("shared"), "engine.wait_power=116W", "replaced by wait_power_share");
  vramsim::test::check_refused(scenario("shared"), "engine.wait_power_share=1", "below 1");
}

// A trace's tracks are timelines: on one track no two events overlap. Serial slots take turns
// (a step's events start once the decode loop is its); overlapped slots each get their own
// tracks ("GPU (slot2)"), their steps running at once.
TEST_CASE("trace: no two events of one track overlap, serial or overlapped slots", "[run][trace]") {
  for (const std::string scheduling : {"serial", "overlapped"}) {
    INFO(scheduling);
    const std::string file = "trace_" + scheduling + ".json";
    vramsim::test::run_ok("run " + scenario("shared") + " --set workload.requests=8 --set workload.clients=4 "
                          "--set engine.parallel=4 --set engine.slot_scheduling=" + scheduling + " --trace " + file +
                          " --trace-steps 40");
    const auto trace = vramsim::json::parse(read(file));
    REQUIRE(trace);
    std::map<std::string, std::vector<std::pair<double, double>>> tracks;
    std::map<std::string, std::string> names;  // tid -> track name
    for (const auto& e : trace->find("traceEvents")->items()) {
      const std::string tid = e.find("tid")->text();
      if (e.find("ph")->text() == "M") names[tid] = e.find("args")->find("name")->text();
      if (e.find("ph")->text() != "X") continue;
      const double ts = e.find("ts")->number();
      tracks[tid].emplace_back(ts, ts + e.find("dur")->number());
    }
    REQUIRE(tracks.size() >= 3);
    for (auto& [tid, events] : tracks) {
      INFO(names[tid]);
      std::sort(events.begin(), events.end());
      for (std::size_t i = 1; i < events.size(); ++i) CHECK(events[i].first >= events[i - 1].second - 1e-3);  // us
    }
    if (scheduling == "overlapped") {
      CHECK(std::any_of(names.begin(), names.end(), [](const auto& n) { return n.second == "GPU (slot3)"; }));
    }
  }
}

// The prefill's last position gives a request's first token: G tokens take G - 1 decode steps,
// and a request of one token has none (its decode speed is no figure, its e2e is its TTFT), in
// every way the engine runs requests.
TEST_CASE("the first output token comes from the prefill, in every engine path", "[run]") {
  const std::string dir = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/";
  const std::string llama70b = dir + "llama70b-2x4090-pipeline.yaml --set engine.context=1024";
  const std::vector<std::string> runs = {
      dir + "llama-bench-tg128.yaml",                                             // one slot
      dir + "llama8b-h100-vllm.yaml",                                             // continuous batching, paged KV pool
      dir + "llama-bench-tg128.yaml --set engine.parallel=2 --set engine.slot_scheduling=overlapped",
      llama70b,                                                                   // pipeline
      llama70b + " --set engine.split=tensor",                                    // tensor split
  };
  const auto out = std::filesystem::temp_directory_path() / ("vramsim_first_token_" + std::to_string(::getpid()) + ".jsonl");
  for (const std::string& run : runs) {
    INFO(run);
    const std::string base = "run " + run + " --set workload.requests=3 --set workload.clients=1 --set workload.prompt_tokens=64 --json";
    auto eight = run_vramsim(base + " --set workload.gen_tokens=8");
    REQUIRE(eight.status == 0);
    CHECK(json_number(eight.out, "decode_steps") == 3 * 7);
    CHECK(json_number(eight.out, "generated_tokens") == 3 * 8);
    auto one = run_vramsim(base + " --set workload.gen_tokens=1 --requests-out " + out.string());
    REQUIRE(one.status == 0);
    CHECK(json_number(one.out, "decode_steps") == 0);
    CHECK(json_number(one.out, "generated_tokens") == 3);
    const auto summary = vramsim::json::parse(one.out);
    REQUIRE(summary);
    CHECK(summary->find("decode_tok_s")->find("p50")->is_null());
    CHECK(summary->find("decode_step_ms")->is_null());
    std::ifstream lines(out);
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n) {
      const auto rec = vramsim::json::parse(line);
      REQUIRE(rec);
      CHECK(rec->find("decode_tok_s")->is_null());
      CHECK(rec->find("e2e_s")->number() == Approx(rec->find("ttft_s")->number()));
    }
    CHECK(n == 3);
  }
  std::filesystem::remove(out);
}

// An MoE request of one token looks no expert up: no hit rate, no overflow (left out of the
// percentiles); a paged KV pool counts its prompt's blocks though it never decodes.
TEST_CASE("one-token requests: no expert figures, their prompt's KV blocks counted", "[run]") {
  auto moe = run_vramsim("run " + scenario("shared") + " --set workload.requests=2 --set workload.gen_tokens=1 --json");
  REQUIRE(moe.status == 0);
  const auto m = vramsim::json::parse(moe.out);
  REQUIRE(m);
  CHECK(m->find("expert_hit_rate")->find("p50")->is_null());
  CHECK(m->find("pcie_overflow")->find("p50")->is_null());
  const std::string h100 = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/llama8b-h100-vllm.yaml";
  auto pool = run_vramsim("run " + h100 + " --set workload.requests=2 --set workload.clients=2 --set workload.prompt_tokens=100 "
                          "--set workload.gen_tokens=1 --json");
  REQUIRE(pool.status == 0);
  CHECK(json_number(pool.out, "peak_blocks") >= 2 * 7);  // 100 tokens in 16-token blocks: 7 each
}

// A run whose every request is rejected failed (exit 1) and has no speed or power: null figures
// and the reason, not zeros.
TEST_CASE("a run that completes nothing exits 1, reports no power, and says why", "[run][power]") {
  auto r = run_vramsim("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) +
                       "/scenarios/mixtral-3090-offload.yaml --set engine.context=64 --set workload.prompt_tokens=100 --json");
  REQUIRE(r.status == 1);
  CHECK(vramsim::test::json_null(r.out, "avg_power_w"));
  CHECK(vramsim::test::json_null(r.out, "j_per_token"));
  CHECK_THAT(r.err, Catch::Contains("no request completed: all 3 were rejected"));
  // An open loop's makespan is its arrivals' span even when nothing runs: still no power.
  auto open = run_vramsim("run mixtral-3090-offload --set engine.context=64 --set workload.prompt_tokens=100 --set workload.clients= "
                          "--set 'workload.arrival={process: poisson, rate: 2/s}' --set workload.requests=5 --json");
  REQUIRE(open.status == 1);
  CHECK(vramsim::test::json_null(open.out, "avg_power_w"));
  CHECK(vramsim::test::json_null(open.out, "total_j"));
}

// A dense model looks no expert up: its hit rate, overflow and coverage have no figure (null),
// not a 100% / 0% that reports would show beside "no expert cache".
TEST_CASE("run --json: a dense model's expert figures are null", "[run][json]") {
  const std::string out = vramsim::test::run_ok("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) +
                                                "/scenarios/llama-bench-tg128.yaml --set workload.requests=1 --json "
                                                "--requests-out /dev/null");
  auto doc = vramsim::json::parse(out);
  REQUIRE(doc.ok());
  CHECK(doc->find("expert_hit_rate")->find("p50")->is_null());
  CHECK(doc->find("pcie_overflow")->find("p50")->is_null());
  CHECK(doc->find("cache")->find("coverage")->is_null());
  CHECK(doc->find("cards")->items().front().find("coverage")->is_null());
  CHECK(doc->find("decode_tok_s")->find("p50")->number() > 0);
}

// The hints name the key the user needs: --gpus beside a file is hardware.gpu.count; a measured
// rate above another link's nominal is unset with measured_h2d=.
TEST_CASE("run: option and link hints name the right key", "[run][errors]") {
  const std::string shared = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
  check_usage_error("run " + shared + " --gpus 3", "use --set instead (e.g. --set hardware.gpu.count=2)");
  check_usage_error("run " + shared + " --set hardware.link.preset=pcie-gen3-x4",
                    "unset it with --set hardware.link.measured_h2d= to use the link's typical rate");
  CHECK_THAT(vramsim::test::run_ok("run " + shared + " --set hardware.link.preset=pcie-gen3-x4 --set hardware.link.measured_h2d= "
                                   "--set workload.requests=1"),
             Catch::Contains("pcie-gen3-x4 at 3.5 GB/s"));
}

// Overlapped slots share the GPU, host and link: the step breakdown is each step's own costs,
// and the run also gives the contended step time from start to end.
TEST_CASE("overlapped slots: the contended step time beside the step's own", "[run][slots]") {
  using vramsim::test::json_number;
  const std::string exclusive = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-exclusive.yaml";
  const std::string slots = " --set workload.requests=16 --set engine.parallel=4 --set engine.slot_scheduling=overlapped";
  const std::string four = vramsim::test::run_ok("run " + exclusive + slots + " --set workload.clients=4 --json");
  CHECK(json_number(four, "decode_step_contended_ms") > 1.5 * json_number(four, "decode_step_ms"));
  CHECK_THAT(vramsim::test::run_ok("run " + exclusive + slots + " --set workload.clients=4"),
             Catch::Contains("  overlapped      those are a step's own costs, alone on the card; with the slots sharing it, a step took"));
  const std::string serial = vramsim::test::run_ok("run " + exclusive + " --set workload.requests=4 --json");
  CHECK(vramsim::test::json_null(serial, "decode_step_contended_ms"));
}

// Issue 26, item 9: a long run whose stderr is not a terminal logs a line now and then: at
// least a tenth more of the requests AND 30 s since the last line (whichever is rarer), the end
// only after a line came before, and once, after 10 s, an estimate when the run extrapolates
// past a minute. A run of under 30 s prints nothing (the goldens' stderr is unchanged).
TEST_CASE("run: progress lines on a non-terminal only for long runs", "[run][progress]") {
  using vramsim::cli::RunProgressLog;
  {
    RunProgressLog quick;  // 1,000 requests in 20 s: nothing at all
    for (int done = 1; done <= 1000; ++done) CHECK_FALSE(quick.update(done, 1000, done * 0.02));
  }
  RunProgressLog slow;  // 1,000 requests at 1 s each
  std::vector<std::string> lines;
  for (int done = 1; done <= 1000; ++done)
    if (auto line = slow.update(done, 1000, done * 1.0)) lines.push_back(*line);
  REQUIRE(lines.size() == 11);
  CHECK(lines[0] == "vramsim run: about 16:40 in all to simulate 1000 requests (10 took 0:10; later requests may cost more or less)\n");
  CHECK(lines[1] == "vramsim run: 100/1000 requests, 1:40 elapsed, ETA 15:00\n");
  CHECK(lines[9] == "vramsim run: 900/1000 requests, 15:00 elapsed, ETA 1:40\n");
  CHECK(lines[10] == "vramsim run: 1000/1000 requests, 16:40 elapsed\n");
  {
    RunProgressLog fast_tenths;  // 10 requests of 40 s: a line per request (each is a tenth)
    int printed = 0;
    for (int done = 1; done <= 10; ++done) printed += fast_tenths.update(done, 10, done * 40.0) ? 1 : 0;
    CHECK(printed == 10);
  }
  {
    RunProgressLog minute;  // 100 requests in 50 s: no estimate (under a minute); one line at 30 s, and the end
    std::vector<std::string> got;
    for (int done = 1; done <= 100; ++done)
      if (auto line = minute.update(done, 100, done * 0.5)) got.push_back(*line);
    REQUIRE(got.size() == 2);
    CHECK(got[0] == "vramsim run: 60/100 requests, 0:30 elapsed, ETA 0:20\n");
    CHECK(got[1] == "vramsim run: 100/100 requests, 0:50 elapsed\n");
  }
  // A bundled example run with stderr to a file: no progress line.
  const auto r = vramsim::test::run_vramsim("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) +
                                            "/scenarios/moe125b-rtx5090-gen3-shared.yaml --set workload.requests=20");
  CHECK(r.status == 0);
  CHECK_THAT(r.err, !Catch::Contains("requests,"));
}
