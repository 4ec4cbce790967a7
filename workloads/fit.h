// `vramsim fit`: the memory-budget model applied to one (model, GPU, settings) question, with
// the advice a user needs when the answer is "no". Pure: no I/O.
#pragma once

#include <cstdint>
#include <functional>
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
  std::string model_ref;  // the model as given (--model: a catalogue name or a file); empty: model.name
  hw::GpuSpec gpu;  // the first card (device 0)
  int gpus = 1;     // how many cards
  // Every card, device 0 first, when they differ (a mixed machine: --gpu rtx-3090,rtx-5090);
  // empty: `gpus` copies of `gpu`.
  std::vector<hw::GpuSpec> mixed;
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

// The engine's own accounting of a question (llama.cpp, the engine `run` and `plan` simulate by
// default), every layer and the LM head on the GPUs: each card holds its layers' weights (dealt
// by llama.cpp's default split), their KV cache and the engine's runtime_vram (its compute
// buffer and the CUDA context), against the card's driver-reported total less other tenants:
// sim/vram_plan.h's resident_shares with engine.vram_rule: engine, the rule `run` and `plan`
// place by. Bytes, per card.
struct EngineCard {
  int first_layer = 0;  // [first_layer, end_layer)
  int end_layer = 0;
  double weights = 0;   // its layers' weights, the LM head on the last card (the embedding table stays in RAM)
  double kv = 0;        // its layers' KV cache
  double runtime = 0;   // compute buffer + CUDA context (the engine preset's runtime_vram)
  double usable = 0;    // the card's driver-reported total less other tenants
  double need() const { return weights + kv + runtime; }
  bool fits() const { return need() <= usable; }
};
struct EngineAccount {
  std::string engine;  // the engine preset's name
  std::vector<EngineCard> cards;
  bool fits() const;
  double need() const;    // summed over the cards
  double usable() const;
};
// Supplied by the caller, which builds the simulator's scenario (cli/fit_command.cc): the
// accounting of `model` at `request` (its bits per weight, KV bytes per element, context and
// sequences) on the query's cards; nullopt where no engine is simulated (a unified-memory part).
using EngineAccounting = std::function<std::optional<EngineAccount>(const ModelSpec&, const BudgetRequest&)>;

// The context a user would type at most `tokens`: a multiple of 1,024 from 1,024 up, a power
// of two below (127229 -> 126976, 257 -> 256); `tokens` itself when below 1.
std::int64_t typed_context(std::int64_t tokens);

// One change that would make the model fit (or fit better), in the order of cheapness.
struct Suggestion {
  std::string kind;    // "context" | "kv_cache" | "quant" | "smaller_model"
  // What to type, every option that changes, each replacing the option of that name in the
  // command (e.g. "--context 12288", "--kv-type-v q8_0", "--model mixtral-8x7b --context 32768"):
  // applied as given, the command answers `fits`.
  std::string change;
  Footprint footprint;                 // the calculator's
  std::optional<EngineAccount> engine; // the engine's, when one applies
  bool fits = false;                   // by the rule that decides (FitReport::decided_by)
  double decode_tok_s = 0;  // on the GPU(s) alone, when it fits
  bool moe = false;         // the model is an MoE: decode_tok_s is the formula's upper bound
  bool same_lineage = true; // smaller_model: of the asked model's lineage (ModelSpec::lineage)
};

struct FitReport {
  FitQuery query;
  // Two accountings side by side: the public calculator's (footprint, usable_bytes, cards,
  // calculator_*), a budget with fixed margins, and the engine's own (engine). The engine's
  // decides when there is one, as `run` and `plan` place by it; the calculator's otherwise.
  std::string decided_by;                  // "engine" | "calculator"
  Footprint footprint;                     // the calculator's
  double usable_bytes = 0;                 // the calculator's usable share of the cards
  bool calculator_fits = false;            // the calculator's verdict: the total, and with several cards each card's share
  std::vector<CardShare> cards;            // several cards: each card's layers and share of the calculator's footprint
  std::optional<EngineAccount> engine;     // the engine's accounting, when one applies
  bool fits = false;                       // the deciding verdict
  double headroom_bytes = 0;               // the deciding rule's usable - need, over all cards (negative when short)
  // Bytes of KV cache per 1,024 tokens of context window, summed over the `concurrency`
  // sequences (each has its own window, so lengthening --context by 1,024 tokens costs about
  // this much); averaged over the configured context (sliding-window layers stop growing).
  double kv_bytes_per_1k_tokens = 0;
  std::int64_t max_context_tokens = 0;     // the largest context that fits by the deciding rule (<= model max)
  std::int64_t calculator_max_context_tokens = 0;  // ... by the calculator's
  bool fits_without_context = false;       // by the deciding rule at 1 token of KV
  double bytes_per_token = 0;              // read per decoded token: active weights + KV
  double decode_efficiency = 0;
  // The cards' memory bandwidth as one token's pass sees it, bytes/s: each card reads its own
  // layers' share (cards), so several cards in a pipeline pace at the layer-weighted harmonic
  // mean of their bandwidths; one card's (or identical cards') own bandwidth.
  double pace_bandwidth = 0;
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
// parts, a host beside a unified part) and computes the report. `alternatives` are the
// catalogue's other models. With `engine` (and an accounting from it), that accounting decides
// the verdict, the largest context and which suggestions fit; without, the calculator's.
FitReport analyse_fit(const FitQuery& query, const FormatTables& formats, const std::vector<ModelSpec>& alternatives,
                      const EngineAccounting& engine = {});

}  // namespace vramsim::workloads
