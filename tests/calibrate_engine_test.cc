// `vramsim calibrate --from-log LLAMA.log --scenario S.yaml` (issue 25, item 6): llama-server's
// timing lines as `vramsim run --log-format llama-server` writes them, the log's fits
// (calibrate/llama_fit.h), the engine keys solved from them, and the engine file written back,
// which a scenario names as its engine (a file that refines a preset: core/catalogue.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "calibrate/llama_fit.h"
#include "calibrate/log_fit.h"
#include "core/config_reader.h"
#include "tests/test_support.h"

using vramsim::test::fresh_dir;
using vramsim::test::json_number;
using vramsim::test::json_text;
using vramsim::test::read_file;
using vramsim::test::run_vramsim;
namespace fs = std::filesystem;

namespace {

const std::string kScenario = R"(hardware:
  gpu: rtx-4090
  link: pcie-gen4-x16
  host: ryzen-7950x-ddr5
model: llama-3.1-8b
engine: { preset: llama.cpp, weights: { experts: Q4_K_M, other: Q4_K_M } }
workload: { clients: 1, requests: 2, prompt_tokens: 128, gen_tokens: 64 }
)";

// A log of `vramsim run` itself with the engine keys `truth`, prompts of 256 to 2,048 tokens.
fs::path simulated_log(const fs::path& dir, const std::string& truth) {
  std::ofstream(dir / "machine.yaml") << kScenario;
  const fs::path log = dir / "server.log";
  std::string all;
  for (int prompt : {256, 512, 1024, 2048}) {
    const fs::path part = dir / ("part" + std::to_string(prompt) + ".log");
    auto r = run_vramsim("run " + (dir / "machine.yaml").string() + " " + truth + " --set workload.prompt_tokens=" +
                         std::to_string(prompt) + " --set workload.gen_tokens=128 --log-format llama-server --log " + part.string());
    INFO(r.err);
    REQUIRE(r.status == 0);
    all += read_file(part);
  }
  std::ofstream(log) << all;
  return log;
}

vramsim::calibrate::ParsedLog parse(const std::string& text) {
  std::istringstream in(text);
  return vramsim::calibrate::parse_log(in, "test.log");
}

}  // namespace

TEST_CASE("run --log-format llama-server writes llama-server's timing lines, which calibrate reads back", "[calibrate][llama]") {
  const fs::path dir = fresh_dir("llama-server-log");
  std::ofstream(dir / "machine.yaml") << kScenario;
  auto r = run_vramsim("run " + (dir / "machine.yaml").string() + " --log-format llama-server --log " + (dir / "a.log").string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string log = read_file(dir / "a.log");
  // As tools/server/server.cpp prints them (print_timings), one block per request.
  CHECK_THAT(log, Catch::Matches("(prompt eval time = +[0-9]+\\.[0-9]{2} ms / +128 tokens \\( +[0-9]+\\.[0-9]{2} ms per token, +"
                                 "[0-9]+\\.[0-9]{2} tokens per second\\)\n"
                                 " {7}eval time = +[0-9]+\\.[0-9]{2} ms / +64 tokens \\( +[0-9]+\\.[0-9]{2} ms per token, +"
                                 "[0-9]+\\.[0-9]{2} tokens per second\\)\n"
                                 " {6}total time = +[0-9]+\\.[0-9]{2} ms / +192 tokens\n){2}"));
  const auto parsed = parse(log);
  REQUIRE(parsed.records.size() == 2);
  CHECK(parsed.unpaired.empty());
  CHECK(parsed.records[0].format == "llama.cpp");
  CHECK(parsed.records[0].steps == 63);  // 64 tokens, the first one the prompt's
  // The strata log stays for MoE models only; another name is refused.
  CHECK(run_vramsim("run " + (dir / "machine.yaml").string() + " --log-format strata").status == 2);
  auto bad = run_vramsim("run " + (dir / "machine.yaml").string() + " --log-format vllm");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("expected \"strata\" or \"llama-server\""));
}

