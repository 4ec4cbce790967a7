// `analyse_fit`: the answer and the advice when the model does not fit.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "cli/catalogue_access.h"
#include "core/config_reader.h"
#include "core/json_value.h"
#include "tests/json_matchers.h"
#include "tests/test_support.h"
#include "workloads/fit.h"

using namespace vramsim;
using namespace vramsim::workloads;

namespace {

struct Fixture {
  config::Catalogue catalogue = test::catalogue();
  FormatTables formats = FormatTables::load(catalogue);
  std::vector<ModelSpec> models = cli::all_models(catalogue);

  FitQuery query(const std::string& model, const std::string& gpu, const std::string& quant, std::int64_t context) {
    auto resolve = [&](const char* kind, const std::string& name) {
      return catalogue.resolve(kind, kind, config::Node::scalar(name, config::Origin{"test", 0, 0}), kind);
    };
    FitQuery q;
    q.model = decode_model(resolve("models", model), "model");
    q.gpu = hw::decode_gpu(resolve("gpus", gpu), "gpu");
    q.quant = *formats.weight(quant);
    q.kv_k = q.kv_v = *formats.kv("f16");
    q.context_tokens = context;
    return q;
  }
  hw::HostSpec host(const std::string& name) {
    return hw::decode_host(catalogue.resolve("hosts", "host", config::Node::scalar(name, config::Origin{"t", 0, 0}), "host"),
                           "host");
  }
};

}  // namespace

TEST_CASE("a model that fits gets its GPU decode speed and no advice", "[fit]") {
  Fixture f;
  FitReport r = analyse_fit(f.query("llama-3.1-8b", "rtx-4090", "Q4_K_M", 8192), f.formats, f.models);
  CHECK(r.fits);
  CHECK(r.headroom_bytes == Approx(r.usable_bytes - r.footprint.total));
  REQUIRE(r.decode_tok_s);
  CHECK(*r.decode_tok_s == Approx(r.gpu_decode_tok_s));
  // 128K needs 22.83 GiB (the reference) and a 24 GB card gives 22.32: the window stops short.
  CHECK(r.max_context_tokens > 120000);
  CHECK(r.max_context_tokens < 131072);
  CHECK(r.suggestions.empty());
  CHECK(r.kv_bytes_per_1k_tokens == Approx(32.0 * 8 * 128 * 2 * 2 * 1024));
}

TEST_CASE("KV per 1,024 tokens of context counts every concurrent sequence's window", "[fit]") {
  Fixture f;
  FitQuery one = f.query("llama-3.1-8b", "rtx-4090", "Q4_K_M", 8192);
  FitQuery four = one;
  four.concurrency = 4;
  const FitReport a = analyse_fit(one, f.formats, f.models);
  const FitReport b = analyse_fit(four, f.formats, f.models);
  // One sequence: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B per token, x 1,024 tokens.
  const double per_sequence = 32.0 * 8 * 128 * 2 * 2 * 1024;
  CHECK(a.kv_bytes_per_1k_tokens == Approx(per_sequence));
  // Four sequences, each with its own 8,192-token window: 1,024 more tokens of context costs four times as much.
  CHECK(b.kv_bytes_per_1k_tokens == Approx(4 * per_sequence));
  CHECK(b.footprint.kv == Approx(4 * a.footprint.kv));
}

TEST_CASE("a model that does not fit gets advice in order of cheapness", "[fit]") {
  Fixture f;
  FitReport r = analyse_fit(f.query("llama-3.3-70b", "rtx-4090", "Q4_K_M", 8192), f.formats, f.models);
  CHECK_FALSE(r.fits);
  CHECK_FALSE(r.decode_tok_s);  // no host: it does not run
  REQUIRE(r.suggestions.size() >= 2);
  // The weights alone exceed the card: no context is short enough.
  CHECK(r.max_context_tokens == 0);
  CHECK(r.suggestions[0].kind == "kv_cache");
  CHECK(r.suggestions[1].kind == "quant");
  CHECK(r.suggestions[1].change == "--quant Q3_K_M");
  REQUIRE(r.smaller_model);
  CHECK(r.smaller_model->fits);
}

