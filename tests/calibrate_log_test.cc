// `vramsim calibrate --from-log`: strict pairing of an engine's request lines on recorded logs
// (tests/data/logs/README.md), the least-squares fit and its uncertainty, and the command's output.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibrate/log_fit.h"
#include "core/config_tree.h"
#include "core/json_value.h"
#include "tests/test_support.h"

using namespace vramsim;
using vramsim::test::data_path;
using vramsim::test::run_vramsim;

namespace {

calibrate::ParsedLog parse_file(const std::string& name, const calibrate::LogOptions& o = {}) {
  std::ifstream in(data_path("logs/" + name));
  REQUIRE(in);
  return calibrate::parse_log(in, name, o);
}

calibrate::ParsedLog parse_text(const std::string& text, const calibrate::LogOptions& o = {}) {
  std::istringstream in(text);
  return calibrate::parse_log(in, "test.log", o);
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("calibrate log: the case study's real lines make one request", "[calibrate][log]") {
  const auto log = parse_file("case-study.log");
  CHECK(log.lines == 4);
  CHECK(log.unpaired.empty());
  REQUIRE(log.records.size() == 1);
  const auto& r = log.records[0];
  CHECK(r.line == 1);
  CHECK(r.format == "strata");
  CHECK(r.prompt_tokens == 26);
  CHECK(r.prompt_s == Approx(0.043));
  CHECK(r.gen_tokens == 192);
  CHECK(r.decode_s == Approx(1.367));
  CHECK(r.decode_tok_s == Approx(140.5));
  CHECK_FALSE(r.accepted);  // "drafts accepted ..." is elided in the report
  CHECK(r.steps == 191);    // no draft figures: one token per step unless told otherwise, the first the prefill's
  CHECK(r.hits == 23414);
  CHECK(r.lookups == 27131);
  CHECK(r.pcie_reads == 412);
  CHECK(r.routed == 17850);
  CHECK(r.hit_rate == Approx(23414.0 / 27131));
  CHECK(r.pcie_overflow == Approx(412.0 / 17850));
  CHECK(r.misses_per_step == Approx((27131.0 - 23414) / 191));
}

TEST_CASE("calibrate log: only strictly adjacent lines pair", "[calibrate][log]") {
  const auto log = parse_file("adversarial.log");
  // Lines 5-6 (with a timestamp prefix) and 11-12 pair; nothing else does.
  REQUIRE(log.records.size() == 2);
  CHECK(log.records[0].line == 5);
  CHECK(log.records[0].hits == 990);
  CHECK(log.records[1].line == 11);
  CHECK(log.records[1].decode_tok_s == Approx(125.0));
  CHECK(log.records[1].hits == 950);
  std::vector<std::size_t> unpaired;
  for (const auto& u : log.unpaired) unpaired.push_back(u.line);
  CHECK(unpaired == std::vector<std::size_t>{1, 2, 4, 7, 9, 10, 13, 14});
  CHECK(log.unpaired[1].kind == "strata generation line without a cache line right after it");
  CHECK(log.unpaired[0].kind == "strata cache line without a generation line right before it");
}

TEST_CASE("calibrate log: Windows line ends", "[calibrate][log]") {
  const auto log = parse_file("crlf.log");
  REQUIRE(log.records.size() == 1);
  CHECK(log.records[0].routed == 4800);
}

TEST_CASE("calibrate log: llama.cpp server timings", "[calibrate][log]") {
  const auto log = parse_file("llama-server.log");
  REQUIRE(log.records.size() >= 2);
  CHECK(log.records[0].format == "llama.cpp");
  CHECK(log.records[0].line == 8);
  CHECK(log.records[0].prompt_tokens == 13);
  CHECK(log.records[0].prompt_s == Approx(0.04108));
  CHECK(log.records[0].gen_tokens == 38);
  CHECK(log.records[0].decode_tok_s == Approx(38 / 0.36096));
  CHECK_FALSE(log.records[0].has_cache);
  // llama-server counts the first token (the prompt pass's) in its N tokens and times the N - 1
  // decode steps after it.
  CHECK(log.records[0].steps == 37);
  CHECK(log.records[0].step_s == Approx(0.36096 / 37));
  CHECK(log.records[1].gen_tokens == 200);
  // The old llama_print_timings block pairs its prompt eval and eval lines; "N runs" are the steps.
  REQUIRE(log.records.size() == 3);
  CHECK(log.records[2].prompt_tokens == 50);
  CHECK(log.records[2].steps == 99);
  CHECK(log.records[2].step_s == Approx(1.5 / 99));
  CHECK(log.unpaired.empty());
}

TEST_CASE("calibrate log: a malformed number is an error at its line and column", "[calibrate][log]") {
  try {
    parse_file("malformed.log");
    FAIL("no error");
  } catch (const calibrate::InputError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("malformed.log:3:81: error: strata generation line: expected \"ms (\""));
  }
  CHECK_THROWS_AS(parse_text("strata serve: decode expert cache hit rate: 86.3% (23414 hits / -5 lookups); 0 more read by the GPU over PCIe or from another GPU (0% of all 1 routed)\n"),
                  calibrate::InputError);
  // An impossible draft count is refused like an impossible hit count, not dropped.
  CHECK_THROWS_WITH(parse_text("strata serve: prompt 26 tokens = 0 reused + 26 read in 43 ms, 192 generated in 1367 ms (140.5 tok/s), "
                               "drafts accepted 300/228\n"),
                    "test.log:1:1: error: strata generation line: more drafts accepted (300) than drafted (228)");
  CHECK_THROWS_WITH(parse_text("x\nprompt eval time = 1 ms / 2 bananas (...)\n"),
                    Catch::StartsWith("test.log:2:"));
}

// A line whose printed figures contradict its counts is refused at that line; a request that
// looked nothing up has no hit rate; one with no decode step is left out and listed.
TEST_CASE("calibrate log: self-contradicting lines are refused, degenerate requests left out", "[calibrate][log]") {
  const std::string gen = "strata serve: prompt 26 tokens = 0 reused + 26 read in 43 ms, ";
  const std::string cache_ok =
      "strata serve: decode expert cache hit rate: 86.3% (23414 hits / 27131 lookups); 412 more read by the GPU over PCIe "
      "or from another GPU (2.31% of all 17850 routed)\n";
  REQUIRE(parse_text(gen + "192 generated in 1367 ms (140.5 tok/s)\n" + cache_ok).records.size() == 1);
  CHECK_THROWS_WITH(parse_text(gen + "192 generated in 1400 ms (999.0 tok/s)\n" + cache_ok),
                    Catch::StartsWith("test.log:1:1: error: strata generation line: the rate (999.0 tok/s) is not 192 tokens in 1400 ms"));
  CHECK_THROWS_WITH(parse_text(gen + "192 generated in 1367 ms (140.5 tok/s)\nstrata serve: decode expert cache hit rate: 10.0% "
                               "(23414 hits / 27131 lookups); 412 more read by the GPU over PCIe or from another GPU (2.31% of all "
                               "17850 routed)\n"),
                    Catch::Contains("the hit rate (10%) is not 23414 / 27131"));
  CHECK_THROWS_WITH(parse_text(gen + "192 generated in 1367 ms (140.5 tok/s)\nstrata serve: decode expert cache hit rate: 86.3% "
                               "(23414 hits / 27131 lookups); 50000 more read by the GPU over PCIe or from another GPU (280.11% of "
                               "all 17850 routed)\n"),
                    Catch::Contains("more read over PCIe (50000) than routed (17850)"));
  const auto none = parse_text(gen + "192 generated in 1367 ms (140.5 tok/s)\nstrata serve: decode expert cache hit rate: 0.0% "
                               "(0 hits / 0 lookups); 0 more read by the GPU over PCIe or from another GPU (0.00% of all 0 routed)\n");
  REQUIRE(none.records.size() == 1);
  CHECK_FALSE(none.records[0].has_cache);  // no look-up: no hit rate, not 100%
  const auto single = parse_text(gen + "1 generated in 7 ms (142.9 tok/s)\n" + cache_ok);
  CHECK(single.records.empty());
  REQUIRE(single.skipped.size() == 1);
  CHECK(single.skipped[0].line == 1);
}

TEST_CASE("calibrate log: steps from the draft figures", "[calibrate][log]") {
  const std::string pair =
      "strata serve: prompt 26 tokens = 0 reused + 26 read in 40 ms, 192 generated in 1413 ms (135.9 tok/s), drafts accepted 135/232\n"
      "strata serve: decode expert cache hit rate: 87.0% (121045 hits / 139200 lookups); 515 more read by the GPU over PCIe or from another GPU (0.56% of all 92160 routed)\n";
  CHECK(parse_text(pair).records.at(0).steps == 191 - 135);  // the first of the 192 is the prefill's
  calibrate::LogOptions o;
  o.draft_tokens = 4;
  const auto r = parse_text(pair, o).records.at(0);
  CHECK(r.steps == 58);  // 232 drafts / 4 per step
  CHECK(r.step_s == Approx(1.413 / 58));
  CHECK(r.pcie_reads_per_step == Approx(515.0 / 58));
}

TEST_CASE("calibrate log: every line the simulator writes pairs, with its exact counts", "[calibrate][log]") {
  const auto log = parse_file("sim-shared-20.log");
  CHECK(log.unpaired.empty());
  REQUIRE(log.records.size() == 20);
  std::ifstream jsonl(data_path("logs/sim-shared-20.jsonl"));
  std::size_t i = 0;
  for (std::string line; std::getline(jsonl, line); ++i) {
    auto rec = config::parse_yaml(line, "sim-shared-20.jsonl");
    REQUIRE(rec);
    INFO("request " << i);
    CHECK(log.records[i].lookups == std::stoll(rec->find("lookups")->text()));
    CHECK(log.records[i].routed == std::stoll(rec->find("routed")->text()));
    CHECK(log.records[i].pcie_reads == std::stoll(rec->find("pcie_reads")->text()));
    CHECK(log.records[i].hit_rate == Approx(std::stod(rec->find("hit_rate")->text())).epsilon(1e-12));
    CHECK(log.records[i].pcie_overflow == Approx(std::stod(rec->find("pcie_overflow")->text())).epsilon(1e-12));
    // The line prints the engine's figure, every generated token over the decode time; the
    // record's is the tokens after the first (the prefill's) over it.
    const double gen = std::stod(rec->find("gen_tokens")->text());
    CHECK(log.records[i].decode_tok_s == Approx(std::stod(rec->find("decode_tok_s")->text()) * gen / (gen - 1)).margin(0.05));
    CHECK(log.records[i].steps == Approx(std::stod(rec->find("steps")->text())).margin(4));  // drafts, not --draft-tokens: up to 4 short
  }
  CHECK(i == 20);
}

TEST_CASE("least squares: exact data, two regressors", "[calibrate][fit]") {
  std::vector<double> x1, x2, y;
  for (int i = 0; i < 10; ++i) {
    x1.push_back(i);
    x2.push_back((i * 7) % 5);
    y.push_back(3.0 + 2.0 * i - 0.5 * ((i * 7) % 5));
  }
  const auto f = calibrate::least_squares({x1, x2}, y);
  REQUIRE(f.ok);
  CHECK(f.dof == 7);
  CHECK(f.coef[0] == Approx(3.0));
  CHECK(f.coef[1] == Approx(2.0));
  CHECK(f.coef[2] == Approx(-0.5));
  CHECK(f.residual_rms == Approx(0.0).margin(1e-9));
  CHECK(f.r2 == Approx(1.0));
  CHECK_FALSE(calibrate::least_squares({{1, 1, 1, 1}}, {1, 2, 3, 4}).ok);  // the regressor never varies
  CHECK_FALSE(calibrate::least_squares({{1, 2}}, {1, 2}).ok);              // no degree of freedom
}

// A log of 200 requests whose step time is t_fast + c_miss x misses per step plus noise, in
// the engine's own format (times rounded to whole milliseconds, as it prints them).
TEST_CASE("calibrate fit: recovers known parameters from a synthetic log within its uncertainty", "[calibrate][fit]") {
  const double t_fast = 0.0125, c_miss = 170e-6, noise = 40e-6;
  std::ostringstream log;
  std::uint64_t state = 12345;
  auto uniform = [&] {  // a fixed LCG: the same log every time
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (int i = 0; i < 200; ++i) {
    const int gen = 192, steps = gen - 1;  // the first token is the prefill's
    const double misses = 12.0 * uniform();
    // Sum of 4 uniforms: roughly normal, standard deviation `noise`.
    const double e = (uniform() + uniform() + uniform() + uniform() - 2.0) * noise * std::sqrt(3.0);
    const double decode_ms = (t_fast + c_miss * misses + e) * steps * 1e3;
    const long long lookups = 480LL * steps, hits = lookups - std::llround(misses * steps);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "strata serve: prompt 26 tokens = 0 reused + 26 read in 40 ms, %d generated in %.0f ms (%.1f tok/s)\n"
                  "strata serve: decode expert cache hit rate: %.1f%% (%lld hits / %lld lookups); 0 more read by the GPU over PCIe or from another GPU (0.00%% of all %lld routed)\n",
                  gen, decode_ms, gen / decode_ms * 1e3, 100.0 * static_cast<double>(hits) / static_cast<double>(lookups), hits,
                  lookups, lookups);
    log << buf;
  }
  const auto parsed = parse_text(log.str());
  REQUIRE(parsed.records.size() == 200);
  const auto fit = calibrate::fit_step_time(parsed.records, "misses");
  REQUIRE(fit.fit.ok);
  const double se0 = fit.fit.stderr_[0], se1 = fit.fit.stderr_[1];
  CHECK(std::fabs(fit.fit.coef[0] - t_fast) < 3 * se0);
  CHECK(std::fabs(fit.fit.coef[1] - c_miss) < 3 * se1);
  // The uncertainty is informative: a few percent of the values, not a shrug.
  CHECK(se0 < 0.01 * t_fast);
  CHECK(se1 < 0.05 * c_miss);
  // The residuals carry the noise (and the millisecond rounding): RMS near its standard deviation.
  CHECK(fit.fit.residual_rms == Approx(noise).epsilon(0.3));
  // The low-miss filter keeps only those records.
  const auto low = calibrate::fit_step_time(parsed.records, "misses", 6.0);
  CHECK(low.fit.n < 200);
  CHECK(low.fit.n > 50);
}

TEST_CASE("calibrate --from-log --json carries the documented fields", "[calibrate][cli]") {
  const auto r = run_vramsim("calibrate --from-log " + data_path("logs/sim-shared-20.log") + " --draft-tokens 4 --json" +
                             " --records-out calibrate_records.csv");
  REQUIRE(r.status == 0);
  const json::Value out = test::parse_json(r.out);
  for (const char* key : {"requests", "unpaired", "unpaired_lines", "hit_rate", "pcie_overflow", "decode_tok_s", "p50", "step_s",
                          "fit", "t_fast_s", "c_miss_s", "stderr", "residual_rms_s", "fit_pcie", "c_pcie_s", "dof"}) {
    INFO(key);
    CHECK(test::json_member(out, key));
  }
  CHECK(test::json_number(r.out, "requests") == 20);
  CHECK(test::json_number(r.out, "unpaired") == 0);
  CHECK(test::json_member(out, "unpaired_lines")->items().empty());
  CHECK(test::json_number(r.out, "dof") == 18);
  CHECK(test::json_number(r.out, "p50", "hit_rate") == Approx(0.866).margin(0.02));
  CHECK(test::json_number(r.out, "value", "t_fast_s") > 0);
  const std::string csv = read("calibrate_records.csv");
  CHECK_THAT(csv, Catch::StartsWith("line,format,prompt_tokens,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 21);
  // Deterministic: the same log gives the same bytes.
  CHECK(run_vramsim("calibrate --from-log " + data_path("logs/sim-shared-20.log") + " --draft-tokens 4 --json").out == r.out);
}

// The text output gives a fitted time to its standard error's first digit, in one unit, so that
// the recipes' subtractions (docs/calibration.md) can use it as printed.
TEST_CASE("calibrate --from-log: fitted times are printed to the precision of their error", "[calibrate][cli]") {
  const auto text = run_vramsim("calibrate --from-log " + data_path("logs/sim-shared-20.log") + " --draft-tokens 4");
  const auto json = run_vramsim("calibrate --from-log " + data_path("logs/sim-shared-20.log") + " --draft-tokens 4 --json");
  REQUIRE(text.status == 0);
  REQUIRE(json.status == 0);
  const double value = test::json_number(json.out, "value", "t_fast_s"), se = test::json_number(json.out, "stderr", "t_fast_s");
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(se * 1e3))));
  char expected[96];
  std::snprintf(expected, sizeof expected, "t_fast       %.*fms +- %.*fms", decimals, value * 1e3, decimals, se * 1e3);
  CHECK_THAT(text.out, Catch::Contains(expected));
}

