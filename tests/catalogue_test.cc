// Every catalogue entry decodes, and its figures are physically consistent.
#include <catch2/catch.hpp>

#include "core/config_reader.h"
#include "hw/gpu.h"
#include "hw/host.h"
#include "hw/link.h"
#include "tests/test_support.h"
#include "workloads/formats.h"
#include "workloads/model.h"

using namespace vramsim;

namespace {
config::Node resolve(const std::string& kind, const std::string& name) {
  config::Node ref = config::Node::scalar(name, config::Origin{"test", 0, 0});
  return test::catalogue().resolve(kind, kind, ref, kind);
}
}  // namespace

TEST_CASE("the catalogue holds what the mission names", "[catalogue]") {
  auto c = test::catalogue();
  for (const char* gpu : {"rtx-3060-12gb", "rtx-3090", "rtx-4090", "rtx-5080", "rtx-5090", "rtx-6000-ada", "l40s",
                          "a100-80gb", "h100-sxm", "h200", "m4-16gb", "m4-max-128gb", "m2-ultra-192gb"})
    CHECK(std::filesystem::exists(c.root() / "gpus" / (std::string(gpu) + ".yaml")));
  for (const char* model : {"llama-3.1-8b", "llama-3.3-70b", "qwen3-32b", "qwen3-30b-a3b", "command-r-35b", "phi-3.5-mini",
                            "gemma-3-27b", "gpt-oss-120b", "deepseek-v3", "mixtral-8x7b", "moe-125b-q2"})
    CHECK(std::filesystem::exists(c.root() / "models" / (std::string(model) + ".yaml")));
  for (const char* link : {"pcie-gen3-x16", "pcie-gen4-x8", "pcie-gen5-x4", "nvlink3", "nvlink4"})
    CHECK(std::filesystem::exists(c.root() / "links" / (std::string(link) + ".yaml")));
  for (const char* host : {"ddr5-dual-channel", "ddr4-dual-channel", "xeon-gold-5218-x2"})
    CHECK(std::filesystem::exists(c.root() / "hosts" / (std::string(host) + ".yaml")));
}

TEST_CASE("every GPU decodes with sane figures", "[catalogue]") {
  for (const auto& name : test::catalogue().names("gpus")) {
    INFO(name);
    hw::GpuSpec g = hw::decode_gpu(resolve("gpus", name), "gpu");
    CHECK(g.name == name);
    CHECK(g.memory_bytes >= 8 * units::kGiB);
    CHECK(g.memory_bandwidth > 50e9);
    CHECK(g.memory_bandwidth < 10e12);
    CHECK(g.dense_fp16_flops > 1e12);
    // FP8 tensor cores (Ada, Hopper, Blackwell) run at twice the fp16 rate (the L40S datasheet:
    // 733 against 362.05); older parts have none.
    if (g.dense_fp8_flops > 0) CHECK(g.dense_fp8_flops == Approx(2 * g.dense_fp16_flops).epsilon(0.02));
    CHECK(g.unified() == (g.pcie_generation == 0));
    if (g.driver_total_bytes) CHECK(*g.driver_total_bytes <= g.memory_bytes * 1.05);
  }
}

TEST_CASE("every link decodes, and PCIe bandwidth doubles per generation and scales with lanes", "[catalogue]") {
  for (const auto& name : test::catalogue().names("links")) {
    INFO(name);
    hw::LinkSpec l = hw::decode_link(resolve("links", name), "link");
    CHECK(l.name == name);
    if (l.kind == hw::LinkKind::Pcie) {
      // 8, 16, 32 GT/s per lane for Gen3/4/5 with 128b/130b encoding.
      double gt_per_s = 8e9 * (1 << (l.generation - 3));
      CHECK(l.nominal_bandwidth == Approx(gt_per_s * l.lanes * 128.0 / 130.0 / 8.0).epsilon(0.01));
    }
  }
}

