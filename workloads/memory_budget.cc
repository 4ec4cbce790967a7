#include "workloads/memory_budget.h"

#include <algorithm>
#include <stdexcept>

namespace vramsim::workloads {

double kv_cache_bytes(const ModelSpec& model, std::int64_t context, double bpe_k, double bpe_v, int sequences) {
  if (context < 0 || sequences < 0) throw std::invalid_argument("kv_cache_bytes: negative context or sequences");
  const auto& at = model.attention;
  const double ctx = static_cast<double>(context);
  double per_sequence = 0;
  if (at.layout == AttentionLayout::Mla) {
    per_sequence = static_cast<double>(model.layers) * at.latent_dim * bpe_k * ctx;
  } else {
    int windowed = at.sliding_window ? at.sliding_window->layers : 0;
    int global = model.layers - windowed;
    double windowed_tokens = at.sliding_window
                                 ? static_cast<double>(std::min(context, at.sliding_window->window_tokens))
                                 : 0.0;
    double per_token_layer = static_cast<double>(at.kv_heads) * at.head_dim * (bpe_k + bpe_v);
    per_sequence = per_token_layer * (global * ctx + windowed * windowed_tokens);
  }
  return per_sequence * sequences;
}

double weight_bytes(const ModelSpec& model, double bits_per_weight) {
  return model.params_total * bits_per_weight / 8.0;
}

double active_weight_bytes(const ModelSpec& model, double bits_per_weight) {
  return model.params_active * bits_per_weight / 8.0;
}

Footprint footprint(const ModelSpec& model, const BudgetRequest& request) {
  Footprint f;
  f.weights = weight_bytes(model, request.bits_per_weight);
  f.kv = kv_cache_bytes(model, request.context_tokens, request.kv_bytes_per_element_k,
                        request.kv_bytes_per_element_v, request.concurrent_sequences);
  f.overhead = budget::kOverheadFixedBytes + budget::kOverheadShare * (f.weights + f.kv);
  f.total = f.weights + f.kv + f.overhead;
  return f;
}

double usable_share(hw::GpuClass gpu_class, int gpus) {
  if (gpu_class == hw::GpuClass::Unified) return budget::kUsableUnified;
  if (gpus > 1) return budget::kUsableMultiCard;
  return gpu_class == hw::GpuClass::Consumer ? budget::kUsableConsumer : budget::kUsableProfessional;
}

double usable_bytes(const hw::GpuSpec& gpu, int gpus) {
  return gpu.memory_bytes * usable_share(gpu.gpu_class, gpus) * gpus;
}

double decode_efficiency(int gpus) {
  return gpus > 1 ? budget::kDecodeEfficiencyPipeline : budget::kDecodeEfficiencySingle;
}

double bytes_read_per_token(const ModelSpec& model, const BudgetRequest& request) {
  // The reference counts the whole allocated KV cache of one sequence as read per token.
  BudgetRequest one = request;
  one.concurrent_sequences = 1;
  return active_weight_bytes(model, request.bits_per_weight) +
         kv_cache_bytes(model, one.context_tokens, one.kv_bytes_per_element_k, one.kv_bytes_per_element_v, 1);
}

double decode_tokens_per_second(const ModelSpec& model, const BudgetRequest& request, const hw::GpuSpec& gpu,
                                int gpus) {
  return gpu.memory_bandwidth * decode_efficiency(gpus) / bytes_read_per_token(model, request);
}

std::int64_t max_context_that_fits(const ModelSpec& model, BudgetRequest request, double usable) {
  return max_context_that_fits(model, request, [&](const Footprint& f) { return f.total <= usable; });
}

std::int64_t max_context_that_fits(const ModelSpec& model, BudgetRequest request,
                                   const std::function<bool(const Footprint&)>& fits_footprint) {
  auto fits = [&](std::int64_t ctx) {
    request.context_tokens = ctx;
    return fits_footprint(footprint(model, request));
  };
  if (!fits(1)) return 0;
  if (fits(model.max_context)) return model.max_context;
  std::int64_t lo = 1, hi = model.max_context;  // fits(lo), !fits(hi); the footprint grows with context
  while (hi - lo > 1) {
    std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

OffloadEstimate offload_estimate(const ModelSpec& model, const BudgetRequest& request, const hw::GpuSpec& gpu,
                                 int gpus, double host_bandwidth) {
  OffloadEstimate e;
  const double total = footprint(model, request).total;
  const double usable = usable_bytes(gpu, gpus);
  e.resident_fraction = std::clamp(usable / total, 0.0, 1.0);
  e.decode_tokens_per_second = offload_decode_tok_s(model, request, gpu, gpus, host_bandwidth, e.resident_fraction);
  return e;
}

double offload_decode_tok_s(const ModelSpec& model, const BudgetRequest& request, const hw::GpuSpec& gpu, int gpus,
                            double host_bandwidth, double resident_fraction) {
  const double bytes = bytes_read_per_token(model, request);
  const double gpu_seconds = resident_fraction * bytes / (gpu.memory_bandwidth * decode_efficiency(gpus));
  const double host_seconds = (1.0 - resident_fraction) * bytes / (host_bandwidth * budget::kHostDecodeEfficiency);
  return 1.0 / (gpu_seconds + host_seconds);
}

}  // namespace vramsim::workloads
