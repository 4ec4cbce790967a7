#include "core/catalogue.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <system_error>

#include "core/config_reader.h"

#ifndef VRAMSIM_SOURCE_CONFIGS_DIR
#define VRAMSIM_SOURCE_CONFIGS_DIR ""
#endif

namespace vramsim::config {
namespace fs = std::filesystem;

bool looks_like_path(std::string_view text) {
  return text.find('/') != std::string_view::npos || text.ends_with(".yaml") || text.ends_with(".yml");
}

namespace {

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

bool is_catalogue_name(std::string_view name) {
  if (name.empty() || name.size() > 100 || name.front() == '.') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '+' && c != '-') return false;
  return true;
}

bool path_exists(const fs::path& path) noexcept {
  std::error_code ec;
  return fs::exists(path, ec) && !ec;
}

fs::path file_beside(const Node& value) {
  fs::path file(value.text());
  if (file.is_relative() && !value.origin().source.empty()) {
    const fs::path beside = fs::path(value.origin().source).parent_path() / file;
    if (path_exists(beside)) file = beside;
  }
  return file;
}

Result<Catalogue> Catalogue::locate(const std::string& explicit_dir) {
  std::vector<fs::path> candidates;
  if (!explicit_dir.empty()) {
    if (!fs::is_directory(explicit_dir)) return Error{"error: --configs " + explicit_dir + ": not a directory"};
    return Catalogue(explicit_dir);
  }
  if (const char* env = std::getenv("VRAMSIM_CONFIGS"); env && *env) {
    if (!fs::is_directory(env)) return Error{std::string("error: VRAMSIM_CONFIGS=") + env + ": not a directory"};
    return Catalogue(env);
  }
  if (fs::path dir = executable_dir(); !dir.empty()) candidates.push_back(dir / ".." / "share" / "vramsim" / "configs");
  candidates.emplace_back(VRAMSIM_SOURCE_CONFIGS_DIR);
  for (const auto& c : candidates)
    if (!c.empty() && fs::is_directory(c / "gpus")) return Catalogue(fs::weakly_canonical(c));
  return Error{"error: cannot find the configs/ catalogue; pass --configs DIR or set VRAMSIM_CONFIGS"};
}

std::vector<std::string> Catalogue::names(std::string_view kind) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / kind, ec)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Node Catalogue::load(const std::string& relative) const {
  auto loaded = load_yaml_file((root_ / relative).string());
  if (!loaded) throw ConfigError(loaded.error());
  return std::move(loaded).value();
}

Node Catalogue::load_named(std::string_view kind, std::string_view what, const Node& name_node,
                           const std::string& key_path, int depth) const {
  const std::string& name = name_node.text();
  if (looks_like_path(name)) {
    const fs::path file = file_beside(name_node);
    if (!path_exists(file)) fail(name_node, key_path, "no such file \"" + name + "\"");
    auto loaded = load_yaml_file(file.string());
    if (!loaded) throw ConfigError(loaded.error());
    // A file may refine a preset itself (`preset: NAME` and its overrides, as a mapping in a
    // config does): what `vramsim calibrate --write-engine` writes. A chain of files naming
    // each other ends at a catalogue entry within kMaxPresetDepth steps.
    if (loaded->is_map() && loaded->find("preset")) {
      if (depth >= kMaxPresetDepth)
        fail(*loaded->find("preset"), key_path, "a chain of more than " + std::to_string(kMaxPresetDepth) +
                                                    " files naming each other as `preset:` (a file that names itself?)");
      return resolve_at(kind, what, *loaded, key_path, depth + 1);
    }
    return std::move(loaded).value();
  }
  if (!is_catalogue_name(name))
    fail(name_node, key_path,
         "\"" + name + "\" is not a " + std::string(what) +
             " name (a catalogue name is up to 100 of the characters a-z A-Z 0-9 . _ + -) nor a path to a "
             "YAML file");
  fs::path file = root_ / kind / (name + ".yaml");
  if (!path_exists(file)) {
    auto all = names(kind);
    auto near = nearest_names(name, all);
    std::string message = "unknown " + std::string(what) + " \"" + name + "\"";
    if (!near.empty()) {
      message += " (did you mean ";
      for (std::size_t i = 0; i < near.size(); ++i) message += (i ? ", " : "") + near[i];
      message += "?)";
    }
    message += "; see `vramsim list " + std::string(kind) + "` or give a path to a YAML file";
    fail(name_node, key_path, message);
  }
  auto loaded = load_yaml_file(file.string());
  if (!loaded) throw ConfigError(loaded.error());
  return std::move(loaded).value();
}

Node Catalogue::resolve(std::string_view kind, std::string_view what, const Node& ref,
                        const std::string& key_path) const {
  return resolve_at(kind, what, ref, key_path, 0);
}

Node Catalogue::resolve_at(std::string_view kind, std::string_view what, const Node& ref, const std::string& key_path,
                           int depth) const {
  if (ref.is_scalar()) return load_named(kind, what, ref, key_path, depth);
  if (!ref.is_map())
    fail(ref, key_path, "expected a " + std::string(what) + " name, a YAML file, or a mapping, got " + ref.describe());
  const Node* preset = ref.find("preset");
  if (!preset) return ref;  // an inline description
  if (!preset->is_scalar()) fail(*preset, key_path + ".preset", "expected a catalogue name, got " + preset->describe());
  Node merged = load_named(kind, what, *preset, key_path + ".preset", depth);
  Node overrides = ref;
  Node stripped = Node::map(ref.origin());
  for (const auto& [key, value] : overrides.entries())
    if (key != "preset") stripped.set(key, value);
  merged.merge_from(stripped);
  return merged;
}

}  // namespace vramsim::config
