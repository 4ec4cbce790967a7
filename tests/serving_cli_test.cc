// The serving workloads through `vramsim run` (each a real process with its own SimGrid
// engine): per-request lengths, trace replay with prefix reuse, bursty arrivals, the serving
// metrics, bad input, and a small soak (stationary, identical across runs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_support.h"
#include "tests/json_matchers.h"

using vramsim::test::data_path;
using vramsim::test::json_number;
using vramsim::test::run_vramsim;

namespace {

std::string scenario(const std::string& run) {
  return std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-" + run + ".yaml";
}
std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
std::string without_wall_time(const std::string& json) {
  return std::regex_replace(json, std::regex("\"wall_s\": [^,\\n]*"), "\"wall_s\": X");
}
// Every number after `"key":` in JSON lines, in order.
std::vector<double> column(const std::string& lines, const std::string& key) {
  std::vector<double> out;
  const std::string tag = "\"" + key + "\":";
  for (auto at = lines.find(tag); at != std::string::npos; at = lines.find(tag, at + 1)) out.push_back(std::stod(lines.substr(at + tag.size())));
  return out;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
const std::string kTrace = " --set workload.clients= --set workload.requests= --set workload.prompt_tokens= --set workload.gen_tokens=";

}  // namespace

TEST_CASE("run --json carries the serving metrics", "[run][serving]") {
  auto r = run_vramsim("run " + scenario("exclusive") + " --set workload.requests=12 --set workload.clients=3 --json");
  REQUIRE(r.status == 0);
  for (const char* key : {"\"tpot_s\"", "\"e2e_s\"", "\"p99\"", "\"per_client_tok_s\"", "\"queue_length\"", "\"series\"",
                          "\"interval_s\"", "\"prefix_reuse\"", "\"reused_tokens\": 0"})
    CHECK_THAT(r.out, Catch::Contains(key));
  // tpot is the inverse of each request's decode rate; three clients share one slot.
  CHECK(json_number(r.out, "p50", "tpot_s") == Approx(1 / json_number(r.out, "p50", "decode_tok_s")).epsilon(0.05));
  const double per_client = json_number(r.out, "p50", "per_client_tok_s");
  CHECK(3 * per_client == Approx(json_number(r.out, "throughput_tok_s")).epsilon(0.1));
  CHECK(json_number(r.out, "max", "queue_length") == 2);  // at the start, two wait while the idle slot takes the first
  CHECK(json_number(r.out, "mean", "queue_length") > 1.5);  // two clients wait while one is served
}

// A batched engine's slot freed by a request that ends with its prefill (one output token)
// takes the next arrival at once: with 2 slots only the fourth request waits, and a queue of
// one turns none away.
TEST_CASE("a slot a one-token request frees in its prefill takes the next arrival", "[run][serving]") {
  const std::string run = "run --model llama-3.1-8b --gpu rtx-4090 --set engine.parallel=2 --json --set workload.trace=" +
                          data_path("serving/trace-one-token-first.csv") + kTrace;
  for (const std::string cap : {"", " --set engine.max_queue=1"}) {
    auto r = run_vramsim(run + cap);
    INFO(cap << "\n" << r.err);
    REQUIRE(r.status == 0);
    CHECK(json_number(r.out, "completed", "requests") == 4);
    CHECK(json_number(r.out, "max", "queue_length") == 1);
  }
}

TEST_CASE("per-request lengths flow through the engine, and the window checks each prompt", "[run][serving]") {
  auto r = run_vramsim("run " + scenario("exclusive") +
                       " --set workload.requests=30 --set 'workload.prompt_tokens={dist: uniform, min: 16, max: 2048}'"
                       " --set 'workload.gen_tokens={dist: lognormal, median: 64, sigma: 0.6, max: 400}' --json"
                       " --requests-out lengths.jsonl");
  REQUIRE(r.status == 0);
  const std::string lines = read("lengths.jsonl");
  const auto prompts = column(lines, "prompt_tokens"), gens = column(lines, "gen_tokens");
  REQUIRE(prompts.size() == 30);
  CHECK(*std::max_element(prompts.begin(), prompts.end()) > *std::min_element(prompts.begin(), prompts.end()) + 500);
  CHECK(*std::max_element(gens.begin(), gens.end()) > *std::min_element(gens.begin(), gens.end()));
  double total = 0;
  for (double g : gens) total += g;
  CHECK(json_number(r.out, "generated_tokens") == total);
}

TEST_CASE("trace replay: arrivals at the trace's times, prefix reuse, an over-long row rejected", "[run][serving]") {
  auto r = run_vramsim("run " + scenario("exclusive") + kTrace + " --set workload.trace=" + data_path("serving/trace.csv") +
                       " --set workload.shared_prefix_tokens=2000 --json --requests-out trace.jsonl");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, vramsim::test::HasMember("completed", "5"));
  CHECK_THAT(r.out, vramsim::test::HasMember("prompt_exceeds_context", "1"));
  CHECK_THAT(r.out, vramsim::test::HasMember("per_client_tok_s", "null"));
  // Rows 1 and 2 find prefix 7 cached (row 0 prefilled it); row 5's prefix 9 is new.
  CHECK(json_number(r.out, "requests", "prefix_reuse") == 2);
  CHECK(json_number(r.out, "reused_tokens", "prefix_reuse") == 4000);
  CHECK(json_number(r.out, "prefilled_tokens", "prefix_reuse") == 2048 + 100 + 48 + 300 + 2060);
  const std::string lines = read("trace.jsonl");
  const auto arrivals = column(lines, "arrival_s");
  CHECK(std::find(arrivals.begin(), arrivals.end(), 30.0) != arrivals.end());
  CHECK(std::find(arrivals.begin(), arrivals.end(), 33.0) != arrivals.end());
  bool row4_rejected = false;  // row 4: 40,000 tokens at 32 s, over the window
  std::istringstream rows(lines);
  for (std::string row; std::getline(rows, row);)
    if (json_number(row, "id") == 4) {
      CHECK(json_number(row, "client") == -1);
      CHECK(json_number(row, "prompt_tokens") == 40000);
      CHECK(json_number(row, "arrival_s") == 32);
      row4_rejected = vramsim::test::json_text(row, "rejected") == "prompt_exceeds_context";
    }
  CHECK(row4_rejected);
  // The reused prefix is not prefilled again: row 2 (2,000 reused + 48 read) reaches its first
  // token far sooner than row 0 (2,048 read), which arrived to the same idle engine.
  std::istringstream in(lines);
  std::string line;
  double ttft0 = 0, ttft2 = 0;
  while (std::getline(in, line)) {
    if (json_number(line, "id") == 0) ttft0 = json_number(line, "ttft_s");
    if (json_number(line, "id") == 2) {
      ttft2 = json_number(line, "ttft_s");
      CHECK(json_number(line, "reused_tokens") == 2000);
    }
  }
  CHECK(ttft2 < 0.2 * ttft0);
}

