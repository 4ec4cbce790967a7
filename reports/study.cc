#include "reports/study.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <fmt/format.h>

#include "core/catalogue.h"
#include "core/config_reader.h"
#include "core/config_tree.h"
#include "reports/results_store.h"

namespace vramsim::reports {
namespace {
namespace fs = std::filesystem;
using config::fail;
using config::MapReader;
using config::Node;

constexpr std::size_t kMaxPoints = 100000;
const char* kSectionKinds[] = {"decode", "cliff", "concurrency", "links", "breakdown"};

// "12GiB" -> (12, "GiB"); "4" -> (4, ""). None when the text does not start with a number.
std::optional<std::pair<double, std::string>> split_quantity(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(v)) return std::nullopt;
  return std::make_pair(v, text.substr(used));
}

std::string format_number(double v) { return fmt::format("{:.12g}", v); }

SetValue scalar_value(const Node& n, const std::string& path) {
  if (n.is_null()) return std::nullopt;
  if (!n.is_scalar()) fail(n, path, "expected a single value (or null to unset the key), got " + n.describe());
  return n.text();
}

// A range {from, to, step} or {from, to, factor}: "12GiB".."48GiB" step "4GiB" -> 12GiB, 16GiB, ...
std::vector<SetValue> expand_range(MapReader& r) {
  auto bound = [&](const char* key) {
    const std::string text = r.string(key);
    auto q = split_quantity(text);
    if (!q) r.fail_at(key, "expected a number with an optional unit like \"12GiB\", got \"" + text + "\"");
    return *q;
  };
  const auto [from, unit] = bound("from");
  const auto [to, to_unit] = bound("to");
  if (to_unit != unit) r.fail_at("to", "the unit must be that of `from` (\"" + unit + "\"), got \"" + to_unit + "\"");
  if (to < from) r.fail_at("to", "must not be below `from`");
  const bool geometric = r.has("factor");
  if (geometric == r.has("step")) r.fail_at("step", "give either `step` (from, from+step, ...) or `factor` (from, from*factor, ...)");
  std::vector<SetValue> values;
  if (geometric) {
    const double factor = r.number("factor");
    if (factor <= 1) r.fail_at("factor", "must be greater than 1");
    if (from <= 0) r.fail_at("from", "a geometric range must start above zero");
    for (double v = from; v <= to * (1 + 1e-9); v *= factor) {
      values.push_back(format_number(v) + unit);
      if (values.size() > kMaxPoints) r.fail_at("factor", "too many values");
    }
  } else {
    const auto [step, step_unit] = bound("step");
    if (step_unit != unit) r.fail_at("step", "the unit must be that of `from` (\"" + unit + "\"), got \"" + step_unit + "\"");
    if (step <= 0) r.fail_at("step", "must be greater than zero");
    const double count = std::floor((to - from) / step + 1e-9) + 1;
    if (count > static_cast<double>(kMaxPoints)) r.fail_at("step", "too many values (" + format_number(count) + ")");
    for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i)
      values.push_back(format_number(from + static_cast<double>(i) * step) + unit);
  }
  r.finish();
  return values;
}

