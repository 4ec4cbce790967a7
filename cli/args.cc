#include "cli/args.h"

#include <cctype>
#include <charconv>
#include <iostream>

namespace vramsim::cli {

Args::Args(const std::vector<std::string>& argv, const OptionSpec& spec) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const std::string head = a.substr(0, 2);
    const bool short_option = a.size() >= 2 && a[0] == '-' && a[1] != '-' &&
                              (spec.with_value.count(head) || (a.size() == 2 && spec.flags.count(head)));
    // "-z" (or "-zvalue") that the spec does not name is an unknown option, never a file
    // name; "-" alone and a negative number ("-3") stay positional.
    if (!short_option && a.size() >= 2 && a[0] == '-' && a[1] != '-' && !std::isdigit(static_cast<unsigned char>(a[1])) &&
        a[1] != '.')
      throw UsageError("unknown option " + head + " (see --help)");
    if (!short_option && (a.size() < 2 || a.rfind("--", 0) != 0)) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> inline_value;
    if (short_option && a.size() > 2) {  // -j4
      name = head;
      inline_value = a.substr(2);
    } else if (auto eq = a.find('='); !short_option && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
    }
    if (spec.flags.count(name)) {
      if (inline_value) throw UsageError(name + " takes no value");
      flags_.insert(name);
      continue;
    }
    bool repeated = spec.repeated.count(name) > 0;
    if (!repeated && !spec.with_value.count(name)) throw UsageError("unknown option " + name + " (see --help)");
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= argv.size()) throw UsageError(name + " needs a value");
      value = argv[++i];
    }
    if (repeated) {
      repeated_[name].push_back(value);
    } else {
      if (values_.count(name)) throw UsageError(name + " given twice");
      values_[name] = value;
    }
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::spelling(const std::string& short_name, const std::string& long_name) const {
  const bool short_given = values_.count(short_name) > 0;
  if (short_given && values_.count(long_name) > 0)
    throw UsageError("give " + long_name + " once (" + short_name + " and " + long_name + " are the same option)");
  return short_given ? short_name : long_name;
}

std::string Args::require(const std::string& name) const {
  auto v = get(name);
  if (!v) throw UsageError("missing required option " + name);
  return *v;
}

long long Args::integer(const std::string& name, long long fallback, long long min, long long max) const {
  auto v = get(name);
  if (!v) return fallback;
  long long out = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc{} || ptr != v->data() + v->size())
    throw UsageError(name + ": expected a whole number, got \"" + *v + "\"");
  if (out < min || out > max)
    throw UsageError(name + ": must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *v);
  return out;
}

bool Args::answered_help(const char* text) const {
  if (!flag("--help")) return false;
  std::cout << text;
  return true;
}

const std::vector<std::string>& Args::all(const std::string& name) const {
  static const std::vector<std::string> none;
  auto it = repeated_.find(name);
  return it == repeated_.end() ? none : it->second;
}

}  // namespace vramsim::cli
