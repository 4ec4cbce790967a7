// The metric table (reports/run_metrics.h) against what reads or writes the run's figures:
// the JSON writer (real `vramsim run` outputs), results.csv's columns, the sweep report and
// docs/json-schema.md's `vramsim run --json` section.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/json_value.h"
#include "reports/run_metrics.h"
#include "tests/test_support.h"

using namespace vramsim;
using reports::find_run_metric;
using reports::run_metrics;

namespace {

// Every leaf of `v` as a dotted path, arrays as "[]", in document order. A null object field
// is a leaf at the object's path (e.g. `per_client_tok_s` in an open loop).
void leaves(const json::Value& v, const std::string& path, std::vector<std::string>& out) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.members()) leaves(x, path.empty() ? k : path + "." + k, out);
  } else if (v.is_array()) {
    if (v.items().empty() || !(v.items().front().is_object() || v.items().front().is_array()))
      out.push_back(path + "[]");
    else
      for (const auto& x : v.items()) leaves(x, path + "[]", out);
  } else {
    out.push_back(path);
  }
}

// Whether `path` is a metric, or (a null) an object whose fields are metrics.
bool known(const std::string& path) {
  if (find_run_metric(path)) return true;
  for (const auto& m : run_metrics())
    if (m.path.substr(0, path.size() + 1) == path + ".") return true;
  return false;
}

std::size_t table_index(const std::string& path) {
  for (std::size_t i = 0; i < run_metrics().size(); ++i)
    if (run_metrics()[i].path == path || run_metrics()[i].path.substr(0, path.size() + 1) == path + ".") return i;
  return run_metrics().size();
}

// Scenarios under configs/scenarios/ with overrides: between them every metric is written.
const char* kRuns[] = {
    "moe125b-rtx5090-gen3-exclusive.yaml --set workload.requests=10",
    "moe125b-rtx5090-gen3-exclusive.yaml --set workload.requests=4 --set engine.slot_scheduling=batched",
    "qwen3-235b-5090-hybrid-xeon.yaml --set workload.requests=3",
    "llama70b-2x4090-pipeline.yaml --set workload.requests=3",
    "llama8b-h100-vllm.yaml --set workload.requests=20",
};

}  // namespace

TEST_CASE("metric table: every field a run writes is a metric, in the table's order, and every metric is written", "[metrics]") {
  std::set<std::string> seen;
  for (const char* args : kRuns) {
    INFO(args);
    const std::string out = test::run_ok(std::string("run ") + VRAMSIM_TEST_CONFIGS_DIR + "/scenarios/" + args + " --json");
    auto doc = json::parse(out);
    REQUIRE(doc);
    std::vector<std::string> paths;
    leaves(*doc, "", paths);
    std::size_t last = 0;
    std::set<std::string> here;
    for (const auto& p : paths) {
      INFO(p);
      CHECK(known(p));
      if (!here.insert(p).second) continue;  // an array's next element
      const std::size_t at = table_index(p);
      CHECK(at >= last);  // the JSON writes the fields in the table's order
      last = at;
      seen.insert(p);
    }
  }
  for (const auto& m : run_metrics()) {
    INFO(m.path << " is in the table but no run wrote it");
    CHECK(seen.count(std::string(m.path)) == 1);
  }
}

TEST_CASE("metric table: results.csv's columns are metrics", "[metrics]") {
  for (const auto path : reports::csv_metric_paths()) {
    INFO(path);
    CHECK(find_run_metric(path) != nullptr);
  }
}

namespace {

// docs/json-schema.md's run section: each table's rows as {field, {unit, whole row}}, by the
// heading above the table ("Top-level object", "`vram`", "Distribution object").
struct DocRow {
  std::string unit;
  std::string text;
};
using DocTables = std::map<std::string, std::map<std::string, DocRow>>;

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      out.push_back(cell.substr(cell.find_first_not_of(' ') == std::string::npos ? 0 : cell.find_first_not_of(' ')));
      while (!out.back().empty() && out.back().back() == ' ') out.back().pop_back();
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return out;
}

DocTables run_section_tables() {
  std::ifstream in(std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/../docs/json-schema.md");
  REQUIRE(in);
  DocTables tables;
  std::string line, heading;
  bool in_run = false;
  int unit_column = -1;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_run = line == "## vramsim run --json";
    if (!in_run) continue;
    if (line.rfind("### ", 0) == 0) {
      heading = line.substr(4);
      unit_column = -1;
      continue;
    }
    if (line.empty() || line[0] != '|' || line.rfind("|---", 0) == 0) continue;
    const auto row = cells(line);
    if (row.empty()) continue;
    if (row[0] == "Field") {
      unit_column = -1;
      for (std::size_t i = 0; i < row.size(); ++i)
        if (row[i] == "Unit") unit_column = static_cast<int>(i);
      continue;
    }
    if (row[0].size() < 3 || row[0].front() != '`') continue;
    const std::string field = row[0].substr(1, row[0].find('`', 1) - 1);
    tables[heading][field] = {unit_column >= 0 && unit_column < static_cast<int>(row.size()) ? row[unit_column] : "", line};
  }
  return tables;
}

}  // namespace

TEST_CASE("metric table: docs/json-schema.md documents every metric with its unit, and nothing else", "[metrics]") {
  const DocTables docs = run_section_tables();
  REQUIRE(docs.count("Top-level object") == 1);
  const auto& top = docs.at("Top-level object");
  std::set<std::string> documented_tops;
  for (const auto& m : run_metrics()) {
    const std::string path(m.path);
    INFO(path);
    const std::size_t dot = path.find('.');
    std::string head = path.substr(0, dot);
    if (head.size() > 2 && head.substr(head.size() - 2) == "[]") head.resize(head.size() - 2);
    documented_tops.insert(head);
    REQUIRE(top.count(head) == 1);  // every metric's object (or the metric) has a top-level row
    const DocRow& head_row = top.at(head);
    if (dot == std::string::npos) {
      CHECK(head_row.unit == m.unit);
      continue;
    }
    const std::string rest = path.substr(dot + 1);
    const std::string field = rest.substr(0, rest.find('.'));
    std::string last = path.substr(path.rfind('.') + 1);
    if (last.size() > 2 && last.substr(last.size() - 2) == "[]") last.resize(last.size() - 2);
    const auto section = docs.find("`" + head + "`");
    if (section != docs.end()) {
      REQUIRE(section->second.count(field) == 1);  // a row in the object's own table
      const DocRow& row = section->second.at(field);
      if (rest.find('.') == std::string::npos && !row.unit.empty()) CHECK(row.unit == m.unit);
      if (rest.find('.') != std::string::npos) CHECK(row.text.find("`" + last + "`") != std::string::npos);
    } else if (head_row.text.find("| Distribution |") != std::string::npos) {
      CHECK(docs.at("Distribution object").count(field) == 1);
      CHECK(head_row.unit == m.unit);
    } else {
      // An object documented in its top-level row: the field is named there.
      CHECK(head_row.text.find("`" + last + "`") != std::string::npos);
    }
  }
  // And the converse: every documented top-level field and object field is in the table.
  for (const auto& [field, row] : top) {
    INFO("docs: top-level `" << field << "`");
    CHECK(documented_tops.count(field) == 1);
  }
  for (const auto& [heading, rows] : docs) {
    if (heading.size() < 3 || heading.front() != '`') continue;
    const std::string object = heading.substr(1, heading.size() - 2);
    for (const auto& [field, row] : rows) {
      INFO("docs: `" << object << "." << field << "`");
      CHECK(known(object + "." + field));
    }
  }
}
