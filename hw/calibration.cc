#include "hw/calibration.h"

#include <cstdlib>
#include <filesystem>

#include "core/config_reader.h"
#include "core/units.h"

namespace vramsim::hw {
namespace {

using config::Node;

// The node at a.b.c (nullptr when a step is missing or not a mapping), and its dotted path.
const Node* at_path(const Node& root, std::initializer_list<const char*> path, std::string& dotted) {
  const Node* n = &root;
  for (const char* k : path) {
    if (!n->is_map() || !(n = n->find(k))) return nullptr;
    if (!dotted.empty()) dotted += '.';
    dotted += k;
  }
  return n;
}

// The figure at a.b.c, if present (null: absent, as the calibrator writes unmeasured ones);
// a quantity with its unit, or a plain number without `dim`.
std::optional<double> figure(const Node& root, std::initializer_list<const char*> path, std::optional<units::Dimension> dim,
                             const std::string& file) {
  std::string dotted;
  const Node* n = at_path(root, path, dotted);
  if (!n || n->is_null()) return std::nullopt;
  std::optional<double> v;
  if (n->is_scalar() && dim) {
    v = units::parse(n->text(), *dim);
  } else if (n->is_scalar()) {
    char* end = nullptr;
    const double x = std::strtod(n->text().c_str(), &end);
    if (end && *end == '\0' && !n->text().empty()) v = x;
  }
  if (!v || !(*v > 0))
    config::fail(*n, dotted, "expected a positive measured figure" +
                                 std::string(!dim                                ? ""
                                             : *dim == units::Dimension::Bandwidth ? " with its unit (e.g. 12.8GB/s)"
                                             : *dim == units::Dimension::Time      ? " with its unit (e.g. 3.1us)"
                                                                                   : " with its unit") +
                                 " in " + file + ", got \"" + (n->is_scalar() ? n->text() : std::string("a mapping")) + "\"");
  return v;
}

// The keys vramsim-calibrate writes in a mapping the simulator reads (calibrate/bench_*.cu):
// any other is a typo, refused rather than skipped (a misspelt figure would fall back silently).
void known_keys(const Node& root, std::initializer_list<const char*> path, std::initializer_list<std::string_view> keys) {
  std::string dotted;
  const Node* n = at_path(root, path, dotted);
  if (!n || n->is_null()) return;
  if (!n->is_map()) config::fail(*n, dotted, "expected a mapping");
  config::MapReader reader(*n, dotted);
  for (const auto& key : keys) reader.ignore(key);
  reader.finish();
}

}  // namespace

CardCalibration decode_calibration(const Node& root, const std::string& file) {
  if (!root.is_map()) config::fail(root, "calibration", file + " is not a calibration (expected a mapping)");
  known_keys(root, {}, {"name", "measured", "mode", "device", "pcie", "zero_copy", "vram", "launch", "power", "gemv", "failed"});
  known_keys(root, {"pcie"}, {"h2d", "d2h"});
  for (const char* direction : {"h2d", "d2h"})
    known_keys(root, {"pcie", direction}, {"bandwidth", "latency", "peak_bandwidth", "expert_copy", "fit_r2"});
  known_keys(root, {"zero_copy"}, {"bandwidth", "efficiency", "note"});
  known_keys(root, {"vram"}, {"read_bandwidth", "theoretical", "efficiency", "buffer"});
  // vramsim-calibrate --dry-run writes the files' structure with no measurement in them.
  if (const Node* n = root.find("mode"); n && n->is_scalar() && n->text() == "dry-run")
    config::fail(*n, "mode", file + " is a dry run of vramsim-calibrate (no device was used): it holds no measurement");
  CardCalibration c;
  c.file = file;
  if (const Node* n = root.find("name"); n && n->is_scalar()) c.name = n->text();
  if (const Node* n = root.find("measured"); n && n->is_scalar()) c.measured = n->text();
  c.h2d_bandwidth = figure(root, {"pcie", "h2d", "bandwidth"}, units::Dimension::Bandwidth, file);
  c.h2d_latency = figure(root, {"pcie", "h2d", "latency"}, units::Dimension::Time, file);
  c.zero_copy_efficiency = figure(root, {"zero_copy", "efficiency"}, std::nullopt, file);
  if (c.zero_copy_efficiency && *c.zero_copy_efficiency > 1)
    config::fail(*root.find("zero_copy")->find("efficiency"), "zero_copy.efficiency", "an efficiency is at most 1");
  c.vram_read_bandwidth = figure(root, {"vram", "read_bandwidth"}, units::Dimension::Bandwidth, file);
  return c;
}

CardCalibration load_calibration(const std::string& path, const Node& at, const std::string& key_path) {
  namespace fs = std::filesystem;
  const fs::path p(config::resolve_path(at.origin(), path));
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    config::fail(at, key_path, "cannot read the calibration " + p.lexically_normal().string() + ": not a regular file");
  auto tree = config::load_yaml_file(p.lexically_normal().string());
  if (!tree) config::fail(at, key_path, "cannot read the calibration " + p.lexically_normal().string() + ": " + tree.error().message);
  return decode_calibration(*tree, p.lexically_normal().string());
}

}  // namespace vramsim::hw
