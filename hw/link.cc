#include "hw/link.h"

#include <fmt/format.h>
#include <cmath>
#include <cstdio>

#include "core/config_reader.h"

namespace vramsim::hw {

using config::Lower;
using config::MapReader;
using units::Dimension;

double pcie_lane_bandwidth(int generation) {
  // Bytes per second per lane and direction: transfer rate x line-code efficiency / 8 bits.
  // Gen1-2: 2.5 and 5 GT/s, 8b/10b; Gen3-5: 8, 16, 32 GT/s, 128b/130b; Gen6-7: 64 and 128 GT/s,
  // PAM4 with 256-byte FLITs carrying 242 bytes of payload and CRC (PCI-SIG base specifications).
  switch (generation) {
    case 1: return 2.5e9 * 0.8 / 8;
    case 2: return 5e9 * 0.8 / 8;
    case 3: return 8e9 * 128 / 130 / 8;
    case 4: return 16e9 * 128 / 130 / 8;
    case 5: return 32e9 * 128 / 130 / 8;
    case 6: return 64e9 * 242 / 256 / 8;
    case 7: return 128e9 * 242 / 256 / 8;
    default: return 0;
  }
}

LinkSpec decode_link(const config::Node& node, const std::string& key_path, std::initializer_list<std::string_view> scenario_keys) {
  MapReader r(node, key_path);
  LinkSpec l;
  l.name = r.string("name");
  r.ignore("display_name");
  r.ignore("source");
  l.kind = r.choice("kind", {"pcie", "nvlink"}) == "pcie" ? LinkKind::Pcie : LinkKind::Nvlink;
  l.generation = static_cast<int>(r.integer("generation", 1, 7));
  l.lanes = static_cast<int>(r.integer("lanes", 1, l.kind == LinkKind::Pcie ? 32 : 64));
  {
    MapReader b = r.map("bandwidth");
    l.nominal_bandwidth = b.quantity("nominal", Dimension::Bandwidth);
    // A PCIe link's nominal rate is its generation's lane rate times its lanes; a preset whose
    // three figures disagree (or a --set of one of them alone) would otherwise run at a
    // bandwidth its name does not have.
    if (l.kind == LinkKind::Pcie) {
      const double expected = pcie_lane_bandwidth(l.generation) * l.lanes;
      if (std::abs(l.nominal_bandwidth - expected) > 0.02 * expected) {
        b.fail_at("nominal", fmt::format("{:.2f} GB/s is not the nominal rate of a PCIe Gen{} x{} link ({:.2f} GB/s per direction); "
                                         "set generation, lanes and bandwidth.nominal together, or pick a link preset",
                                         l.nominal_bandwidth / 1e9, l.generation, l.lanes, expected / 1e9));
      }
    }
    l.typical_bandwidth = b.quantity("typical", Dimension::Bandwidth);
    if (l.typical_bandwidth > l.nominal_bandwidth)
      b.fail_at("typical", "achieved bandwidth cannot exceed the nominal one");
    b.finish();
  }
  l.latency_s = r.quantity("latency", Dimension::Time, Lower::NonNegative);
  if (r.has("staged_peer_latency")) {
    if (l.kind != LinkKind::Pcie)
      r.fail_at("staged_peer_latency", "only a PCIe link stages copies between cards through host memory");
    l.staged_peer_latency_s = r.quantity("staged_peer_latency", Dimension::Time, Lower::NonNegative);
    if (l.staged_peer_latency_s >= 0.01)
      r.fail_at("staged_peer_latency", "a fixed cost per copy of 10 ms or more is not physical; check the unit (us)");
  }
  if (auto duplex = r.optional_string("duplex"); duplex && *duplex != "full")
    r.fail_at("duplex", "only full-duplex links are modelled; expected \"full\"");
  if (l.kind == LinkKind::Nvlink)
    l.topology = r.choice("topology", {"bridge", "switch"}) == "bridge" ? NvlinkTopology::Bridge : NvlinkTopology::Switch;
  else if (r.has("topology"))
    r.fail_at("topology", "only an NVLink link has a topology (bridge or switch)");
  r.finish(scenario_keys);
  return l;
}

}  // namespace vramsim::hw
