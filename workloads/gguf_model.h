// A GGUF file as a catalogue model: its architecture from the header's metadata, its parameter
// counts and sizes from its tensors, exactly (`--model path/to/model.gguf` in fit, run and plan;
// `vramsim import-model model.gguf --name N` writes the same description as a file).
//
// What is read (llama.cpp's key names, src/llama-arch.cpp LLM_KV_NAMES; ARCH is
// general.architecture): ARCH.block_count (less ARCH.nextn_predict_layers, the MTP layers),
// ARCH.embedding_length, ARCH.context_length, ARCH.attention.head_count / head_count_kv /
// key_length, ARCH.attention.kv_lora_rank and ARCH.rope.dimension_count (MLA),
// ARCH.attention.sliding_window (with llama.cpp's layer pattern for the families that have one),
// ARCH.expert_count / expert_used_count / expert_shared_count. The vocabulary is token_embd's row
// count; embeddings are tied when the file has no output.weight.
// Sizes: params.total is every tensor's elements; the routed experts are the *_exps tensors;
// params.active leaves out the input embeddings (when untied) and the routed experts a token
// does not use. The weights' formats are the file's own: GGUF (every tensor but the routed
// experts) and GGUF_EXPERTS, each the exact average bits per weight of its tensors, so a run
// holds the file's bytes, not a format table's average.
// A split model (NAME-00001-of-00003.gguf, llama.cpp's gguf-split) is read part by part.
#pragma once

#include <string>
#include <string_view>

#include "core/catalogue.h"
#include "core/result.h"
#include "workloads/gguf.h"
#include "workloads/hf_import.h"

namespace vramsim::workloads {

// Whether a model reference names a GGUF file (it ends in .gguf, in any case).
bool is_gguf_path(std::string_view text);
// Whether a model reference names a file (a model YAML or a GGUF file) rather than a catalogue model.
bool is_model_file(std::string_view text);

// The model of the GGUF file at `path` (its other parts, when split, beside it), named `name`.
Result<ImportedModel> import_gguf(const std::string& path, const std::string& name);
// ... of headers already read (the parts of one model, the first holding the metadata); `path`
// names the file in messages and in the description.
Result<ImportedModel> import_gguf_headers(const std::vector<GgufHeader>& parts, const std::string& path, const std::string& name);

// A scenario's or fit's `model:` value: a GGUF file (imported as above, its name the file's stem)
// or what Catalogue::resolve takes (a catalogue name, a YAML file, a mapping). Throws ConfigError
// at `ref` when the file cannot be read as a model.
config::Node resolve_model(const config::Catalogue& catalogue, const config::Node& ref, const std::string& key_path);

}  // namespace vramsim::workloads
