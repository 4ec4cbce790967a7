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
  CHECK_THAT(cycle.error().message, Catch::StartsWith("s.yaml:1:") && Catch::Contains("an alias inside its own anchor (a cycle)"));
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

// The bound on values counts what aliases expand to, not what the file writes out (the file's
// size bounds that): a list of more than 1,000,000 written values loads, and an alias whose
// copy would nest deeper than the nesting bound is refused where the alias is.
TEST_CASE("written values are bounded by the file's size, aliases by what they expand to", "[config][errors][large]") {
  constexpr std::size_t kItems = 1'000'100;
  std::string list = "l: [";
  list.reserve(kItems * 2 + 8);
  for (std::size_t i = 0; i < kItems; ++i) list += i ? ",0" : "0";
  list += "]\n";
  auto many = parse_yaml(list, "many.yaml");
  REQUIRE(many);
  CHECK(many->find("l")->items().size() == kItems);

  std::string deep = "a: &d ";
  for (int i = 0; i < 60; ++i) deep += "[";
  for (int i = 0; i < 60; ++i) deep += "]";
  deep += "\nb: [[[[[[*d]]]]]]\n";
  auto nested = parse_yaml(deep, "deep.yaml");
  REQUIRE_FALSE(nested);
  CHECK_THAT(nested.error().message, Catch::StartsWith("deep.yaml:2:") && Catch::Contains("nested more than 64 levels deep"));
}

// The tree is built from the parser's events: anchors, aliases (as values and as keys),
// quoting and positions come out as yaml-cpp's own document gives them.
TEST_CASE("anchors, aliases, quoting and marks survive the event-built tree", "[config]") {
  auto root = parse_yaml("k: &name gpu\n*name : 3\nq: \"32\"\nm: &m {a: [1, {b: 2}]}\nn: *m\n", "e.yaml");
  REQUIRE(root);
  CHECK(root->find("k")->text() == "gpu");
  REQUIRE(root->find("gpu"));
  CHECK(root->find("gpu")->text() == "3");
  CHECK(root->find("q")->quoted());
  CHECK_FALSE(root->find("k")->quoted());
  CHECK(root->find("n")->find("a")->items().at(1).find("b")->text() == "2");
  CHECK(to_string(root->find("m")->find("a")->items().at(1).find("b")->origin()) == "e.yaml:4:19");
  CHECK(to_string(root->key_origin("q")) == "e.yaml:3:1");
  auto empty = parse_yaml("", "empty.yaml");
  REQUIRE(empty);
  CHECK(empty->is_null());
  CHECK(empty->origin().source == "empty.yaml");
  auto bad_key = parse_yaml("? [1, 2]\n: x\n", "key.yaml");
  REQUIRE_FALSE(bad_key);
  CHECK_THAT(bad_key.error().message, Catch::Contains("keys must be plain names"));
}

// Loading a mapping was quadratic in its keys (a scan of the keys so far per key, for the
// duplicate check and in merges): 160,000 keys took 85 s. The whole load, the merge of two such
// mappings and a duplicate found at the very end must all finish (ctest's timeout bounds them).
TEST_CASE("a mapping of 160,000 keys loads, merges and finds a duplicate at its end", "[config][large]") {
  constexpr int kKeys = 160'000;
  std::string text;
  text.reserve(kKeys * 24);
  for (int i = 0; i < kKeys; ++i) text += "key_" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  auto root = parse_yaml(text, "big.yaml");
  REQUIRE(root.ok());
  REQUIRE(root->entries().size() == static_cast<std::size_t>(kKeys));
  CHECK(root->entries().back().first == "key_159999");
  CHECK(to_string(root->key_origin("key_159999")) == "big.yaml:160000:1");

  std::string overlay_text;
  for (int i = kKeys / 2; i < kKeys + kKeys / 2; ++i) overlay_text += "key_" + std::to_string(i) + ": x\n";
  auto overlay = parse_yaml(overlay_text, "over.yaml");
  REQUIRE(overlay.ok());
  Node merged = *root;
  merged.merge_from(*overlay);
  CHECK(merged.entries().size() == static_cast<std::size_t>(kKeys + kKeys / 2));
  CHECK(merged.find("key_0")->text() == "0");
  CHECK(merged.find("key_100000")->text() == "x");
  CHECK(to_string(merged.key_origin("key_200000")) == "over.yaml:120001:1");

  auto dup = parse_yaml(text + "key_7: again\n", "dup.yaml");
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().message == "dup.yaml:160001:1: error: duplicate key \"key_7\"");
}

// A file that is not YAML (a text, a binary) reads as one long scalar: a message quotes its
// start, never the whole file.
TEST_CASE("a long or multi-line value is quoted by its start in messages", "[config][errors]") {
  CHECK(Node::scalar("rtx-4090", {}).describe() == "\"rtx-4090\"");
  const std::string long_text(5000, 'x');
  const std::string d = Node::scalar(long_text, {}).describe();
  CHECK(d.size() < 120);
  CHECK_THAT(d, Catch::StartsWith("\"xxxx") && Catch::Contains("...\" (5000 characters)"));
  const std::string lines = Node::scalar("first line\nsecond line\nthird", {}).describe();
  CHECK(lines == "\"first line...\" (3 lines)");
}