TEST_CASE("a long context that does not fit: shorten it first", "[fit]") {
  Fixture f;
  FitReport r = analyse_fit(f.query("llama-3.1-8b", "rtx-3060-12gb", "Q4_K_M", 131072), f.formats, f.models);
  CHECK_FALSE(r.fits);
  REQUIRE_FALSE(r.suggestions.empty());
  CHECK(r.suggestions[0].kind == "context");
  CHECK(r.suggestions[0].fits);
  // As a user types it: a multiple of 1,024 at most the largest context that fits.
  CHECK(r.suggestions[0].change == "--context " + std::to_string(typed_context(r.max_context_tokens)));
  CHECK(typed_context(r.max_context_tokens) % 1024 == 0);
  CHECK(r.suggestions[1].kind == "kv_cache");
}

TEST_CASE("offload to a host: resident share and a smaller model that beats it", "[fit]") {
  Fixture f;
  FitQuery q = f.query("llama-3.3-70b", "rtx-4090", "Q4_K_M", 8192);
  q.host = f.host("ddr5-dual-channel");
  FitReport r = analyse_fit(q, f.formats, f.models);
  REQUIRE(r.decode_tok_s);
  CHECK(r.resident_fraction == Approx(r.usable_bytes / r.footprint.total));
  CHECK(*r.decode_tok_s < r.gpu_decode_tok_s);
  REQUIRE(r.smaller_model);
  CHECK(r.smaller_model_faster);
  // A smaller model of the same family first (Llama 3.1 8B, not Qwen3-30B-A3B, which is larger).
  CHECK(r.smaller_model->same_lineage);
  CHECK(r.smaller_model->change == "--model llama-3.1-8b --quant Q4_K_M");
  CHECK_THAT(vramsim::test::run_ok("fit --model llama-3.3-70b --gpu rtx-4090 --quant Q4_K_M --host ddr5-dual-channel"),
             Catch::Contains("--model llama-3.1-8b --quant Q4_K_M (a smaller model of the same family)"));
  // DeepSeek-V3 on an M2 Ultra: DeepSeek-V2-Lite, not an unrelated family's larger model.
  CHECK_THAT(vramsim::test::run_ok("fit --model deepseek-v3 --gpu m2-ultra-192gb"),
             Catch::Contains("--model deepseek-v2-lite --quant FP8 (a smaller model of the same family)"));
}

TEST_CASE("offload over several cards: the speed of the share whole layers keep in VRAM", "[fit]") {
  Fixture f;
  // Three F16 layers of Llama 8B on 2 x 12 GB: the total fits the two cards' usable memory, but
  // one card must hold two whole layers and overfills, so part of them runs from RAM.
  FitQuery q = f.query("llama-3.1-8b", "rtx-3060-12gb", "F16", 32768);
  q.model.layers = 3;
  q.gpus = 2;
  q.host = f.host("ddr5-dual-channel");
  FitReport r = analyse_fit(q, f.formats, f.models);
  REQUIRE_FALSE(r.fits);
  CHECK(r.headroom_bytes > 0);
  CHECK(r.fits_without_context);  // what fails is the whole-layer split, not the weights
  CHECK(r.resident_fraction < 1.0);
  REQUIRE(r.decode_tok_s);
  BudgetRequest request;
  request.bits_per_weight = q.quant.bits_per_weight;
  request.context_tokens = q.context_tokens;
  request.kv_bytes_per_element_k = request.kv_bytes_per_element_v = q.kv_k.bytes_per_element;
  CHECK(*r.decode_tok_s ==
        Approx(offload_decode_tok_s(q.model, request, q.gpu, q.gpus, q.host->memory_bandwidth, r.resident_fraction)));
  CHECK(*r.decode_tok_s < r.gpu_decode_tok_s);
}

TEST_CASE("an MLA model's KV cache is its K type alone: no --kv-type-v advice", "[fit]") {
  Fixture f;
  FitQuery q = f.query("deepseek-v2-lite", "rtx-3060-12gb", "Q8_0", 32768);
  q.kv_k = *f.formats.kv("q8_0");
  q.kv_per_side = true;
  FitReport r = analyse_fit(q, f.formats, f.models);
  REQUIRE_FALSE(r.fits);
  for (const auto& s : r.suggestions) {
    INFO(s.change);
    CHECK(s.change.find("--kv-type-v") == std::string::npos);
  }
}

