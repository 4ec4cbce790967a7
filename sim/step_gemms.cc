// The GEMM side of the step model (sim/step_model.h): a micro-batch's matrix products on a GPU,
// tiled (MMQ, with engine.gemm_half_rows' fill loss or engine.mmq_tile_tokens' whole tiles),
// matrix-vector (engine.matvec_max_rows) or dequantized to fp16 for cuBLAS (engine.mmq_max_rows),
// and the FLOP floor of a batched step.
#include <algorithm>
#include <cmath>

#include "sim/kernel_rates.h"
#include "sim/row_split.h"
#include "sim/step_model.h"

namespace vramsim::sim {

double StepModel::compute_floor(int tokens) const {
  const auto& m = s_.model;
  const double share = shard_ * layers_ / static_cast<double>(m.layers);
  if (host_) return 2.0 * m.params_active * tokens * share / gemm_peak_;
  return ubatch_gemm_seconds(tokens, share, gemm_rate(card_.gpu.spec, s_));
}

double StepModel::matvec_rate() const {
  const double eff = s_.engine.physics.matvec_compute_efficiency;
  return host_ || eff <= 0 ? 0.0 : card_.gpu.spec.dense_fp16_flops * eff;
}

double StepModel::ubatch_gemm_seconds(double tokens, double share, double rate) const {
  const auto& m = s_.model;
  const auto& ph = s_.engine.physics;
  if (tokens <= 0) return 0.0;
  const double expert_params = m.moe ? m.moe->layers * m.moe->experts_per_token * m.moe->expert_params : 0.0;
  const double dense_params = m.params_active - expert_params;
  const double matvec = matvec_rate();
  // Tiled GEMMs take over from the matrix-vector kernels where they are the faster (the engine's
  // limits are tuned there), so a tiled part never takes longer than the matrix-vector
  // kernels' arithmetic would: no step in time at the limits.
  auto tiled = [&](double flops, double fill_factor) {
    const double t = flops * fill_factor / rate;
    return matvec > 0 ? std::min(t, flops / matvec) : t;
  };
  // A fixed tile (engine.mmq_tile_tokens = T): r rows compute R = ceil(r / T) x T of them, at the
  // fill of R rows (R / (R + h)). The build runs its MMQ kernels for every such GEMM, so no
  // matrix-vector kernel takes over.
  const double tile = ph.mmq_tile_tokens;
  auto whole_tiles = [&](double rows) {
    const double computed = std::ceil(rows / tile) * tile;
    return computed / rows * (computed + ph.gemm_half_rows) / computed;
  };
  // One part's seconds: `params` per token, GEMMs of `rows` rows, or matrix-vector kernels.
  auto part = [&](double params, double rows, bool matrix_vector) {
    const double flops = 2.0 * tokens * params * share;
    if (matrix_vector) return flops / (matvec > 0 ? matvec : rate);  // no tiles to fill
    if (tile > 0) return flops * whole_tiles(rows) / rate;
    if (ph.gemm_half_rows <= 0) return flops / rate;
    return tiled(flops, (rows + ph.gemm_half_rows) / rows);  // fill = r / (r + h)
  };
  const bool dequantized = !host_ && ph.mmq_max_rows > 0 && tokens > ph.mmq_max_rows;
  double seconds = row_slice_sgemm(tokens) ? row_slice_sgemm_seconds(tokens, dense_params, share)
                   : dequantized ? dequant_gemm_seconds(tokens, dense_params, share)
                                 : part(dense_params, tokens, tokens <= ph.matvec_max_rows);
  if (!m.moe) return seconds;
  if (tokens <= ph.matvec_max_rows_experts || (ph.gemm_half_rows <= 0 && tile <= 0))
    return seconds + part(expert_params, tokens, tokens <= ph.matvec_max_rows_experts);
  // Tiled: each expert a micro-batch touches runs one GEMM over its own rows, paying the fill
  // loss once: k x tokens rows in all plus h per touched expert, E (1 - (1 - k/E)^tokens) of
  // them per layer under even routing (all E once the micro-batch is large).
  const double k = m.moe->experts_per_token, experts = m.moe->experts;
  const double touched = experts * (1.0 - std::pow(1.0 - k / experts, tokens));
  const double rows = k * tokens;
  const double expert_flops = 2.0 * tokens * expert_params * share;
  if (tile > 0) return seconds + expert_flops * whole_tiles(rows / touched) / rate;  // each touched expert's rows
  return seconds + tiled(expert_flops, (rows + ph.gemm_half_rows * touched) / rows);
}

double StepModel::dequant_gemm_seconds(double tokens, double params, double share) const {
  const auto& ph = s_.engine.physics;
  const double converted = params * share;  // this card's part of the weights
  const double bits = s_.engine.other_format.bits_per_weight;
  // ggml-cuda.cu (early 2024) ggml_cuda_op_mul_mat_cublas: to_fp16_cuda(src0) unless src0 is
  // F16, then cublasGemmEx on the fp16 copy.
  const double conversion = bits >= 16 ? 0.0 : converted * (bits / 8 + 2) / bw_;
  // CUBLAS_COMPUTE_16F: the card's fp16-accumulate tensor rate.
  const double gemm = std::max(2.0 * tokens * converted / (card_.gpu.spec.dense_fp16_accumulate_flops * ph.dequant_gemm_efficiency),
                               2.0 * converted / bw_);
  return conversion + gemm;
}

bool StepModel::row_slice_sgemm(double tokens) const {
  const auto& ph = s_.engine.physics;
  if (host_ || !s_.engine.row_split || shard_ >= 1.0) return false;
  const bool dequantized = ph.mmq_max_rows > 0 && tokens > ph.mmq_max_rows;
  return dequantized || (!dequantizing_gemms(s_) && tokens > ph.matvec_max_rows);
}

double StepModel::row_slice_sgemm_seconds(double tokens, double params, double share) const {
  const auto& ph = s_.engine.physics;
  const double converted = params * share;  // this card's rows of the weights
  const double bits = s_.engine.other_format.bits_per_weight;
  // ggml-cuda.cu ggml_cuda_op_mul_mat_cublas (845d01ba, 2023-12-22; the same condition in 2024 and
  // 2025): to_fp32_cuda(src0) into a pool buffer, then cublasSgemm, for each chunk of the batch.
  const double conversion = bits >= 32 ? 0.0 : converted * (bits / 8 + 4) / bw_;
  const double rate = card_.gpu.spec.dense_fp32_flops * (ph.dequant_gemm_efficiency > 0 ? ph.dequant_gemm_efficiency : ph.gpu_compute_efficiency);
  double seconds = 0;
  for (double done = 0; done < tokens; done += kRowSplitChunk) {
    const double t = std::min(static_cast<double>(kRowSplitChunk), tokens - done);
    seconds += conversion + std::max(2.0 * t * converted / rate, 4.0 * converted / bw_);
  }
  return seconds;
}

double StepModel::prefill_gemm_seconds(std::int64_t tokens, double share, double rate) const {
  const auto [full, size, rest] = ubatch_split(tokens);
  return static_cast<double>(full) * ubatch_gemm_seconds(static_cast<double>(size), share, rate) +
         ubatch_gemm_seconds(static_cast<double>(rest), share, rate);
}

}  // namespace vramsim::sim