TEST_CASE("calibrate --from-log: JSON lines records and the unpaired count", "[calibrate][cli]") {
  const auto r = run_vramsim("calibrate --from-log " + data_path("logs/adversarial.log") + " --json --records-out calibrate_records.jsonl");
  REQUIRE(r.status == 0);
  CHECK(test::json_number(r.out, "requests") == 2);
  CHECK(test::json_number(r.out, "unpaired") == 8);
  const json::Value out = test::parse_json(r.out);
  REQUIRE(test::json_member(out, "fit"));
  CHECK(test::json_member(out, "fit")->is_null());  // two requests cannot carry a two-parameter fit
  const std::string lines = read("calibrate_records.jsonl");
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 2);
  CHECK_THAT(lines, Catch::StartsWith("{\"line\":5,\"format\":\"strata\""));
}

TEST_CASE("calibrate --from-log: bad input exits 2 with the file and line", "[calibrate][cli]") {
  auto r = run_vramsim("calibrate --from-log " + data_path("logs/malformed.log"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("malformed.log:3:81: error:"));
  r = run_vramsim("calibrate --from-log " + data_path("logs/no-pairs.log"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no-pairs.log:2:1: error: no request found"));
  // Every request paired but none decoded (one token each, a simulator-written log): the
  // message says so rather than calling the lines unpaired.
  r = run_vramsim("calibrate --from-log " + data_path("logs/one-token.log"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("one-token.log:4:1: error: no request to fit: the 3 paired requests generated one token or none") &&
                        !Catch::Contains("unpaired"));
  // With unpaired lines too, both are said: pairing them may be what the log needs.
  r = run_vramsim("calibrate --from-log " + data_path("logs/one-token-unpaired.log"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no request to fit: the 3 paired requests generated one token or none") &&
                        Catch::Contains("; 5 lines are unpaired (first: strata generation line without a cache line"));
  // Real llama.cpp output in all its forms is read (the check applies to finite figures, with
  // their 0.01 rounding), and one contradicting line is refused.
  const auto real = run_vramsim("calibrate --from-log " + data_path("logs/llama-real-formats.log") + " --json");
  INFO(real.err);
  CHECK(real.status == 0);
  CHECK(test::json_number(real.out, "requests") == 4);
  CHECK(test::json_number(real.out, "unpaired") == 0);
  // llama.cpp's own per-token and per-second figures must agree with its time and count.
  r = run_vramsim("calibrate --from-log " + data_path("logs/llama-contradiction.log"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("llama-contradiction.log:2:") &&
                        Catch::Contains("128 in 5878 ms is 45.92 ms each and 21.78 per second, not 45.92 and 500.00: the line contradicts itself"));
  r = run_vramsim("calibrate --from-log /nonexistent/engine.log");
  CHECK(r.status == 2);
  r = run_vramsim("calibrate");
  CHECK(r.status == 2);
}

TEST_CASE("least squares: exact on a line, no fit when a figure overflows or a regressor never varies", "[calibrate]") {
  const auto line = calibrate::least_squares({{1, 2, 3, 4}}, {3, 5, 7, 9});
  REQUIRE(line.ok);
  CHECK(line.coef[0] == Approx(1));
  CHECK(line.coef[1] == Approx(2));
  CHECK(line.dof == 2);
  // A log line's 1e300 ms decode time overflows the sums: not a fit with infinite errors.
  CHECK_FALSE(calibrate::least_squares({{1, 2, 3, 4}}, {3, 5, 7, 1e300}).ok);
  const auto flat = calibrate::least_squares({{2, 2, 2}}, {1, 2, 3});
  CHECK_FALSE(flat.ok);
  CHECK(flat.dof == 1);  // reported though the fit cannot be made
}

TEST_CASE("calibrate --from-log names a directory as one", "[calibrate][cli][errors]") {
  test::check_usage_error("calibrate --from-log " + data_path("logs"), "is a directory; give the log file");
}

// A fit that cannot be made says why: too few requests, or a regressor that never varies.
TEST_CASE("calibrate --from-log says why a fit was not made", "[calibrate][cli]") {
  const auto path = std::filesystem::temp_directory_path() / ("vramsim_no_pcie_" + std::to_string(::getpid()) + ".log");
  {
    std::ofstream out(path);
    for (int i = 0; i < 4; ++i) {
      const int ms = 1300 + 20 * i, hits = 27000 - 50 * i;
      char rate[32], hit[32];
      std::snprintf(rate, sizeof rate, "%.1f", 192.0 / (ms / 1000.0));
      std::snprintf(hit, sizeof hit, "%.1f", 100.0 * hits / 27131);
      out << "strata serve: prompt 26 tokens = 0 reused + 26 read in 43 ms, 192 generated in " << ms << " ms (" << rate
          << " tok/s), drafts accepted 100/212\n"
          << "strata serve: decode expert cache hit rate: " << hit << "% (" << hits
          << " hits / 27131 lookups); 0 more read by the GPU over PCIe or from another GPU (0.00% of all 17850 routed)\n";
    }
  }
  const auto r = run_vramsim("calibrate --from-log " + path.string() + " --draft-tokens 4");
  std::filesystem::remove(path);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("not fitted: every request in the fit has 0.00 PCIe reads per step, so the line has no slope to fit"));
}

// The simulator drafts no more than the tokens left, so on its own log the steps counted from
// the accepted drafts are exactly the steps it simulated, request by request (docs/calibration.md);
// drafted / N counts its short last steps as fractions of a step.
TEST_CASE("calibrate: on the simulator's own log, steps from the accepted drafts are the simulated steps", "[calibrate][cli]") {
  const std::string scenario = std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-exclusive.yaml";
  const auto dir = std::filesystem::temp_directory_path() / ("vramsim-steps-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string log = (dir / "run.log").string(), requests = (dir / "requests.jsonl").string(),
                    records = (dir / "records.jsonl").string();
  const auto run = run_vramsim("run " + scenario + " --set workload.requests=20 --log-format strata --log " + log +
                               " --requests-out " + requests);
  REQUIRE(run.status == 0);
  const auto cal = run_vramsim("calibrate --from-log " + log + " --records-out " + records);
  REQUIRE(cal.status == 0);
  auto lines = [](const std::string& file) {
    std::vector<config::Node> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) out.push_back(*config::parse_yaml(line, file));
    return out;
  };
  const auto simulated = lines(requests), counted = lines(records);
  std::filesystem::remove_all(dir);
  REQUIRE(simulated.size() == 20);
  REQUIRE(counted.size() == 20);
  int fractional = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    const double steps = std::stod(simulated[i].find("steps")->text());
    CHECK(std::stod(counted[i].find("steps")->text()) == steps);
    fractional += std::stod(counted[i].find("drafted")->text()) / 4 != steps ? 1 : 0;
  }
  CHECK(fractional > 0);  // drafted / 4 would have missed some
}

// A negative intercept is printed as what it is: no step time.
TEST_CASE("calibrate: a negative fitted t_fast is not called a step time", "[calibrate][cli]") {
  const auto r = run_vramsim("calibrate --from-log " + data_path("logs/sim-2x5090-starved-20.log"));
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("(negative: no step time; the data are too far from 0 cache misses to give one)") &&
                        !Catch::Contains("(the step time with no cache misses)"));
}

// Issue 26, item 8: a line cut short inside its marker (a log truncated mid-line) is counted as
// unpaired and reported, never dropped unseen.
TEST_CASE("calibrate log: a truncated request line is counted as unpaired", "[calibrate][log]") {
  const std::string generation =
      "strata serve: prompt 26 tokens = 0 reused + 26 read in 43 ms, 192 generated in 1367 ms (140.5 tok/s), drafts accepted ...\n";
  const auto log = parse_text(generation + "2026-10-01 strata serve: decode expert ca\n");
  CHECK(log.records.empty());
  REQUIRE(log.unpaired.size() == 2);
  CHECK(log.unpaired[0].line == 1);
  CHECK(log.unpaired[0].kind == "strata generation line without a cache line right after it");
  CHECK(log.unpaired[1].line == 2);
  CHECK(log.unpaired[1].kind == "line cut short inside a request line's marker (a truncated log?)");
  // Cut before its generation marker is whole; and a llama.cpp prompt line cut the same way.
  CHECK(parse_text("[info] strata serve: pro\n").unpaired.size() == 1);
  CHECK(parse_text("slot 0 | prompt eval ti").unpaired.size() == 1);
  // Ordinary lines are not truncated markers.
  CHECK(parse_text("strata generate: expert cache auto: 8.31 GiB free\nllama_model_load: done\n").unpaired.empty());
}

// Found by tests/fuzz/engine_log_fuzzer.cc: "eval time = 1e-300 ms / N tokens" gave a record
// whose decode rate (N / time) was infinite, which every statistic then carried. Such a time
// is refused at its column; a zero time still gives no rate, as llama.cpp's own "inf" does.
TEST_CASE("calibrate log: a time too short for its count is refused at its column", "[calibrate][log]") {
  CHECK_THROWS_WITH(parse_text("prompt eval time = 10.00 ms / 2 tokens\neval time = 1e-300 ms / 9223372036854775807 tokens\n"),
                    "test.log:2:13: error: llama.cpp eval time: 9223372036854775807 in 1e-300 ms is an infinite rate: "
                    "the time is too short for any engine to print");
  CHECK_THROWS_WITH(parse_text("prompt eval time =   1e-310 ms / 5000000000000000000 tokens\n"),
                    Catch::StartsWith("test.log:1:22: error: llama.cpp prompt eval time: 5000000000000000000 in 1e-310 ms"));
  const auto zero = parse_text("prompt eval time = 10.00 ms / 2 tokens\neval time = 0.00 ms / 100 tokens\n");
  REQUIRE(zero.records.size() == 1);
  CHECK(zero.records[0].decode_tok_s == 0);
}

// Issue 25: an optional field the published format elides must not make a log unreadable.
TEST_CASE("calibrate log: a draft figure in another form than A/D is left out and reported, not refused", "[calibrate][log]") {
  const std::string cache =
      "strata serve: decode expert cache hit rate: 87.0% (121045 hits / 139200 lookups); 515 more read by the GPU over PCIe or from another GPU (0.56% of all 92160 routed)\n";
  const std::string text =
      "strata serve: prompt 26 tokens = 0 reused + 26 read in 40 ms, 192 generated in 1413 ms (135.9 tok/s), drafts accepted 58.2%\n" +
      cache;
  const auto log = parse_text(text);
  REQUIRE(log.records.size() == 1);
  const auto& r = log.records.front();
  CHECK_FALSE(r.accepted);
  CHECK_FALSE(r.drafted);
  CHECK(r.steps == 191);  // no draft figures: one token a step (LogOptions::tokens_per_step)
  REQUIRE(log.unread.size() == 1);
  CHECK(log.unread.front().line == 1);
  CHECK_THAT(log.unread.front().kind, Catch::Contains("drafts accepted written as \"58.2%\", not A/D"));
  // The A/D form and the elided form are still read as before.
  CHECK(parse_text("strata serve: prompt 26 tokens = 0 reused + 26 read in 40 ms, 192 generated in 1413 ms (135.9 tok/s), "
                   "drafts accepted 135/232\n" + cache).unread.empty());
}
