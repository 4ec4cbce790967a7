// Shared by the subcommands: finding the catalogue and turning names given on the command
// line (or in a scenario) into decoded descriptions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "core/catalogue.h"
#include "hw/gpu.h"
#include "hw/host.h"
#include "sim/scenario.h"
#include "workloads/model.h"

namespace vramsim::cli {

// --configs DIR, else the default search (see Catalogue::locate). Throws UsageError.
config::Catalogue open_catalogue(const std::optional<std::string>& configs_dir);

// Applies each `key=value` to `root` (the --set options), each path first made canonical
// (canonical_set_path); a message about an aliased one names it as typed. Throws UsageError on
// a malformed one.
void apply_overrides(config::Node& root, const std::vector<std::string>& assignments);

// The one spelling of a --set path in fit, run, plan and sweep: hardware keys under hardware.
// (hardware.gpu.*, hardware.host.*, hardware.link.*, hardware.gpu_link.*, hardware.switch.*).
// The short forms fit used to take (gpu.*, host.*) and their link siblings are aliases: this
// returns the assignment with hardware. prefixed to them, and any other unchanged.
std::string canonical_set_path(const std::string& assignment);
// --seed N as `seed: N`, its errors naming --seed.
void apply_seed(config::Node& root, const Args& args);

// The scenario file named by the command's one positional argument, with its --set overrides
// and --seed applied (and --configs for the catalogue), decoded; warnings printed on stderr as
// "vramsim COMMAND: warning: ...". Throws ConfigError / UsageError.
sim::Scenario load_scenario(const Args& args, const std::string& command);

// Prints a scenario's warnings on stderr as "vramsim COMMAND: warning: ...", each text once per
// process (plan decodes its scenario several times).
void print_warnings(const std::string& command, const std::vector<std::string>& warnings);

// A --gpu value: one card, or a comma list naming each card of the machine in order
// ("rtx-3090,rtx-5090": the first card is device 0). Throws UsageError on an empty entry.
std::vector<std::string> card_list(const std::string& value, const std::string& option = "--gpu");

// Every model in the catalogue, decoded (used for "a smaller model that fits").
std::vector<workloads::ModelSpec> all_models(const config::Catalogue& catalogue);

}  // namespace vramsim::cli
