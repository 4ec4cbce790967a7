// The hybrid-cpu-experts preset (kTransformers-style): routed experts computed by the CPU from
// RAM, NUMA-aware per-socket worker groups, an optional hot set on the GPU; and `plan` over its
// hot-set size and over the KV-cache type. Runs the real binary for the laws.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "scenario_runs.h"
#include "sim/host_experts.h"
#include "tests/json_matchers.h"

using vramsim::test::all_flags;
using vramsim::test::cpu_expert_ms;
using vramsim::test::json_number;
using vramsim::test::plan_json;
using vramsim::test::run_json;
using vramsim::test::run_ok;
using vramsim::test::run_vramsim;

namespace {

const std::string kConfigs = VRAMSIM_TEST_CONFIGS_DIR;
const std::string kQwen = kConfigs + "/scenarios/qwen3-235b-5090-hybrid-xeon.yaml";
// The case study's model (it has routing statistics, so a hot set can be chosen) on one RTX
// 5090 and the 2-socket Sapphire Rapids host, with the hybrid engine.
const std::string kMoe125 = "run --model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts --json";

double decode(const std::string& json) { return vramsim::test::decode_p50(json); }

std::string hybrid(const std::string& args) {
  auto r = run_vramsim(kMoe125 + " " + args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

}  // namespace

TEST_CASE("hybrid-cpu-experts: per-socket worker groups read the experts where the host placed them",
          "[engines][hybrid]") {
  vramsim::hw::HostSpec two;  // 2 x Xeon Gold 6454S: 614.4 GB/s over 2 nodes, 128 GB/s between the sockets
  two.memory_bandwidth = 614.4e9;
  two.numa_nodes = 2;
  two.inter_socket_bandwidth = 128e9;
  const double node = 307.2e9, link = 128e9;
  vramsim::sim::ExpertMemory on0, on1, spread;
  on1.node = 1;
  spread.interleaved = true;
  // One node: that node's memory caps both groups (the remote one only shares it).
  CHECK(vramsim::sim::per_socket_expert_bandwidth(two, on0) == Approx(node));
  CHECK(vramsim::sim::per_socket_expert_bandwidth(two, on1) == Approx(node));
  // Interleaved: each group reads half locally, half across the sockets' link.
  CHECK(vramsim::sim::per_socket_expert_bandwidth(two, spread) == Approx(2.0 / (0.5 / node + 0.5 / link)));
  // No link between the sockets: the far group cannot reach its half; the near one still reads the local half.
  two.inter_socket_bandwidth = 0;
  CHECK(vramsim::sim::per_socket_expert_bandwidth(two, on0) == Approx(node));
  vramsim::sim::ExpertMemory copies;
  copies.replicated = true;
  CHECK(vramsim::sim::per_socket_expert_bandwidth(two, copies) == Approx(614.4e9));
  // One socket: the host's whole bandwidth, whatever the placement says.
  vramsim::hw::HostSpec one;
  one.memory_bandwidth = 89.6e9;
  CHECK(vramsim::sim::per_socket_expert_bandwidth(one, spread) == Approx(89.6e9));
}

TEST_CASE("hybrid-cpu-experts: interleaved experts decode faster than experts on one node, by the bandwidth ratio",
          "[engines][hybrid]") {
  // Memory-bound kernels (the preset's are bound by their cores: below), so that where the
  // experts live sets the rate.
  const std::string bytes = "--set engine.cpu_expert_bytes_per_flop= --set engine.cpu_expert_share=0.407 ";
  const std::string spread = run_json(kQwen, bytes);
  const std::string one = run_json(kQwen, bytes + "--set hardware.host.expert_memory=0");
  CHECK(decode(spread) > decode(one));
  // A copy on each node (kTransformers' dual-socket mode): every group reads locally, faster still.
  const std::string copies = run_json(kQwen, bytes + "--set hardware.host.expert_memory=replicate");
  CHECK(decode(copies) > decode(spread));
  // The step's CPU-expert wait is the experts' bytes over the groups' throughput (plus the
  // hidden states' tiny copies): its ratio is the bandwidth ratio, 361.4 / 307.2 GB/s.
  const double node = 307.2e9, link = 128e9;
  CHECK(cpu_expert_ms(one) / cpu_expert_ms(spread) == Approx(2.0 / (0.5 / node + 0.5 / link) / node).epsilon(0.01));
  // Every expert is computed by the CPU: nothing is read over PCIe in place.
  CHECK(json_number(spread, "p50", "pcie_overflow") == 0);
  CHECK(json_number(spread, "pcie_frac") == 0);
}

TEST_CASE("hybrid-cpu-experts: decode kernels bound by their busy cores, under a memory cap", "[engines][hybrid]") {
  // The preset's decode kernels process cpu_expert_bytes_per_flop x the busy cores' fp32 peak
  // (9.0 TFLOPS for 64 cores: 252 GB/s), under cpu_expert_share (0.75) of what the groups read.
  const std::string spread = run_json(kQwen, "");  // interleaved: 0.75 x 361.4 = 271 GB/s, the cores bind
  // Half the threads, half the busy cores (the memory cap still above them): twice the time.
  CHECK(cpu_expert_ms(run_json(kQwen, "--set engine.cpu_threads=32")) / cpu_expert_ms(spread) == Approx(2.0).epsilon(0.01));
  // Experts on one node: its 0.75 x 307.2 = 230 GB/s is below the cores' 252: the memory binds.
  CHECK(cpu_expert_ms(run_json(kQwen, "--set hardware.host.expert_memory=0")) / cpu_expert_ms(spread) ==
        Approx(9.0e12 * 0.02805 / (0.75 * 307.2e9)).epsilon(0.01));
  // A copy on each node is kTransformers' USE_NUMA build, whose threads bind by their first job:
  // Qwen3's 1,536-wide experts make it 24 tasks, so 20 threads on node 0, 44 on node 1's 32
  // cores: 52 busy cores, slower than the spread threads of one copy.
  CHECK(cpu_expert_ms(run_json(kQwen, "--set hardware.host.expert_memory=replicate")) / cpu_expert_ms(spread) ==
        Approx(64.0 / 52.0).epsilon(0.01));
}

TEST_CASE("hybrid-cpu-experts: a larger hot set hits more and decodes faster, and never overflows to PCIe",
          "[engines][hybrid]") {
  double hit = -1, tok_s = 0;
  for (int slots : {0, 3000, 8000, 15000}) {
    INFO("hot set " << slots << " slots");
    const std::string out = hybrid("--set engine.expert_cache.size=" + std::to_string(slots));
    CHECK(json_number(out, "slots", "cache") == slots);
    CHECK(json_number(out, "p50", "expert_hit_rate") > hit);
    CHECK(decode(out) > tok_s);
    CHECK(json_number(out, "max", "pcie_overflow") == 0);
    hit = json_number(out, "p50", "expert_hit_rate");
    tok_s = decode(out);
  }
  // A size given as a VRAM amount holds the whole slots that fit in it.
  const std::string amount = hybrid("--set engine.expert_cache.size=4GiB");
  const double slot_mib = json_number(amount, "slot_mib", "cache");
  CHECK(json_number(amount, "slots", "cache") == std::floor(4096 / slot_mib));
}

TEST_CASE("hybrid-cpu-experts: a hot set that does not fit, or that has no routing statistics to choose from, is refused",
          "[engines][hybrid][errors]") {
  const std::pair<std::string, std::string> cases[] = {
      {kMoe125 + " --set engine.expert_cache.size=40000", "engine.expert_cache.size: 40000 slots need"},
      {kMoe125 + " --set engine.expert_cache.size=40GiB", "engine.expert_cache.size: 40.00 GiB ("},
      {"run " + kQwen + " --set engine.expert_cache.size=100", "model.moe.routing: missing"},
      {"run " + kQwen + " --set engine.expert_cache.misses=gpu", "expected one of split, cpu"},
      {"run " + kQwen + " --set engine.host_expert_numa=all", "expected one of none, per-socket"},
      // Qwen3 235B's experts in BF16 (423 GiB) on 512 GiB over 2 nodes: one node cannot hold them, nor a copy each.
      {"run " + kQwen + " --set engine.weights.experts=BF16 --set hardware.host.expert_memory=replicate",
       "do not fit in one NUMA node of xeon-gold-6454s-x2"},
      {"run " + kQwen + " --set engine.weights.experts=BF16 --set hardware.host.expert_memory=1",
       "do not fit in one NUMA node of xeon-gold-6454s-x2"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    auto r = run_vramsim(args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(message));
  }
}

// DeepSeek-V3's Q4_K_M experts (369 GiB) exceed node 0 of the 2 x 256 GiB host: unset,
// expert_memory spills over both nodes (as interleaved, and said so); set to node 0, refused.
TEST_CASE("hybrid-cpu-experts: experts larger than node 0 spill over the nodes unless a node is set", "[engines][hybrid][numa]") {
  const std::string v3 = "run --model deepseek-v3 --gpu rtx-4090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                         "--quant Q4_K_M --set workload.requests=2";
  auto spilled = run_vramsim(v3);
  INFO(spilled.err);
  REQUIRE(spilled.status == 0);
  CHECK_THAT(spilled.out, Catch::Contains("RAM   the experts (369.21 GiB) exceed NUMA node 0 of xeon-gold-6454s-x2 (256.00 GiB)") &&
                              Catch::Contains("read as interleaved"));
  CHECK(decode(run_ok(v3 + " --json")) == decode(run_ok(v3 + " --json --set hardware.host.expert_memory=interleave")));
  CHECK_THAT(run_ok(v3 + " --set hardware.host.expert_memory=interleave"), !Catch::Contains("RAM   the experts"));
  auto one = run_vramsim(v3 + " --set hardware.host.expert_memory=0");
  CHECK(one.status == 2);
  CHECK_THAT(one.err, Catch::Contains("do not fit in one NUMA node"));
}

TEST_CASE("run --engine hybrid-cpu-experts: from catalogue names", "[engines][hybrid][quick]") {
  auto r = run_vramsim("run --model qwen3-235b-a22b --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                       "--quant Q4_K_M");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("routed experts computed by the CPU"));
  CHECK_THAT(r.out, Catch::Contains("vramsim flags: --engine hybrid-cpu-experts --quant Q4_K_M --context 4096"));
  CHECK_THAT(r.out, Catch::Contains("decode tok/s"));
}

TEST_CASE("plan: the q8_0 KV cache frees memory for more GPU layers on a tight card", "[engines][plan]") {
  const std::string out = plan_json("--model llama-3.1-8b --gpu rtx-3060-12gb --host ddr5-dual-channel --quant Q8_0 --context 65536");
  int f16 = -1, q8 = -1;
  for (const auto& flags : all_flags(out)) {
    std::smatch m;
    REQUIRE(std::regex_search(flags, m, std::regex("^-ngl ([0-9]+) -c 65536")));
    (flags.find("-ctk q8_0 -ctv q8_0") != std::string::npos ? q8 : f16) = std::stoi(m[1]);
  }
  INFO(out);
  REQUIRE(f16 >= 0);
  REQUIRE(q8 >= 0);
  CHECK(q8 > f16);
  CHECK_THAT(out, vramsim::test::HasMember("kv_type", "\"q8_0\""));
}

TEST_CASE("plan --engine hybrid-cpu-experts: searches the hot set's size, and the largest wins decode", "[engines][plan][hybrid]") {
  const std::string out = plan_json("--model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts --quant Q2_0");
  const auto flags = all_flags(out);
  REQUIRE(flags.size() >= 5);
  for (const auto& f : flags)
    CHECK_THAT(f, Catch::StartsWith("--engine hybrid-cpu-experts --quant Q2_0 --context 4096 --set engine.expert_cache.size="));
  // The best hot set is the largest that fits: the size of the best is at least every other's
  // with the same KV type.
  const double best = json_number(out, "hot_set_slots", "best");
  CHECK(best > 0);
  std::smatch m;
  for (const auto& f : flags)
    if (std::regex_search(f, m, std::regex("size=([0-9]+)"))) CHECK(std::stod(m[1]) <= best);
}

// The model's own quantized format (moe-125b-q2 is Q2_0) is a candidate beside the llama.cpp
// levels, and each candidate's flags name its format: typed into `run`, they simulate it.
TEST_CASE("plan --engine hybrid-cpu-experts: the native format is tried, and the flags carry --quant", "[engines][plan][hybrid]") {
  const std::string out = plan_json("--model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts");
  CHECK_THAT(out, vramsim::test::HasMember("quant", "\"Q2_0\""));
  std::smatch m;
  const std::regex each("\"flags\": \"([^\"]*)\",\\s*\"engine\": \"vramsim\",\\s*\"quant\": \"([^\"]*)\"");
  int n = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), each); it != std::sregex_iterator(); ++it, ++n)
    CHECK_THAT((*it)[1].str(), Catch::Contains(" --quant " + (*it)[2].str() + " "));
  CHECK(n == static_cast<int>(all_flags(out).size()));
}

TEST_CASE("run --engine expert-cache: vramsim's own flags, labelled so", "[engines][quick]") {
  CHECK_THAT(run_ok("run --model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine expert-cache "
                    "--set engine.expert_cache.size=100"),
             Catch::Contains("vramsim flags: --engine expert-cache --quant Q2_0 --context 4096 "
                                    "--set engine.expert_cache.size=100 --set engine.kv_type=q8_0\n"));
}

TEST_CASE("plan --set: a fixed override reaches every candidate", "[engines][plan][hybrid]") {
  const std::string plan = "plan --model qwen3-235b-a22b --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                           "--quant Q4_K_M --json -j 2";
  auto all = run_vramsim(plan);
  auto fewer = run_vramsim(plan + " --set engine.cpu_threads=32");
  INFO(all.err << fewer.err);
  REQUIRE(all.status == 0);
  REQUIRE(fewer.status == 0);
  // Without a hot set (Qwen3 has no routing statistics) only the KV type varies: 2 candidates.
  CHECK(json_number(all.out, "candidates") == 2);
  // The host's decode kernels are bound by the cores its threads keep busy: fewer threads, slower.
  CHECK(json_number(fewer.out, "decode_tok_s", "best") < json_number(all.out, "decode_tok_s", "best"));
}

TEST_CASE("dense layers before the MoE ones hold and route no experts", "[engines][hybrid][quick]") {
  // DeepSeek-V3: 61 layers, the first 3 dense (first_k_dense_replace), 58 x 256 routed experts.
  auto v3 = run_vramsim("run --model deepseek-v3 --gpu rtx-4090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                        "--quant Q4_K_M --json");
  INFO(v3.err);
  REQUIRE(v3.status == 0);
  CHECK(json_number(v3.out, "completed", "requests") > 0);
  CHECK(json_number(v3.out, "p50", "decode_tok_s") > 0);
  // DeepSeek-V2-Lite on llama.cpp, every layer on the GPU: 26 MoE layers of 64 experts resident.
  auto lite = run_vramsim("run --model deepseek-v2-lite --gpu rtx-4090 --quant Q4_K_M --json");
  INFO(lite.err);
  REQUIRE(lite.status == 0);
  CHECK(json_number(lite.out, "slots", "cache") == 26 * 64);
  CHECK(json_number(lite.out, "coverage", "cache") == 1.0);
  CHECK(json_number(lite.out, "p50", "expert_hit_rate") == 1.0);
}

// The flags `run --model` prints reproduce its run: a hot set sized to the card (size: auto)
// is not the preset's default (none), so it is printed.
TEST_CASE("hybrid-cpu-experts: the printed flags keep a hot set sized to the card", "[hybrid][engines]") {
  const std::string base = "run --model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                           "--set workload.requests=1";
  CHECK_THAT(vramsim::test::run_ok(base + " --set engine.expert_cache.size=auto"),
             Catch::Contains("--set engine.expert_cache.size=auto"));
  CHECK_THAT(vramsim::test::run_ok(base), Catch::Contains("--set engine.expert_cache.size=0 "));  // the preset's none
}

// The preset has no fixed cost per step or layer (none measured): a short step is its bytes
// alone. run and plan say its speed is an upper bound; a CPU-bound step (over 5 ms) needs no note.
TEST_CASE("hybrid-cpu-experts: a short step with no fixed costs is flagged as an upper bound", "[engines][hybrid]") {
  const std::string hot = run_ok("run --model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                                 "--quant Q2_0 --set engine.expert_cache.size=23000 --set workload.requests=1");
  CHECK_THAT(hot, Catch::Contains("fixed costs     none in this engine preset (none measured)") &&
                      Catch::Contains("upper bound"));
  CHECK_THAT(run_ok("run " + kQwen + " --set workload.requests=1"), !Catch::Contains("fixed costs"));
  const std::string plan = run_ok("plan --model moe-125b-q2 --gpu rtx-5090 --host xeon-gold-6454s-x2 --engine hybrid-cpu-experts "
                                  "--quant Q2_0 -j 2");
  CHECK_THAT(plan, Catch::Contains("hybrid-cpu-experts has no fixed cost per step or layer (none measured)"));
}
