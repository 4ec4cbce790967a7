// `vramsim fit`: the memory-budget model applied to one (model, GPU, settings) question, with
// the advice a user needs when the answer is "no". Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu.h"
#include "hw/host.h"
#include "workloads/formats.h"
#include "workloads/layer_split.h"
#include "workloads/memory_budget.h"
#include "workloads/model.h"

namespace vramsim::workloads {

struct FitQuery {
  ModelSpec model;
  hw::GpuSpec gpu;
  int gpus = 1;
  std::optional<hw::HostSpec> host;  // enables the offload estimate
  WeightFormat quant;
  KvType kv_k;
  KvType kv_v;
  // The types were given per side (--kv-type-k / --kv-type-v, which take precedence over
  // --kv-type): a KV suggestion then names the per-side options it changes.
  bool kv_per_side = false;
  std::int64_t context_tokens = 0;
  int concurrency = 1;
};

// One change that would make the model fit (or fit better), in the order of cheapness.
struct Suggestion {
  std::string kind;    // "context" | "kv_cache" | "quant" | "smaller_model"
  // What to type, every option that changes, each replacing the option of that name in the
  // command (e.g. "--context 12288", "--kv-type-v q8_0", "--model mixtral-8x7b --context 32768"):
  // applied as given, the command answers `fits`.
  std::string change;
  Footprint footprint;
  bool fits = false;
  double decode_tok_s = 0;  // on the GPU(s) alone, when it fits
  bool moe = false;         // the model is an MoE: decode_tok_s is the formula's upper bound
};

struct FitReport {
  FitQuery query;
  Footprint footprint;
  double usable_bytes = 0;
  bool fits = false;                       // the total fits, and with several cards each card's share
  std::vector<CardShare> cards;            // several cards: each card's layers and share of the footprint
  double headroom_bytes = 0;               // usable - total (negative when it does not fit)
  // Bytes of KV cache per 1,024 tokens of context window, summed over the `concurrency`
  // sequences (each has its own window, so lengthening --context by 1,024 tokens costs about
  // this much); averaged over the configured context (sliding-window layers stop growing).
  double kv_bytes_per_1k_tokens = 0;
  std::int64_t max_context_tokens = 0;     // the largest context that fits (<= model max)
  bool fits_without_context = false;       // weights and fixed overhead (1 token of KV) within the usable total
  double bytes_per_token = 0;              // read per decoded token: active weights + KV
  double decode_efficiency = 0;
  double gpu_decode_tok_s = 0;             // as if everything were resident
  double resident_fraction = 1.0;
  double host_bytes = 0;                   // offloaded (with a host, when it does not fit): the bytes left to host RAM
  std::optional<double> decode_tok_s;      // the answer: GPU speed if it fits, else offloaded speed (the rest fits
                                           // the host's RAM), else none
  std::vector<Suggestion> suggestions;     // only when it does not fit
  std::optional<Suggestion> smaller_model;  // a catalogue model that fits, when it does not
  bool smaller_model_faster = false;       // ...and beats this model offloaded
};

// Validates the query (throws std::invalid_argument with a user-facing reason: context 0,
// context beyond the model's window, a native-only format on another model, several unified
// parts, a host beside a unified part) and computes the report. `alternatives` are the catalogue's other models.
FitReport analyse_fit(const FitQuery& query, const FormatTables& formats, const std::vector<ModelSpec>& alternatives);

}  // namespace vramsim::workloads
