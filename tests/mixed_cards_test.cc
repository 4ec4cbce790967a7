// A mixed machine (issue 25, item 2: the same card lists in fit, run, plan and compare):
// `--gpu rtx-3090,rtx-5090` names each card, device 0 first, each in its own PCIe slot, split by
// layers (a pipeline). Real `vramsim` processes.
#include <catch2/catch.hpp>

#include <string>

#include "tests/test_support.h"

using vramsim::test::check_usage_error;
using vramsim::test::json_number;
using vramsim::test::json_text;
using vramsim::test::parse_json;
using vramsim::test::run_ok;

namespace {
const std::string kRun = "run --model llama-3.3-70b --quant Q4_K_M --host ddr4-dual-channel --json --gpu ";
double decode(const std::string& gpu) { return json_number(run_ok(kRun + gpu), "p50", "decode_tok_s"); }
}  // namespace

TEST_CASE("mixed cards: run places the model over each card, each in its own slot", "[mixed][cli]") {
  const auto out = parse_json(run_ok(kRun + "rtx-3090,rtx-5090"));
  const auto* cards = out.find("cards");
  REQUIRE(cards);
  REQUIRE(cards->items().size() == 2);
  CHECK(cards->items()[0].find("gpu")->text() == "rtx-3090");
  CHECK(cards->items()[0].find("link")->text() == "pcie-gen4-x16");  // the RTX 3090's own slot
  CHECK(cards->items()[1].find("gpu")->text() == "rtx-5090");
  CHECK(cards->items()[1].find("link")->text() == "pcie-gen5-x16");  // the RTX 5090's
  // Whole layers over both, the larger card holding more of them.
  const double first = cards->items()[0].find("end_layer")->number();
  CHECK(first > 0);
  CHECK(80 - first > first);
  CHECK(out.find("cpu_layers")->find("end_layer")->number() == 0);  // no layer on the CPU
  // Device order is the user's: reversed, the RTX 5090 comes first.
  CHECK(parse_json(run_ok(kRun + "rtx-5090,rtx-3090")).find("cards")->items()[0].find("gpu")->text() == "rtx-5090");
}

TEST_CASE("mixed cards: a pipeline of two cards decodes between two of the slower and two of the faster", "[mixed][cli]") {
  // One token passes each card's layers in turn: the time is the sum of each card's share at
  // its own bandwidth (RTX 3090 936 GB/s, RTX 5090 1792 GB/s), so the mixed pair sits between.
  const double slow = decode("rtx-3090,rtx-3090"), mixed = decode("rtx-3090,rtx-5090"), fast = decode("rtx-5090,rtx-5090");
  CHECK(slow < mixed);
  CHECK(mixed < fast);
}

TEST_CASE("mixed cards: plan searches the mixed machine and prints its split", "[mixed][cli]") {
  const std::string out = run_ok("plan --model llama-3.3-70b --gpu rtx-3090,rtx-5090 --host ddr4-dual-channel --quant Q4_K_M --top 1 --json");
  CHECK_THAT(json_text(out, "flags", "best"), Catch::Contains("-ngl 99 -ts "));
  CHECK_THAT(run_ok("plan --model llama-3.3-70b --gpu rtx-3090,rtx-5090 --host ddr4-dual-channel --quant Q4_K_M --top 1"),
             Catch::Contains("llama-3.3-70b on rtx-3090 + rtx-5090, host ddr4-dual-channel"));
}

TEST_CASE("mixed cards: plan tries the faster card alone, and counts the idle one's power", "[mixed][cli]") {
  // Qwen3-30B-A3B fits one RTX 5090: there it does not wait on the RTX 3090's layers.
  const std::string mixed = run_ok("plan --model qwen3-30b-a3b --gpu rtx-3090,rtx-5090 --host ddr4-dual-channel --quant Q4_K_M "
                                   "--top 1 --json");
  CHECK_THAT(json_text(mixed, "flags", "best"), Catch::StartsWith("-sm none -mg 1 -ngl 99"));
  CHECK_THAT(json_text(mixed, "placement", "best"), Catch::Contains("card 1, the rtx-5090, alone"));
  const std::string alone = run_ok("plan --model qwen3-30b-a3b --gpu rtx-5090 --host ddr4-dual-channel --quant Q4_K_M --top 1 --json");
  CHECK(json_number(mixed, "decode_tok_s", "best") == Approx(json_number(alone, "decode_tok_s", "best")));
  // The same run, plus the idle RTX 3090's board power over the run's tokens.
  const double idle_w = 20;  // configs/gpus/rtx-3090.yaml power.idle
  CHECK(json_number(mixed, "j_per_token", "best") ==
        Approx(json_number(alone, "j_per_token", "best") + idle_w / json_number(alone, "throughput_tok_s", "best")));
}

TEST_CASE("mixed cards: fit adds each card's room and paces decode by the layers each reads", "[mixed][cli]") {
  const std::string base = "fit --model llama-3.3-70b --quant Q4_K_M --json --gpu ";
  const std::string mixed = run_ok(base + "rtx-3090,rtx-5090");
  const std::string two_3090 = run_ok(base + "rtx-3090 --gpus 2"), two_5090 = run_ok(base + "rtx-5090 --gpus 2");
  CHECK(json_text(mixed, "gpu") == "rtx-3090,rtx-5090");
  CHECK(json_number(mixed, "gpus") == 2);
  // 24 + 32 GiB at the multi-card share: the mean of the two identical pairs' room.
  CHECK(json_number(mixed, "usable_gib") == Approx((json_number(two_3090, "usable_gib") + json_number(two_5090, "usable_gib")) / 2));
  // The pace is a harmonic mean weighted by layers: between the two cards' bandwidths.
  const double pace = json_number(mixed, "pace_bandwidth_gb_s");
  CHECK(pace > json_number(two_3090, "pace_bandwidth_gb_s"));
  CHECK(pace < json_number(two_5090, "pace_bandwidth_gb_s"));
  CHECK(vramsim::test::json_truth(mixed, "fits"));
}

TEST_CASE("mixed cards: a list is refused where it cannot mean one machine", "[mixed][cli][errors]") {
  check_usage_error("run --model llama-3.1-8b --gpu rtx-3090,rtx-5090 --gpus 2", "already names each card");
  check_usage_error("run --model llama-3.1-8b --gpu rtx-3090,,rtx-5090", "an empty card name in the list");
  check_usage_error("run --model llama-3.1-8b --gpu rtx-3090,m4-max-128gb", "m4-max-128gb is a unified-memory part: it cannot be combined");
  check_usage_error("fit --model llama-3.1-8b --gpu rtx-3090,rtx-5090 --gpus 2", "already names each card");
  check_usage_error("fit --model llama-3.1-8b --gpu rtx-3090,rtx-5090 --set hardware.gpu.memory.capacity=48GiB",
                    "names several cards; a scenario file");
  check_usage_error("plan --model llama-3.1-8b --gpu rtx-3090,rtx-5909 --host ddr4-dual-channel", "rtx-5909");
}
