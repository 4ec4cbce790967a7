// Cache sizing: the case study's arithmetic.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/vram_plan.h"
#include "tests/sim_fixture.h"

using namespace vramsim;
using namespace vramsim::sim;

TEST_CASE("slots from the measured free VRAM: 5,784 on the shared card", "[vram]") {
  // The engine's log: "8.31 GiB free, 700 MiB reserved (+184 MiB for the draft head) -> 5784 slots".
  VramPlan p = plan_vram(test::case_study("shared", {"hardware.gpu.free_vram=8.31GiB"}));
  CHECK(p.free_measured);
  CHECK(p.slot_bytes == 1382400.0);  // one expert (1,382,023 B) rounded up to 512 B
  CHECK(p.slots == 5784);
  CHECK(p.slots == static_cast<std::int64_t>(std::floor((8.31 * units::kGiB - 884 * units::kMiB) / 1382400.0)));
}

TEST_CASE("slots derived from the card: within 1% of the report on both runs", "[vram]") {
  VramPlan shared = plan_vram(test::case_study("shared"));
  VramPlan exclusive = plan_vram(test::case_study("exclusive"));
  CHECK(shared.card_total == 32607 * units::kMiB);
  CHECK(shared.others == 18106 * units::kMiB);
  CHECK(shared.fixed == Approx(exclusive.fixed));  // other tenants do not change the engine's own needs
  CHECK(std::fabs(static_cast<double>(shared.slots) / 5784.0 - 1) < 0.01);
  CHECK(std::fabs(static_cast<double>(exclusive.slots) / 19530.0 - 1) < 0.01);
  CHECK(shared.coverage() == Approx(0.235).margin(0.003));
  CHECK(exclusive.coverage() == Approx(0.795).margin(0.003));
}

TEST_CASE("a cache larger than the free VRAM is refused", "[vram]") {
  CHECK_THROWS_WITH(plan_vram(test::case_study("shared", {"engine.expert_cache.size=7000"})),
                    Catch::Contains("engine.expert_cache.size: 7000 slots need"));
  CHECK(plan_vram(test::case_study("shared", {"engine.expert_cache.size=5000"})).slots == 5000);
}

TEST_CASE("fixed allocations that do not fit are refused with the arithmetic", "[vram]") {
  CHECK_THROWS_WITH(plan_vram(test::case_study("shared", {"hardware.gpu.vram_used_by_others=30000MiB"})),
                    Catch::Contains("the engine's fixed allocations do not fit"));
}

// "Does not fit" is an answer of plan_memory (plan's search asks it for every candidate), not
// an exception; plan_cards, for a scenario known to fit, throws it.
TEST_CASE("plan_memory answers a plan or the reason it does not fit, without throwing", "[vram]") {
  const auto crowded = test::case_study("shared", {"hardware.gpu.vram_used_by_others=30000MiB"});
  Result<std::vector<VramPlan>> refused = Error{""};
  REQUIRE_NOTHROW(refused = plan_memory(crowded));
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::StartsWith("the engine's fixed allocations do not fit: "));
  const auto fitting = plan_memory(test::case_study("shared"));
  REQUIRE(fitting);
  REQUIRE(fitting->size() == 1);
  CHECK(fitting->front().slots == plan_vram(test::case_study("shared")).slots);
}

