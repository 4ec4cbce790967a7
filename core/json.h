// A small, deterministic JSON writer: keys in insertion order, numbers in the shortest form
// that reads back to the same double. Output is byte-identical for identical input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramsim::json {

class Writer {
 public:
  explicit Writer(bool pretty = true) : pretty_(pretty) {}

  Writer& begin_object();
  Writer& end_object();
  Writer& begin_array();
  Writer& end_array();
  Writer& key(std::string_view k);

  Writer& value(std::string_view s);
  Writer& value(const char* s) { return value(std::string_view(s)); }
  Writer& value(const std::string& s) { return value(std::string_view(s)); }
  Writer& value(double d);  // non-finite numbers are written as null
  Writer& value(std::int64_t i);
  Writer& value(int i) { return value(static_cast<std::int64_t>(i)); }
  Writer& value(bool b);
  Writer& null();
  // A number already in JSON form (e.g. read back by json::parse), written as is.
  Writer& raw_number(std::string_view text);
  template <class T>
  Writer& value(const std::optional<T>& v) {
    return v ? value(*v) : null();
  }

  template <class T>
  Writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // The document; valid once every object and array is closed.
  const std::string& str() const { return out_; }

 private:
  void before_value();
  void newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
  bool pretty_;
};

std::string escape(std::string_view s);

}  // namespace vramsim::json
