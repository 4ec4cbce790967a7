// Bad input of the kinds a review found crashing, hanging, deleting files or writing outside
// its folder: each is refused with exit status 2 and a message that says what is wrong.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/config_tree.h"
#include "tests/test_support.h"

using vramsim::test::check_usage_error;
using vramsim::test::run_vramsim;

namespace {
namespace fs = std::filesystem;

const std::string kConfigs = VRAMSIM_TEST_CONFIGS_DIR;
const std::string kShared = kConfigs + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("vramsim-robustness-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string write(const std::string& name, const std::string& text) {
  const fs::path path = scratch() / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string repeat(const std::string& part, int times, const std::string& separator) {
  std::string out;
  for (int i = 0; i < times; ++i) out += (i ? separator : "") + part;
  return out;
}

}  // namespace

TEST_CASE("a --set key thousands of components deep is refused, not a stack overflow", "[robustness][set]") {
  // 20,000 components once overflowed the stack destroying the tree (and, under a preset's
  // section, took time and memory quadratic in the depth).
  for (const std::string section : {"workload.", "engine."})
    check_usage_error("run " + kShared + " --set " + section + repeat("a", 20000, ".") + "=1",
                      "dot-separated components; at most 64");
  // 64 components are read (and refused as the unknown key they are, not for their depth).
  auto r = run_vramsim("run " + kShared + " --set engine." + repeat("a", 63, ".") + "=1");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("engine.a: unknown key"));

  vramsim::config::Node root;
  auto refused = vramsim::config::apply_override(root, repeat("a", 65, ".") + "=1");
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("--set") && Catch::Contains("65 dot-separated components"));
}

TEST_CASE("YAML nested absurdly deep is refused with its place, at any depth", "[robustness][yaml]") {
  for (int depth : {100, 1000, 100000}) {
    INFO(depth);
    const std::string flow = write("deep-flow.yaml", "a: " + repeat("[", depth, "") + repeat("]", depth, "") + "\n");
    check_usage_error("run " + flow, "nested more than 64 levels deep");
    const std::string maps = write("deep-map.yaml", "a: " + repeat("{a: ", depth, "") + "1" + repeat("}", depth, "") + "\n");
    check_usage_error("run " + maps, "nested more than 64 levels deep");
  }
  std::string block;
  for (int i = 0; i < 3000; ++i) block += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  check_usage_error("run " + write("deep-block.yaml", block), "nested more than 64 levels deep");
}

TEST_CASE("a usage error or a refused scenario leaves existing output files as they were", "[robustness][run]") {
  const std::string trace = write("keep-trace.json", "precious\n");
  check_usage_error("run " + kShared + " --trace " + trace + " --trace-steps 0", "--trace-steps");
  CHECK(read(trace) == "precious\n");

  const std::string requests = write("keep-requests.jsonl", "precious\n");
  const std::string log = write("keep-log.txt", "precious\n");
  check_usage_error("run " + kShared + " --requests-out " + requests + " --log-format strata --log " + log +
                        " --trace " + trace + " --set hardware.gpu.free_vram=1B",
                    "do not fit");
  CHECK(read(requests) == "precious\n");
  CHECK(read(log) == "precious\n");
  CHECK(read(trace) == "precious\n");
  check_usage_error("run " + kShared + " --requests-out " + requests + " --log-format bogus --log " + log, "--log-format");
  CHECK(read(requests) == "precious\n");
  check_usage_error("run " + kShared + " --requests-out " + requests + " --set workload.bogus=1", "workload.bogus");
  CHECK(read(requests) == "precious\n");
  // Nothing is left beside them.
  for (const auto& entry : fs::directory_iterator(scratch()))
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);

  // A run that completes replaces them.
  auto r = run_vramsim("run " + kShared + " --set workload.requests=2 --requests-out " + requests + " --trace " + trace +
                       " --trace-steps 2 --log-format strata --log " + log);
  REQUIRE(r.status == 0);
  CHECK_THAT(read(requests), Catch::StartsWith("{\"id\":"));
  CHECK(read(trace) != "precious\n");
  CHECK(read(log) != "precious\n");
}