TEST_CASE("what a placement keeps in host RAM must fit it, for a dense model too", "[vram][host]") {
  // llama-3.3-70b Q8_0 is 69.86 GiB: 72 CPU layers on a 16 GiB host cannot run.
  const std::string names = "--model llama-3.3-70b --gpu rtx-2080 --host ddr4-dual-channel --quant Q8_0 "
                            "--set hardware.host.memory.capacity=16GiB";
  // An explicit placement is refused, with the numbers.
  auto run = test::run_vramsim("run " + names + " --set engine.gpu_layers=8");
  INFO(run.err);
  CHECK(run.status == 2);
  CHECK(run.out.empty());
  CHECK_THAT(run.err, Catch::Contains("the CPU layers' weights (") &&
                          Catch::Contains("do not fit in ddr4-dual-channel's RAM (16.00 GiB)"));
  // Nor does plan offer one (it used to recommend -ngl 8).
  auto plan = test::run_vramsim("plan " + names + " -j 2");
  INFO(plan.out);
  CHECK(plan.status == 2);
  CHECK_THAT(plan.err, Catch::Contains("nothing fits"));
  // A host that holds the CPU layers runs the same placement's host side.
  auto cat = test::catalogue();
  auto formats = workloads::FormatTables::load(cat);
  auto tree = config::parse_yaml(
      "hardware: { gpu: rtx-2080, link: pcie-gen3-x16, host: { preset: ddr4-dual-channel, memory: { capacity: 16GiB } } }\n"
      "model: llama-3.3-70b\nengine: { preset: llama.cpp, context: 4096, gpu_layers: 8, weights: { experts: Q8_0, other: Q8_0 } }\n"
      "workload: { clients: 1, requests: 1, prompt_tokens: 16, gen_tokens: 16 }\n",
      "host.yaml");
  REQUIRE(tree);
  CHECK_THROWS_WITH(sim::decode_scenario(*tree, cat, formats),
                    Catch::Contains("host.yaml:3:") && Catch::Contains("engine.gpu_layers") &&
                        Catch::Contains("the CPU layers' weights ("));
  REQUIRE(config::apply_override(*tree, "hardware.host.memory.capacity=128GiB").ok());
  const sim::Scenario s = sim::decode_scenario(*tree, cat, formats);
  const HostRam ram = host_ram(s);
  CHECK(ram.fits());
  CHECK(ram.experts == 0);
  CHECK(ram.layer_weights > 60 * units::kGiB);  // 72 of 80 layers' weights + the embedding table
  CHECK(ram.layer_weights == Approx(plan_host(s)->non_expert_weights));
  // Every layer on the GPUs keeps nothing of a dense model in RAM.
  sim::Scenario all_gpu = s;
  all_gpu.engine.gpu_layers = s.model.layers;
  CHECK(host_ram(all_gpu).total() == 0);
}

// llama.cpp keeps the output layer (LM head) on the CPU unless -ngl exceeds the layer count
// (src/llama-model.cpp: the output is "layer" n_layer, on a GPU only when n_gpu_layers >
// n_layer), and the embedding table on the CPU whenever layers are there too.
TEST_CASE("with CPU layers the LM head and the embedding table stay in RAM, with every layer on the GPU the head goes there", "[vram][host]") {
  auto cat = test::catalogue();
  auto formats = workloads::FormatTables::load(cat);
  auto tree = config::load_yaml_file((cat.root() / "scenarios" / "rtx2080-i9-10900x-llama-server.yaml").string());
  REQUIRE(tree);
  REQUIRE(config::apply_override(*tree, "model=qwen3-14b").ok());
  REQUIRE(config::apply_override(*tree, "engine.gpu_layers=32").ok());
  const sim::Scenario s = sim::decode_scenario(*tree, cat, formats);
  const double head = 151936.0 * 5120 * s.engine.other_format.bits_per_weight / 8.0;  // vocab x hidden
  const VramPlan card = plan_cards(s).front();
  const auto host = plan_host(s);
  REQUIRE(host);
  CHECK(card.head_bytes == 0);
  CHECK(card.first_layer == 8);
  CHECK(card.non_expert_weights == Approx(card.layer_bytes * 32));
  CHECK(host->head_bytes == Approx(head));
  CHECK(host->non_expert_weights == Approx(host->layer_bytes * 8 + 2 * head));  // 8 layers + embedding + head
  // Every layer on the GPU (-ngl 99): the card holds the head; nothing stays in RAM.
  REQUIRE(config::apply_override(*tree, "model=llama-3.1-8b").ok());
  REQUIRE(config::apply_override(*tree, "engine.gpu_layers=99").ok());
  const sim::Scenario all = sim::decode_scenario(*tree, cat, formats);
  CHECK(!plan_host(all));
  CHECK(plan_cards(all).front().head_bytes == Approx(128256.0 * 4096 * all.engine.other_format.bits_per_weight / 8.0));
}

