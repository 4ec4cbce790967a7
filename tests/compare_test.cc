// `vramsim compare` (issue 25, item 1): the compare file's checks, the answer in words generated
// from results, and the command end to end (real `plan` processes).
#include <catch2/catch.hpp>

#include <string>

#include "cli/compare_spec.h"
#include "core/config_reader.h"
#include "tests/json_matchers.h"
#include "tests/test_support.h"

using vramsim::cli::CompareCell;
using vramsim::cli::CompareResults;
using vramsim::cli::CompareSpec;
using vramsim::cli::compare_conclusion;
using vramsim::cli::decode_compare_spec;
using vramsim::test::json_text;
using vramsim::test::json_truth;
using vramsim::test::run_ok;
using vramsim::test::run_vramsim;

namespace {
const vramsim::config::Catalogue kCatalogue{VRAMSIM_TEST_CONFIGS_DIR};

CompareSpec spec_of(const std::string& text) {
  auto tree = vramsim::config::parse_yaml(text, "compare-test.yaml");
  REQUIRE(tree);
  return decode_compare_spec(*tree, kCatalogue);
}

void refused(const std::string& text, const std::string& message) {
  INFO(text);
  try {
    spec_of(text);
    FAIL("accepted");
  } catch (const vramsim::config::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains(message));
  }
}

const std::string kHead = "name: t\nmodels: [qwen3-30b-a3b]\nhost: ddr4-dual-channel\n";

CompareCell cell(double decode, double prefill, const std::string& quant = "Q4_K_M") {
  CompareCell c;
  c.ran = true;
  c.decode_tok_s = decode;
  c.prefill_tok_s = prefill;
  c.quant = quant;
  c.placement = "every layer on the GPU";
  c.all_on_gpu = true;
  return c;
}
}  // namespace

TEST_CASE("compare: a compare file's options, names and defaults", "[compare]") {
  const CompareSpec s = spec_of(kHead + "options:\n  - { gpus: [rtx-3090, rtx-3090], price: 700 }\n  - { gpus: m4-max-128gb }\n");
  REQUIRE(s.options.size() == 2);
  CHECK(s.options[0].gpus == std::vector<std::string>{"rtx-3090", "rtx-3090"});
  CHECK(s.options[0].label() == "2x rtx-3090");  // as the validation tables label the rows
  CHECK(s.options[0].gpu_flag() == "rtx-3090,rtx-3090");
  CHECK(s.options[0].name == "2x NVIDIA GeForce RTX 3090");  // from the cards' display names
  CHECK(s.options[0].host == std::optional<std::string>("ddr4-dual-channel"));
  CHECK(s.options[0].price == std::optional<double>(700));
  CHECK_FALSE(s.options[1].host);  // an Apple part is its own host
  CHECK(s.context == 4096);
  CHECK(s.users == 1);
  CHECK(s.engine == "llama.cpp");
  CHECK_FALSE(s.energy_price);
}

TEST_CASE("compare: a mixed machine and a rented card are options", "[compare]") {
  const CompareSpec s = spec_of(kHead + "energy_price: 0.30\noptions:\n  - { gpus: [rtx-3090, rtx-5090], price: 1999 }\n"
                                        "  - { gpus: h100-sxm, price_per_hour: 2.49, host: epyc-9554-ddr5 }\n");
  REQUIRE(s.options.size() == 2);
  CHECK(s.options[0].name == "NVIDIA GeForce RTX 3090 + NVIDIA GeForce RTX 5090");
  CHECK(s.options[0].label() == "rtx-3090 + rtx-5090");
  CHECK(s.options[0].gpu_flag() == "rtx-3090,rtx-5090");  // what plan --gpu gets: device 0 first
  CHECK_FALSE(s.options[0].identical());
  CHECK(s.options[1].price_per_hour == std::optional<double>(2.49));
  CHECK_FALSE(s.options[1].price);
  CHECK(s.options[1].host == std::optional<std::string>("epyc-9554-ddr5"));
  CHECK(s.energy_price == std::optional<double>(0.30));
}

