// `vramsim routing-trace` and the real-card replay's plain C++ half: the trace format, read back
// by calibrate/replay_plan.h, and the cache plan (hits, misses, staging, LRU) on it.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "calibrate/replay_plan.h"
#include "tests/test_support.h"

using namespace vramsim;
using vramsim::test::run_vramsim;

namespace {

std::string shared_scenario() { return std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml"; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

calibrate::RoutingTrace read_trace(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return calibrate::read_routing_trace(in, path);
}

// A tiny hand-written trace: 2 layers x 4 experts, top-2, 3 tokens.
const char* kTiny =
    "vramsim-routing-trace 1\n# a comment\nlayers 2\nexperts 4\ntop_k 2\nexpert_bytes 4096\nscenario_slots 2\n"
    "gen_tokens 2\ntokens 3\nprefill_order 8\n0 0 1 0 0 1 1 1\n0 2 1 2 0 3 1 3\n"
    "token 0 request 0\n0 1\n0 2\n"
    "token 1 request 0\n0 3\n1 0\n"
    "token 2 request 1\n2 3\n0 1\n";

calibrate::RoutingTrace tiny() {
  std::istringstream in(kTiny);
  return calibrate::read_routing_trace(in, "tiny.trace");
}

}  // namespace

TEST_CASE("routing-trace: the simulator's routing, read back by the replay", "[routing-trace]") {
  const auto r = run_vramsim("routing-trace " + shared_scenario() + " -o rt_shared.trace --tokens 50 --set workload.gen_tokens=20");
  REQUIRE(r.status == 0);
  const auto t = read_trace("rt_shared.trace");
  CHECK(t.layers == 48);
  CHECK(t.experts == 512);
  CHECK(t.top_k == 10);
  CHECK(t.expert_bytes > 1300000);
  CHECK(t.scenario_slots == 5798);  // the cache `vramsim run` derives for this scenario
  CHECK(t.gen_tokens == 20);
  CHECK(t.tokens == 50);
  REQUIRE(t.prefill_order.size() == 48u * 512u);
  CHECK(std::set<std::uint32_t>(t.prefill_order.begin(), t.prefill_order.end()).size() == 48u * 512u);
  CHECK(t.prefill_order[0] == 0u);   // layer 0, rank 0
  CHECK(t.prefill_order[1] == 512u); // layer 1, rank 0: equal layers alternate
  CHECK(t.request.front() == 0);
  CHECK(t.request[19] == 0);
  CHECK(t.request[20] == 1);
  CHECK(t.request.back() == 2);
  for (std::int64_t token = 0; token < t.tokens; ++token)
    for (int layer = 0; layer < t.layers; ++layer) {
      const std::uint16_t* e = t.route(token, layer);
      CHECK(std::set<std::uint16_t>(e, e + t.top_k).size() == 10u);  // top-k never repeats an expert
    }
  // Deterministic: the same command writes the same bytes; another seed another trace.
  REQUIRE(run_vramsim("routing-trace " + shared_scenario() + " -o rt_shared2.trace --tokens 50 --set workload.gen_tokens=20").status == 0);
  CHECK(read("rt_shared.trace") == read("rt_shared2.trace"));
  REQUIRE(run_vramsim("routing-trace " + shared_scenario() + " -o rt_seed2.trace --tokens 50 --set workload.gen_tokens=20 --seed 2").status == 0);
  CHECK(read("rt_shared.trace") != read("rt_seed2.trace"));
}

// A refusal leaves what was at the output path as it was.
TEST_CASE("routing-trace: a model without routing is refused by name and an existing trace is kept", "[routing-trace][errors]") {
  const std::string path = "rt_kept.trace";
  std::ofstream(path) << "keep me\n";
  vramsim::test::check_usage_error("routing-trace " + std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/mixtral-3090-offload.yaml -o " + path,
                                   "mixtral-8x7b has no expert routing: its model.moe.routing");
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  CHECK(line == "keep me");
  // A symlink (or /dev/stdout, a pipe) is written through, never replaced by a regular file.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("vramsim_rt_link_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "target.trace") << "";
  fs::create_symlink("target.trace", dir / "link.trace");
  REQUIRE(run_vramsim("routing-trace " + shared_scenario() + " --tokens 2 -o " + (dir / "link.trace").string()).status == 0);
  CHECK(fs::is_symlink(dir / "link.trace"));
  CHECK(fs::file_size(dir / "target.trace") > 0);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 2);  // no partial file left
  fs::remove_all(dir);
}

