// The configuration tree: YAML parsed into plain nodes that remember where each value came
// from (file, line, column), so that an error about a value merged from a preset, a scenario
// or a `--set` on the command line points at the right place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace vramsim::config {

// Where a value was written. `line` and `column` are 1-based; line 0 means "no position"
// (a value given on the command line, or a file that was not parsed as YAML).
struct Origin {
  std::string source;  // a file path, or "--set" for command-line overrides
  int line = 0;
  int column = 0;
};

// "file:12:16", or "file" when there is no position.
std::string to_string(const Origin& origin);

// A file path written at `origin`, made usable: a relative path is relative to the file that
// holds it, or to the working directory when it was given on the command line (--set, whose
// origin has no line). Lexically normalised.
std::string resolve_path(const Origin& origin, const std::string& path);

// `text` fit to quote in a message printed on a terminal: control characters (an escape
// sequence, a carriage return, a NUL) written as \xHH; a newline and a tab are kept
// only when `keep_newlines`.
std::string printable(std::string_view text, bool keep_newlines = false);

class Node {
 public:
  enum class Kind { Null, Scalar, Map, Sequence };
  using Entry = std::pair<std::string, Node>;

  Node() = default;
  static Node scalar(std::string text, Origin origin);
  static Node map(Origin origin);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_scalar() const { return kind_ == Kind::Scalar; }
  bool is_map() const { return kind_ == Kind::Map; }
  bool is_sequence() const { return kind_ == Kind::Sequence; }
  const Origin& origin() const { return origin_; }

  // Scalars: the text as written (quotes removed).
  const std::string& text() const { return text_; }
  // Scalars: whether the text was written in quotes ("32" is a string in JSON, 32 a number).
  bool quoted() const { return quoted_; }

  // Maps keep their keys in file order. find() returns nullptr for a missing key.
  const std::vector<Entry>& entries() const { return entries_; }
  const Node* find(std::string_view key) const;
  Node* find(std::string_view key);
  // Sets `key` (replacing an existing value in place, keeping its position in the order).
  Node& set(std::string key, Node value);

  // Where `key` itself was written (its value's origin when the key has no mark of its own).
  Origin key_origin(std::string_view key) const;

  const std::vector<Node>& items() const { return items_; }

  // Deep merge: maps merge key by key (recursively); anything else in `overlay` replaces.
  void merge_from(const Node& overlay);

  // Gives this node and everything below it `origin` (used for command-line values).
  void relabel(const Origin& origin);

  // A short rendering of the value for messages: the scalar text, "a mapping", "a list".
  std::string describe() const;

 private:
  friend class TreeBuilder;
  Kind kind_ = Kind::Null;
  std::string text_;
  bool quoted_ = false;
  std::vector<Entry> entries_;
  std::vector<Node> items_;
  std::vector<std::pair<std::string, Origin>> key_origins_;
  Origin origin_;
};

// Bounds on what a configuration may be: how deep a YAML document nests (mappings and lists),
// how many components a --set key has, and how large an input file is. No real configuration
// comes near any of them; past them the input is refused rather than exhausting the stack or
// memory.
inline constexpr int kMaxNesting = 64;
inline constexpr std::size_t kMaxSetComponents = 64;
inline constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{64} * 1024 * 1024;

// A file given as input must be a regular file (not a directory, device or FIFO) of at most
// `max_bytes`: else an Error "PATH: error: ..." saying which.
Status check_input_file(const std::string& path, std::uintmax_t max_bytes = kMaxInputBytes);

// Parses a YAML document. Errors (syntax, duplicate keys) are formatted like a compiler's.
Result<Node> parse_yaml(std::string_view text, const std::string& source);
Result<Node> load_yaml_file(const std::string& path);

// Applies one command-line override "a.b.c=value" to `root`, creating maps on the way.
// The value is parsed as YAML (so `--set engine.parallel=4` and `--set x=[1,2]` both work);
// an empty value (`--set key=`) unsets the key. `spelled_as` is the option as the user typed
// it, which messages about the value name (default: "--set ASSIGNMENT").
Status apply_override(Node& root, std::string_view assignment, std::string_view spelled_as = {});

}  // namespace vramsim::config