TEST_CASE("impossible questions are refused with a reason", "[fit]") {
  Fixture f;
  FitQuery zero = f.query("llama-3.1-8b", "rtx-4090", "Q4_K_M", 8192);
  zero.context_tokens = 0;
  CHECK_THROWS_WITH(analyse_fit(zero, f.formats, f.models), Catch::Contains("at least 1 token"));
  FitQuery too_long = f.query("llama-3.1-8b", "rtx-4090", "Q4_K_M", 8192);
  too_long.context_tokens = 1 << 20;
  CHECK_THROWS_WITH(analyse_fit(too_long, f.formats, f.models), Catch::Contains("maximum of 131072"));
  FitQuery mxfp4 = f.query("llama-3.1-8b", "rtx-4090", "MXFP4", 8192);
  CHECK_THROWS_WITH(analyse_fit(mxfp4, f.formats, f.models), Catch::Contains("offered only for models released in it"));
  FitQuery apple = f.query("llama-3.1-8b", "m4-max-128gb", "Q4_K_M", 8192);
  apple.gpus = 2;
  CHECK_THROWS_WITH(analyse_fit(apple, f.formats, f.models), Catch::Contains("unified-memory"));
  FitQuery too_many = f.query("llama-3.1-8b", "rtx-4090", "Q4_K_M", 8192);
  too_many.gpus = 40;
  CHECK_THROWS_WITH(analyse_fit(too_many, f.formats, f.models), Catch::Contains("--gpus 40 exceeds llama-3.1-8b's 32 layers"));
  FitQuery apple_host = f.query("llama-3.3-70b", "m4-16gb", "Q4_K_M", 8192);
  apple_host.host = f.host("ddr5-dual-channel");
  CHECK_THROWS_WITH(analyse_fit(apple_host, f.formats, f.models), Catch::Contains("no other host RAM"));
}

// Offloading needs the host's RAM to hold what the cards do not (as `vramsim run` counts the CPU
// layers against hardware.host): neither the whole model nor nothing.
TEST_CASE("offload runs only when the part off the cards fits the host's RAM", "[fit]") {
  Fixture f;
  FitQuery huge = f.query("deepseek-v3", "rtx-4090", "BF16", 8192);
  huge.host = f.host("ddr5-dual-channel");
  const FitReport h = analyse_fit(huge, f.formats, f.models);
  CHECK_FALSE(h.fits);
  CHECK_FALSE(h.decode_tok_s);
  CHECK(h.host_bytes > huge.host->memory_bytes);
  // Llama 3.3 70B Q8_0: 70 GiB of weights, more than the 64 GiB of RAM, but 22 GiB stay on the
  // card, so the rest fits: it runs offloaded.
  FitQuery q8 = f.query("llama-3.3-70b", "rtx-4090", "Q8_0", 4096);
  q8.host = f.host("ddr5-dual-channel");
  const FitReport r8 = analyse_fit(q8, f.formats, f.models);
  CHECK(r8.footprint.weights > q8.host->memory_bytes);
  CHECK(r8.host_bytes == Approx(r8.footprint.total - r8.usable_bytes));
  CHECK(r8.host_bytes < q8.host->memory_bytes);
  CHECK(r8.decode_tok_s);
  // Q6_K at a 131,072-token context: 102 GiB in all, more than the card and the RAM together.
  FitQuery q6 = f.query("llama-3.3-70b", "rtx-4090", "Q6_K", 131072);
  q6.host = f.host("ddr5-dual-channel");
  const FitReport r6 = analyse_fit(q6, f.formats, f.models);
  CHECK(r6.footprint.total > r6.usable_bytes + q6.host->memory_bytes);
  CHECK_FALSE(r6.decode_tok_s);
  CHECK_FALSE(r6.suggestions.empty());  // a shorter context still helps
}

TEST_CASE("several cards: 90% of each and the pipeline's 0.6 efficiency", "[fit]") {
  Fixture f;
  // Q4_K_M (46.4 GiB) does not fit 2 x 24 GB; Q3_K_M does.
  FitQuery q = f.query("llama-3.3-70b", "rtx-4090", "Q3_K_M", 8192);
  q.gpus = 2;
  FitReport r = analyse_fit(q, f.formats, f.models);
  CHECK(r.usable_bytes == Approx(2 * 0.9 * 24 * units::kGiB));
  CHECK(r.fits);
  CHECK(r.decode_efficiency == 0.6);
  CHECK(*r.decode_tok_s == Approx(1008e9 * 0.6 / r.bytes_per_token));
}

