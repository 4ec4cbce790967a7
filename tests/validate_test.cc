// The case study, reproduced: `vramsim validate` runs every simulation of
// configs/validation/case-study.yaml in its own process and compares with the report.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <string>

#include "core/config_reader.h"
#include "core/config_tree.h"
#include "core/json_value.h"
#include "reports/validation.h"
#include "tests/test_support.h"

using vramsim::json::Value;
using vramsim::test::json_number;
using vramsim::test::json_text;
using vramsim::test::parse_json;
using vramsim::test::run_vramsim;

namespace {
// The row named `name` of validate's --json output (`doc` parsed from it).
const Value& row(const Value& doc, const std::string& name) {
  const Value* rows = doc.find("rows");
  REQUIRE(rows);
  for (const auto& r : rows->items())
    if (r.find("name") && r.find("name")->text() == name) return r;
  FAIL("no row named " << name);
  return doc;  // unreachable: FAIL throws
}
bool passed(const Value& r) { return r.find("pass") && r.find("pass")->truth(); }
// How many rows have member `key` with text `text` (any text when empty), and how many have a
// null `key`.
std::size_t rows_with(const Value& doc, const std::string& key, const std::string& text = "") {
  std::size_t n = 0;
  for (const auto& r : doc.find("rows")->items())
    if (const Value* v = r.find(key); v && !v->is_null() && (text.empty() || v->text() == text)) ++n;
  return n;
}
std::size_t rows_null(const Value& doc, const std::string& key) {
  std::size_t n = 0;
  for (const auto& r : doc.find("rows")->items())
    if (const Value* v = r.find(key); v && v->is_null()) ++n;
  return n;
}
}  // namespace

