// Fuzz target for the configuration loader: any input must end in a value or a ConfigError,
// never a crash, a hang, a leak or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config_reader.h"
#include "hw/gpu.h"
#include "hw/host.h"
#include "hw/link.h"
#include "sim/scenario.h"
#include "sim/vram_plan.h"
#include "workloads/model.h"

namespace {

template <class F>
void expect_value_or_config_error(F&& decode) {
  try {
    decode();
  } catch (const vramsim::config::ConfigError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (auto dim : {units::Dimension::Bytes, units::Dimension::Bandwidth, units::Dimension::Time,
                   units::Dimension::Power, units::Dimension::FlopRate})
    (void)units::parse(text, dim);

  auto root = config::parse_yaml(text, "fuzz.yaml");
  if (!root) return 0;
  expect_value_or_config_error([&] { workloads::decode_model(*root, "model"); });
  expect_value_or_config_error([&] { hw::decode_gpu(*root, "gpu"); });
  expect_value_or_config_error([&] { hw::decode_link(*root, "link"); });
  expect_value_or_config_error([&] { hw::decode_host(*root, "host"); });

  // As a scenario against the real catalogue (presets, overrides, the VRAM plan).
  static const config::Catalogue catalogue(VRAMSIM_FUZZ_CONFIGS_DIR);
  static const workloads::FormatTables formats = workloads::FormatTables::load(catalogue);
  expect_value_or_config_error([&] {
    sim::Scenario s = sim::decode_scenario(*root, catalogue, formats);
    try {
      (void)sim::plan_vram(s);
    } catch (const std::invalid_argument&) {
    }
  });

  // The first line, used as a command-line override on the parsed tree.
  config::Node tree = *root;
  const std::string first_line = text.substr(0, text.find('\n'));
  (void)config::apply_override(tree, first_line);
  return 0;
}