namespace {

// `options` with each option of `change` replacing the one of that name (or added): what a
// user types to apply a suggestion. Options are "--name value" pairs separated by spaces.
std::string apply_change(const std::string& options, const std::string& change) {
  auto split = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(text);
    std::string name, value;
    while (in >> name >> value) out.emplace_back(name, value);
    return out;
  };
  auto result = split(options);
  for (const auto& [name, value] : split(change)) {
    bool replaced = false;
    for (auto& [n, v] : result)
      if (n == name) v = value, replaced = true;
    if (!replaced) result.emplace_back(name, value);
  }
  std::string out;
  for (const auto& [n, v] : result) out += n + " " + v + " ";
  return out;
}

}  // namespace

TEST_CASE("fit's suggestions, applied as printed, fit", "[fit][cli]") {
  // Per-side KV types take precedence over --kv-type: the suggestion names the side it
  // changes. A smaller model with a shorter window: the suggestion caps --context too.
  const std::vector<std::string> questions = {
      "--model qwen3-14b --gpu rtx-4080 --quant Q4_K_M --kv-type-k q4_0 --kv-type-v f16 --context 100000",
      "--model llama-3.3-70b --gpu rtx-4090 --gpus 2 --quant Q4_K_M --context 65536",
      "--model qwen3-14b --gpu rtx-4080 --kv-type-k f16 --context 40000",
      "--model llama-3.3-70b --gpu rtx-4090 --context 16384",
      "--model llama-3.1-8b --gpu rtx-4080 --quant BF16 --context 16384",
  };
  int applied = 0;
  for (const auto& question : questions) {
    auto before = test::run_vramsim("fit " + question + " --json");
    INFO(question << "\n" << before.err);
    REQUIRE(before.status == 0);
    auto rep = json::parse(before.out);
    REQUIRE(rep.ok());
    CHECK(!rep->find("fits")->truth());
    std::vector<const json::Value*> suggestions;
    for (const auto& s : rep->find("suggestions")->items()) suggestions.push_back(&s);
    if (!rep->find("smaller_model")->is_null()) suggestions.push_back(rep->find("smaller_model"));
    for (const json::Value* s : suggestions) {
      if (!s->find("fits")->truth()) continue;
      const std::string change = s->find("change")->text();
      const std::string command = "fit " + apply_change(question, change) + "--json";
      auto after = test::run_vramsim(command);
      INFO(change << " -> " << command << "\n" << after.err);
      REQUIRE(after.status == 0);
      auto applied_rep = json::parse(after.out);
      REQUIRE(applied_rep.ok());
      CHECK(applied_rep->find("fits")->truth());
      CHECK(applied_rep->find("total_gib")->number() == Approx(s->find("total_gib")->number()));
      // Judged by the engine's accounting, as the question: the same need.
      CHECK(applied_rep->find("engine_accounting")->find("need_gib")->number() == Approx(s->find("engine_need_gib")->number()));
      ++applied;
    }
  }
  CHECK(applied >= 6);
  // The suggestions' own words for the two cases above.
  auto kv = test::run_vramsim("fit " + questions[0]);
  CHECK_THAT(kv.out, Catch::Contains("--kv-type-v q8_0: needs") && !Catch::Contains("--kv-type q8_0"));
  auto model = test::run_vramsim("fit " + questions[4]);
  CHECK_THAT(model.out, Catch::Contains("--model llama-2-7b --context 4096 --quant BF16 (a smaller model of the same family)"));
  // Every context suggested is one a user types: a multiple of 1,024 (or a power of two below).
  for (const auto& question : questions) {
    const std::string out = test::run_ok("fit " + question);
    for (std::size_t at = out.find("    --context "); at != std::string::npos; at = out.find("    --context ", at + 1)) {
      const long long n = std::stoll(out.substr(at + 14));
      CHECK((n % 1024 == 0 || (n < 1024 && (n & (n - 1)) == 0)));
    }
  }
}

TEST_CASE("a native-only weights format on another model is refused by every command", "[fit][cli][errors]") {
  const std::string names = "--model qwen3-14b --gpu rtx-4080 --quant MXFP4";
  const std::string why = "MXFP4 is offered only for models released in it; qwen3-14b was released in BF16";
  test::check_usage_error("fit " + names, why);
  test::check_usage_error("run " + names, why);
  test::check_usage_error("plan " + names + " --host ddr5-dual-channel -j 1", why);
  // A scenario file: where it is set.
  test::check_usage_error("run " + (test::catalogue().root() / "scenarios" / "rtx2080-i9-10900x-llama-server.yaml").string() +
                              " --set engine.weights.experts=MXFP4",
                          "engine.weights.experts: MXFP4 is offered only for models released in it");
  // The model released in it keeps it.
  auto gpt = test::run_vramsim("fit --model gpt-oss-20b --gpu rtx-4080 --quant MXFP4 --json");
  CHECK(gpt.status == 0);
}

