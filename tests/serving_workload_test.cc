// The serving workload without the event loop: length distributions, request shapes, arrival
// processes, trace and length-table readers, the queue meter.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/config_tree.h"
#include "sim/queue_meter.h"
#include "sim/request_source.h"
#include "test_support.h"
#include "workloads/serving_workload.h"

using namespace vramsim;
using workloads::LengthDist;
using workloads::WorkloadSetup;

namespace {

WorkloadSetup decode(const std::string& yaml, std::int64_t context = 32768) {
  auto tree = config::parse_yaml(yaml, "w.yaml");
  REQUIRE(tree);
  return workloads::decode_workload(config::MapReader(*tree, "workload"), context);
}

std::string decode_error(const std::string& yaml, std::int64_t context = 32768) {
  try {
    decode(yaml, context);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("length distributions: uniform, lognormal, empirical, drawn per request", "[serving]") {
  const auto w = decode("clients: 1\nrequests: 10\nprompt_tokens: { dist: uniform, min: 100, max: 200 }\n"
                        "gen_tokens: { dist: lognormal, median: 150, sigma: 0.5, max: 1000 }\n");
  std::vector<double> prompts, gens;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const auto shape = sim::request_shape(w, 1, i);
    REQUIRE(shape.prompt_tokens >= 100);
    REQUIRE(shape.prompt_tokens <= 200);
    REQUIRE(shape.gen_tokens >= 1);
    REQUIRE(shape.gen_tokens <= 1000);
    prompts.push_back(static_cast<double>(shape.prompt_tokens));
    gens.push_back(static_cast<double>(shape.gen_tokens));
    CHECK(shape.prefix_id == -1);
  }
  CHECK(*std::min_element(prompts.begin(), prompts.end()) == 100);
  CHECK(*std::max_element(prompts.begin(), prompts.end()) == 200);
  std::nth_element(gens.begin(), gens.begin() + 10000, gens.end());
  CHECK(gens[10000] == Approx(150).epsilon(0.03));
  // A pure function of (seed, request): asking in another order gives the same shapes.
  CHECK(sim::request_shape(w, 1, 777).prompt_tokens == sim::request_shape(w, 1, 777).prompt_tokens);
  int differ = 0;
  for (std::uint64_t i = 0; i < 50; ++i) differ += sim::request_shape(w, 2, i).prompt_tokens != sim::request_shape(w, 1, i).prompt_tokens;
  CHECK(differ > 40);

  const std::string table = test::data_path("serving/lengths.csv");
  const auto e = decode("clients: 1\nrequests: 1\nprompt_tokens: { dist: empirical, file: " + table + " }\ngen_tokens: 8\n");
  int short_ones = 0;
  for (std::uint64_t i = 0; i < 4000; ++i) {
    const auto p = sim::request_shape(e, 1, i).prompt_tokens;
    REQUIRE((p == 128 || p == 512));
    short_ones += p == 128;
  }
  CHECK(short_ones / 4000.0 == Approx(0.75).margin(0.03));  // weights 3 : 1
}

TEST_CASE("arrival processes: Poisson keeps its stream, bursty has the documented mean rate", "[serving]") {
  const auto poisson = decode("requests: 10\nprompt_tokens: 26\ngen_tokens: 8\narrival: { process: poisson, rate: 2/s }\n");
  sim::ArrivalClock clock(poisson, 1);
  const sim::CounterRng rng = sim::CounterRng(1).with(0x415252495645ULL);
  for (std::uint64_t r = 0; r < 5; ++r) CHECK(clock.next_gap() == -std::log1p(-rng.uniform(r)) / 2.0);

  const auto bursty = decode("requests: 10\nprompt_tokens: 26\ngen_tokens: 8\n"
                             "arrival: { process: bursty, rate: 10/s, burst: 5s, idle: 15s }\n");
  sim::ArrivalClock b(bursty, 1);
  double t = 0, longest = 0;
  const int n = 400000;
  for (int i = 0; i < n; ++i) {
    const double gap = b.next_gap();
    longest = std::max(longest, gap);
    t += gap;
  }
  CHECK(n / t == Approx(10.0 * 5 / (5 + 15)).epsilon(0.05));  // 2.5 per second on average
  CHECK(longest > 15);                                         // idle spells between bursts
}

TEST_CASE("a request trace is read in arrival order, and a malformed row names file:row and column", "[serving][errors]") {
  const auto rows = workloads::read_request_trace(test::data_path("serving/trace.csv"), "workload.trace");
  REQUIRE(rows.size() == 6);
  CHECK(rows[1].arrival_s == 0.5);
  CHECK(rows[1].prompt_tokens == 2100);
  CHECK(rows[1].prefix_id == 7);
  CHECK(rows[3].prefix_id == -1);
  const std::string bad = test::data_path("serving/trace_bad_row.csv");
  CHECK_THROWS_WITH(workloads::read_request_trace(bad, "workload.trace"),
                    bad + ":3:5: error: workload.trace: prompt_tokens: expected a whole number, got \"12x\"");
  CHECK_THROWS_WITH(workloads::read_request_trace(test::data_path("serving/trace_unordered.csv"), "workload.trace"),
                    Catch::Contains("trace_unordered.csv:3:1: error: workload.trace: arrival_s: earlier than the previous request's"));
  // One prefix, one length: the prompt cache holds what the first row prefilled.
  CHECK_THROWS_WITH(workloads::read_request_trace(test::data_path("serving/trace_prefix_mismatch.csv"), "workload.trace"),
                    Catch::Contains("trace_prefix_mismatch.csv:4:") &&
                        Catch::Contains("prefix_tokens: prefix 3 was 100 tokens at row 3: rows sharing a prefix_id share its length"));
  // A spreadsheet's UTF-8 byte-order mark before the header is not part of the first column's name.
  const auto bom = workloads::read_request_trace(test::data_path("serving/trace_bom.csv"), "workload.trace");
  REQUIRE(bom.size() == 1);
  CHECK(bom[0].prompt_tokens == 100);
}

// A production log's Unix times read as relative ones: the first row is the start.
TEST_CASE("a trace's clock starts at its first row, and an arrival past 1e10 s is refused", "[serving][errors]") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto unix_time = dir / ("vramsim_unix_trace_" + std::to_string(::getpid()) + ".csv");
  const auto far = dir / ("vramsim_far_trace_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(unix_time) << "arrival_s,prompt_tokens,output_tokens\n1718000000,100,8\n1718000000.5,100,8\n";
  std::ofstream(far) << "arrival_s,prompt_tokens,output_tokens\n0,100,8\n1e300,100,8\n";
  const auto rows = workloads::read_request_trace(unix_time.string(), "workload.trace");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].arrival_s == 0);
  CHECK(rows[1].arrival_s == Approx(0.5));
  CHECK_THROWS_WITH(workloads::read_request_trace(far.string(), "workload.trace"),
                    Catch::Contains(":3:1: error: workload.trace: arrival_s: expected seconds up to 1e10"));
  std::filesystem::remove(unix_time);
  std::filesystem::remove(far);
}

