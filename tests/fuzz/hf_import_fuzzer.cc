// Fuzz target for the Hugging Face config.json importer (`vramsim import-model`): any bytes
// must end in a model or an error naming the file (FILE:LINE:COL: error: ..., or FILE: error:
// ...), never a crash, a hang, a leak or undefined behaviour. A model it returns must also be
// what it claims: its YAML loads back as a catalogue model with the same architecture, and
// the memory budget of that model (the next thing `vramsim fit` computes) is a finite size.
// Any other outcome aborts, so that libFuzzer keeps the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/config_reader.h"
#include "workloads/hf_import.h"
#include "workloads/memory_budget.h"
#include "workloads/model.h"

namespace {

constexpr const char* kPath = "fuzz/config.json";

// An outcome the importer promises never to produce: report it and abort.
void expect(bool holds, const char* what, const std::string& detail = "") {
  if (holds) return;
  std::fprintf(stderr, "hf_import_fuzzer: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

// Parameter counts are written with four significant digits (hf_import.cc's format_params).
bool close(double written, double exact) {
  return std::fabs(written - exact) <= 5e-4 * std::fabs(exact) + 1e-9;
}

void expect_same_architecture(const vramsim::workloads::ModelSpec& a, const vramsim::workloads::ModelSpec& b) {
  expect(a.layers == b.layers && a.hidden_size == b.hidden_size && a.vocab_size == b.vocab_size &&
             a.max_context == b.max_context && a.native_format == b.native_format &&
             a.tied_embeddings == b.tied_embeddings,
         "the reloaded model's dimensions differ from the imported ones");
  expect(a.attention.layout == b.attention.layout && a.attention.query_heads == b.attention.query_heads &&
             a.attention.kv_heads == b.attention.kv_heads && a.attention.head_dim == b.attention.head_dim &&
             a.attention.latent_dim == b.attention.latent_dim &&
             a.attention.sliding_window.has_value() == b.attention.sliding_window.has_value(),
         "the reloaded model's attention differs from the imported one");
  expect(a.moe.has_value() == b.moe.has_value(), "the reloaded model's family differs from the imported one");
  if (a.moe)
    expect(a.moe->layers == b.moe->layers && a.moe->experts == b.moe->experts &&
               a.moe->experts_per_token == b.moe->experts_per_token && a.moe->shared_experts == b.moe->shared_experts &&
               close(b.moe->expert_params, a.moe->expert_params),
           "the reloaded model's experts differ from the imported ones");
  expect(close(b.params_total, a.params_total) && close(b.params_active, a.params_active),
         "the reloaded parameter counts are not the imported ones to four digits");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramsim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto imported = workloads::import_hf_config_text(text, kPath, "fuzzed");
  if (!imported) {
    const std::string& why = imported.error().message;
    expect(why.rfind(std::string(kPath) + ":", 0) == 0, "an error that does not name the file", why);
    return 0;
  }

  // The YAML it would write, loaded as the catalogue loads it.
  auto node = config::parse_yaml(imported->yaml, "fuzzed.yaml");
  expect(node.ok(), "the imported YAML does not parse");
  const workloads::ModelSpec reloaded = workloads::decode_model(*node, "model");
  expect_same_architecture(imported->spec, reloaded);

  // Onward, as `vramsim fit` uses it: the footprint at the model's longest context, and the
  // longest context that fits in 24 GB.
  workloads::BudgetRequest request;
  request.bits_per_weight = 16;
  request.context_tokens = reloaded.max_context;
  const workloads::Footprint f = workloads::footprint(reloaded, request);
  expect(std::isfinite(f.total) && f.total > 0 && f.kv >= 0, "the footprint is not a finite size");
  const std::int64_t fits = workloads::max_context_that_fits(reloaded, request, 24e9);
  expect(fits >= 0 && fits <= reloaded.max_context, "the context that fits is outside [0, max_context]");
  return 0;
}