TEST_CASE("bursty arrivals queue more than Poisson arrivals at the same mean rate", "[run][serving]") {
  const std::string open = " --set workload.requests=120 --set workload.clients= --set workload.gen_tokens=64";
  auto poisson = run_vramsim("run " + scenario("exclusive") + open + " --set workload.arrival.process=poisson "
                             "--set workload.arrival.rate=1/s --json");
  auto bursty = run_vramsim("run " + scenario("exclusive") + open + " --set workload.arrival.process=bursty "
                            "--set workload.arrival.rate=4/s --set workload.arrival.burst=10s --set workload.arrival.idle=30s --json");
  INFO(bursty.err);
  REQUIRE(poisson.status == 0);
  REQUIRE(bursty.status == 0);
  CHECK(json_number(bursty.out, "max", "queue_length") > 2 * json_number(poisson.out, "max", "queue_length"));
  CHECK(json_number(bursty.out, "p95", "ttft_s") > 2 * json_number(poisson.out, "p95", "ttft_s"));
}

TEST_CASE("bad serving input is refused with exit 2 and a compiler-style message", "[run][errors][serving]") {
  const std::pair<std::string, std::string> cases[] = {
      {"workload.clients=0", "--set workload.clients=0: error: workload.clients: must be between 1 and"},
      {"workload.clients= --set workload.arrival.process=poisson --set workload.arrival.rate=-2/s", "workload.arrival.rate"},
      // A rate that puts the requests centuries apart is a unit slip, not a workload.
      {"workload.clients= --set workload.arrival.process=poisson --set workload.arrival.rate=1e-9/s",
       "workload.arrival.rate: 500 requests at a mean of 1e-09 per second would arrive over 1.58e+04 years"},
      {"'workload.prompt_tokens={dist: uniform, min: 300, max: 200}'", "workload.prompt_tokens.min: min (300) is greater than max (200)"},
      {"'workload.gen_tokens={dist: lognormal, median: 100, sigma: 1, max: 40000}'",
       "workload.gen_tokens.max: lengths up to 40000 tokens lie outside the context window (engine.context is 32768 tokens)"},
      {"workload.trace=" + data_path("serving/trace_bad_row.csv") + kTrace,
       data_path("serving/trace_bad_row.csv") + ":3:5: error: workload.trace: prompt_tokens: expected a whole number, got \"12x\""},
      {"workload.trace=" + data_path("serving/trace.csv"), "workload.prompt_tokens: a trace gives every request's lengths"},
      {"workload.trace=" + data_path("serving/trace.csv") + kTrace, "a row has a prefix_id but no prefix length"},
      {"workload.trace=" + data_path("serving/trace.csv") + kTrace + " --set workload.shared_prefix_tokens=2050",
       "workload.shared_prefix_tokens: the shared prefix (2050 tokens) is longer than request 1's prompt (2048 tokens)"},
      // KV for the slots must fit the card: 16 slots of a 32K window on the shared card do not.
      {"engine.parallel=16", "the engine's fixed allocations do not fit: 31.84 GiB card - 17.68 GiB other tenants - 29.68 GiB fixed (weights outside the experts, KV cache, runtime)"},
  };
  for (const auto& [assignment, message] : cases) vramsim::test::check_refused(scenario("shared"), assignment, message);
}

