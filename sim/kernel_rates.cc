#include "sim/kernel_rates.h"

namespace vramsim::sim {

double tensor_peak(const hw::GpuSpec& gpu, const Scenario& s) {
  const bool fp8 = (!s.model.moe || s.engine.expert_format.name == "FP8") && s.engine.other_format.name == "FP8";
  return fp8 && gpu.dense_fp8_flops > 0 ? gpu.dense_fp8_flops : gpu.dense_fp16_flops;
}

bool dequantizing_gemms(const Scenario& s) {
  const workloads::WeightFormat& main = s.model.moe ? s.engine.expert_format : s.engine.other_format;
  return main.bits_per_weight < 16 && main.name != "FP8";
}

double gemm_peak(const hw::GpuSpec& gpu, const Scenario& s) {
  return tensor_peak(gpu, s) * (dequantizing_gemms(s) ? gpu.mma_sync_share : 1.0);
}

double gemm_rate(const hw::GpuSpec& gpu, const Scenario& s) {
  const auto& ph = s.engine.physics;
  const bool own = dequantizing_gemms(s) && ph.quantized_gemm_efficiency > 0;
  return gemm_peak(gpu, s) * (own ? ph.quantized_gemm_efficiency : ph.gpu_compute_efficiency);
}

}  // namespace vramsim::sim
