// Storage formats: weights (bits per weight, llama.cpp's averages) and KV-cache elements
// (bytes per element, block scales included). Tables live in configs/formats/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/catalogue.h"

namespace vramsim::workloads {

struct WeightFormat {
  std::string name;
  double bits_per_weight = 0;
  bool native_only = false;  // offered only for models released in this format (MXFP4)
  bool from_file = false;    // a model file's own format (FormatTables::with_file_formats), on no ladder
};

struct KvType {
  std::string name;
  double bytes_per_element = 0;
};

// `s` in upper case (format names compare case-insensitively: "q4_k_m" is Q4_K_M).
std::string upper(std::string s);

// Why weights in `format` cannot be had for a model released in `native` (a native-only format,
// e.g. MXFP4, on another model's weights: no such files are published); empty when they can.
// Every command (fit, run, plan, scenarios) applies it.
std::string native_only_refusal(const WeightFormat& format, const std::string& model, const std::string& native);

// A warning for weights sized in `format` on a model released in a native low-bit format
// (`native`, a native-only one such as MXFP4, e.g. gpt-oss with --quant Q4_K_M): its experts
// are then sized in `format`, which describes a re-quantized file, not the released checkpoint. Empty when `format` is `native` or `native` is not native-only.
std::string requantized_native_warning(const WeightFormat& format, const std::string& model, const WeightFormat& native);

class FormatTables;

// Refuses (ConfigError at `model`'s native_format key) a model whose native weights format is
// not in the formats table: every size and speed of the model starts from that format. The same
// for its native_expert_format, when the file has one.
void check_native_format(const config::Node& model, const std::string& key_path, const std::string& native,
                         const FormatTables& formats);

class FormatTables {
 public:
  // Loads configs/formats/weights.yaml and kv-cache.yaml. Throws ConfigError.
  static FormatTables load(const config::Catalogue& catalogue);

  // These tables and a model file's own formats (its `file_formats:`, a GGUF file's tensor types),
  // for that model's scenario. Throws ConfigError at `model`'s file_formats key when a name is
  // one the tables already have.
  FormatTables with_file_formats(const std::vector<WeightFormat>& extra, const config::Node& model,
                                 const std::string& key_path) const;

  // Lookups; nullptr when unknown. Names are case-insensitive ("q4_k_m" works).
  const WeightFormat* weight(const std::string& name) const;
  const KvType* kv(const std::string& name) const;

  // The step-down order for "one quant level lower"; nullopt at the bottom or off the ladder.
  std::optional<std::string> one_level_lower(const std::string& format) const;
  // The first ladder rung with fewer bits per weight than `bits`; nullopt below the bottom.
  std::optional<std::string> lower_than(double bits) const;
  // The ladder rung nearest `bits` (a file's own format named as the table's format a user types).
  std::optional<std::string> nearest_on_ladder(double bits) const;

  std::vector<std::string> weight_names() const;
  std::vector<std::string> kv_names() const;

 private:
  std::map<std::string, WeightFormat> weights_;  // keyed by upper-case name
  std::map<std::string, KvType> kv_;             // keyed by lower-case name
  std::vector<std::string> ladder_;
};

}  // namespace vramsim::workloads
