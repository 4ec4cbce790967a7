// The rates at which a card's kernels multiply the weights: the tensor peak for the format
// (FP8 or fp16/bf16), the share of it the kernels' instruction path reaches (mma.sync on
// Hopper), and the engine's efficiency on top. FLOP per second.
#pragma once

#include "hw/gpu.h"
#include "sim/scenario.h"

namespace vramsim::sim {

// The peak rate of `gpu`'s tensor cores for the scenario's weight matrix products: the FP8 rate
// when every weight is FP8 (a dense model: `weights.other`) and the part has FP8 tensor cores
// (W8A8 GEMMs, as vLLM's `--quantization fp8` runs on Ada and Hopper), else the fp16/bf16 rate
// (other formats are dequantised to fp16 for the product).
double tensor_peak(const hw::GpuSpec& gpu, const Scenario& s);
// Whether the weights' products dequantize them on the fly (every format but 16/32-bit floats
// and FP8: GGUF quants in llama.cpp's MMQ, MXFP4 in vLLM v0.11's Marlin MoE kernels,
// csrc/moe/marlin_moe_wna16/marlin_template.h: mma.sync.aligned.m16n8k16 on bf16), the experts'
// format for an MoE model.
bool dequantizing_gemms(const Scenario& s);
// ... the rate of those products' instruction path: tensor_peak, times the card's
// mma_sync_share for dequantizing kernels (mma.sync: ~2/3 of Hopper's peak).
double gemm_peak(const hw::GpuSpec& gpu, const Scenario& s);
// ... and what the engine's kernels reach of it: gemm_peak x gpu_compute_efficiency, or x
// quantized_gemm_efficiency for dequantizing kernels when the engine gives one.
double gemm_rate(const hw::GpuSpec& gpu, const Scenario& s);

}  // namespace vramsim::sim
