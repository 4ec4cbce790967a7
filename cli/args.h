// Command-line parsing for the subcommands: `--key value`, `--key=value`, repeated `--set`,
// boolean flags, short options named in the spec (`-j 4`, `-j4`) and positional arguments. Unknown
// options are usage errors (exit 2).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace vramsim::cli {

// A usage error; main() prints it once and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::set<std::string> with_value;  // "--model", "-j", ...
  std::set<std::string> flags;       // "--json", ...
  std::set<std::string> repeated;    // "--set", ...: may appear many times (they take a value)
};

class Args {
 public:
  Args(const std::vector<std::string>& argv, const OptionSpec& spec);

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;
  // The name under which an option with a short and a long spelling (-o, --output) was given,
  // or the long one when neither was; both given is a UsageError.
  std::string spelling(const std::string& short_name, const std::string& long_name) const;
  std::string require(const std::string& name) const;
  // Parses an option as a whole number in [min, max]; `fallback` when absent.
  long long integer(const std::string& name, long long fallback, long long min, long long max) const;
  const std::vector<std::string>& all(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Prints `text` to stdout when --help was given; the command then returns 0.
  bool answered_help(const char* text) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

}  // namespace vramsim::cli
