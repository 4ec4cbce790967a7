// A prompt batch's host-computed experts are bound by the host's arithmetic (sim/host_experts.h,
// host_matrix_rate): the instruction path, the engine's threads and its kernel efficiency.
// Closed forms against the real binary on the kTransformers scenario (DeepSeek-V3 on a 2 x Xeon
// Gold 6454S host and an RTX 4090).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "scenario_runs.h"
#include "sim/host_experts.h"

using vramsim::sim::first_job_node_threads;
using vramsim::sim::isa_matrix_factor;
using vramsim::test::check_refused;
using vramsim::test::cpu_expert_ms;
using vramsim::test::json_number;
using vramsim::test::run_json;

namespace {
const std::string kKt = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/deepseek-v3-4090-ktransformers.yaml";
// One socket's 32 threads, experts on its node, a 4,000-token prompt: compute-bound. The host's
// part overlaps the GPU's here (host_prefill_overlap), so that the host's arithmetic alone sets
// the rate; the preset's serial order is tested on its own below.
const std::string kLongPrompt = "--set engine.context=8192 --set workload.prompt_tokens=4000 --set workload.gen_tokens=2 "
                                "--set workload.requests=1 --set engine.host_prefill_overlap=true";
const std::string kOneSocket = "--set hardware.host.expert_memory=0 --set engine.cpu_threads=32 " + kLongPrompt;
double prefill(const std::string& more = "") { return json_number(run_json(kKt, kOneSocket + " " + more), "p50", "prefill_tok_s"); }
}  // namespace

TEST_CASE("host matrix rate: the instruction path's factor over the AVX fp32 FMA path", "[host][matrix]") {
  CHECK(isa_matrix_factor("avx512", "avx512", 4.5) == 4.0);    // VNNI int8
  CHECK(isa_matrix_factor("avx2", "avx512", 4.5) == 2.0);      // capped by the host: AVX2 int8
  CHECK(isa_matrix_factor("amx", "avx512", 4.5) == 4.0);       // the engine's kernels do not use AMX
  CHECK(isa_matrix_factor("amx", "amx", 8.5) == 32.0);         // AMX int8
  CHECK(isa_matrix_factor("amx", "amx", 16) == 16.0);          // AMX bf16
  CHECK(isa_matrix_factor("avx512-bf16", "", 16) == 2.0);      // AVX512_BF16
  CHECK(isa_matrix_factor("avx512", "avx512", 16) == 1.0);     // bf16 without AVX512_BF16: fp32
  CHECK(isa_matrix_factor("neon", "", 4.5) == 4.0);            // SDOT
}

TEST_CASE("host matrix rate: a long prompt's host experts take their FLOPs at the host's matrix rate", "[host][matrix]") {
  // Per token: 8 routed experts x 58 MoE layers x 2 FLOP x 44,040,192 weights; the rate: 9.0
  // TFLOPS fp32 x 4 (VNNI int8) x 32 / 64 cores x the preset's 0.129.
  const double flops_per_token = 8 * 58 * 2 * 44.040192e6;
  const double rate = 9.0e12 * 4 * 0.5 * 0.129;
  CHECK(prefill() == Approx(rate / flops_per_token).epsilon(0.02));
  // Kernels at 0.9 of the peak: the arithmetic no longer binds, the prompt is bound by reading
  // each expert once per micro-batch, several times faster.
  CHECK(json_number(run_json(kKt, kOneSocket + " --set engine.cpu_matrix_efficiency=0.9"), "p50", "prefill_tok_s") >
        3 * prefill());
}

TEST_CASE("host matrix rate: the ISA, thread and efficiency what-ifs move a compute-bound prefill", "[host][matrix]") {
  const double base = prefill();
  CHECK(prefill("--set hardware.host.cpu.simd=avx2") == Approx(base / 2).epsilon(0.02));  // VNNI 4 -> AVX2 2
  CHECK(prefill("--set engine.cpu_threads=16") == Approx(base / 2).epsilon(0.02));
  CHECK(prefill("--set engine.cpu_matrix_efficiency=0.0645") == Approx(base / 2).epsilon(0.02));
  CHECK(prefill("--set engine.cpu_matrix_isa=amx") > 2 * base);  // AMX int8 x32: bound by other costs
  // Decode reads each expert for one token: bytes-bound, unchanged by the arithmetic.
  const std::string one = run_json(kKt, kOneSocket);
  const std::string avx2 = run_json(kKt, kOneSocket + " --set hardware.host.cpu.simd=avx2");
  CHECK(json_number(avx2, "p50", "decode_tok_s") == Approx(json_number(one, "p50", "decode_tok_s")));
}