// The formula reads an MoE model's active bytes at the dense efficiency: fit says it is an upper
// bound, with the measured ratio, for MoE models only; the figures it quotes are the formula's.
TEST_CASE("fit flags an MoE model's decode as an upper bound, with the measured ratio", "[fit][cli]") {
  for (const std::string moe : {"--model qwen3-30b-a3b --quant Q4_0", "--model gpt-oss-20b --quant MXFP4"}) {
    auto r = test::run_vramsim("fit " + moe + " --gpu rtx-4090 --json");
    INFO(moe << "\n" << r.err);
    REQUIRE(r.status == 0);
    auto rep = json::parse(r.out);
    REQUIRE(rep.ok());
    const std::string note = rep->find("decode_note")->text();
    CHECK_THAT(note, Catch::Contains("upper bound") && Catch::Contains("0.48-0.54"));
    // The note's "against N" figures are this formula's own on the RTX 4090.
    const auto quoted = std::to_string(static_cast<int>(std::lround(rep->find("decode_tok_s")->number())));
    CHECK_THAT(note, Catch::Contains("against " + quoted));
    CHECK_THAT(test::run_vramsim("fit " + moe + " --gpu rtx-4090").out, Catch::Contains("note         MoE: an upper bound"));
  }
  auto dense = test::run_vramsim("fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json");
  REQUIRE(dense.status == 0);
  CHECK(json::parse(dense.out)->find("decode_note")->is_null());
  // Past the cards the dense formula was checked on, the figure is bandwidth alone.
  CHECK_THAT(test::run_vramsim("fit --model llama-3.1-8b --gpu h200 --quant Q4_K_M").out,
             Catch::Contains("note         bandwidth alone: checked on RTX 3080-4090") &&
                 Catch::Contains("`vramsim run --model llama-3.1-8b --gpu ...` simulates those costs"));
  // An MoE model that fits its cards is all resident, exactly (a per-card sum had rounded to
  // 1 - 1 ulp and printed the offload note, with no host given).
  for (const std::string split : {"--model gpt-oss-20b --gpu rtx-4090 --gpus 5 --quant Q4_K_M",
                                  "--model deepseek-v3 --gpu h200 --gpus 8 --quant Q4_K_M"}) {
    auto r = test::run_vramsim("fit " + split + " --json");
    INFO(split << "\n" << r.err);
    REQUIRE(r.status == 0);
    auto rep = json::parse(r.out);
    REQUIRE(rep.ok());
    CHECK(rep->find("resident_fraction")->number() == 1.0);
    CHECK_THAT(rep->find("decode_note")->text(), Catch::Contains("upper bound"));
  }
  // Offloaded, the formula is no bound on llama.cpp's placements: the note says so instead.
  auto offloaded = test::run_vramsim("fit --model qwen3-30b-a3b --gpu rtx-3060-12gb --quant Q4_K_M --host ddr5-dual-channel");
  INFO(offloaded.err);
  REQUIRE(offloaded.status == 0);
  CHECK_THAT(offloaded.out, Catch::Contains("note         MoE offloaded:") && Catch::Contains("--n-cpu-moe") &&
                                !Catch::Contains("note         MoE: an upper bound"));
}

// The reference's split efficiency stays the formula's, with a note that measured layer splits
// run faster and that `run` simulates the split.
TEST_CASE("fit over several cards notes that the split's 0.6 runs low", "[fit][cli]") {
  const std::string out = vramsim::test::run_ok("fit --model llama-3.3-70b --gpu rtx-5090 --gpus 2 --quant Q4_K_M");
  CHECK_THAT(out, Catch::Contains("x 0.60 /") && Catch::Contains("note         split over 2 cards: the rule of thumb's 0.60 runs low") &&
                      Catch::Contains("`vramsim run --model llama-3.3-70b --gpu rtx-5090 --gpus 2 --quant Q4_K_M --context 4096` "
                                      "simulates the split"));
  CHECK_THAT(vramsim::test::run_ok("fit --model llama-3.3-70b --gpu rtx-5090 --quant Q2_K"), !Catch::Contains("split over"));
  // Offloaded over two cards, the figure uses the same 0.6: the note stands there too.
  CHECK_THAT(vramsim::test::run_ok("fit --model llama-3.3-70b --gpu rtx-3090 --gpus 2 --quant Q5_K_M --context 4096 "
                                   "--kv-type q8_0 --host ddr4-dual-channel"),
             Catch::Contains("with 83.6% resident") && Catch::Contains("note         split over 2 cards: the rule of thumb's 0.60 runs low") &&
                 Catch::Contains("--context 4096 --host ddr4-dual-channel` simulates the split"));
}

