#include "reports/validation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <sstream>

#include "core/config_reader.h"
#include "sim/stats.h"

namespace vramsim::reports {

using config::MapReader;
using config::Node;

namespace {

Tolerance parse_tolerance(const Node& n, const std::string& path) {
  const std::string text = n.is_scalar() ? n.text() : "";
  Tolerance t;
  std::istringstream in(text);
  double v = 0;
  std::string unit;
  if (!(in >> v) || v < 0) config::fail(n, path, "expected a tolerance like \"10%\" or \"0.015 abs\", got " + n.describe());
  if (text.back() == '%') {
    t.value = v / 100.0;
  } else if ((in >> unit) && unit == "abs") {
    t.value = v;
    t.absolute = true;
  } else {
    config::fail(n, path, "expected a tolerance like \"10%\" or \"0.015 abs\", got " + n.describe());
  }
  return t;
}

const Node* at_path(const Node& root, const std::string& dotted) {
  const Node* cur = &root;
  std::size_t start = 0;
  while (cur && start <= dotted.size()) {
    auto dot = dotted.find('.', start);
    cur = cur->find(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

// A run's name becomes a file name (its --requests-out in validate's temporary folder): a
// plain name, not a path.
bool plain_name(const std::string& name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char ch) {
    return std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.';
  });
}

// The roles docs/validation.md describes: "calibration" may name what it set, "calibration (step_overhead)".
bool known_role(const std::string& role) {
  if (role == "prediction" || role == "fit input" || role == "calibration") return true;
  return role.starts_with("calibration (") && role.ends_with(")");
}

}  // namespace

ValidationSet decode_validation_set(const Node& root) {
  MapReader r(root, "");
  ValidationSet set;
  set.name = r.string("name");
  set.source = r.string("source");
  MapReader runs = r.map("runs");
  for (const auto& [name, node] : runs.node().entries()) {
    if (!plain_name(name))
      throw config::ConfigError(runs.node().key_origin(name), runs.key_path(name),
                                "a run's name must be a plain name (letters, digits, '-', '_', '.', not starting with "
                                "'.'): it names a file");
    MapReader run = runs.map(name);
    ValidationRun v{name, run.string("scenario"), {}};
    if (const Node* s = run.optional_any("set")) {
      if (!s->is_sequence()) config::fail(*s, run.key_path("set"), "expected a list of key=value overrides");
      for (const auto& item : s->items()) v.set.push_back(item.text());
    }
    run.finish();
    set.runs.push_back(v);
  }
  runs.finish();
  const Node& cases = r.any("cases");
  if (!cases.is_sequence()) config::fail(cases, "cases", "expected a list of cases");
  for (std::size_t i = 0; i < cases.items().size(); ++i) {
    MapReader c(cases.items()[i], "cases[" + std::to_string(i) + "]");
    ValidationCase v;
    v.name = c.string("name");
    v.role = c.string("role");
    if (!known_role(v.role))
      c.fail_at("role", "expected prediction, fit input, calibration or \"calibration (PARAMETER)\", got \"" + v.role + "\"");
    v.measured = c.number("measured", config::Lower::NonNegative);
    if (auto kind = c.optional_string("kind")) {
      v.kind = *kind;
      const auto& kinds = case_kinds();
      if (std::find(kinds.begin(), kinds.end(), v.kind) == kinds.end())
        c.fail_at("kind", "expected decode, prefill, offload, serving or multi-card, got \"" + v.kind + "\"");
    }
    if (auto engine = c.optional_string("engine")) {
      v.engine = *engine;
      if (v.engine.empty()) c.fail_at("engine", "expected the name of the engine that measured the row");
    }
    if ((!v.kind.empty() || !v.engine.empty()) && v.role != "prediction" && v.role != "calibration")
      c.fail_at("role", "a case with a kind or an engine follows the corpus protocol: its role is prediction or calibration, got \"" +
                            v.role + "\"");
    if (auto skip = c.optional_string("skip")) {
      v.skip = *skip;
      if (v.skip.empty()) c.fail_at("skip", "expected the reason the case is not simulated");
      // A skipped case names no run: it keeps its figure and its reason, nothing else.
      if (c.has("tolerance")) v.tolerance = parse_tolerance(c.any("tolerance"), c.key_path("tolerance"));
      c.finish();
      set.cases.push_back(v);
      continue;
    }
    v.tolerance = parse_tolerance(c.any("tolerance"), c.key_path("tolerance"));
    if (c.has("bucket")) {
      const Node& b = c.any("bucket");
      if (!b.is_sequence() || b.items().size() != 2) c.fail_at("bucket", "expected [lo, hi) overflow bounds");
      double bound[2] = {0, 0};
      for (int k = 0; k < 2; ++k) {
        const Node& item = b.items()[static_cast<std::size_t>(k)];
        const auto value = item.is_scalar() ? config::parse_number(item.text()) : std::nullopt;
        if (!value)
          config::fail(item, c.key_path("bucket") + "[" + std::to_string(k) + "]",
                       "expected a number (a pcie_overflow fraction), got " + item.describe());
        bound[k] = *value;
      }
      if (!(bound[0] < bound[1]))
        c.fail_at("bucket", "[lo, hi) must have lo below hi, got [" + b.items()[0].text() + ", " + b.items()[1].text() +
                                "]: no request could fall in it");
      v.bucket = {bound[0], bound[1]};
      v.run = c.string("runs");
      if (v.run != "all") c.fail_at("runs", "bucket cases use every run: expected \"all\"");
    } else {
      v.run = c.string("run");
      v.metric = c.string("metric");
      v.metric_origin = c.node().find("metric")->origin();
      v.metric_key = c.key_path("metric");
      bool known = false;
      for (const auto& run : set.runs) known = known || run.name == v.run;
      if (!known) c.fail_at("run", "no run named \"" + v.run + "\" in `runs`");
    }
    c.finish();
    set.cases.push_back(v);
  }
  r.finish();
  return set;
}

namespace {
// "rtx-4090", "2x rtx-3090", "rtx-4090 + rtx-3090" from a run summary's `cards` (each `gpu`).
std::string cards_of(const Node& summary) {
  const Node* cards = summary.find("cards");
  if (!cards || !cards->is_sequence()) return {};
  std::vector<std::string> gpus;
  for (const Node& c : cards->items())
    if (const Node* g = c.find("gpu"); g && g->is_scalar()) gpus.push_back(g->text());
  return cards_label(gpus);
}
}  // namespace

std::string cards_label(const std::vector<std::string>& cards) {
  if (cards.empty()) return {};
  if (std::all_of(cards.begin(), cards.end(), [&](const std::string& c) { return c == cards.front(); }))
    return cards.size() == 1 ? cards.front() : std::to_string(cards.size()) + "x " + cards.front();
  std::string text;
  for (const auto& c : cards) text += (text.empty() ? "" : " + ") + c;
  return text;
}

std::vector<CaseResult> evaluate(const ValidationSet& set, const std::map<std::string, RunOutput>& outputs) {
  std::vector<CaseResult> results;
  for (const auto& c : set.cases) {
    CaseResult r;
    r.spec = &c;
    if (!c.skip.empty()) {  // not simulated: neither a prediction nor a failure
      r.skipped = true;
      r.pass = true;
      results.push_back(r);
      continue;
    }
    if (c.bucket) {
      std::vector<double> decode;
      for (const auto& [name, out] : outputs)
        for (const auto& [overflow, tok_s] : out.requests)
          if (overflow >= c.bucket->first && overflow < c.bucket->second) decode.push_back(tok_s);
      r.samples = decode.size();
      if (!decode.empty()) r.predicted = sim::percentile(decode, 0.5);
    } else if (auto it = outputs.find(c.run); it != outputs.end()) {
      r.card = cards_of(it->second.summary);
      const Node* n = at_path(it->second.summary, c.metric);
      if (!n)
        throw config::ConfigError(c.metric_origin, c.metric_key,
                                  "\"" + c.metric + "\" names no value in run " + c.run + "'s --json output (a mistyped path?)");
      if (n->is_map() || n->is_sequence())
        throw config::ConfigError(c.metric_origin, c.metric_key,
                                  "\"" + c.metric + "\" is " + n->describe() + " in run " + c.run +
                                      "'s --json output, not a number: name one of its values (e.g. " + c.metric + "." +
                                      (n->is_map() && !n->entries().empty() ? n->entries().front().first : std::string("...")) + ")");
      if (n->is_scalar()) {  // null: the run has no such figure (e.g. no decode step): none predicted
        const auto value = config::parse_number(n->text());
        if (!value)
          throw config::ConfigError(c.metric_origin, c.metric_key,
                                    "\"" + c.metric + "\" is " + n->describe() + " in run " + c.run + "'s --json output, not a number");
        r.predicted = *value;
      }
    }
    if (r.predicted) {
      if (c.tolerance.absolute || c.measured == 0) {
        r.error = *r.predicted - c.measured;
        r.pass = std::fabs(r.error) <= c.tolerance.value + 1e-12;
      } else {
        r.error = *r.predicted / c.measured - 1.0;
        r.pass = std::fabs(r.error) <= c.tolerance.value + 1e-12;
      }
    }
    results.push_back(r);
  }
  return results;
}

const std::vector<std::string>& case_kinds() {
  static const std::vector<std::string> kinds = {"decode", "prefill", "offload", "serving", "multi-card"};
  return kinds;
}

namespace {
ErrorGroup error_group(std::string name, std::vector<double> errors) {
  ErrorGroup g;
  g.group = std::move(name);
  g.rows = errors.size();
  if (!errors.empty()) {
    g.max = *std::max_element(errors.begin(), errors.end());
    g.median = sim::percentile(std::move(errors), 0.5);
  }
  return g;
}
}  // namespace

PredictionSummary summarize_predictions(const std::vector<CaseResult>& results) {
  PredictionSummary s;
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_kind, by_engine, by_card;
  std::map<std::string, std::map<std::string, std::vector<double>>> by_card_kind;
  std::vector<std::string> engines;  // first-appearance order
  for (const auto& r : results) {
    const auto& c = *r.spec;
    if (!c.kind.empty() || !c.engine.empty()) s.present = true;
    if (r.skipped) {
      ++s.skipped;
      continue;
    }
    if (c.role != "prediction") {
      if (c.role.starts_with("calibration")) ++s.calibration;
      continue;
    }
    if (!r.predicted || c.measured == 0) continue;
    const double e = std::fabs(*r.predicted / c.measured - 1.0);
    all.push_back(e);
    if (!c.kind.empty()) by_kind[c.kind].push_back(e);
    if (!c.engine.empty()) {
      if (!by_engine.count(c.engine)) engines.push_back(c.engine);
      by_engine[c.engine].push_back(e);
    }
    if (!r.card.empty()) {
      by_card[r.card].push_back(e);
      if (!c.kind.empty()) by_card_kind[r.card][c.kind].push_back(e);
    }
  }
  s.all = error_group("all", all);
  for (const auto& k : case_kinds())
    if (auto it = by_kind.find(k); it != by_kind.end()) s.by_kind.push_back(error_group(k, it->second));
  for (const auto& e : engines) s.by_engine.push_back(error_group(e, by_engine[e]));
  for (auto& [card, errors] : by_card) {
    PredictionSummary::Card g{error_group(card, errors), {}};
    for (const auto& k : case_kinds())
      if (auto it = by_card_kind[card].find(k); it != by_card_kind[card].end()) g.by_kind.push_back(error_group(k, it->second));
    s.by_card.push_back(std::move(g));
  }
  return s;
}

}  // namespace vramsim::reports