TEST_CASE("compare: a bad compare file is refused at its key", "[compare][errors]") {
  refused(kHead + "options:\n  - { gpus: [rtx-3090, m4-max-128gb] }\n  - { gpus: rtx-4090 }\n",
          "m4-max-128gb is a unified-memory part: it cannot be combined with other cards");
  refused(kHead + "options:\n  - { gpus: h100-sxm, price_per_hour: 2.49 }\n  - { gpus: rtx-4090 }\n",
          "a rented card runs in the provider's server: give this option's own host");
  refused(kHead + "options:\n  - { gpus: h100-sxm, price: 20000, price_per_hour: 2.49, host: epyc-9554-ddr5 }\n  - { gpus: rtx-4090 }\n",
          "bought (price) or rented (price_per_hour), not both");
  refused(kHead + "options:\n  - { gpus: h100-sxm, price_per_hour: 0, host: epyc-9554-ddr5 }\n  - { gpus: rtx-4090 }\n",
          "options[0].price_per_hour");
  refused(kHead + "energy_price: 300\noptions:\n  - { gpus: rtx-3090 }\n  - { gpus: rtx-4090 }\n", "the price of one kWh");
  // vLLM over a mixed pair is an option: its tensor split keeps the fewest blocks any card holds
  // and runs at the slowest card's pace (sim/vram_plan.cc), as vLLM sizes its pool by the minimum.
  CHECK(spec_of(kHead + "engine: vllm\noptions:\n  - { gpus: [h100-sxm, a100-80gb] }\n  - { gpus: h100-sxm }\n").options[0].gpus.size() == 2);
  refused(kHead + "options:\n  - { gpus: rtx-3091 }\n  - { gpus: rtx-4090 }\n", "no GPU \"rtx-3091\" in the catalogue (did you mean rtx-3090");
  refused(kHead + "options:\n  - { gpus: rtx-3090 }\n", "at least two options");
  refused(kHead + "options:\n  - { gpus: rtx-3090, price: -5 }\n  - { gpus: rtx-4090 }\n", "options[0].price");
  refused(kHead + "options:\n  - { gpus: rtx-3090, cost: 5 }\n  - { gpus: rtx-4090 }\n", "cost");
  refused(kHead + "options:\n  - { gpus: m4-max-128gb, host: ddr4-dual-channel }\n  - { gpus: rtx-4090 }\n",
          "is a unified-memory part: its host is its own CPU");
  refused("name: t\nmodels: [qwen3-30b-a3b]\noptions:\n  - { gpus: rtx-3090 }\n  - { gpus: rtx-4090 }\n",
          "rtx-3090 is a discrete card: give its host");
  refused("name: t\nmodels: [qwen3-30b-a3]\nhost: ddr4-dual-channel\noptions:\n  - { gpus: rtx-3090 }\n  - { gpus: rtx-4090 }\n",
          "no model \"qwen3-30b-a3\"");
  refused(kHead + "engine: vllm\noptions:\n  - { gpus: m4-max-128gb }\n  - { gpus: h100-sxm }\n", "vLLM does not run on it");
}

