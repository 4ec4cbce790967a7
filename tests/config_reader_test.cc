#include <catch2/catch.hpp>

#include "core/config_reader.h"

using namespace vramsim::config;
using vramsim::units::Dimension;

namespace {
std::string error_of(const std::string& yaml, void (*read)(MapReader&)) {
  auto root = parse_yaml(yaml, "s.yaml");
  REQUIRE(root.ok());
  try {
    MapReader r(*root, "");
    read(r);
    r.finish();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a unit-less bandwidth points at the value, names the key and the expectation", "[config]") {
  std::string e = error_of("hardware:\n  link:\n    bandwidth: -13.9\n", [](MapReader& r) {
    MapReader hw = r.map("hardware");
    MapReader link = hw.map("link");
    link.quantity("bandwidth", Dimension::Bandwidth);
  });
  CHECK(e == "s.yaml:3:16: error: hardware.link.bandwidth: expected a bandwidth like \"13.9GB/s\", got \"-13.9\"");
}

TEST_CASE("zero bandwidth is rejected as unphysical", "[config]") {
  std::string e = error_of("bandwidth: 0GB/s\n", [](MapReader& r) { r.quantity("bandwidth", Dimension::Bandwidth); });
  CHECK_THAT(e, Catch::Contains("bandwidth: must be greater than zero"));
}

TEST_CASE("a typo in a key is an error with a suggestion", "[config]") {
  std::string e = error_of("bandwith: 13.9GB/s\nlatency: 2us\n", [](MapReader& r) {
    r.optional_quantity("bandwidth", Dimension::Bandwidth);
    r.quantity("latency", Dimension::Time);
  });
  CHECK_THAT(e, Catch::StartsWith("s.yaml:1:1: error: bandwith: unknown key (did you mean \"bandwidth\"?)"));
}

TEST_CASE("a missing key points at its parent", "[config]") {
  std::string e = error_of("gpu:\n  class: consumer\n", [](MapReader& r) {
    MapReader g = r.map("gpu");
    g.quantity("bandwidth", Dimension::Bandwidth);
  });
  CHECK_THAT(e, Catch::StartsWith("s.yaml:2:3: error: gpu.bandwidth: missing required key"));
}

// A required key written misspelt is reported missing, with the spelling that was written.
TEST_CASE("a missing key names a near spelling written beside it", "[config]") {
  std::string e = error_of("workload:\n  requests: 4\n  gen_token: 256\n", [](MapReader& r) {
    MapReader w = r.map("workload");
    w.integer("requests", 1, 100);
    w.integer("gen_tokens", 1, 100000);
  });
  CHECK_THAT(e, Catch::StartsWith("s.yaml:2:3: error: workload.gen_tokens: missing required key") &&
                    Catch::Contains("\"gen_token\" at s.yaml:3:3 is not read: a misspelling of it?"));
  // A key read already is no candidate, however near.
  std::string read = error_of("r:\n  min: 1\n", [](MapReader& r) {
    MapReader m = r.map("r");
    m.integer("min", 0, 9);
    m.integer("max", 0, 9);
  });
  CHECK_THAT(read, Catch::EndsWith("r.max: missing required key (a whole number)"));
}

TEST_CASE("integers, ranges and choices are checked", "[config]") {
  CHECK_THAT(error_of("n: 2.5\n", [](MapReader& r) { r.integer("n", 0, 10); }), Catch::Contains("expected a whole number"));
  CHECK_THAT(error_of("n: 0\n", [](MapReader& r) { r.integer("n", 1, 10); }), Catch::Contains("must be between 1 and 10"));
  CHECK_THAT(error_of("c: gamer\n", [](MapReader& r) { r.choice("c", {"consumer", "datacenter"}); }),
             Catch::Contains("expected one of consumer, datacenter, got \"gamer\""));
  CHECK_THAT(error_of("m: [1]\n", [](MapReader& r) { r.map("m"); }), Catch::Contains("expected a mapping"));
}

// Whole numbers are read exactly over int64 (a seed up to 2^53 is documented), and a value
// written as a float counts when it is whole and exact.
TEST_CASE("whole numbers are exact past 9e15 and a sign is written once", "[config]") {
  CHECK(parse_whole("9007199254740993") == std::int64_t{9007199254740993});
  CHECK(parse_whole("+7") == std::int64_t{7});
  CHECK(parse_whole("-3") == std::int64_t{-3});
  CHECK(parse_whole("1e3") == std::int64_t{1000});
  CHECK(parse_whole("8.0") == std::int64_t{8});
  CHECK_FALSE(parse_whole("2.5"));
  CHECK_FALSE(parse_whole("+-5"));
  CHECK_FALSE(parse_number("+-5"));
  CHECK_FALSE(parse_whole("1e17"));  // whole, but past 2^53 as a float: not exact
  CHECK_FALSE(parse_whole("9007199254740993.0"));  // rounds to 2^53 as a float
  CHECK(parse_whole("9007199254740991.0") == std::int64_t{9007199254740991});
  CHECK_FALSE(parse_whole("12x"));
  CHECK(error_of("n: 9007199254740993\n", [](MapReader& r) { r.integer("n", 0, std::int64_t{1} << 53); }) ==
        "s.yaml:1:4: error: n: must be between 0 and 9007199254740992, got \"9007199254740993\"");
  CHECK(error_of("n: 99999999999999999999\n", [](MapReader& r) { r.integer("n", 0, 10); }) ==
        "s.yaml:1:4: error: n: must be between 0 and 10, got \"99999999999999999999\"");
}

TEST_CASE("nearest names rank close spellings first", "[config]") {
  auto near = nearest_names("rtx-4099", {"rtx-3090", "rtx-4090", "h100-sxm", "rtx-4080"});
  REQUIRE_FALSE(near.empty());
  CHECK(near.front() == "rtx-4090");
  CHECK(nearest_names("zzzzzzzz", {"rtx-4090"}).empty());
}

// `--set a.b.c=...` over a scalar `b: 1024` wraps it as {preset: 1024}; a mapping that takes no
// catalogue reference says why, and how to replace the value instead.
TEST_CASE("a --set into a plain value explains the preset key it produced", "[config]") {
  auto root = parse_yaml("w:\n  n: 1024\n", "s.yaml");
  REQUIRE(root);
  REQUIRE(apply_override(*root, "w.n.dist=uniform"));
  try {
    MapReader r(*root, "");
    MapReader w = r.map("w");
    MapReader n = w.map("n");
    n.string("dist");
    n.finish();
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("s.yaml:2:6: error: w.n.preset: unknown key") &&
                             Catch::Contains("\"1024\" written here is a value, not a catalogue name a --set can refine: replace it "
                                             "whole, e.g. --set w.n= first, then set its keys"));
  }
}