TEST_CASE("routing-trace: the replay's hit rate follows the cache size", "[routing-trace]") {
  REQUIRE(run_vramsim("routing-trace " + shared_scenario() + " -o rt_plan.trace --tokens 400").status == 0);
  const auto t = read_trace("rt_plan.trace");
  const auto none = calibrate::plan_replay(t, 0, calibrate::ReplayPolicy::Profile, 16);
  const auto shared = calibrate::plan_replay(t, t.scenario_slots, calibrate::ReplayPolicy::Profile, 16);
  const auto exclusive = calibrate::plan_replay(t, 19530, calibrate::ReplayPolicy::Profile, 16);
  const auto all = calibrate::plan_replay(t, 48 * 512, calibrate::ReplayPolicy::Profile, 16);
  CHECK(none.hit_rate() == 0.0);
  CHECK(all.hit_rate() == 1.0);
  CHECK(all.layers_with_miss == 0);
  CHECK(shared.counted_tokens == 384);
  CHECK(shared.lookups == 384 * 480);
  // The case study's two points (86.5% at 23.5% coverage, 99.7% at 79.5%), one token per step.
  CHECK(shared.hit_rate() == Approx(0.865).margin(0.03));
  CHECK(exclusive.hit_rate() == Approx(0.997).margin(0.005));
  CHECK(shared.misses_per_token() == Approx(480 * (1 - shared.hit_rate())));
  // An LRU cache of the same size (misses copied in, the least recently used evicted).
  const auto lru = calibrate::plan_replay(t, t.scenario_slots, calibrate::ReplayPolicy::Lru, 16);
  CHECK(lru.hit_rate() > 0.5);
}

TEST_CASE("replay plan: hits, staged misses and LRU copies on a tiny trace", "[routing-trace]") {
  const auto t = tiny();
  CHECK(t.route(1, 1)[0] == 1);
  // Two slots: layer 0 expert 0 and layer 1 expert 0, pinned.
  const auto p = calibrate::plan_replay(t, 2, calibrate::ReplayPolicy::Profile, 0);
  CHECK(p.initial == std::vector<std::uint32_t>{0, 4});
  // token 0: layer 0 {0 hit, 1 miss}; layer 1 {0 hit, 2 miss}
  CHECK(p.slot[0] == 0);
  CHECK(p.miss[1] == 1);
  CHECK(p.slot[1] == -1);  // staged
  CHECK(p.slot[2] == 1);
  CHECK(p.lookups == 12);
  CHECK(p.hits == 5);              // layer 0's expert 0 at tokens 0-1, layer 1's expert 0 at tokens 0-2
  CHECK(p.layers_with_miss == 6);  // every (token, layer) misses at least once
  // LRU with 2 slots: misses are copied into the least recently used slot.
  const auto l = calibrate::plan_replay(t, 2, calibrate::ReplayPolicy::Lru, 0);
  CHECK(l.slot[1] >= 0);
  CHECK(l.miss[1] == 1);
  CHECK_THROWS_AS(calibrate::plan_replay(t, 9, calibrate::ReplayPolicy::Profile, 0), std::invalid_argument);
  CHECK_THROWS_AS(calibrate::plan_replay(t, 1, calibrate::ReplayPolicy::Lru, 0), std::invalid_argument);
}

