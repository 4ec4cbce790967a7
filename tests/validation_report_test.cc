// `vramsim validate --report DIR` (issue 23): the page of a dataset's results, its log-log
// charts of predicted against measured per kind, and the folder rules (reports/validation_report.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/config_reader.h"
#include "core/subprocess.h"
#include "reports/charts.h"
#include "reports/validation.h"
#include "reports/validation_report.h"
#include "tests/test_support.h"

using vramsim::test::fresh_dir;
using vramsim::test::parse_json;
using vramsim::test::read_file;
using vramsim::test::run_vramsim;
namespace fs = std::filesystem;

namespace {
vramsim::config::Node yaml(const std::string& text) {
  auto n = vramsim::config::parse_yaml(text, "report-test.yaml");
  REQUIRE(n);
  return std::move(n).value();
}

// Occurrences of `what` in `text`.
std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

bool have_gnuplot() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }
}  // namespace

TEST_CASE("validate report: a metric's unit from its name", "[validate][report]") {
  using vramsim::reports::metric_unit;
  CHECK(metric_unit("decode_tok_s.p50") == "tokens/s");
  CHECK(metric_unit("prefill_tok_s.p50") == "tokens/s");
  CHECK(metric_unit("throughput_tok_s") == "tokens/s");
  CHECK(metric_unit("ttft_s.p50") == "seconds");
  CHECK(metric_unit("cache.slots").empty());
  CHECK(metric_unit("gpu.avg_power_w").empty());
  CHECK(metric_unit("expert_hit_rate.p50").empty());
  CHECK(metric_unit("requests.completed").empty());
}

TEST_CASE("charts: a log-log chart is square on one range, with its reference lines", "[validate][report]") {
  vramsim::reports::Chart c;
  c.kind = vramsim::reports::Chart::Kind::Points;
  c.log_scale = true;
  c.series.push_back({"llama.cpp", {100.0, 1000.0}, {150.0, 900.0}, {}, {}});
  c.references = {{1.0, "predicted = measured"}, {1.25, "+-25%"}, {0.75, ""}};
  const std::string script = vramsim::reports::gnuplot_script(c);
  CHECK_THAT(script, Catch::Contains("set logscale xy") && Catch::Contains("set size square"));
  // One range on both axes: the smallest and largest value of either, a factor 1.5 beyond.
  CHECK_THAT(script, Catch::Contains("set xrange [66.6666667:1500]") && Catch::Contains("set yrange [66.6666667:1500]"));
  CHECK_THAT(script, !Catch::Contains("set yrange [0:*]"));  // no 0 on a logarithmic axis
  CHECK_THAT(script, Catch::Contains("1 * x with lines dt 2 lc rgb '#888888' title 'predicted = measured'"));
  CHECK_THAT(script, Catch::Contains("0.75 * x with lines dt 2 lc rgb '#888888' notitle"));
}