TEST_CASE("validate refuses a run name that is a path, and writes nothing outside its folder", "[robustness][validate]") {
  const fs::path target = scratch() / "TRAVERSED";
  fs::remove(fs::path(target.string() + ".jsonl"));
  const std::string name = "../../../../../../../.." + target.string();
  const std::string dataset = write("traverse.yaml", "name: t\nsource: test\nruns:\n  \"" + name +
                                                         "\":\n    scenario: scenarios/moe125b-rtx5090-gen3-shared.yaml\n"
                                                         "    set: [workload.requests=1]\ncases: []\n");
  check_usage_error("validate " + dataset + " --configs " + kConfigs, "traverse.yaml:4:3: error: runs.");
  check_usage_error("validate " + dataset + " --configs " + kConfigs, "must be a plain name");
  CHECK_FALSE(fs::exists(target.string() + ".jsonl"));
  const std::string hidden = write("hidden.yaml", "name: t\nsource: test\nruns:\n  .hidden:\n    scenario: x.yaml\ncases: []\n");
  check_usage_error("validate " + hidden + " --configs " + kConfigs, "runs..hidden: a run's name must be a plain name");
}

TEST_CASE("an input that is not a regular file, or is huge, is refused", "[robustness][files]") {
  check_usage_error("run /dev/zero", "/dev/zero: error: not a regular file");
  const fs::path fifo = scratch() / "fifo.yaml";
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_usage_error("run " + fifo.string(), "not a regular file");  // it blocked forever
  check_usage_error("validate " + fifo.string() + " --configs " + kConfigs, "not a regular file");
  fs::remove(fifo);
  const fs::path big = scratch() / "big.yaml";
  { std::ofstream(big) << "seed: 1\n"; }
  fs::resize_file(big, std::uintmax_t{65} * 1024 * 1024);  // sparse: no disk used
  check_usage_error("run " + big.string(), "larger than the 64 MiB an input file may have");
  fs::remove(big);
}

namespace {
// A dataset with one run of the shared scenario and one case (`case_fields` inside its braces).
std::string dataset(const std::string& file, const std::string& case_fields, const std::string& role = "prediction") {
  return write(file, "name: t\nsource: test\nruns:\n  r:\n    scenario: scenarios/moe125b-rtx5090-gen3-shared.yaml\n"
                     "    set: [workload.requests=2]\ncases:\n  - { name: c, " +
                         case_fields + ", measured: 1, tolerance: 10%, role: " + role + " }\n");
}
}  // namespace

TEST_CASE("validate: malformed bucket bounds, metrics and roles are dataset errors with their place", "[robustness][validate]") {
  const std::string configs = " --configs " + kConfigs;
  check_usage_error("validate " + dataset("b1.yaml", "runs: all, bucket: [x, 1]") + configs,
                    "b1.yaml:8:36: error: cases[0].bucket[0]: expected a number");
  check_usage_error("validate " + dataset("b2.yaml", "runs: all, bucket: [.nan, .inf]") + configs, "cases[0].bucket[0]: expected a number");
  check_usage_error("validate " + dataset("b3.yaml", "runs: all, bucket: [0.5, 0.1]") + configs,
                    "cases[0].bucket: [lo, hi) must have lo below hi");
  check_usage_error("validate " + dataset("r1.yaml", "run: r, metric: decode_tok_s.p50", "foo") + configs,
                    "cases[0].role: expected prediction, fit input, calibration");
  check_usage_error("validate " + dataset("m1.yaml", "run: r, metric: nonexistent.metric") + configs,
                    "m1.yaml:8:32: error: cases[0].metric: \"nonexistent.metric\" names no value in run r's --json output");
  check_usage_error("validate " + dataset("m2.yaml", "run: r, metric: decode_tok_s") + configs,
                    "cases[0].metric: \"decode_tok_s\" is a mapping");
  check_usage_error("validate " + dataset("m3.yaml", "run: r, metric: scenario") + configs, "not a number");
  // A role naming what it calibrated is one of the documented forms.
  auto ok = run_vramsim("validate " + dataset("ok.yaml", "run: r, metric: decode_tok_s.p50", "\"calibration (x)\"") + configs);
  CHECK(ok.status == 1);  // out of tolerance (measured 1), but read
  CHECK_THAT(ok.out, Catch::Contains("calibration (x)"));
}