TEST_CASE("routing trace reader: errors name the file, line and column", "[routing-trace]") {
  auto error_of = [](std::string text) -> std::string {
    std::istringstream in(text);
    try {
      calibrate::read_routing_trace(in, "bad.trace");
    } catch (const calibrate::InputError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of("hello\n"), Catch::StartsWith("bad.trace:1:1: error: not a vramsim routing trace"));
  std::string s = kTiny;
  CHECK_THAT(error_of(s.replace(s.find("0 3\n1 0"), 3, "0 9")), Catch::StartsWith("bad.trace:17:3: error: expected a whole number in [0, 3]"));
  s = kTiny;
  CHECK_THAT(error_of(s.substr(0, s.find("token 2"))), Catch::Contains("the trace ends at token 2 of 3"));
  s = kTiny;
  CHECK_THAT(error_of(s.replace(s.find("0 0 1 0"), 7, "0 0 0 0")), Catch::Contains("prefill_order lists a pair twice"));
}

TEST_CASE("routing-trace: usage errors exit 2", "[routing-trace]") {
  CHECK(run_vramsim("routing-trace " + shared_scenario()).status == 2);  // no -o
  CHECK(run_vramsim("routing-trace " + shared_scenario() + " -o x.trace --tokens 0").status == 2);
  CHECK(run_vramsim("routing-trace " + shared_scenario() + " -o x.trace --set engine.nope=1").status == 2);
}

TEST_CASE("replay: each cache size is judged alone against the card's VRAM", "[routing-trace][calibrate]") {
  // The case study on a 32 GB card: 48 x 512 experts of 1,382,400 bytes (4 KiB-aligned
  // stride 1,384,448), top-8; full coverage needs ~34 GB and is skipped, the rest still run.
  const std::uint64_t stride = 1384448;
  const std::int64_t pairs = 48 * 512;
  const std::uint64_t budget = 31ull << 30;
  CHECK(calibrate::replay_vram_bytes(100, stride, 8, 0) == stride * 116);
  CHECK(calibrate::replay_vram_bytes(100, stride, 8, 4096) == stride * 116 + 4096);
  const std::vector<std::int64_t> slots = {pairs / 10, pairs / 2, pairs * 795 / 1000, pairs};
  const std::vector<bool> fits = calibrate::replay_sizes_that_fit(slots, stride, 8, 0, budget);
  CHECK(fits == std::vector<bool>{true, true, true, false});
  CHECK(calibrate::replay_sizes_that_fit(slots, stride, 8, 0, 0) == std::vector<bool>(4, false));
}

// The replay's options are read whole (std::stoll would read "1.38e6" as 1).
TEST_CASE("replay options: a number is read whole and within range", "[routing-trace][errors]") {
  using vramsim::calibrate::option_integer;
  using vramsim::calibrate::option_number;
  CHECK(option_integer("--expert-bytes", "1382400", 0, 1 << 30) == 1382400);
  CHECK_THROWS_WITH(option_integer("--expert-bytes", "1.38e6", 0, 1 << 30), Catch::Contains("--expert-bytes: expected a whole number") &&
                                                                              Catch::Contains("\"1.38e6\""));
  CHECK_THROWS(option_integer("--trials", "3x", 1, 1000));
  CHECK_THROWS(option_integer("--device", "abc", 0, 1023));
  CHECK(option_number("--coverage", "0.235", 0, 1) == Approx(0.235));
  CHECK_THROWS_WITH(option_number("--coverage", "23.5", 0, 1), Catch::Contains("expected a number from 0"));
}

// A header may claim up to 1e8 tokens: the reader allocates for the lines it reads, and a short
// trace is an input error, not an allocation of the header's size.
TEST_CASE("replay trace: a large token count in the header allocates nothing up front", "[routing-trace][errors]") {
  // 1e8 tokens x 2 layers x top-2 would reserve 1.6 GB.
  std::istringstream in("vramsim-routing-trace 1\nlayers 2\nexperts 4\ntop_k 2\nexpert_bytes 4096\nscenario_slots 2\n"
                        "gen_tokens 2\ntokens 100000000\nprefill_order 8\n0 0 1 0 0 1 1 1\n0 2 1 2 0 3 1 3\n");
  CHECK_THROWS_WITH(vramsim::calibrate::read_routing_trace(in, "big.trace"), Catch::Contains("ends"));
}

