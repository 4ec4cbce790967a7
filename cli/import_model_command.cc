// `vramsim import-model CONFIG.json|MODEL.gguf --name NAME [-o|--output FILE]`: a catalogue model from a
// Hugging Face config.json or a GGUF file's header.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/write_error.h"
#include "core/config_reader.h"
#include "workloads/gguf_model.h"
#include "workloads/hf_import.h"

namespace vramsim::cli {

int import_model_command(const std::vector<std::string>& argv) {
  OptionSpec spec;
  spec.with_value = {"--name", "-o", "--output"};
  spec.flags = {"--help"};
  Args args(argv, spec);
  if (!args.flag("--help") && args.positional().size() != 1)
    throw UsageError("expected one config.json or .gguf file, got " + std::to_string(args.positional().size()) + " (see --help)");
  if (args.flag("--help")) {
    std::cout << "usage: vramsim import-model CONFIG.json|MODEL.gguf --name NAME [-o|--output FILE]\n\n"
                 "Writes a catalogue model description (YAML) computed from a Hugging Face config.json, or\n"
                 "read from a GGUF file's header (its weights are not read; a split model from its first\n"
                 "part): layers, heads, attention layout, experts and parameter counts, and for a GGUF\n"
                 "file its tensors' exact sizes as its own weights formats. Without --output it\n"
                 "prints to stdout; copy the file to configs/models/NAME.yaml to use it by name.\n"
                 "NAME is a catalogue name: up to 100 of a-z A-Z 0-9 . _ + -, not starting with a dot.\n"
                 "Nothing is written unless the result loads back as a valid catalogue model.\n";
    return 0;
  }
  const std::string name = args.require("--name");
  const auto out = args.get(args.spelling("-o", "--output"));
  const std::string& input = args.positional()[0];
  auto imported = workloads::is_gguf_path(input) ? workloads::import_gguf(input, name) : workloads::import_hf_config(input, name);
  if (!imported) throw config::ConfigError(imported.error());
  for (const auto& n : imported->notes) std::cerr << "vramsim import-model: note: " << n << "\n";
  if (out) {
    if (auto written = io::write_file(*out, imported->yaml); !written) throw WriteError(written.error().message);
    std::cerr << "wrote " << *out << "\n";
  } else {
    std::cout << imported->yaml;
  }
  return 0;
}

}  // namespace vramsim::cli
