// Import of a Hugging Face `config.json` into a catalogue model description.
//
// Reads the architecture fields (layers, heads, head_dim, MLA ranks, experts, sliding-window
// pattern) and counts parameters from the tensor shapes they imply: embeddings, attention
// projections, dense or expert MLPs (SwiGLU: 3 matrices), routers and norms. Biases are
// ignored (well under 0.1% of any model here). `params.active` is what a token reads: the
// layers' active weights and the LM head, not the input embedding table. Fields a hub file
// leaves at the transformers class defaults (Gemma 3) take those defaults. Every count is
// range-checked, and the YAML is decoded as a catalogue model before it is returned.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "workloads/model.h"

namespace vramsim::workloads {

struct ImportedModel {
  ModelSpec spec;
  std::string yaml;  // the catalogue file to write (configs/models/NAME.yaml)
  std::vector<std::string> notes;  // what the import could not carry over (also comments in `yaml`)
};

// `path`: a config.json; `name`: the catalogue name to give the model. Errors name the file
// and the missing or inconsistent field.
Result<ImportedModel> import_hf_config(const std::string& path, const std::string& name);

// The same import of a config.json's bytes already read: `text` is the file's content, `path`
// only names it in messages. Any bytes end in a model or an Error, never anything else (the
// fuzz target tests/fuzz/hf_import_fuzzer.cc holds it to that).
Result<ImportedModel> import_hf_config_text(std::string_view text, const std::string& path, const std::string& name);

}  // namespace vramsim::workloads