TEST_CASE("validate: the case study's figures within their tolerances", "[validate]") {
  auto r = run_vramsim("validate case-study --json --jobs 2");
  INFO(r.out << r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  const Value doc = parse_json(r.out);
  for (const char* name : {"shared slots (derived from the card)", "exclusive slots (derived from the card)",
                           "shared slots (free VRAM given)", "exclusive slots (free VRAM given)", "shared hit rate p50",
                           "exclusive hit rate p50", "shared decode p50 (tok/s)", "exclusive decode p50 (tok/s)",
                           "shared decode mean (tok/s)", "exclusive decode mean (tok/s)",
                           "overflow 0-0.5%: decode p50", "overflow 0.5-1%: decode p50", "overflow 1-2%: decode p50",
                           "overflow 2-3%: decode p50", "overflow 3-5%: decode p50", "overload burst of 32 all complete",
                           "prompt over the 32K window refused", "shared mean power (W)",
                           "shared GPU utilisation", "exclusive GPU utilisation", "shared prefill of a 26-token prompt (s)"}) {
    INFO(name);
    CHECK(passed(row(doc, name)));
  }
  // Known misses, stated in docs/validation.md and docs/cliff.md: the 5-10% and 10-20% buckets,
  // where the report's requests decode at half speed for a reason the model does not have.
  // They are reported, not hidden.
  CHECK(json_number(r.out, "cases") == 25);
  CHECK(json_number(r.out, "failed") == 2);
}

TEST_CASE("validate: results do not depend on the number of parallel jobs", "[validate][determinism]") {
  auto one = run_vramsim("validate case-study --json --jobs 1");
  auto two = run_vramsim("validate case-study --json --jobs 2");
  CHECK(one.out == two.out);
}

// configs/validation/community.yaml: published single-card llama.cpp measurements held out to
// test prediction (docs/validation.md). Whether its cases pass is the result being reported, not
// a property of the code, so this checks only that the dataset decodes, every run simulates and
// every case gets a prediction, each a `prediction` but the rows that calibrated the llama.cpp
// preset (the seven its decode was fitted to; moe_layer_sync; the prefill GEMM rate; the matrix-vector rate) and the two that calibrated the RTX
// 2080 machine's CPU rates (its scenario's cpu_bandwidth_efficiency and cpu_expert_share), which
// the preset and the scenario must reproduce.
TEST_CASE("validate: the community llama.cpp dataset runs and reports every case", "[validate][community]") {
  auto r = run_vramsim("validate community --json --jobs 2");
  INFO(r.out << r.err);
  REQUIRE((r.status == 0 || r.status == 1));  // 1: a case out of tolerance, reported
  const Value doc = parse_json(r.out);
  CHECK(json_text(r.out, "dataset") == "community");
  CHECK(json_number(r.out, "cases") == 56);
  CHECK(rows_null(doc, "predicted") == 0);
  CHECK(rows_with(doc, "role", "prediction") == 44);
  for (const char* name : {"RTX 4090, gpt-oss-20b MXFP4 tg128", "RTX 3090, llama 8B Q6_K pp2048",
                           "RTX 2080, Mistral-Small-24B Q4_K_M -ngl 16", "RTX 2080, Qwen3-30B-A3B Q4_K_M --n-cpu-moe 36",
                           "RTX 3080, Llama 3 8B Q4_K_M tg512", "RTX 4090, Llama 3 8B F16 tg512",
                           "RTX 3090, llama 8B Q4_0, ub 8 pp512"}) {
    INFO(name);
    CHECK(row(doc, name).find("role")->text() == "calibration");
    CHECK(passed(row(doc, name)));
  }
  for (const char* name : {"RTX 2080, Llama 3.1 8B Q4_K_M -ngl 99", "RTX 2080, Qwen3-14B Q4_K_M -ngl 32",
                           "RTX 2080, gpt-oss-20b MXFP4 --n-cpu-moe 12", "RTX 2080, Qwen2.5-14B Q4_K_M -ngl 42",
                           "RTX 3090, llama 8B Q4_0, ub 1 pp512", "RTX 4090, Qwen3-30B-A3B Q4_0 tg128",
                           "RTX 5090, gpt-oss-20b MXFP4 pp512", "RTX 4090, llama 8B Q4_0 pp512",
                           "RTX 4090, llama 8B Q5_0 pp2048"}) {
    INFO(name);
    CHECK(row(doc, name).find("predicted"));
  }
}

// configs/validation/out-of-sample.yaml: llama-bench rows gathered after the preset was
// calibrated. As for community, whether they pass is the result reported (docs/validation.md);
// this checks that every case is simulated and is a prediction.
TEST_CASE("validate: the out-of-sample dataset runs and predicts every case", "[validate][community]") {
  auto r = run_vramsim("validate out-of-sample --json --jobs 2");
  INFO(r.out << r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  const Value doc = parse_json(r.out);
  CHECK(json_text(r.out, "dataset") == "out-of-sample");
  CHECK(json_number(r.out, "cases") == 22);
  CHECK(rows_null(doc, "predicted") == 0);
  CHECK(rows_with(doc, "role", "prediction") == 22);  // every row: none calibrates
}

TEST_CASE("validate: an unknown dataset names the ones there are", "[validate][errors]") {
  auto r = run_vramsim("validate bogus");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("no validation dataset \"bogus\" (datasets: case-study, community, llama-cpp, multi-card"));
}

// The corpus protocol (configs/validation/public-corpus.yaml): `kind`, `engine` and `skip`
// are case keys; any other unknown key is still an error; validate's summary is over
// prediction rows only, by kind and by engine.
namespace {
vramsim::config::Node yaml(const std::string& text) {
  auto n = vramsim::config::parse_yaml(text, "corpus-test.yaml");
  REQUIRE(n);
  return std::move(n).value();
}

const std::string kCorpusHead =
    "name: t\nsource: test\nruns:\n"
    "  a: { scenario: scenarios/llama-bench-tg128.yaml }\n"
    "  b: { scenario: scenarios/llama-bench-tg128.yaml }\n"
    "  c: { scenario: scenarios/llama-bench-tg128.yaml }\n"
    "  d: { scenario: scenarios/llama-bench-tg128.yaml }\n"
    "  e: { scenario: scenarios/llama-bench-tg128.yaml }\n"
    "cases:\n";

std::string corpus_case(const std::string& rest) { return kCorpusHead + "  - { name: x, measured: 100, " + rest + " }\n"; }
}  // namespace

TEST_CASE("validate: corpus cases take the kind engine and skip keys and other unknown keys stay errors", "[validate][corpus]") {
  using vramsim::reports::decode_validation_set;
  const auto set = decode_validation_set(yaml(
      kCorpusHead +
      "  - { name: p, run: a, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: prediction, kind: decode, engine: llama.cpp }\n"
      "  - { name: q, run: b, metric: prefill_tok_s.p50, measured: 100, tolerance: 25%, role: calibration, kind: prefill, engine: ktransformers }\n"
      "  - { name: s, measured: 12.5, role: prediction, kind: offload, engine: vllm, skip: no catalogue card }\n"
      "  - { name: plain, run: c, metric: decode_tok_s.p50, measured: 100, tolerance: 10%, role: fit input }\n"));
  REQUIRE(set.cases.size() == 4);
  CHECK(set.cases[0].kind == "decode");
  CHECK(set.cases[0].engine == "llama.cpp");
  CHECK(set.cases[0].skip.empty());
  CHECK(set.cases[1].kind == "prefill");
  CHECK(set.cases[2].skip == "no catalogue card");
  CHECK(set.cases[2].run.empty());
  CHECK(set.cases[2].measured == 12.5);
  CHECK(set.cases[3].kind.empty());  // the older datasets' cases: no kind, no engine
  CHECK(set.cases[3].engine.empty());

  auto refused = [](const std::string& text, const std::string& what) {
    INFO(text);
    try {
      decode_validation_set(yaml(text));
      FAIL("accepted");
    } catch (const vramsim::config::ConfigError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(what));
    }
  };
  refused(corpus_case("run: a, metric: decode_tok_s.p50, tolerance: 25%, role: prediction, kinds: decode"), "kinds");
  refused(corpus_case("run: a, metric: decode_tok_s.p50, tolerance: 25%, role: prediction, kind: training"),
          "expected decode, prefill, offload, serving or multi-card, got \"training\"");
  refused(corpus_case("run: a, metric: decode_tok_s.p50, tolerance: 25%, role: fit input, kind: decode"),
          "its role is prediction or calibration");
  refused(corpus_case("run: a, metric: decode_tok_s.p50, tolerance: 25%, role: prediction, engine: \"\""), "engine");
  refused(corpus_case("role: prediction, kind: decode, skip: \"\""), "the reason the case is not simulated");
  refused(corpus_case("run: a, role: prediction, kind: decode, skip: later"), "run");  // a skipped case names no run
}

