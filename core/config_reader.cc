#include "core/config_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

namespace vramsim::config {
namespace {

std::string join_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      std::size_t cost = (a[i - 1] == b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<double> parse_number(const std::string& text) {
  double value = 0.0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+' && ++begin != end && *begin == '-') return std::nullopt;  // "+-5"
  auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec != std::errc{} || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_whole(const std::string& text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+' && ++begin != end && *begin == '-') return std::nullopt;  // "+-5"
  std::int64_t whole = 0;
  if (auto [ptr, ec] = std::from_chars(begin, end, whole); ec == std::errc{} && ptr == end) return whole;
  // "1e3", "8.0": a number whose value is whole and held exactly: under 2^53 (a decimal that
  // rounds to 2^53 may have been 2^53 + 1).
  const auto value = parse_number(text);
  if (!value || std::floor(*value) != *value || std::fabs(*value) >= 9007199254740992.0) return std::nullopt;
  return static_cast<std::int64_t>(*value);
}

ConfigError::ConfigError(const Origin& origin, const std::string& key_path, const std::string& message)
    : std::runtime_error(to_string(origin) + ": error: " + (key_path.empty() ? "" : key_path + ": ") + message) {}

void fail(const Node& node, const std::string& key_path, const std::string& message) {
  throw ConfigError(node.origin(), key_path, message);
}

MapReader::MapReader(const Node& node, std::string path) : node_(node), path_(std::move(path)) {
  if (!node_.is_map()) fail(node_, path_, "expected a mapping of keys, got " + node_.describe());
}

std::string MapReader::key_path(std::string_view key) const { return join_path(path_, key); }

const Node* MapReader::take(std::string_view key) {
  consumed_.insert(std::string(key));
  const Node* n = node_.find(key);
  return (n && n->is_null()) ? nullptr : n;
}

void MapReader::fail_missing(std::string_view key, const std::string& expected) const {
  const std::string what = expected.empty() ? std::string() : " (" + expected + ")";
  if (const Node* cleared = node_.find(key); cleared && cleared->is_null())
    fail(*cleared, key_path(key), "required, but cleared here" + what);
  // A key written nearby with another spelling is most likely this one misspelt: name it.
  std::string typo;
  const std::vector<std::string> wanted{std::string(key)};
  for (const auto& [written, value] : node_.entries())
    if (!consumed_.count(written) && !nearest_names(written, wanted, 1).empty()) {
      typo = "; \"" + written + "\" at " + to_string(node_.key_origin(written)) + " is not read: a misspelling of it?";
      break;
    }
  fail(node_, key_path(key), "missing required key" + what + typo);
}

const Node& MapReader::require(std::string_view key) {
  const Node* n = take(key);
  if (!n) fail_missing(key, "");
  return *n;
}

const Node& MapReader::require_scalar(std::string_view key) {
  const Node& n = require(key);
  if (!n.is_scalar()) fail(n, key_path(key), "expected a single value, got " + n.describe());
  return n;
}

double MapReader::quantity(std::string_view key, units::Dimension dim, Lower lower) {
  auto q = optional_quantity(key, dim, lower);
  if (!q) fail_missing(key, units::expectation(dim));
  return *q;
}

std::optional<double> MapReader::optional_quantity(std::string_view key, units::Dimension dim, Lower lower) {
  const Node* n = take(key);
  if (!n) return std::nullopt;
  if (!n->is_scalar()) fail(*n, key_path(key), "expected " + units::expectation(dim) + ", got " + n->describe());
  auto value = units::parse(n->text(), dim);
  if (!value) fail(*n, key_path(key), "expected " + units::expectation(dim) + ", got " + n->describe());
  if (lower == Lower::Positive && *value <= 0.0)
    fail(*n, key_path(key), "must be greater than zero (a " + std::string(units::name(dim)) + " of zero is not physical), got " +
                                n->describe());
  const units::PhysicalRange range = units::physical_range(dim);
  if ((*value > 0.0 && *value < range.least) || *value > range.most)
    fail(*n, key_path(key), "a " + std::string(units::name(dim)) + " of " + n->text() + " is not physical (expected " +
                                std::string(range.least_text) + " to " + std::string(range.most_text) + ")");
  return value;
}

double MapReader::number(std::string_view key, Lower lower) {
  auto v = optional_number(key, lower);
  if (!v) fail_missing(key, "a number");
  return *v;
}

std::optional<double> MapReader::optional_number(std::string_view key, Lower lower) {
  const Node* n = take(key);
  if (!n) return std::nullopt;
  auto value = n->is_scalar() ? parse_number(n->text()) : std::nullopt;
  if (!value) fail(*n, key_path(key), "expected a number, got " + n->describe());
  if (lower == Lower::Positive && *value <= 0.0)
    fail(*n, key_path(key), "must be greater than zero, got " + n->describe());
  if (lower == Lower::NonNegative && *value < 0.0)
    fail(*n, key_path(key), "must not be negative, got " + n->describe());
  return value;
}

std::int64_t MapReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  auto v = optional_integer(key, min, max);
  if (!v) fail_missing(key, "a whole number");
  return *v;
}

std::optional<std::int64_t> MapReader::optional_integer(std::string_view key, std::int64_t min, std::int64_t max) {
  const Node* n = take(key);
  if (!n) return std::nullopt;
  auto range = [&] {
    fail(*n, key_path(key), "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + n->describe());
  };
  const auto whole = n->is_scalar() ? parse_whole(n->text()) : std::nullopt;
  if (!whole) {
    // A whole number past what the reader holds exactly (2^53 written as a float, or past int64).
    const auto value = n->is_scalar() ? parse_number(n->text()) : std::nullopt;
    if (value && std::floor(*value) == *value) range();
    fail(*n, key_path(key), "expected a whole number, got " + n->describe());
  }
  if (*whole < min || *whole > max) range();
  return *whole;
}

std::string MapReader::string(std::string_view key) { return require_scalar(key).text(); }

std::optional<std::string> MapReader::optional_string(std::string_view key) {
  const Node* n = take(key);
  if (!n) return std::nullopt;
  if (!n->is_scalar()) fail(*n, key_path(key), "expected a single value, got " + n->describe());
  return n->text();
}

bool MapReader::boolean(std::string_view key, bool fallback) {
  const Node* n = take(key);
  if (!n) return fallback;
  if (n->is_scalar() && (n->text() == "true" || n->text() == "yes")) return true;
  if (n->is_scalar() && (n->text() == "false" || n->text() == "no")) return false;
  fail(*n, key_path(key), "expected true or false, got " + n->describe());
}

std::string MapReader::choice(std::string_view key, std::initializer_list<std::string_view> choices) {
  const Node& n = require_scalar(key);
  for (auto c : choices)
    if (n.text() == c) return n.text();
  std::string list;
  for (auto c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  fail(n, key_path(key), "expected one of " + list + ", got " + n.describe());
}

MapReader MapReader::map(std::string_view key) { return MapReader(require(key), key_path(key)); }

std::optional<MapReader> MapReader::optional_map(std::string_view key) {
  const Node* n = take(key);
  if (!n) return std::nullopt;
  return MapReader(*n, key_path(key));
}

const Node& MapReader::any(std::string_view key) { return require(key); }
const Node* MapReader::optional_any(std::string_view key) { return take(key); }
void MapReader::fail_at(std::string_view key, const std::string& message) const {
  const Node* n = node_.find(key);
  fail(n ? *n : node_, key_path(key), message);
}

void MapReader::ignore(std::string_view key) { consumed_.insert(std::string(key)); }

void MapReader::finish(std::initializer_list<std::string_view> also_accepted) const {
  std::vector<std::string> known(consumed_.begin(), consumed_.end());
  for (auto k : also_accepted) known.emplace_back(k);
  std::sort(known.begin(), known.end());
  for (const auto& [key, value] : node_.entries()) {
    if (consumed_.count(key)) continue;
    std::string message = "unknown key";
    auto near = nearest_names(key, known, 1);
    if (!near.empty()) message += " (did you mean \"" + near.front() + "\"?)";
    std::string accepted;
    for (const auto& k : known) accepted += (accepted.empty() ? "" : ", ") + k;
    message += "; accepted keys here: " + accepted;
    // `--set a.b.c=...` over a scalar `b: 1024` turns it into {preset: 1024} (config_tree.cc),
    // which only a catalogue reference accepts: say so rather than leave "preset" unexplained.
    if (key == "preset" && value.is_scalar())
      message += " (\"" + value.text() + "\" written here is a value, not a catalogue name a --set can refine: replace it "
                 "whole, e.g. --set " + path_ + "= first, then set its keys)";
    throw ConfigError(node_.key_origin(key), key_path(key), message);
  }
}

std::vector<std::string> nearest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t max_results) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(name, c);
    bool contains = c.find(name) != std::string::npos || name.find(c) != std::string_view::npos;
    std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
    if (d <= limit || contains) scored.emplace_back(contains ? 0 : d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < max_results; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace vramsim::config