TEST_CASE("every host decodes", "[catalogue]") {
  for (const auto& name : test::catalogue().names("hosts")) {
    INFO(name);
    hw::HostSpec h = hw::decode_host(resolve("hosts", name), "host");
    CHECK(h.name == name);
    CHECK(h.memory_bandwidth > 20e9);
    CHECK(h.threads >= h.cores);
  }
}

TEST_CASE("every model decodes and its native format exists", "[catalogue]") {
  auto formats = workloads::FormatTables::load(test::catalogue());
  for (const auto& name : test::catalogue().names("models")) {
    INFO(name);
    workloads::ModelSpec m = workloads::decode_model(resolve("models", name), "model");
    CHECK(m.name == name);
    CHECK(formats.weight(m.native_format) != nullptr);
    if (m.moe) CHECK(m.params_active < m.params_total);
  }
}

TEST_CASE("an unknown catalogue name lists the nearest ones", "[catalogue]") {
  config::Node ref = config::Node::scalar("rtx-4099", config::Origin{"--gpu rtx-4099", 0, 0});
  try {
    test::catalogue().resolve("gpus", "GPU", ref, "gpu");
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("--gpu rtx-4099: error: gpu: unknown GPU \"rtx-4099\" (did you mean rtx-4090"));
  }
}

// Found by the config fuzzer: a 300-byte name made std::filesystem throw (file name too long)
// out of the loader, which ended the process.
TEST_CASE("a name no file can have is refused as a name, not thrown from the file system", "[catalogue]") {
  for (const std::string& name : {std::string(300, 'x'), std::string("rtx\x01\xff"), std::string("..")}) {
    config::Node ref = config::Node::scalar(name, config::Origin{"s.yaml", 3, 9});
    try {
      test::catalogue().resolve("gpus", "GPU", ref, "hardware.gpu");
      FAIL("no error for a name of " << name.size() << " bytes");
    } catch (const config::ConfigError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith("s.yaml:3:9: error: hardware.gpu: \"") &&
                               Catch::Contains("is not a GPU name"));
    }
  }
  // A path too long to look up is a missing file.
  config::Node path = config::Node::scalar(std::string(5000, 'p') + ".yaml", config::Origin{"s.yaml", 3, 9});
  CHECK_THROWS_WITH(test::catalogue().resolve("gpus", "GPU", path, "hardware.gpu"), Catch::Contains("no such file"));
}

TEST_CASE("a preset with overrides merges, and the override is checked", "[catalogue]") {
  auto node = config::parse_yaml("gpu: {preset: rtx-5090, memory: {capacity: 48GiB}}\n", "s.yaml");
  REQUIRE(node.ok());
  auto merged = test::catalogue().resolve("gpus", "GPU", *node->find("gpu"), "gpu");
  hw::GpuSpec g = hw::decode_gpu(merged, "gpu");
  CHECK(g.memory_bytes == 48 * units::kGiB);
  CHECK(g.memory_bandwidth == Approx(1792e9));

  auto bad = config::parse_yaml("gpu: {preset: rtx-5090, memory: {bandwidth: 12}}\n", "s.yaml");
  auto merged_bad = test::catalogue().resolve("gpus", "GPU", *bad->find("gpu"), "gpu");
  try {
    hw::decode_gpu(merged_bad, "gpu");
    FAIL("no error");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("s.yaml:1:45: error: gpu.memory.bandwidth: expected a bandwidth"));
  }

  auto slow_fp8 = config::parse_yaml("gpu: {preset: rtx-4090, compute: {dense_fp8: 100TFLOPS}}\n", "s.yaml");
  auto merged_fp8 = test::catalogue().resolve("gpus", "GPU", *slow_fp8->find("gpu"), "gpu");
  CHECK_THROWS_WITH(hw::decode_gpu(merged_fp8, "gpu"),
                    Catch::Contains("gpu.compute.dense_fp8: the FP8 tensor rate cannot be below the fp16 one"));
}