TEST_CASE("validate: the prediction-only summary groups |error| by kind, by engine and by card", "[validate][corpus]") {
  using namespace vramsim::reports;
  const auto set = decode_validation_set(yaml(
      kCorpusHead +
      "  - { name: a, run: a, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: prediction, kind: decode, engine: llama.cpp }\n"
      "  - { name: b, run: b, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: prediction, kind: decode, engine: llama.cpp }\n"
      "  - { name: c, run: c, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: calibration, kind: decode, engine: llama.cpp }\n"
      "  - { name: d, run: d, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: prediction, kind: decode, engine: ktransformers }\n"
      "  - { name: e, run: e, metric: prefill_tok_s.p50, measured: 100, tolerance: 25%, role: prediction, kind: prefill, engine: llama.cpp }\n"
      "  - { name: s, measured: 100, role: prediction, kind: serving, engine: vllm, skip: no card }\n"));
  std::map<std::string, RunOutput> outputs;
  outputs["a"].summary = yaml("{\"decode_tok_s\": {\"p50\": 110}, \"cards\": [{\"gpu\": \"rtx-4090\"}]}");   // +10%
  outputs["b"].summary = yaml("{\"decode_tok_s\": {\"p50\": 80}, \"cards\": [{\"gpu\": \"rtx-3090\"}, {\"gpu\": \"rtx-3090\"}]}");  // -20%
  outputs["c"].summary = yaml("{\"decode_tok_s\": {\"p50\": 400}, \"cards\": [{\"gpu\": \"rtx-4090\"}, {\"gpu\": \"rtx-3090\"}]}");   // +300%, a calibration: left out
  outputs["d"].summary = yaml("{\"decode_tok_s\": {\"p50\": 130}}");   // +30%
  outputs["e"].summary = yaml("{\"prefill_tok_s\": {\"p50\": 50}, \"cards\": [{\"gpu\": \"rtx-4090\"}]}");  // -50%
  const auto results = evaluate(set, outputs);
  REQUIRE(results.size() == 6);
  CHECK(results[5].skipped);
  CHECK(results[5].pass);           // a skipped case is not a failure
  CHECK_FALSE(results[5].predicted);
  CHECK_FALSE(results[2].pass);     // the calibration case still fails its own tolerance

  const PredictionSummary s = summarize_predictions(results);
  CHECK(s.present);
  CHECK(s.calibration == 1);
  CHECK(s.skipped == 1);
  CHECK(s.all.rows == 4);
  CHECK(s.all.median == Approx(0.25));  // 0.1, 0.2, 0.3, 0.5
  CHECK(s.all.max == Approx(0.5));
  REQUIRE(s.by_kind.size() == 2);  // no simulated serving row: no serving group
  CHECK(s.by_kind[0].group == "decode");
  CHECK(s.by_kind[0].rows == 3);
  CHECK(s.by_kind[0].median == Approx(0.2));
  CHECK(s.by_kind[0].max == Approx(0.3));
  CHECK(s.by_kind[1].group == "prefill");
  CHECK(s.by_kind[1].median == Approx(0.5));
  REQUIRE(s.by_engine.size() == 2);  // first-appearance order
  CHECK(s.by_engine[0].group == "llama.cpp");
  CHECK(s.by_engine[0].rows == 3);
  CHECK(s.by_engine[0].median == Approx(0.2));
  CHECK(s.by_engine[0].max == Approx(0.5));
  CHECK(s.by_engine[1].group == "ktransformers");
  CHECK(s.by_engine[1].median == Approx(0.3));
  // By card, in name order; a run without `cards` (d) is in no card's group.
  CHECK(results[0].card == "rtx-4090");
  CHECK(results[1].card == "2x rtx-3090");
  CHECK(results[2].card == "rtx-4090 + rtx-3090");  // a calibration case: in no group
  CHECK(results[3].card.empty());
  REQUIRE(s.by_card.size() == 2);
  CHECK(s.by_card[0].all.group == "2x rtx-3090");
  CHECK(s.by_card[0].all.rows == 1);
  CHECK(s.by_card[1].all.group == "rtx-4090");
  CHECK(s.by_card[1].all.rows == 2);
  CHECK(s.by_card[1].all.median == Approx(0.3));  // 0.1 and 0.5
  REQUIRE(s.by_card[1].by_kind.size() == 2);
  CHECK(s.by_card[1].by_kind[0].group == "decode");
  CHECK(s.by_card[1].by_kind[0].median == Approx(0.1));
  CHECK(s.by_card[1].by_kind[1].group == "prefill");
  CHECK(s.by_card[1].by_kind[1].median == Approx(0.5));

  // A dataset whose cases name neither a kind nor an engine gets no summary (output unchanged).
  const auto plain = decode_validation_set(yaml(kCorpusHead +
      "  - { name: a, run: a, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: prediction }\n"));
  CHECK_FALSE(summarize_predictions(evaluate(plain, outputs)).present);
}