// kTransformers runs a prompt batch's routed experts after the GPU's part of each layer
// (host_prefill_overlap: false in its preset): the GPU's time (about 1 ms a token here, its
// GEMMs over the non-expert weights) adds to the host's instead of hiding under it.
TEST_CASE("host matrix rate: a serial host part adds the GPU's time", "[host][matrix]") {
  auto seconds_per_token = [](int prompt, bool overlap) {
    const std::string set = "--set hardware.host.expert_memory=0 --set engine.cpu_threads=32 --set engine.context=9000 "
                            "--set workload.gen_tokens=2 --set workload.requests=1 --set workload.prompt_tokens=" +
                            std::to_string(prompt) + " --set engine.host_prefill_overlap=" + (overlap ? "true" : "false");
    return 1.0 / json_number(run_json(kKt, set), "p50", "prefill_tok_s");
  };
  const double short_gap = seconds_per_token(1000, false) - seconds_per_token(1000, true);
  const double long_gap = seconds_per_token(8000, false) - seconds_per_token(8000, true);
  CHECK(short_gap > 0.5e-3);
  CHECK(long_gap > 0.5e-3);
  // The preset's own order is the serial one.
  CHECK(json_number(run_json(kKt, "--set hardware.host.expert_memory=0 --set engine.cpu_threads=32"), "p50", "prefill_tok_s") ==
        Approx(54.25).epsilon(0.002));
}

// kTransformers' USE_NUMA build binds each worker thread to node thread_id x nodes / n of the
// first job it works in (backend.cpp, Backend::process_tasks). Its first jobs are the MoE warm-up's
// forward_one of one expert: 2,048 / 64 = 32 gate/up tasks, then 7,168 / 64 = 112 down tasks.
TEST_CASE("host matrix rate: threads bind to the NUMA node of the first job they work in", "[host][matrix][numa]") {
  using V = std::vector<int>;
  CHECK(first_job_node_threads(64, 2, {32, 112}) == V{16, 48});  // --cpu_infer 65 on two sockets
  CHECK(first_job_node_threads(32, 2, {32, 112}) == V{16, 16});  // 32 threads: the first job takes them all
  CHECK(first_job_node_threads(64, 2, {}) == V{32, 32});         // no small first job: an even split
  CHECK(first_job_node_threads(65, 2, {128}) == V{33, 32});      // thread 32: 32 x 2 / 65 = 0, on node 0
  CHECK(first_job_node_threads(8, 1, {2, 3}) == V{8});
  CHECK(first_job_node_threads(64, 4, {32, 112}) == V{8, 8, 24, 24});  // 0-31 by 8s; 32-63 at id x 4 / 64: nodes 2, 3
}

TEST_CASE("host matrix rate: threads crowded onto one node compute with that node's cores only", "[host][matrix][numa]") {
  // Both sockets, the experts copied onto every node (the USE_NUMA build, whose threads bind
  // themselves), the host's part overlapping the GPU's so that its arithmetic alone sets a long
  // prompt's rate. 16 threads on node 0 and 48 on node 1's 32 cores keep 48 of the 64 cores
  // busy: 3/4 of the even split's rate.
  const std::string both = "--set hardware.host.expert_memory=replicate " + kLongPrompt;
  auto rate = [&](const std::string& more) { return json_number(run_json(kKt, both + " " + more), "p50", "prefill_tok_s"); };
  const double even = rate("--set engine.numa_first_job_stride=0");
  CHECK(rate("") == Approx(0.75 * even).epsilon(0.02));  // the preset: stride 64
  // The even split is the whole host's arithmetic: twice one socket's.
  CHECK(even == Approx(2 * prefill()).epsilon(0.03));
  // One socket's run (experts on its node, one copy): the threads are the operating system's,
  // the rule does not apply, and 32 threads keep 32 cores busy either way.
  CHECK(prefill("--set engine.numa_first_job_stride=0") == Approx(prefill()));
  // Interleaved experts (one copy, no USE_NUMA build): the threads spread evenly, the rule
  // changes nothing either.
  const std::string interleaved = "--set hardware.host.expert_memory=interleave " + kLongPrompt;
  CHECK(json_number(run_json(kKt, interleaved), "p50", "prefill_tok_s") == Approx(even).epsilon(0.01));
  // Decode's kernels are bound by the same busy cores (cpu_expert_bytes_per_flop): the host's
  // part of a step takes 64 / 48 as long as with the threads spread evenly.
  CHECK(cpu_expert_ms(run_json(kKt, both)) / cpu_expert_ms(run_json(kKt, both + " --set engine.numa_first_job_stride=0")) ==
        Approx(64.0 / 48.0).epsilon(0.01));
}

TEST_CASE("host matrix rate: impossible settings are refused at the key", "[host][matrix]") {
  check_refused(kKt, "engine.numa_first_job_stride=-64", "numa_first_job_stride");
  check_refused(kKt, "hardware.host.cpu.cores=1", "2 NUMA nodes for 1 cores: each node holds at least one core");
  check_refused(kKt, "engine.cpu_matrix_efficiency=1.5", "an efficiency is at most 1");
  check_refused(kKt, "engine.cpu_matrix_isa=sse4", "cpu_matrix_isa");
  check_refused(kKt, "engine.cpu_threads=0", "cpu_threads");
  check_refused(kKt, "hardware.host.cpu.fp32_throughput=", "engine.cpu_expert_bytes_per_flop");  // decode's bound first
  check_refused(kKt, "hardware.host.cpu.fp32_throughput= --set engine.cpu_expert_bytes_per_flop=", "engine.cpu_matrix_efficiency");
}