TEST_CASE("the llama.cpp log fit: a line in context and in prompt length, or the mean without a spread", "[calibrate][llama]") {
  using vramsim::calibrate::fit_llama_log;
  // Steps of 10 ms + 1 us per token of context; prompts at 2 ms + 0.1 ms a token.
  std::string text;
  for (int prompt : {100, 300, 500, 700}) {
    const int gen = 101;
    const double context = prompt + gen / 2.0, step = 10e-3 + 1e-6 * context, prompt_s = 2e-3 + 1e-4 * prompt;
    char block[400];
    std::snprintf(block, sizeof block,
                  "prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n"
                  "       eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n",
                  prompt_s * 1e3, prompt, prompt_s * 1e3 / prompt, prompt / prompt_s, step * (gen - 1) * 1e3, gen,
                  step * (gen - 1) * 1e3 / gen, gen / (step * (gen - 1)));
    text += block;
  }
  const auto fit = fit_llama_log(parse(text).records);
  CHECK(fit.requests == 4);
  REQUIRE(fit.decode.ok);
  REQUIRE(fit.decode.coef.size() == 2);
  CHECK(fit.decode.coef[0] == Approx(10e-3).epsilon(1e-3));
  CHECK(fit.decode.coef[1] == Approx(1e-6).epsilon(2e-2));
  CHECK(fit.context == Approx(400 + 50.5));
  CHECK(fit.step_s == Approx(10e-3 + 1e-6 * 450.5).epsilon(1e-3));
  REQUIRE(fit.prompt.ok);
  CHECK_FALSE(fit.prompt_per_token);
  CHECK(fit.prompt_tok_s == Approx(400 / (2e-3 + 1e-4 * 400)).epsilon(1e-3));
  // One prompt length only: the means, no slope.
  const std::string one = text.substr(0, text.find("prompt eval", 10));
  const auto same = fit_llama_log(parse(one + one + one).records);
  REQUIRE(same.decode.ok);
  CHECK(same.decode.coef.size() == 1);
  CHECK(same.prompt_per_token);
  CHECK(same.prompt_tok_s == Approx(100 / (2e-3 + 1e-4 * 100)).epsilon(1e-2));
  // One request: no fit.
  CHECK_FALSE(fit_llama_log(parse(one).records).decode.ok);
}

