#include "cli/catalogue_access.h"

#include "cli/args.h"
#include "core/config_reader.h"
#include "workloads/formats.h"

#include <filesystem>
#include <iostream>
#include <set>
#include <string>

namespace vramsim::cli {

config::Catalogue open_catalogue(const std::optional<std::string>& configs_dir) {
  auto catalogue = config::Catalogue::locate(configs_dir.value_or(""));
  if (!catalogue) throw config::ConfigError(catalogue.error());
  return std::move(catalogue).value();
}

void apply_overrides(config::Node& root, const std::vector<std::string>& assignments) {
  for (const auto& typed : assignments) {
    const std::string assignment = canonical_set_path(typed);
    auto applied = assignment == typed ? config::apply_override(root, assignment)
                                       : config::apply_override(root, assignment, "--set " + typed);
    if (!applied) throw UsageError(applied.error().message.substr(std::string("error: ").size()));
  }
}

std::string canonical_set_path(const std::string& assignment) {
  const std::string path = assignment.substr(0, assignment.find('='));
  for (const char* root : {"gpu.", "host.", "link.", "gpu_link.", "switch."})
    if (path.starts_with(root) || path + "." == root) return "hardware." + assignment;
  return assignment;
}

void apply_seed(config::Node& root, const Args& args) {
  const auto seed = args.get("--seed");
  if (!seed) return;
  if (seed->empty()) throw UsageError("--seed: expected a whole number from 0 (an empty value would unset the seed)");
  auto applied = config::apply_override(root, "seed=" + *seed, "--seed " + *seed);
  if (!applied) throw UsageError(applied.error().message.substr(std::string("error: ").size()));
}

std::vector<std::string> card_list(const std::string& value, const std::string& option) {
  std::vector<std::string> cards;
  for (std::size_t at = 0;;) {
    const std::size_t comma = value.find(',', at);
    std::string card = value.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto first = card.find_first_not_of(" \t"), last = card.find_last_not_of(" \t");
    card = first == std::string::npos ? std::string() : card.substr(first, last - first + 1);
    if (card.empty())
      throw UsageError(option + " " + value + ": an empty card name in the list (a card, or a comma list such as rtx-3090,rtx-5090)");
    cards.push_back(card);
    if (comma == std::string::npos) return cards;
    at = comma + 1;
  }
}

std::vector<workloads::ModelSpec> all_models(const config::Catalogue& catalogue) {
  std::vector<workloads::ModelSpec> out;
  for (const auto& name : catalogue.names("models")) {
    config::Node ref = config::Node::scalar(name, config::Origin{"catalogue", 0, 0});
    config::Node node = catalogue.resolve("models", "model", ref, "model");
    out.push_back(workloads::decode_model(node, "model"));
  }
  return out;
}

sim::Scenario load_scenario(const Args& args, const std::string& command) {
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  workloads::FormatTables formats = workloads::FormatTables::load(catalogue);
  // A file, or a catalogue scenario's name (`vramsim list scenarios`), as studies accept.
  std::string file = args.positional().at(0);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw UsageError(file + " is a directory; give a scenario YAML file or a catalogue scenario name (vramsim list scenarios)");
  if (!std::filesystem::exists(file, ec) && file.find('/') == std::string::npos && !file.ends_with(".yaml")) {
    const auto named = catalogue.root() / "scenarios" / (file + ".yaml");
    if (!std::filesystem::exists(named, ec))
      throw UsageError(file + ": no such file, and no catalogue scenario of that name (vramsim list scenarios)");
    file = named.string();
  }
  auto tree = config::load_yaml_file(file);
  if (!tree) throw config::ConfigError(tree.error());
  apply_overrides(*tree, args.all("--set"));
  apply_seed(*tree, args);
  sim::Scenario scenario = sim::decode_scenario(*tree, catalogue, formats);
  print_warnings(command, scenario.warnings);
  return scenario;
}

void print_warnings(const std::string& command, const std::vector<std::string>& warnings) {
  static std::set<std::string> printed;
  for (const auto& w : warnings)
    if (printed.insert(w).second) std::cerr << "vramsim " << command << ": warning: " << w << "\n";
}

}  // namespace vramsim::cli
