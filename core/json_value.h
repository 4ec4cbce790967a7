// JSON as an ordered tree: read back by a small strict parser, or built (vramsim-calibrate's
// raw results) and written by json::write. Numbers keep the text they
// were written with, so a value read and written again (json::write) is byte-identical to
// what json::Writer produced. Used to read `vramsim run --json` outputs and results files.
// C++17 only: vramsim-calibrate's CUDA sources include it (calibrate/report.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace vramsim::json {

class Value {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, Value>;

  Value() = default;
  static Value string(std::string s);
  static Value number_text(std::string text);  // the number as written, e.g. "13.9", "1e-05"
  static Value boolean(bool b);
  static Value object();
  static Value array();
  // A number as json::Writer writes it: the shortest text that reads back as `d`; null when
  // `d` is not finite.
  static Value number(double d);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_array() const { return kind_ == Kind::Array; }

  // Strings: the text; numbers: the text as written; booleans: "true"/"false".
  const std::string& text() const { return text_; }
  // Numbers as a double (NaN for anything else).
  double number() const;
  bool truth() const { return kind_ == Kind::Bool && text_ == "true"; }

  // Objects keep their members in order; find() returns nullptr for a missing key.
  const std::vector<Member>& members() const { return members_; }
  const Value* find(std::string_view key) const;
  // A dotted path through objects ("decode_tok_s.p50"); nullptr when any step is missing.
  const Value* at_path(std::string_view dotted) const;
  // Sets `key` (replacing in place, or appending); removes it with erase().
  Value& set(std::string key, Value v);
  void erase(std::string_view key);

  // Objects: the member `key`, a null one appended when missing (a null value becomes an
  // object first), for building a tree in order.
  Value& operator[](const std::string& key);

  const std::vector<Value>& items() const { return items_; }
  // Appends to an array (a null value becomes one first); returns the new element.
  Value& push(Value v);

 private:
  friend class Parser;
  Value(Kind kind, std::string text);
  Kind kind_ = Kind::Null;
  std::string text_;
  std::vector<Member> members_;
  std::vector<Value> items_;
};

// Parses one JSON document (trailing whitespace allowed, nothing else). The error says where
// (byte offset) and what was expected.
Result<Value> parse(std::string_view text);

// Writes `v` through `w` (compact or pretty as the writer is).
void write(Writer& w, const Value& v);
// `v` on one line, no spaces: the form of a JSON-lines record.
std::string to_line(const Value& v);

// Whether `text` (a leading byte-order mark allowed) is strict JSON: else an Error
// "PATH:LINE:COL: error: not strict JSON: expected ..." at the first offending character.
Status check_strict(std::string_view text, const std::string& path);

}  // namespace vramsim::json