TEST_CASE("compare: the answer is derived from the results", "[compare]") {
  CompareSpec s = spec_of(kHead + "users: 8\noptions:\n  - { name: A, gpus: rtx-3090 }\n  - { name: B, gpus: rtx-5090, price: 2000 }\n"
                                  "  - { name: C, gpus: m4-max-128gb, price: 3500 }\n");
  CompareResults r(1);
  r[0] = {cell(100, 4000), cell(250, 12000), cell(50, 1000)};
  r[0][0].j_per_token = 1.6;
  r[0][0].j_with_host = true;
  r[0][2].j_per_token = 1.1;
  r[0][2].j_with_host = true;
  r[0][1].j_per_token = 0.9;  // the boards alone: not compared with machines
  r[0][0].users_tok_s = 300;
  r[0][1].users_tok_s = 900;
  r[0][1].decode_error = 0.11;
  r[0][1].decode_rows = 3;
  const auto answer = compare_conclusion(s, r);
  REQUIRE(answer.size() == 1);
  CHECK_THAT(answer[0], Catch::StartsWith("For qwen3-30b-a3b at 1 user, the B decodes fastest: 250 tok/s, 2.5x the A at 100; 5.0x the C at 50.0."));
  CHECK_THAT(answer[0], Catch::Contains("All run Q4_K_M."));
  CHECK_THAT(answer[0], Catch::Contains("At 8 users the B serves the most: 900 tok/s in all."));
  CHECK_THAT(answer[0], Catch::Contains("Per USD spent, the B gives the most decode: 125.0 tok/s per 1,000 USD."));
  CHECK_THAT(answer[0], Catch::Contains("The C uses the least energy: 1.10 J a token"));
  CHECK_THAT(answer[0], Catch::Contains("B 11% (3 rows)"));
  CHECK_THAT(answer[0], Catch::Contains("No measured row checks the A, C."));

  // A lower-quality format, an offloaded placement, a faster prompt rate elsewhere, an option
  // that does not run.
  r[0][1].quant = "Q2_K";
  r[0][1].lower_quality = true;
  r[0][0].all_on_gpu = false;
  r[0][0].placement = "40 of 80 layers on the GPU";
  r[0][0].prefill_tok_s = 20000;
  r[0][2] = CompareCell{};
  r[0][2].why_not = "the weights do not fit the host's RAM";
  const std::string text = compare_conclusion(s, r)[0];
  CHECK_THAT(text, Catch::Contains("250 tok/s in Q2_K (below Q4_K_M, lower in quality), 2.5x the A at 100 in Q4_K_M."));
  CHECK_THAT(text, Catch::Contains("Not all on the GPUs: A (40 of 80 layers on the GPU)."));
  CHECK_THAT(text, Catch::Contains("The C does not run it: the weights do not fit the host's RAM."));
  CHECK_THAT(text, Catch::Contains("The A processes prompts fastest (20000 tok/s against 12000)."));
  CompareResults none(1, std::vector<CompareCell>(3));
  for (std::size_t o = 0; o < 3; ++o) none[0][o].why_not = "nothing fits";
  CHECK(compare_conclusion(s, none)[0] == "For qwen3-30b-a3b at 1 user, no option runs it. The A: nothing fits. The B: nothing fits. The C: nothing fits.");
  s.error_bars = false;  // not looked up: nothing said about them
  CHECK_THAT(compare_conclusion(s, r)[0], !Catch::Contains("measured row"));
}

TEST_CASE("compare: what a million tokens cost, rented or in electricity, and the break-even", "[compare]") {
  CompareSpec s = spec_of(kHead + "energy_price: 0.30\noptions:\n  - { name: Own, gpus: rtx-5090, price: 2000 }\n"
                                  "  - { name: Cloud, gpus: h100-sxm, price_per_hour: 3.6, host: epyc-9554-ddr5 }\n");
  CompareResults r(1);
  r[0] = {cell(100, 4000), cell(200, 9000)};
  r[0][0].j_per_token = 3.6;  // 3.6 J a token: 1 kWh per million tokens
  r[0][0].j_with_host = true;
  // Rented: 3.6 an hour over 200 tok/s x 3600 s = 720,000 tokens -> 5.00 a million.
  const auto rent = vramsim::cli::token_cost(s, s.options[1], r[0][1]);
  REQUIRE(rent);
  CHECK(rent->rented);
  CHECK(rent->per_million == Approx(5.0));
  // Bought: its electricity alone, 1 kWh x 0.30 a million.
  const auto own = vramsim::cli::token_cost(s, s.options[0], r[0][0]);
  REQUIRE(own);
  CHECK_FALSE(own->rented);
  CHECK(own->per_million == Approx(0.30));
  // 2000 / (5.00 - 0.30 per million) = 425.5 million tokens.
  const auto tokens = vramsim::cli::break_even_tokens(s, s.options[0], r[0][0], rent->per_million);
  REQUIRE(tokens);
  CHECK(*tokens == Approx(2000 / (4.70 / 1e6)));
  CHECK_FALSE(vramsim::cli::break_even_tokens(s, s.options[0], r[0][0], 0.2));  // never: its power alone costs more
  const std::string text = compare_conclusion(s, r)[0];
  CHECK_THAT(text, Catch::Contains("At 0.30 USD a kWh, the Own's electricity is the cheapest of the bought options: 0.30 USD per million tokens."));
  CHECK_THAT(text, Catch::Contains("Rented, the Cloud costs the least: 5.00 USD per million tokens (3.60 USD an hour at 200 tok/s)."));
  // 425.5 million tokens at 100 tok/s: 4.26 million s = 49 days (whole days from 10 up).
  CHECK_THAT(text, Catch::Contains("Bought, the Own (2000 USD) costs less than that after 426 million tokens, 49 days of generating at "
                                   "100 tok/s (its electricity counted)."));
  s.energy_price.reset();  // no electricity price: the bought option's cost is its price alone
  CHECK_FALSE(vramsim::cli::token_cost(s, s.options[0], r[0][0]));
  CHECK_THAT(compare_conclusion(s, r)[0], Catch::Contains("(its electricity not counted: give energy_price)"));
}

