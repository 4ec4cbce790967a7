// llama.cpp's row split: what a layer's split products copy (sim/row_split.h), from the model
// file's dimensions against llama.cpp's tensor shapes.
#include <catch2/catch.hpp>

#include "sim/row_split.h"
#include "tests/test_support.h"
#include "workloads/model.h"

using vramsim::sim::row_split_products;
using vramsim::sim::row_split_q8_1_input;

namespace {
vramsim::workloads::ModelSpec llama2_7b() {
  const auto ref = vramsim::config::Node::scalar("llama-2-7b", vramsim::config::Origin{"test", 0, 0});
  return vramsim::workloads::decode_model(vramsim::test::catalogue().resolve("models", "model", ref, "model"), "model");
}
}  // namespace

TEST_CASE("row split: Llama 2 7B's seven products, inputs as q8_1 or fp32, results in fp32", "[sim][row_split]") {
  const auto m = llama2_7b();
  // config.json: hidden 4096, intermediate 11008, 32 heads of 128 (MHA).
  const auto q8 = row_split_products(m, true);
  // block_q8_1: 36 bytes per 32 values; rows padded to 512 values (11008 -> 11264).
  CHECK(q8[0].input_bytes == Approx(4096 * 36.0 / 32));
  CHECK(q8[6].input_bytes == Approx(11264 * 36.0 / 32));
  CHECK(q8[0].output_bytes == Approx(4096 * 4.0));    // Q: 32 x 128 values, fp32
  // gate: the MLP's width, from the model file's parameter count (rounded there; norms beside)
  CHECK(q8[4].output_bytes == Approx(11008 * 4.0).epsilon(1e-3));
  CHECK(q8[6].output_bytes == Approx(4096 * 4.0));    // down: back to the hidden size
  const auto f32 = row_split_products(m, false);
  CHECK(f32[6].input_bytes == Approx(11008 * 4.0).epsilon(1e-3));
  CHECK(f32[3].input_bytes == Approx(4096 * 4.0));
}

TEST_CASE("row split: quantized weights send q8_1 to MMQ/MMVQ, fp32 to cuBLAS and for F16 weights", "[sim][row_split]") {
  CHECK(row_split_q8_1_input(true, 1, 0));
  CHECK(row_split_q8_1_input(true, 512, 0));    // builds with MMQ at every size
  CHECK(row_split_q8_1_input(true, 32, 32));    // early 2024: MMQ up to 32 tokens
  CHECK_FALSE(row_split_q8_1_input(true, 33, 32));  // ... then cuBLAS
  CHECK_FALSE(row_split_q8_1_input(false, 1, 0));   // F16 weights
}