TEST_CASE("bad workloads: min > max, outside the context, zero clients, negative rates", "[serving][errors]") {
  const std::string base = "requests: 4\ngen_tokens: 8\n";
  CHECK_THAT(decode_error(base + "clients: 1\nprompt_tokens: { dist: uniform, min: 300, max: 200 }\n"),
             Catch::Contains("w.yaml:4:38: error: workload.prompt_tokens.min: min (300) is greater than max (200)"));
  CHECK_THAT(decode_error(base + "clients: 1\nprompt_tokens: { dist: uniform, min: 10, max: 9000 }\n", 8192),
             Catch::Contains("workload.prompt_tokens.max: lengths up to 9000 tokens lie outside the context window (engine.context is 8192 tokens)"));
  CHECK_THAT(decode_error(base + "clients: 1\nprompt_tokens: { dist: empirical, file: " + test::data_path("serving/lengths_too_long.csv") + " }\n"),
             Catch::Contains("lengths_too_long.csv:3:1: error: workload.prompt_tokens.file: tokens: 40000 lies outside the context window"));
  CHECK_THAT(decode_error(base + "clients: 0\nprompt_tokens: 26\n"), Catch::Contains("workload.clients: must be between 1 and"));
  // Each client is an actor with a stack of its own: beyond 30,000 the OS's map limit would crash the run.
  CHECK_THAT(decode_error(base + "clients: 40000\nprompt_tokens: 26\n"),
             Catch::Contains("workload.clients: at most 30000 closed-loop clients") && Catch::Contains("open-loop"));
  CHECK_THAT(decode_error(base + "prompt_tokens: 26\narrival: { process: poisson, rate: -2/s }\n"),
             Catch::Contains("workload.arrival.rate"));
  CHECK_THAT(decode_error(base + "prompt_tokens: 26\narrival: { process: bursty, rate: 2/s, burst: 1s, idle: -3s }\n"),
             Catch::Contains("workload.arrival.idle"));
  CHECK_THAT(decode_error(base + "clients: 1\nprompt_tokens: 26\nshared_prefix_tokens: 26\n"),
             Catch::Contains("workload.shared_prefix_tokens: the shared prefix (26 tokens) must be shorter than the shortest prompt (26)"));
}

TEST_CASE("queue meter: time-weighted mean, max and a series of at most 100 points", "[serving]") {
  sim::QueueMeter m;
  m.set(0, 0);
  m.set(10, 4);  // 4 waiting from 10 s to 30 s
  m.set(30, 1);  // 1 waiting from 30 s to 40 s
  m.set(40, 0);
  m.finish(100);
  CHECK(m.mean() == Approx((4.0 * 20 + 1.0 * 10) / 100));
  CHECK(m.max() == 4);
  const auto series = m.series();
  CHECK(series.size() <= 100);
  CHECK(series.size() >= 50);
  double area = 0;
  for (std::size_t i = 0; i < series.size(); ++i) area += series[i] * std::min(m.interval_s(), 100 - static_cast<double>(i) * m.interval_s());
  CHECK(area == Approx(90));
}

// Issue 26, item 7: a directory named as a trace is called a directory, not "an empty file".
TEST_CASE("serving: a directory given as a trace is named as one", "[serving][messages]") {
  const std::string dir = test::data_path("serving");
  CHECK_THROWS_WITH(workloads::read_request_trace(dir, "workload.trace"),
                    dir + ": error: workload.trace: \"" + dir + "\" is a directory; expected a CSV file");
}
