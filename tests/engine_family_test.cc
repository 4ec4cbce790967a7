// Engine families (sim/engines/): the registry, and the keys each family needs or refuses.
#include <catch2/catch.hpp>

#include <string>

#include "scenario_runs.h"
#include "sim/engines/engine_family.h"

using vramsim::test::check_refused;
namespace engines = vramsim::sim::engines;
using vramsim::sim::EngineFamilyId;

namespace {
const std::string kConfigs = VRAMSIM_TEST_CONFIGS_DIR;
const std::string kCaseStudy = kConfigs + "/scenarios/moe125b-rtx5090-gen3-shared.yaml";
const std::string kVllm = kConfigs + "/scenarios/llama8b-h100-vllm.yaml";
const std::string kLlamaCpp = kConfigs + "/scenarios/mixtral-3090-offload.yaml";
}  // namespace

TEST_CASE("engine families: every registered family is found by its name, and ids and names agree", "[engines][family]") {
  const auto names = engines::family_names();
  REQUIRE(names.size() == 4);
  for (const auto& name : names) {
    INFO(name);
    EngineFamilyId id{};
    const engines::EngineFamily* f = engines::find_family(name, &id);
    REQUIRE(f != nullptr);
    CHECK(f->name() == name);
    CHECK(&engines::family(id) == f);
  }
  CHECK(engines::find_family("ktransformers") == nullptr);
  CHECK(engines::family(EngineFamilyId::Vllm).name() == "vllm");
  CHECK(engines::family(EngineFamilyId::HybridCpuExperts).name() == "hybrid-cpu-experts");
}

TEST_CASE("engine families: llama.cpp's placement flags are -ngl and --n-cpu-moe or --cpu-moe", "[engines][family]") {
  // Mixtral's 32 layers: every layer and the head on the GPU is the customary -ngl 99; in a build
  // that offloads the output layer first (ngl_output_first), the head and 20 layers are -ngl 21.
  CHECK(engines::llama_cpp_placement_flags(32, 0, 32, false, true) == "-ngl 99");
  CHECK(engines::llama_cpp_placement_flags(32, 12, 32, false, true) == "-ngl 99 --n-cpu-moe 12");
  CHECK(engines::llama_cpp_placement_flags(32, 32, 32, false, true) == "-ngl 99 --cpu-moe");
  CHECK(engines::llama_cpp_placement_flags(20, 0, 32, false, true) == "-ngl 21");
  CHECK(engines::llama_cpp_placement_flags(0, 0, 32, true, true) == "-ngl 0");
}

TEST_CASE("engine families: an unknown family, or keys a family does not have, are refused at the key",
          "[engines][family]") {
  check_refused(kCaseStudy, "engine.family=ktransformers",
                "unknown engine family \"ktransformers\" (expected one of llama.cpp, vllm, expert-cache, hybrid-cpu-experts)");
  check_refused(kVllm, "engine.family=llama.cpp", "family llama.cpp has no paged KV pool");
  check_refused(kLlamaCpp, "engine.family=vllm", "family vllm allocates a paged KV pool at start");
  check_refused(kCaseStudy, "engine.family=llama.cpp", "family llama.cpp keeps each layer's experts with it");
  check_refused(kLlamaCpp, "engine.family=expert-cache", "family expert-cache keeps its experts in an expert cache");
  check_refused(kCaseStudy, "engine.family=hybrid-cpu-experts", "expert_cache.misses must be cpu");
  // Each family decodes its own sections and refuses the others' at the key.
  check_refused(kVllm, "engine.expert_cache.size=100", "engine.expert_cache: family vllm keeps every weight on the GPU(s)");
  check_refused(kCaseStudy, "engine.kv_pool.block_size=16", "engine.kv_pool: family expert-cache has no paged KV pool");
  check_refused(kLlamaCpp, "engine.kv_pool.block_size=16", "engine.kv_pool: family llama.cpp has no paged KV pool");
}
