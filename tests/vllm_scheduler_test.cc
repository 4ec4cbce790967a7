// vLLM V1's scheduler (engine.max_num_batched_tokens, parallel: auto): one token budget per step
// shared by the running requests' decode tokens and the prompts being prefilled in chunks, and
// `vllm serve`'s defaults for the card. Runs the real binary.
#include <catch2/catch.hpp>

#include <string>

#include "tests/scenario_runs.h"

using vramsim::test::check_refused;
using vramsim::test::json_number;
using vramsim::test::run_json;
using vramsim::test::run_ok;

namespace {
const std::string kConfigs = VRAMSIM_TEST_CONFIGS_DIR;
const std::string kVllm = kConfigs + "/scenarios/llama8b-h100-vllm.yaml";
const std::string kLlama = kConfigs + "/scenarios/llama-bench-tg128.yaml";

std::string flags_on(const std::string& gpu) { return run_ok("run --model llama-3.1-8b --gpu " + gpu + " --engine vllm"); }
}  // namespace

// vllm/engine/arg_utils.py, get_batch_defaults (OPENAI_API_SERVER): >= 70 GiB and no "a100" in
// the device's name: 8,192 tokens and 1,024 sequences; elsewhere 2,048 and 256.
TEST_CASE("vllm: parallel and max_num_batched_tokens auto take vllm serve's defaults for the card", "[vllm][scheduler]") {
  CHECK_THAT(flags_on("h100-sxm"), Catch::Contains("--max-num-seqs 1024 --block-size 16 --max-num-batched-tokens 8192"));
  CHECK_THAT(flags_on("h200"), Catch::Contains("--max-num-seqs 1024 --block-size 16 --max-num-batched-tokens 8192"));
  CHECK_THAT(flags_on("a100-80gb"), Catch::Contains("--max-num-seqs 256 --block-size 16 --max-num-batched-tokens 2048"));
  CHECK_THAT(flags_on("l40s"), Catch::Contains("--max-num-seqs 256 --block-size 16 --max-num-batched-tokens 2048"));
  // Either given: kept as given.
  CHECK_THAT(run_ok("run --model llama-3.1-8b --gpu h100-sxm --engine vllm --set engine.parallel=64 "
                    "--set engine.max_num_batched_tokens=512"),
             Catch::Contains("--max-num-seqs 64 --block-size 16 --max-num-batched-tokens 512"));
}

TEST_CASE("vllm: a budget below max_num_seqs, and parallel auto on another engine, are refused", "[vllm][scheduler][errors]") {
  check_refused(kVllm, "engine.max_num_batched_tokens=100", "100 tokens a step is fewer than parallel (max_num_seqs) 1024");
  check_refused(kVllm, "engine.max_num_batched_tokens=0", "engine.max_num_batched_tokens");
  check_refused(kLlama, "engine.parallel=auto", "auto is vLLM's card-dependent max_num_seqs default");
}

// A 24,000-token prompt alone: with 2,048 tokens a step it prefills in 12 chunks, each over the
// positions before it, so it reads the weights 12 times and its attention adds up to the whole
// prompt's; with a budget above the prompt, one pass. Same tokens, the chunked prefill slower.
TEST_CASE("vllm: a prompt larger than the step's budget is prefilled in chunks", "[vllm][scheduler]") {
  auto ttft = [&](int budget) {
    return json_number(run_json(kVllm, "--set engine.context=32768 --set workload.requests=1 --set workload.clients=1 "
                                       "--set workload.prompt_tokens=24000 --set workload.gen_tokens=2 "
                                       "--set engine.max_num_batched_tokens=" + std::to_string(budget)),
                       "max", "ttft_s");
  };
  const double whole = ttft(32768), chunked = ttft(2048);
  CHECK(chunked > whole);
  CHECK(chunked < 1.5 * whole);  // the chunks' attention is the whole prompt's, not 12 prompts'
}