TEST_CASE("a placement the scenario sets is imposed: one that does not fit is an error, never replaced", "[vram][placement]") {
  const std::string names = "run --model qwen3-14b --gpu rtx-4080 --quant Q4_K_M --context 31586";
  // Nothing set: run picks the placement that fits.
  auto picked = test::run_vramsim(names);
  INFO(picked.err);
  CHECK(picked.status == 0);
  // Every layer fits by llama.cpp's own accounting, not by the memory-budget model (the flat
  // spot): the accounting that judges the head-on-CPU placement holds them all, so that comes first.
  CHECK_THAT(picked.out, Catch::Contains("-ngl 99 ") &&
                             Catch::Contains("every layer on the GPU (by llama.cpp's own accounting; the memory-budget model "
                                             "refuses it: engine.vram_rule=engine)"));
  // Every layer on the GPU, set: refused with the numbers (it used to run -ngl 39 instead).
  auto all = test::run_vramsim(names + " --set engine.gpu_layers=99");
  INFO(all.err);
  CHECK(all.status == 2);
  CHECK(all.out.empty());
  CHECK_THAT(all.err, Catch::Contains("engine.gpu_layers: the placement set (-ngl 99, every layer on the GPU) does not fit") &&
                          Catch::Contains("needs") && Catch::Contains("GiB usable") &&
                          Catch::Contains("by the engine's own accounting (weights + KV + runtime against the card's total) it "
                                          "fits: --set engine.vram_rule=engine"));
  // -ngl 40, the layer count, in a build that offloads the output layer last keeps the LM head
  // on the CPU: judged by the engine's accounting, it fits. A current build puts the head and
  // 39 layers on the GPU.
  CHECK_THAT(test::run_ok(names + " --set engine.gpu_layers=40 --set engine.ngl_output_first=false --set workload.requests=1"),
             Catch::Contains("llama.cpp flags: -ngl 40 ") && Catch::Contains("every layer on the GPU but the LM head on the CPU"));
  CHECK_THAT(test::run_ok(names + " --set engine.gpu_layers=40 --set workload.requests=1"),
             Catch::Contains("llama.cpp flags: -ngl 40 ") && Catch::Contains("39 of 40 layers and the LM head on the GPU, layer 0 on the CPU"));
  // A placement set that fits is the one simulated.
  auto set = test::run_vramsim(names + " --set engine.gpu_layers=30");
  CHECK(set.status == 0);
  CHECK_THAT(set.out, Catch::Contains("-ngl 30"));
}