TEST_CASE("validate report: a page per dataset, a chart per kind and unit, every case in its kind's table", "[validate][report]") {
  using namespace vramsim::reports;
  const auto set = decode_validation_set(yaml(
      "name: t\nsource: a test dataset\nruns:\n"
      "  a: { scenario: scenarios/llama-bench-tg128.yaml }\n"
      "  b: { scenario: scenarios/llama-bench-tg128.yaml }\n"
      "  c: { scenario: scenarios/llama-bench-tg128.yaml }\n"
      "  e: { scenario: scenarios/llama-bench-tg128.yaml }\n"
      "cases:\n"
      "  - { name: dec-a, run: a, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: prediction, kind: decode, engine: llama.cpp }\n"
      "  - { name: dec-b, run: b, metric: decode_tok_s.p50, measured: 50, tolerance: 25%, role: prediction, kind: decode, engine: vllm }\n"
      "  - { name: dec-c, run: c, metric: decode_tok_s.p50, measured: 100, tolerance: 25%, role: calibration, kind: decode, engine: llama.cpp }\n"
      "  - { name: ttft-e, run: e, metric: ttft_s.p50, measured: 2, tolerance: 25%, role: prediction, kind: serving, engine: vllm }\n"
      "  - { name: not-run, measured: 7, role: prediction, kind: offload, engine: ktransformers, skip: no catalogue host }\n"));
  std::map<std::string, RunOutput> outputs;
  outputs["a"].summary = yaml("{\"decode_tok_s\": {\"p50\": 110}, \"cards\": [{\"gpu\": \"rtx-4090\"}]}");
  outputs["b"].summary = yaml("{\"decode_tok_s\": {\"p50\": 80}}");
  outputs["c"].summary = yaml("{\"decode_tok_s\": {\"p50\": 100}}");
  outputs["e"].summary = yaml("{\"ttft_s\": {\"p50\": 1.5}}");
  const auto results = evaluate(set, outputs);
  const fs::path dir = fresh_dir("validation-report-unit");
  const auto outcome = write_validation_report(dir, set, results);
  const std::string md = read_file(outcome.markdown), html = read_file(outcome.html);
  CHECK_THAT(md, Catch::StartsWith("# Validation: t\n\na test dataset\n\n5 cases, 1 out of tolerance, 1 not simulated."));
  // The prediction summary: three prediction rows simulated (the calibration row left out).
  CHECK_THAT(md, Catch::Contains("(1 calibration rows and 1 rows not simulated left out): 3 rows"));
  CHECK_THAT(md, Catch::Contains("| decode | 2 | 35.0% | 60.0% |"));  // +10% and +60%
  // Each kind its section and table; the skipped row in its own table, with the reason.
  CHECK_THAT(md, Catch::Contains("## decode\n\n2 prediction rows: median |error| 35.0%, max 60.0%."));
  CHECK_THAT(md, Catch::Contains("| dec-a | prediction | llama.cpp | rtx-4090 | 100.0 | 110.0 | 10.0% | yes |"));
  CHECK_THAT(md, Catch::Contains("| dec-c | calibration | llama.cpp | - | 100.0 | 100.0 | 0.0% | yes |"));
  CHECK_THAT(md, Catch::Contains("| ttft-e | prediction | vllm | - | 2.000 | 1.500 | -25.0% | yes |"));
  CHECK_THAT(md, Catch::Contains("## Rows not simulated") && Catch::Contains("| not-run | offload | ktransformers | 7.000 | no catalogue host |"));
  CHECK(count(md, "## offload") == 0);  // no simulated offload row: no section
  if (!have_gnuplot()) {
    CHECK(outcome.charts == 0);
    CHECK_FALSE(outcome.warnings.empty());
    return;
  }
  // decode in tokens/s; serving in seconds.
  CHECK(outcome.charts == 2);
  CHECK(count(html, "<figure class=\"chart\"") == 2);
  // Both pages from one Markdown text: the HTML's charts inlined where the Markdown links them.
  CHECK(count(md, "](charts/chart-") == 2);
  CHECK(count(html, "<img src=\"charts/") == 0);
  CHECK_THAT(html, Catch::Contains("<td>dec-a</td>"));
  CHECK(fs::exists(dir / "charts" / "chart-1.svg"));
  CHECK(fs::exists(dir / "charts" / "chart-2-s.svg"));
  CHECK_THAT(md, Catch::Contains("![decode: predicted against measured (tokens/s)](charts/chart-1.svg)"));
  CHECK_THAT(md, Catch::Contains("![serving: predicted against measured (seconds)](charts/chart-2-s.svg)"));
  // The decode chart's series: each engine's prediction rows, then the calibration rows.
  const std::string svg = read_file(dir / "charts" / "chart-1.svg");
  CHECK(svg.find("llama.cpp") < svg.find("vllm"));
  CHECK(svg.find("vllm") < svg.find("calibration rows"));
}

TEST_CASE("validate --report: writes the page and validation.json, and will not write into another folder's files",
          "[validate][report]") {
  const fs::path dir = fresh_dir("validation-report-cli");
  const fs::path out = dir / "llama-cpp";
  auto r = run_vramsim("validate llama-cpp --jobs 2 --report " + out.string());
  INFO(r.err);
  REQUIRE((r.status == 0 || r.status == 1));  // 1: a case out of its tolerance, still reported
  CHECK_THAT(r.err, Catch::Contains("wrote " + (out / "report.html").string()));
  const auto doc = parse_json(read_file(out / "validation.json"));
  REQUIRE(doc.find("dataset"));
  CHECK(doc.find("dataset")->text() == "llama-cpp");
  CHECK_THAT(read_file(out / "report.md"), Catch::StartsWith("# Validation: llama-cpp\n"));
  // The page opens offline in headless Chromium with every chart drawn (CI installs chromium).
  REQUIRE(vramsim::proc::on_path("chromium"));
  const fs::path html = fs::absolute(out / "report.html");
  const auto browser = vramsim::proc::run({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                           "--user-data-dir=" + (fs::absolute(dir) / "profile").string(),
                                           "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
                                           "--virtual-time-budget=5000", "--dump-dom", "file://" + html.string()});
  INFO(browser.err);
  REQUIRE(browser.exit_code == 0);
  // llama-cpp's cases name no kind: one group, one chart of its tokens/s cases.
  CHECK_THAT(browser.out, Catch::Contains("data-charts-visible=\"1/1\""));
  CHECK_THAT(browser.err, !Catch::Contains("CONSOLE") && !Catch::Contains("Uncaught"));
  // Again into the same folder (validate's own): replaced.
  CHECK(run_vramsim("validate llama-cpp --jobs 2 --report " + out.string()).status == r.status);

  // A folder with files and no validation.json is refused before any simulation, untouched.
  const fs::path other = dir / "mine";
  fs::create_directories(other);
  { std::ofstream(other / "notes.md") << "mine\n"; }
  auto refused = run_vramsim("validate llama-cpp --report " + other.string());
  CHECK(refused.status == 2);
  CHECK_THAT(refused.err, Catch::Contains("the folder holds files and no validation.json"));
  CHECK(read_file(other / "notes.md") == "mine\n");
  CHECK_FALSE(fs::exists(other / "report.md"));
  auto file = run_vramsim("validate llama-cpp --report " + (other / "notes.md").string());
  CHECK(file.status == 2);
  CHECK_THAT(file.err, Catch::Contains("not a folder"));
}