TEST_CASE("a huge expert_params gives counts that make sense, and its own bound", "[robustness][model]") {
  // 1e15 x 128 experts x 192 layers once printed as -9223372036854775808 parameters.
  auto r = run_vramsim("run " + kShared + " --set model.moe.expert_params=1e15");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("the routed experts alone (2.46e+19 parameters) exceed params.total (110500000000)"));
  CHECK_THAT(r.err, !Catch::Contains("-9223372036854775808"));
  check_usage_error("run " + kShared + " --set model.moe.expert_params=2e15",
                    "--set model.moe.expert_params=2e15: error: model.moe.expert_params: more than 1e15 parameters");
}

TEST_CASE("import-model: zero experts beside a top-k, or a null dtype, is refused naming the key", "[robustness][import]") {
  const std::string dense = R"({"model_type": "mixtral", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 1000, "torch_dtype": "bfloat16")";
  // Once imported as a dense model.
  check_usage_error("import-model " + write("zero-experts.json", dense + R"(, "num_local_experts": 0, "num_experts_per_tok": 2})") +
                        " --name zero",
                    "error: num_local_experts: is 0, but num_experts_per_tok routes each token to 2 experts: an MoE config "
                    "with no experts is not a dense model");
  // Once read as BF16.
  const std::string null_dtype = R"({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 1000, "torch_dtype": null})";
  check_usage_error("import-model " + write("null-dtype.json", null_dtype) + " --name nulled",
                    "error: torch_dtype: is null: the checkpoint's dtype (bfloat16, float16, float32 or float8_e4m3fn) is needed");
  // A dense config whose expert count is 0 and routes nothing stays a dense model.
  CHECK(run_vramsim("import-model " + write("dense-zero.json", dense + R"(, "num_local_experts": 0})") + " --name dense0").status == 0);
}

TEST_CASE("calibrate --from-log: tokens in no time, a rate of nothing, and --tokens-per-step out of range are refused", "[robustness][calibrate]") {
  const std::string gen = "strata serve: prompt 26 tokens = 0 reused + 26 read in 43 ms, ";
  const std::string cache_ok = "strata serve: decode expert cache hit rate: 86.3% (23414 hits / 27131 lookups); 412 more read by the "
                               "GPU over PCIe or from another GPU (2.31% of all 17850 routed)\n";
  const std::string ok_gen = gen + "192 generated in 1367 ms (140.5 tok/s)\n";
  // Accepted once, its step time 0 ns.
  check_usage_error("calibrate --from-log " + write("zero-ms.log", gen + "192 generated in 0 ms (133.7 tok/s)\n" + cache_ok),
                    "zero-ms.log:1:1: error: strata generation line: 192 tokens generated in 0 ms at 133.7 tok/s");
  check_usage_error("calibrate --from-log " + write("no-lookups.log", ok_gen +
                                                                     "strata serve: decode expert cache hit rate: 87.0% (0 hits / 0 lookups); 0 more read by "
                                                                     "the GPU over PCIe or from another GPU (0.00% of all 0 routed)\n"),
                    "no-lookups.log:2:1: error: strata cache line: the hit rate (87%) is of 0 / 0");
  const std::string log = write("ok.log", ok_gen + cache_ok);
  for (const char* value : {"1e-308", "0.5", "65", "1e308"})
    check_usage_error(std::string("calibrate --from-log ") + log + " --tokens-per-step " + value,
                      std::string("--tokens-per-step: expected a number from 1 to 64 (tokens one decode step makes), got \"") + value);
  check_usage_error("calibrate --from-log /dev/zero", "--from-log /dev/zero: not a regular file");
}

// A file is one YAML document: a second one (after `---`) is refused at its line, not ignored.
TEST_CASE("a configuration file with a second YAML document is refused", "[robustness][yaml]") {
  const std::string path = write("two_docs.yaml", "a: 1\n---\nb: 2\n");
  vramsim::test::check_usage_error("run " + path, "two_docs.yaml:2:1: error: a second YAML document (after a `---` line)");
  // A leading `---` starts the one document; a trailing one with nothing after it adds none.
  const auto one = vramsim::config::parse_yaml("---\na: 1\n", "one.yaml");
  CHECK(static_cast<bool>(one));
  CHECK(static_cast<bool>(vramsim::config::parse_yaml("a: 1\n---\n", "trailing.yaml")));
}