// fit shows two accountings side by side, the calculator's and llama.cpp's own, and the latter
// decides, as run --model and plan place by it (issue 25: fit said "NO, 3.20 GiB short" where
// run placed every layer).
TEST_CASE("fit decides by llama.cpp's own accounting, the calculator's beside it", "[fit][cli]") {
  const std::string two = "fit --model llama-3.3-70b --gpu rtx-4090 --gpus 2 --quant Q4_K_M --context 4096";
  const std::string text = test::run_ok(two);
  CHECK_THAT(text, Catch::Contains("fits         calculator NO, 1.85 GiB short; llama.cpp yes") &&
                       Catch::Contains("decides      llama.cpp's own accounting: it fits") &&
                       Catch::Contains("and disagrees)"));
  const std::string json = test::run_ok(two + " --json");
  CHECK_THAT(json, vramsim::test::HasMember("decided_by", "\"engine\"") && vramsim::test::HasMember("fits", "true") &&
                       vramsim::test::HasMember("calculator_fits", "false") && vramsim::test::HasMember("fits_engine_accounting", "true"));
  // One card: neither holds a 70B Q4_K_M.
  const std::string one = test::run_ok("fit --model llama-3.3-70b --gpu rtx-4090 --quant Q4_K_M --json");
  CHECK_THAT(one, vramsim::test::HasMember("fits_engine_accounting", "false") && vramsim::test::HasMember("calculator_fits", "false"));
  // Both hold an 8B; on a unified-memory part no engine is simulated and the calculator decides.
  CHECK_THAT(test::run_ok("fit --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --json"),
             vramsim::test::HasMember("fits_engine_accounting", "true") && vramsim::test::HasMember("calculator_fits", "true"));
  CHECK_THAT(test::run_ok("fit --model llama-3.1-8b --gpu m4-max-128gb --json"),
             vramsim::test::HasMember("decided_by", "\"calculator\"") && vramsim::test::HasMember("engine_accounting", "null"));
}

// Issue 25, "one answer": each contradiction a new user found, now one answer.
TEST_CASE("fit and run agree: 70B Q4_K_M on two RTX 3090s fits, every layer on the GPUs", "[fit][cli][agree]") {
  const std::string setup = "--model llama-3.3-70b --gpu rtx-3090 --gpus 2 --quant Q4_K_M";
  const std::string fit = test::run_ok("fit " + setup + " --json");
  CHECK_THAT(fit, vramsim::test::HasMember("decided_by", "\"engine\"") && vramsim::test::HasMember("fits_engine_accounting", "true"));
  CHECK(test::json_truth(fit, "fits"));
  // The measured setup (llama-bench rows of 2x3090 70B Q4_K_M run fully on the GPUs): run places it so.
  CHECK_THAT(test::run_ok("run " + setup + " --set workload.requests=1"),
             Catch::Contains("every layer on the GPU") && Catch::Contains("llama.cpp flags: -ngl 99 -ts 41,40 -c 4096"));
  // fit's largest context is one run places every layer at, and one token more is refused by both.
  const auto most = static_cast<long long>(test::json_number(fit, "max_context_tokens"));
  CHECK(most > 16384);
  CHECK_THAT(test::run_ok("run " + setup + " --context " + std::to_string(most) + " --set workload.requests=1"),
             Catch::Contains("-ngl 99"));
  const std::string over = test::run_ok("fit " + setup + " --context " + std::to_string(most + 1) + " --json");
  CHECK_FALSE(test::json_truth(over, "fits"));
  CHECK_THAT(test::run_ok("run " + setup + " --context " + std::to_string(most + 1) + " --set workload.requests=1"),
             !Catch::Contains("-ngl 99"));
}