std::string short_name(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

Axis decode_axis(MapReader& r) {
  Axis a;
  a.key = r.string("key");
  a.origin = r.node().find("key")->origin();
  a.key_path = r.key_path("key");
  if (a.key.empty() || a.key.front() == '.' || a.key.back() == '.' || a.key.find("..") != std::string::npos ||
      a.key.find('=') != std::string::npos)
    r.fail_at("key", "expected a dotted scenario key like \"hardware.link.preset\"");
  const bool list = r.has("values");
  if (list == r.has("range")) r.fail_at("values", "give either `values: [...]` or `range: {from, to, step}`");
  r.ignore(list ? "range" : "values");  // named as accepted in an unknown-key message
  if (list) {
    const Node& v = r.any("values");
    if (!v.is_sequence() || v.items().empty()) fail(v, r.key_path("values"), "expected a non-empty list of values");
    for (std::size_t i = 0; i < v.items().size(); ++i)
      a.values.push_back(scalar_value(v.items()[i], r.key_path("values") + "[" + std::to_string(i) + "]"));
  } else {
    MapReader range = r.map("range");
    a.values = expand_range(range);
  }
  return a;
}

std::vector<std::string> string_list(MapReader& r, const char* key) {
  const Node& n = r.any(key);
  if (!n.is_sequence()) fail(n, r.key_path(key), "expected a list");
  std::vector<std::string> out;
  for (const auto& item : n.items()) {
    if (!item.is_scalar()) fail(item, r.key_path(key), "expected a list of single values, got " + item.describe());
    out.push_back(item.text());
  }
  return out;
}

Dimension decode_dimension(const Node& node, const std::string& path) {
  MapReader r(node, path);
  Dimension d;
  if (r.has("zip")) {
    const Node& zip = r.any("zip");
    if (!zip.is_sequence() || zip.items().size() < 2) fail(zip, r.key_path("zip"), "expected a list of two or more axes");
    for (std::size_t i = 0; i < zip.items().size(); ++i) {
      MapReader a(zip.items()[i], r.key_path("zip") + "[" + std::to_string(i) + "]");
      d.axes.push_back(decode_axis(a));
      a.finish();
      if (d.axes.back().values.size() != d.axes.front().values.size())
        fail(zip.items()[i], a.path(), "zipped axes step together: " + std::to_string(d.axes.back().values.size()) +
                                           " values here, " + std::to_string(d.axes.front().values.size()) +
                                           " in the first");
    }
  } else {
    d.axes.push_back(decode_axis(r));
    r.ignore("zip");
  }
  r.ignore("labels");
  d.name = r.optional_string("name").value_or(short_name(d.axes.front().key));
  const std::size_t n = d.axes.front().values.size();
  if (r.has("labels")) {
    d.labels = string_list(r, "labels");
    if (d.labels.size() != n)
      r.fail_at("labels", "expected one label per value (" + std::to_string(n) + "), got " + std::to_string(d.labels.size()));
  } else {
    for (const auto& v : d.axes.front().values) d.labels.push_back(v.value_or("unset"));
  }
  r.finish();
  return d;
}

// A scenario reference: a path relative to the study file, or a catalogue scenario name.
std::string resolve_scenario(const std::string& ref, const std::string& study_source, const fs::path& catalogue_root) {
  if (ref.find('/') == std::string::npos && !ref.ends_with(".yaml"))
    return (catalogue_root / "scenarios" / (ref + ".yaml")).lexically_normal().string();
  const fs::path p(ref);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (fs::path(study_source).parent_path() / p).lexically_normal().string();
}

// Why the file at `path` cannot be a scenario (it is not YAML, or not a mapping), else nothing:
// checked when the study is read, so that no point runs and no text that is not a scenario is
// copied into study.json and the report.
std::optional<std::string> not_a_scenario(const std::string& path) {
  auto tree = config::load_yaml_file(path);
  if (!tree) return path + " is not a scenario: " + tree.error().message;
  if (!tree->is_map()) return path + " is not a scenario: it reads as " + tree->describe() + ", not a mapping of keys";
  return std::nullopt;
}

}  // namespace

json::Value Point::overrides() const {
  json::Value o = json::Value::object();
  for (const auto& [k, v] : set) o.set(k, v ? json::Value::string(*v) : json::Value());
  return o;
}

std::size_t Study::point_count() const {
  std::size_t n = 1;
  for (const auto& d : dimensions) n *= d.size();
  return n;
}