TEST_CASE("compare: options from flags, every option planned, the answer in JSON and a report", "[compare][cli]") {
  const std::string out = run_ok("compare --model qwen3-30b-a3b --option rtx-3090 --option rtx-5090=1999 --host ddr4-dual-channel "
                                 "--no-error-bars --json --report compare-report");
  CHECK(json_truth(out, "ran", "options"));
  CHECK_THAT(json_text(out, "name", "options"), Catch::Equals("NVIDIA GeForce RTX 3090"));
  // The RTX 5090 reads the same weights at 1.8 TB/s against 0.94: it decodes faster.
  CHECK_THAT(out, Catch::Contains("the NVIDIA GeForce RTX 5090 decodes fastest"));
  const std::string html = vramsim::test::read_file("compare-report/compare.html");
  CHECK_THAT(html, Catch::Contains("<h2>The answer</h2>"));
  CHECK_THAT(html, Catch::Contains("decodes fastest"));
  CHECK_THAT(vramsim::test::read_file("compare-report/compare.md"), Catch::Contains("## qwen3-30b-a3b"));

  // A mixed machine and a rented card, from flags: each planned (the mixed one's cards alone too).
  const std::string mixed = run_ok("compare --model qwen3-30b-a3b --option rtx-3090,rtx-5090=1999 --option h100-sxm=2.49/h@epyc-9554-ddr5 "
                                   "--host ddr4-dual-channel --energy-price 0.3 --no-error-bars --json");
  CHECK_THAT(mixed, vramsim::test::HasMember("gpu", "\"rtx-3090 + rtx-5090\""));
  CHECK_THAT(mixed, Catch::Contains("-sm none -mg 1 "));  // the model fits the RTX 5090 alone: plan's best there
  CHECK_THAT(mixed, vramsim::test::HasMember("cost_basis", "\"rent\""));
  CHECK_THAT(mixed, Catch::Contains("Rented, the NVIDIA H100 SXM5 80GB costs the least"));
  auto r = run_vramsim("compare --model qwen3-30b-a3b --option h100-sxm=2.49/h --option rtx-5090 --host ddr4-dual-channel");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("give this option's own host"));
  r = run_vramsim("compare no-such-file");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no compare file \"no-such-file\" (bundled: home-lab"));
}

TEST_CASE("compare: the bundled home-lab file runs and answers for each model", "[compare][cli]") {
  const std::string out = run_ok("compare home-lab --no-error-bars");
  CHECK_THAT(out, Catch::Contains("For qwen3-30b-a3b at 1 user, the "));
  CHECK_THAT(out, Catch::Contains("For llama-3.3-70b at 1 user, the "));
  CHECK_THAT(out, Catch::Contains("For gpt-oss-120b at 1 user, the "));
  CHECK_THAT(out, Catch::Contains("Per USD spent"));
  const std::string serving = run_ok("compare serving-capacity --no-error-bars");
  CHECK_THAT(serving, Catch::Contains("At 32 users the "));
}
