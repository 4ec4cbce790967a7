// `vramsim list [gpus|links|hosts|models|formats]`: what the catalogue holds.
#include <iostream>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "workloads/formats.h"

namespace vramsim::cli {

int list_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--configs"};
  Args args(argv, spec);
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  std::vector<std::string> kinds = args.positional();
  if (kinds.empty()) kinds = {"gpus", "links", "hosts", "models", "formats"};
  for (const auto& kind : kinds) {
    std::cout << kind << ":";
    if (kind == "formats") {
      auto formats = workloads::FormatTables::load(catalogue);
      for (const auto& n : formats.weight_names()) std::cout << " " << n;
      std::cout << "\nkv-cache types:";
      for (const auto& n : formats.kv_names()) std::cout << " " << n;
    } else if (kind == "gpus" || kind == "links" || kind == "hosts" || kind == "models") {
      for (const auto& n : catalogue.names(kind)) std::cout << " " << n;
    } else {
      throw UsageError("list: unknown kind \"" + kind + "\"; expected gpus, links, hosts, models or formats");
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace vramsim::cli
