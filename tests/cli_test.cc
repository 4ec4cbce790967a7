// The `vramsim` binary as a user runs it: outputs, exit codes, and one clear error per
// bad input.
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/json_matchers.h"
#include "tests/test_support.h"

using vramsim::test::run_vramsim;

namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

std::string write_file(const std::string& name, const std::string& text) {
  std::ofstream(name) << text;
  return name;
}

}  // namespace

TEST_CASE("fit --json answers the reference's worked example", "[cli]") {
  auto r = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --context 8192 --kv-type f16 --json");
  REQUIRE(r.status == 0);
  const vramsim::json::Value doc = vramsim::test::parse_json(r.out);
  for (const char* key : {"weights_gib", "kv_gib", "overhead_gib", "total_gib", "usable_gib", "headroom_gib", "kv_gib_per_1k_tokens",
                          "decode_tok_s"}) {
    INFO(key);
    CHECK(vramsim::test::json_member(doc, key));
  }
  CHECK(vramsim::test::json_truth(r.out, "fits"));
  CHECK(vramsim::test::json_number(r.out, "calculator_max_context_tokens") == 127229);
  CHECK(vramsim::test::json_number(r.out, "resident_fraction") == 1);
  CHECK(vramsim::test::json_number(r.out, "total_gib") == Approx(6.625).margin(0.005));  // 6.62x GiB
  CHECK(r.err.empty());
}

TEST_CASE("fit's KV growth line: per 1,024 tokens of context, and each sequence's share", "[cli]") {
  const std::string base = "fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --context 8192";
  auto one = run_vramsim(base);
  REQUIRE(one.status == 0);
  CHECK_THAT(one.out, Catch::Contains("KV cache     1.00 GiB            1.00 GiB            (0.1250 GiB per 1,024 tokens)\n"));
  // Four sequences: four windows of 8,192 tokens; the figure is their sum, and the line says so.
  auto four = run_vramsim(base + " --concurrency 4");
  REQUIRE(four.status == 0);
  CHECK_THAT(four.out, Catch::Contains("KV cache     4.00 GiB            4.00 GiB            (0.5000 GiB per 1,024 tokens of context: 0.1250 in each of 4 sequences)\n"));
}

TEST_CASE("fit prints a readable table by default", "[cli]") {
  auto r = run_vramsim("fit --model llama-3.3-70b --gpu rtx-4090 --quant Q4_K_M --host ddr5-dual-channel");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("fits         calculator NO"));
  CHECK_THAT(r.out, Catch::Contains("to make it fit, cheapest first"));
  CHECK_THAT(r.out, Catch::Contains("--kv-type q8_0"));
  CHECK_THAT(r.out, Catch::Contains("resident"));
}

TEST_CASE("output is byte-identical across runs", "[cli]") {
  auto a = run_vramsim("fit --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M --host ddr5-dual-channel --json");
  auto b = run_vramsim("fit --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M --host ddr5-dual-channel --json");
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("an unknown GPU names the near ones, once, with exit 2", "[cli][errors]") {
  auto r = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4099");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown GPU \"rtx-4099\" (did you mean rtx-4090"));
  CHECK(count(r.err, "error:") == 1);
  CHECK(r.out.empty());
}

TEST_CASE("an unknown model and an unknown quant are usage errors", "[cli][errors]") {
  auto model = run_vramsim("fit --model llama-3.1-8 --gpu rtx-4090");
  CHECK(model.status == 2);
  CHECK_THAT(model.err, Catch::Contains("did you mean llama-3.1-8b"));
  auto quant = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_Z");
  CHECK(quant.status == 2);
  CHECK_THAT(quant.err, Catch::Contains("unknown weights format \"Q4_K_Z\" (did you mean Q4_K_M"));
}

TEST_CASE("negative or unit-less quantities and typos in --set are rejected", "[cli][errors]") {
  auto negative = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --set gpu.memory.bandwidth=-1008GB/s");
  CHECK(negative.status == 2);
  CHECK_THAT(negative.err, Catch::Contains("gpu.memory.bandwidth: expected a bandwidth like \"13.9GB/s\", got \"-1008GB/s\""));
  auto unitless = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --set gpu.memory.capacity=48");
  CHECK(unitless.status == 2);
  CHECK_THAT(unitless.err, Catch::Contains("gpu.memory.capacity: expected a size"));
  auto typo = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --set gpu.memory.capacty=48GiB");
  CHECK(typo.status == 2);
  CHECK_THAT(typo.err, Catch::Contains("gpu.memory.capacty: unknown key (did you mean \"capacity\"?)"));
}

TEST_CASE("a command-line override refines a preset: a 48 GB RTX 5090", "[cli]") {
  auto r = run_vramsim("fit --model llama-3.3-70b --gpu rtx-5090 --quant Q4_K_M --set gpu.memory.capacity=48GiB --json");
  REQUIRE(r.status == 0);
  CHECK(vramsim::test::json_number(r.out, "usable_gib") == Approx(44.645).margin(0.005));  // 44.64x GiB
}

TEST_CASE("context 0 and a context beyond the model are refused", "[cli][errors]") {
  auto zero = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --context 0");
  CHECK(zero.status == 2);
  CHECK_THAT(zero.err, Catch::Contains("--context: must be between 1 and"));
  auto beyond = run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --context 1000000");
  CHECK(beyond.status == 2);
  CHECK_THAT(beyond.err, Catch::Contains("exceeds llama-3.1-8b's maximum"));
}

