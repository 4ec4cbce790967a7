#include <catch2/catch.hpp>

#include "core/config_tree.h"

using namespace vramsim::config;

TEST_CASE("nodes remember their 1-based file positions", "[config]") {
  auto root = parse_yaml("a:\n  b: 13.9GB/s\n", "x.yaml");
  REQUIRE(root.ok());
  const Node* b = root->find("a")->find("b");
  REQUIRE(b);
  CHECK(b->text() == "13.9GB/s");
  CHECK(to_string(b->origin()) == "x.yaml:2:6");
  CHECK(to_string(root->key_origin("a")) == "x.yaml:1:1");
}

TEST_CASE("malformed YAML is reported with its position", "[config]") {
  auto root = parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml");
  REQUIRE_FALSE(root.ok());
  CHECK_THAT(root.error().message, Catch::StartsWith("bad.yaml:"));
  CHECK_THAT(root.error().message, Catch::Contains("malformed YAML"));
}

TEST_CASE("duplicate keys are errors", "[config]") {
  auto root = parse_yaml("a: 1\na: 2\n", "dup.yaml");
  REQUIRE_FALSE(root.ok());
  CHECK(root.error().message == "dup.yaml:2:1: error: duplicate key \"a\"");
}

TEST_CASE("command-line overrides create, replace and refine values", "[config]") {
  auto root = parse_yaml("engine:\n  parallel: 1\ngpu: rtx-4090\n", "s.yaml");
  REQUIRE(root.ok());
  REQUIRE(apply_override(*root, "engine.parallel=4").ok());
  REQUIRE(apply_override(*root, "engine.context=32768").ok());
  REQUIRE(apply_override(*root, "gpu.memory.capacity=48GiB").ok());
  CHECK(root->find("engine")->find("parallel")->text() == "4");
  CHECK(root->find("engine")->find("context")->text() == "32768");
  // A catalogue name turned into {preset: name} so the override can refine it.
  CHECK(root->find("gpu")->find("preset")->text() == "rtx-4090");
  CHECK(root->find("gpu")->find("memory")->find("capacity")->text() == "48GiB");
  CHECK(root->find("engine")->find("parallel")->origin().source == "--set engine.parallel=4");
}

TEST_CASE("command-line overrides reject assignments without a key or '='", "[config]") {
  auto root = parse_yaml("a: 1\n", "s.yaml");
  CHECK_FALSE(apply_override(*root, "novalue").ok());
  CHECK_FALSE(apply_override(*root, "=3").ok());
  CHECK_FALSE(apply_override(*root, "a..b=3").ok());
}

TEST_CASE("deep merge keeps untouched keys and replaces scalars", "[config]") {
  auto base = parse_yaml("memory: {capacity: 32GiB, bandwidth: 1792GB/s}\nclass: consumer\n", "base.yaml");
  auto over = parse_yaml("memory: {capacity: 48GiB}\n", "over.yaml");
  base->merge_from(*over);
  CHECK(base->find("memory")->find("capacity")->text() == "48GiB");
  CHECK(base->find("memory")->find("capacity")->origin().source == "over.yaml");
  CHECK(base->find("memory")->find("bandwidth")->text() == "1792GB/s");
  CHECK(base->find("class")->text() == "consumer");
}

// Aliases cannot make the loader recurse forever or expand without bound: an alias inside its
// own anchor and a "billion laughs" file are errors at a position, not a crash.
TEST_CASE("a recursive alias or an exponential expansion is an error, not a crash", "[config][errors]") {
  auto cycle = parse_yaml("a: &x [*x]\n", "s.yaml");
  REQUIRE_FALSE(cycle);
  CHECK_THAT(cycle.error().message, Catch::StartsWith("s.yaml:1:") && Catch::Contains("(an alias inside its own anchor?)"));
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) laughs += (j ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  auto expanded = parse_yaml(laughs, "lol.yaml");
  REQUIRE_FALSE(expanded);
  CHECK_THAT(expanded.error().message, Catch::Contains("values once its aliases are expanded"));
  // An ordinary alias still works.
  auto shared = parse_yaml("base: &b {x: 1}\nother: *b\n", "ok.yaml");
  REQUIRE(shared);
  CHECK(shared->find("other")->find("x")->text() == "1");
}