// The loop closed: a log of a machine whose per-layer cost is 60 us and whose GEMMs reach 0.7 of
// the card, read against the preset's (70.3 us on this card, 0.94), gives those figures back, and the engine
// file written runs the machine's figures.
TEST_CASE("calibrate --scenario solves layer_launch and gpu_compute_efficiency from a llama.cpp log and writes them back",
          "[calibrate][llama]") {
  const fs::path dir = fresh_dir("llama-engine-fit");
  const fs::path log = simulated_log(dir, "--set engine.layer_launch=60us --set engine.gpu_compute_efficiency=0.7");
  const fs::path engine = dir / "measured-engine.yaml";
  auto r = run_vramsim("calibrate --from-log " + log.string() + " --scenario " + (dir / "machine.yaml").string() +
                       " --write-engine " + engine.string() + " --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(json_number(r.out, "requests") == 8);
  CHECK(json_number(r.out, "value", "layer_launch") == Approx(60e-6).epsilon(1e-3));
  CHECK(json_number(r.out, "preset", "layer_launch") == Approx(177173 / 2.52e9));  // the preset's cycles at the 4090's clock
  // The prompt fit is a line through four lengths, read at their mean (960 tokens), which
  // attention makes slightly convex: within 1%.
  CHECK(json_number(r.out, "value", "gpu_compute_efficiency") == Approx(0.7).epsilon(1e-2));
  CHECK(json_text(r.out, "written") == engine.string());
  const std::string written = read_file(engine);
  CHECK_THAT(written, Catch::Contains("\npreset: llama.cpp\nweights: {experts: Q4_K_M, other: Q4_K_M}\n"));
  CHECK_THAT(written, Catch::Contains("\nlayer_launch: 60.0us\n"));

  // The engine file as the scenario's engine: the log's decode step at its mean request.
  std::ofstream(dir / "calibrated.yaml") << std::string(kScenario).replace(kScenario.find("engine: {"),
                                                                           kScenario.find("\nworkload") - kScenario.find("engine: {"),
                                                                           "engine: " + engine.string());
  auto check = [&](const std::string& scenario, const std::string& sets) {
    auto run = run_vramsim("run " + scenario + " --json --set workload.prompt_tokens=960 --set workload.gen_tokens=128 " + sets);
    INFO(run.err);
    REQUIRE(run.status == 0);
    return 1.0 / json_number(run.out, "p50", "decode_tok_s");
  };
  CHECK(check((dir / "calibrated.yaml").string(), "") ==
        Approx(check((dir / "machine.yaml").string(), "--set engine.layer_launch=60us --set engine.gpu_compute_efficiency=0.7")).epsilon(1e-3));
}

TEST_CASE("calibrate --scenario: what cannot be fitted is said, not written, and its options are checked", "[calibrate][llama]") {
  const fs::path dir = fresh_dir("llama-engine-refusals");
  const fs::path log = simulated_log(dir, "--set engine.layer_launch=60us");
  // A machine four times slower to stream its weights than the log's: no per-layer cost
  // could make its step as short as the log's.
  auto slow = run_vramsim("calibrate --from-log " + log.string() + " --scenario " + (dir / "machine.yaml").string() +
                          " --set hardware.gpu.preset=rtx-3060-12gb --write-engine " + (dir / "e.yaml").string());
  INFO(slow.err);
  REQUIRE(slow.status == 0);
  CHECK_THAT(slow.out, Catch::Contains("layer_launch: not fitted: the log's step") &&
                           Catch::Contains("is shorter than the scenario's bytes alone"));
  CHECK_THAT(read_file(dir / "e.yaml"), !Catch::Contains("layer_launch:"));
  // Options that need --scenario, and an engine of another family.
  auto orphan = run_vramsim("calibrate --from-log " + log.string() + " --write-engine " + (dir / "f.yaml").string());
  CHECK(orphan.status == 2);
  CHECK_THAT(orphan.err, Catch::Contains("--write-engine needs --scenario"));
  auto vllm = run_vramsim("calibrate --from-log " + log.string() + " --scenario " + (dir / "machine.yaml").string() +
                          " --set engine.preset=vllm --set engine.weights.experts=BF16 --set engine.weights.other=BF16");
  CHECK(vllm.status == 2);
  CHECK_THAT(vllm.err, Catch::Contains("a llama.cpp log calibrates an engine of the llama.cpp family"));
  // A log of one request: no fit.
  std::ofstream(dir / "one.log") << read_file(log).substr(0, read_file(log).find("prompt eval", 10));
  auto one = run_vramsim("calibrate --from-log " + (dir / "one.log").string() + " --scenario " + (dir / "machine.yaml").string());
  CHECK(one.status == 2);
  CHECK_THAT(one.err, Catch::Contains("the engine fit needs 2 or more"));
}

TEST_CASE("catalogue: a YAML file may refine a preset, and a chain of files naming each other is refused", "[catalogue]") {
  const fs::path dir = fresh_dir("preset-files");
  std::ofstream(dir / "fast.yaml") << "preset: llama.cpp\nlayer_launch: 10us\n";
  std::ofstream(dir / "faster.yaml") << "preset: fast.yaml\nstep_overhead: 0us\n";  // relative to this file
  std::ofstream(dir / "loop.yaml") << "preset: loop.yaml\n";
  auto resolve = [&](const std::string& file) {
    const auto ref = vramsim::config::Node::scalar((dir / file).string(), vramsim::config::Origin{"test", 1, 1});
    return vramsim::test::catalogue().resolve("engines", "engine", ref, "engine");
  };
  const auto faster = resolve("faster.yaml");
  CHECK(faster.find("name")->text() == "llama.cpp");  // from the catalogue entry at the chain's end
  CHECK(faster.find("layer_launch")->text() == "10us");
  CHECK(faster.find("step_overhead")->text() == "0us");
  CHECK_FALSE(faster.find("preset"));
  try {
    resolve("loop.yaml");
    FAIL("accepted");
  } catch (const vramsim::config::ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("a chain of more than 8 files naming each other as `preset:`"));
  }
}
