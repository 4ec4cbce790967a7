// The catalogue: named descriptions under configs/ (gpus/, links/, hosts/, models/, formats/).
//
// A config refers to a catalogue entry in one of three ways, all resolved here:
//   gpu: rtx-4090                                   a catalogue name
//   gpu: my-cards/a6000.yaml                        a YAML file (relative to the file naming it, else to the working directory)
//   gpu: { preset: rtx-5090, memory: { capacity: 48GiB } }   a preset plus overrides
// and a YAML file may itself hold `preset:` plus overrides (resolved as that mapping).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_tree.h"
#include "core/result.h"

namespace vramsim::config {

// Whether `path` names an existing file or directory. Never throws: a path the system cannot
// even look up (too long, a bad component) does not exist.
bool path_exists(const std::filesystem::path& path) noexcept;

// Whether a reference is a file rather than a catalogue name: it holds a '/' or ends in .yaml
// or .yml (Catalogue::resolve's rule).
bool looks_like_path(std::string_view text);

// A catalogue entry's name: a file name under configs/<kind>/, so a bounded, plain alphabet:
// up to 100 of a-z A-Z 0-9 . _ + -, not starting with a dot.
bool is_catalogue_name(std::string_view name);

// The file a scalar config value names: a relative path is taken next to the YAML file that
// holds the value when such a file exists there, else from the working directory.
std::filesystem::path file_beside(const Node& value);

class Catalogue {
 public:
  explicit Catalogue(std::filesystem::path root) : root_(std::move(root)) {}

  // Finds the configs/ directory, first match wins: `explicit_dir` (the --configs option),
  // $VRAMSIM_CONFIGS, <dir of the executable>/../share/vramsim/configs (an installed tree),
  // then the source tree the binary was built from.
  static Result<Catalogue> locate(const std::string& explicit_dir);

  const std::filesystem::path& root() const { return root_; }

  // Entry names of one kind ("gpus"), sorted.
  std::vector<std::string> names(std::string_view kind) const;

  // Resolves `ref` (see above) into the entry's merged description. `what` is the singular
  // noun for messages ("GPU"). Throws ConfigError pointing at `ref` on an unknown name or an
  // unreadable file, listing the nearest catalogue names.
  Node resolve(std::string_view kind, std::string_view what, const Node& ref, const std::string& key_path) const;

  // Loads configs/<relative> (for single-file tables such as formats/weights.yaml).
  Node load(const std::string& relative) const;

 private:
  static constexpr int kMaxPresetDepth = 8;
  // `depth`: files named as `preset:` by files on the way here (a file's own `preset:` is
  // resolved as a mapping's is).
  Node resolve_at(std::string_view kind, std::string_view what, const Node& ref, const std::string& key_path, int depth) const;
  Node load_named(std::string_view kind, std::string_view what, const Node& name_node, const std::string& key_path,
                  int depth) const;
  std::filesystem::path root_;
};

}  // namespace vramsim::config
