#include "core/json_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace vramsim::json {

Value::Value(Kind kind, std::string text) : kind_(kind), text_(std::move(text)) {}

Value Value::string(std::string s) { return Value(Kind::String, std::move(s)); }
Value Value::number_text(std::string text) { return Value(Kind::Number, std::move(text)); }
Value Value::boolean(bool b) { return Value(Kind::Bool, b ? "true" : "false"); }
Value Value::object() { return Value(Kind::Object, {}); }
Value Value::array() { return Value(Kind::Array, {}); }

Value Value::number(double d) {
  if (!std::isfinite(d)) return Value();
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return Value(Kind::Number, std::string(buf, end));
}

Value& Value::operator[](const std::string& key) {
  if (kind_ == Kind::Null) kind_ = Kind::Object;
  for (auto& [k, v] : members_)
    if (k == key) return v;
  members_.emplace_back(key, Value());
  return members_.back().second;
}

Value& Value::push(Value v) {
  if (kind_ == Kind::Null) kind_ = Kind::Array;
  items_.push_back(std::move(v));
  return items_.back();
}

double Value::number() const { return kind_ == Kind::Number ? std::strtod(text_.c_str(), nullptr) : std::nan(""); }

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

const Value* Value::at_path(std::string_view dotted) const {
  const Value* v = this;
  while (v) {
    const std::size_t dot = dotted.find('.');
    v = v->find(dotted.substr(0, dot));
    if (dot == std::string_view::npos) return v;
    dotted.remove_prefix(dot + 1);
  }
  return nullptr;
}

Value& Value::set(std::string key, Value v) {
  for (auto& [k, old] : members_)
    if (k == key) return old = std::move(v);
  members_.emplace_back(std::move(key), std::move(v));
  return members_.back().second;
}

void Value::erase(std::string_view key) {
  std::erase_if(members_, [&](const Member& m) { return m.first == key; });
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("end of input");
    return v;
  }

  std::string error;

 private:
  struct Failure {};

  [[noreturn]] void fail(const char* expected) {
    error = "at byte " + std::to_string(pos_) + ": expected " + expected;
    throw Failure{};
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > 200) fail("less nesting");
    skip_space();
    if (pos_ >= s_.size()) fail("a value");
    const char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value::string(string());
    if (literal("true")) return Value::boolean(true);
    if (literal("false")) return Value::boolean(false);
    if (literal("null")) return Value();
    return number();
  }

  Value object(int depth) {
    ++pos_;
    Value v = Value::object();
    if (eat('}')) return v;
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("a key");
      std::string key = string();
      if (!eat(':')) fail("':'");
      v.members_.emplace_back(std::move(key), value(depth + 1));
    } while (eat(','));
    if (!eat('}')) fail("',' or '}'");
    return v;
  }

  Value array(int depth) {
    ++pos_;
    Value v = Value::array();
    if (eat(']')) return v;
    do v.items_.push_back(value(depth + 1));
    while (eat(','));
    if (!eat(']')) fail("',' or ']'");
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("four hex digits");
    unsigned cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
      else fail("a hex digit");
    }
    return cp;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("a closing '\"'");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("no control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("an escape");
      switch (const char e = s_[pos_++]) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            const unsigned lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("a valid escape");
      }
    }
  }

  Value number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > from;
    };
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    const std::size_t integer = pos_;
    if (!digits()) fail("a value");
    // JSON writes no leading zero ("0100" is not a number): the 0 stands alone before '.' or 'e'.
    if (s_[integer] == '0' && pos_ > integer + 1) {
      pos_ = integer + 1;
      fail("a number without a leading zero");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) fail("digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) fail("exponent digits");
    }
    return Value::number_text(std::string(s_.substr(start, pos_ - start)));
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

Result<Value> parse(std::string_view text) {
  Parser p(text);
  try {
    return p.document();
  } catch (...) {
    return Error{"invalid JSON " + p.error};
  }
}

void write(Writer& w, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Null: w.null(); break;
    case Value::Kind::Bool: w.value(v.truth()); break;
    case Value::Kind::Number: w.raw_number(v.text()); break;
    case Value::Kind::String: w.value(v.text()); break;
    case Value::Kind::Array:
      w.begin_array();
      for (const auto& item : v.items()) write(w, item);
      w.end_array();
      break;
    case Value::Kind::Object:
      w.begin_object();
      for (const auto& [k, m] : v.members()) {
        w.key(k);
        write(w, m);
      }
      w.end_object();
      break;
  }
}

std::string to_line(const Value& v) {
  Writer w(false);
  write(w, v);
  return w.str();
}

Status check_strict(std::string_view text, const std::string& path) {
  std::size_t skip = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // a byte-order mark
  auto parsed = parse(text.substr(skip));
  if (parsed) return Ok{};
  // "invalid JSON at byte N: expected X" -> FILE:LINE:COL: error: expected X (strict JSON)
  const std::string& why = parsed.error().message;
  const std::string marker = "at byte ";
  const std::size_t at = why.find(marker);
  std::size_t offset = 0, colon = std::string::npos;
  if (at != std::string::npos) {
    offset = std::strtoull(why.c_str() + at + marker.size(), nullptr, 10) + skip;
    colon = why.find(": ", at);
  }
  int line = 1, column = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  const std::string expected = colon == std::string::npos ? why : why.substr(colon + 2);
  return Error{path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: not strict JSON: " + expected +
               (expected.find("a key") != std::string::npos ? " (a trailing comma?)" : "")};
}


}  // namespace vramsim::json