// Two outputs naming one file would overwrite each other: refused before the run. An output
// that is a symbolic link keeps the link and replaces the file it names.
TEST_CASE("run: two outputs in one file are refused, and a linked output writes through the link", "[robustness][outputs]") {
  const std::string same = write("same.out", "");
  vramsim::test::check_usage_error("run " + kShared + " --set workload.requests=1 --requests-out " + same + " --trace " + same,
                                   "--trace " + same + ": the same file as --requests-out");
  const std::string target = write("target.jsonl", "old\n");
  const fs::path link = scratch() / "link.jsonl";
  fs::remove(link);
  fs::create_symlink(target, link);
  vramsim::test::run_ok("run " + kShared + " --set workload.requests=2 --requests-out " + link.string());
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  const std::string written = read(target);
  CHECK_THAT(written, !Catch::Contains("old"));
  CHECK(vramsim::test::json_number(written.substr(0, written.find('\n')), "prompt_tokens") > 0);
}

// A malformed input on which yaml-cpp's LoadAll produces documents without end (found by the
// config fuzzer: 2 GB in under a second): the loader asks for two documents at most.
TEST_CASE("a YAML input that makes yaml-cpp's LoadAll loop is read in bounded time and memory", "[robustness][yaml]") {
  std::ifstream in(vramsim::test::data_path("yaml/loadall-endless.yaml"), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(!text.empty());
  const auto parsed = vramsim::config::parse_yaml(text, "loadall-endless.yaml");
  CHECK(static_cast<bool>(parsed));
}

// Issue 26, item 7: every refusal reads like a compiler's, FILE:LINE:COL: error: KEY: what was
// expected (a command-line value names its --set instead of a line).
TEST_CASE("messages: an expert cache larger than the free VRAM names its key and where it was set", "[robustness][messages]") {
  check_usage_error("run " + kShared + " --set engine.expert_cache.size=100000",
                    "--set engine.expert_cache.size=100000: error: engine.expert_cache.size: 100000 slots need ");
  std::string text = read(kShared);
  const std::string was = "expert_cache: { size: auto,";
  REQUIRE(text.find(was) != std::string::npos);
  text.replace(text.find(was), was.size(), "expert_cache: { size: 100000,");
  const std::string file = write("cache-too-big.yaml", text);
  check_usage_error("run " + file, file + ":15:25: error: engine.expert_cache.size: 100000 slots need ");
}

TEST_CASE("messages: a --set that makes a number a mapping is blamed on the --set", "[robustness][messages]") {
  const auto r = run_vramsim("run " + kShared + " --set workload.requests.x=5");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("--set workload.requests.x=5: error: workload.requests: "));
  CHECK_THAT(r.err, !Catch::Contains(kShared + ":"));
}

TEST_CASE("messages: an unknown short option is called unknown", "[robustness][messages]") {
  check_usage_error("run " + kShared + " -z", "vramsim run: error: unknown option -z (see --help)");
  check_usage_error("run -zq " + kShared, "vramsim run: error: unknown option -z (see --help)");
  check_usage_error("sweep -z", "vramsim sweep: error: unknown option -z (see --help)");
}

TEST_CASE("messages: control characters in a value are escaped, never sent to the terminal", "[robustness][messages]") {
  CHECK(vramsim::config::printable("a\x1b[31mb\r\x7f") == "a\\x1b[31mb\\x0d\\x7f");
  CHECK(vramsim::config::printable("two\nlines\t.", true) == "two\nlines\t.");
  std::string text = read(kShared);
  const std::string was = "seed: 1";
  REQUIRE(text.find(was) != std::string::npos);
  text.replace(text.find(was), was.size(), "seed: \"\\e[31m1\\e[0m\"");
  const std::string file = write("escape.yaml", text);
  const auto r = run_vramsim("run " + file);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("seed: expected a whole number, got \"\\x1b[31m1\\x1b[0m\""));
  CHECK(r.err.find('\x1b') == std::string::npos);
  // An option's value quoted in a usage error, too.
  const auto usage = run_vramsim("run " + kShared + " --log-format \"$(printf 'x\\033[2Jy')\"");
  CHECK(usage.status == 2);
  CHECK_THAT(usage.err, Catch::Contains("got \"x\\x1b[2Jy\""));
  CHECK(usage.err.find('\x1b') == std::string::npos);
}
