// The case-study engine's start-up lines (`--log-format strata`) from a run's plan: what each
// figure covers with one card and with several.
#include <catch2/catch.hpp>

#include <string>

#include "sim/telemetry.h"

using namespace vramsim::sim;

namespace {

VramPlan card(std::int64_t slots, double cache_bytes) {
  VramPlan p;
  p.slots = slots;
  p.cache_bytes = cache_bytes;
  return p;
}

RunResult run_with(std::vector<VramPlan> cards, double prefill_fill_s) {
  RunResult r;
  r.cards = std::move(cards);
  r.plan = r.cards.front();
  r.prefill_fill_s = prefill_fill_s;
  return r;
}

// A scenario whose model has routed experts (the lines' contents come from the run).
Scenario moe_scenario() {
  Scenario s;
  s.model.moe = vramsim::workloads::MoeSpec{};
  return s;
}

std::ptrdiff_t count(const std::string& text, const std::string& what) {
  std::ptrdiff_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("strata pre-fill line, one card: its slots, bytes over its time", "[telemetry]") {
  const std::string lines = strata_startup_lines(moe_scenario(), run_with({card(100, 2e9)}, 0.5));
  CHECK(count(lines, "expert cache auto:") == 1);
  CHECK_THAT(lines, Catch::Contains("-> 100 slots\n"));
  CHECK_THAT(lines, Catch::Contains("strata generate: pre-filled 100 of 100 slots from the profile in 0.5 s (4000 MB/s)\n"));
}

TEST_CASE("strata pre-fill line, several cards: totals over the cards in the phase's wall time", "[telemetry]") {
  // Card 0 fills 1 GB, card 1 fills 3 GB; the phase ends with the slower card at 2 s. The line
  // covers the whole phase: 4 GB in 2 s = 2000 MB/s (not card 0's 1 GB over card 1's 2 s).
  const std::string lines = strata_startup_lines(moe_scenario(), run_with({card(100, 1e9), card(300, 3e9)}, 2.0));
  CHECK(count(lines, "pre-filled") == 1);
  CHECK_THAT(lines, Catch::Contains("strata generate: pre-filled 400 of 400 slots from the profile in 2.0 s (2000 MB/s)\n"));
  // Each card sized its own cache: one sizing line per card, first card first, adding up to the pre-fill.
  CHECK(count(lines, "expert cache auto:") == 2);
  const auto first = lines.find("-> 100 slots\n");
  const auto second = lines.find("-> 300 slots\n");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
  CHECK(second < lines.find("PCIe probe"));
}

TEST_CASE("strata pre-fill line with nothing to fill says 0 MB/s", "[telemetry]") {
  const std::string lines = strata_startup_lines(moe_scenario(), run_with({card(0, 0), card(0, 0)}, 0.0));
  CHECK_THAT(lines, Catch::Contains("pre-filled 0 of 0 slots from the profile in 0.0 s (0 MB/s)\n"));
}

TEST_CASE("strata lines for a dense model: the generation line alone, no expert-cache lines", "[telemetry]") {
  CHECK(strata_startup_lines(Scenario{}, run_with({card(0, 0)}, 0.0)).empty());
  RequestRecord r;
  r.prompt_tokens = 16;
  r.gen_tokens = 128;
  r.first_token_s = 1.0;
  r.end_s = 2.0;
  const std::string dense = strata_request_lines(Scenario{}, r);
  CHECK(dense == "strata serve: prompt 16 tokens = 0 reused + 16 read in 0 ms, 128 generated in 1000 ms (128.0 tok/s), "
                 "drafts accepted 0/0\n");
  const std::string moe = strata_request_lines(moe_scenario(), r);
  CHECK(moe.substr(0, dense.size()) == dense);
  CHECK_THAT(moe, Catch::Contains("strata serve: decode expert cache hit rate: 0.0% (0 hits / 0 lookups)"));
}
