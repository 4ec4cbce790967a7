#include "core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>

namespace vramsim::json {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out;
}

void Writer::newline() {
  if (!pretty_) return;
  out_ += '\n';
  out_.append(first_.size() * 2, ' ');
}

void Writer::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
}

Writer& Writer::begin_object() {
  before_value();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

Writer& Writer::end_object() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += '}';
  return *this;
}

Writer& Writer::begin_array() {
  before_value();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

Writer& Writer::end_array() {
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}

Writer& Writer::key(std::string_view k) {
  before_value();
  out_ += '"';
  out_ += escape(k);
  out_ += pretty_ ? "\": " : "\":";
  after_key_ = true;
  return *this;
}

Writer& Writer::value(std::string_view s) {
  before_value();
  out_ += '"';
  out_ += escape(s);
  out_ += '"';
  return *this;
}

Writer& Writer::value(double d) {
  before_value();
  if (!std::isfinite(d)) {
    out_ += "null";
    return *this;
  }
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out_.append(buf, ptr);
  return *this;
}

Writer& Writer::value(std::int64_t i) {
  before_value();
  out_ += std::to_string(i);
  return *this;
}

Writer& Writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

Writer& Writer::raw_number(std::string_view text) {
  before_value();
  out_ += text;
  return *this;
}

Writer& Writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace vramsim::json