TEST_CASE("a 2,000-request soak is stationary and identical across runs", "[run][serving][soak]") {
  const std::string soak = " --set workload.requests=2000 --set workload.clients= --set workload.arrival.process=poisson "
                           "--set workload.arrival.rate=1/s --json --requests-out ";
  auto a = run_vramsim("run " + scenario("exclusive") + soak + "soak_a.jsonl");
  auto b = run_vramsim("run " + scenario("exclusive") + soak + "soak_b.jsonl");
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  CHECK(without_wall_time(a.out) == without_wall_time(b.out));
  const std::string lines = read("soak_a.jsonl");
  CHECK(lines == read("soak_b.jsonl"));
  // Requests complete in arrival order (one slot, FIFO): halves by completion are halves by id.
  const auto decode = column(lines, "decode_tok_s");
  REQUIRE(decode.size() == 2000);
  const std::vector<double> first(decode.begin(), decode.begin() + 1000), second(decode.begin() + 1000, decode.end());
  CHECK(median(second) == Approx(median(first)).epsilon(0.02));
  CHECK(json_number(a.out, "mean", "queue_length") < 5);  // 1/s against ~1.2/s served: a stable queue
}

TEST_CASE("a 4K prefill is slower with the shared card's coverage, and parallel = 4 does not beat 1", "[run][serving]") {
  const std::string prompt = " --set workload.requests=2 --set workload.prompt_tokens=4096 --set workload.gen_tokens=8 --json";
  auto shared = run_vramsim("run " + scenario("shared") + prompt);
  auto exclusive = run_vramsim("run " + scenario("exclusive") + prompt);
  REQUIRE(shared.status == 0);
  REQUIRE(exclusive.status == 0);
  CHECK(json_number(shared.out, "coverage", "cache") < json_number(exclusive.out, "coverage", "cache"));
  // The shared card's host computes most touched experts (10.5K tok/s against 13.2K).
  CHECK(json_number(shared.out, "p50", "prefill_tok_s") < 0.9 * json_number(exclusive.out, "p50", "prefill_tok_s"));

  const std::string four = " --set workload.requests=32 --set workload.clients=4 --json";
  auto one = run_vramsim("run " + scenario("exclusive") + four);
  auto parallel = run_vramsim("run " + scenario("exclusive") + four + " --set engine.parallel=4");
  REQUIRE(one.status == 0);
  REQUIRE(parallel.status == 0);
  CHECK(json_number(parallel.out, "throughput_tok_s") <= json_number(one.out, "throughput_tok_s"));
}

// The window holds the prompt and every output but the last: an engine without a paged pool
// (llama.cpp, the case study's) stops generating there; vLLM refuses a request whose prompt and
// requested output exceed --max-model-len at arrival, as its OpenAI server does (HTTP 400).
TEST_CASE("a request's output stops at the full context window, or vLLM refuses it at arrival", "[serving][errors]") {
  const std::string base = "run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json";
  auto llama = run_vramsim(base + " --context 600");
  INFO(llama.err);
  REQUIRE(llama.status == 0);
  CHECK(json_number(llama.out, "completed", "requests") == 3);
  CHECK(json_number(llama.out, "truncated", "requests") == 3);
  CHECK(json_number(llama.out, "generated_tokens") == 3 * (600 - 512 + 1));
  // vLLM serves the checkpoint's dtype (BF16), not a GGUF format.
  const std::string vllm_base = "run --model llama-3.1-8b --gpu rtx-4090 --json --engine vllm";
  auto vllm = run_vramsim(vllm_base + " --context 600");
  INFO(vllm.err);
  REQUIRE(vllm.status == 1);  // every request refused: a failed run, with its summary
  CHECK(json_number(vllm.out, "completed", "requests") == 0);
  CHECK(json_number(vllm.out, "prompt_plus_output_exceeds_context", "rejected_by_reason") == 3);
  CHECK(json_number(vllm.out, "generated_tokens") == 0);
  // A window that holds them: neither truncates nor refuses.
  auto roomy = run_vramsim(vllm_base + " --context 640");
  REQUIRE(roomy.status == 0);
  CHECK(json_number(roomy.out, "completed", "requests") == 3);
  CHECK(json_number(roomy.out, "truncated", "requests") == 0);
}
