#include "tests/test_support.h"
#include "tests/json_matchers.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vramsim::test {

void check_refused(const std::string& scenario, const std::string& assignment, const std::string& message) {
  INFO(assignment);
  check_usage_error("run " + scenario + " --set " + assignment, message);
}

std::string run_ok(const std::string& args) {
  auto r = run_vramsim(args);
  INFO("vramsim " << args << "\n" << r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

void check_usage_error(const std::string& args, const std::string& message) {
  INFO(args);
  auto r = run_vramsim(args);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(message));
  CHECK(r.out.empty());
}

Run run_vramsim(const std::string& args) {
  static int counter = 0;
  const std::string err_file = "vramsim_test_stderr_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string command = std::string(VRAMSIM_BINARY) + " " + args + " 2>" + err_file;
  Run run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return run;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  std::ostringstream text;
  text << err.rdbuf();
  run.err = text.str();
  std::remove(err_file.c_str());
  return run;
}

void visit_members(const json::Value& v, const std::function<bool(const std::string&, const json::Value&)>& visit) {
  if (v.is_object()) {
    for (const auto& [k, member] : v.members()) {
      if (visit(k, member)) return;
      visit_members(member, visit);
    }
  } else if (v.is_array()) {
    for (const auto& item : v.items()) visit_members(item, visit);
  }
}

json::Value parse_json(const std::string& text) {
  auto parsed = json::parse(text);
  if (!parsed) throw std::runtime_error("not JSON: " + parsed.error().message);
  return std::move(parsed).value();
}

const json::Value* json_member(const json::Value& root, const std::string& key, const std::string& within) {
  const json::Value* found = nullptr;
  bool inside = within.empty();
  visit_members(root, [&](const std::string& k, const json::Value& v) {
    if (found) return true;  // the first match stands: skip the rest of the document
    if (!inside) {
      inside = k == within;
      return false;
    }
    if (k != key) return false;
    found = &v;
    return true;
  });
  return found;
}

double json_number(const std::string& json, const std::string& key, const std::string& within) {
  const json::Value root = parse_json(json);
  const json::Value* v = json_member(root, key, within);
  if (!v) throw std::runtime_error("no \"" + key + "\"" + (within.empty() ? "" : " after \"" + within + "\"") + " in the JSON output");
  if (!v->is_number()) throw std::runtime_error("\"" + key + "\" is " + (v->is_null() ? "null" : v->text()) + ", not a number");
  return v->number();
}

bool json_truth(const std::string& json, const std::string& key, const std::string& within) {
  const json::Value root = parse_json(json);
  const json::Value* v = json_member(root, key, within);
  if (!v || v->kind() != json::Value::Kind::Bool) throw std::runtime_error("no true or false at \"" + key + "\" in the JSON output");
  return v->truth();
}

bool json_null(const std::string& json, const std::string& key, const std::string& within) {
  const json::Value root = parse_json(json);
  const json::Value* v = json_member(root, key, within);
  if (!v) throw std::runtime_error("no \"" + key + "\" in the JSON output");
  return v->is_null();
}

std::string json_text(const std::string& json, const std::string& key, const std::string& within) {
  const json::Value root = parse_json(json);
  const json::Value* v = json_member(root, key, within);
  if (!v || !v->is_string()) throw std::runtime_error("no string at \"" + key + "\" in the JSON output");
  return v->text();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path p = std::filesystem::current_path() / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(entry.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

bool HasMemberMatcher::match(const std::string& json) const {
  const auto parsed = json::parse(json);
  if (!parsed) return false;
  bool found = false;
  visit_members(*parsed, [&](const std::string& k, const json::Value& v) {
    if (k != key_) return false;
    std::string written;
    switch (v.kind()) {
      case json::Value::Kind::String: written = "\"" + json::escape(v.text()) + "\""; break;
      case json::Value::Kind::Number:
      case json::Value::Kind::Bool: written = v.text(); break;
      case json::Value::Kind::Null: written = "null"; break;
      case json::Value::Kind::Array: written = v.items().empty() ? "[]" : ""; break;
      case json::Value::Kind::Object: written = v.members().empty() ? "{}" : ""; break;
    }
    found = found || written == written_;
    return false;
  });
  return found;
}

}  // namespace vramsim::test
