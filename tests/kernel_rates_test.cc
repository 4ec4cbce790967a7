// The weights' GEMM rates (sim/kernel_rates.h): the tensor peak, the mma.sync share of it that
// dequantizing kernels reach on Hopper, and the engine's efficiencies.
#include <catch2/catch.hpp>

#include "sim/kernel_rates.h"
#include "tests/sim_fixture.h"

using namespace vramsim;
using namespace vramsim::sim;

TEST_CASE("dequantizing kernels run at the mma.sync share of Hopper's peak, 16-bit weights at the full peak",
          "[step][kernels]") {
  // vLLM on one H100: gpt-oss-20b's MXFP4 experts (Marlin MoE) and Llama 3.1 8B in BF16 (cuBLAS).
  const Scenario mxfp4 = test::bundled_scenario("llama8b-h100-vllm", {"model=gpt-oss-20b"});
  const Scenario bf16 = test::bundled_scenario("llama8b-h100-vllm");
  const auto& h100 = mxfp4.cards[0].gpu.spec;
  REQUIRE(h100.mma_sync_share == Approx(0.667));  // FlashAttention-3 blog, citing Luo et al. 2024
  CHECK(dequantizing_gemms(mxfp4));
  CHECK_FALSE(dequantizing_gemms(bf16));
  CHECK(gemm_peak(h100, mxfp4) == Approx(h100.dense_fp16_flops * 0.667));
  CHECK(gemm_peak(h100, bf16) == Approx(h100.dense_fp16_flops));
  // The engine's efficiency for its dequantizing kernels, its general one for the others.
  CHECK(gemm_rate(h100, mxfp4) == Approx(gemm_peak(h100, mxfp4) * mxfp4.engine.physics.quantized_gemm_efficiency));
  CHECK(gemm_rate(h100, bf16) == Approx(h100.dense_fp16_flops * bf16.engine.physics.gpu_compute_efficiency));
  // mma.sync is the A100's own path: the full peak there.
  const Scenario a100 = test::bundled_scenario("llama8b-h100-vllm", {"model=gpt-oss-20b", "hardware.gpu.preset=a100-80gb",
                                                                      "hardware.link.preset=pcie-gen4-x16"});
  CHECK(a100.cards[0].gpu.spec.mma_sync_share == 1.0);
  CHECK(gemm_peak(a100.cards[0].gpu.spec, a100) == Approx(a100.cards[0].gpu.spec.dense_fp16_flops));
  // An engine without its own figure uses gpu_compute_efficiency for every GEMM (llama.cpp's MMQ).
  const Scenario llama = test::bundled_scenario("llama-bench-tg128");
  REQUIRE(llama.engine.physics.quantized_gemm_efficiency == 0);
  CHECK(gemm_rate(llama.cards[0].gpu.spec, llama) == Approx(gemm_peak(llama.cards[0].gpu.spec, llama) * llama.engine.physics.gpu_compute_efficiency));
}

TEST_CASE("an mma.sync share above 1 is refused", "[step][kernels][errors]") {
  try {
    test::bundled_scenario("llama8b-h100-vllm", {"hardware.gpu.compute.mma_sync_share=1.5"});
    FAIL("accepted");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("mma_sync_share: a share of the tensor peak is at most 1"));
  }
}
