// Fuzz target for the GGUF header reader and its model (`--model FILE.gguf`, `vramsim
// import-model FILE.gguf`): any bytes must end in a model or an error naming the file, never a
// crash, a hang, a leak, undefined behaviour or an allocation the bytes cannot justify. A model it
// returns must load back as a catalogue model of the same architecture, and its memory budget
// (what `vramsim fit` computes next) must be a finite size. Any other outcome aborts, so that
// libFuzzer keeps the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/config_reader.h"
#include "workloads/gguf.h"
#include "workloads/gguf_model.h"
#include "workloads/memory_budget.h"

namespace {

constexpr const char* kPath = "fuzz/model.gguf";

void expect(bool holds, const char* what, const std::string& detail = "") {
  if (holds) return;
  std::fprintf(stderr, "gguf_fuzzer: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramsim;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto header = workloads::read_gguf_header(in, size, kPath);
  if (!header) {
    expect(header.error().message.rfind(std::string(kPath) + ":", 0) == 0, "an error that does not name the file",
           header.error().message);
    return 0;
  }
  auto imported = workloads::import_gguf_headers({*header}, kPath, "fuzzed");
  if (!imported) {
    expect(imported.error().message.find(kPath) != std::string::npos, "an error that does not name the file",
           imported.error().message);
    return 0;
  }
  auto node = config::parse_yaml(imported->yaml, "fuzzed.yaml");
  expect(node.ok(), "the model's YAML does not parse");
  const workloads::ModelSpec m = workloads::decode_model(*node, "model");
  expect(m.layers == imported->spec.layers && m.vocab_size == imported->spec.vocab_size &&
             m.params_total == imported->spec.params_total && m.moe.has_value() == imported->spec.moe.has_value(),
         "the reloaded model differs from the one read");
  workloads::BudgetRequest request;
  request.bits_per_weight = m.file_formats.front().bits_per_weight;
  request.context_tokens = m.max_context;
  const workloads::Footprint f = workloads::footprint(m, request);
  expect(std::isfinite(f.total) && f.total > 0 && f.kv >= 0, "the footprint is not a finite size");
  return 0;
}
