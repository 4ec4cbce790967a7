// Typed reading of a configuration mapping, with the diagnostics users see.
//
// A MapReader walks one mapping: each accessor consumes a key, checks its type, unit and
// range, and throws ConfigError on a problem. finish() rejects the keys nobody consumed, so
// a typo never falls back to a default silently. Decoders built on it (hw/, workloads/) are
// wrapped by `decode()`, which turns the exception into a Result for library callers.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_tree.h"
#include "core/result.h"
#include "core/units.h"

namespace vramsim::config {

// A configuration error at a place in the user's files. what() is the full diagnostic:
// "file:line:col: error: key.path: message".
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const Origin& origin, const std::string& key_path, const std::string& message);
  // An already formatted diagnostic (e.g. from the YAML parser).
  explicit ConfigError(const Error& error) : std::runtime_error(error.message) {}
};

// Throws ConfigError pointing at `node` (or at its parent when the node is missing).
[[noreturn]] void fail(const Node& node, const std::string& key_path, const std::string& message);

// A number written as a plain decimal or exponent ("0.05", "1e-3", an optional leading '+'),
// finite; else nullopt (no unit, no hexadecimal, no ".inf").
std::optional<double> parse_number(const std::string& text);
// A whole number: decimal digits ("42", "-3", "+7", exact over the whole int64 range), or a
// number as parse_number reads it whose value is whole and under 2^53 ("1e3", "8.0").
std::optional<std::int64_t> parse_whole(const std::string& text);

// Lower bound of an accepted numeric range.
enum class Lower { NonNegative, Positive };

class MapReader {
 public:
  // `node` must be a mapping; `path` is its dotted key path ("" at the root).
  MapReader(const Node& node, std::string path);

  const Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  std::string key_path(std::string_view key) const;
  // Whether `key` is present with a value (`key:` with nothing, or `--set key=`, is unset).
  bool has(std::string_view key) const {
    const Node* n = node_.find(key);
    return n && !n->is_null();
  }

  // Required and optional scalars. Quantities use units::parse; numbers are plain.
  double quantity(std::string_view key, units::Dimension dim, Lower lower = Lower::Positive);
  std::optional<double> optional_quantity(std::string_view key, units::Dimension dim,
                                          Lower lower = Lower::Positive);
  double number(std::string_view key, Lower lower = Lower::Positive);
  std::optional<double> optional_number(std::string_view key, Lower lower = Lower::Positive);
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_integer(std::string_view key, std::int64_t min, std::int64_t max);
  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  bool boolean(std::string_view key, bool fallback);
  // One of `choices`; the message lists them.
  std::string choice(std::string_view key, std::initializer_list<std::string_view> choices);

  // A nested mapping (required / optional).
  MapReader map(std::string_view key);
  std::optional<MapReader> optional_map(std::string_view key);
  // Any node (for decoders that accept a name or a mapping).
  const Node& any(std::string_view key);
  const Node* optional_any(std::string_view key);

  // Throws a ConfigError about `key`, at its value when present, else at this mapping.
  [[noreturn]] void fail_at(std::string_view key, const std::string& message) const;

  // Marks a key as read without reading it (documentation-only keys such as `source`).
  void ignore(std::string_view key);

  // Throws on the first key that no accessor consumed, naming the accepted keys.
  // `also_accepted`: keys a caller reads from the same mapping elsewhere (a scenario's keys
  // beside a catalogue description), named in the message as accepted too.
  void finish(std::initializer_list<std::string_view> also_accepted = {}) const;

 private:
  const Node* take(std::string_view key);
  // A required key is absent, or present but cleared (`--set key=`): the error points at the
  // clearing value when there is one, else at the map. `expected` is appended when not empty.
  [[noreturn]] void fail_missing(std::string_view key, const std::string& expected) const;
  const Node& require(std::string_view key);
  const Node& require_scalar(std::string_view key);

  const Node& node_;
  std::string path_;
  std::set<std::string, std::less<>> consumed_;
};

// Runs `decoder` and converts a ConfigError into an Error.
template <class T, class F>
Result<T> decode(F&& decoder) {
  try {
    return decoder();
  } catch (const ConfigError& e) {
    return Error{e.what()};
  }
}

// The names in `candidates` closest to `name` (edit distance), for "did you mean" hints.
std::vector<std::string> nearest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t max_results = 3);

}  // namespace vramsim::config