std::vector<Point> Study::points() const {
  const std::size_t total = point_count();
  std::vector<Point> out;
  out.reserve(total);
  for (std::size_t i = 0; i < total; ++i) {
    Point p;
    p.index = i;
    p.steps.resize(dimensions.size());
    std::size_t rest = i;
    for (std::size_t d = dimensions.size(); d-- > 0;) {
      p.steps[d] = rest % dimensions[d].size();
      rest /= dimensions[d].size();
    }
    p.scenario = scenario;
    p.set = set;
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      for (const auto& axis : dimensions[d].axes) {
        const SetValue& v = axis.values[p.steps[d]];
        if (axis.key == "scenario" && p.steps[d] < axis.paths.size()) p.scenario = axis.paths[p.steps[d]];
        p.set.emplace_back(axis.key, v);
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string Study::label(const Point& p, std::optional<std::size_t> except) const {
  std::string out;
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    if (except && *except == d) continue;
    if (!out.empty()) out += ", ";
    out += dimensions[d].labels[p.steps[d]];
  }
  return out;
}

Study decode_study(const Node& root, const std::string& source, const fs::path& catalogue_root) {
  MapReader r(root, "");
  Study s;
  s.source = source;
  s.name = r.string("study");
  s.title = r.optional_string("title").value_or(s.name);
  s.description = r.optional_string("description").value_or("");
  s.scenario = resolve_scenario(r.string("scenario"), source, catalogue_root);
  if (!config::path_exists(s.scenario)) r.fail_at("scenario", "no scenario file " + s.scenario);
  if (const auto why = not_a_scenario(s.scenario)) r.fail_at("scenario", *why);
  s.seed = r.optional_integer("seed", 0, std::int64_t{1} << 53);
  std::set<std::string> keys;
  if (auto set = r.optional_map("set")) {
    for (const auto& [key, value] : set->node().entries()) {
      s.set.emplace_back(key, scalar_value(value, set->key_path(key)));
      s.set_origins.push_back(set->node().key_origin(key));
      keys.insert(key);
      set->ignore(key);
    }
    set->finish();
  }
  const Node& axes = r.any("axes");
  if (!axes.is_sequence() || axes.items().empty()) fail(axes, "axes", "expected a list of axes");
  for (std::size_t i = 0; i < axes.items().size(); ++i) {
    const std::string path = "axes[" + std::to_string(i) + "]";
    s.dimensions.push_back(decode_dimension(axes.items()[i], path));
    // Sections name axes by their names (x:): two of one name would leave one unreachable.
    for (std::size_t j = 0; j + 1 < s.dimensions.size(); ++j)
      if (s.dimensions[j].name == s.dimensions.back().name) {
        const Node* named = axes.items()[i].is_map() ? axes.items()[i].find("name") : nullptr;
        fail(named ? *named : axes.items()[i], path + (named ? ".name" : ""),
             "axis name \"" + s.dimensions.back().name + "\" is axes[" + std::to_string(j) +
                 "]'s too: sections pick an axis by its name (give each its own `name:`)");
      }
    // Each step is a distinct point: the same values twice would be one point recorded twice,
    // whatever their spelling (8 and 8.0, 12GiB and 12.0GiB are one value to the config reader).
    // Only a decimal number (digits, one point, an exponent) is respelled, to 17 significant
    // digits so that distinct values stay distinct; hexadecimal and the like stay as written.
    const auto canonical = [](const std::string& v) {
      const auto q = split_quantity(v);
      const std::size_t number_end = v.size() - (q ? q->second.size() : 0);
      if (!q || q->second.find_first_of(" \t") != std::string::npos ||
          v.find_first_not_of("0123456789.eE+-") < number_end)
        return v;
      std::string out = fmt::format("{:.17g}", q->first);
      out += q->second;
      return out;
    };
    std::set<std::string> steps;
    const auto& dim = s.dimensions.back();
    for (std::size_t step = 0; !dim.axes.empty() && step < dim.axes.front().values.size(); ++step) {
      std::string values;
      for (const auto& axis : dim.axes) {
        if (axis.values[step]) {
          values += '=';
          values += canonical(*axis.values[step]);
        } else {
          values += '~';
        }
        values += '\n';
      }
      if (!steps.insert(values).second)
        fail(axes.items()[i], path, "step " + std::to_string(step + 1) + " repeats an earlier step's values");
    }
    for (auto& axis : s.dimensions.back().axes) {
      if (!keys.insert(axis.key).second)
        fail(axes.items()[i], path, "key \"" + axis.key + "\" is set twice (in `set` or another axis)");
      if (axis.key == "scenario")
        for (const auto& v : axis.values) {
          if (!v) fail(axes.items()[i], path, "a scenario axis needs a scenario at every step");
          axis.paths.push_back(resolve_scenario(*v, source, catalogue_root));
          if (!config::path_exists(axis.paths.back())) fail(axes.items()[i], path, "no scenario file " + axis.paths.back());
          if (const auto why = not_a_scenario(axis.paths.back())) fail(axes.items()[i], path, *why);
        }
    }
  }
  if (s.point_count() > kMaxPoints) fail(axes, "axes", "the grid has " + std::to_string(s.point_count()) + " points, more than " + std::to_string(kMaxPoints));
  if (const Node* sections = r.optional_any("sections")) {
    if (!sections->is_sequence()) fail(*sections, "sections", "expected a list of sections");
    for (std::size_t i = 0; i < sections->items().size(); ++i) {
      const Node& item = sections->items()[i];
      const std::string path = "sections[" + std::to_string(i) + "]";
      Section sec;
      std::optional<MapReader> m;
      const Node* kind_node = &item;
      if (item.is_map()) {
        m.emplace(item, path);
        kind_node = &m->any("chart");
      }
      sec.kind = kind_node->text();
      bool known = false;
      for (const char* k : kSectionKinds) known = known || sec.kind == k;
      if (!kind_node->is_scalar() || !known)
        fail(*kind_node, m ? path + ".chart" : path,
             "expected one of decode, cliff, concurrency, links, breakdown, got " + kind_node->describe());
      if (m) {
        sec.title = m->optional_string("title").value_or("");
        if (auto x = m->optional_string("x")) {
          if (sec.kind == "cliff") m->fail_at("x", "the cliff chart's x axis is always the PCIe overflow");
          bool found = false;
          for (std::size_t d = 0; d < s.dimensions.size() && !found; ++d)
            for (const auto& axis : s.dimensions[d].axes)
              if (axis.key == *x || s.dimensions[d].name == *x) {
                sec.x = d;
                found = true;
              }
          if (!found) m->fail_at("x", "no axis has the key or name \"" + *x + "\"");
        }
        m->finish();
      }
      s.sections.push_back(sec);
    }
  }
  r.finish();
  s.inputs.emplace_back(source, read_text(source));
  std::set<std::string> seen;
  for (const auto& p : s.points())
    if (seen.insert(p.scenario).second) s.inputs.emplace_back(p.scenario, read_text(p.scenario));
  return s;
}

Study load_study(const std::string& path, const fs::path& catalogue_root) {
  auto tree = config::load_yaml_file(path);
  if (!tree) throw config::ConfigError(tree.error());
  return decode_study(*tree, path, catalogue_root);
}

json::Value study_manifest(const Study& s) {
  using json::Value;
  Value m = Value::object();
  m.set("study", Value::string(s.name));
  m.set("title", Value::string(s.title));
  m.set("description", Value::string(s.description));
  m.set("source", Value::string(s.source));
  m.set("scenario", Value::string(s.scenario));
  m.set("seed", s.seed ? Value::number_text(std::to_string(*s.seed)) : Value());
  Value set = Value::object();
  for (const auto& [k, v] : s.set) set.set(k, v ? Value::string(*v) : Value());
  m.set("set", set);
  Value dims = Value::array();
  for (const auto& d : s.dimensions) {
    Value dim = Value::object();
    dim.set("name", Value::string(d.name));
    Value axes = Value::array();
    for (const auto& a : d.axes) {
      Value axis = Value::object();
      axis.set("key", Value::string(a.key));
      Value values = Value::array();
      for (const auto& v : a.values) values.push(v ? Value::string(*v) : Value());
      axis.set("values", values);
      axes.push(axis);
    }
    dim.set("axes", axes);
    Value labels = Value::array();
    for (const auto& l : d.labels) labels.push(Value::string(l));
    dim.set("labels", labels);
    dims.push(dim);
  }
  m.set("dimensions", dims);
  Value sections = Value::array();
  for (const auto& sec : s.sections) {
    Value v = Value::object();
    v.set("chart", Value::string(sec.kind));
    v.set("title", Value::string(sec.title));
    v.set("x", Value::number_text(std::to_string(sec.x)));
    sections.push(v);
  }
  m.set("sections", sections);
  Value inputs = Value::array();
  for (const auto& [path, text] : s.inputs) {
    Value in = Value::object();
    in.set("path", Value::string(path));
    in.set("text", Value::string(text));
    inputs.push(in);
  }
  m.set("inputs", inputs);
  Value points = Value::array();
  for (const auto& p : s.points()) points.push(p.overrides());
  m.set("points", points);
  return m;
}

Study study_from_manifest(const json::Value& m) {
  auto need = [](const json::Value* v, const char* what) -> const json::Value& {
    if (!v) throw std::runtime_error(std::string("study.json: missing ") + what);
    return *v;
  };
  auto opt = [](const json::Value& v) -> SetValue { return v.is_null() ? SetValue() : SetValue(v.text()); };
  Study s;
  s.name = need(m.find("study"), "study").text();
  s.title = need(m.find("title"), "title").text();
  s.description = need(m.find("description"), "description").text();
  s.source = need(m.find("source"), "source").text();
  s.scenario = need(m.find("scenario"), "scenario").text();
  const json::Value& seed = need(m.find("seed"), "seed");
  if (!seed.is_null()) s.seed = static_cast<std::int64_t>(seed.number());
  for (const auto& [k, v] : need(m.find("set"), "set").members()) s.set.emplace_back(k, opt(v));
  for (const auto& dim : need(m.find("dimensions"), "dimensions").items()) {
    Dimension d;
    d.name = need(dim.find("name"), "dimension name").text();
    for (const auto& axis : need(dim.find("axes"), "axes").items()) {
      Axis a;
      a.key = need(axis.find("key"), "axis key").text();
      for (const auto& v : need(axis.find("values"), "axis values").items()) a.values.push_back(opt(v));
      d.axes.push_back(std::move(a));
    }
    for (const auto& l : need(dim.find("labels"), "labels").items()) d.labels.push_back(l.text());
    if (d.axes.empty() || d.labels.empty()) throw std::runtime_error("study.json: empty dimension " + d.name);
    s.dimensions.push_back(std::move(d));
  }
  for (const auto& sec : need(m.find("sections"), "sections").items())
    s.sections.push_back({need(sec.find("chart"), "chart").text(), need(sec.find("title"), "title").text(),
                          static_cast<std::size_t>(need(sec.find("x"), "x").number())});
  for (const auto& in : need(m.find("inputs"), "inputs").items())
    s.inputs.emplace_back(need(in.find("path"), "path").text(), need(in.find("text"), "text").text());
  return s;
}

}  // namespace vramsim::reports