TEST_CASE("a model file with top-k above the expert count points at the line", "[cli][errors]") {
  std::string file = write_file("cli_topk.yaml", R"(name: bad-moe
family: moe
params: {total: 10e9, active: 2e9}
layers: 8
hidden_size: 1024
vocab_size: 32000
max_context: 4096
native_format: BF16
attention: {layout: gqa, query_heads: 8, kv_heads: 2, head_dim: 128}
moe:
  layers: 8
  experts: 8
  experts_per_token: 10
  expert_params: 1e6
)");
  auto r = run_vramsim("fit --model " + file + " --gpu rtx-4090");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("cli_topk.yaml:13:22: error: model.moe.experts_per_token: top-k (10) cannot exceed"));
}

TEST_CASE("malformed YAML in a user's file is reported with its position", "[cli][errors]") {
  std::string file = write_file("cli_malformed.yaml", "name: x\nmemory: {capacity: 24GiB\n");
  auto r = run_vramsim("fit --model llama-3.1-8b --gpu " + file);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("cli_malformed.yaml:"));
  CHECK_THAT(r.err, Catch::Contains("malformed YAML"));
}

TEST_CASE("unknown options and commands are usage errors", "[cli][errors]") {
  CHECK(run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --contxt 4096").status == 2);
  CHECK(run_vramsim("fitt").status == 2);
  CHECK(run_vramsim("fit --help").status == 0);
}

TEST_CASE("import-model writes a catalogue file that fit can use", "[cli]") {
  auto r = run_vramsim("import-model " + vramsim::test::data_path("hf/mixtral-8x7b.json") +
                       " --name my-mixtral --output cli_my_mixtral.yaml");
  REQUIRE(r.status == 0);
  auto fit = run_vramsim("fit --model cli_my_mixtral.yaml --gpu a100-80gb --quant Q4_K_M --json");
  REQUIRE(fit.status == 0);
  CHECK_THAT(fit.out, vramsim::test::HasMember("model", "\"my-mixtral\""));
}

// An option with a short and a long spelling is read under either, and refused when given twice.
TEST_CASE("short and long spellings of one option: either works, both is a usage error", "[cli][errors]") {
  const std::string shared = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
  vramsim::test::check_usage_error("routing-trace " + shared + " -o a.trace --output b.trace", "give --output once");
  vramsim::test::check_usage_error("sweep study.yaml -j 1 --jobs 2 -o out", "give --jobs once");
  vramsim::test::check_usage_error("plan --model llama-3.1-8b --gpu rtx-4090 --host ddr5-dual-channel -j 1 --jobs 2", "give --jobs once");
  // plan reads -j (it used to read only --jobs): an out-of-range value is refused.
  vramsim::test::check_usage_error("plan --model llama-3.1-8b --gpu rtx-4090 --host ddr5-dual-channel -j 0", "-j");
  // validate too (it read only --jobs).
  vramsim::test::check_usage_error("validate -j 1 --jobs 2", "give --jobs once");
  vramsim::test::check_usage_error("validate -j 0", "-j");
}

// What a newcomer types first: every catalogue kind can be listed, a scenario by its name.
TEST_CASE("list names every catalogue kind, and run takes a catalogue scenario's name", "[cli]") {
  auto help = run_vramsim("list --help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("engines") && Catch::Contains("scenarios"));
  auto engines = run_vramsim("list engines scenarios");
  REQUIRE(engines.status == 0);
  CHECK_THAT(engines.out, Catch::Contains("engines: expert-cache hybrid-cpu-experts llama.cpp vllm"));
  CHECK_THAT(engines.out, Catch::Contains("mixtral-3090-offload"));
  auto bad = run_vramsim("list gpu");
  CHECK(bad.status == 2);
  CHECK(bad.out.empty());  // nothing printed before the error
  auto named = run_vramsim("run mixtral-3090-offload --set workload.requests=1 --json");
  CHECK(named.status == 0);
  vramsim::test::check_usage_error("run no-such-scenario", "no catalogue scenario of that name");
  vramsim::test::check_usage_error("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR), "is a directory");
  // llama.cpp's customary -ngl 99: every layer.
  auto all = run_vramsim("run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --set engine.gpu_layers=99 --json");
  auto plain = run_vramsim("run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json");
  REQUIRE(all.status == 0);
  auto strip = [](const std::string& s) {  // all but the simulation's own figures (its wall time)
    vramsim::json::Value v = vramsim::test::parse_json(s);
    v.erase("sim");
    return vramsim::json::to_line(v);
  };
  CHECK(strip(all.out) == strip(plain.out));
}

// One spelling of a --set path in fit, run and plan (hardware.gpu.*, hardware.host.*); fit's
// old short forms (gpu.*, host.*) are aliases everywhere, and a message names the key as typed.
TEST_CASE("fit and run take the same --set paths (hardware.gpu.*), gpu.* an alias", "[cli][set]") {
  using vramsim::test::json_number;
  const std::string fit = "fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json ";
  const std::string canonical = vramsim::test::run_ok(fit + "--set hardware.gpu.memory.capacity=48GiB");
  CHECK(vramsim::test::run_ok(fit + "--set gpu.memory.capacity=48GiB") == canonical);
  CHECK(json_number(canonical, "usable_gib") == Approx(48 * 0.93));
  const std::string run = "run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json ";
  const std::string run_canonical = vramsim::test::run_ok(run + "--set hardware.gpu.memory.bandwidth=2TB/s");
  CHECK(json_number(vramsim::test::run_ok(run + "--set gpu.memory.bandwidth=2TB/s"), "p50", "decode_tok_s") ==
        json_number(run_canonical, "p50", "decode_tok_s"));
  CHECK(json_number(run_canonical, "p50", "decode_tok_s") >
        json_number(vramsim::test::run_ok(run), "p50", "decode_tok_s"));
  // An alias's message names it as typed.
  vramsim::test::check_usage_error("fit --model llama-3.1-8b --gpu rtx-4090 --set gpu.memory.capacity=[1",
                                   "--set gpu.memory.capacity=[1");
}
