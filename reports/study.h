// Sweep studies (configs/sweeps/*.yaml): a base scenario, axes over any dotted scenario key,
// and the sections of the report. Decoding checks everything a user can get wrong and throws
// ConfigError at file:line:col; expansion into points is pure and deterministic (docs/studies.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/config_tree.h"
#include "core/json_value.h"

namespace vramsim::reports {

// A key's value at one point: the text handed to `--set key=text`; none unsets the key.
using SetValue = std::optional<std::string>;

// One swept key. `key` is a dotted scenario key, or "scenario" for the base scenario itself.
struct Axis {
  std::string key;
  std::vector<SetValue> values;    // as written in the study
  std::vector<std::string> paths;  // a scenario axis: the files its values name
  config::Origin origin;           // where its `key` is written in the study (for errors)
  std::string key_path;            // that key's path in the study, e.g. "axes[1].key"
};

// One dimension of the grid: a single axis, or several axes zipped (stepped together).
struct Dimension {
  std::string name;                  // what tables and charts call it (`name:`, else the key's last part)
  std::vector<Axis> axes;            // all with the same number of values
  std::vector<std::string> labels;   // one per step (`labels:`, else the first axis's values)
  std::size_t size() const { return labels.size(); }
};

// A report section. Kinds: decode (decode tok/s vs an axis: the capacity-planning curve),
// cliff (decode vs PCIe overflow), concurrency (TTFT and throughput vs an axis), links (bars
// side by side), breakdown (step time: compute / transfer / bubble, stacked).
struct Section {
  std::string kind;
  std::string title;
  std::size_t x = 0;                 // index of the dimension on the x axis (unused by cliff)
};

struct Point {
  std::size_t index = 0;             // position in the grid, first dimension outermost
  std::vector<std::size_t> steps;    // per dimension, the step taken
  std::string scenario;              // path of the scenario file to run
  std::vector<std::pair<std::string, SetValue>> set;  // overrides: the study's `set`, then the axes'
  json::Value overrides() const;     // {"key": "value" | null, ...} in that order: the record's `point`
};

struct Study {
  std::string name;
  std::string title;
  std::string description;
  std::string source;                // the study file
  std::string scenario;              // base scenario path (relative to the working directory)
  std::optional<std::int64_t> seed;
  std::vector<std::pair<std::string, SetValue>> set;  // fixed overrides for every point
  std::vector<config::Origin> set_origins;            // where each of them is written (for errors)
  std::vector<Dimension> dimensions;
  std::vector<Section> sections;
  std::vector<std::pair<std::string, std::string>> inputs;  // (path, text) of the study and scenario files

  std::size_t point_count() const;
  std::vector<Point> points() const;
  // "shared, Gen5" for a point: the labels of every dimension except `except` (or all).
  std::string label(const Point& p, std::optional<std::size_t> except = std::nullopt) const;
};

// Decodes a study. `catalogue_root` resolves a bare scenario name (scenarios/NAME.yaml);
// paths are relative to the study file. Throws config::ConfigError.
Study decode_study(const config::Node& root, const std::string& source, const std::filesystem::path& catalogue_root);
Study load_study(const std::string& path, const std::filesystem::path& catalogue_root);

// The study as JSON (DIR/study.json): everything the report needs without the YAML files.
json::Value study_manifest(const Study& study);
// Reads a manifest back. Throws std::runtime_error on a malformed one.
Study study_from_manifest(const json::Value& manifest);

}  // namespace vramsim::reports
