#include "workloads/formats.h"

#include <cmath>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fmt/format.h>

#include "core/config_reader.h"

namespace vramsim::workloads {

using config::MapReader;

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

namespace {
std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::string native_only_refusal(const WeightFormat& format, const std::string& model, const std::string& native) {
  if (!format.native_only || upper(format.name) == upper(native)) return {};
  return format.name + " is offered only for models released in it; " + model + " was released in " + native;
}

std::string requantized_native_warning(const WeightFormat& format, const std::string& model, const WeightFormat& native) {
  if (!native.native_only || upper(format.name) == upper(native.name)) return {};
  const std::string bits = fmt::format(" ({:.2f} bits/weight)", native.bits_per_weight);
  const std::string asked = fmt::format(" ({:.2f} bits/weight)", format.bits_per_weight);
  return model + " was released in " + native.name + bits + ": its experts sized as " + format.name + asked +
         " describe a re-quantized file, not the released checkpoint, and cannot recover what " + native.name +
         " dropped (leave out --quant, or give " + native.name + ", for the released weights)";
}

FormatTables FormatTables::load(const config::Catalogue& catalogue) {
  FormatTables t;
  {
    config::Node root = catalogue.load("formats/weights.yaml");
    MapReader r(root, "");
    MapReader formats = r.map("formats");
    for (const auto& [name, value] : formats.node().entries()) {
      MapReader f = formats.map(name);
      WeightFormat w{name, f.number("bits_per_weight"), f.boolean("native_only", false)};
      if (w.bits_per_weight > 64) f.fail_at("bits_per_weight", "more than 64 bits per weight");
      f.ignore("source");
      f.ignore("note");
      f.finish();
      t.weights_[upper(name)] = w;
    }
    formats.finish();
    if (const config::Node* ladder = r.optional_any("ladder")) {
      for (const auto& item : ladder->items()) {
        if (!t.weight(item.text())) config::fail(item, "ladder", "unknown format " + item.describe());
        t.ladder_.push_back(upper(item.text()));
      }
    }
    r.finish();
  }
  {
    config::Node root = catalogue.load("formats/kv-cache.yaml");
    MapReader r(root, "");
    MapReader types = r.map("types");
    for (const auto& [name, value] : types.node().entries()) {
      MapReader k = types.map(name);
      KvType kv{name, k.number("bytes_per_element")};
      k.ignore("source");
      k.ignore("note");
      k.finish();
      t.kv_[lower(name)] = kv;
    }
    types.finish();
    r.finish();
  }
  return t;
}

void check_native_format(const config::Node& model, const std::string& key_path, const std::string& native,
                         const FormatTables& formats) {
  if (const config::Node* experts = model.is_map() ? model.find("native_expert_format") : nullptr;
      experts && experts->is_scalar() && !formats.weight(experts->text()))
    config::fail(*experts, key_path + ".native_expert_format",
                 "unknown weights format \"" + experts->text() + "\" (not in configs/formats/weights.yaml nor the "
                 "model's file_formats)");
  if (formats.weight(native)) return;
  std::string known;
  for (const auto& name : formats.weight_names()) known += (known.empty() ? "" : ", ") + name;
  const config::Node* at = model.is_map() ? model.find("native_format") : nullptr;
  config::fail(at ? *at : model, key_path + ".native_format",
               "unknown weights format \"" + native + "\" (configs/formats/weights.yaml has " + known + ")");
}

FormatTables FormatTables::with_file_formats(const std::vector<WeightFormat>& extra, const config::Node& model,
                                             const std::string& key_path) const {
  FormatTables out = *this;
  for (const auto& w : extra) {
    if (weights_.count(upper(w.name))) {
      const config::Node* at = model.is_map() ? model.find("file_formats") : nullptr;
      config::fail(at ? *at : model, key_path + ".file_formats." + w.name,
                   "\"" + w.name + "\" is a format of configs/formats/weights.yaml: a file's own format needs another name");
    }
    out.weights_[upper(w.name)] = w;
    out.weights_[upper(w.name)].from_file = true;
  }
  return out;
}

const WeightFormat* FormatTables::weight(const std::string& name) const {
  auto it = weights_.find(upper(name));
  return it == weights_.end() ? nullptr : &it->second;
}

const KvType* FormatTables::kv(const std::string& name) const {
  auto it = kv_.find(lower(name));
  return it == kv_.end() ? nullptr : &it->second;
}

std::optional<std::string> FormatTables::one_level_lower(const std::string& format) const {
  // The first ladder rung with fewer bits per weight than `format`.
  const WeightFormat* current = weight(format);
  return current ? lower_than(current->bits_per_weight) : std::nullopt;
}

std::optional<std::string> FormatTables::lower_than(double bits) const {
  for (const auto& rung : ladder_) {
    const WeightFormat* w = weight(rung);
    if (w && w->bits_per_weight < bits) return w->name;
  }
  return std::nullopt;
}

std::optional<std::string> FormatTables::nearest_on_ladder(double bits) const {
  std::optional<std::string> best;
  double gap = 0;
  for (const auto& rung : ladder_)
    if (const WeightFormat* w = weight(rung); w && (!best || std::abs(w->bits_per_weight - bits) < gap)) {
      best = w->name;
      gap = std::abs(w->bits_per_weight - bits);
    }
  return best;
}

std::vector<std::string> FormatTables::weight_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : weights_) out.push_back(v.name);
  return out;
}

std::vector<std::string> FormatTables::kv_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : kv_) out.push_back(v.name);
  return out;
}

}  // namespace vramsim::workloads
