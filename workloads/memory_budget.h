// The analytic memory-budget model behind `vramsim fit` ("will it fit, and how fast?").
//
// A public VRAM calculator's method, implemented exactly (docs/memory-model.md has the
// formulas with their sources and worked examples):
//   weights  = params x bits_per_weight / 8
//   kv       = per-layer, per-token KV elements x context x bytes per element x sequences
//   overhead = 0.65 GiB + 0.08 x (weights + kv)
//   total    = weights + kv + overhead
//   usable   = capacity x share (consumer 0.93, workstation/datacenter 0.95, unified 0.75,
//              0.90 of each card when a model is split over several)
//   decode   = bandwidth x efficiency / (active weights + kv)   [0.75 one card, 0.6 split]
// All sizes in bytes, bandwidths in bytes per second, speeds in tokens per second.
#pragma once

#include <cstdint>
#include <functional>

#include "hw/gpu.h"
#include "workloads/model.h"

namespace vramsim::workloads {

// The model's constants, named as in the reference (docs/memory-model.md).
namespace budget {
inline constexpr double kOverheadFixedBytes = 0.65 * 1024.0 * 1024.0 * 1024.0;  // runtime, CUDA context
inline constexpr double kOverheadShare = 0.08;       // activations, scratch buffers, fragmentation
inline constexpr double kUsableConsumer = 0.93;      // a card that also drives a display
inline constexpr double kUsableProfessional = 0.95;  // workstation and datacenter cards
inline constexpr double kUsableUnified = 0.75;       // Apple unified memory: the OS keeps the rest
inline constexpr double kUsableMultiCard = 0.90;     // each card of a split keeps its own context
inline constexpr double kDecodeEfficiencySingle = 0.75;    // achieved share of peak bandwidth
inline constexpr double kDecodeEfficiencyPipeline = 0.60;  // one card works at a time + hand-offs
inline constexpr double kHostDecodeEfficiency = 0.75;      // offloaded part on the CPU
}  // namespace budget

struct BudgetRequest {
  double bits_per_weight = 0;
  std::int64_t context_tokens = 0;
  double kv_bytes_per_element_k = 2.0;
  double kv_bytes_per_element_v = 2.0;
  int concurrent_sequences = 1;
};

struct Footprint {
  double weights = 0;
  double kv = 0;
  double overhead = 0;
  double total = 0;
};

// KV-cache bytes for `sequences` sequences of `context` tokens each, by attention layout:
//   GQA/MHA: layers x kv_heads x head_dim x (bpe_k + bpe_v) x tokens, where a windowed layer
//            holds min(context, window) tokens and a global one holds `context`;
//   MLA:     layers x latent_dim x bpe_k x context (one latent vector per token, stored as K).
double kv_cache_bytes(const ModelSpec& model, std::int64_t context, double bpe_k, double bpe_v, int sequences);

double weight_bytes(const ModelSpec& model, double bits_per_weight);         // all parameters
double active_weight_bytes(const ModelSpec& model, double bits_per_weight);  // read per token

Footprint footprint(const ModelSpec& model, const BudgetRequest& request);

// Usable share of one card's memory, and usable bytes over `gpus` identical cards.
double usable_share(hw::GpuClass gpu_class, int gpus);
double usable_bytes(const hw::GpuSpec& gpu, int gpus);

// Single-stream decode estimate on the GPU(s), bandwidth-bound.
double decode_efficiency(int gpus);
double bytes_read_per_token(const ModelSpec& model, const BudgetRequest& request);
double decode_tokens_per_second(const ModelSpec& model, const BudgetRequest& request, const hw::GpuSpec& gpu, int gpus);

// The largest context (tokens, <= model.max_context) whose footprint fits in `usable`,
// or 0 when not even one token fits.
std::int64_t max_context_that_fits(const ModelSpec& model, BudgetRequest request, double usable);
// The same with any fit test on the footprint (it must hold for shorter contexts when it holds
// for a longer one), e.g. each of several cards holding its whole layers.
std::int64_t max_context_that_fits(const ModelSpec& model, BudgetRequest request,
                                   const std::function<bool(const Footprint&)>& fits);

// Offload to system RAM: the resident share r = min(1, usable / total) runs from VRAM, the rest
// from host memory; the time per token is the sum of each part's bytes over its bandwidth
// times its efficiency.
struct OffloadEstimate {
  double resident_fraction = 1.0;
  double decode_tokens_per_second = 0;
};
OffloadEstimate offload_estimate(const ModelSpec& model, const BudgetRequest& request, const hw::GpuSpec& gpu,
                                 int gpus, double host_bandwidth);
// The same time per token for a given resident share (0..1), e.g. several cards that each hold
// whole layers and so keep less than usable / total.
double offload_decode_tok_s(const ModelSpec& model, const BudgetRequest& request, const hw::GpuSpec& gpu, int gpus,
                            double host_bandwidth, double resident_fraction);

}  // namespace vramsim::workloads
