// Helpers shared by the tests: the source tree's catalogue, test data, and running the real
// `vramsim` binary.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/catalogue.h"
#include "core/json_value.h"

namespace vramsim::test {

inline config::Catalogue catalogue() { return config::Catalogue(VRAMSIM_TEST_CONFIGS_DIR); }
inline std::string data_path(const std::string& relative) { return std::string(VRAMSIM_TEST_DATA_DIR) + "/" + relative; }

struct Run {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `vramsim ARGS` (ARGS is shell-quoted by the caller) and captures both streams.
Run run_vramsim(const std::string& args);

// `vramsim ARGS` must succeed (exit 0; its stderr reported otherwise): its stdout.
std::string run_ok(const std::string& args);

// `vramsim run SCENARIO --set ASSIGNMENT` must be refused: exit 2, `message` on stderr, nothing
// on stdout (Catch2 checks, reported with the assignment).
void check_refused(const std::string& scenario, const std::string& assignment, const std::string& message);
// `vramsim ARGS` exits 2 (bad usage or config) and its stderr contains `message`.
void check_usage_error(const std::string& args, const std::string& message);

// JSON output read with core's JSON reader (never searched as text). parse_json throws
// std::runtime_error on text that is not one JSON document.
json::Value parse_json(const std::string& text);
// The members of `v` and everything below it in document order (a member before its value's
// members): the order their keys appear in the text. `visit` returning true skips the value's
// members and the rest of that object (a caller that is done keeps returning true).
void visit_members(const json::Value& v, const std::function<bool(const std::string&, const json::Value&)>& visit);
// The first member named `key` in document order, after the first member named `within` when
// given (inside it when it holds one: json_member(out, "p50", "decode_tok_s") is
// decode_tok_s.p50); nullptr when there is none.
const json::Value* json_member(const json::Value& root, const std::string& key, const std::string& within = "");
// That member's number (e.g. json_number(out, "p50", "decode_tok_s")); throws
// std::runtime_error when it is missing or not a number.
double json_number(const std::string& json, const std::string& key, const std::string& within = "");
// ... a boolean's truth, a string's text (the same member; std::runtime_error when absent or of
// another kind).
bool json_truth(const std::string& json, const std::string& key, const std::string& within = "");
std::string json_text(const std::string& json, const std::string& key, const std::string& within = "");
// Whether that member is null (std::runtime_error when absent).
bool json_null(const std::string& json, const std::string& key, const std::string& within = "");

// The whole content of file `p` ("" when it cannot be read).
std::string read_file(const std::filesystem::path& p);
// `name` under the current directory, created empty (removed first if it was there).
std::filesystem::path fresh_dir(const std::string& name);
// The processes whose parent is `parent`, from /proc/*/stat ("pid (comm) state ppid ...").
std::vector<pid_t> children_of(pid_t parent);

}  // namespace vramsim::test