TEST_CASE("fit and run agree: 70B Q4_K_M on one 48 GB card at 16K context", "[fit][cli][agree]") {
  const std::string setup = "--model llama-3.3-70b --gpu rtx-6000-ada --quant Q4_K_M --context 16384";
  const std::string fit = test::run_ok("fit " + setup + " --json");
  CHECK(test::json_truth(fit, "fits"));
  CHECK_THAT(fit, vramsim::test::HasMember("calculator_fits", "false"));  // the calculator's margins, shown, not deciding
  CHECK(test::json_number(fit, "max_context_tokens") >= 16384);
  CHECK_THAT(test::run_ok("run " + setup + " --set workload.requests=1"),
             Catch::Contains("every layer on the GPU") && Catch::Contains("llama.cpp flags: -ngl 99 -c 16384"));
}

TEST_CASE("fit, run and plan share one default context: 4096 tokens", "[fit][cli][agree]") {
  const std::string names = "--model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M";
  CHECK_THAT(test::run_ok("fit " + names + " --json"), vramsim::test::HasMember("context_tokens", "4096"));
  CHECK_THAT(test::run_ok("run " + names + " --set workload.requests=1"), Catch::Contains("-ngl 99 -c 4096\n"));
  CHECK_THAT(test::run_ok("plan " + names + " --host ddr5-dual-channel -j 2"), Catch::Contains("-ngl 99 -c 4096\n"));
  // A model whose window is shorter gets its window.
  CHECK_THAT(test::run_ok("fit --model llama-2-7b --gpu rtx-4090 --json"), vramsim::test::HasMember("context_tokens", "4096"));
}

TEST_CASE("suggested contexts are typed: multiples of 1,024, powers of two below", "[fit]") {
  CHECK(typed_context(127229) == 126976);
  CHECK(typed_context(2048) == 2048);
  CHECK(typed_context(1023) == 512);
  CHECK(typed_context(257) == 256);
  CHECK(typed_context(1) == 1);
}

TEST_CASE("a unified-memory part that does not fit is not told to pass --host", "[fit][cli]") {
  const std::string out = test::run_ok("fit --model deepseek-v3 --gpu m2-ultra-192gb");
  CHECK_THAT(out, !Catch::Contains("pass --host") && Catch::Contains("there is no other RAM to offload to") &&
                      Catch::Contains("decides      the calculator (a unified-memory part: `run` and `plan` judge its fit by it too)"));
  test::check_usage_error("fit --model deepseek-v3 --gpu m2-ultra-192gb --host ddr5-dual-channel", "leave out --host");
}

// Item 5, honest inputs.
TEST_CASE("MTP speculative decoding needs a model with an MTP head", "[fit][cli][errors]") {
  const std::string mtp = " --set 'engine.speculative={kind: mtp, draft_tokens: 4, acceptance: 0.6, head: 100MiB}'";
  test::check_usage_error("run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M" + mtp,
                          "engine.speculative.kind: kind: mtp drafts with the model's multi-token-prediction head, and "
                          "llama-3.1-8b has none (its model file has no mtp_head: true)");
  // The case study's model has one (its scenarios decode with MTP).
  CHECK_THAT(test::run_ok("run " + (test::catalogue().root() / "scenarios" / "moe125b-rtx5090-gen3-shared.yaml").string() +
                          " --set workload.requests=2"),
             Catch::Contains("requests"));
}

TEST_CASE("a quant applied to a natively MXFP4 model is warned about, by fit and run", "[fit][cli]") {
  const auto fit = test::run_vramsim("fit --model gpt-oss-20b --gpu rtx-4090 --quant Q4_K_M");
  CHECK(fit.status == 0);
  CHECK_THAT(fit.err, Catch::Contains("warning: gpt-oss-20b was released in MXFP4 (4.25 bits/weight): its experts sized as "
                                      "Q4_K_M (4.85 bits/weight) describe a re-quantized file"));
  // Printed once, not again for the engine's accounting.
  CHECK(fit.err.find("warning") == fit.err.rfind("warning"));
  const auto run = test::run_vramsim("run --model gpt-oss-20b --gpu rtx-4090 --quant Q4_K_M --set workload.requests=1");
  CHECK_THAT(run.err, Catch::Contains("warning: gpt-oss-20b was released in MXFP4"));
  CHECK_THAT(test::run_vramsim("fit --model gpt-oss-20b --gpu rtx-4090").err, !Catch::Contains("warning"));
}