// configs/validation/public-corpus.yaml (issue 23): every simulated row gets a prediction, every
// skipped row keeps its figure and reason, and the prediction-only summary is in --json.
// Whether rows pass is the measurement being reported, not a property of the code.
TEST_CASE("validate: the public corpus runs, predicts every simulated row and summarises by kind and engine",
          "[validate][corpus]") {
  auto r = run_vramsim("validate public-corpus --json --jobs 2");
  INFO(r.err);
  REQUIRE((r.status == 0 || r.status == 1));
  const Value doc = parse_json(r.out);
  CHECK(json_text(r.out, "dataset") == "public-corpus");
  CHECK(json_number(r.out, "cases") == 262);
  CHECK(json_number(r.out, "calibration_cases") == 7);
  CHECK(json_number(r.out, "skipped_cases") == 52);
  CHECK(rows_with(doc, "skip") == 52);
  CHECK(rows_null(doc, "predicted") == 52);  // exactly the skipped rows
  CHECK(rows_with(doc, "kind") == 262);
  CHECK(rows_with(doc, "engine") == 262);
  // The by-kind and by-engine groups once each.
  const Value* predictions = doc.find("predictions");
  REQUIRE(predictions);
  auto groups_named = [&](const char* list, const std::string& group) {
    std::size_t n = 0;
    for (const auto& g : predictions->find(list)->items()) n += g.find("group")->text() == group;
    return n;
  };
  for (const char* kind : {"decode", "prefill", "offload", "serving", "multi-card"}) {
    INFO(kind);
    CHECK(groups_named("by_kind", kind) == 1);
  }
  for (const char* engine : {"llama.cpp", "ktransformers"}) {
    INFO(engine);
    CHECK(groups_named("by_engine", engine) == 1);
  }
  // Every simulated row names its card(s); the cards of the corpus each get a group.
  CHECK(rows_with(doc, "card") == 262 - 52);
  for (const char* card : {"rtx-4090", "a100-80gb", "h100-sxm", "m2-ultra-192gb", "2x rtx-3090"}) {
    INFO(card);
    std::size_t n = 0;
    for (const auto& c : predictions->find("by_card")->items()) n += c.find("card")->text() == card;
    CHECK(n == 1);
  }
}