// engine.vram_rule: engine judges a placement with every layer on the GPU by the engine's
// accounting (weights + KV + runtime against the card's total), as offload placements are;
// the default keeps the memory-budget model. Engines that size a cache or pool refuse it.
TEST_CASE("engine.vram_rule: engine lifts the budget model's margins off an all-GPU placement", "[vram][placement]") {
  const std::string names = "run --model llama-3.3-70b --gpu rtx-4090 --quant IQ4_XS --set hardware.gpu.memory.capacity=40GiB "
                            "--set hardware.gpu.memory.driver_total= --set workload.requests=1";
  // Every layer with the head, set, fails the budget model; the engine's accounting holds them.
  test::check_usage_error(names + " --set engine.gpu_layers=99", "does not fit");
  CHECK_THAT(test::run_ok(names + " --set engine.gpu_layers=99 --set engine.vram_rule=engine"), Catch::Contains("llama.cpp flags: -ngl 99 "));
  // run --model, placing it, takes the engine's accounting then (as for the head-on-CPU placement), and says so.
  CHECK_THAT(test::run_ok(names), Catch::Contains("llama.cpp flags: -ngl 99 ") && Catch::Contains("engine.vram_rule=engine)"));
  // ... unless the budget rule was chosen: then the head goes to the CPU.
  CHECK_THAT(test::run_ok(names + " --set engine.vram_rule=budget"),
             Catch::Contains("llama.cpp flags: -ngl 80 ") && !Catch::Contains("engine.vram_rule=engine"));
  // A scenario that does not fit names the engine's accounting once.
  const auto refused = test::run_vramsim(names + " --set engine.gpu_layers=99");
  const std::string rule = "engine.vram_rule=engine";
  CHECK(refused.err.find(rule) != std::string::npos);
  CHECK(refused.err.find(rule, refused.err.find(rule) + 1) == std::string::npos);
  test::check_usage_error(names + " --set engine.vram_rule=loose", "engine.vram_rule: expected one of budget, engine");
  test::check_usage_error("run " + std::string(VRAMSIM_TEST_CONFIGS_DIR) + "/scenarios/moe125b-rtx5090-gen3-shared.yaml "
                          "--set engine.vram_rule=engine",
                          "applies to an engine whose weights stay with their layers");
}

// llama.cpp keeps the embedding table in RAM whatever -ngl says: judged by the engine's own
// accounting, the first card does not hold it; the memory-budget model (the reference formula)
// counts every weight on the cards.
TEST_CASE("the engine's accounting leaves the embedding table off the first card", "[vram][llama.cpp]") {
  const std::string llama = "run --model llama-3.1-8b --gpu rtx-4090 --quant Q4_K_M --set workload.requests=1 --json --set engine.vram_rule=";
  const double budget = test::json_number(test::run_ok(llama + "budget"), "weights_gib", "cards");
  const double engine = test::json_number(test::run_ok(llama + "engine"), "weights_gib", "cards");
  const double table_gib = 128256.0 * 4096 * 4.85 / 8 / (1024.0 * 1024 * 1024);  // vocab x hidden at Q4_K_M's 4.85 bits
  CHECK(budget - engine == Approx(table_gib).epsilon(0.001));
}

// A tied model (tie_word_embeddings) holds the table once in params.total; llama.cpp keeps it in
// RAM and a copy on the output layer's card, so the card holds every weight by either rule: the
// memory-budget model's (which counts the matrix once) and the engine's accounting (the copy).
TEST_CASE("tied embeddings: the card holds the LM head's copy, the matrix counted once", "[vram][llama.cpp]") {
  const std::string gemma = "run --model gemma-3-27b --gpu h100-sxm --quant Q8_0 --set workload.requests=1 --json --set engine.vram_rule=";
  const double budget = test::json_number(test::run_ok(gemma + "budget"), "weights_gib", "cards");
  const double engine = test::json_number(test::run_ok(gemma + "engine"), "weights_gib", "cards");
  const double all_gib = 27.43e9 * 8.5 / 8 / (1024.0 * 1024 * 1024);  // params.total at Q8_0's 8.5 bits
  CHECK(budget == Approx(all_gib).epsilon(0.001));
  CHECK(engine == Approx(all_gib).epsilon(0.001));
}

// Tied, an LM head left on the CPU (a build that offloads it last, -ngl equal to the layer
// count) is the embedding table itself: RAM holds the matrix once.
TEST_CASE("tied embeddings: the head on the CPU is the table, held once in RAM", "[vram][llama.cpp]") {
  const std::string gemma = "run --model gemma-3-27b --gpu h100-sxm --quant Q8_0 --set workload.requests=1 --json "
                            "--set engine.ngl_output_first=false --set engine.gpu_layers=62";
  const double table_gib = 262208.0 * 5376 * 8.5 / 8 / (1024.0 * 1024 * 1024);  // vocab x hidden at Q8_0
  CHECK(test::json_number(test::run_ok(gemma), "ram_gib", "cpu_layers") == Approx(table_gib).epsilon(0.001));
}
