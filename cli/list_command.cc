// `vramsim list [gpus|links|hosts|models|formats|engines|scenarios|sweeps|validation]`: what the
// catalogue holds.
#include <algorithm>
#include <iostream>

#include "cli/args.h"
#include "cli/catalogue_access.h"
#include "cli/commands.h"
#include "workloads/formats.h"

namespace vramsim::cli {

int list_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--configs"};
  spec.flags = {"--help"};
  Args args(argv, spec);
  const std::vector<std::string> all = {"gpus", "links", "hosts", "models", "formats", "engines", "scenarios", "sweeps", "validation"};
  if (args.flag("--help")) {
    std::cout << "usage: vramsim list [KIND...] [--configs DIR]\n\n"
                 "Lists the catalogue's entries by name (what --gpu, --model, --host, --engine, a scenario's\n"
                 "presets, `run NAME`, `sweep NAME` and `validate NAME` accept). KIND: gpus, links, hosts,\n"
                 "models, formats (weights and KV-cache types), engines, scenarios, sweeps, validation;\n"
                 "default: all of them.\n";
    return 0;
  }
  config::Catalogue catalogue = open_catalogue(args.get("--configs"));
  std::vector<std::string> kinds = args.positional();
  if (kinds.empty()) kinds = all;
  for (const auto& kind : kinds)
    if (std::find(all.begin(), all.end(), kind) == all.end())
      throw UsageError("list: unknown kind \"" + kind + "\"; expected gpus, links, hosts, models, formats, engines, "
                       "scenarios, sweeps or validation");
  for (const auto& kind : kinds) {
    std::cout << kind << ":";
    if (kind == "formats") {
      auto formats = workloads::FormatTables::load(catalogue);
      for (const auto& n : formats.weight_names()) std::cout << " " << n;
      std::cout << "\nkv-cache types:";
      for (const auto& n : formats.kv_names()) std::cout << " " << n;
    } else {
      for (const auto& n : catalogue.names(kind)) std::cout << " " << n;
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace vramsim::cli
