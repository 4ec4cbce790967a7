// Routing from an engine's measured profile (CSV "layer,expert,count").
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/expert_cache.h"
#include "sim/routing_profile.h"
#include "tests/json_matchers.h"
#include "tests/test_support.h"

using namespace vramsim;
using namespace vramsim::sim;

namespace {
std::string write(const std::string& name, const std::string& text) {
  std::ofstream(name) << text;
  return name;
}
int resident_in_layer(const ExpertCache& c, int layer, int experts) {
  int n = 0;
  for (int e = 0; e < experts; ++e) n += c.resident(layer, e) ? 1 : 0;
  return n;
}
}  // namespace

TEST_CASE("a profile gives each layer its own popularity, and the cache holds the hottest pairs", "[profile]") {
  auto profile = load_routing_profile(test::data_path("profile/tiny-moe-profile.csv"), 4, 16, 2);
  REQUIRE(profile.ok());
  REQUIRE(profile->size() == 4);
  // Layer 3 is flat: every expert has inclusion probability k / E = 2 / 16.
  for (double pi : (*profile)[3].inclusion()) CHECK(pi == Approx(0.125));
  // Layer 0 is skewed: its hottest expert is in nearly every token's top-2.
  CHECK((*profile)[0].inclusion()[0] > 0.9);
  // Hottest first across layers: every resident pair is at least as likely to be routed as
  // any pair left out, so the layers get uneven shares of the 24 slots.
  ExpertCache cache(CachePolicy::Profile, 24, 0.0, *profile);
  CHECK(cache.resident_count() == 24);
  double coldest_in = 1.0, hottest_out = 0.0;
  for (int layer = 0; layer < 4; ++layer)
    for (int e = 0; e < 16; ++e) {
      const double pi = (*profile)[static_cast<std::size_t>(layer)].inclusion()[static_cast<std::size_t>(e)];
      (cache.resident(layer, e) ? coldest_in : hottest_out) =
          cache.resident(layer, e) ? std::min(coldest_in, pi) : std::max(hottest_out, pi);
    }
  CHECK(coldest_in >= hottest_out);
  CHECK(resident_in_layer(cache, 0, 16) != resident_in_layer(cache, 1, 16));
}

TEST_CASE("a malformed profile is refused with its file, line, column and key", "[profile]") {
  auto header = load_routing_profile(write("p_header.csv", "l,e,c\n0,0,1\n"), 1, 4, 1);
  REQUIRE_FALSE(header.ok());
  CHECK_THAT(header.error().message, Catch::StartsWith("p_header.csv:1:1: error: model.moe.routing.profile: expected the header"));
  auto row = load_routing_profile(write("p_row.csv", "layer,expert,count\n0,0,5\n0,x,3\n"), 1, 4, 1);
  REQUIRE_FALSE(row.ok());
  CHECK_THAT(row.error().message, Catch::StartsWith("p_row.csv:3:3: error: model.moe.routing.profile: expected \"layer,expert,count\""));
  auto range = load_routing_profile(write("p_range.csv", "layer,expert,count\n0,9,5\n"), 1, 4, 1);
  CHECK_THAT(range.error().message, Catch::Contains("p_range.csv:2:3: error: model.moe.routing.profile: expert must be a whole number in [0, 4)"));
  auto twice = load_routing_profile(write("p_twice.csv", "layer,expert,count\n0,1,5\n0,1,6\n"), 1, 4, 1);
  CHECK_THAT(twice.error().message, Catch::Contains("p_twice.csv:3:1: error: model.moe.routing.profile: pair (0, 1) given twice"));
  auto few = load_routing_profile(write("p_few.csv", "layer,expert,count\n0,1,5\n"), 1, 4, 2);
  CHECK_THAT(few.error().message, Catch::StartsWith("p_few.csv: error: model.moe.routing.profile: layer 0 has 1 experts with a positive count; top-k needs at least 2"));
}

TEST_CASE("a scenario whose model routes from a profile runs end to end", "[profile][run]") {
  auto r = test::run_vramsim("run " + test::data_path("profile/tiny-scenario.yaml") +
                             " --set engine.expert_cache.size=24 --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, vramsim::test::HasMember("slots", "24"));
  CHECK_THAT(r.out, vramsim::test::HasMember("completed", "20"));
}

// Issue 26, item 7: the profile's diagnostic is printed as it is, once: no "vramsim run: error:"
// before a "FILE:LINE:COL: error:", and the key named.
TEST_CASE("run: a malformed routing profile is one compiler-style error with its key", "[profile][run][messages]") {
  namespace fs = std::filesystem;
  const fs::path dir = test::fresh_dir("profile-bad-run");
  for (const char* name : {"tiny-scenario.yaml", "tiny-moe.yaml"})
    fs::copy_file(test::data_path(std::string("profile/") + name), dir / name);
  write((dir / "tiny-moe-profile.csv").string(), "layer,expert,count\n0,0,5\n0,x,3\n");
  const auto r = test::run_vramsim("run " + (dir / "tiny-scenario.yaml").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.err, !Catch::Contains("vramsim run: error:"));
  CHECK_THAT(r.err, Catch::Contains((dir / "tiny-moe-profile.csv").lexically_normal().string() +
                                      ":3:3: error: model.moe.routing.profile: expected \"layer,expert,count\" with numbers, got \"0,x,3\""));
  std::size_t errors = 0;
  for (std::size_t at = r.err.find("error:"); at != std::string::npos; at = r.err.find("error:", at + 1)) ++errors;
  CHECK(errors == 1);
}
