#include "cli/catalogue_access.h"

#include "cli/args.h"
#include "core/config_reader.h"

namespace vramsim::cli {

config::Catalogue open_catalogue(const std::optional<std::string>& configs_dir) {
  auto catalogue = config::Catalogue::locate(configs_dir.value_or(""));
  if (!catalogue) throw config::ConfigError(catalogue.error());
  return std::move(catalogue).value();
}

void apply_overrides(config::Node& root, const std::vector<std::string>& assignments) {
  for (const auto& assignment : assignments) {
    auto applied = config::apply_override(root, assignment);
    if (!applied) throw UsageError(applied.error().message.substr(std::string("error: ").size()));
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

}  // namespace vramsim::cli
